//! `poolStats()` and `poolTrim()`: the caching allocator pool (`memory::pool`) seen from JS.

use napi_derive::napi;

use crate::memory::pool::{pool, KindStats};
use crate::provider::Scratch;

/// What the caching pool did for one kind of USM memory (all counts since the process
/// started; byte counts are of blocks, i.e. requests rounded up to the pool's size class).
#[napi(object)]
pub struct PoolKindStats {
    /// Allocations served from the cache.
    pub hits: f64,
    /// Allocations the cache could not serve (they went to the runtime).
    pub misses: f64,
    /// Freed blocks held in the cache now, ready for reuse.
    pub cached_blocks: f64,
    /// Bytes held in the cache now.
    pub cached_bytes: f64,
    /// Bytes of the blocks held by live allocations.
    pub in_use_bytes: f64,
    /// Cached blocks freed to keep the cache under its cap.
    pub evictions: f64,
}

impl From<KindStats> for PoolKindStats {
    fn from(s: KindStats) -> Self {
        PoolKindStats {
            hits: s.hits as f64,
            misses: s.misses as f64,
            cached_blocks: s.cached_blocks as f64,
            cached_bytes: s.cached_bytes as f64,
            in_use_bytes: s.in_use_bytes as f64,
            evictions: s.evictions as f64,
        }
    }
}

/// Idle host scratch memory: the bounce buffers of async copies of plain (non-shared)
/// `ArrayBuffer`s, kept for reuse by later copies.
#[napi(object)]
pub struct PoolScratchStats {
    /// Idle blocks kept now.
    pub blocks: f64,
    /// Bytes of those blocks.
    pub bytes: f64,
}

/// Statistics of the caching allocator pool, per USM kind, and of the idle host scratch.
#[napi(object)]
pub struct PoolStats {
    /// `false` when the environment variable `DPCTL_MEMORY_POOL` was `0` (or `false`,
    /// `off`, `no`) when the pool was first used: every allocation then goes to the
    /// runtime and every free returns the memory at once.
    pub enabled: bool,
    pub device: PoolKindStats,
    pub host: PoolKindStats,
    pub shared: PoolKindStats,
    /// Idle host scratch blocks of async copies (at most 1 GiB in all); each is freed
    /// after 5 s unused, or by `poolTrim()`.
    pub scratch: PoolScratchStats,
}

/// Statistics of the caching allocator pool.
///
/// Freed memory (the last reference to an allocation gone: `free()` and every view and
/// `ArrayBuffer` of it) goes to a per-context, per-kind cache of size classes instead of
/// back to the runtime, and a later allocation of the same class reuses it: much faster
/// than the runtime (pinned host memory, first touch on the CPU device). A reused block
/// is not zeroed. Each context caches at most 1 GiB of host memory and
/// min(1 GiB, 1/8 of the device's memory) of device and of shared memory; requests above
/// 256 MiB or with an alignment above 256 bypass the cache. Set `DPCTL_MEMORY_POOL=0`
/// before the first allocation to turn the pool off.
///
/// `scratch` counts the idle host buffers that async copies of plain (non-shared)
/// `ArrayBuffer`s go through, kept for the next copy (at most 1 GiB, each for 5 s).
#[napi]
pub fn pool_stats() -> PoolStats {
    let stats = pool().stats();
    let (blocks, bytes) = Scratch::idle_stats();
    PoolStats {
        enabled: stats.enabled,
        device: stats.device.into(),
        host: stats.host.into(),
        shared: stats.shared.into(),
        scratch: PoolScratchStats { blocks: blocks as f64, bytes: bytes as f64 },
    }
}

/// Frees every block held in the caching pool and every idle scratch buffer of async
/// copies (memory in use is untouched) and returns the number of bytes released. The
/// pool fills again as memory is freed; it also trims itself, and retries once, when the
/// runtime refuses an allocation (cached or not).
#[napi]
pub fn pool_trim() -> f64 {
    pool().trim() as f64
}
