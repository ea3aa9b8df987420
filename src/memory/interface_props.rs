//! Property tests of the Node-free interface consumer: `parse_interface`, `check_bounds`
//! and `typestr_itemsize` (memory::interface) against a model written here from dpctl's
//! rules (dpctl's `memory/_sycl_usm_array_interface_utils.pxi`) and this port's
//! documented differences, and `bind_view` / `provenance` (memory::allocation) against a
//! model of the allocations a case made, over the pool's fake provider.
//!
//! `cargo test --release interface_props` runs them; 256 cases per property by default,
//! `PROPTEST_CASES` raises that, `PROPTEST_RNG_SEED` picks the seed (fixed by default, so
//! the suite is deterministic; a failure prints the minimal input).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngSeed};

use crate::error::{ErrorClass, MemoryError};
use crate::memory::allocation::{bind_view, provenance_in, Allocation, Provenance, ViewHolder};
use crate::memory::copies::NoOthers;
use crate::memory::interface::{
    check_bounds, parse_interface, pointer_not_bound, typestr_itemsize, IfaceValue, RawInterface, MAX_SAFE_INTEGER,
};
use crate::memory::pool::{size_class, test_pool, MAX_POOLED_ALIGNMENT};
use crate::runtime::fake::{FakeContext, FakeDevice};
use crate::runtime::UsmKind;
use crate::runtime::{Context, Queue};

use IfaceValue::{BigInt, Bool, List, Missing, Null, Number, Other, String as Str};

const U64: i128 = 1 << 64;
const MAX_LIST: usize = 1024;
const MAX_BLOCK: u64 = 256 << 20;

fn config() -> ProptestConfig {
    let mut config = ProptestConfig { failure_persistence: None, ..ProptestConfig::default() };
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x5eed_2026_1201);
    }
    config
}

// ---------------------------------------------------------------------------------------
// The model of the parser
// ---------------------------------------------------------------------------------------

/// What the model expects: the described range, or the code and class of the error.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expect {
    Range {
        base: u64,
        ptr: u64,
        nbytes: u64,
        itemsize: u64,
        read_only: bool,
    },
    Error {
        code: &'static str,
        range: bool,
    },
    /// The resolver's own error, unchanged.
    Resolver,
}

fn err(code: &'static str, range: bool) -> Expect {
    Expect::Error { code, range }
}

/// An integer as the port reads one: an integral safe number or any bigint.
/// `Err(true)`: right type, out of range; `Err(false)`: wrong type.
fn int_of(v: &IfaceValue) -> Result<i128, bool> {
    match v {
        BigInt(i) => Ok(*i),
        Number(n) if n.is_finite() && n.trunc() == *n => {
            if n.abs() <= MAX_SAFE_INTEGER {
                Ok(*n as i128)
            } else {
                Err(true)
            }
        }
        _ => Err(false),
    }
}

/// As `int_of`, within a signed 64-bit integer (dpctl's `Py_ssize_t`).
fn ssize_of(v: &IfaceValue) -> Result<i128, bool> {
    let i = int_of(v)?;
    if i < i128::from(i64::MIN) || i > i128::from(i64::MAX) {
        return Err(true);
    }
    Ok(i)
}

fn itemsize_model(s: &str) -> Option<u64> {
    let body = match s.chars().next() {
        Some('<' | '>' | '|' | '=') => &s[1..],
        _ => s,
    };
    Some(match body {
        "?" | "b1" | "i1" | "u1" => 1,
        "i2" | "u2" | "f2" => 2,
        "i4" | "u4" | "f4" => 4,
        "i8" | "u8" | "f8" | "c8" => 8,
        "c16" => 16,
        _ => return None,
    })
}

