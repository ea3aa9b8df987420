//! The one sink of memory events: the pool reports every allocation, free, block given
//! back, trim, retry and refusal here; the statistics are counters here (per device and
//! kind, `memory::stats`), and so is the history while one is recorded
//! (`memory::history`). The binding reads it for `memoryStats()`, `memorySnapshot()` and
//! the out-of-memory message.
//!
//! Cost: one uncontended lock per allocation and per free, with a few additions under it.
//! While no history is recorded nothing else runs (one flag, read under that lock).
//! `DPCTL_MEMORY_STATS=0`, read once with the pool, bypasses the sink altogether: every
//! hook returns at its first branch (what the bench compares against; statistics then stay
//! zero).

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::host::ScratchStore;
use crate::memory::history::{self, Action, Event, History, HistoryConfig, StackRef, NO_DEVICE, NO_STACK};
use crate::memory::stats::{kind_slot, DeviceCounters, Giveback};
use crate::runtime::held::{Held, HeldFigures};
use crate::runtime::{Address, Device, UsmKind};

/// The environment variable that bypasses the sink (`0`, `false`, `off`, `no`).
pub const ENV_VAR: &str = "DPCTL_MEMORY_STATS";

/// Devices whose `Arc`s are remembered for the quick lookup by identity.
const MAX_ALIASES: usize = 64;

/// What an allocation keeps of its recording: its device's slot, its stack, when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    pub device: u16,
    /// A stack of recording `generation` ([`StackRef`]; [`NO_STACK`]: none).
    pub stack: StackRef,
    pub generation: u32,
    /// Nanoseconds since the sink's epoch (0 when no history was recorded).
    pub time_ns: u64,
}

impl Origin {
    /// Nothing known (the sink is bypassed, or a test's block).
    pub const NONE: Origin = Origin { device: NO_DEVICE, stack: NO_STACK, generation: 0, time_ns: 0 };
}

/// A block the pool gave back to the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GivenBack {
    pub device: u16,
    pub kind: UsmKind,
    pub address: Address,
    pub size: u64,
    pub why: Giveback,
}

/// A stack the JS layer sent for the next allocation of its thread: (generation, stack).
pub type PendingStack = Option<(u32, StackRef)>;

thread_local! {
    /// Set by [`Sink::set_next_stack`] right before the JS layer's allocating call, taken
    /// by the allocation: per thread, because each JS thread allocates on its own (and a
    /// copy of the JS layer in another vm context of the thread sets it and allocates
    /// with no JS run between).
    static NEXT_STACK: Cell<PendingStack> = const { Cell::new(None) };
}

/// The numbers given to copies of the JS layer so far.
static SOURCES: AtomicU32 = AtomicU32::new(0);

/// A new number for a copy of the JS layer (one load of `lib/`, in its thread and vm
/// context), which names its provisional stacks ([`history::provisional`]): each copy
/// numbers its unread stacks from 0, so the number tells them apart. From 1; `None` once
/// [`history::MAX_SOURCE`] were given (numbers are never reused: the copy then reads each
/// stack at once).
pub fn new_stack_source() -> Option<u32> {
    let number = SOURCES
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < history::MAX_SOURCE).then_some(n + 1))
        .ok()?;
    Some(number + 1)
}

/// Whether `source` is a number [`new_stack_source`] may have given.
fn is_source(source: u32) -> bool {
    (1..=history::MAX_SOURCE).contains(&source)
}

/// [`Sink::stacks_generation`] while no recording with stacks runs.
const NO_STACKS: u64 = u64::MAX;

#[derive(Default)]
struct State {
    /// Slot -> device.
    devices: Vec<Arc<dyn Device>>,
    counters: Vec<DeviceCounters>,
    /// `Arc` address -> slot; the `Arc`s are kept in `devices` or `kept`, so an address
    /// is never reused by another device while it is listed here.
    aliases: Vec<(usize, u16)>,
    kept: Vec<Arc<dyn Device>>,
    history: Option<History>,
    generation: u32,
}

