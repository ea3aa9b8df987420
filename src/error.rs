//! The one error type of the crate. Every failure, from argument checks to the SYCL and
//! CUDA runtimes, is a `MemoryError`; `src/js/errors.rs` hands it to the JS layer with a
//! stable `code` in one place.

/// Which JS error class a failure surfaces as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    Error,
    TypeError,
    RangeError,
    UsmAllocation,
    QueueCreation,
    DeviceCreation,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[allow(
    dead_code,
    reason = "some variants are raised by the JS layer only; they are listed for the one table of codes"
)]
pub enum MemoryError {
    /// An argument of the wrong JS type.
    #[error("{0}")]
    InvalidArgType(String),
    /// A size (nbytes) that is not a positive safe integer.
    #[error("{0}")]
    InvalidSize(String),
    /// An alignment that is not a non-negative integer.
    #[error("{0}")]
    InvalidAlignment(String),
    /// A memset value outside 0..=255.
    #[error("{0}")]
    InvalidFillValue(String),
    /// The runtime could not give the memory asked for.
    #[error("{0}")]
    UsmAllocation(String),
    /// A method was called after `free()`.
    #[error("{0}")]
    Freed(String),
    /// The object neither is a memory object nor exposes `__sycl_usm_array_interface__`.
    #[error("{0}")]
    NotUsm(String),
    /// A malformed `__sycl_usm_array_interface__`; `field` names the field at fault.
    #[error("{message}")]
    InterfaceMalformed { field: InterfaceField, message: String, range: bool },
    /// The interface's pointer is not a USM pointer of the context it names.
    #[error("{0}")]
    ForeignPointer(String),
    /// The byte range an interface describes leaves the allocation under it.
    #[error("{0}")]
    OutOfBounds(String),
    /// Zero-copy asked for memory of another USM kind.
    #[error("{0}")]
    KindMismatch(String),
    /// The USM kind of a pointer could not be determined.
    #[error("{0}")]
    UnknownUsmType(String),
    /// A host destination shorter than the memory.
    #[error("{0}")]
    DestinationTooSmall(String),
    /// A source longer than the memory.
    #[error("{0}")]
    SourceTooLarge(String),
    /// `buffer` of device memory, which the host cannot reach.
    #[error("{0}")]
    NotHostAccessible(String),
    /// A write into memory made from a read-only interface.
    #[error("{0}")]
    ReadOnly(String),
    /// `syclobj` of the wrong kind for `getUsmType`.
    #[error("{0}")]
    InvalidSyclObj(String),
    /// A filter string that cannot be parsed.
    #[error("{0}")]
    InvalidFilter(String),
    /// No device matches (SyclDeviceCreationError).
    #[error("{0}")]
    DeviceNotFound(String),
    /// A queue could not be made (SyclQueueCreationError), e.g. no runtime at all.
    #[error("{0}")]
    QueueCreation(String),
    /// A call into the SYCL runtime failed.
    #[error("{0}")]
    SyclRuntime(String),
    /// A call into the CUDA driver failed.
    #[error("{0}")]
    CudaDriver(String),
    /// The JS engine refuses external ArrayBuffers (Electron's V8 sandbox).
    #[error("{0}")]
    ExternalBuffersUnsupported(String),
    /// The object was re-entered from JS in the middle of one of its own calls.
    #[error("{0}")]
    Busy(String),
    /// Host memory larger than a JS `ArrayBuffer` or TypedArray may be.
    #[error("{0}")]
    HostBufferTooLarge(String),
    /// A class constructor called without `new`, or one that cannot be called at all.
    #[error("{0}")]
    ConstructCallRequired(String),
    /// A method called on an object that is not an instance of its class.
    #[error("{0}")]
    InvalidThis(String),
    /// A memory, device, context or queue object given to structured clone.
    #[error("{0}")]
    NotCloneable(String),
    /// A failure of Node-API itself, or a call that broke the binding's contract.
    #[error("{0}")]
    Internal(String),
    /// Not a token `share()` made in this process (malformed, altered, or another's).
    #[error("{0}")]
    ShareTokenInvalid(String),
    /// A share token opened a second time.
    #[error("{0}")]
    ShareTokenOpened(String),
    /// A share token whose timeout passed before it was opened.
    #[error("{0}")]
    ShareTokenExpired(String),
    /// A share token revoked before it was opened.
    #[error("{0}")]
    ShareTokenRevoked(String),
    /// `share()` of memory that another library's exporter owns.
    #[error("{0}")]
    ShareNotOwned(String),
    /// A share timeout outside 1 ms ..= 2^31 - 1 ms.
    #[error("{0}")]
    InvalidTimeout(String),
}

/// The fields of `__sycl_usm_array_interface__`, in dpctl's validation order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterfaceField {
    Interface,
    Offset,
    Version,
    Data,
    Syclobj,
    Shape,
    Typestr,
    Strides,
}

impl InterfaceField {
    pub fn code(self) -> &'static str {
        match self {
            InterfaceField::Interface => "ERR_SUAI_MALFORMED",
            InterfaceField::Offset => "ERR_SUAI_OFFSET",
            InterfaceField::Version => "ERR_SUAI_VERSION",
            InterfaceField::Data => "ERR_SUAI_DATA",
            InterfaceField::Syclobj => "ERR_SUAI_SYCLOBJ",
            InterfaceField::Shape => "ERR_SUAI_SHAPE",
            InterfaceField::Typestr => "ERR_SUAI_TYPESTR",
            InterfaceField::Strides => "ERR_SUAI_STRIDES",
        }
    }
}