/// The model: dpctl's order (offset, version, data, syclobj, shape, typestr, strides,
/// extent), saturating arithmetic (any saturation means the extent cannot fit anyway).
/// Returns the expectation and whether the resolver runs.
fn model(raw: &RawInterface, resolver_fails: bool) -> (Expect, bool) {
    let offset = match &raw.offset {
        Missing => 0,
        v => match ssize_of(v) {
            Ok(i) => i,
            Err(range) => return (err("ERR_SUAI_OFFSET", range), false),
        },
    };
    match &raw.version {
        Number(n) if n.is_finite() && n.trunc() == *n => {
            if *n != 1.0 {
                return (err("ERR_SUAI_VERSION", true), false);
            }
        }
        BigInt(i) => {
            if *i != 1 {
                return (err("ERR_SUAI_VERSION", true), false);
            }
        }
        _ => return (err("ERR_SUAI_VERSION", false), false),
    }
    let (base, read_only) = match &raw.data {
        List(items) if items.len() == 2 => {
            let base = match &items[0] {
                Number(n) if n.is_finite() && n.trunc() == *n => {
                    if *n < 0.0 || *n > MAX_SAFE_INTEGER {
                        return (err("ERR_SUAI_DATA", true), false);
                    }
                    *n as u64
                }
                BigInt(i) => {
                    if *i < 0 || *i >= U64 {
                        return (err("ERR_SUAI_DATA", true), false);
                    }
                    *i as u64
                }
                _ => return (err("ERR_SUAI_DATA", false), false),
            };
            let read_only = match &items[1] {
                Bool(b) => *b,
                Number(n) => *n != 0.0 && !n.is_nan(),
                BigInt(i) => *i != 0,
                _ => return (err("ERR_SUAI_DATA", false), false),
            };
            (base, read_only)
        }
        List(_) => return (err("ERR_SUAI_DATA", true), false),
        _ => return (err("ERR_SUAI_DATA", false), false),
    };
    if !raw.syclobj_present {
        return (err("ERR_SUAI_SYCLOBJ", false), false);
    }
    if resolver_fails {
        return (Expect::Resolver, true);
    }
    let shape: Vec<i128> = match &raw.shape {
        List(items) => {
            let mut shape = Vec::new();
            for item in items {
                match ssize_of(item) {
                    Ok(i) => shape.push(i),
                    Err(range) => return (err("ERR_SUAI_SHAPE", range), true),
                }
            }
            shape
        }
        _ => return (err("ERR_SUAI_SHAPE", false), true),
    };
    let itemsize = match &raw.typestr {
        Str(s) => match itemsize_model(s) {
            Some(k) => k,
            None => return (err("ERR_SUAI_TYPESTR", true), true),
        },
        _ => return (err("ERR_SUAI_TYPESTR", false), true),
    };
    let strides: Option<Vec<i128>> = match &raw.strides {
        Missing | Null => None,
        List(items) if items.len() == shape.len() => {
            let mut strides = Vec::new();
            for item in items {
                match ssize_of(item) {
                    Ok(i) => strides.push(i),
                    Err(range) => return (err("ERR_SUAI_STRIDES", range), true),
                }
            }
            Some(strides)
        }
        List(_) => return (err("ERR_SUAI_STRIDES", true), true),
        _ => return (err("ERR_SUAI_STRIDES", false), true),
    };
    if shape.iter().any(|&s| s < 0) {
        return (err("ERR_SUAI_SHAPE", true), true);
    }
    let malformed = (err("ERR_SUAI_MALFORMED", true), true);
    let (min_disp, items) = if shape.is_empty() || shape.contains(&0) {
        (offset, 1i128)
    } else {
        match &strides {
            None => (offset, shape.iter().fold(1i128, |a, &b| a.saturating_mul(b))),
            Some(strides) => {
                let (mut lo, mut hi) = (offset, offset);
                for (&sh, &st) in shape.iter().zip(strides) {
                    let span = st.saturating_mul(sh - 1);
                    if st > 0 {
                        hi = hi.saturating_add(span);
                    } else {
                        lo = lo.saturating_add(span);
                    }
                }
                (lo, hi.saturating_sub(lo).saturating_add(1))
            }
        }
    };
    // Saturation only happens beyond i128, where the extent cannot fit 64 bits anyway.
    let nbytes = items.saturating_mul(i128::from(itemsize));
    if nbytes >= U64 {
        return malformed;
    }
    // With nbytes < 2^64, min_disp lies within 2^65 of the offset: no saturation here.
    let ptr = i128::from(base) + min_disp * i128::from(itemsize);
    if !(0..U64).contains(&ptr) || ptr + nbytes > U64 {
        return malformed;
    }
    (Expect::Range { base, ptr: ptr as u64, nbytes: nbytes as u64, itemsize, read_only }, true)
}

