//! Device filter strings (`backend:type:index`) and `ONEAPI_DEVICE_SELECTOR`, free of any
//! runtime: both work on `(backend, device type)` pairs that the caller reads from its
//! devices.
//!
//! Names are matched without regard to ASCII case, as DPC++ does (`OpenCL:GPU` is
//! `opencl:gpu`). Backends: `opencl`, `level_zero`, `cuda`, `hip`, `native_cpu`.

use std::fmt;

use crate::error::{MemoryError, Result};
use crate::runtime::DeviceType;

/// The backends filter strings and `ONEAPI_DEVICE_SELECTOR` name.
pub const BACKENDS: [&str; 5] = ["opencl", "level_zero", "cuda", "hip", "native_cpu"];

fn backend_name(token: &str) -> Option<&'static str> {
    BACKENDS.iter().copied().find(|b| b.eq_ignore_ascii_case(token))
}

fn same_backend(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// A non-negative decimal index: digits only (no sign, no spaces), within `usize`.
fn parse_index(token: &str) -> Option<usize> {
    if !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()) {
        token.parse().ok()
    } else {
        None
    }
}

// ------------------------------------------------------------------------------------
// Filter strings
// ------------------------------------------------------------------------------------

/// A parsed filter string. `None` means "any" (the part was left out, or was `*`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeviceFilter {
    /// Lower-case backend name, one of [`BACKENDS`].
    pub backend: Option<String>,
    /// `Cpu`, `Gpu` or `Accelerator`.
    pub device_type: Option<DeviceType>,
    /// The index among the devices that match `backend` and `device_type`, in order.
    pub index: Option<usize>,
}

impl DeviceFilter {
    /// Same as [`parse_filter`].
    #[cfg(test)]
    pub fn parse(filter: &str) -> Result<DeviceFilter> {
        parse_filter(filter)
    }

    /// Whether a device of this backend and type passes the backend and type parts (the
    /// index is not looked at).
    pub fn matches(&self, backend: &str, device_type: DeviceType) -> bool {
        self.backend.as_deref().is_none_or(|b| same_backend(b, backend))
            && self.device_type.is_none_or(|t| t == device_type)
    }
}

/// The canonical form: the given parts joined by `:` (`*` when nothing is given).
impl fmt::Display for DeviceFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if let Some(b) = &self.backend {
            parts.push(b.clone());
        }
        if let Some(t) = self.device_type {
            parts.push(t.name().to_string());
        }
        if let Some(i) = self.index {
            parts.push(i.to_string());
        }
        if parts.is_empty() {
            f.write_str("*")
        } else {
            f.write_str(&parts.join(":"))
        }
    }
}

fn filter_error(filter: &str) -> MemoryError {
    MemoryError::InvalidFilter { filter: filter.into() }
}

/// Parses `backend:type:index`, each part optional but in that order: `cpu`, `gpu`,
/// `opencl`, `0`, `gpu:1`, `opencl:cpu:0`, `level_zero:gpu`, `cuda:gpu:1`.
///
/// Types: `cpu`, `gpu`, `accelerator`. `*` stands for "any" in the backend or type place
/// (`*`, `*:gpu`, `opencl:*:0`). Unknown names, more than three parts, empty parts, parts
/// out of order or repeated, and indices that are not plain decimal digits (so no
/// negative index) are an [`MemoryError::InvalidFilter`], with dpctl's message.
pub fn parse_filter(filter: &str) -> Result<DeviceFilter> {
    let parts: Vec<&str> = filter.split(':').collect();
    if parts.len() > 3 {
        return Err(filter_error(filter));
    }
    let mut result = DeviceFilter::default();
    // The first place the next part may fill: 0 backend, 1 type, 2 index, 3 none.
    let mut next = 0;
    for part in parts {
        if part == "*" && next <= 1 {
            next += 1;
        } else if let Some(backend) = backend_name(part).filter(|_| next == 0) {
            result.backend = Some(backend.to_string());
            next = 1;
        } else if let Some(device_type) = filter_type(part).filter(|_| next <= 1) {
            result.device_type = Some(device_type);
            next = 2;
        } else if let Some(index) = parse_index(part).filter(|_| next <= 2) {
            result.index = Some(index);
            next = 3;
        } else {
            return Err(filter_error(filter));
        }
    }
    Ok(result)
}

