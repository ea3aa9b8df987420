//! Memory statistics, history and snapshots, seen from JS (`lib/observe.js`): the
//! figures of the process pool's sink (`memory::observe`) and snapshots of the pool
//! (`memory::snapshot`), handed over as JSON (see `js::json` for why). The fields are
//! documented in `index.d.ts` (`MemoryStats`, `MemorySnapshot`).

use std::cell::Cell;
use std::fmt::Write;
use std::rc::Rc;
use std::sync::Arc;

use napi::bindgen_prelude::{Float64Array, Object, Unknown};
use napi::{Env, JsValue};
use napi_derive::napi;

use crate::js::errors::OrThrow;
use crate::js::ffi::{self, ExternalBufferError};
use crate::js::json;
use crate::js::lookup::lookup;
use crate::js::memory;
use crate::js::state::{process, registry};
use crate::memory::history::{self, Event, HistoryConfig, StackRef, NO_DEVICE, NO_STACK};
use crate::memory::observe::{self, Sink, Staging};
use crate::memory::snapshot::{self, Snapshot};
use crate::memory::stats::{DeviceCounters, KindCounters, Stat};
use crate::runtime::{Device, UsmKind};

fn sink() -> &'static Sink {
    process().sink()
}

/// The device of a device handle of this environment; the default device for `None`.
fn device(env: &Env, id: Option<f64>) -> napi::Result<Arc<dyn Device>> {
    let Some(id) = id else {
        return registry().select(None).or_throw(env);
    };
    lookup(env, |h| h.device(id))
}

fn stat(out: &mut String, name: &str, s: &Stat) {
    let _ = write!(
        out,
        "\"{name}\":{{\"current\":{},\"peak\":{},\"allocated\":{},\"freed\":{}}},",
        s.current, s.peak, s.allocated, s.freed
    );
}

/// One kind's figures: PyTorch's names in camelCase (`activeBytes` equals
/// `allocatedBytes` here, see `memory::stats`).
fn kind_json(out: &mut String, c: &KindCounters) {
    out.push('{');
    stat(out, "allocatedBytes", &c.allocated_bytes);
    stat(out, "activeBytes", &c.allocated_bytes);
    stat(out, "requestedBytes", &c.requested_bytes);
    stat(out, "reservedBytes", &c.reserved_bytes);
    stat(out, "allocation", &c.allocations);
    stat(out, "segment", &c.segments);
    let _ = write!(
        out,
        "\"numDeviceAlloc\":{},\"numDeviceFree\":{},\"poolHits\":{},\"poolMisses\":{},\"poolEvictions\":{},\
         \"poolTrims\":{},\"numAllocRetries\":{},\"numOoms\":{}}}",
        c.segments.allocated,
        c.segments.freed,
        c.pool_hits,
        c.pool_misses,
        c.pool_evictions,
        c.pool_trims,
        c.alloc_retries,
        c.ooms
    );
}

/// `{ pinnedBytes, pinnedBuffers, scratchBytes, scratchBlocks }`.
fn staging_json(out: &mut String, staging: &Staging) {
    out.push('{');
    stat(out, "pinnedBytes", &staging.pinned.bytes);
    stat(out, "pinnedBuffers", &staging.pinned.blocks);
    stat(out, "scratchBytes", &staging.scratch.bytes);
    stat(out, "scratchBlocks", &staging.scratch.blocks);
    out.pop();
    out.push('}');
}

/// `{ filterString, name, all, device, host, shared, staging }`.
fn device_stats_json(out: &mut String, device: &dyn Device, counters: &DeviceCounters) {
    let _ = write!(
        out,
        "{{\"filterString\":{},\"name\":{},\"all\":",
        json::string(&registry().filter_string_of(device)),
        json::string(&device.info().name)
    );
    kind_json(out, &counters.all);
    for (name, c) in [("device", &counters.kinds[0]), ("host", &counters.kinds[1]), ("shared", &counters.kinds[2])] {
        let _ = write!(out, ",\"{name}\":");
        kind_json(out, c);
    }
    out.push_str(",\"staging\":");
    staging_json(out, &Staging::of(device, &process().host_copies().scratch));
    out.push('}');
}