/// What `parse_interface` did, in the model's terms.
fn actual(raw: &RawInterface, resolver_fails: bool) -> (Expect, bool, Option<u64>) {
    let called = Cell::new(false);
    let seen = Cell::new(None);
    let result = parse_interface(raw, |p| {
        called.set(true);
        seen.set(Some(p));
        if resolver_fails {
            Err(pointer_not_bound(p, "the resolver"))
        } else {
            Ok(())
        }
    });
    let expect = match result {
        Ok(p) => Expect::Range {
            base: p.base_ptr,
            ptr: p.ptr,
            nbytes: p.nbytes,
            itemsize: p.itemsize,
            read_only: p.read_only,
        },
        Err(MemoryError::PointerNotBound { .. }) if resolver_fails => Expect::Resolver,
        Err(e) => {
            let range = match e.class() {
                ErrorClass::RangeError => true,
                ErrorClass::TypeError => false,
                other => panic!("{e:?} is a {other:?}, not a TypeError or RangeError"),
            };
            Expect::Error { code: e.code(), range }
        }
    };
    (expect, called.get(), seen.get())
}

// ---------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------

/// Numbers that sit on every boundary the parser has.
fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        6 => (-20i32..20).prop_map(f64::from),
        1 => Just(MAX_SAFE_INTEGER),
        1 => Just(MAX_SAFE_INTEGER + 1.0),
        1 => Just(-MAX_SAFE_INTEGER),
        1 => Just(-MAX_SAFE_INTEGER - 2.0),
        1 => Just(1.5),
        1 => Just(-0.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(1e300),
        1 => Just(9.223_372_036_854_776e18),
        1 => any::<f64>(),
        1 => (0u64..(1 << 53)).prop_map(|n| n as f64),
    ]
}

fn bigint() -> impl Strategy<Value = i128> {
    prop_oneof![
        6 => -20i128..20,
        1 => Just(i128::from(i64::MAX)),
        1 => Just(i128::from(i64::MAX) + 1),
        1 => Just(i128::from(i64::MIN)),
        1 => Just(i128::from(i64::MIN) - 1),
        1 => Just(i128::from(u64::MAX)),
        1 => Just(U64),
        1 => Just(i128::MAX),
        1 => Just(i128::MIN),
        1 => any::<i64>().prop_map(i128::from),
        1 => any::<i128>(),
    ]
}

fn typestr() -> impl Strategy<Value = String> {
    let valid = prop::sample::select(vec![
        "?", "b1", "i1", "u1", "i2", "u2", "f2", "i4", "u4", "f4", "i8", "u8", "f8", "c8", "c16",
    ]);
    let order = prop::sample::select(vec!["", "<", ">", "|", "="]);
    prop_oneof![
        12 => (order, valid).prop_map(|(o, v)| format!("{o}{v}")),
        2 => "[<>|=&]{0,2}[a-zA-Z?]{0,2}[0-9]{0,3}",
        1 => ".{0,6}",
        1 => prop::sample::select(vec!["", "O", "|O", "|S1", "<U4", "<f16", "<c32", "<M8[ns]", " <f8", "F8"]).prop_map(String::from),
    ]
}

/// Any value, lists nested a little.
fn value() -> impl Strategy<Value = IfaceValue> {
    let leaf = prop_oneof![
        Just(Missing),
        Just(Null),
        any::<bool>().prop_map(Bool),
        number().prop_map(Number),
        bigint().prop_map(BigInt),
        typestr().prop_map(Str),
        Just(Other("object".into())),
        Just(Other("function".into())),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| prop::collection::vec(inner, 0..4).prop_map(List))
}

/// A small integer element, as a number or a bigint, or rarely anything else.
fn element(range: std::ops::Range<i64>) -> impl Strategy<Value = IfaceValue> {
    prop_oneof![
        48 => range.clone().prop_map(|v| Number(v as f64)),
        16 => range.prop_map(|v| BigInt(i128::from(v))),
        1 => bigint().prop_map(BigInt),
        1 => value(),
    ]
}

