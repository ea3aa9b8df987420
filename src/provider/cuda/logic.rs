//! The pure parts of the CUDA provider (no driver calls), tested on machines without a GPU.

use cudarc::driver::sys::CUmemorytype;

use crate::error::{MemoryError, Result};
use crate::runtime::UsmKind;

/// Alignment `cuMemAlloc` and `cuMemAllocManaged` guarantee (the CUDA programming guide
/// promises at least 256 bytes).
pub(super) const DEVICE_BASE_ALIGNMENT: u64 = 256;
/// Alignment `cuMemHostAlloc` gives: whole pages.
pub(super) const HOST_BASE_ALIGNMENT: u64 = 4096;

/// `CUmemorytype` values (`CU_MEMORYTYPE_*`).
pub(super) const MEMORYTYPE_HOST: u32 = CUmemorytype::CU_MEMORYTYPE_HOST as u32;
/// Device memory (or managed memory, which `IS_MANAGED` tells apart).
pub(super) const MEMORYTYPE_DEVICE: u32 = CUmemorytype::CU_MEMORYTYPE_DEVICE as u32;
/// Unified memory (counted as shared).
pub(super) const MEMORYTYPE_UNIFIED: u32 = CUmemorytype::CU_MEMORYTYPE_UNIFIED as u32;

/// How one allocation is asked of the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct AllocPlan {
    /// Alignment the returned pointer must have (1 = none asked).
    pub align: u64,
    /// Bytes to ask the driver for.
    pub request: u64,
    /// Whether `request` includes `align - 1` bytes of padding.
    pub padded: bool,
}

/// The alignment the driver guarantees for memory of `kind`.
pub(super) fn base_alignment(kind: UsmKind) -> u64 {
    match kind {
        UsmKind::Host => HOST_BASE_ALIGNMENT,
        _ => DEVICE_BASE_ALIGNMENT,
    }
}

/// Plans an allocation of `nbytes` with `alignment` (0 = the driver's default) when the
/// driver guarantees `base` alignment: an alignment the driver already gives costs nothing;
/// a larger one over-allocates by `alignment - 1` so that an aligned interior pointer with
/// `nbytes` behind it always exists.
/// The request must have passed `check_allocation_request`.
pub(super) fn plan_allocation(nbytes: u64, alignment: u64, base: u64) -> Result<AllocPlan> {
    let align = alignment.max(1);
    if align <= base {
        return Ok(AllocPlan { align, request: nbytes, padded: false });
    }
    padded_plan(nbytes, align)
}

/// The over-allocating plan: `nbytes + align - 1` bytes.
pub(super) fn padded_plan(nbytes: u64, align: u64) -> Result<AllocPlan> {
    let request = nbytes.checked_add(align - 1).ok_or_else(|| MemoryError::UsmAllocation {
        message: format!("cannot allocate {nbytes} bytes with alignment {align}: the size overflows"),
    })?;
    Ok(AllocPlan { align, request, padded: true })
}

/// `value` rounded up to a multiple of `align` (a power of two); `None` on overflow.
pub(super) fn align_up(value: u64, align: u64) -> Option<u64> {
    debug_assert!(align.is_power_of_two());
    Some(value.checked_add(align - 1)? & !(align - 1))
}

/// Admission check for managed (shared) memory: never ask for more than the device has
/// free, since oversubscribed managed memory can stall the GPU for every user of it.
pub(super) fn admit_managed(requested: u64, free: u64) -> Result<()> {
    if requested > free {
        return Err(MemoryError::UsmAllocation {
            message: format!(
                "refusing to allocate {requested} bytes of shared (managed) memory: the device has only \
             {free} bytes free, and managed memory beyond free device memory would oversubscribe the GPU"
            ),
        });
    }
    Ok(())
}

/// What a failed allocation says: `"cuMemAlloc of N bytes failed: <error> (device has F
/// bytes free of T)"`.
pub(super) fn allocation_failure(call: &str, request: u64, error: &str, mem: Option<(u64, u64)>) -> MemoryError {
    let mut msg = format!("{call} of {request} bytes failed: {error}");
    if let Some((free, total)) = mem {
        msg.push_str(&format!(" (device has {free} bytes free of {total})"));
    }
    MemoryError::UsmAllocation { message: msg }
}

/// `cuDriverGetVersion`'s `1000 * major + 10 * minor`, written as SYCL's CUDA backend
/// writes `driver_version`: `"CUDA 12.8"`.
pub(super) fn format_driver_version(version: i32) -> String {
    format!("CUDA {}.{}", version / 1000, (version % 1000) / 10)
}