/// The figures of a device (the default device without one) as JSON.
#[napi]
pub fn observe_stats(env: &Env, device_id: Option<f64>) -> napi::Result<String> {
    let device = device(env, device_id)?;
    let counters = sink().stats_of(device.as_ref());
    let mut out = String::with_capacity(2048);
    device_stats_json(&mut out, device.as_ref(), &counters);
    Ok(out)
}

/// Sets the peaks of a device (of every device without one) to the current figures.
#[napi]
pub fn observe_reset_peaks(env: &Env, device_id: Option<f64>) -> napi::Result<()> {
    match device_id {
        Some(id) => sink().reset_peaks(Some(device(env, Some(id))?.as_ref())),
        None => sink().reset_peaks(None),
    }
    // The host scratch is the process's, on every device's figures.
    process().host_copies().scratch.held().reset_peaks();
    Ok(())
}

/// Starts a recording of `max_entries` events (stacks sent by the JS layer when
/// `stacks`), dropping an earlier one; `enabled` false ends the recording.
#[napi]
pub fn observe_record(enabled: bool, max_entries: f64, stacks: bool) {
    let config = enabled.then_some(HistoryConfig { max_entries: max_entries as usize, stacks });
    sink().record(config);
}

/// The stack of this thread's next allocation (while a recording with stacks runs).
/// Returns its id in the recording (for `observeNextStackId`), or -1 (none).
#[napi]
pub fn observe_next_stack(stack: String) -> f64 {
    sink().set_next_stack(&stack).map_or(-1.0, f64::from)
}

/// The stack of this thread's next allocation by its id in recording `generation`, which
/// `observeNextStack` returned. `false` when that recording is over (send the text again).
#[napi]
pub fn observe_next_stack_id(id: u32, generation: u32) -> bool {
    sink().set_next_stack_id(generation, id)
}

/// The generation of the recording now (taken before `observeNextStack`, so that an id is
/// never kept with a newer recording's generation).
#[napi]
pub fn observe_stack_generation() -> u32 {
    sink().recording_generation()
}

/// The id of a stack's text in recording `generation`, or -1 (that recording is over or
/// its table is full).
#[napi]
pub fn observe_intern_stack(generation: u32, stack: String) -> f64 {
    sink().intern_stack(generation, &stack).map_or(-1.0, f64::from)
}

/// A number of this copy of the JS layer's own (one load of `lib/`: each thread, and each
/// vm context of a thread, loads its own), which names its unread stacks apart from
/// another copy's; 0 once the numbers are spent (that copy then reads its stacks at once).
#[napi]
pub fn observe_stack_source() -> u32 {
    observe::new_stack_source().unwrap_or(0)
}

/// The unread stacks of copy `source` that recording `generation` still names:
/// `[liveAllocations, first, last, live, ...liveSequences, ...holes]`: every sequence
/// from `first` to `last` is named but the holes; the `live` ones are live allocations'
/// (`first > last`: none named). `undefined` when that recording is over or takes no
/// stacks.
#[napi]
pub fn observe_referenced_stacks(generation: u32, source: u32) -> Option<Float64Array> {
    let r = sink().referenced_stacks(generation, source)?;
    let (first, last) = r.named.map_or((0.0, -1.0), |(first, last)| (first as f64, last as f64));
    let mut out = Vec::with_capacity(4 + r.live.len() + r.holes.len());
    out.extend([r.live_allocations as f64, first, last, r.live.len() as f64]);
    out.extend(r.live.iter().chain(&r.holes).map(|&s| s as f64));
    Some(Float64Array::new(out))
}