/// Interfaces mostly valid field by field (so that a good share reaches the extent and
/// overflow computations), with boundary values and any value in any field some of the
/// time.
fn raw_interface() -> impl Strategy<Value = RawInterface> {
    let base = prop_oneof![
        8 => (0u64..(1 << 40)).prop_map(|p| BigInt(i128::from(p))),
        2 => (0u64..(1 << 40)).prop_map(|p| Number(p as f64)),
        2 => (0u64..48).prop_map(|d| BigInt(i128::from(u64::MAX - d))),
        1 => bigint().prop_map(BigInt),
        1 => value(),
    ];
    let flag = prop_oneof![12 => any::<bool>().prop_map(Bool), 1 => number().prop_map(Number), 1 => bigint().prop_map(BigInt), 1 => value()];
    let data = prop_oneof![
        20 => (base, flag).prop_map(|(p, f)| List(vec![p, f])),
        1 => value(),
        1 => prop::collection::vec(value(), 0..4).prop_map(List),
    ];
    let dims = prop_oneof![24 => element(0..9), 1 => Just(Number(-1.0)), 1 => element(-3..3)];
    let shape = prop_oneof![
        20 => prop::collection::vec(dims, 0..4).prop_map(List),
        1 => prop::collection::vec(bigint().prop_map(BigInt), 0..4).prop_map(List),
        1 => prop::collection::vec(number().prop_map(Number), 0..3).prop_map(List),
        1 => value(),
        1 => Just(List(vec![Number(1.0); MAX_LIST])),
    ];
    // Strides: absent, or as many as the shape has dims (cut to its length below), or a
    // list of another length, or anything.
    let strides = prop_oneof![
        6 => Just((0u8, Missing)),
        3 => Just((0u8, Null)),
        12 => prop::collection::vec(element(-9..10), 4).prop_map(|v| (1u8, List(v))),
        1 => prop::collection::vec(element(-9..10), 0..4).prop_map(|v| (0u8, List(v))),
        1 => prop::collection::vec(bigint().prop_map(BigInt), 4).prop_map(|v| (1u8, List(v))),
        1 => value().prop_map(|v| (0u8, v)),
    ];
    let small = (-64i64..64).prop_map(|v| Number(v as f64));
    let offset = prop_oneof![6 => Just(Missing), 12 => small, 2 => (-64i64..64).prop_map(|v| BigInt(i128::from(v))), 1 => bigint().prop_map(BigInt), 1 => value()];
    let version =
        prop_oneof![16 => Just(Number(1.0)), 4 => Just(BigInt(1)), 1 => value(), 1 => number().prop_map(Number)];
    let typestr = prop_oneof![20 => typestr().prop_map(Str), 1 => value()];
    (offset, version, data, prop::bool::weighted(0.97), shape, typestr, strides).prop_map(
        |(offset, version, data, syclobj_present, shape, typestr, (matched, strides))| {
            let strides = match (matched, strides, &shape) {
                (1, List(mut v), List(dims)) => {
                    v.truncate(dims.len());
                    List(v)
                }
                (_, other, _) => other,
            };
            RawInterface { offset, version, data, syclobj_present, shape, typestr, strides }
        },
    )
}

// ---------------------------------------------------------------------------------------
// Allocations over the fake provider
// ---------------------------------------------------------------------------------------

/// A fresh fake context per case: its addresses (`id << 40` on) are its own, and no block
/// the global pool caches for another case or test can come back to it.
fn fresh_context() -> Arc<FakeContext> {
    static NEXT: AtomicU64 = AtomicU64::new(0x1_0000);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    FakeContext::new(id & 0xff_ffff, FakeDevice::new(1 << 34, 1 << 34))
}

const KINDS: [UsmKind; 3] = [UsmKind::Device, UsmKind::Shared, UsmKind::Host];

/// What the model knows of one allocation a case made.
struct Slot {
    address: u64,
    nbytes: u64,
    /// The block under it: the size class when pooled.
    block: u64,
    pooled: bool,
    /// The references the case holds (clones of the `Arc`); none: released.
    handles: Vec<Arc<Allocation>>,
    /// Another allocation took the block over (the pool reused it).
    superseded: bool,
}

#[derive(Debug, PartialEq)]
enum Where {
    /// In the requested bytes of this live slot.
    Owned(usize),
    /// The slack of a live block, or a block the pool caches.
    Unowned,
    Foreign,
}

struct Allocations {
    queue: Arc<dyn Queue>,
    context: Arc<dyn Context>,
    slots: Vec<Slot>,
}

impl Allocations {
    fn new() -> Self {
        let fake = fresh_context();
        let queue = fake.queue();
        Allocations { context: queue.context(), queue, slots: Vec::new() }
    }

