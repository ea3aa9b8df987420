//! The memory history (`recordMemoryHistory()`): a ring of the last `max_entries`
//! allocations, frees, blocks given back, trims and refusals, and the JS stacks of the
//! allocating calls, interned (a program allocates from few places, many times).
//!
//! Off by default. While off, nothing here runs: the sink checks one flag.

use std::collections::{HashMap, VecDeque};
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

/// No stack recorded.
pub const NO_STACK: u32 = u32::MAX;
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
    /// The stack of the allocating call, an index of [`History::stacks`] ([`NO_STACK`]).
    pub stack: u32,
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

    /// The id of `text` in this recording's table ([`NO_STACK`] once the table is full).
    pub fn intern(&mut self, text: &str) -> u32 {
        if let Some(&id) = self.stack_ids.get(text) {
            return id;
        }
        if self.stacks.len() >= MAX_STACKS {
            self.stacks_refused += 1;
            return NO_STACK;
        }
        let id = self.stacks.len() as u32;
        let text: Arc<str> = Arc::from(text);
        self.stacks.push(text.clone());
        self.stack_ids.insert(text, id);
        id
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
    fn stacks_are_interned() {
        let mut h = History::new(HistoryConfig { max_entries: 3, stacks: true }, 1);
        let a = h.intern("at f (a.js:1:1)");
        let b = h.intern("at g (a.js:2:1)");
        assert_eq!(h.intern("at f (a.js:1:1)"), a);
        assert_ne!(a, b);
        assert_eq!(&*h.stacks()[b as usize], "at g (a.js:2:1)");
    }
}
