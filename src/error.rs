//! The one error type of the crate and the one table of error codes. Every failure, from
//! argument checks to the SYCL and CUDA runtimes, is a `MemoryError`; `error_table!`
//! below declares, once, each code with its JS class and each variant with its fields,
//! its message and its code. The binding exports the code table (`ERROR_CODES`) and the
//! JS layer builds `ErrorCode` from it; `__test__/docs.spec.mjs` checks `index.d.ts` and
//! the README against that export.

/// Which JS error class a failure surfaces as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    Error,
    TypeError,
    RangeError,
    UsmAllocation,
    QueueCreation,
    DeviceCreation,
    ProgramCompilation,
}

impl ErrorClass {
    /// The name of the JS class (`lib/errors.js` makes it).
    pub fn js_name(self) -> &'static str {
        match self {
            ErrorClass::Error => "Error",
            ErrorClass::TypeError => "TypeError",
            ErrorClass::RangeError => "RangeError",
            ErrorClass::UsmAllocation => "USMAllocationError",
            ErrorClass::QueueCreation => "SyclQueueCreationError",
            ErrorClass::DeviceCreation => "SyclDeviceCreationError",
            ErrorClass::ProgramCompilation => "SyclProgramCompilationError",
        }
    }
}

/// Declares the codes (`ErrorCode`: name, `ERR_` text, JS classes; the first class is the
/// one every variant of the code is thrown as) and the variants of `MemoryError` (fields,
/// message, code). `InterfaceMalformed` is declared here too: its code is its field's and
/// its class says whether the value had the wrong type or was out of range.
macro_rules! error_table {
    (
        codes {
            $( $(#[doc = $code_doc:literal])* $code:ident = $text:literal as $class:ident $(| $also:ident)*, )*
        }
        variants {
            $(
                $(#[doc = $doc:literal])*
                #[error($($message:tt)+)]
                $variant:ident $({ $($field:ident : $ty:ty),* $(,)? })? => $variant_code:ident,
            )*
        }
    ) => {
        /// A stable `code` of the errors this package throws, as the exported `ErrorCode`
        /// names it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum ErrorCode {
            $( $(#[doc = $code_doc])* $code, )*
        }

        impl ErrorCode {
            /// Every code, in the order of the table.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$code),*];

            /// The `code` property of the JS error, e.g. `"ERR_USM_FREED"`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( ErrorCode::$code => $text, )*
                }
            }

            /// The name `ErrorCode` gives it in JS, e.g. `"UsmFreed"`.
            pub fn name(self) -> &'static str {
                match self {
                    $( ErrorCode::$code => stringify!($code), )*
                }
            }

            /// The JS classes an error of this code may be; the first is the usual one.
            pub fn classes(self) -> &'static [ErrorClass] {
                match self {
                    $( ErrorCode::$code => &[ErrorClass::$class $(, ErrorClass::$also)*], )*
                }
            }

            fn class(self) -> ErrorClass {
                match self {
                    $( ErrorCode::$code => ErrorClass::$class, )*
                }
            }
        }

        /// Every failure of the crate, from argument checks to the runtimes, with its code.
        #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
        pub enum MemoryError {
            /// A malformed `__sycl_usm_array_interface__`: `field` names the field at fault
            /// (and so the code), `range` says the value was of the right type but out of
            /// range (a `RangeError`, else a `TypeError`).
            #[error("{message}")]
            InterfaceMalformed { field: InterfaceField, message: String, range: bool },
            $( $(#[doc = $doc])* #[error($($message)+)] $variant $({ $($field: $ty),* })?, )*
        }

        impl MemoryError {
            /// The error's code.
            pub fn error_code(&self) -> ErrorCode {
                match self {
                    MemoryError::InterfaceMalformed { field, .. } => field.code(),
                    $( MemoryError::$variant { .. } => ErrorCode::$variant_code, )*
                }
            }

            /// The JS class the error is thrown as.
            pub fn class(&self) -> ErrorClass {
                match self {
                    MemoryError::InterfaceMalformed { range: true, .. } => ErrorClass::RangeError,
                    MemoryError::InterfaceMalformed { range: false, .. } => ErrorClass::TypeError,
                    other => other.error_code().class(),
                }
            }
        }
    };
}

error_table! {
    codes {
        /// A malformed interface: not an object, or an extent that overflows.
        SuaiMalformed = "ERR_SUAI_MALFORMED" as TypeError | RangeError,
        SuaiOffset = "ERR_SUAI_OFFSET" as TypeError | RangeError,
        SuaiVersion = "ERR_SUAI_VERSION" as TypeError | RangeError,
        SuaiData = "ERR_SUAI_DATA" as TypeError | RangeError,
        SuaiSyclobj = "ERR_SUAI_SYCLOBJ" as TypeError | RangeError,
        SuaiShape = "ERR_SUAI_SHAPE" as TypeError | RangeError,
        SuaiTypestr = "ERR_SUAI_TYPESTR" as TypeError | RangeError,
        SuaiStrides = "ERR_SUAI_STRIDES" as TypeError | RangeError,
        /// An argument or option of the wrong type, or an unknown option.
        InvalidArgType = "ERR_INVALID_ARG_TYPE" as TypeError,
        /// A size (nbytes) that is not a positive safe integer.
        InvalidSize = "ERR_INVALID_SIZE" as RangeError,
        /// An alignment that is neither 0 nor a power of two.
        InvalidAlignment = "ERR_INVALID_ALIGNMENT" as RangeError,
        /// A memset value outside 0..=255 (checked in `lib/`).
        InvalidFillValue = "ERR_INVALID_FILL_VALUE" as RangeError,
        /// The runtime could not give the memory asked for, or it was refused.
        UsmAllocation = "ERR_USM_ALLOCATION" as UsmAllocation,
        /// A method was called after `free()`.
        UsmFreed = "ERR_USM_FREED" as Error,
        /// Neither a memory object nor an object exposing the interface (checked in `lib/`).
        NotUsm = "ERR_NOT_USM" as TypeError,
        /// The interface's pointer is not a USM pointer of the context it names.
        SuaiForeignPointer = "ERR_SUAI_FOREIGN_POINTER" as Error,
        /// The byte range an interface describes leaves the allocation under it.
        SuaiOutOfBounds = "ERR_SUAI_OUT_OF_BOUNDS" as RangeError,
        /// Zero-copy asked for memory of another USM kind.
        UsmKindMismatch = "ERR_USM_KIND_MISMATCH" as Error,
        /// The USM kind of a pointer could not be determined.
        UnknownUsmType = "ERR_UNKNOWN_USM_TYPE" as Error,
        /// A host destination shorter than the memory.
        DestinationTooSmall = "ERR_DESTINATION_TOO_SMALL" as RangeError,
        /// A source longer than the memory.
        SourceTooLarge = "ERR_SOURCE_TOO_LARGE" as RangeError,
        /// `buffer` of device memory, which the host cannot reach.
        NotHostAccessible = "ERR_NOT_HOST_ACCESSIBLE" as Error,
        /// A write into memory made from a read-only interface.
        ReadOnly = "ERR_READ_ONLY" as Error,
        /// `syclobj` of the wrong kind for `getUsmType` (checked in `lib/`).
        InvalidSyclobj = "ERR_INVALID_SYCLOBJ" as TypeError,
        /// A filter string that cannot be parsed.
        InvalidFilter = "ERR_INVALID_FILTER" as TypeError,
        /// No device matches (SyclDeviceCreationError).
        DeviceNotFound = "ERR_DEVICE_NOT_FOUND" as DeviceCreation,
        /// A queue could not be made (SyclQueueCreationError), e.g. no runtime at all.
        QueueCreation = "ERR_QUEUE_CREATION" as QueueCreation,
        /// A call into the SYCL runtime failed.
        SyclRuntime = "ERR_SYCL_RUNTIME" as Error,
        /// A call into the CUDA driver failed.
        CudaDriver = "ERR_CUDA_DRIVER" as Error,
        /// The JS engine refuses external ArrayBuffers (Electron's V8 sandbox).
        ExternalBuffersUnsupported = "ERR_EXTERNAL_BUFFERS_UNSUPPORTED" as Error,
        /// This Node has no external `SharedArrayBuffer` (Node-API's
        /// `node_api_create_external_sharedarraybuffer`).
        SharedBufferUnsupported = "ERR_SHARED_BUFFER_UNSUPPORTED" as Error,
        /// The object was re-entered from JS in the middle of one of its own calls.
        UsmBusy = "ERR_USM_BUSY" as Error,
        /// A class constructor that cannot be called (checked in `lib/`).
        ConstructCallRequired = "ERR_CONSTRUCT_CALL_REQUIRED" as TypeError,
        /// Host memory larger than a JS `ArrayBuffer` or TypedArray may be.
        HostBufferTooLarge = "ERR_HOST_BUFFER_TOO_LARGE" as RangeError,
        /// A method called on an object that is not an instance of its class (checked in `lib/`).
        InvalidThis = "ERR_INVALID_THIS" as TypeError,
        /// A memory, device, context or queue object given to structured clone (checked in `lib/`).
        NotCloneable = "ERR_NOT_CLONEABLE" as TypeError,
        /// A failure of Node-API itself, or a call that broke the binding's contract.
        Internal = "ERR_INTERNAL" as Error,
        /// Not a share token of this process (`openShared`, `revokeShared`).
        ShareTokenInvalid = "ERR_SHARE_TOKEN_INVALID" as TypeError,
        /// A share token opened a second time.
        ShareTokenOpened = "ERR_SHARE_TOKEN_OPENED" as Error,
        /// A share token whose timeout passed before it was opened.
        ShareTokenExpired = "ERR_SHARE_TOKEN_EXPIRED" as Error,
        /// A share token revoked before it was opened.
        ShareTokenRevoked = "ERR_SHARE_TOKEN_REVOKED" as Error,
        /// `share()` of memory that another library's exporter owns.
        ShareNotOwned = "ERR_SHARE_NOT_OWNED" as Error,
        /// A share timeout outside 1 ms ..= 2^31 - 1 ms.
        InvalidTimeout = "ERR_INVALID_TIMEOUT" as RangeError,
        /// Host memory that overlaps a live registration (`registerHost`), or a copy that
        /// would need host memory inside one that may no longer be its buffer's.
        HostRangeRegistered = "ERR_HOST_RANGE_REGISTERED" as Error,
        /// An option of the right type but not one of the values it takes (checked in `lib/`).
        InvalidArgValue = "ERR_INVALID_ARG_VALUE" as TypeError,
        /// The device's runtime cannot share memory with other processes (IPC handles).
        IpcUnavailable = "ERR_IPC_UNAVAILABLE" as Error,
        /// An IPC handle of memory that is not USM device memory owning a whole allocation.
        IpcNotExportable = "ERR_IPC_NOT_EXPORTABLE" as Error,
        /// IPC handle bytes of the wrong length for the device's runtime.
        IpcHandleLength = "ERR_IPC_HANDLE_LENGTH" as RangeError,
        /// IPC handle bytes the runtime cannot open (freed by its exporter, another device or machine, not a handle).
        IpcHandleInvalid = "ERR_IPC_HANDLE_INVALID" as Error,
        /// An IPC handle opened a second time in one process while its first mapping is open.
        IpcHandleOpen = "ERR_IPC_HANDLE_OPEN" as Error,
        /// `nbytes` of an IPC open beyond the exported allocation.
        IpcOutOfBounds = "ERR_IPC_OUT_OF_BOUNDS" as RangeError,
        /// `require('dpctl-memory')` found no native binary for this platform, or its
        /// platform package is not installed (thrown by `lib/native.js`, before this table
        /// can be read; listed so that `ErrorCode` names every code).
        NoNativeBinary = "ERR_NO_NATIVE_BINARY" as Error,
        // Kernels (issue 18): programs, kernels, submissions, events, queue properties.
        /// A program did not build (SyclProgramCompilationError, with the compiler's log).
        ProgramCompilation = "ERR_PROGRAM_COMPILATION" as ProgramCompilation,
        /// The device's runtime cannot build programs of this format.
        ProgramsUnsupported = "ERR_PROGRAMS_UNSUPPORTED" as Error,
        /// No kernel of that name in the program.
        KernelNotFound = "ERR_KERNEL_NOT_FOUND" as Error,
        /// A submission with more or fewer arguments than the kernel takes.
        KernelArgCount = "ERR_KERNEL_ARG_COUNT" as TypeError,
        /// A submission argument of the wrong kind or type for the kernel's parameter.
        KernelArgType = "ERR_KERNEL_ARG_TYPE" as TypeError,
        /// A kernel, memory or event of another context, device or runtime than the queue's.
        KernelQueueMismatch = "ERR_KERNEL_QUEUE_MISMATCH" as Error,
        /// A global or local range that is empty, of the wrong dimensions, or not divisible.
        InvalidRange = "ERR_INVALID_RANGE" as RangeError,
        /// Profiling timestamps of an event of a queue made without `enable_profiling`.
        ProfilingNotEnabled = "ERR_PROFILING_NOT_ENABLED" as Error,
        // The UCX transport (lib/transport.js, src/provider/ucx, src/memory/transport.rs).
        /// No UCX library could be loaded: the message says what to install.
        UcxUnavailable = "ERR_UCX_UNAVAILABLE" as Error,
        /// A UCX call failed for a reason no other code names (UCX's own text).
        Ucx = "ERR_UCX" as Error,
        /// Nothing listens at the address connected to, or the peer refused the connection.
        UcxConnectionRefused = "ERR_UCX_CONNECTION_REFUSED" as Error,
        /// An address that is not an IP address and port, or one this machine cannot listen on.
        UcxBadAddress = "ERR_UCX_BAD_ADDRESS" as Error,
        /// The peer died or the connection broke while operations were pending.
        UcxPeerFailed = "ERR_UCX_PEER_FAILED" as Error,
        /// A message larger than the receive buffer.
        UcxTruncated = "ERR_UCX_TRUNCATED" as RangeError,
        /// An operation on an endpoint or listener that is closed (or closing).
        UcxEndpointClosed = "ERR_UCX_ENDPOINT_CLOSED" as Error,
        /// Remote key bytes that are not a key, a key destroyed, or an access outside its range.
        UcxRkeyInvalid = "ERR_UCX_RKEY_INVALID" as Error,
        /// A transport object of another thread's worker.
        UcxWrongThread = "ERR_UCX_WRONG_THREAD" as Error,
        /// `ucx.mapMemory` in a process that did not opt in to one-sided access.
        UcxRmaDisabled = "ERR_UCX_RMA_DISABLED" as Error,
        /// `ucx.connect` that was not up within its timeout (made in lib/transport.js).
        UcxConnectTimeout = "ERR_UCX_CONNECT_TIMEOUT" as Error,
        /// UCX is there but its configuration (a `UCX_*` variable) is unusable.
        UcxConfig = "ERR_UCX_CONFIG" as Error,
        // Peer access (issue 22).
        /// Peer access between devices whose backends have none (OpenCL, mixed backends),
        /// between a device and itself, or that the runtime says the pair cannot have.
        PeerAccessUnsupported = "ERR_PEER_ACCESS_UNSUPPORTED" as Error,
        // CUDA C kernels (issue 18: src/provider/cuda/nvrtc.rs).
        /// No NVRTC library could be loaded for CUDA C: the message says what to install.
        NvrtcUnavailable = "ERR_NVRTC_UNAVAILABLE" as Error,
    }
    variants {
        /// A host buffer argument the binding cannot read; `what` names the argument.
        #[error("{what} must be an ArrayBuffer, SharedArrayBuffer, TypedArray, DataView or Buffer")]
        NotHostBuffer { what: String } => InvalidArgType,
        /// An allocation of 0 bytes (dpctl's message).
        #[error("Number of bytes of request allocation must be positive.")]
        ZeroSize => InvalidSize,
        /// An alignment that is neither 0 nor a power of two.
        #[error("alignment must be 0 or a power of two, got {alignment}")]
        InvalidAlignment { alignment: u64 } => InvalidAlignment,
        /// The runtime could not allocate; `message` is what it said, with the request.
        #[error("{message}")]
        UsmAllocation { message: String } => UsmAllocation,
        /// An allocation asked for memory of the unknown kind.
        #[error("cannot allocate memory of unknown USM kind")]
        UnknownKindAllocation => UsmAllocation,
        /// Host memory (a copy or staging buffer) of `nbytes` could not be allocated.
        #[error("cannot allocate {nbytes} bytes of host memory")]
        HostAllocation { nbytes: u64 } => UsmAllocation,
        /// A thread's handle slab is full.
        #[error("too many live dpctl-memory objects in this thread (2^24)")]
        TooManyObjects => UsmAllocation,
        /// A method was called after `free()`.
        #[error("USM memory has been freed: this object can no longer be used")]
        Freed => UsmFreed,
        /// A pointer the runtime does not know as USM memory of the context; `message` says
        /// which context.
        #[error("{message}")]
        ForeignPointer { message: String } => SuaiForeignPointer,
        /// dpctl's step-4 error, in JS's words: the interface's pointer is not a USM
        /// pointer of the context its `syclobj` names.
        #[error(
            "__sycl_usm_array_interface__ is malformed: its 'data' pointer {address:#x} is not USM memory of the SyclContext \
             that its 'syclobj' ({syclobj}) names: give as syclobj the SyclQueue or SyclContext the memory was allocated in."
        )]
        PointerNotBound { address: u64, syclobj: String } => SuaiForeignPointer,
        /// The `nbytes` at `address` leave the allocation of `size` bytes at `base`
        /// (`rel_start`, `rel_end`: the range relative to `base`).
        #[error(
            "__sycl_usm_array_interface__ describes {nbytes} bytes at {address:#x} (bytes {rel_start} to \
             {rel_end} relative to the allocation), which leave the allocation of {size} bytes at {base:#x}."
        )]
        OutOfBounds { nbytes: u64, address: u64, rel_start: i128, rel_end: i128, size: u64, base: u64 } => SuaiOutOfBounds,
        /// An interface pointer into a block of the pool that no live allocation owns.
        #[error(
            "__sycl_usm_array_interface__ points to {address:#x}, which no live allocation owns (freed \
             memory, or past the end of the allocation at {block_base:#x})."
        )]
        Unowned { address: u64, block_base: u64 } => SuaiOutOfBounds,
        /// The bytes `start..end` of foreign memory change USM kind: they leave the
        /// allocation at `base`.
        #[error(
            "__sycl_usm_array_interface__ describes bytes {start:#x}..{end:#x}, which leave the USM \
             allocation at {base:#x}"
        )]
        LeavesForeignAllocation { start: u64, end: u64, base: u64 } => SuaiOutOfBounds,
        /// Zero-copy of `object` (dpctl's `repr`) as `expected` memory, which is `actual` memory.
        #[error(
            "USM pointer in the argument {object} is not a USM {expected} pointer. Zero-copy operation is not \
             possible with copy=false. Either use copy: true, or use a constructor appropriate for type '{actual}'"
        )]
        KindMismatch { object: String, expected: &'static str, actual: &'static str } => UsmKindMismatch,
        /// A USM kind number the binding does not know.
        #[error("{value} is not a USM kind")]
        UnknownUsmType { value: u32 } => UnknownUsmType,
        /// A host destination of `len` bytes for `nbytes` of memory.
        #[error("Destination object is too small to accommodate {nbytes} bytes (it has {len})")]
        DestinationTooSmall { nbytes: u64, len: u64 } => DestinationTooSmall,
        /// An asynchronous copy's destination was detached or shrunk while the copy ran.
        #[error("the destination was detached or shrunk while the copy of {nbytes} bytes ran")]
        DestinationShrunk { nbytes: u64 } => DestinationTooSmall,
        /// A source of `len` bytes for `nbytes` of memory.
        #[error("Source object is too large to be accommodated in {nbytes} bytes buffer (it has {len})")]
        SourceTooLarge { nbytes: u64, len: u64 } => SourceTooLarge,
        /// `buffer` of device memory.
        #[error("USM device memory is not host accessible: copy it with copyToHost() instead")]
        NotHostAccessible => NotHostAccessible,
        /// `queue.writeValue` into memory no JS thread can read (device memory).
        #[error("writeValue writes into USM host or shared memory, which JS threads can read, not {what}")]
        ValueTargetNotHost { what: String } => NotHostAccessible,
        /// `queue.writeValue` at an address that is no multiple of the value's size.
        #[error("writeValue: a {size}-byte value must be {size}-byte aligned (for Atomics), and {address:#x} is not")]
        ValueMisaligned { address: u64, size: u64 } => InvalidAlignment,
        /// A write into the memory at `address`, made from a read-only interface.
        #[error(
            "USM memory at {address:#x} comes from a read-only __sycl_usm_array_interface__ and cannot be written"
        )]
        ReadOnlyWrite { address: u64 } => ReadOnly,
        /// `buffer` of memory made from a read-only interface.
        #[error(
            "this memory comes from a read-only __sycl_usm_array_interface__: JS ArrayBuffers cannot be \
             read-only, so it has no buffer; use copyToHost()"
        )]
        ReadOnlyBuffer => ReadOnly,
        /// A filter string that cannot be parsed (dpctl's message).
        #[error("Device filter selector string '{filter}' is not understood.")]
        InvalidFilter { filter: String } => InvalidFilter,
        /// An `ONEAPI_DEVICE_SELECTOR` that cannot be parsed, and why.
        #[error("ONEAPI_DEVICE_SELECTOR '{selector}' is not understood: {reason}.")]
        InvalidSelector { selector: String, reason: String } => InvalidFilter,
        /// No device matches; `message` says what was asked for and what there is.
        #[error("{message}")]
        DeviceNotFound { message: String } => DeviceNotFound,
        /// A queue could not be made; `message` says why.
        #[error("{message}")]
        QueueCreation { message: String } => QueueCreation,
        /// A call into the SYCL runtime failed: what was being done, and the runtime's text.
        #[error("{operation}: {message}")]
        SyclRuntime { operation: String, message: String } => SyclRuntime,
        /// A call into the CUDA driver failed; `message` names the call and the driver's error.
        #[error("{message}")]
        CudaDriver { message: String } => CudaDriver,
        /// The JS engine refuses external ArrayBuffers.
        #[error(
            "this JS engine forbids external ArrayBuffers (e.g. Electron's V8 memory cage), so USM memory \
             cannot be viewed without a copy: use copyToHost()/copyFromHost()"
        )]
        ExternalBuffersUnsupported => ExternalBuffersUnsupported,
        /// This Node (`node`, its version) cannot make an external `SharedArrayBuffer`.
        #[error(
            "this Node ({node}) has no node_api_create_external_sharedarraybuffer, so USM memory cannot be \
             seen as a SharedArrayBuffer: Node 24.16, 26.1 and later have it (as do the Node 22.23.5, \
             24.22.3 and 26.12.1 this package is tested on); here, hand memory to workers with mem.share()"
        )]
        SharedBufferUnsupported { node: String } => SharedBufferUnsupported,
        /// The memory object was re-entered in the middle of one of its own calls.
        #[error("this memory object is in use by a call that has not returned")]
        Busy => UsmBusy,
        /// `nbytes` of host memory, more than one JS `ArrayBuffer` may hold (`max_len`).
        #[error(
            "{nbytes} bytes is more than a JS ArrayBuffer may hold here ({max_len} bytes): copy it in parts \
             with an interface view, or use copyFromDevice"
        )]
        HostBufferTooLarge { nbytes: u64, max_len: u64 } => HostBufferTooLarge,
        /// A handle id (of a `what`: device, context, queue) that is not live in this thread.
        #[error("a {what} handle that is not live in this thread")]
        StaleHandle { what: String } => Internal,
        /// A copy of `len` bytes into a range of only `range` bytes.
        #[error("a copy of {len} bytes into a range of {range} bytes was refused")]
        CopyPastRange { len: u64, range: u64 } => Internal,
        /// The thread that releases expired share tokens could not start.
        #[error("the thread that releases expired share tokens could not start ({why}), so no token can be made")]
        ShareReaperUnavailable { why: String } => Internal,
        /// Not a share token of this process; `message` says what is wrong with it.
        #[error("{message}")]
        ShareTokenInvalid { message: String } => ShareTokenInvalid,
        /// A share token opened a second time.
        #[error("{message}")]
        ShareTokenOpened { message: String } => ShareTokenOpened,
        /// A share token whose timeout passed before it was opened.
        #[error("{message}")]
        ShareTokenExpired { message: String } => ShareTokenExpired,
        /// A share token revoked before it was opened.
        #[error("this token was revoked by revokeShared()")]
        ShareTokenRevoked => ShareTokenRevoked,
        /// `share()` of memory that another library's exporter owns.
        #[error("{message}")]
        ShareNotOwned { message: String } => ShareNotOwned,
        /// A share timeout outside what the clock can hold.
        #[error("{message}")]
        InvalidTimeout { message: String } => InvalidTimeout,
        /// `registerHost` of no bytes (an empty or detached buffer).
        #[error("cannot register an empty (or detached) buffer: it has no bytes")]
        EmptyRegistration => InvalidSize,
        /// A registration of `len` bytes at `address` over a live one of `registered` bytes at `start`.
        #[error(
            "{len} bytes at {address:#x} overlap a live registration of {registered} bytes at {start:#x}: \
             unregister it first (registrations of the same bytes cannot nest)"
        )]
        RegistrationOverlap { len: u64, address: u64, registered: u64, start: u64 } => HostRangeRegistered,
        /// A copy's own bounce buffer landed in registered memory too.
        #[error(
            "a copy of {nbytes} bytes could not be made: host memory it needs lies in registered memory that \
             may no longer be its buffer's; unregister the registrations of buffers that were transferred"
        )]
        BounceInRegistration { nbytes: u64 } => HostRangeRegistered,
        /// `memAdvise` advice that is not one of its names.
        #[error("unknown advice '{advice}'")]
        UnknownAdvice { advice: String } => InvalidArgValue,
        /// `canCompile` of a language that is none of its names.
        #[error("unknown source language '{language}' (known: {known})")]
        UnknownSourceLanguage { language: String, known: String } => InvalidArgValue,
        /// A shared-memory hint (`operation`) on memory of another kind (`object`: its repr).
        #[error("{operation} applies to USM shared memory only; this is {object}")]
        NotSharedMemory { operation: &'static str, object: String } => UsmKindMismatch,
        /// The device's runtime has no IPC handles; `device` names it.
        #[error("IPC handles are not available on '{device}': its runtime cannot share memory with other processes")]
        IpcUnavailable { device: String } => IpcUnavailable,
        /// Memory that no IPC handle may be made of, and why.
        #[error("{message}")]
        IpcNotExportable { message: String } => IpcNotExportable,
        /// Handle bytes of `len` bytes where the runtime's handles have `expected`.
        #[error("an IPC handle of this device has {expected} bytes, not {len}")]
        IpcHandleLength { len: u64, expected: u64 } => IpcHandleLength,
        /// Handle bytes the runtime refused to open; `message` says what it said.
        #[error("{message}")]
        IpcHandleInvalid { message: String } => IpcHandleInvalid,
        /// A handle whose earlier open in this process is still open.
        #[error(
            "this IPC handle is already open in this process: use the memory it opened into (share() it with other \
             threads), or free that before opening the handle again"
        )]
        IpcHandleOpen => IpcHandleOpen,
        /// `nbytes` asked of a mapping whose exported allocation has only `size` bytes.
        #[error("cannot open {nbytes} bytes of an IPC handle whose exported allocation has {size} bytes")]
        IpcOutOfBounds { nbytes: u64, size: u64 } => IpcOutOfBounds,
        // Kernels (issue 18).
        /// A program that did not build: what failed, and the compiler's log.
        #[error("{summary}\n{log}")]
        ProgramCompilation { summary: String, log: String } => ProgramCompilation,
        /// What the device's runtime cannot build or run, and why.
        #[error("{message}")]
        ProgramsUnsupported { message: String } => ProgramsUnsupported,
        /// No kernel `name` in a program that has `available`.
        #[error("the program has no kernel named '{name}' (it has: {available})")]
        KernelNotFound { name: String, available: String } => KernelNotFound,
        /// `given` arguments for a kernel that takes `expected`.
        #[error(
            "kernel '{kernel}' takes {expected} argument{}, {given} {} given",
            if *.expected == 1 { "" } else { "s" },
            if *.given == 1 { "was" } else { "were" }
        )]
        KernelArgCount { kernel: String, expected: u32, given: u64 } => KernelArgCount,
        /// Argument `index` of `kernel` does not fit its parameter; `message` says how.
        #[error("argument {index} of kernel '{kernel}': {message}")]
        KernelArgType { kernel: String, index: u32, message: String } => KernelArgType,
        /// `kernelArg.local` arguments (up to and with argument `index`) of `requested` bytes
        /// in all, beyond the `available` bytes of the device's local memory beside the
        /// kernel's own.
        #[error("argument {index} of kernel '{kernel}': {requested} bytes of local memory in all, and the device's work-groups have {available} beside the kernel's own")]
        LocalMemoryTooLarge { kernel: String, index: u32, requested: u64, available: u64 } => InvalidSize,
        /// A kernel, memory or event that does not belong with the queue; `message` says which.
        #[error("{message}")]
        KernelQueueMismatch { message: String } => KernelQueueMismatch,
        /// A bad range; `message` says what is wrong.
        #[error("{message}")]
        InvalidRange { message: String } => InvalidRange,
        /// Profiling of an event of a queue without `enable_profiling`.
        #[error("profiling information is available only for events of a queue made with property 'enable_profiling'")]
        ProfilingNotEnabled => ProfilingNotEnabled,
        // The UCX transport.
        /// No UCX library could be loaded; `message` lists what was searched and what to install.
        #[error("{message}")]
        UcxUnavailable { message: String } => UcxUnavailable,
        /// A UCX call failed: what was being done, and UCX's text.
        #[error("{operation}: {message}")]
        Ucx { operation: String, message: String } => Ucx,
        /// A connection to `address` that could not be made.
        #[error("cannot connect to {address}: {message}")]
        UcxConnectionRefused { address: String, message: String } => UcxConnectionRefused,
        /// An address that cannot be used, and why.
        #[error("{message}")]
        UcxBadAddress { message: String } => UcxBadAddress,
        /// The peer failed while the operation was pending.
        #[error("{operation} failed: the peer died or the connection broke ({message})")]
        UcxPeerFailed { operation: String, message: String } => UcxPeerFailed,
        /// A message longer than the `nbytes` of its receive buffer.
        #[error("the message is larger than the receive buffer of {nbytes} bytes (it was truncated and dropped)")]
        UcxTruncated { nbytes: u64 } => UcxTruncated,
        /// An operation on a closed endpoint or listener (`what`).
        #[error("this {what} is closed")]
        UcxEndpointClosed { what: String } => UcxEndpointClosed,
        /// Remote key bytes or use refused, and why.
        #[error("{message}")]
        UcxRkeyInvalid { message: String } => UcxRkeyInvalid,
        /// A transport object of another thread's worker.
        #[error("this UCX {what} belongs to another thread's worker: each thread has its own (UCX workers are single-threaded)")]
        UcxWrongThread { what: String } => UcxWrongThread,
        /// Memory mapped for one-sided access in a worker made without it.
        #[error("one-sided access (ucx.mapMemory) is off in this process: a peer of a worker with it on can read and write this process's memory over software transports (TCP, shared memory), so it is opt-in: set DPCTL_MEMORY_UCX_RMA=1 before the thread first uses UCX (README \"Across machines (UCX)\")")]
        UcxRmaDisabled => UcxRmaDisabled,
        /// UCX refused its configuration: what it said.
        #[error("{message}")]
        UcxConfig { message: String } => UcxConfig,
        // Peer access (issue 22).
        /// Peer access between devices of two backends (dpctl's message).
        #[error("Device with backend {backend} cannot peer access device with backend {peer_backend}")]
        PeerBackendMismatch { backend: String, peer_backend: String } => PeerAccessUnsupported,
        /// Peer access on a backend that has none (dpctl's message): OpenCL, whose SYCL
        /// adapter aborts the process in `ext_oneapi_enable_peer_access`, so it is never asked.
        #[error("Peer access not supported for backend {backend}")]
        PeerBackendUnsupported { backend: String } => PeerAccessUnsupported,
        /// Peer access from a device to itself: it reaches its own memory without any.
        #[error("'{device}' reaches its own memory without peer access: canAccessPeer() of a device and itself is false")]
        PeerAccessSelf { device: String } => PeerAccessUnsupported,
        /// Peer access the runtime cannot give this pair; `message` says why.
        #[error("{message}")]
        PeerAccessUnavailable { message: String } => PeerAccessUnsupported,
        // CUDA C kernels.
        /// No NVRTC for CUDA C; `message` lists what was found and what to install.
        #[error("{message}")]
        NvrtcUnavailable { message: String } => NvrtcUnavailable,
    }
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
    /// The code of an error in this field.
    pub fn code(self) -> ErrorCode {
        match self {
            InterfaceField::Interface => ErrorCode::SuaiMalformed,
            InterfaceField::Offset => ErrorCode::SuaiOffset,
            InterfaceField::Version => ErrorCode::SuaiVersion,
            InterfaceField::Data => ErrorCode::SuaiData,
            InterfaceField::Syclobj => ErrorCode::SuaiSyclobj,
            InterfaceField::Shape => ErrorCode::SuaiShape,
            InterfaceField::Typestr => ErrorCode::SuaiTypestr,
            InterfaceField::Strides => ErrorCode::SuaiStrides,
        }
    }
}