    fn allocate(&mut self, kind: UsmKind, nbytes: u64, alignment: u64) {
        let a = Allocation::new(test_pool(), &self.queue, kind, nbytes, alignment).unwrap();
        let pooled = test_pool().enabled() && alignment <= MAX_POOLED_ALIGNMENT && nbytes <= MAX_BLOCK;
        let block = if pooled { size_class(nbytes) } else { nbytes };
        assert_eq!(a.nbytes(), nbytes);
        assert_eq!(a.block_size(), block, "the block is the size class when pooled, else the request");
        if alignment > 0 {
            assert_eq!(a.address() % alignment, 0);
        }
        let (start, end) = (a.address(), a.address() + block);
        for slot in &mut self.slots {
            if slot.superseded || start >= slot.address + slot.block || slot.address >= end {
                continue;
            }
            assert!(
                slot.handles.is_empty(),
                "a new allocation at {start:#x} overlaps a live one at {:#x}",
                slot.address
            );
            assert!(
                slot.pooled && slot.address == start && slot.block == block,
                "only a cached block of the same class is reused"
            );
            slot.superseded = true;
        }
        self.slots.push(Slot { address: a.address(), nbytes, block, pooled, handles: vec![a], superseded: false });
    }

    fn classify(&self, p: u64) -> Where {
        for (i, slot) in self.slots.iter().enumerate() {
            if slot.superseded || p < slot.address || p >= slot.address + slot.block {
                continue;
            }
            if !slot.handles.is_empty() {
                return if p < slot.address + slot.nbytes { Where::Owned(i) } else { Where::Unowned };
            }
            // Released: cached in the pool, or given back to the fake (then foreign).
            return if slot.pooled { Where::Unowned } else { Where::Foreign };
        }
        Where::Foreign
    }

