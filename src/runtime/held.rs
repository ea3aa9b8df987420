//! Memory kept for the library's own use, outside the pool (a provider's pinned staging
//! buffers, the host copies' scratch blocks): counted where it is made and freed, read by
//! the model's statistics (`memoryStats().staging`).

use std::sync::Mutex;

use crate::sync::lock;

/// One figure: now, its peak, and the cumulative amounts added and taken away.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stat {
    pub current: u64,
    pub peak: u64,
    pub allocated: u64,
    pub freed: u64,
}

impl Stat {
    const ZERO: Stat = Stat { current: 0, peak: 0, allocated: 0, freed: 0 };

    pub(crate) fn add(&mut self, n: u64) {
        self.current = self.current.saturating_add(n);
        self.peak = self.peak.max(self.current);
        self.allocated = self.allocated.saturating_add(n);
    }

    pub(crate) fn sub(&mut self, n: u64) {
        self.current = self.current.saturating_sub(n);
        self.freed = self.freed.saturating_add(n);
    }

    pub(crate) fn reset_peak(&mut self) {
        self.peak = self.current;
    }
}

/// Bytes and blocks held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeldFigures {
    pub bytes: Stat,
    pub blocks: Stat,
}

/// The counter of one holder's memory (thread-safe; a lock taken only when a block is made
/// or freed, which is rare: these blocks are kept and reused).
#[derive(Debug, Default)]
pub struct Held(Mutex<HeldFigures>);

impl Held {
    pub const fn new() -> Held {
        Held(Mutex::new(HeldFigures { bytes: Stat::ZERO, blocks: Stat::ZERO }))
    }

    /// `blocks` blocks of `bytes` bytes in all were made.
    pub fn made(&self, bytes: u64, blocks: u64) {
        let mut figures = lock(&self.0);
        figures.bytes.add(bytes);
        figures.blocks.add(blocks);
    }

    /// `blocks` blocks of `bytes` bytes in all were freed.
    pub fn freed(&self, bytes: u64, blocks: u64) {
        let mut figures = lock(&self.0);
        figures.bytes.sub(bytes);
        figures.blocks.sub(blocks);
    }

    pub fn figures(&self) -> HeldFigures {
        *lock(&self.0)
    }

    /// Sets the peaks to the current figures.
    pub fn reset_peaks(&self) {
        let mut figures = lock(&self.0);
        figures.bytes.reset_peak();
        figures.blocks.reset_peak();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_memory_is_counted_with_its_peak() {
        let held = Held::new();
        held.made(300, 2);
        held.freed(100, 1);
        held.made(50, 1);
        let f = held.figures();
        assert_eq!(f.bytes, Stat { current: 250, peak: 300, allocated: 350, freed: 100 });
        assert_eq!(f.blocks, Stat { current: 2, peak: 2, allocated: 3, freed: 1 });
        held.reset_peaks();
        assert_eq!(held.figures().bytes.peak, 250);
    }
}
