//! USM allocation kinds, with dpctl's names and enum values.

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

    /// Whether the host can read and write the memory directly.
    pub fn host_accessible(self) -> bool {
        matches!(self, UsmKind::Shared | UsmKind::Host)
    }
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
}