/// The text of a `CUresult`: `"NAME: description"`, `"NAME"`, or `"CUDA error N"`.
pub(super) fn format_cu_error(code: u32, name: Option<&str>, text: Option<&str>) -> String {
    match (name, text) {
        (Some(n), Some(t)) if !t.is_empty() && t != n => format!("{n}: {t}"),
        (Some(n), _) => n.to_string(),
        (None, Some(t)) => format!("CUDA error {code}: {t}"),
        (None, None) => format!("CUDA error {code}"),
    }
}

/// USM kind from the pointer attributes `MEMORY_TYPE` and `IS_MANAGED` of a pointer that
/// belongs to the context asking.
pub(super) fn classify_pointer(memory_type: u32, is_managed: bool) -> UsmKind {
    if is_managed {
        return UsmKind::Shared;
    }
    match memory_type {
        MEMORYTYPE_DEVICE => UsmKind::Device,
        MEMORYTYPE_HOST => UsmKind::Host,
        MEMORYTYPE_UNIFIED => UsmKind::Shared,
        _ => UsmKind::Unknown,
    }
}

/// SYCL aspects of a CUDA device.
pub(super) fn aspects(cc: (i32, i32), managed: bool, map_host: bool) -> Vec<String> {
    let mut v = vec!["gpu", "usm_device_allocations"];
    if map_host {
        v.push("usm_host_allocations");
    }
    if managed {
        v.push("usm_shared_allocations");
    }
    // Half precision arithmetic from compute capability 5.3; fp64 on every CUDA GPU.
    if cc >= (5, 3) {
        v.push("fp16");
    }
    v.push("fp64");
    v.into_iter().map(String::from).collect()
}

/// One driver memset of a fill of `count` copies of a pattern of 1, 2, 4, 8 or 16 bytes.
/// `units` is how many elements (or, strided, rows of `pitch` bytes) one pattern copy
/// spans; a strided step writes one element every `pitch` bytes, `offset` into each row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FillStep {
    /// `cuMemsetD8`: every byte `value`.
    Bytes { value: u8, units: usize },
    /// `cuMemsetD16` over 2-byte elements.
    Halves { value: u16, units: usize },
    /// `cuMemsetD32` over 4-byte elements.
    Words { value: u32, units: usize },
    /// `cuMemsetD2D8`: byte `offset` of every row.
    StridedByte { offset: usize, value: u8, pitch: usize, units: usize },
    /// `cuMemsetD2D32`: the 4-byte word at `offset` of every row.
    StridedWord { offset: usize, value: u32, pitch: usize, units: usize },
}

