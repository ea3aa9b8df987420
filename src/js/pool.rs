//! `poolStats()` and `poolTrim()`: the caching allocator pool (`memory::pool`) and the
//! idle host scratch of async copies, seen from JS. The documentation of the fields is
//! in `index.d.ts` (`PoolStats`).

use napi_derive::napi;

use crate::js::json;
use crate::js::state::process;
use crate::memory::pool::KindStats;

fn kind_stats(stats: KindStats) -> String {
    json::object(&[
        ("hits", json::number(stats.hits as f64)),
        ("misses", json::number(stats.misses as f64)),
        ("cachedBlocks", json::number(stats.cached_blocks as f64)),
        ("cachedBytes", json::number(stats.cached_bytes as f64)),
        ("inUseBytes", json::number(stats.in_use_bytes as f64)),
        ("evictions", json::number(stats.evictions as f64)),
    ])
}

/// The pool's statistics as JSON: `{ enabled, device, host, shared, scratch, byDevice }`.
#[napi]
pub fn pool_stats() -> String {
    let stats = process().pool().stats();
    let (blocks, bytes) = process().host_copies().scratch.idle_stats();
    json::object(&[
        ("enabled", stats.enabled.to_string()),
        ("device", kind_stats(stats.device)),
        ("host", kind_stats(stats.host)),
        ("shared", kind_stats(stats.shared)),
        ("scratch", json::object(&[("blocks", json::number(blocks as f64)), ("bytes", json::number(bytes as f64))])),
        ("byDevice", by_device()),
    ])
}

/// Frees every block held in the caching pool and every idle scratch buffer of async
/// copies (memory in use is untouched) and returns the number of bytes released. The
/// pool fills again as memory is freed; it also trims itself, and retries once, when the
/// runtime refuses an allocation (cached or not).
#[napi]
pub fn pool_trim() -> f64 {
    process().trim() as f64
}

// Per device (issue 22).

/// `byDevice`: `[{ filterString, name, device, host, shared }]`, every device that
/// allocated through the pool, from the memory statistics' counters (`memory::stats`).
fn by_device() -> String {
    let figures = process().sink().figures();
    json::array(figures.iter().map(|f| {
        let [device, host, shared] = f.counters.kinds.map(|c| kind_stats(c.pool_figures()));
        json::object(&[
            ("filterString", json::string(&crate::js::state::registry().filter_string_of(f.device.as_ref()))),
            ("name", json::string(&f.device.info().name)),
            ("device", device),
            ("host", host),
            ("shared", shared),
        ])
    }))
}
