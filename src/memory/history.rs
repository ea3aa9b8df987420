//! The memory history (`recordMemoryHistory()`): a ring of the last `max_entries`
//! allocations, frees, blocks given back, trims and refusals, and the JS stacks of the
//! allocating calls, interned (a program allocates from few places, many times).
//!
//! A stack may also be provisional: a number one copy of the JS layer gave a stack it
//! captured and has not read yet (reading V8's call sites costs more than capturing them,
//! and most stacks of a busy program are never looked at: their events leave the ring and
//! their blocks are freed). That copy reads the ones still named here when it sweeps
//! (those of live blocks) or takes a snapshot (all), and [`History::resolve`] puts the
//! interned ids in their place. A copy is one load of `lib/` (each thread has its own, and
//! one thread may hold several: a vm context each, as jest's and vitest's vm pools load
//! it), numbered by [`crate::memory::observe::new_stack_source`], since each numbers its
//! stacks from 0.
//!
//! Off by default. While off, nothing here runs: the sink checks one flag.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::runtime::{Address, UsmKind};

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// An allocation got a block (from the cache or the runtime).
    Alloc,
    /// An allocation ended: its block went to the cache or back to the runtime.
    Free,
    /// A block of the runtime was given back by the pool (evicted, trimmed, pruned, or
    /// freed at the end of an allocation that was not cached).
    Release,
    /// The pool was trimmed (`size`: the bytes it gave back).
    Trim,
    /// The runtime refused an allocation (`size`: the request) and the pool retried.
    Retry,
    /// An allocation failed for want of memory (`size`: the request).
    Oom,
}

impl Action {
    /// The name snapshots use.
    pub fn name(self) -> &'static str {
        match self {
            Action::Alloc => "alloc",
            Action::Free => "free",
            Action::Release => "release",
            Action::Trim => "trim",
            Action::Retry => "retry",
            Action::Oom => "oom",
        }
    }
}

/// A stack as events and allocations name it: an index of [`History::stacks`] (below
/// [`MAX_STACKS`]), a provisional one ([`provisional`]), or [`NO_STACK`].
pub type StackRef = u64;

/// No stack recorded.
pub const NO_STACK: StackRef = u64::MAX;

/// The bit of a provisional stack; the number of the copy of the JS layer that holds it
/// above [`SEQUENCE_BITS`], its sequence number below.
const PROVISIONAL: u64 = 1 << 63;
const SEQUENCE_BITS: u32 = 40;
const SEQUENCE_MASK: u64 = (1 << SEQUENCE_BITS) - 1;
const SOURCE_MASK: u64 = (1 << (63 - SEQUENCE_BITS)) - 1;

/// The most copies of the JS layer numbered in a process (the numbers are never reused,
/// so that no copy reads another's stacks; a later copy reads its stacks at once).
pub const MAX_SOURCE: u32 = SOURCE_MASK as u32;

/// The provisional stack `sequence` of the copy of the JS layer numbered `source`
/// (1 ..= [`MAX_SOURCE`]), which holds it unread.
pub fn provisional(source: u32, sequence: u64) -> StackRef {
    PROVISIONAL | ((u64::from(source) & SOURCE_MASK) << SEQUENCE_BITS) | (sequence & SEQUENCE_MASK)
}

/// The sequence number of `stack` when it is a provisional stack of copy `source`.
pub fn sequence_of(stack: StackRef, source: u32) -> Option<u64> {
    (stack != NO_STACK
        && stack & PROVISIONAL != 0
        && (stack >> SEQUENCE_BITS) & SOURCE_MASK == u64::from(source) & SOURCE_MASK)
        .then_some(stack & SEQUENCE_MASK)
}

/// The interned id `stack` is, if it is one.
pub fn interned(stack: StackRef) -> Option<u32> {
    u32::try_from(stack).ok().filter(|&id| (id as usize) < MAX_STACKS)
}

/// Whether `stack` is a provisional one (of any copy).
pub fn is_provisional(stack: StackRef) -> bool {
    stack != NO_STACK && stack & PROVISIONAL != 0
}
/// No device (a trim is the whole process's).
pub const NO_DEVICE: u16 = u16::MAX;

/// One entry of the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Nanoseconds since the sink's epoch.
    pub time_ns: u64,
    pub action: Action,
    pub kind: UsmKind,
    /// The device's slot in the sink ([`NO_DEVICE`] for none).
    pub device: u16,
    /// The stack of the allocating call ([`StackRef`]).
    pub stack: StackRef,
    pub address: Address,
    /// The block's bytes (for `Alloc`, `Free`, `Release`), else the figure the action says.
    pub size: u64,
    /// The bytes the allocation asked for (`Alloc`, `Free`); 0 otherwise.
    pub requested: u64,
    /// `Alloc`: served from the cache; `Free`: the block went to the cache; `Oom`: a trim
    /// and retry ran first.
    pub flag: bool,
}

/// How a history is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryConfig {
    pub max_entries: usize,
    /// Whether the JS layer sends the stacks of allocating calls.
    pub stacks: bool,
}