/// The driver memsets that write `pattern` (1, 2, 4, 8 or 16 bytes, little-endian as the
/// host wrote it) repeatedly from `dst`: the widest plain memset the pattern repeats at and
/// the address's alignment allows, else one strided memset per word (4-byte aligned) or
/// per byte of the shortest period the pattern repeats. Empty for any other pattern length.
pub(super) fn fill_steps(pattern: &[u8], dst: u64) -> Vec<FillStep> {
    let len = pattern.len();
    if !matches!(len, 1 | 2 | 4 | 8 | 16) {
        return Vec::new();
    }
    // The shortest prefix the pattern repeats.
    let period = [1, 2, 4, 8, 16]
        .into_iter()
        .find(|&p| p <= len && pattern.chunks(p).all(|c| c == &pattern[..p]))
        .unwrap_or(len);
    let half = |at: usize| u16::from_le_bytes([pattern[at], pattern[at + 1]]);
    let word = |at: usize| u32::from_le_bytes([pattern[at], pattern[at + 1], pattern[at + 2], pattern[at + 3]]);
    match period {
        1 => vec![FillStep::Bytes { value: pattern[0], units: len }],
        2 if dst.is_multiple_of(2) => vec![FillStep::Halves { value: half(0), units: len / 2 }],
        4 if dst.is_multiple_of(4) => vec![FillStep::Words { value: word(0), units: len / 4 }],
        _ if dst.is_multiple_of(4) && period >= 4 => (0..period)
            .step_by(4)
            .map(|offset| FillStep::StridedWord { offset, value: word(offset), pitch: period, units: len / period })
            .collect(),
        _ => (0..period)
            .map(|offset| FillStep::StridedByte { offset, value: pattern[offset], pitch: period, units: len / period })
            .collect(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {

    use super::FillStep::*;

    /// What `steps` write over `count` copies from an address of alignment `dst % 16`.
    fn written(steps: &[FillStep], len: usize, count: usize) -> Vec<u8> {
        let mut out = vec![0xEEu8; len * count];
        for step in steps {
            match *step {
                Bytes { value, units } => out[..units * count].fill(value),
                Halves { value, units } => {
                    for c in out[..2 * units * count].chunks_mut(2) {
                        c.copy_from_slice(&value.to_le_bytes());
                    }
                }
                Words { value, units } => {
                    for c in out[..4 * units * count].chunks_mut(4) {
                        c.copy_from_slice(&value.to_le_bytes());
                    }
                }
                StridedByte { offset, value, pitch, units } => {
                    (0..units * count).for_each(|i| out[i * pitch + offset] = value)
                }
                StridedWord { offset, value, pitch, units } => (0..units * count).for_each(|i| {
                    out[i * pitch + offset..i * pitch + offset + 4].copy_from_slice(&value.to_le_bytes())
                }),
            }
        }
        out
    }

    #[test]
    fn fills_write_the_pattern_at_every_alignment() {
        let patterns: [&[u8]; 9] = [
            &[7],
            &[1, 2],
            &[3, 3],
            &[1, 2, 3, 4],
            &[0, 0, 128, 63],
            &[9, 9, 9, 9, 9, 9, 9, 9],
            &[1, 2, 3, 4, 1, 2, 3, 4],
            &[1, 2, 3, 4, 5, 6, 7, 8],
            &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        ];
        for pattern in patterns {
            for dst in [0x1000u64, 0x1001, 0x1002, 0x1004, 0x1008] {
                let steps = fill_steps(pattern, dst);
                assert!(!steps.is_empty());
                let expected: Vec<u8> = pattern.iter().copied().cycle().take(pattern.len() * 5).collect();
                assert_eq!(written(&steps, pattern.len(), 5), expected, "{pattern:?} at {dst:#x}: {steps:?}");
                for step in &steps {
                    // Each element the driver writes is aligned to its width.
                    let aligned = match *step {
                        Halves { .. } => dst.is_multiple_of(2),
                        Words { .. } => dst.is_multiple_of(4),
                        StridedWord { offset, .. } => (dst + offset as u64).is_multiple_of(4),
                        _ => true,
                    };
                    assert!(aligned, "{pattern:?} at {dst:#x}: {step:?}");
                }
            }
        }
    }

    #[test]
    fn fills_take_the_widest_memset_the_pattern_allows() {
        assert_eq!(fill_steps(&[0; 8], 0x1000), vec![Bytes { value: 0, units: 8 }]);
        assert_eq!(fill_steps(&[0, 0, 128, 63], 0x1000), vec![Words { value: 0x3F80_0000, units: 1 }]);
        assert_eq!(fill_steps(&[1, 2, 1, 2, 1, 2, 1, 2], 0x1000), vec![Halves { value: 0x0201, units: 4 }]);
        assert_eq!(fill_steps(&[1, 2, 3, 4, 5, 6, 7, 8], 0x1000).len(), 2);
        assert_eq!(fill_steps(&[1, 2, 3, 4, 5, 6, 7, 8], 0x1001).len(), 8);
        // A 16-byte pattern of period 8 writes rows of 8.
        let repeated: Vec<u8> = (1..=8).cycle().take(16).collect();
        assert_eq!(fill_steps(&repeated, 0x1000).len(), 2);
        assert!(fill_steps(&[1, 2, 3], 0x1000).is_empty());
    }
    use super::*;

    #[test]
    fn alignment_default_and_small_cost_nothing() {
        let p = plan_allocation(100, 0, DEVICE_BASE_ALIGNMENT).unwrap();
        assert_eq!(p, AllocPlan { align: 1, request: 100, padded: false });
        let p = plan_allocation(100, 256, DEVICE_BASE_ALIGNMENT).unwrap();
        assert_eq!(p, AllocPlan { align: 256, request: 100, padded: false });
        let p = plan_allocation(100, 4096, HOST_BASE_ALIGNMENT).unwrap();
        assert_eq!(p, AllocPlan { align: 4096, request: 100, padded: false });
    }

    #[test]
    fn alignment_beyond_base_over_allocates() {
        let p = plan_allocation(100, 4096, DEVICE_BASE_ALIGNMENT).unwrap();
        assert_eq!(p, AllocPlan { align: 4096, request: 100 + 4095, padded: true });
        // Any raw base, aligned up, leaves nbytes inside the padded block.
        for raw in [0x7f00_0000_0100u64, 0x7f00_0000_0000, 0x7f00_0000_0fff, 0x7f00_0000_0001] {
            let user = align_up(raw, p.align).unwrap();
            assert_eq!(user % 4096, 0);
            assert!(user >= raw && user + 100 <= raw + p.request);
        }
    }

    #[test]
    fn overflow_is_refused() {
        let e = plan_allocation(u64::MAX - 10, 1 << 20, 256).unwrap_err();
        assert!(matches!(e, MemoryError::UsmAllocation { message: ref m } if m.contains("overflows")));
        assert_eq!(align_up(u64::MAX - 5, 4096), None);
        assert_eq!(align_up(0, 4096), Some(0));
        assert_eq!(align_up(1, 1), Some(1));
        assert_eq!(align_up(4097, 4096), Some(8192));
    }

    #[test]
    fn base_alignment_per_kind() {
        assert_eq!(base_alignment(UsmKind::Host), 4096);
        assert_eq!(base_alignment(UsmKind::Device), 256);
        assert_eq!(base_alignment(UsmKind::Shared), 256);
    }

    #[test]
    fn managed_admission_refuses_beyond_free() {
        assert!(admit_managed(10, 10).is_ok());
        assert!(admit_managed(0, 0).is_ok());
        let e = admit_managed(11, 10).unwrap_err();
        match e {
            MemoryError::UsmAllocation { message: m } => {
                assert!(m.contains("11 bytes") && m.contains("10 bytes free"), "{m}");
            }
            other => panic!("wrong error {other:?}"),
        }
        assert!(admit_managed(u64::MAX, u64::MAX - 1).is_err());
    }

    #[test]
    fn allocation_failure_message_has_sizes() {
        let e = allocation_failure("cuMemAlloc", 1 << 40, "CUDA_ERROR_OUT_OF_MEMORY: out of memory", Some((5, 9)));
        assert_eq!(
            e,
            MemoryError::UsmAllocation {
                message: "cuMemAlloc of 1099511627776 bytes failed: CUDA_ERROR_OUT_OF_MEMORY: out of memory \
                 (device has 5 bytes free of 9)"
                    .into()
            }
        );
        let e = allocation_failure("cuMemHostAlloc", 7, "CUDA_ERROR_OUT_OF_MEMORY", None);
        assert_eq!(e.to_string(), "cuMemHostAlloc of 7 bytes failed: CUDA_ERROR_OUT_OF_MEMORY");
    }

    #[test]
    fn driver_version_formatting() {
        assert_eq!(format_driver_version(12080), "CUDA 12.8");
        assert_eq!(format_driver_version(13000), "CUDA 13.0");
        assert_eq!(format_driver_version(11040), "CUDA 11.4");
        assert_eq!(format_driver_version(12020), "CUDA 12.2");
    }

    #[test]
    fn cu_error_messages() {
        assert_eq!(
            format_cu_error(2, Some("CUDA_ERROR_OUT_OF_MEMORY"), Some("out of memory")),
            "CUDA_ERROR_OUT_OF_MEMORY: out of memory"
        );
        assert_eq!(format_cu_error(100, Some("CUDA_ERROR_NO_DEVICE"), None), "CUDA_ERROR_NO_DEVICE");
        assert_eq!(format_cu_error(1, Some("X"), Some("")), "X");
        assert_eq!(format_cu_error(4242, None, None), "CUDA error 4242");
        assert_eq!(format_cu_error(4242, None, Some("odd")), "CUDA error 4242: odd");
    }

    #[test]
    fn pointer_classification() {
        assert_eq!(classify_pointer(MEMORYTYPE_DEVICE, true), UsmKind::Shared);
        assert_eq!(classify_pointer(MEMORYTYPE_HOST, true), UsmKind::Shared);
        assert_eq!(classify_pointer(MEMORYTYPE_DEVICE, false), UsmKind::Device);
        assert_eq!(classify_pointer(MEMORYTYPE_HOST, false), UsmKind::Host);
        assert_eq!(classify_pointer(MEMORYTYPE_UNIFIED, false), UsmKind::Shared);
        assert_eq!(classify_pointer(0, false), UsmKind::Unknown);
        assert_eq!(classify_pointer(3, false), UsmKind::Unknown); // CU_MEMORYTYPE_ARRAY
    }

    #[test]
    fn aspects_follow_capabilities() {
        let a = aspects((9, 0), true, true);
        assert_eq!(
            a,
            ["gpu", "usm_device_allocations", "usm_host_allocations", "usm_shared_allocations", "fp16", "fp64"]
        );
        let a = aspects((5, 2), false, true);
        assert_eq!(a, ["gpu", "usm_device_allocations", "usm_host_allocations", "fp64"]);
    }
}