impl MemoryError {
    /// The stable `code` property of the JS error.
    pub fn code(&self) -> &'static str {
        self.error_code().as_str()
    }

    /// No device for a queue, or a filter string that names none, is a
    /// `SyclQueueCreationError`, as dpctl raises it.
    pub fn into_queue_creation(self) -> Self {
        match self.error_code() {
            ErrorCode::DeviceNotFound | ErrorCode::InvalidFilter => {
                MemoryError::QueueCreation { message: self.to_string() }
            }
            _ => self,
        }
    }

    /// A filter string that cannot be understood, given for a device, is a
    /// `SyclDeviceCreationError`, as dpctl raises it.
    pub fn into_device_creation(self) -> Self {
        match self.error_code() {
            ErrorCode::InvalidFilter => MemoryError::DeviceNotFound { message: self.to_string() },
            _ => self,
        }
    }

    /// A malformed interface field of the wrong type (a `TypeError`).
    pub fn malformed(field: InterfaceField, message: impl Into<String>) -> Self {
        MemoryError::InterfaceMalformed { field, message: message.into(), range: false }
    }

    /// A malformed interface field of the right type but out of range (a `RangeError`).
    pub fn malformed_range(field: InterfaceField, message: impl Into<String>) -> Self {
        MemoryError::InterfaceMalformed { field, message: message.into(), range: true }
    }
}