impl State {
    fn slot(&mut self, device: &Arc<dyn Device>) -> u16 {
        let identity = Arc::as_ptr(device) as *const () as usize;
        if let Some(&(_, slot)) = self.aliases.iter().find(|(id, _)| *id == identity) {
            return slot;
        }
        let slot = match self.devices.iter().position(|d| d.same_device(device.as_ref())) {
            Some(i) => i,
            None => {
                self.devices.push(device.clone());
                self.counters.push(DeviceCounters::default());
                self.devices.len() - 1
            }
        };
        let slot = u16::try_from(slot).unwrap_or(NO_DEVICE - 1);
        if self.aliases.len() < MAX_ALIASES {
            self.aliases.push((identity, slot));
            self.kept.push(device.clone());
        }
        slot
    }

    fn counters(&mut self, slot: u16) -> Option<&mut DeviceCounters> {
        self.counters.get_mut(usize::from(slot))
    }

    fn find(&self, device: &dyn Device) -> Option<usize> {
        self.devices.iter().position(|d| d.same_device(device))
    }
}

/// How an allocation got its block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// From the cache; the block was cached by an allocation on the device of this slot.
    Cache { cached_by: u16 },
    /// Fresh from the runtime.
    Runtime,
}

/// The sink (see the module documentation). The pool owns one; the process's is the
/// process pool's.
pub struct Sink {
    bypassed: bool,
    state: Mutex<State>,
    /// The generation of the recording while it takes stacks, else [`NO_STACKS`]: what a
    /// provisional stack is checked against with no lock taken.
    stacks_generation: AtomicU64,
    epoch: Instant,
    /// The wall-clock time of `epoch`, in ms since 1970, for snapshots.
    epoch_unix_ms: f64,
}

impl Default for Sink {
    fn default() -> Self {
        Sink::new(false)
    }
}

/// What the sink holds for one device, as snapshots and `memoryStats()` report it.
pub struct DeviceFigures {
    pub slot: u16,
    pub device: Arc<dyn Device>,
    pub counters: DeviceCounters,
}

