//! The consumer side of `__sycl_usm_array_interface__` (SUAI), free of Node.
//!
//! The JS layer turns the interface dict into a [`RawInterface`] (a small tree of
//! [`IfaceValue`]s), keeps `syclobj` to itself, and calls [`parse_interface`] with a closure
//! that resolves `syclobj` against the base pointer. The parser validates the fields in
//! dpctl's order (its `memory/_sycl_usm_array_interface_utils.pxi`): offset, version,
//! data, syclobj, shape, typestr, strides, then the extent computation. The first failure
//! wins.
//!
//! Differences from dpctl, all deliberate:
//! * Integers are JS numbers that are integral (safe integers) or bigints. Strings,
//!   booleans and fractional numbers are rejected (dpctl runs `int()` on shape and strides
//!   elements, so `'4'` and `4.7` pass there).
//! * `shape` and `strides` must be arrays (dpctl also accepts a string or a dict).
//! * A missing `typestr` is an error (dpctl silently assumes float64).
//! * A missing `version` is an error with its own message (dpctl reports `version: 0`).
//! * Every piece of arithmetic is checked: an extent or a pointer that leaves the 64-bit
//!   address space is a `RangeError`, never a wrapped value.
//! * `data[1]` is the read-only flag, as the protocol's documentation defines it.
//!
//! Error classes: a value of the wrong JS type gives a `TypeError`
//! ([`MemoryError::malformed`]), a value of the right type but out of range a
//! `RangeError` ([`MemoryError::malformed_range`]).

use std::fmt;

use crate::error::{InterfaceField, MemoryError, Result};
use crate::runtime::Address;

/// `Number.MAX_SAFE_INTEGER`: up to it, every integer is exactly one JS number.
pub const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// Longest list read from an interface field; longer ones are refused as malformed (the
/// JS layer reads no more of one: `bindingConstants().maxList`).
pub const MAX_LIST: u32 = 1024;

/// A JS number read as an integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsInteger {
    /// An integer of magnitude at most `MAX_SAFE_INTEGER`, exact.
    Safe(i64),
    /// An integer beyond it: it may stand for a neighbouring integer too.
    Unsafe,
    /// NaN, an infinity or a fraction.
    NotInteger,
}

/// The one reading of a JS number as an integer (interface fields, handle ids).
pub fn js_integer(n: f64) -> JsInteger {
    if !n.is_finite() || n.fract() != 0.0 {
        JsInteger::NotInteger
    } else if n.abs() <= MAX_SAFE_INTEGER {
        // Exact: a safe integer converts to i64 without loss.
        JsInteger::Safe(n as i64)
    } else {
        JsInteger::Unsafe
    }
}

const MALFORMED: &str = "__sycl_usm_array_interface__ is malformed";

const DATA_MESSAGE: &str = "__sycl_usm_array_interface__ is malformed: 'data' field is required, \
                            and must be a tuple (usm_pointer, is_writable_boolean).";

const SHAPE_MESSAGE: &str = "Shape entry is a required element of `__sycl_usm_array_interface__` dictionary";

const STRIDES_MESSAGE: &str = "__sycl_usm_array_interface__ is malformed: 'strides' must be a \
                               tuple or list of the same length as shape";

/// Longest list rendered in full in a message.
const LIST_DISPLAY_LIMIT: usize = 8;

/// One JS value of the interface dict, as the JS layer hands it over.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum IfaceValue {
    /// The key is absent, or its value is `undefined`.
    #[default]
    Missing,
    Null,
    Bool(bool),
    Number(f64),
    /// A JS bigint. Values beyond `i128` saturate (see [`IfaceValue::from_bigint_words`]);
    /// every such value is out of range for every field anyway.
    BigInt(i128),
    String(String),
    /// A JS array (or any other array-like the JS layer chooses to flatten).
    List(Vec<IfaceValue>),
    /// Anything else; the string names its type for messages (`object`, `function`, ...).
    Other(String),
}

impl IfaceValue {
    /// A bigint from napi's representation (sign bit and little-endian 64-bit words),
    /// saturating at `i128::MIN` / `i128::MAX`.
    pub fn from_bigint_words(sign_bit: bool, words: &[u64]) -> IfaceValue {
        let low = words.first().copied().unwrap_or(0);
        let high = words.get(1).copied().unwrap_or(0);
        let beyond = words.iter().skip(2).any(|&w| w != 0);
        let magnitude = (u128::from(high) << 64) | u128::from(low);
        let value = if sign_bit {
            if beyond || magnitude > i128::MIN.unsigned_abs() {
                i128::MIN
            } else {
                0i128.saturating_sub_unsigned(magnitude)
            }
        } else if beyond {
            i128::MAX
        } else {
            i128::try_from(magnitude).unwrap_or(i128::MAX)
        };
        IfaceValue::BigInt(value)
    }

    /// The JS type name (`typeof`, with `array` and `null` told apart).
    pub fn type_name(&self) -> &str {
        match self {
            IfaceValue::Missing => "undefined",
            IfaceValue::Null => "null",
            IfaceValue::Bool(_) => "boolean",
            IfaceValue::Number(_) => "number",
            IfaceValue::BigInt(_) => "bigint",
            IfaceValue::String(_) => "string",
            IfaceValue::List(_) => "array",
            IfaceValue::Other(name) => name,
        }
    }

    /// Type and value for messages: `number 2.5`, `string '4'`, `null`.
    fn describe(&self) -> String {
        match self {
            IfaceValue::Missing | IfaceValue::Null | IfaceValue::Other(_) => self.to_string(),
            _ => format!("{} {}", self.type_name(), self),
        }
    }
}

/// JS-like rendering: numbers as `String(n)` writes them, bigints with `n`, strings quoted.
impl fmt::Display for IfaceValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IfaceValue::Missing => f.write_str("undefined"),
            IfaceValue::Null => f.write_str("null"),
            IfaceValue::Bool(b) => write!(f, "{b}"),
            IfaceValue::Number(n) => f.write_str(&js_number(*n)),
            IfaceValue::BigInt(i) => write!(f, "{i}n"),
            IfaceValue::String(s) => write!(f, "'{s}'"),
            IfaceValue::List(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().take(LIST_DISPLAY_LIMIT).enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                if items.len() > LIST_DISPLAY_LIMIT {
                    write!(f, ", ... {} more", items.len() - LIST_DISPLAY_LIMIT)?;
                }
                f.write_str("]")
            }
            IfaceValue::Other(name) => write!(f, "[{name}]"),
        }
    }
}