/// The unread stacks `sequences` of copy `source` were read: `ids[i]` (from
/// `observeInternStack`, or -1 for none) stands for `sequences[i]` from now on; the first
/// `live` are live allocations'.
#[napi]
pub fn observe_resolve_stacks(generation: u32, source: u32, sequences: Float64Array, ids: Float64Array, live: u32) {
    let sequences: Vec<u64> = sequences.iter().map(|&s| s as u64).collect();
    let ids: Vec<StackRef> = ids.iter().map(|&id| if id >= 0.0 { id as StackRef } else { NO_STACK }).collect();
    sink().resolve_stacks(generation, source, &sequences, &ids, live as usize);
}

fn kind_name(kind: UsmKind) -> &'static str {
    kind.name()
}

fn micros(ns: u64) -> f64 {
    (ns / 1000) as f64 + (ns % 1000) as f64 / 1000.0
}

fn stack_json(stack: StackRef) -> String {
    history::interned(stack).map_or_else(|| "null".into(), |id| id.to_string())
}

fn device_json(device: u16) -> String {
    if device == NO_DEVICE {
        "null".into()
    } else {
        device.to_string()
    }
}

fn event_json(out: &mut String, e: &Event) {
    let flag = match e.action.name() {
        "alloc" => ",\"fromCache\":",
        "free" => ",\"toCache\":",
        "oom" => ",\"retried\":",
        _ => "",
    };
    let _ = write!(
        out,
        "{{\"action\":\"{}\",\"timeUs\":{},\"device\":{},\"kind\":\"{}\",\"address\":\"{:#x}\",\"size\":{},\"requested\":{},\"stack\":{}",
        e.action.name(),
        micros(e.time_ns),
        device_json(e.device),
        kind_name(e.kind),
        e.address,
        e.size,
        e.requested,
        stack_json(e.stack),
    );
    if !flag.is_empty() {
        let _ = write!(out, "{flag}{}", e.flag);
    }
    out.push('}');
}

/// The snapshot as JSON text (see `MemorySnapshot` in `index.d.ts`).
pub fn snapshot_json(s: &Snapshot) -> String {
    let events = s.recording.as_ref().map_or(0, |r| r.events.len());
    let mut out = String::with_capacity(4096 + s.live.len() * 140 + s.cached.len() * 80 + events * 150);
    let _ = write!(
        out,
        "{{\"format\":\"dpctl-memory-snapshot\",\"version\":1,\"epochMs\":{},\"timeUs\":{},\"devices\":[",
        json::number(s.epoch_unix_ms),
        micros(s.time_ns)
    );
    for (i, figures) in s.devices.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let info = figures.device.info();
        let _ = write!(out, "{{\"index\":{},\"totalBytes\":{},\"stats\":", figures.slot, info.global_mem_size);
        device_stats_json(&mut out, figures.device.as_ref(), &figures.counters);
        out.push('}');
    }
    out.push_str("],\"liveBlocks\":[");
    for (i, b) in s.live.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let time = b.time_ns.map_or_else(|| "null".to_string(), |t| micros(t).to_string());
        let _ = write!(
            out,
            "{{\"address\":\"{:#x}\",\"size\":{},\"requested\":{},\"kind\":\"{}\",\"device\":{},\"stack\":{},\"timeUs\":{time}}}",
            b.address,
            b.size,
            b.requested,
            kind_name(b.kind),
            device_json(b.device),
            stack_json(b.stack)
        );
    }
    out.push_str("],\"cachedBlocks\":[");
    for (i, b) in s.cached.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "{{\"address\":\"{:#x}\",\"size\":{},\"kind\":\"{}\",\"device\":{}}}",
            b.address,
            b.size,
            kind_name(b.kind),
            device_json(b.device)
        );
    }
    out.push_str("],\"history\":");
    match &s.recording {
        None => out.push_str(
            "{\"enabled\":false,\"maxEntries\":0,\"stacks\":false,\"dropped\":0,\"stacksRefused\":0,\"stacksUnread\":0}",
        ),
        Some(r) => {
            let _ = write!(
                out,
                "{{\"enabled\":true,\"maxEntries\":{},\"stacks\":{},\"dropped\":{},\"stacksRefused\":{},\"stacksUnread\":{}}}",
                r.config.max_entries, r.config.stacks, r.dropped, r.stacks_refused, r.stacks_unread
            );
        }
    }
    out.push_str(",\"stacks\":[");
    if let Some(r) = &s.recording {
        for (i, stack) in r.stacks.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&json::string(stack));
        }
    }
    out.push_str("],\"events\":[");
    if let Some(r) = &s.recording {
        for (i, e) in r.events.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            event_json(&mut out, e);
        }
    }
    out.push_str("]}");
    out
}