impl MemoryError {
    /// The stable `code` property of the JS error.
    pub fn code(&self) -> &'static str {
        use MemoryError::*;
        match self {
            InvalidArgType(_) => "ERR_INVALID_ARG_TYPE",
            InvalidSize(_) => "ERR_INVALID_SIZE",
            InvalidAlignment(_) => "ERR_INVALID_ALIGNMENT",
            InvalidFillValue(_) => "ERR_INVALID_FILL_VALUE",
            UsmAllocation(_) => "ERR_USM_ALLOCATION",
            Freed(_) => "ERR_USM_FREED",
            NotUsm(_) => "ERR_NOT_USM",
            InterfaceMalformed { field, .. } => field.code(),
            ForeignPointer(_) => "ERR_SUAI_FOREIGN_POINTER",
            OutOfBounds(_) => "ERR_SUAI_OUT_OF_BOUNDS",
            KindMismatch(_) => "ERR_USM_KIND_MISMATCH",
            UnknownUsmType(_) => "ERR_UNKNOWN_USM_TYPE",
            DestinationTooSmall(_) => "ERR_DESTINATION_TOO_SMALL",
            SourceTooLarge(_) => "ERR_SOURCE_TOO_LARGE",
            NotHostAccessible(_) => "ERR_NOT_HOST_ACCESSIBLE",
            ReadOnly(_) => "ERR_READ_ONLY",
            InvalidSyclObj(_) => "ERR_INVALID_SYCLOBJ",
            InvalidFilter(_) => "ERR_INVALID_FILTER",
            DeviceNotFound(_) => "ERR_DEVICE_NOT_FOUND",
            QueueCreation(_) => "ERR_QUEUE_CREATION",
            SyclRuntime(_) => "ERR_SYCL_RUNTIME",
            CudaDriver(_) => "ERR_CUDA_DRIVER",
            ExternalBuffersUnsupported(_) => "ERR_EXTERNAL_BUFFERS_UNSUPPORTED",
            Busy(_) => "ERR_USM_BUSY",
            ConstructCallRequired(_) => "ERR_CONSTRUCT_CALL_REQUIRED",
            HostBufferTooLarge(_) => "ERR_HOST_BUFFER_TOO_LARGE",
            InvalidThis(_) => "ERR_INVALID_THIS",
            NotCloneable(_) => "ERR_NOT_CLONEABLE",
            Internal(_) => "ERR_INTERNAL",
            ShareTokenInvalid(_) => "ERR_SHARE_TOKEN_INVALID",
            ShareTokenOpened(_) => "ERR_SHARE_TOKEN_OPENED",
            ShareTokenExpired(_) => "ERR_SHARE_TOKEN_EXPIRED",
            ShareTokenRevoked(_) => "ERR_SHARE_TOKEN_REVOKED",
            ShareNotOwned(_) => "ERR_SHARE_NOT_OWNED",
            InvalidTimeout(_) => "ERR_INVALID_TIMEOUT",
        }
    }

    /// The JS class the error is thrown as.
    pub fn class(&self) -> ErrorClass {
        use MemoryError::*;
        match self {
            InvalidArgType(_)
            | NotUsm(_)
            | InvalidSyclObj(_)
            | InvalidFilter(_)
            | ConstructCallRequired(_)
            | InvalidThis(_)
            | NotCloneable(_)
            | ShareTokenInvalid(_) => ErrorClass::TypeError,
            InterfaceMalformed { range: false, .. } => ErrorClass::TypeError,
            InterfaceMalformed { range: true, .. } => ErrorClass::RangeError,
            InvalidSize(_)
            | InvalidAlignment(_)
            | InvalidFillValue(_)
            | OutOfBounds(_)
            | HostBufferTooLarge(_)
            | DestinationTooSmall(_)
            | SourceTooLarge(_)
            | InvalidTimeout(_) => ErrorClass::RangeError,
            UsmAllocation(_) => ErrorClass::UsmAllocation,
            QueueCreation(_) => ErrorClass::QueueCreation,
            DeviceNotFound(_) => ErrorClass::DeviceCreation,
            Freed(_)
            | ForeignPointer(_)
            | KindMismatch(_)
            | UnknownUsmType(_)
            | NotHostAccessible(_)
            | ReadOnly(_)
            | SyclRuntime(_)
            | CudaDriver(_)
            | ExternalBuffersUnsupported(_)
            | Busy(_)
            | Internal(_)
            | ShareTokenOpened(_)
            | ShareTokenExpired(_)
            | ShareTokenRevoked(_)
            | ShareNotOwned(_) => ErrorClass::Error,
        }
    }

    /// No device for a queue, or a filter string that names none, is a
    /// `SyclQueueCreationError`, as dpctl raises it.
    pub fn into_queue_creation(self) -> Self {
        match self {
            MemoryError::DeviceNotFound(message) | MemoryError::InvalidFilter(message) => {
                MemoryError::QueueCreation(message)
            }
            other => other,
        }
    }

    /// A filter string that cannot be understood, given for a device, is a
    /// `SyclDeviceCreationError`, as dpctl raises it.
    pub fn into_device_creation(self) -> Self {
        match self {
            MemoryError::InvalidFilter(message) => MemoryError::DeviceNotFound(message),
            other => other,
        }
    }

    pub fn malformed(field: InterfaceField, message: impl Into<String>) -> Self {
        MemoryError::InterfaceMalformed { field, message: message.into(), range: false }
    }

    pub fn malformed_range(field: InterfaceField, message: impl Into<String>) -> Self {
        MemoryError::InterfaceMalformed { field, message: message.into(), range: true }
    }
}

pub type Result<T, E = MemoryError> = std::result::Result<T, E>;
