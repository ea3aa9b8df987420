//! USM allocation kinds, with dpctl's names and enum values.

use crate::error::{MemoryError, Result};

/// The kind of a USM allocation; `Unknown` for memory that is not USM of the context
/// asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UsmKind {
    Unknown,
    Device,
    Shared,
    Host,
}

impl UsmKind {
    /// The name dpctl's `get_usm_type()` returns.
    pub fn name(self) -> &'static str {
        match self {
            UsmKind::Unknown => "unknown",
            UsmKind::Device => "device",
            UsmKind::Shared => "shared",
            UsmKind::Host => "host",
        }
    }

    /// dpctl's `DPCTLSyclUSMType` value (`get_usm_type_enum()`).
    pub fn enum_value(self) -> u32 {
        match self {
            UsmKind::Unknown => 0,
            UsmKind::Device => 1,
            UsmKind::Shared => 2,
            UsmKind::Host => 3,
        }
    }

    /// The kind of a `DPCTLSyclUSMType` value of an allocated kind (device 1, shared 2,
    /// host 3), as the JS layer sends them; `ERR_UNKNOWN_USM_TYPE` for any other.
    pub fn from_allocated_value(value: u32) -> Result<UsmKind> {
        match value {
            1 => Ok(UsmKind::Device),
            2 => Ok(UsmKind::Shared),
            3 => Ok(UsmKind::Host),
            _ => Err(MemoryError::UnknownUsmType { value }),
        }
    }

    /// Whether the host can read and write the memory directly.
    pub fn host_accessible(self) -> bool {
        matches!(self, UsmKind::Shared | UsmKind::Host)
    }
}

/// Checks an allocation request as every allocator takes it: at least one byte, of a known
/// kind, at alignment 0 (the runtime's default) or a power of two. The one check of these
/// rules: the model makes it before the pool, each provider again before its runtime.
pub(crate) fn check_allocation_request(kind: UsmKind, nbytes: u64, alignment: u64) -> Result<()> {
    if nbytes == 0 {
        return Err(MemoryError::ZeroSize);
    }
    if kind == UsmKind::Unknown {
        return Err(MemoryError::UnknownKindAllocation);
    }
    if alignment != 0 && !alignment.is_power_of_two() {
        return Err(MemoryError::InvalidAlignment { alignment });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_enum_values_match_dpctl() {
        let all = [UsmKind::Unknown, UsmKind::Device, UsmKind::Shared, UsmKind::Host];
        let names: Vec<_> = all.iter().map(|k| k.name()).collect();
        let values: Vec<_> = all.iter().map(|k| k.enum_value()).collect();
        assert_eq!(names, ["unknown", "device", "shared", "host"]);
        assert_eq!(values, [0, 1, 2, 3]);
        assert!(UsmKind::Host.host_accessible() && UsmKind::Shared.host_accessible());
        assert!(!UsmKind::Device.host_accessible() && !UsmKind::Unknown.host_accessible());
    }

    #[test]
    fn allocation_requests_are_checked_once_for_every_allocator() {
        assert_eq!(check_allocation_request(UsmKind::Host, 1, 0), Ok(()));
        assert_eq!(check_allocation_request(UsmKind::Device, 16, 4096), Ok(()));
        assert_eq!(check_allocation_request(UsmKind::Device, 0, 0), Err(MemoryError::ZeroSize));
        assert_eq!(check_allocation_request(UsmKind::Unknown, 16, 0), Err(MemoryError::UnknownKindAllocation));
        for alignment in [3u64, 6, 100, 4097, u64::MAX] {
            let refused = check_allocation_request(UsmKind::Shared, 16, alignment);
            assert_eq!(refused, Err(MemoryError::InvalidAlignment { alignment }));
        }
    }
}