/// A number as JS's `String(n)` writes it, for the values messages show.
fn js_number(n: f64) -> String {
    if n.is_nan() {
        "NaN".to_string()
    } else if n.is_infinite() {
        if n > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else if n == 0.0 {
        "0".to_string()
    } else if n.abs() >= 1e21 || n.abs() < 1e-6 {
        // JS switches to exponent notation here and always signs the exponent.
        let text = format!("{n:e}");
        if text.contains("e-") {
            text
        } else {
            text.replace('e', "e+")
        }
    } else {
        format!("{n}")
    }
}

/// The fields of a consumed interface, as the JS layer read them. `syclobj` stays in JS:
/// only whether it is there travels here.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RawInterface {
    pub offset: IfaceValue,
    pub version: IfaceValue,
    pub data: IfaceValue,
    /// False when the key is absent or its value is `undefined`. Any other value (`null`
    /// included) goes to the resolver, which rejects what it cannot use.
    pub syclobj_present: bool,
    pub shape: IfaceValue,
    pub typestr: IfaceValue,
    pub strides: IfaceValue,
}

/// A validated interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedInterface<Q> {
    /// `data[0]`: the pointer the resolver checked against `syclobj`.
    pub base_ptr: u64,
    /// First byte of the described range: `base_ptr + min_disp * itemsize`.
    pub ptr: u64,
    /// Length of the described range in bytes (at least one item).
    pub nbytes: u64,
    pub itemsize: u64,
    /// `data[1]`, the read-only flag.
    pub read_only: bool,
    /// What the resolver made of `syclobj`.
    pub queue: Q,
}

/// Validates `raw` in dpctl's order and computes the byte range it describes.
///
/// `resolve_syclobj` is called with the base pointer (`data[0]`) only once offset,
/// version and data are valid and `syclobj` is present; its error propagates unchanged.
/// Use [`pointer_not_bound`] and [`syclobj_invalid`] there for dpctl's messages.
///
/// A missing `typestr` is an error here: dpctl silently assumes float64 (itemsize 8),
/// which turns a forgotten field into an extent eight times too large.
pub fn parse_interface<Q>(
    raw: &RawInterface,
    resolve_syclobj: impl FnOnce(u64) -> Result<Q>,
) -> Result<ParsedInterface<Q>> {
    let offset = parse_offset(&raw.offset)?;
    parse_version(&raw.version)?;
    let (base_ptr, read_only) = parse_data(&raw.data)?;
    if !raw.syclobj_present {
        return Err(MemoryError::malformed(
            InterfaceField::Syclobj,
            format!(
                "{MALFORMED}: 'syclobj' field is required: a SyclQueue, a SyclContext or a \
                 filter string."
            ),
        ));
    }
    let queue = resolve_syclobj(base_ptr)?;
    let shape = parse_shape(&raw.shape)?;
    let itemsize = parse_typestr(&raw.typestr)?;
    let strides = parse_strides(&raw.strides, shape.len())?;
    let (min_disp, nbytes) = extent(&shape, strides.as_deref(), offset, itemsize)?;
    let ptr = derived_pointer(base_ptr, min_disp, itemsize, nbytes)?;
    Ok(ParsedInterface { base_ptr, ptr, nbytes, itemsize, read_only, queue })
}

/// The error for a `syclobj` of a kind the resolver cannot use (`null`, a device, a
/// number, ...): a `TypeError`.
pub fn syclobj_invalid(syclobj: &str) -> MemoryError {
    MemoryError::malformed(
        InterfaceField::Syclobj,
        format!(
            "{MALFORMED}: 'syclobj' must be a SyclQueue, a SyclContext or a filter string, \
             got {syclobj}."
        ),
    )
}

/// dpctl's step-4 error: the pointer is not a USM pointer of the context `syclobj` names.
pub fn pointer_not_bound(address: Address, syclobj: &str) -> MemoryError {
    MemoryError::PointerNotBound { address, syclobj: syclobj.into() }
}

/// Checks that `[address, address + nbytes)` lies inside the allocation `(base, size)`, when the
/// allocation is known. dpctl makes no such check.
pub fn check_bounds(address: Address, nbytes: u64, range: Option<(u64, u64)>) -> Result<()> {
    let Some((base, size)) = range else {
        return Ok(());
    };
    let start = u128::from(address);
    let end = start + u128::from(nbytes);
    let alloc_start = u128::from(base);
    let alloc_end = alloc_start + u128::from(size);
    if start >= alloc_start && end <= alloc_end {
        return Ok(());
    }
    // Lossless: every value here is below 2^65.
    let rel_start = start as i128 - alloc_start as i128;
    let rel_end = end as i128 - alloc_start as i128;
    Err(MemoryError::OutOfBounds { nbytes, address, rel_start, rel_end, size, base })
}

/// Itemsize of a numpy-like typestr, or `None` for one this port does not take.
///
/// Accepted: an optional byte order (`<`, `>`, `|`, `=`), then `?` or `b1` (bool),
/// `i1`/`i2`/`i4`/`i8`, `u1`/`u2`/`u4`/`u8`, `f2`/`f4`/`f8`, `c8`/`c16`. Object, string,
/// unicode, void and datetime kinds (`O`, `S`, `U`, `V`, `M`, `m`, `a`) are refused, as
/// dpctl refuses them.
pub fn typestr_itemsize(typestr: &str) -> Option<u64> {
    let body = typestr.strip_prefix(['<', '>', '|', '=']).unwrap_or(typestr);
    match body {
        "?" | "b1" | "i1" | "u1" => Some(1),
        "i2" | "u2" | "f2" => Some(2),
        "i4" | "u4" | "f4" => Some(4),
        "i8" | "u8" | "f8" | "c8" => Some(8),
        "c16" => Some(16),
        _ => None,
    }
}