/// `memorySnapshot()`: the process's live and cached blocks, figures and recording.
#[napi]
pub fn observe_snapshot() -> String {
    snapshot_json(&snapshot::take(process().pool()))
}

// ---------------------------------------------------------------------------------------
// The traced allocation's address, handed over with no second call: `observeAllocate` is
// `memAllocate` that also leaves the new allocation's address in this thread's slot, eight
// bytes that lib/observe.js reads as a `BigUint64Array` (`observeAddressSlot`). The address
// is the `pointer` a subscriber of the `dpctl-memory:alloc` TracingChannel gets; asking
// for it with `memPointer` cost a call and a BigInt of its own, as much as the rest of
// what tracing adds.
// ---------------------------------------------------------------------------------------

thread_local! {
    /// This thread's slot (each environment runs on a thread of its own).
    static ADDRESS_SLOT: Rc<Cell<u64>> = Rc::new(Cell::new(0));
}

fn fast_observe_allocate(env: &Env, args: &[Unknown; 4]) -> napi::Result<napi::sys::napi_value> {
    let (queue_id, kind) = (ffi::f64_arg(env, &args[0])?, ffi::u32_arg(env, &args[1])?);
    let (id, address) = memory::mem_allocate_with_address(
        env,
        queue_id,
        kind,
        ffi::f64_arg(env, &args[2])?,
        ffi::f64_arg(env, &args[3])?,
    )?;
    ADDRESS_SLOT.with(|slot| slot.set(address));
    ffi::js_f64(env, id)
}

/// An `ArrayBuffer` over this thread's slot, or `undefined` where the engine refuses
/// external buffers (the JS layer then asks `memPointer`).
fn fast_observe_address_slot(env: &Env, _args: &[Unknown; 4]) -> napi::Result<napi::sys::napi_value> {
    let slot = ADDRESS_SLOT.with(Rc::clone);
    let data = slot.as_ptr().cast::<u8>();
    match ffi::external_arraybuffer(env, data, std::mem::size_of::<u64>(), slot) {
        Ok(buffer) => Ok(buffer.raw()),
        Err(ExternalBufferError::NotAllowed | ExternalBufferError::TooLarge) => ffi::js_undefined(env),
        Err(ExternalBufferError::Napi(error)) => Err(error),
    }
}

/// `observeNextStackProvisional(generation, source, sequence)`: the stack of this thread's
/// next allocation is the unread stack `sequence` of the copy of the JS layer numbered
/// `source` (`observeStackSource`; see `memory::history`); `false` when recording
/// `generation` is not the one taking stacks now. A fast call: it runs once per
/// allocation while stacks are recorded.
fn fast_observe_next_stack_provisional(env: &Env, args: &[Unknown; 4]) -> napi::Result<napi::sys::napi_value> {
    let (generation, source) = (ffi::u32_arg(env, &args[0])?, ffi::u32_arg(env, &args[1])?);
    let sequence = ffi::f64_arg(env, &args[2])?;
    ffi::js_bool(env, sink().set_next_stack_provisional(generation, source, sequence as u64))
}

/// Puts this file's fast calls on `exports` (as `memory::define_fast_calls` does its own).
pub fn define_fast_calls(env: &Env, exports: &mut Object) -> napi::Result<()> {
    let calls: [(&str, ffi::FastFn); 3] = [
        ("observeAllocate", fast_observe_allocate),
        ("observeAddressSlot", fast_observe_address_slot),
        ("observeNextStackProvisional", fast_observe_next_stack_provisional),
    ];
    for (name, function) in calls {
        ffi::define_fast(env, exports, name, function)?;
    }
    Ok(())
}