/// The crate's result, failing with a [`MemoryError`].
pub type Result<T, E = MemoryError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_argument_count_reads_as_english_for_one_and_for_many() {
        let count = |expected, given| MemoryError::KernelArgCount { kernel: "k".into(), expected, given }.to_string();
        assert_eq!(count(1, 1), "kernel 'k' takes 1 argument, 1 was given");
        assert_eq!(count(2, 1), "kernel 'k' takes 2 arguments, 1 was given");
        assert_eq!(count(1, 0), "kernel 'k' takes 1 argument, 0 were given");
        assert_eq!(count(3, 2), "kernel 'k' takes 3 arguments, 2 were given");
    }

    #[test]
    fn codes_are_unique_and_named_after_their_text() {
        let mut texts: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        texts.sort_unstable();
        texts.dedup();
        assert_eq!(texts.len(), ErrorCode::ALL.len(), "a code text is declared twice");
        for code in ErrorCode::ALL {
            assert!(code.as_str().starts_with("ERR_"), "{code:?}");
            assert!(!code.classes().is_empty(), "{code:?}");
        }
    }

    #[test]
    fn a_variant_is_thrown_as_its_codes_class() {
        let freed = MemoryError::Freed;
        assert_eq!((freed.code(), freed.class()), ("ERR_USM_FREED", ErrorClass::Error));
        let e = MemoryError::SourceTooLarge { nbytes: 4, len: 5 };
        assert_eq!((e.code(), e.class()), ("ERR_SOURCE_TOO_LARGE", ErrorClass::RangeError));
        assert_eq!(e.to_string(), "Source object is too large to be accommodated in 4 bytes buffer (it has 5)");
        let e = MemoryError::malformed_range(InterfaceField::Shape, "bad");
        assert_eq!((e.code(), e.class()), ("ERR_SUAI_SHAPE", ErrorClass::RangeError));
        let e = MemoryError::malformed(InterfaceField::Shape, "bad");
        assert_eq!((e.code(), e.class()), ("ERR_SUAI_SHAPE", ErrorClass::TypeError));
    }

    #[test]
    fn creation_errors_keep_their_message() {
        let e = MemoryError::InvalidFilter { filter: "foo:bar".into() };
        let queue = e.clone().into_queue_creation();
        assert_eq!((queue.code(), queue.to_string()), ("ERR_QUEUE_CREATION", e.to_string()));
        let device = e.clone().into_device_creation();
        assert_eq!((device.code(), device.class()), ("ERR_DEVICE_NOT_FOUND", ErrorClass::DeviceCreation));
        assert_eq!(device.to_string(), "Device filter selector string 'foo:bar' is not understood.");
        assert_eq!(MemoryError::Busy.into_queue_creation(), MemoryError::Busy);
    }
}