fn filter_type(token: &str) -> Option<DeviceType> {
    match token.to_ascii_lowercase().as_str() {
        "cpu" => Some(DeviceType::Cpu),
        "gpu" => Some(DeviceType::Gpu),
        "accelerator" => Some(DeviceType::Accelerator),
        _ => None,
    }
}

/// The device `filter` names among `devices` (in the order they are enumerated): the
/// `index`-th of those that match its backend and type, or the first of them when it
/// gives no index. `info` reads a device's backend and type.
pub fn select<'a, D>(
    filter: &DeviceFilter,
    devices: &'a [D],
    info: impl Fn(&D) -> (&str, DeviceType),
) -> Option<&'a D> {
    let mut matching = devices.iter().filter(|d| {
        let (backend, device_type) = info(d);
        filter.matches(backend, device_type)
    });
    matching.nth(filter.index.unwrap_or(0))
}

/// The filter string of `devices[i]`: `backend:type:N`, with `N` its index among the
/// devices of the same backend and type (so that [`select`] finds it again). `None` when
/// `i` is out of range.
pub fn filter_string<D>(devices: &[D], i: usize, info: impl Fn(&D) -> (&str, DeviceType)) -> Option<String> {
    let device = devices.get(i)?;
    let (backend, device_type) = info(device);
    let n = devices[..i]
        .iter()
        .filter(|d| {
            let (b, t) = info(d);
            same_backend(b, backend) && t == device_type
        })
        .count();
    Some(format!("{}:{}:{n}", backend.to_ascii_lowercase(), device_type.name()))
}

// ------------------------------------------------------------------------------------
// ONEAPI_DEVICE_SELECTOR
// ------------------------------------------------------------------------------------

/// Which devices of a backend one selector entry names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectorDevice {
    /// `*`
    All,
    /// `cpu`, `gpu`, `fpga` / `acc` / `accelerator`
    Type(DeviceType),
    /// `N`: the N-th device of the backend.
    Index(usize),
}

/// One entry: `[!]backend:device`. A term with a device list gives one entry per device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorTerm {
    /// Written with a leading `!`: the devices it names are removed.
    pub negative: bool,
    /// Lower-case backend name; `None` for `*`.
    pub backend: Option<String>,
    /// Which devices of the backend it names: all, one type, or one index.
    pub device: SelectorDevice,
}

impl SelectorTerm {
    fn matches(&self, backend: &str, device_type: DeviceType, index_within_backend: usize) -> bool {
        self.backend.as_deref().is_none_or(|b| same_backend(b, backend))
            && match self.device {
                SelectorDevice::All => true,
                SelectorDevice::Type(t) => t == device_type,
                SelectorDevice::Index(n) => n == index_within_backend,
            }
    }
}

/// A parsed `ONEAPI_DEVICE_SELECTOR`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector {
    terms: Vec<SelectorTerm>,
}

impl Selector {
    /// The entries, in the order written.
    #[cfg(test)]
    pub fn terms(&self) -> &[SelectorTerm] {
        &self.terms
    }

    /// Whether the device passes: some positive entry names it (or there is no positive
    /// entry at all) and no negative entry names it. `index_within_backend` is the
    /// device's index among all devices of its backend, in enumeration order.
    pub fn keeps(&self, backend: &str, device_type: DeviceType, index_within_backend: usize) -> bool {
        let matches = |t: &SelectorTerm| t.matches(backend, device_type, index_within_backend);
        let mut positives = self.terms.iter().filter(|t| !t.negative).peekable();
        let wanted = positives.peek().is_none() || positives.any(matches);
        wanted && !self.terms.iter().filter(|t| t.negative).any(matches)
    }
}

fn selector_error(selector: &str, reason: String) -> MemoryError {
    MemoryError::InvalidSelector { selector: selector.into(), reason }
}

