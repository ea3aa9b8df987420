//! Memory statistics per device and USM kind, shaped like PyTorch's
//! `torch.cuda.memory_stats()` where the meaning is the same.
//!
//! - **allocated bytes**: the blocks held by live allocations (the pool's size class, as
//!   PyTorch counts its rounded blocks); **requested bytes**: what those allocations asked for.
//! - **active bytes**: PyTorch's active bytes are allocated bytes plus blocks freed but still
//!   used by a stream. Here a block goes back to the pool only when its last holder (memory
//!   object, view, `ArrayBuffer`, in-flight copy, share token) lets go, so nothing is ever
//!   freed-but-in-use: active bytes equal allocated bytes, and are reported under both names.
//! - **reserved bytes**: what this process holds from the runtime through the pool: live
//!   blocks and cached ones. A block counts from the runtime's allocation until the pool
//!   decides to give it back (the free itself follows at once, outside the pool's lock).
//! - **allocation** and **segment** counts: live allocations, and blocks held from the
//!   runtime (`numDeviceAlloc`/`numDeviceFree` are the segments' cumulative counts).
//!
//! Each figure has `current`, `peak` (since the last reset), `allocated` and `freed`
//! (cumulative), as PyTorch's `.current`/`.peak`/`.allocated`/`.freed`.

pub use crate::runtime::held::Stat;
use crate::runtime::UsmKind;

/// The figures of one device and kind (or of all kinds of a device).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KindCounters {
    pub allocated_bytes: Stat,
    pub requested_bytes: Stat,
    pub reserved_bytes: Stat,
    /// Live allocations (PyTorch's `allocation`).
    pub allocations: Stat,
    /// Blocks held from the runtime (PyTorch's `segment`).
    pub segments: Stat,
    /// Allocations served from the pool's cache.
    pub pool_hits: u64,
    /// Allocations that went to the runtime (or failed there).
    pub pool_misses: u64,
    /// Cached blocks given back to keep the cache under its cap.
    pub pool_evictions: u64,
    /// Trims (`poolTrim()`, or the pool's own before a retry) that gave back blocks of it.
    pub pool_trims: u64,
    /// Allocations the runtime refused and that were retried after a trim.
    pub alloc_retries: u64,
    /// Allocations that failed for want of memory.
    pub ooms: u64,
}

/// The slot of a kind in [`DeviceCounters::kinds`]; `None` for `Unknown`.
pub fn kind_slot(kind: UsmKind) -> Option<usize> {
    match kind {
        UsmKind::Device => Some(0),
        UsmKind::Host => Some(1),
        UsmKind::Shared => Some(2),
        UsmKind::Unknown => None,
    }
}

/// Where a block of the runtime went when the pool gave it up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Giveback {
    /// Its allocation ended and it was not cached.
    Released,
    /// Evicted from the cache by the cap.
    Evicted,
    /// Freed by a trim.
    Trimmed,
    /// Freed with the pool of a context nobody else holds.
    Pruned,
}

/// The figures of one device: each kind, and all kinds together (whose peak is the peak
/// of the sum, which the kinds' peaks cannot give).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceCounters {
    pub kinds: [KindCounters; 3],
    pub all: KindCounters,
}

impl DeviceCounters {
    fn each(&mut self, slot: usize, f: impl Fn(&mut KindCounters)) {
        if let Some(kind) = self.kinds.get_mut(slot) {
            f(kind);
        }
        f(&mut self.all);
    }

    /// An allocation of `requested` bytes got a `block`-byte block: from the cache
    /// (`hit`) or fresh from the runtime.
    pub fn allocated(&mut self, slot: usize, requested: u64, block: u64, hit: bool) {
        self.each(slot, |c| {
            c.allocated_bytes.add(block);
            c.requested_bytes.add(requested);
            c.allocations.add(1);
            if hit {
                c.pool_hits += 1;
            } else {
                c.pool_misses += 1;
                c.reserved_bytes.add(block);
                c.segments.add(1);
            }
        });
    }

    /// A block cached while its allocation lived on another device moves here (a context
    /// of several devices shares its cache).
    pub fn moved_in(&mut self, slot: usize, block: u64) {
        self.each(slot, |c| {
            c.reserved_bytes.add(block);
            c.segments.add(1);
        });
    }

    /// The other side of [`DeviceCounters::moved_in`], and every block given back.
    pub fn gave_up(&mut self, slot: usize, block: u64, why: Giveback) {
        self.each(slot, |c| {
            c.reserved_bytes.sub(block);
            c.segments.sub(1);
            if why == Giveback::Evicted {
                c.pool_evictions += 1;
            }
        });
    }

    /// An allocation ended; its block went to the cache or back to the runtime (that part
    /// is [`DeviceCounters::gave_up`]).
    pub fn released(&mut self, slot: usize, requested: u64, block: u64) {
        self.each(slot, |c| {
            c.allocated_bytes.sub(block);
            c.requested_bytes.sub(requested);
            c.allocations.sub(1);
        });
    }