impl Sink {
    /// A sink; `bypassed`: every hook returns at once.
    pub fn new(bypassed: bool) -> Self {
        let epoch_unix_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64() * 1000.0);
        Sink {
            bypassed,
            state: Mutex::new(State::default()),
            stacks_generation: AtomicU64::new(NO_STACKS),
            epoch: Instant::now(),
            epoch_unix_ms,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// ms since 1970 at the sink's epoch.
    pub fn epoch_unix_ms(&self) -> f64 {
        self.epoch_unix_ms
    }

    /// Nanoseconds since the epoch now.
    pub fn elapsed_ns(&self) -> u64 {
        self.now_ns()
    }

    /// An allocation of `requested` bytes got `block` bytes at `address` on `device`.
    /// Returns what the allocation keeps to report its end.
    #[allow(clippy::too_many_arguments)]
    pub fn allocated(
        &self,
        device: &Arc<dyn Device>,
        kind: UsmKind,
        address: Address,
        requested: u64,
        block: u64,
        source: Source,
        stack: PendingStack,
    ) -> Origin {
        if self.bypassed {
            return Origin::NONE;
        }
        let mut state = self.lock();
        let slot = state.slot(device);
        let kind_index = kind_slot(kind).unwrap_or(usize::MAX);
        let hit = match source {
            Source::Cache { cached_by } => {
                if cached_by != slot {
                    if let Some(c) = state.counters(cached_by) {
                        c.gave_up(kind_index, block, Giveback::Released);
                    }
                    if let Some(c) = state.counters(slot) {
                        c.moved_in(kind_index, block);
                    }
                }
                true
            }
            Source::Runtime => false,
        };
        if let Some(c) = state.counters(slot) {
            c.allocated(kind_index, requested, block, hit);
        }
        let generation = state.generation;
        let Some(history) = state.history.as_mut() else {
            return Origin { device: slot, ..Origin::NONE };
        };
        let stack = match stack {
            Some((g, id)) if g == generation => id,
            _ => NO_STACK,
        };
        let time_ns = self.now_ns();
        history.allocated(stack);
        history.push(Event {
            time_ns,
            action: Action::Alloc,
            kind,
            device: slot,
            stack,
            address,
            size: block,
            requested,
            flag: hit,
        });
        Origin { device: slot, stack, generation, time_ns }
    }

    /// An allocation made with `origin` ended; its block went to the cache (`cached`) or
    /// is given back (reported through [`Sink::gave_back`]).
    pub fn released(&self, origin: Origin, kind: UsmKind, address: Address, requested: u64, block: u64, cached: bool) {
        if self.bypassed || origin.device == NO_DEVICE {
            return;
        }
        let mut state = self.lock();
        if let Some(c) = state.counters(origin.device) {
            c.released(kind_slot(kind).unwrap_or(usize::MAX), requested, block);
        }
        let generation = state.generation;
        if let Some(history) = state.history.as_mut() {
            let stack = if origin.generation == generation { history.freed(origin.stack) } else { NO_STACK };
            history.push(Event {
                time_ns: self.now_ns(),
                action: Action::Free,
                kind,
                device: origin.device,
                stack,
                address,
                size: block,
                requested,
                flag: cached,
            });
        }
    }

    /// Blocks the pool gave back to the runtime.
    pub fn gave_back(&self, blocks: &[GivenBack]) {
        if self.bypassed || blocks.is_empty() {
            return;
        }
        let mut state = self.lock();
        let mut trimmed: Vec<(u16, usize)> = Vec::new();
        for block in blocks {
            let kind_index = kind_slot(block.kind).unwrap_or(usize::MAX);
            if let Some(c) = state.counters(block.device) {
                c.gave_up(kind_index, block.size, block.why);
                if block.why == Giveback::Trimmed && !trimmed.contains(&(block.device, kind_index)) {
                    trimmed.push((block.device, kind_index));
                    c.trimmed(kind_index);
                }
            }
        }
        if let Some(history) = state.history.as_mut() {
            let time_ns = self.now_ns();
            for block in blocks {
                history.push(Event {
                    time_ns,
                    action: Action::Release,
                    kind: block.kind,
                    device: block.device,
                    stack: NO_STACK,
                    address: block.address,
                    size: block.size,
                    requested: 0,
                    flag: false,
                });
            }
        }
    }

    /// The pool was trimmed and gave back `bytes` (recorded in the history only; the
    /// counters count each kind's trims in [`Sink::gave_back`]).
    pub fn trimmed(&self, bytes: u64) {
        if self.bypassed {
            return;
        }
        let mut state = self.lock();
        if let Some(history) = state.history.as_mut() {
            history.push(Event {
                time_ns: self.now_ns(),
                action: Action::Trim,
                kind: UsmKind::Unknown,
                device: NO_DEVICE,
                stack: NO_STACK,
                address: 0,
                size: bytes,
                requested: 0,
                flag: false,
            });
        }
    }

    /// The runtime refused `requested` bytes (`Retry`, the pool retries after a trim) or
    /// the allocation failed for good (`Oom`; `retried`: a trim and retry ran first).
    pub fn refused(&self, device: &Arc<dyn Device>, kind: UsmKind, requested: u64, action: Action, retried: bool) {
        if self.bypassed {
            return;
        }
        let mut state = self.lock();
        let slot = state.slot(device);
        let kind_index = kind_slot(kind).unwrap_or(usize::MAX);
        if let Some(c) = state.counters(slot) {
            match action {
                Action::Oom => c.out_of_memory(kind_index),
                _ => c.retried(kind_index),
            }
        }
        if let Some(history) = state.history.as_mut() {
            history.push(Event {
                time_ns: self.now_ns(),
                action,
                kind,
                device: slot,
                stack: NO_STACK,
                address: 0,
                size: requested,
                requested,
                flag: retried,
            });
        }
    }

    /// The figures of `device` (all zero for a device that never allocated).
    pub fn stats_of(&self, device: &dyn Device) -> DeviceCounters {
        let state = self.lock();
        state.find(device).and_then(|i| state.counters.get(i).copied()).unwrap_or_default()
    }

    /// Every device that allocated, in the order of its first allocation.
    pub fn figures(&self) -> Vec<DeviceFigures> {
        let state = self.lock();
        state
            .devices
            .iter()
            .zip(&state.counters)
            .enumerate()
            .map(|(slot, (device, counters))| DeviceFigures {
                slot: u16::try_from(slot).unwrap_or(NO_DEVICE - 1),
                device: device.clone(),
                counters: *counters,
            })
            .collect()
    }

    /// Sets the peaks of `device` (every device: `None`) to their current figures, its
    /// provider's staging figures included.
    pub fn reset_peaks(&self, device: Option<&dyn Device>) {
        let mut state = self.lock();
        let found = device.map(|d| state.find(d));
        let State { counters, devices, .. } = &mut *state;
        for (i, (counters, known)) in counters.iter_mut().zip(devices.iter()).enumerate() {
            if found.is_none() || found == Some(Some(i)) {
                counters.reset_peaks();
                if let Some(held) = known.staging() {
                    held.reset_peaks();
                }
            }
        }
        drop(state);
        if found == Some(None) {
            // A device that never allocated has no slot, but may have staged.
            if let Some(held) = device.and_then(|d| d.staging()) {
                held.reset_peaks();
            }
        }
    }

    /// Starts a new recording (`Some`; what an earlier one recorded is dropped) or ends the
    /// recording and drops what it holds (`None`).
    pub fn record(&self, config: Option<HistoryConfig>) {
        let mut state = self.lock();
        state.generation = state.generation.wrapping_add(1);
        let generation = state.generation;
        let stacks = config.is_some_and(|c| c.stacks);
        self.stacks_generation.store(if stacks { u64::from(generation) } else { NO_STACKS }, Ordering::Release);
        let old = std::mem::replace(&mut state.history, config.map(|config| History::new(config, generation)));
        drop(state);
        // A large ring is freed outside the lock.
        drop(old);
    }

    /// Interns `stack` in the recording and marks it as the stack of this thread's next
    /// allocation. Returns its id in the recording, for [`Sink::set_next_stack_id`];
    /// `None` while no recording with stacks runs or once its table is full.
    pub fn set_next_stack(&self, stack: &str) -> Option<u32> {
        let mut state = self.lock();
        let history = state.history.as_mut().filter(|h| h.config.stacks)?;
        let id = history.intern(stack);
        let generation = history.generation;
        drop(state);
        NEXT_STACK.with(|next| next.set(Some((generation, id.map_or(NO_STACK, StackRef::from)))));
        id
    }

    /// Marks the provisional stack `sequence` of copy `source` of the JS layer
    /// ([`history::provisional`]), which holds it unread, as the stack of this thread's next
    /// allocation. `false` (and nothing marked) when recording `generation` is not the one
    /// taking stacks now, or `source` is no copy's number.
    pub fn set_next_stack_provisional(&self, generation: u32, source: u32, sequence: u64) -> bool {
        if self.stacks_generation.load(Ordering::Acquire) != u64::from(generation) || !is_source(source) {
            return false;
        }
        NEXT_STACK.with(|next| next.set(Some((generation, history::provisional(source, sequence)))));
        true
    }

    /// The id of `text` in recording `generation`'s table; `None` when that recording is
    /// over or takes no stacks, or its table is full.
    pub fn intern_stack(&self, generation: u32, text: &str) -> Option<u32> {
        let mut state = self.lock();
        state.history.as_mut().filter(|h| h.config.stacks && h.generation == generation)?.intern(text)
    }

    /// Copy `source`'s provisional stacks `sequences` of recording `generation` were read:
    /// `ids[i]` (an interned id, or [`NO_STACK`]) stands for `sequences[i]` from now on (see
    /// [`History::resolve`]; the first `live` are live allocations'). Nothing when that
    /// recording is over.
    pub fn resolve_stacks(&self, generation: u32, source: u32, sequences: &[u64], ids: &[StackRef], live: usize) {
        if !is_source(source) {
            return;
        }
        let stacks: Vec<StackRef> = sequences.iter().map(|&s| history::provisional(source, s)).collect();
        let mut state = self.lock();
        if let Some(h) = state.history.as_mut().filter(|h| h.generation == generation) {
            h.resolve(&stacks, ids, live);
        }
    }

    /// Marks stack `id` of recording `generation` (as [`Sink::set_next_stack`] returned it)
    /// as the stack of this thread's next allocation. `false` when that recording is over:
    /// the caller sends the text again.
    pub fn set_next_stack_id(&self, generation: u32, id: u32) -> bool {
        let state = self.lock();
        let known = state
            .history
            .as_ref()
            .is_some_and(|h| h.config.stacks && h.generation == generation && (id as usize) < h.stacks().len());
        drop(state);
        if known {
            NEXT_STACK.with(|next| next.set(Some((generation, StackRef::from(id)))));
        }
        known
    }

    /// Copy `source`'s provisional stacks that recording `generation` still names (see
    /// [`history::Referenced`]); `None` when that recording is over or takes no stacks, or
    /// `source` is no copy's number.
    pub fn referenced_stacks(&self, generation: u32, source: u32) -> Option<history::Referenced> {
        if !is_source(source) {
            return None;
        }
        let state = self.lock();
        let h = state.history.as_ref().filter(|h| h.generation == generation && h.config.stacks)?;
        Some(h.referenced(source))
    }

    /// The generation of the recording now (what [`Sink::set_next_stack_id`] compares).
    pub fn recording_generation(&self) -> u32 {
        self.lock().generation
    }

    /// Takes the stack [`Sink::set_next_stack`] left for this thread's next allocation.
    pub fn take_next_stack() -> PendingStack {
        NEXT_STACK.with(Cell::take)
    }

    /// Runs `f` over the recording (or `None`), under the sink's lock: `f` must not call
    /// back into the sink or the pool.
    pub fn with_history<R>(&self, f: impl FnOnce(Option<&History>) -> R) -> R {
        let state = self.lock();
        f(state.history.as_ref())
    }
}

/// The memory the library keeps for copies, outside the pool and its figures: the pinned
/// staging buffers of a device's provider (CUDA's, for copies between pageable memory and
/// the device), and the process's host scratch blocks (pageable, for copies of plain JS
/// memory), the same on every device's figures. Not in `reserved_bytes` of the host kind:
/// no allocation can be served from them, and an out-of-memory message must not call them
/// cached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Staging {
    pub pinned: HeldFigures,
    pub scratch: HeldFigures,
}