/// Parses `ONEAPI_DEVICE_SELECTOR`: `;`-separated terms `[!]backend:devices`, where
/// `backend` is one of [`BACKENDS`] or `*`, and `devices` a `,`-separated list of `*`,
/// `cpu`, `gpu`, `fpga` (also `acc`, `accelerator`) or a device number `N` (the N-th
/// device of that backend). Example: `level_zero:gpu;opencl:0,cpu;!cuda:*`.
///
/// Empty terms (`a;;b`, a trailing `;`) are skipped, as DPC++ skips them; a string with no
/// term at all (empty or blank) keeps every device. Anything else that is malformed
/// (unknown names, a term without `:devices`, more than one `:`, an empty device list or
/// device entry, sub-device entries such as `0.1`, which this port does not support) is an
/// [`MemoryError::InvalidFilter`].
pub fn parse_selector(selector: &str) -> Result<Selector> {
    let mut terms = Vec::new();
    for term in selector.split(';') {
        if term.trim().is_empty() {
            continue;
        }
        let (negative, body) = match term.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, term),
        };
        let Some((backend, devices)) = body.split_once(':') else {
            return Err(selector_error(
                selector,
                format!(
                    "the term '{term}' names no devices; write '{body}:*' for all devices of the \
                     backend"
                ),
            ));
        };
        if devices.contains(':') {
            return Err(selector_error(selector, format!("the term '{term}' has more than one ':'")));
        }
        let backend = if backend == "*" {
            None
        } else {
            Some(
                backend_name(backend)
                    .ok_or_else(|| {
                        selector_error(
                            selector,
                            format!(
                                "unknown backend '{backend}' in the term '{term}' (known: {}, *)",
                                BACKENDS.join(", ")
                            ),
                        )
                    })?
                    .to_string(),
            )
        };
        if devices.is_empty() {
            return Err(selector_error(selector, format!("the term '{term}' names no devices")));
        }
        for device in devices.split(',') {
            let device = selector_device(device)
                .map_err(|reason| selector_error(selector, format!("{reason} in the term '{term}'")))?;
            terms.push(SelectorTerm { negative, backend: backend.clone(), device });
        }
    }
    Ok(Selector { terms })
}