/// An integer from a number (integral, safe) or a bigint. `what` names the value.
fn read_int(value: &IfaceValue, field: InterfaceField, what: &str) -> Result<i128> {
    let not_an_integer =
        || MemoryError::malformed(field, format!("{MALFORMED}: {what} must be an integer, got {}.", value.describe()));
    match value {
        IfaceValue::BigInt(i) => Ok(*i),
        IfaceValue::Number(n) => match js_integer(*n) {
            JsInteger::Safe(v) => Ok(i128::from(v)),
            JsInteger::Unsafe => Err(MemoryError::malformed_range(
                field,
                format!(
                    "{MALFORMED}: {what} is {}, which is not a safe integer; pass it as a \
                     BigInt.",
                    js_number(*n)
                ),
            )),
            JsInteger::NotInteger => Err(not_an_integer()),
        },
        _ => Err(not_an_integer()),
    }
}

/// An integer that must fit in `i64` (dpctl's `Py_ssize_t`).
fn read_ssize(value: &IfaceValue, field: InterfaceField, what: &str) -> Result<i128> {
    let v = read_int(value, field, what)?;
    if i64::try_from(v).is_err() {
        return Err(MemoryError::malformed_range(
            field,
            format!("{MALFORMED}: {what} is {v}, which does not fit in a signed 64-bit integer."),
        ));
    }
    Ok(v)
}

fn parse_offset(value: &IfaceValue) -> Result<i128> {
    match value {
        IfaceValue::Missing => Ok(0),
        other => read_ssize(other, InterfaceField::Offset, "'offset'"),
    }
}

fn parse_version(value: &IfaceValue) -> Result<()> {
    let unexpected = |shown: String| {
        MemoryError::malformed_range(
            InterfaceField::Version,
            format!(
                "{MALFORMED}: dict('version': {shown}) is unexpected. The only recognized \
                 version is 1."
            ),
        )
    };
    match value {
        IfaceValue::Number(n) if js_integer(*n) != JsInteger::NotInteger => {
            if *n == 1.0 {
                Ok(())
            } else {
                Err(unexpected(js_number(*n)))
            }
        }
        IfaceValue::BigInt(1) => Ok(()),
        IfaceValue::BigInt(i) => Err(unexpected(i.to_string())),
        IfaceValue::Missing => Err(MemoryError::malformed(
            InterfaceField::Version,
            format!("{MALFORMED}: 'version' field is required. The only recognized version is 1."),
        )),
        other => Err(MemoryError::malformed(
            InterfaceField::Version,
            format!(
                "{MALFORMED}: 'version' must be an integer, got {}. The only recognized \
                 version is 1.",
                other.describe()
            ),
        )),
    }
}

/// `data`: `[pointer, readOnly]`.
fn parse_data(value: &IfaceValue) -> Result<(u64, bool)> {
    let IfaceValue::List(items) = value else {
        return Err(MemoryError::malformed(InterfaceField::Data, DATA_MESSAGE));
    };
    let [pointer, flag] = items.as_slice() else {
        return Err(MemoryError::malformed_range(InterfaceField::Data, DATA_MESSAGE));
    };
    let ptr = parse_pointer(pointer)?;
    let read_only = match flag {
        IfaceValue::Bool(b) => *b,
        IfaceValue::Number(n) => *n != 0.0 && !n.is_nan(),
        IfaceValue::BigInt(i) => *i != 0,
        other => {
            return Err(MemoryError::malformed(
                InterfaceField::Data,
                format!("{MALFORMED}: 'data'[1] (the read-only flag) must be a boolean, got {}.", other.describe()),
            ))
        }
    };
    Ok((ptr, read_only))
}

fn parse_pointer(value: &IfaceValue) -> Result<u64> {
    let range = |message: String| MemoryError::malformed_range(InterfaceField::Data, message);
    let negative = |n: f64| {
        range(format!("{MALFORMED}: 'data'[0] (the USM pointer) is {}; a pointer cannot be negative.", js_number(n)))
    };
    let not_a_pointer = || {
        MemoryError::malformed(
            InterfaceField::Data,
            format!(
                "{MALFORMED}: 'data'[0] (the USM pointer) must be a bigint or a safe-integer \
                 number, got {}.",
                value.describe()
            ),
        )
    };
    match value {
        IfaceValue::Number(n) => match js_integer(*n) {
            JsInteger::Safe(v) => u64::try_from(v).map_err(|_| negative(*n)),
            JsInteger::Unsafe if *n < 0.0 => Err(negative(*n)),
            JsInteger::Unsafe => Err(range(format!(
                "{MALFORMED}: 'data'[0] (the USM pointer) is {}, which is not a safe \
                 integer; pass pointers as BigInt.",
                js_number(*n)
            ))),
            JsInteger::NotInteger => Err(not_a_pointer()),
        },
        IfaceValue::BigInt(i) => u64::try_from(*i).map_err(|_| {
            range(format!(
                "{MALFORMED}: 'data'[0] (the USM pointer) is {i}n, outside the 64-bit address \
                 space [0, 2^64)."
            ))
        }),
        _ => Err(not_a_pointer()),
    }
}

/// `shape`: an array of integers. Negative elements are reported later, by the extent
/// computation, as dpctl does.
fn parse_shape(value: &IfaceValue) -> Result<Vec<i128>> {
    let IfaceValue::List(items) = value else {
        return Err(MemoryError::malformed(InterfaceField::Shape, SHAPE_MESSAGE));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| read_ssize(item, InterfaceField::Shape, &format!("'shape'[{i}]")))
        .collect()
}

fn parse_typestr(value: &IfaceValue) -> Result<u64> {
    match value {
        IfaceValue::String(s) => typestr_itemsize(s).ok_or_else(|| {
            MemoryError::malformed_range(
                InterfaceField::Typestr,
                format!("{MALFORMED}: dict('typestr': {s}) is unexpected."),
            )
        }),
        IfaceValue::Missing => Err(MemoryError::malformed(
            InterfaceField::Typestr,
            format!(
                "{MALFORMED}: 'typestr' field is required (dpctl assumes '<f8' when it is \
                 missing; this port does not guess)."
            ),
        )),
        other => Err(MemoryError::malformed(
            InterfaceField::Typestr,
            format!("{MALFORMED}: dict('typestr': {other}) is unexpected."),
        )),
    }
}