/// At most this many distinct stacks are kept; later new ones are recorded without one.
pub const MAX_STACKS: usize = 1 << 16;

/// The recorded events and stacks of one recording (from `recordMemoryHistory()` on to off).
#[derive(Debug)]
pub struct History {
    pub config: HistoryConfig,
    /// Tells the stacks of this recording from those of an earlier one, which an
    /// allocation still alive may carry.
    pub generation: u32,
    events: VecDeque<Event>,
    /// Events pushed out of the ring by newer ones.
    pub dropped: u64,
    stacks: Vec<Arc<str>>,
    stack_ids: HashMap<Arc<str>, u32>,
    /// New stacks refused because [`MAX_STACKS`] were kept.
    pub stacks_refused: u64,
    /// The live allocations of this recording with a provisional stack: that stack, or
    /// (once read) its interned id, since an allocation's own record of its stack does not
    /// change. Each entry goes when its allocation ends ([`History::freed`]).
    live: HashMap<StackRef, StackRef, BuildHasherDefault<StackHasher>>,
}

/// The hash of a provisional stack: its bits mixed once (each is unique, so no
/// flooding to guard against; the standard hasher costs several times as much per
/// allocation).
#[derive(Default)]
pub struct StackHasher(u64);

impl Hasher for StackHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ (n >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// One copy's provisional stacks a recording still names, by sequence number: those
/// of live allocations not read yet (`live`), and the range `named` of every one named
/// (by events or live allocations) less the `holes` in it that nothing names; and how
/// many allocations with such a stack are live (of every copy: for the JS layer's sweep
/// schedule). A range and its holes, because the ring drops events oldest first, so what
/// it names is mostly one run of numbers.
#[derive(Debug, PartialEq, Eq)]
pub struct Referenced {
    pub live: Vec<u64>,
    /// First and last sequence named (`None`: none).
    pub named: Option<(u64, u64)>,
    pub holes: Vec<u64>,
    pub live_allocations: usize,
}

impl History {
    pub fn new(config: HistoryConfig, generation: u32) -> Self {
        History {
            config,
            generation,
            events: VecDeque::with_capacity(config.max_entries.min(1 << 16)),
            dropped: 0,
            stacks: Vec::new(),
            stack_ids: HashMap::new(),
            stacks_refused: 0,
            live: HashMap::default(),
        }
    }

    pub fn push(&mut self, event: Event) {
        if self.config.max_entries == 0 {
            self.dropped += 1;
            return;
        }
        if self.events.len() >= self.config.max_entries {
            self.events.pop_front();
            self.dropped += 1;
        }
        self.events.push_back(event);
    }

    /// The id of `text` in this recording's table (`None` once the table is full).
    pub fn intern(&mut self, text: &str) -> Option<u32> {
        if let Some(&id) = self.stack_ids.get(text) {
            return Some(id);
        }
        if self.stacks.len() >= MAX_STACKS {
            self.stacks_refused += 1;
            return None;
        }
        let id = self.stacks.len() as u32;
        let text: Arc<str> = Arc::from(text);
        self.stacks.push(text.clone());
        self.stack_ids.insert(text, id);
        Some(id)
    }

    /// An allocation recorded with `stack` began.
    pub fn allocated(&mut self, stack: StackRef) {
        if is_provisional(stack) {
            self.live.insert(stack, stack);
        }
    }

    /// Provisional stacks read: `stacks[i]` is now interned id `ids[i]` ([`NO_STACK`] when
    /// the table was full). Every event naming one names the id from now on, and so does
    /// a live allocation (the first `live` are those of live allocations).
    pub fn resolve(&mut self, stacks: &[StackRef], ids: &[StackRef], live: usize) {
        let read: HashMap<StackRef, StackRef, BuildHasherDefault<StackHasher>> =
            stacks.iter().copied().zip(ids.iter().copied()).collect();
        if read.is_empty() {
            return;
        }
        for event in self.events.iter_mut() {
            if is_provisional(event.stack) {
                if let Some(&id) = read.get(&event.stack) {
                    event.stack = id;
                }
            }
        }
        for (stack, &id) in stacks.iter().zip(ids).take(live) {
            // One that ended meanwhile (on another thread) is gone already.
            if let Some(entry) = self.live.get_mut(stack) {
                *entry = id;
            }
        }
    }

    /// The stack of a live allocation recorded as `stack`: its interned id where it was
    /// read, else `stack` itself.
    pub fn live_stack(&self, stack: StackRef) -> StackRef {
        if is_provisional(stack) {
            self.live.get(&stack).copied().unwrap_or(stack)
        } else {
            stack
        }
    }

    /// The stack for the end of an allocation recorded as `stack` (as [`History::live_stack`]),
    /// which is then forgotten.
    pub fn freed(&mut self, stack: StackRef) -> StackRef {
        if is_provisional(stack) {
            self.live.remove(&stack).unwrap_or(stack)
        } else {
            stack
        }
    }

    /// See [`Referenced`].
    pub fn referenced(&self, source: u32) -> Referenced {
        let mut live: Vec<u64> = self.live.values().filter_map(|&s| sequence_of(s, source)).collect();
        live.sort_unstable();
        let live_allocations = self.live.len();
        let from_events = || self.events.iter().filter_map(|e| sequence_of(e.stack, source));
        let (mut first, mut last) = (u64::MAX, 0);
        for s in from_events().chain(live.iter().copied()) {
            first = first.min(s);
            last = last.max(s);
        }
        let Some(span) = last.checked_sub(first).and_then(|d| usize::try_from(d).ok()) else {
            return Referenced { live, named: None, holes: Vec::new(), live_allocations };
        };
        let mut named = vec![false; span + 1];
        for s in from_events().chain(live.iter().copied()) {
            named[(s - first) as usize] = true;
        }
        let holes = (first..=last).zip(&named).filter(|(_, &n)| !n).map(|(s, _)| s).collect();
        Referenced { live, named: Some((first, last)), holes, live_allocations }
    }

    /// Live allocations with a provisional stack (for tests).
    #[cfg(test)]
    pub fn live_len(&self) -> usize {
        self.live.len()
    }

    pub fn events(&self) -> impl Iterator<Item = &Event> {
        self.events.iter()
    }

    pub fn stacks(&self) -> &[Arc<str>] {
        &self.stacks
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.events.len()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn event(n: u64) -> Event {
        Event {
            time_ns: n,
            action: Action::Alloc,
            kind: UsmKind::Host,
            device: 0,
            stack: NO_STACK,
            address: n,
            size: n,
            requested: n,
            flag: false,
        }
    }

    #[test]
    fn the_ring_keeps_the_newest_entries() {
        let mut h = History::new(HistoryConfig { max_entries: 3, stacks: false }, 1);
        for n in 0..5 {
            h.push(event(n));
        }
        assert_eq!(h.events().map(|e| e.time_ns).collect::<Vec<_>>(), vec![2, 3, 4]);
        assert_eq!(h.dropped, 2);
        let mut none = History::new(HistoryConfig { max_entries: 0, stacks: false }, 1);
        none.push(event(1));
        assert_eq!((none.len(), none.dropped), (0, 1));
    }

    #[test]
    fn a_provisional_stack_names_its_copy_and_number_and_resolves_to_an_id() {
        let p = provisional(7, 12345);
        assert_eq!((sequence_of(p, 7), sequence_of(p, 8), interned(p)), (Some(12345), None, None));
        assert_eq!((sequence_of(NO_STACK, 7), interned(NO_STACK), is_provisional(NO_STACK)), (None, None, false));
        assert_eq!(interned(3), Some(3));
        let mut h = History::new(HistoryConfig { max_entries: 4, stacks: true }, 1);
        let (live, gone) = (provisional(7, 1), provisional(7, 2));
        for (stack, n) in [(live, 1), (gone, 2)] {
            h.allocated(stack);
            h.push(Event { stack, ..event(n) });
        }
        let freed = h.freed(gone);
        h.push(Event { stack: freed, action: Action::Free, ..event(3) });
        h.allocated(provisional(8, 1));
        let expected = Referenced { live: vec![1], named: Some((1, 2)), holes: vec![], live_allocations: 2 };
        assert_eq!(h.referenced(7), expected);
        let id = StackRef::from(h.intern("at f (a.js:1:1)").unwrap());
        let other = StackRef::from(h.intern("at g (a.js:2:1)").unwrap());
        h.resolve(&[live, gone], &[id, other], 1);
        assert_eq!(h.events().map(|e| e.stack).collect::<Vec<_>>(), vec![id, other, other]);
        assert_eq!((h.live_stack(live), h.live_stack(gone), h.live_len()), (id, gone, 2));
        assert_eq!(h.referenced(7), Referenced { live: vec![], named: None, holes: vec![], live_allocations: 2 });
        assert_eq!(h.freed(live), id);
        assert_eq!((h.live_stack(live), h.live_len()), (live, 1), "forgotten at the end of its allocation");
        assert_eq!(h.freed(provisional(7, 9)), provisional(7, 9), "one never read stays provisional");
        h.allocated(provisional(7, 5));
        h.allocated(provisional(7, 9));
        let r = h.referenced(7);
        assert_eq!((r.live, r.named, r.holes), (vec![5, 9], Some((5, 9)), vec![6, 7, 8]), "a range and its holes");
    }

    #[test]
    fn stacks_are_interned() {
        let mut h = History::new(HistoryConfig { max_entries: 3, stacks: true }, 1);
        let a = h.intern("at f (a.js:1:1)");
        let b = h.intern("at g (a.js:2:1)");
        assert_eq!(h.intern("at f (a.js:1:1)"), a);
        assert_ne!(a, b);
        assert_eq!(&*h.stacks()[b.unwrap() as usize], "at g (a.js:2:1)");
    }
}