impl Staging {
    /// What `device`'s provider and the host copies (`scratch`) hold now.
    pub fn of(device: &dyn Device, scratch: &ScratchStore) -> Staging {
        Staging { pinned: device.staging().map(Held::figures).unwrap_or_default(), scratch: scratch.held().figures() }
    }
}

/// `n` bytes as people read them: `1.50 GiB`, `512 B`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.2} {}", UNITS[unit])
}

/// What an out-of-memory message says, gathered when the allocation failed.
pub struct OutOfMemory<'a> {
    pub requested: u64,
    pub kind: UsmKind,
    /// The device's filter string (or its backend and type) and name.
    pub device: String,
    pub total: u64,
    /// Free device memory, where the runtime can tell.
    pub free: Option<u64>,
    /// The device's figures after the failure.
    pub figures: DeviceCounters,
    /// Bytes a trim gave back before the retry; `None` when no retry ran.
    pub retried_after: Option<u64>,
    /// What the runtime said.
    pub cause: &'a str,
}

impl OutOfMemory<'_> {
    /// The message, in the spirit of PyTorch's: what was asked, what the device has free,
    /// what this process holds in use and in the pool, whether a trim and retry ran.
    pub fn message(&self) -> String {
        let OutOfMemory { requested, kind, device, total, free, figures, retried_after, cause } = self;
        let of_kind = kind_slot(*kind).and_then(|i| figures.kinds.get(i)).copied().unwrap_or_default();
        let cached =
            |c: &crate::memory::stats::KindCounters| c.reserved_bytes.current.saturating_sub(c.allocated_bytes.current);
        let free_text = match free {
            Some(free) => format!("{} free", human_bytes(*free)),
            None => "free memory unknown (the runtime cannot tell)".to_string(),
        };
        let retry_text = match retried_after {
            Some(bytes) => {
                format!("The pool gave back the {} it had cached and retried: refused again.", human_bytes(*bytes))
            }
            None => "The pool had nothing cached to give back, so no trim and retry ran.".to_string(),
        };
        format!(
            "USM allocation of {} ({requested} bytes) of {} memory on {device} failed: {cause}. The device has {} \
             of memory, {free_text}; this process holds {} in use and {} cached in the pool on it ({} memory: {} in use, \
             {} cached). {retry_text}",
            human_bytes(*requested),
            kind.name(),
            human_bytes(*total),
            human_bytes(figures.all.allocated_bytes.current),
            human_bytes(cached(&figures.all)),
            kind.name(),
            human_bytes(of_kind.allocated_bytes.current),
            human_bytes(cached(&of_kind)),
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::runtime::fake::FakeDevice;

    fn device() -> Arc<dyn Device> {
        FakeDevice::new(1 << 30, 1 << 30)
    }

    #[test]
    fn devices_are_told_apart_and_found_again() {
        let sink = Sink::new(false);
        let a = device();
        let b = device();
        let o = sink.allocated(&a, UsmKind::Host, 0x1000, 100, 512, Source::Runtime, None);
        let p = sink.allocated(&b, UsmKind::Device, 0x2000, 100, 512, Source::Runtime, None);
        assert_ne!(o.device, p.device);
        assert_eq!(sink.stats_of(a.as_ref()).kinds[1].allocations.current, 1);
        assert_eq!(sink.stats_of(b.as_ref()).kinds[0].allocations.current, 1);
        sink.released(o, UsmKind::Host, 0x1000, 100, 512, true);
        assert_eq!(sink.stats_of(a.as_ref()).all.allocated_bytes.current, 0);
        assert_eq!(sink.stats_of(a.as_ref()).all.reserved_bytes.current, 512);
        assert_eq!(sink.figures().len(), 2);
    }

    #[test]
    fn staging_is_its_own_figure_read_from_the_provider_and_the_scratch_store() {
        let sink = Sink::new(false);
        let fake = FakeDevice::new(1 << 30, 1 << 30);
        let a: Arc<dyn Device> = fake.clone();
        let scratch: &'static ScratchStore = Box::leak(Box::default());
        fake.staging.made(4 << 20, 2);
        sink.allocated(&a, UsmKind::Host, 0x1000, 100, 512, Source::Runtime, None);
        let staging = Staging::of(a.as_ref(), scratch);
        assert_eq!((staging.pinned.bytes.current, staging.pinned.blocks.current), (4 << 20, 2));
        assert_eq!(staging.scratch, HeldFigures::default());
        let stats = sink.stats_of(a.as_ref());
        assert_eq!(stats.kinds[1].reserved_bytes.current, 512, "not in the host kind's reserved bytes");
        fake.staging.freed(4 << 20, 2);
        fake.staging.made(2 << 20, 1);
        assert_eq!(Staging::of(a.as_ref(), scratch).pinned.bytes.peak, 4 << 20);
        sink.reset_peaks(Some(a.as_ref()));
        assert_eq!(Staging::of(a.as_ref(), scratch).pinned.bytes.peak, 2 << 20, "reset with the device's peaks");
        let never = FakeDevice::new(1 << 30, 1 << 30);
        never.staging.made(1 << 20, 1);
        never.staging.freed(1 << 20, 1);
        sink.reset_peaks(Some(never.as_ref()));
        assert_eq!(never.staging.figures().bytes.peak, 0, "a device that never allocated too");
    }

    #[test]
    fn a_bypassed_sink_counts_nothing() {
        let sink = Sink::new(true);
        let a = device();
        let o = sink.allocated(&a, UsmKind::Host, 0x1000, 100, 512, Source::Runtime, None);
        assert_eq!(o, Origin::NONE);
        assert!(sink.figures().is_empty());
    }

    #[test]
    fn a_stack_is_sent_once_and_named_by_its_id_while_its_recording_lasts() {
        let sink = Sink::new(false);
        assert_eq!(sink.set_next_stack("at f (a.js:1:1)"), None, "no recording");
        assert!(!sink.set_next_stack_id(sink.recording_generation(), 0));
        sink.record(Some(HistoryConfig { max_entries: 8, stacks: true }));
        let generation = sink.recording_generation();
        let id = sink.set_next_stack("at f (a.js:1:1)").unwrap();
        assert_eq!(Sink::take_next_stack(), Some((generation, StackRef::from(id))));
        assert!(sink.set_next_stack_id(generation, id));
        assert_eq!(Sink::take_next_stack(), Some((generation, StackRef::from(id))), "the id names the stack again");
        assert!(!sink.set_next_stack_id(generation, id + 1), "an id the recording never gave");
        assert_eq!(Sink::take_next_stack(), None);
        sink.record(Some(HistoryConfig { max_entries: 8, stacks: true }));
        assert!(!sink.set_next_stack_id(generation, id), "an id of an ended recording");
        assert_eq!(Sink::take_next_stack(), None);
        sink.record(Some(HistoryConfig { max_entries: 8, stacks: false }));
        assert!(!sink.set_next_stack_id(sink.recording_generation(), 0), "stacks off");
    }

    #[test]
    fn a_provisional_stack_is_recorded_and_read_later_for_its_recording_only() {
        let sink = Sink::new(false);
        let a = device();
        let copy = new_stack_source().unwrap();
        assert!(!sink.set_next_stack_provisional(sink.recording_generation(), copy, 1), "no recording");
        sink.record(Some(HistoryConfig { max_entries: 8, stacks: false }));
        assert!(!sink.set_next_stack_provisional(sink.recording_generation(), copy, 1), "stacks off");
        sink.record(Some(HistoryConfig { max_entries: 8, stacks: true }));
        let generation = sink.recording_generation();
        assert!(!sink.set_next_stack_provisional(generation.wrapping_sub(1), copy, 1), "an ended recording");
        assert!(!sink.set_next_stack_provisional(generation, 0, 1), "no copy's number");
        assert_eq!(Sink::take_next_stack(), None);
        assert!(sink.set_next_stack_provisional(generation, copy, 1));
        let live = sink.allocated(&a, UsmKind::Host, 0x1000, 10, 512, Source::Runtime, Sink::take_next_stack());
        assert!(sink.set_next_stack_provisional(generation, copy, 2));
        let gone = sink.allocated(&a, UsmKind::Host, 0x2000, 10, 512, Source::Runtime, Sink::take_next_stack());
        sink.released(gone, UsmKind::Host, 0x2000, 10, 512, true);
        assert_eq!(history::sequence_of(live.stack, copy), Some(1));
        // Read: the live one (listed first) and the freed one, whose events name it.
        let f = sink.intern_stack(generation, "at f (a.js:1:1)").unwrap();
        let g = sink.intern_stack(generation, "at g (a.js:2:1)").unwrap();
        assert_eq!(sink.intern_stack(generation.wrapping_add(1), "at h (a.js:3:1)"), None);
        sink.resolve_stacks(generation, copy, &[1, 2], &[StackRef::from(f), StackRef::from(g)], 1);
        let stacks = sink.with_history(|h| h.unwrap().events().map(|e| e.stack).collect::<Vec<_>>());
        assert_eq!(stacks, [f, g, g].map(StackRef::from));
        sink.released(live, UsmKind::Host, 0x1000, 10, 512, true);
        let last = sink.with_history(|h| h.unwrap().events().last().unwrap().stack);
        assert_eq!(last, StackRef::from(f), "the end of a live allocation read names the id");
        // Another copy (another thread's, or another vm context's of this thread) numbers
        // its stacks from 1 too: its number keeps them apart.
        let other = std::thread::spawn(new_stack_source).join().unwrap().unwrap();
        assert_ne!(other, copy);
        assert!(sink.set_next_stack_provisional(generation, copy, 7));
        let mine = sink.allocated(&a, UsmKind::Host, 0x3000, 10, 512, Source::Runtime, Sink::take_next_stack());
        assert!(sink.set_next_stack_provisional(generation, other, 7));
        let theirs = sink.allocated(&a, UsmKind::Host, 0x4000, 10, 512, Source::Runtime, Sink::take_next_stack());
        assert_eq!(sink.referenced_stacks(generation, other).unwrap().live, [7]);
        sink.resolve_stacks(generation, copy, &[7], &[StackRef::from(f)], 1);
        assert_eq!(sink.referenced_stacks(generation, copy).unwrap().live, Vec::<u64>::new());
        assert_eq!(
            sink.referenced_stacks(generation, other).unwrap().live,
            [7],
            "another copy's stack is not read by this one"
        );
        sink.released(mine, UsmKind::Host, 0x3000, 10, 512, true);
        sink.released(theirs, UsmKind::Host, 0x4000, 10, 512, true);
        let stacks = sink.with_history(|h| h.unwrap().events().map(|e| e.stack).collect::<Vec<_>>());
        assert_eq!(
            stacks[stacks.len() - 2..],
            [StackRef::from(f), history::provisional(other, 7)],
            "the frees of both"
        );
    }

    #[test]
    fn a_recording_keeps_events_and_stacks_only_while_on() {
        let sink = Sink::new(false);
        let a = device();
        sink.allocated(&a, UsmKind::Host, 0x1000, 10, 512, Source::Runtime, None);
        assert!(sink.with_history(|h| h.is_none()));
        sink.record(Some(HistoryConfig { max_entries: 10, stacks: true }));
        sink.set_next_stack("at main (x.js:1:1)");
        let o = sink.allocated(&a, UsmKind::Host, 0x2000, 10, 512, Source::Runtime, Sink::take_next_stack());
        assert_eq!(Sink::take_next_stack(), None, "taken once");
        assert_ne!(o.stack, NO_STACK);
        sink.released(o, UsmKind::Host, 0x2000, 10, 512, false);
        sink.gave_back(&[GivenBack {
            device: o.device,
            kind: UsmKind::Host,
            address: 0x2000,
            size: 512,
            why: Giveback::Released,
        }]);
        let (actions, stack) = sink.with_history(|h| {
            let h = h.unwrap();
            let actions: Vec<&str> = h.events().map(|e| e.action.name()).collect();
            (actions, h.stacks()[h.events().next().unwrap().stack as usize].to_string())
        });
        assert_eq!(actions, ["alloc", "free", "release"]);
        assert_eq!(stack, "at main (x.js:1:1)");
        // A new recording: the old allocation's stack no longer names anything.
        sink.record(Some(HistoryConfig { max_entries: 10, stacks: false }));
        sink.set_next_stack("ignored: stacks are off");
        assert_eq!(Sink::take_next_stack(), None);
        sink.record(None);
        assert!(sink.with_history(|h| h.is_none()));
        assert_eq!(sink.stats_of(a.as_ref()).all.allocations.allocated, 2, "counters run whatever the history");
    }

    #[test]
    fn the_out_of_memory_message_says_what_was_asked_and_held() {
        let mut figures = DeviceCounters::default();
        figures.allocated(0, 3 << 20, 3 << 20, false);
        figures.allocated(0, 1 << 20, 1 << 20, false);
        figures.released(0, 1 << 20, 1 << 20);
        let message = OutOfMemory {
            requested: 1 << 30,
            kind: UsmKind::Device,
            device: "cuda:gpu:0".into(),
            total: 80 << 30,
            free: Some(512 << 20),
            figures,
            retried_after: Some(1 << 20),
            cause: "CUDA_ERROR_OUT_OF_MEMORY",
        }
        .message();
        for part in [
            "1.00 GiB (1073741824 bytes) of device memory on cuda:gpu:0 failed: CUDA_ERROR_OUT_OF_MEMORY",
            "80.00 GiB of memory, 512.00 MiB free",
            "holds 3.00 MiB in use and 1.00 MiB cached",
            "gave back the 1.00 MiB it had cached and retried",
        ] {
            assert!(message.contains(part), "{part:?} in {message}");
        }
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.50 KiB");
    }
}