    /// `bind_view` and `provenance` against the model, for a view of `nbytes` at `ptr`
    /// whose interface names `base`.
    fn check_view(&self, base: u64, ptr: u64, nbytes: u64) -> Result<(), TestCaseError> {
        let expected = self.classify(base);
        match (&expected, provenance_in(test_pool(), base)) {
            (Where::Owned(i), Provenance::Owned(a)) => prop_assert!(Arc::ptr_eq(&a, &self.slots[*i].handles[0])),
            (Where::Unowned, Provenance::Unowned { .. }) | (Where::Foreign, Provenance::Foreign) => {}
            (want, got) => prop_assert!(false, "provenance({base:#x}) is {got:?}, the model says {want:?}"),
        }
        let result = bind_view(test_pool(), &NoOthers, &*self.context, base, ptr, nbytes);
        match expected {
            Where::Owned(i) => {
                let slot = &self.slots[i];
                let inside = ptr >= slot.address
                    && u128::from(ptr) + u128::from(nbytes) <= u128::from(slot.address + slot.nbytes);
                match result {
                    Ok(ViewHolder::Ours(owner)) => {
                        prop_assert!(
                            inside,
                            "a view of {nbytes} bytes at {ptr:#x} leaves the allocation at {:#x} of {} bytes",
                            slot.address,
                            slot.nbytes
                        );
                        prop_assert!(Arc::ptr_eq(&owner, &slot.handles[0]), "the view holds another allocation");
                        prop_assert!(
                            owner.address() <= ptr
                                && u128::from(ptr) + u128::from(nbytes) <= u128::from(owner.address() + owner.nbytes())
                        );
                    }
                    Err(MemoryError::OutOfBounds { .. }) => {
                        prop_assert!(!inside, "a view inside the allocation is refused")
                    }
                    other => prop_assert!(false, "bind_view gave {other:?} for a pointer of a live allocation"),
                }
            }
            // The slack and cached blocks: never a view, whatever the range.
            Where::Unowned => prop_assert!(
                matches!(result, Err(MemoryError::Unowned { .. })),
                "bind_view gave {result:?} for unowned memory"
            ),
            // The fake knows no extent and calls every pointer Unknown: an unowned view.
            Where::Foreign => {
                prop_assert!(matches!(result, Ok(ViewHolder::Nobody)), "bind_view gave {result:?} for foreign memory")
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
enum Op {
    Allocate {
        kind: usize,
        nbytes: u64,
        alignment: u64,
    },
    /// Drops one of the case's references to a slot.
    Release(usize),
    /// Takes another reference (a view of the memory object).
    Share(usize),
    /// A view: the base pointer relative to a slot, and the range relative to the base.
    View {
        slot: usize,
        place: u8,
        delta: u64,
        start: i64,
        nbytes: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let nbytes = prop_oneof![4 => 1u64..64, 4 => 1u64..5000, 2 => prop::sample::select(vec![511u64, 512, 513, 4096, 4097, 5120, 8192]), 1 => 5000u64..70_000];
    let alignment = prop::sample::select(vec![0u64, 0, 0, 8, 64, 256, 512, 4096]);
    prop_oneof![
        3 => (0..3usize, nbytes, alignment).prop_map(|(kind, nbytes, alignment)| Op::Allocate { kind, nbytes, alignment }),
        2 => any::<usize>().prop_map(Op::Release),
        1 => any::<usize>().prop_map(Op::Share),
        8 => (any::<usize>(), 0..6u8, 0..10_000u64, -300..300i64, prop_oneof![4 => 0u64..600, 1 => Just(0u64), 1 => any::<u64>()])
            .prop_map(|(slot, place, delta, start, nbytes)| Op::View { slot, place, delta, start, nbytes }),
    ]
}

fn run_ops(ops: &[Op]) -> Result<(), TestCaseError> {
    let mut model = Allocations::new();
    model.allocate(UsmKind::Host, 100, 0);
    for op in ops {
        match *op {
            Op::Allocate { kind, nbytes, alignment } => model.allocate(KINDS[kind], nbytes, alignment),
            Op::Release(i) => {
                let n = model.slots.len();
                if let Some(slot) = model.slots.get_mut(i % n) {
                    slot.handles.pop();
                }
            }
            Op::Share(i) => {
                let n = model.slots.len();
                let slot = &mut model.slots[i % n];
                if let Some(a) = slot.handles.first().cloned() {
                    slot.handles.push(a);
                }
            }
            Op::View { slot, place, delta, start, nbytes } => {
                let s = &model.slots[slot % model.slots.len()];
                let base = match place {
                    0 => s.address,
                    1 => s.address + delta % s.nbytes,
                    2 => s.address + s.nbytes,
                    3 => s.address + s.nbytes + delta % (s.block - s.nbytes).max(1),
                    4 => s.address + s.block + delta,
                    _ => s.address.wrapping_sub(delta % 64),
                };
                let ptr = base.saturating_add_signed(start);
                model.check_view(base, ptr, nbytes)?;
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// The parser against the model: the same range or the same error (code and class),
    /// the resolver called exactly when offset, version and data are valid and syclobj is
    /// present, with `data[0]`; nothing panics.
    #[test]
    fn interface_props_parse_matches_the_model(raw in raw_interface(), resolver_fails in prop::bool::weighted(0.05)) {
        let (want, runs_resolver) = model(&raw, resolver_fails);
        let (got, called, seen) = actual(&raw, resolver_fails);
        prop_assert_eq!(&got, &want, "{:?}", raw);
        prop_assert_eq!(called, runs_resolver, "resolver called: {:?}", raw);
        if let (Some(p), Expect::Range { base, .. }) = (seen, &got) {
            prop_assert_eq!(p, *base, "the resolver is given data[0]");
        }
        if let Expect::Range { ptr, nbytes, itemsize, .. } = got {
            prop_assert!(nbytes >= itemsize, "a range spans at least one item");
            prop_assert!(u128::from(ptr) + u128::from(nbytes) <= 1u128 << 64);
        }
    }

    /// Any values at all in every field: an error or a range, never a panic, and the
    /// model agrees.
    #[test]
    fn interface_props_any_values_never_panic(
        offset in value(), version in value(), data in value(), present in any::<bool>(),
        shape in value(), typestr in value(), strides in value(),
    ) {
        let raw = RawInterface { offset, version, data, syclobj_present: present, shape, typestr, strides };
        let (want, _) = model(&raw, false);
        let (got, _, _) = actual(&raw, false);
        prop_assert_eq!(got, want, "{:?}", raw);
    }

    /// `check_bounds`: inside the allocation exactly when `[address, address + nbytes)` lies in
    /// `[base, base + size)` (no wrap), always with no known extent; never a panic.
    #[test]
    fn interface_props_check_bounds(ptr in any::<u64>(), nbytes in any::<u64>(), base in any::<u64>(), size in any::<u64>(), near in any::<bool>(), d in -70i64..70, n in 0u64..140) {
        let (ptr, nbytes) = if near { (base.saturating_add_signed(d), n) } else { (ptr, nbytes) };
        let inside = ptr >= base && u128::from(ptr) + u128::from(nbytes) <= u128::from(base) + u128::from(size);
        let result = check_bounds(ptr, nbytes, Some((base, size)));
        prop_assert_eq!(result.is_ok(), inside, "ptr {:#x} nbytes {} base {:#x} size {}", ptr, nbytes, base, size);
        if let Err(e) = result {
            prop_assert_eq!(e.code(), "ERR_SUAI_OUT_OF_BOUNDS");
            prop_assert_eq!(e.class(), ErrorClass::RangeError);
        }
        prop_assert!(check_bounds(ptr, nbytes, None).is_ok());
    }

    /// `typestr_itemsize` is the documented table, for any string.
    #[test]
    fn interface_props_typestr_table(s in prop_oneof![typestr(), any::<String>()]) {
        prop_assert_eq!(typestr_itemsize(&s), itemsize_model(&s), "{:?}", s);
    }

    /// `bind_view` and `provenance` over a case's allocations, references and views: a
    /// view is accepted only inside the requested bytes of a live allocation and holds
    /// exactly that allocation; the slack past a block's request and cached blocks are
    /// refused; a new allocation never lands on a live one.
    #[test]
    fn interface_props_bind_view_matches_the_model(ops in prop::collection::vec(op(), 1..40)) {
        run_ops(&ops)?;
    }

    /// End to end: any interface parsed against a base pointer near an allocation, then
    /// bound: every accepted view lies in the owning allocation's requested bytes and holds
    /// that allocation, or is refused; a freed allocation gives no view.
    #[test]
    fn interface_props_parsed_views_stay_inside_their_owner(
        kind in 0..3usize,
        nbytes in prop_oneof![1u64..64, 1u64..5000, Just(512u64), Just(4097u64)],
        rel in -80i64..6000,
        mut raw in raw_interface(),
        release in prop::bool::weighted(0.2),
    ) {
        let mut model = Allocations::new();
        model.allocate(KINDS[kind], nbytes, 0);
        let address = model.slots[0].address;
        let base = address.saturating_add_signed(rel);
        if let List(items) = &mut raw.data {
            if let Some(first) = items.first_mut() {
                *first = BigInt(i128::from(base));
            }
        }
        if release {
            model.slots[0].handles.clear();
        }
        if let Ok(p) = parse_interface(&raw, |_| Ok(())) {
            model.check_view(p.base_ptr, p.ptr, p.nbytes)?;
        }
    }
}

#[test]
fn interface_props_the_model_knows_the_reference_examples() {
    let raw = |shape: &[i64], strides: Option<&[i64]>, offset: i64, typestr: &str| RawInterface {
        offset: Number(offset as f64),
        version: Number(1.0),
        data: List(vec![BigInt(0x10_0000), Bool(false)]),
        syclobj_present: true,
        shape: List(shape.iter().map(|&v| Number(v as f64)).collect()),
        typestr: Str(typestr.into()),
        strides: strides.map_or(Null, |s| List(s.iter().map(|&v| Number(v as f64)).collect())),
    };
    let range = |ptr: u64, nbytes: u64, itemsize: u64| Expect::Range {
        base: 0x10_0000,
        ptr: 0x10_0000 + ptr,
        nbytes,
        itemsize,
        read_only: false,
    };
    // dpctl's test_suai_non_contig_1D / _2D, and the reference's <f4 example.
    assert_eq!(model(&raw(&[10], Some(&[2]), 8, "|u1"), false).0, range(8, 19, 1));
    assert_eq!(model(&raw(&[2, 2], Some(&[10, -2]), 9, "|u1"), false).0, range(7, 13, 1));
    assert_eq!(model(&raw(&[4], Some(&[2]), 1, "<f4"), false).0, range(4, 28, 4));
    assert_eq!(model(&raw(&[0], None, 3, "<i2"), false).0, range(6, 2, 2));
    assert_eq!(model(&raw(&[-1], None, 0, "|u1"), false).0, err("ERR_SUAI_SHAPE", true));
}