/// `strides`: `null`/absent, or an array of `nd` integers (in elements).
fn parse_strides(value: &IfaceValue, nd: usize) -> Result<Option<Vec<i128>>> {
    match value {
        IfaceValue::Missing | IfaceValue::Null => Ok(None),
        IfaceValue::List(items) if items.len() == nd => items
            .iter()
            .enumerate()
            .map(|(i, item)| read_ssize(item, InterfaceField::Strides, &format!("'strides'[{i}]")))
            .collect::<Result<Vec<_>>>()
            .map(Some),
        IfaceValue::List(_) => Err(MemoryError::malformed_range(InterfaceField::Strides, STRIDES_MESSAGE)),
        _ => Err(MemoryError::malformed(InterfaceField::Strides, STRIDES_MESSAGE)),
    }
}

fn overflow() -> MemoryError {
    MemoryError::malformed_range(
        InterfaceField::Interface,
        format!(
            "{MALFORMED}: the extent that 'shape', 'strides', 'offset' and 'typestr' describe \
             does not fit in the 64-bit address space."
        ),
    )
}

/// dpctl's `_pointers_from_shape_and_stride`: `(min_disp in elements, nbytes)`. Offset and
/// strides count elements. An empty array still spans one item.
fn extent(shape: &[i128], strides: Option<&[i128]>, offset: i128, itemsize: u64) -> Result<(i128, u64)> {
    if shape.iter().any(|&sh| sh < 0) {
        return Err(MemoryError::malformed_range(InterfaceField::Shape, "Array shape elements need to be positive"));
    }
    // nd == 0, or an empty array: one item at the offset.
    if shape.is_empty() || shape.contains(&0) {
        return Ok((offset, itemsize));
    }
    let (min_disp, items) = match strides {
        None => {
            let count = shape.iter().try_fold(1i128, |acc, &sh| acc.checked_mul(sh));
            (offset, count.ok_or_else(overflow)?)
        }
        Some(strides) => {
            let (mut lo, mut hi) = (offset, offset);
            for (&sh, &st) in shape.iter().zip(strides) {
                let span = st.checked_mul(sh - 1).ok_or_else(overflow)?;
                if st > 0 {
                    hi = hi.checked_add(span).ok_or_else(overflow)?;
                } else {
                    lo = lo.checked_add(span).ok_or_else(overflow)?;
                }
            }
            let items = hi.checked_sub(lo).and_then(|d| d.checked_add(1)).ok_or_else(overflow)?;
            (lo, items)
        }
    };
    let nbytes = items.checked_mul(i128::from(itemsize)).and_then(|n| u64::try_from(n).ok()).ok_or_else(overflow)?;
    Ok((min_disp, nbytes))
}