fn selector_device(token: &str) -> std::result::Result<SelectorDevice, String> {
    match token.to_ascii_lowercase().as_str() {
        "*" => Ok(SelectorDevice::All),
        "cpu" => Ok(SelectorDevice::Type(DeviceType::Cpu)),
        "gpu" => Ok(SelectorDevice::Type(DeviceType::Gpu)),
        "fpga" | "acc" | "accelerator" => Ok(SelectorDevice::Type(DeviceType::Accelerator)),
        "" => Err("an empty device entry".to_string()),
        t if t.contains('.') => Err(format!("the sub-device entry '{token}' (sub-devices are not supported)")),
        t => parse_index(t).map(SelectorDevice::Index).ok_or_else(|| format!("unknown device '{token}'")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use DeviceType::{Accelerator, Cpu, Gpu};

    fn filter(backend: Option<&str>, device_type: Option<DeviceType>, index: Option<usize>) -> DeviceFilter {
        DeviceFilter { backend: backend.map(str::to_string), device_type, index }
    }

    #[test]
    fn parses_every_form() {
        let cases = [
            ("cpu", filter(None, Some(Cpu), None)),
            ("gpu", filter(None, Some(Gpu), None)),
            ("accelerator", filter(None, Some(Accelerator), None)),
            ("opencl:cpu:0", filter(Some("opencl"), Some(Cpu), Some(0))),
            ("cuda:gpu:1", filter(Some("cuda"), Some(Gpu), Some(1))),
            ("opencl", filter(Some("opencl"), None, None)),
            ("0", filter(None, None, Some(0))),
            ("12", filter(None, None, Some(12))),
            ("gpu:1", filter(None, Some(Gpu), Some(1))),
            ("level_zero:gpu", filter(Some("level_zero"), Some(Gpu), None)),
            ("hip:0", filter(Some("hip"), None, Some(0))),
            ("native_cpu:cpu", filter(Some("native_cpu"), Some(Cpu), None)),
            ("*", filter(None, None, None)),
            ("*:gpu", filter(None, Some(Gpu), None)),
            ("*:*", filter(None, None, None)),
            ("*:*:3", filter(None, None, Some(3))),
            ("opencl:*:0", filter(Some("opencl"), None, Some(0))),
            ("*:0", filter(None, None, Some(0))),
            ("OpenCL:GPU:0", filter(Some("opencl"), Some(Gpu), Some(0))),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_filter(text).unwrap(), expected, "{text}");
        }
    }

    #[test]
    fn rejects_malformed_filters() {
        let bad = [
            "",
            "foo",
            "foo:bar",
            "opencl:foo",
            "gpu:opencl",
            "0:gpu",
            "1:opencl",
            "opencl:cpu:0:1",
            "a:b:c:d",
            ":",
            "opencl:",
            ":gpu",
            "opencl::0",
            "gpu:-1",
            "-1",
            "+1",
            "1.0",
            "0x1",
            " gpu",
            "gpu ",
            "opencl:cuda",
            "gpu:cpu",
            "0:1",
            "gpu:*",
            "*:*:*",
            "host",
            "custom",
            "99999999999999999999999",
            "level-zero",
            "cpu,gpu",
        ];
        for text in bad {
            let e = parse_filter(text).unwrap_err();
            assert_eq!(e.code(), "ERR_INVALID_FILTER", "{text}");
            assert_eq!(e.to_string(), format!("Device filter selector string '{text}' is not understood."));
        }
    }

    #[test]
    fn display_round_trips() {
        for text in ["opencl:cpu:0", "gpu", "cuda:1", "*", "level_zero:gpu", "3"] {
            let parsed = parse_filter(text).unwrap();
            assert_eq!(parse_filter(&parsed.to_string()).unwrap(), parsed, "{text}");
        }
        assert_eq!(parse_filter("*:gpu:0").unwrap().to_string(), "gpu:0");
    }

    struct Dev(&'static str, DeviceType);

    fn info(d: &Dev) -> (&str, DeviceType) {
        (d.0, d.1)
    }

    fn devices() -> Vec<Dev> {
        vec![
            Dev("level_zero", Gpu),     // 0
            Dev("opencl", Cpu),         // 1
            Dev("opencl", Gpu),         // 2
            Dev("level_zero", Gpu),     // 3
            Dev("cuda", Gpu),           // 4
            Dev("opencl", Gpu),         // 5
            Dev("opencl", Accelerator), // 6
        ]
    }

    fn pick(text: &str) -> Option<usize> {
        let devs = devices();
        let f = parse_filter(text).unwrap();
        select(&f, &devs, info).map(|d| devs.iter().position(|x| std::ptr::eq(x, d)).unwrap())
    }

    #[test]
    fn select_counts_among_matching_devices() {
        assert_eq!(pick("gpu"), Some(0));
        assert_eq!(pick("gpu:0"), Some(0));
        assert_eq!(pick("gpu:1"), Some(2));
        assert_eq!(pick("gpu:4"), Some(5));
        assert_eq!(pick("gpu:5"), None);
        assert_eq!(pick("cpu"), Some(1));
        assert_eq!(pick("cpu:1"), None);
        assert_eq!(pick("opencl"), Some(1));
        assert_eq!(pick("opencl:2"), Some(5));
        assert_eq!(pick("opencl:gpu:1"), Some(5));
        assert_eq!(pick("level_zero:gpu:1"), Some(3));
        assert_eq!(pick("cuda:gpu:1"), None);
        assert_eq!(pick("hip"), None);
        assert_eq!(pick("accelerator"), Some(6));
        assert_eq!(pick("0"), Some(0));
        assert_eq!(pick("6"), Some(6));
        assert_eq!(pick("7"), None);
        assert_eq!(pick("*"), Some(0));
        let none: Vec<Dev> = Vec::new();
        assert!(select(&DeviceFilter::default(), &none, info).is_none());
    }

    #[test]
    fn filter_strings_name_the_device_again() {
        let devs = devices();
        let names: Vec<String> = (0..devs.len()).map(|i| filter_string(&devs, i, info).unwrap()).collect();
        assert_eq!(
            names,
            [
                "level_zero:gpu:0",
                "opencl:cpu:0",
                "opencl:gpu:0",
                "level_zero:gpu:1",
                "cuda:gpu:0",
                "opencl:gpu:1",
                "opencl:accelerator:0"
            ]
        );
        for (i, name) in names.iter().enumerate() {
            assert_eq!(pick(name), Some(i), "{name}");
        }
        assert_eq!(filter_string(&devs, devs.len(), info), None);
        assert_eq!(DeviceFilter::parse("gpu:1").unwrap(), parse_filter("gpu:1").unwrap());
    }

    // ---- ONEAPI_DEVICE_SELECTOR ----

    /// The indices of `devices()` the selector keeps, with indices within the backend.
    fn kept(selector: &str) -> Vec<usize> {
        let s = parse_selector(selector).unwrap();
        let devs = devices();
        (0..devs.len())
            .filter(|&i| {
                let Dev(backend, t) = devs[i];
                let within = devs[..i].iter().filter(|d| d.0 == backend).count();
                s.keeps(backend, t, within)
            })
            .collect()
    }

    #[test]
    fn selector_positive_terms() {
        assert_eq!(kept("level_zero:gpu"), [0, 3]);
        assert_eq!(kept("opencl:*"), [1, 2, 5, 6]);
        assert_eq!(kept("opencl:cpu"), [1]);
        assert_eq!(kept("opencl:0"), [1]);
        assert_eq!(kept("opencl:2"), [5]);
        assert_eq!(kept("opencl:0,gpu"), [1, 2, 5]);
        assert_eq!(kept("*:gpu"), [0, 2, 3, 4, 5]);
        assert_eq!(kept("*:0"), [0, 1, 4]);
        assert_eq!(kept("*:*"), [0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(kept("*:fpga"), [6]);
        assert_eq!(kept("opencl:acc"), [6]);
        assert_eq!(kept("opencl:accelerator"), [6]);
        assert_eq!(kept("cuda:*;level_zero:1"), [3, 4]);
        assert_eq!(kept("hip:*"), Vec::<usize>::new());
        assert_eq!(kept("native_cpu:cpu"), Vec::<usize>::new());
        assert_eq!(kept("OPENCL:GPU"), [2, 5]);
    }

    #[test]
    fn selector_negative_terms() {
        // Only negative terms: start from every device.
        assert_eq!(kept("!opencl:*"), [0, 3, 4]);
        assert_eq!(kept("!level_zero:gpu;!cuda:0"), [1, 2, 5, 6]);
        assert_eq!(kept("!*:gpu"), [1, 6]);
        // Negative terms win over positive ones, in any order.
        assert_eq!(kept("*:gpu;!opencl:*"), [0, 3, 4]);
        assert_eq!(kept("!opencl:*;*:gpu"), [0, 3, 4]);
        assert_eq!(kept("opencl:*;!opencl:1"), [1, 5, 6]);
        assert_eq!(kept("opencl:gpu;!*:*"), Vec::<usize>::new());
    }

    #[test]
    fn selector_empty_terms_and_strings() {
        assert_eq!(kept(""), [0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(kept("  "), [0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(kept("cuda:*;"), [4]);
        assert_eq!(kept(";;cuda:*;;"), [4]);
        assert!(parse_selector("").unwrap().terms().is_empty());
    }

    #[test]
    fn selector_terms_are_exposed() {
        let s = parse_selector("!opencl:0,gpu").unwrap();
        assert_eq!(
            s.terms(),
            [
                SelectorTerm { negative: true, backend: Some("opencl".into()), device: SelectorDevice::Index(0) },
                SelectorTerm { negative: true, backend: Some("opencl".into()), device: SelectorDevice::Type(Gpu) },
            ]
        );
    }

    #[test]
    fn selector_rejects_malformed() {
        let bad = [
            "opencl",
            "!opencl",
            "gpu",
            "foo:gpu",
            ":gpu",
            "!:gpu",
            "opencl:",
            "opencl:gpu:0",
            "opencl:xpu",
            "opencl:-1",
            "opencl:0.1",
            "level_zero:*.*",
            "opencl:gpu,,cpu",
            "opencl:gpu,",
            "!!opencl:*",
            "opencl:host",
            "host:*",
            "cuda:gpu;bogus",
            "opencl:1x",
        ];
        for text in bad {
            let e = parse_selector(text).unwrap_err();
            assert_eq!(e.code(), "ERR_INVALID_FILTER", "{text}");
            assert!(e.to_string().starts_with(&format!("ONEAPI_DEVICE_SELECTOR '{text}' is not understood: ")), "{e}");
        }
        let e = parse_selector("opencl").unwrap_err().to_string();
        assert!(e.contains("write 'opencl:*'"), "{e}");
        let e = parse_selector("opencl:0.1").unwrap_err().to_string();
        assert!(e.contains("sub-devices are not supported"), "{e}");
        let e = parse_selector("foo:gpu").unwrap_err().to_string();
        assert!(e.contains("unknown backend 'foo'"), "{e}");
    }
}