    /// A trim gave back blocks of this kind.
    pub fn trimmed(&mut self, slot: usize) {
        self.each(slot, |c| c.pool_trims += 1);
    }

    pub fn retried(&mut self, slot: usize) {
        self.each(slot, |c| c.alloc_retries += 1);
    }

    pub fn out_of_memory(&mut self, slot: usize) {
        self.each(slot, |c| c.ooms += 1);
    }

    /// Sets every peak to the current figure (`resetPeakStats()`).
    pub fn reset_peaks(&mut self) {
        for c in self.kinds.iter_mut().chain(std::iter::once(&mut self.all)) {
            for stat in [
                &mut c.allocated_bytes,
                &mut c.requested_bytes,
                &mut c.reserved_bytes,
                &mut c.allocations,
                &mut c.segments,
            ] {
                stat.reset_peak();
            }
        }
    }
}

// Per device (issue 22): `poolStats().byDevice` is read from these counters, so the
// pool's view by device and `memoryStats()` never disagree, and no second counter exists.

/// What the pool did for one kind of memory: `poolStats()`'s totals, and each device's
/// (`poolStats().byDevice`, from [`KindCounters::pool_figures`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KindStats {
    /// Allocations served from the cache.
    pub hits: u64,
    /// Allocations the cache could not serve (went to the runtime, or failed there).
    pub misses: u64,
    /// Blocks in the cache now.
    pub cached_blocks: u64,
    /// Bytes in the cache now.
    pub cached_bytes: u64,
    /// Bytes of blocks held by live allocations (block sizes: the size class when pooled).
    pub in_use_bytes: u64,
    /// Cached blocks freed to keep the cache under its cap.
    pub evictions: u64,
}

impl KindCounters {
    /// The pool's figures of this device and kind.
    pub fn pool_figures(&self) -> KindStats {
        KindStats {
            hits: self.pool_hits,
            misses: self.pool_misses.saturating_add(self.ooms),
            cached_blocks: self.segments.current.saturating_sub(self.allocations.current),
            cached_bytes: self.reserved_bytes.current.saturating_sub(self.allocated_bytes.current),
            in_use_bytes: self.allocated_bytes.current,
            evictions: self.pool_evictions,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEVICE: usize = 0;
    const HOST: usize = 1;

    #[test]
    fn a_stat_tracks_its_peak_and_cumulative_amounts() {
        let mut s = Stat::default();
        s.add(10);
        s.add(5);
        s.sub(12);
        s.add(4);
        assert_eq!(s, Stat { current: 7, peak: 15, allocated: 19, freed: 12 });
        s.reset_peak();
        assert_eq!(s.peak, 7);
        s.sub(100);
        assert_eq!(s.current, 0, "never below zero");
    }

    #[test]
    fn kinds_add_up_in_all_and_the_peak_of_all_is_the_peak_of_the_sum() {
        let mut d = DeviceCounters::default();
        d.allocated(DEVICE, 100, 512, false);
        d.released(DEVICE, 100, 512);
        d.allocated(HOST, 700, 1024, false);
        assert_eq!(d.kinds[DEVICE].allocated_bytes.peak, 512);
        assert_eq!(d.kinds[HOST].allocated_bytes.peak, 1024);
        assert_eq!(d.all.allocated_bytes.peak, 1024, "never 1536: they were not live together");
        assert_eq!(d.all.allocated_bytes.allocated, 1536);
        assert_eq!(d.all.requested_bytes.current, 700);
        assert_eq!(d.all.reserved_bytes.current, 1536, "the device block is cached, still reserved");
        d.gave_up(DEVICE, 512, Giveback::Trimmed);
        d.trimmed(DEVICE);
        assert_eq!((d.kinds[DEVICE].reserved_bytes.current, d.kinds[DEVICE].segments.current), (0, 0));
        assert_eq!((d.kinds[DEVICE].pool_trims, d.all.pool_trims), (1, 1));
        assert_eq!(d.all.reserved_bytes.current, 1024);
    }

    #[test]
    fn hits_reserve_nothing_new_and_evictions_count() {
        let mut d = DeviceCounters::default();
        d.allocated(HOST, 4000, 4096, false);
        d.released(HOST, 4000, 4096);
        d.allocated(HOST, 4096, 4096, true);
        let host = d.kinds[HOST];
        assert_eq!((host.pool_hits, host.pool_misses), (1, 1));
        assert_eq!(host.reserved_bytes, Stat { current: 4096, peak: 4096, allocated: 4096, freed: 0 });
        assert_eq!(host.allocations, Stat { current: 1, peak: 1, allocated: 2, freed: 1 });
        d.released(HOST, 4096, 4096);
        d.gave_up(HOST, 4096, Giveback::Evicted);
        assert_eq!(d.kinds[HOST].pool_evictions, 1);
        assert_eq!(d.kinds[HOST].segments, Stat { current: 0, peak: 1, allocated: 1, freed: 1 });
        d.reset_peaks();
        assert_eq!(d.kinds[HOST].allocated_bytes.peak, 0);
        assert_eq!(d.all.reserved_bytes.peak, 0);
    }
}