/// `base + min_disp * itemsize`, which must stay in `[0, 2^64)` together with the whole
/// range it starts.
fn derived_pointer(base: u64, min_disp: i128, itemsize: u64, nbytes: u64) -> Result<u64> {
    let ptr = min_disp
        .checked_mul(i128::from(itemsize))
        .and_then(|d| d.checked_add(i128::from(base)))
        .ok_or_else(overflow)?;
    let out_of_space = |what: &str| {
        MemoryError::malformed_range(
            InterfaceField::Interface,
            format!(
                "{MALFORMED}: 'offset' and 'strides' move the pointer {base:#x} by {} bytes, \
                 {what}.",
                ptr - i128::from(base)
            ),
        )
    };
    if ptr < 0 {
        return Err(out_of_space("below address 0"));
    }
    let ptr = u64::try_from(ptr).map_err(|_| out_of_space("beyond the 64-bit address space"))?;
    if u128::from(ptr) + u128::from(nbytes) > 1u128 << 64 {
        return Err(out_of_space("so that the range ends beyond the 64-bit address space"));
    }
    Ok(ptr)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;
    use std::cell::Cell;

    use IfaceValue::{BigInt, Bool, List, Missing, Null, Number, Other, String as Str};

    const BASE: u64 = 0x10_0000;

    fn nums(values: &[i64]) -> IfaceValue {
        List(values.iter().map(|&v| Number(v as f64)).collect())
    }

    fn s(text: &str) -> IfaceValue {
        Str(text.to_string())
    }

    fn raw(shape: &[i64], typestr: &str) -> RawInterface {
        RawInterface {
            offset: Missing,
            version: Number(1.0),
            data: List(vec![BigInt(i128::from(BASE)), Bool(false)]),
            syclobj_present: true,
            shape: nums(shape),
            typestr: s(typestr),
            strides: Missing,
        }
    }

    fn parse(raw: &RawInterface) -> Result<ParsedInterface<u64>> {
        parse_interface(raw, Ok)
    }

    /// Parses, and reports whether the resolver ran.
    fn parse_tracked(raw: &RawInterface) -> (Result<ParsedInterface<()>>, bool) {
        let called = Cell::new(false);
        let result = parse_interface(raw, |_| {
            called.set(true);
            Ok(())
        });
        (result, called.get())
    }

    fn err(raw: &RawInterface) -> (InterfaceField, ErrorClass, String) {
        match parse(raw) {
            Err(e @ MemoryError::InterfaceMalformed { field, .. }) => (field, e.class(), e.to_string()),
            other => panic!("expected a malformed-interface error, got {other:?}"),
        }
    }

    // ---- extent: the examples of dpctl's interface documentation ----

    #[test]
    fn example_2x2_strides_10_minus2_offset_9_u1() {
        let mut r = raw(&[2, 2], "|u1");
        r.strides = nums(&[10, -2]);
        r.offset = Number(9.0);
        let p = parse(&r).unwrap();
        assert_eq!(p.ptr, BASE + 7);
        assert_eq!(p.nbytes, 13);
        assert_eq!(p.itemsize, 1);
        assert_eq!(p.base_ptr, BASE);
    }

    #[test]
    fn example_f4_shape_4_strides_2_offset_1() {
        let mut r = raw(&[4], "<f4");
        r.strides = nums(&[2]);
        r.offset = Number(1.0);
        let p = parse(&r).unwrap();
        assert_eq!(p.ptr, BASE + 4);
        assert_eq!(p.nbytes, 28);
        assert_eq!(p.itemsize, 4);
    }

    #[test]
    fn example_shape_10_strides_2_offset_8_u1() {
        let mut r = raw(&[10], "|u1");
        r.strides = nums(&[2]);
        r.offset = Number(8.0);
        let p = parse(&r).unwrap();
        assert_eq!(p.ptr, BASE + 8);
        assert_eq!(p.nbytes, 19);
    }

    #[test]
    fn empty_array_spans_one_item() {
        let p = parse(&raw(&[0], "|u1")).unwrap();
        assert_eq!((p.ptr, p.nbytes), (BASE, 1));
        let p = parse(&raw(&[3, 0, 5], "<f8")).unwrap();
        assert_eq!((p.ptr, p.nbytes), (BASE, 8));
        // With strides, a zero dim also gives one item at the offset, whatever the strides.
        let mut r = raw(&[4, 0], "<i4");
        r.strides = nums(&[-100, 7]);
        r.offset = Number(3.0);
        let p = parse(&r).unwrap();
        assert_eq!((p.ptr, p.nbytes), (BASE + 12, 4));
    }

    #[test]
    fn zero_strides_give_one_item() {
        let mut r = raw(&[5, 7], "<f8");
        r.strides = nums(&[0, 0]);
        let p = parse(&r).unwrap();
        assert_eq!((p.ptr, p.nbytes), (BASE, 8));
    }

    #[test]
    fn zero_dimensional() {
        let mut r = raw(&[], "<i2");
        r.offset = Number(3.0);
        let p = parse(&r).unwrap();
        assert_eq!((p.ptr, p.nbytes), (BASE + 6, 2));
        r.strides = List(vec![]);
        let p = parse(&r).unwrap();
        assert_eq!((p.ptr, p.nbytes), (BASE + 6, 2));
    }

    #[test]
    fn contiguous_without_strides() {
        let p = parse(&raw(&[3, 4], "<c16")).unwrap();
        assert_eq!((p.ptr, p.nbytes, p.itemsize), (BASE, 3 * 4 * 16, 16));
        let mut r = raw(&[16], "|u1");
        r.offset = Number(2.0);
        let p = parse(&r).unwrap();
        assert_eq!((p.ptr, p.nbytes), (BASE + 2, 16));
        r.strides = Null;
        assert_eq!(parse(&r).unwrap().nbytes, 16);
    }

    #[test]
    fn negative_offset_is_allowed() {
        let mut r = raw(&[4], "<f4");
        r.offset = Number(-2.0);
        let p = parse(&r).unwrap();
        assert_eq!((p.ptr, p.nbytes), (BASE - 8, 16));
        r.offset = BigInt(-1);
        assert_eq!(parse(&r).unwrap().ptr, BASE - 4);
    }

    #[test]
    fn negative_strides_reach_back() {
        let mut r = raw(&[3], "<i8");
        r.strides = nums(&[-1]);
        r.offset = Number(2.0);
        let p = parse(&r).unwrap();
        assert_eq!((p.ptr, p.nbytes), (BASE, 24));
    }

    // ---- accepted values ----

    #[test]
    fn data_pointer_and_flag_forms() {
        let mut r = raw(&[1], "|u1");
        r.data = List(vec![Number(4096.0), Bool(true)]);
        let p = parse(&r).unwrap();
        assert_eq!((p.base_ptr, p.read_only), (4096, true));
        r.data = List(vec![BigInt(i128::from(u64::MAX) - 1), Number(0.0)]);
        let p = parse(&r).unwrap();
        assert_eq!((p.base_ptr, p.read_only), (u64::MAX - 1, false));
        r.data = List(vec![Number(0.0), Number(2.0)]);
        assert!(parse(&r).unwrap().read_only);
        r.data = List(vec![Number(0.0), Number(f64::NAN)]);
        assert!(!parse(&r).unwrap().read_only);
        r.data = List(vec![Number(0.0), BigInt(5)]);
        assert!(parse(&r).unwrap().read_only);
        r.data = List(vec![Number(9_007_199_254_740_991.0), Bool(false)]);
        assert_eq!(parse(&r).unwrap().base_ptr, 9_007_199_254_740_991);
    }

    #[test]
    fn version_forms() {
        let mut r = raw(&[1], "|u1");
        r.version = BigInt(1);
        assert!(parse(&r).is_ok());
        r.version = Number(1.0);
        assert!(parse(&r).is_ok());
    }

    #[test]
    fn bigints_everywhere() {
        let mut r = raw(&[], "|u1");
        r.shape = List(vec![BigInt(2), BigInt(2)]);
        r.strides = List(vec![BigInt(10), BigInt(-2)]);
        r.offset = BigInt(9);
        let p = parse(&r).unwrap();
        assert_eq!((p.ptr, p.nbytes), (BASE + 7, 13));
    }

    #[test]
    fn resolver_gets_the_base_pointer_and_its_value_is_kept() {
        let mut r = raw(&[4], "<f4");
        r.offset = Number(3.0);
        let seen = Cell::new(0);
        let p = parse_interface(&r, |ptr| {
            seen.set(ptr);
            Ok("queue")
        })
        .unwrap();
        assert_eq!(seen.get(), BASE);
        assert_eq!(p.queue, "queue");
        assert_eq!(p.ptr, BASE + 12);
    }

    #[test]
    fn resolver_error_propagates_unchanged() {
        let r = raw(&[4], "|u1");
        let e = parse_interface::<()>(&r, |ptr| Err(pointer_not_bound(ptr, "<SyclQueue>"))).unwrap_err();
        assert_eq!(e.code(), "ERR_SUAI_FOREIGN_POINTER");
        assert_eq!(
            e.to_string(),
            "__sycl_usm_array_interface__ is malformed: its 'data' pointer 0x100000 is not USM memory of \
             the SyclContext that its 'syclobj' (<SyclQueue>) names: give as syclobj the SyclQueue or \
             SyclContext the memory was allocated in."
        );
        let e = syclobj_invalid("null");
        assert_eq!((e.code(), e.class()), ("ERR_SUAI_SYCLOBJ", ErrorClass::TypeError));
    }

    // ---- typestr table ----

    #[test]
    fn typestr_table() {
        let accepted = [
            ("?", 1),
            ("|?", 1),
            ("|b1", 1),
            ("|i1", 1),
            ("|u1", 1),
            ("<i2", 2),
            (">u2", 2),
            ("<f2", 2),
            ("<i4", 4),
            ("=u4", 4),
            ("<f4", 4),
            ("<i8", 8),
            ("<u8", 8),
            ("<f8", 8),
            ("f8", 8),
            ("<c8", 8),
            ("<c16", 16),
            ("c16", 16),
        ];
        for (t, size) in accepted {
            assert_eq!(typestr_itemsize(t), Some(size), "{t}");
            assert_eq!(parse(&raw(&[1], t)).unwrap().itemsize, size, "{t}");
        }
        let refused = [
            "", "|", "<", "<<f8", "|O", "|O8", "|S5", "<U3", "|V8", "<M8", "<m8", "|a4", "<M8[ns]", "<f16", "<c32",
            "<i3", "<f1", "|b", "b2", "??", "?1", "f", "i", "float64", "int8", " <f8", "<f8 ", "F8", "<F8", "&f8",
        ];
        for t in refused {
            assert_eq!(typestr_itemsize(t), None, "{t}");
            let (field, class, message) = err(&raw(&[1], t));
            assert_eq!((field, class), (InterfaceField::Typestr, ErrorClass::RangeError), "{t}");
            assert_eq!(
                message,
                format!("__sycl_usm_array_interface__ is malformed: dict('typestr': {t}) is unexpected.")
            );
        }
    }

    #[test]
    fn typestr_missing_or_wrong_type() {
        let mut r = raw(&[1], "|u1");
        r.typestr = Missing;
        let (field, class, message) = err(&r);
        assert_eq!((field, class), (InterfaceField::Typestr, ErrorClass::TypeError));
        assert!(message.contains("'typestr' field is required"), "{message}");
        for v in [Null, Number(8.0), List(vec![s("<f8")]), Other("object".into())] {
            r.typestr = v.clone();
            let (field, class, message) = err(&r);
            assert_eq!((field, class), (InterfaceField::Typestr, ErrorClass::TypeError), "{v:?}");
            assert!(message.ends_with(") is unexpected."), "{message}");
        }
        r.typestr = Number(8.0);
        assert_eq!(err(&r).2, "__sycl_usm_array_interface__ is malformed: dict('typestr': 8) is unexpected.");
    }

    // ---- each malformed field ----

    #[test]
    fn offset_malformed() {
        let mut r = raw(&[1], "|u1");
        for v in [Null, Number(2.5), s("2"), Bool(true), Number(f64::NAN), Number(f64::INFINITY), List(vec![])] {
            r.offset = v.clone();
            let (field, class, _) = err(&r);
            assert_eq!((field, class), (InterfaceField::Offset, ErrorClass::TypeError), "{v:?}");
        }
        r.offset = Number(2.5);
        assert_eq!(
            err(&r).2,
            "__sycl_usm_array_interface__ is malformed: 'offset' must be an integer, got number 2.5."
        );
        for v in [Number(1e16), BigInt(i128::from(i64::MAX) + 1), BigInt(i128::from(i64::MIN) - 1)] {
            r.offset = v.clone();
            let (field, class, _) = err(&r);
            assert_eq!((field, class), (InterfaceField::Offset, ErrorClass::RangeError), "{v:?}");
        }
    }

    #[test]
    fn version_malformed() {
        let mut r = raw(&[1], "|u1");
        r.version = Number(2.0);
        let (field, class, message) = err(&r);
        assert_eq!((field, class), (InterfaceField::Version, ErrorClass::RangeError));
        assert_eq!(
            message,
            "__sycl_usm_array_interface__ is malformed: dict('version': 2) is unexpected. The only \
             recognized version is 1."
        );
        for v in [Number(0.0), Number(-1.0), BigInt(2), Number(1e300)] {
            r.version = v.clone();
            assert_eq!(err(&r).1, ErrorClass::RangeError, "{v:?}");
        }
        r.version = BigInt(7);
        assert!(err(&r).2.contains("dict('version': 7)"));
        for v in [Missing, Null, s("1"), Bool(true), Number(1.5), Number(f64::NAN), List(vec![Number(1.0)])] {
            r.version = v.clone();
            let (field, class, _) = err(&r);
            assert_eq!((field, class), (InterfaceField::Version, ErrorClass::TypeError), "{v:?}");
        }
        r.version = Missing;
        assert!(err(&r).2.contains("'version' field is required"));
    }

    #[test]
    fn data_malformed() {
        let mut r = raw(&[1], "|u1");
        for v in [Missing, Null, Number(4096.0), s("0x1000"), Other("object".into())] {
            r.data = v.clone();
            let (field, class, message) = err(&r);
            assert_eq!((field, class), (InterfaceField::Data, ErrorClass::TypeError), "{v:?}");
            assert_eq!(message, DATA_MESSAGE);
        }
        for v in [List(vec![]), List(vec![Number(1.0)]), List(vec![Number(1.0), Bool(true), Bool(true)])] {
            r.data = v.clone();
            let (field, class, message) = err(&r);
            assert_eq!((field, class), (InterfaceField::Data, ErrorClass::RangeError), "{v:?}");
            assert_eq!(
                message,
                "__sycl_usm_array_interface__ is malformed: 'data' field is required, and must be \
                 a tuple (usm_pointer, is_writable_boolean)."
            );
        }
        // The pointer.
        for v in [s("4096"), Null, Bool(true), Number(1.5), Number(f64::NAN), Missing] {
            r.data = List(vec![v.clone(), Bool(false)]);
            let (field, class, _) = err(&r);
            assert_eq!((field, class), (InterfaceField::Data, ErrorClass::TypeError), "{v:?}");
        }
        for v in [Number(-1.0), BigInt(-1), BigInt(1 << 64), Number(2f64.powi(53)), BigInt(i128::MAX)] {
            r.data = List(vec![v.clone(), Bool(false)]);
            let (field, class, _) = err(&r);
            assert_eq!((field, class), (InterfaceField::Data, ErrorClass::RangeError), "{v:?}");
        }
        // The flag.
        for v in [Null, Missing, s("true"), List(vec![])] {
            r.data = List(vec![Number(0.0), v.clone()]);
            let (field, class, message) = err(&r);
            assert_eq!((field, class), (InterfaceField::Data, ErrorClass::TypeError), "{v:?}");
            assert!(message.contains("read-only flag"), "{message}");
        }
    }

    #[test]
    fn syclobj_missing() {
        let mut r = raw(&[1], "|u1");
        r.syclobj_present = false;
        let (result, called) = parse_tracked(&r);
        assert!(!called);
        let e = result.unwrap_err();
        assert_eq!((e.code(), e.class()), ("ERR_SUAI_SYCLOBJ", ErrorClass::TypeError));
    }

    #[test]
    fn shape_malformed() {
        let mut r = raw(&[1], "|u1");
        for v in [Missing, Null, Number(5.0), s("4"), Other("object".into())] {
            r.shape = v.clone();
            let (field, class, message) = err(&r);
            assert_eq!((field, class), (InterfaceField::Shape, ErrorClass::TypeError), "{v:?}");
            assert_eq!(message, "Shape entry is a required element of `__sycl_usm_array_interface__` dictionary");
        }
        for v in [s("4"), Number(4.7), Null, Bool(true), List(vec![Number(1.0)])] {
            r.shape = List(vec![Number(2.0), v.clone()]);
            let (field, class, message) = err(&r);
            assert_eq!((field, class), (InterfaceField::Shape, ErrorClass::TypeError), "{v:?}");
            assert!(message.contains("'shape'[1] must be an integer"), "{message}");
        }
        r.shape = List(vec![BigInt(1 << 63)]);
        assert_eq!(err(&r).1, ErrorClass::RangeError);
        r.shape = List(vec![Number(1e17)]);
        assert_eq!(err(&r).1, ErrorClass::RangeError);
    }

    #[test]
    fn negative_shape_element() {
        for strides in [Missing, nums(&[1, 1])] {
            let mut r = raw(&[4, -1], "|u1");
            r.strides = strides;
            let (field, class, message) = err(&r);
            assert_eq!((field, class), (InterfaceField::Shape, ErrorClass::RangeError));
            assert_eq!(message, "Array shape elements need to be positive");
        }
        // Zero does not hide a later negative element.
        let r = raw(&[0, -1], "|u1");
        assert_eq!(err(&r).2, "Array shape elements need to be positive");
    }

    #[test]
    fn strides_malformed() {
        let mut r = raw(&[2, 2], "|u1");
        for v in [Number(1.0), s("11"), Bool(false), Other("object".into())] {
            r.strides = v.clone();
            let (field, class, message) = err(&r);
            assert_eq!((field, class), (InterfaceField::Strides, ErrorClass::TypeError), "{v:?}");
            assert_eq!(message, STRIDES_MESSAGE);
        }
        for v in [nums(&[1]), nums(&[1, 1, 1]), List(vec![])] {
            r.strides = v.clone();
            let (field, class, message) = err(&r);
            assert_eq!((field, class), (InterfaceField::Strides, ErrorClass::RangeError), "{v:?}");
            assert_eq!(
                message,
                "__sycl_usm_array_interface__ is malformed: 'strides' must be a tuple or list of \
                 the same length as shape"
            );
        }
        r.strides = List(vec![Number(1.0), s("2")]);
        let (field, class, message) = err(&r);
        assert_eq!((field, class), (InterfaceField::Strides, ErrorClass::TypeError));
        assert!(message.contains("'strides'[1] must be an integer, got string '2'"), "{message}");
        r.strides = List(vec![Number(1.0), BigInt(i128::from(i64::MIN) - 1)]);
        assert_eq!(err(&r).1, ErrorClass::RangeError);
    }

    // ---- validation order ----

    #[test]
    fn offset_is_checked_before_version() {
        let mut r = raw(&[1], "|u1");
        r.version = Number(2.0);
        r.offset = Null;
        assert_eq!(err(&r).0, InterfaceField::Offset);
    }

    #[test]
    fn version_is_checked_before_data() {
        let mut r = raw(&[1], "|u1");
        r.version = Missing;
        r.data = Missing;
        assert_eq!(err(&r).0, InterfaceField::Version);
    }

    #[test]
    fn data_is_checked_before_syclobj_is_resolved() {
        let mut r = raw(&[1], "|u1");
        r.data = List(vec![Number(-1.0), Bool(true)]);
        r.syclobj_present = false;
        let (result, called) = parse_tracked(&r);
        assert!(!called);
        assert_eq!(result.unwrap_err().code(), "ERR_SUAI_DATA");
        // Bad offset or version: no resolution either.
        let mut r = raw(&[1], "|u1");
        r.offset = s("1");
        assert!(!parse_tracked(&r).1);
        let mut r = raw(&[1], "|u1");
        r.version = Number(2.0);
        assert!(!parse_tracked(&r).1);
    }

    #[test]
    fn syclobj_is_resolved_before_shape_typestr_strides() {
        let mut r = raw(&[1], "|u1");
        r.shape = Missing;
        r.typestr = s("|O");
        r.strides = Number(3.0);
        let (result, called) = parse_tracked(&r);
        assert!(called);
        assert_eq!(result.unwrap_err().code(), "ERR_SUAI_SHAPE");
        // A resolver failure wins over a bad shape.
        let e = parse_interface::<()>(&r, |p| Err(pointer_not_bound(p, "None"))).unwrap_err();
        assert_eq!(e.code(), "ERR_SUAI_FOREIGN_POINTER");
    }

    #[test]
    fn shape_then_typestr_then_strides_then_extent() {
        // A shape element of the wrong type comes before a bad typestr.
        let mut r = raw(&[1], "|O");
        r.shape = List(vec![s("1")]);
        assert_eq!(err(&r).0, InterfaceField::Shape);
        // A negative shape element is only seen by the extent computation: typestr first.
        let r = raw(&[-1], "|O");
        assert_eq!(err(&r).0, InterfaceField::Typestr);
        // ... and strides before it.
        let mut r = raw(&[-1], "|u1");
        r.strides = nums(&[1, 2]);
        assert_eq!(err(&r).0, InterfaceField::Strides);
        // Typestr before strides.
        let mut r = raw(&[1], "<x4");
        r.strides = nums(&[1, 2]);
        assert_eq!(err(&r).0, InterfaceField::Typestr);
    }

    // ---- overflow ----

    fn big(v: i128) -> IfaceValue {
        BigInt(v)
    }

    #[test]
    fn overflow_is_an_error_never_a_wrap() {
        /// shape, strides, offset (all in elements), typestr.
        type Case = (Vec<i128>, Option<Vec<i128>>, i128, &'static str);
        let max = i128::from(i64::MAX);
        let min = i128::from(i64::MIN);
        let cases: Vec<Case> = vec![
            // Product of the shape beyond 2^64 bytes.
            (vec![max, max], None, 0, "|u1"),
            (vec![1 << 32, 1 << 32], None, 0, "|u1"),
            (vec![1 << 62], None, 0, "<c16"),
            // Many dims whose product overflows i128 itself.
            (vec![max; 4], None, 0, "|u1"),
            // Strides times shape.
            (vec![max], Some(vec![max]), 0, "|u1"),
            (vec![max, max, max], Some(vec![max, max, max]), 0, "|u1"),
            (vec![max, max, max], Some(vec![min, min, min]), 0, "|u1"),
            (vec![2, 2], Some(vec![max, min]), 0, "<f8"),
            // Offset pushes the pointer below 0 or past 2^64.
            (vec![1], None, -1, "|u1"),
            (vec![1], None, min, "<f8"),
            (vec![1], None, max, "<f8"),
            (vec![2], Some(vec![-1]), 0, "|u1"),
        ];
        for (shape, strides, offset, typestr) in cases {
            let mut r = raw(&[], typestr);
            r.data = List(vec![Number(0.0), Bool(false)]);
            r.shape = List(shape.iter().map(|&v| big(v)).collect());
            r.strides = strides.as_ref().map_or(Missing, |st| List(st.iter().map(|&v| big(v)).collect()));
            r.offset = big(offset);
            let (field, class, _) = err(&r);
            assert_eq!(class, ErrorClass::RangeError, "{shape:?} {strides:?} {offset}");
            assert_eq!(field, InterfaceField::Interface, "{shape:?} {strides:?} {offset}");
        }
    }

    #[test]
    fn range_ending_at_the_top_of_the_address_space() {
        let mut r = raw(&[16], "|u1");
        r.data = List(vec![BigInt(i128::from(u64::MAX) - 15), Bool(false)]);
        let p = parse(&r).unwrap();
        assert_eq!((p.ptr, p.nbytes), (u64::MAX - 15, 16));
        r.shape = nums(&[17]);
        assert_eq!(err(&r).0, InterfaceField::Interface);
    }

    #[test]
    fn large_but_valid_extent() {
        let mut r = raw(&[], "<f8");
        r.data = List(vec![Number(0.0), Bool(false)]);
        r.shape = List(vec![BigInt(1 << 60)]);
        let p = parse(&r).unwrap();
        assert_eq!(p.nbytes, 1 << 63);
        // A zero dim makes an otherwise huge shape one item.
        r.shape = List(vec![big(i128::from(i64::MAX)), big(i128::from(i64::MAX)), Number(0.0)]);
        assert_eq!(parse(&r).unwrap().nbytes, 8);
    }

    // ---- bounds ----

    #[test]
    fn bounds() {
        assert!(check_bounds(100, 50, None).is_ok());
        assert!(check_bounds(100, 50, Some((100, 50))).is_ok());
        assert!(check_bounds(110, 40, Some((100, 50))).is_ok());
        assert!(check_bounds(150, 0, Some((100, 50))).is_ok());
        assert!(check_bounds(u64::MAX - 1, 1, Some((u64::MAX - 1, 1))).is_ok());
        let e = check_bounds(110, 41, Some((100, 50))).unwrap_err();
        assert!(matches!(e, MemoryError::OutOfBounds { .. }));
        assert_eq!(e.class(), ErrorClass::RangeError);
        assert_eq!(
            e.to_string(),
            "__sycl_usm_array_interface__ describes 41 bytes at 0x6e (bytes 10 to 51 relative to \
             the allocation), which leave the allocation of 50 bytes at 0x64."
        );
        let e = check_bounds(99, 1, Some((100, 50))).unwrap_err();
        assert!(e.to_string().contains("bytes -1 to 0 relative"), "{e}");
        assert!(check_bounds(u64::MAX, u64::MAX, Some((0, u64::MAX))).is_err());
    }

    #[test]
    fn parsed_range_against_allocation() {
        // shape (4096,) over a 1 KiB buffer: dpctl accepts it, check_bounds does not.
        let p = parse(&raw(&[4096], "|u1")).unwrap();
        assert!(check_bounds(p.ptr, p.nbytes, Some((BASE, 1024))).is_err());
        assert!(check_bounds(p.ptr, p.nbytes, Some((BASE, 4096))).is_ok());
    }

    // ---- values ----

    #[test]
    fn bigint_words() {
        assert_eq!(IfaceValue::from_bigint_words(false, &[]), BigInt(0));
        assert_eq!(IfaceValue::from_bigint_words(false, &[5]), BigInt(5));
        assert_eq!(IfaceValue::from_bigint_words(true, &[5]), BigInt(-5));
        assert_eq!(IfaceValue::from_bigint_words(false, &[u64::MAX]), BigInt(i128::from(u64::MAX)));
        assert_eq!(IfaceValue::from_bigint_words(false, &[0, 1]), BigInt(1 << 64));
        assert_eq!(IfaceValue::from_bigint_words(false, &[0, u64::MAX]), BigInt(i128::MAX));
        assert_eq!(IfaceValue::from_bigint_words(true, &[0, 1 << 63]), BigInt(i128::MIN));
        assert_eq!(IfaceValue::from_bigint_words(true, &[1, 1 << 63]), BigInt(i128::MIN));
        assert_eq!(IfaceValue::from_bigint_words(false, &[0, 0, 1]), BigInt(i128::MAX));
        assert_eq!(IfaceValue::from_bigint_words(true, &[0, 0, 1]), BigInt(i128::MIN));
        assert_eq!(IfaceValue::from_bigint_words(false, &[7, 0, 0]), BigInt(7));
    }

    #[test]
    fn display() {
        assert_eq!(Number(2.0).to_string(), "2");
        assert_eq!(Number(-0.0).to_string(), "0");
        assert_eq!(Number(2.5).to_string(), "2.5");
        assert_eq!(Number(f64::NEG_INFINITY).to_string(), "-Infinity");
        assert_eq!(Number(1e300).to_string(), "1e+300");
        assert_eq!(Number(1.5e-7).to_string(), "1.5e-7");
        assert_eq!(Number(123456.0).to_string(), "123456");
        assert_eq!(BigInt(-3).to_string(), "-3n");
        assert_eq!(s("x").describe(), "string 'x'");
        assert_eq!(Null.describe(), "null");
        assert_eq!(Other("function".into()).describe(), "[function]");
        assert_eq!(nums(&[1, 2]).to_string(), "[1, 2]");
        assert_eq!(nums(&[0; 10]).to_string(), "[0, 0, 0, 0, 0, 0, 0, 0, ... 2 more]");
    }
}
