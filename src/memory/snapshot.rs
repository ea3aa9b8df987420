//! What `memorySnapshot()` reports, gathered from the pool (live and cached blocks) and
//! its sink (figures, the recorded events and stacks), each under its own lock once.

use std::sync::Arc;

use crate::memory::allocation::Allocation;
use crate::memory::history::{self, Event, HistoryConfig, StackRef, NO_STACK};
use crate::memory::observe::DeviceFigures;
use crate::memory::pool::{CachedBlock, Pool};
use crate::runtime::{Address, UsmKind};

/// A live allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveBlock {
    pub address: Address,
    pub requested: u64,
    pub size: u64,
    pub kind: UsmKind,
    pub device: u16,
    /// An index of [`Recording::stacks`], or [`NO_STACK`] (none, or from an earlier
    /// recording), or a provisional stack another copy of the JS layer has not read yet.
    pub stack: StackRef,
    /// When it was allocated (ns since the sink's epoch), if a recording saw it.
    pub time_ns: Option<u64>,
}

/// The recording at the time of the snapshot.
pub struct Recording {
    pub config: HistoryConfig,
    pub dropped: u64,
    pub stacks_refused: u64,
    /// Events and live blocks whose stack another copy of the JS layer holds unread (see
    /// `memory::history`): listed with none.
    pub stacks_unread: u64,
    pub events: Vec<Event>,
    pub stacks: Vec<Arc<str>>,
}

/// Everything a snapshot holds.
pub struct Snapshot {
    pub epoch_unix_ms: f64,
    pub time_ns: u64,
    pub devices: Vec<DeviceFigures>,
    pub live: Vec<LiveBlock>,
    pub cached: Vec<CachedBlock>,
    pub recording: Option<Recording>,
}

/// A snapshot of `pool` and its sink.
pub fn take(pool: &Pool) -> Snapshot {
    let sink = pool.sink();
    let holders = pool.live_blocks();
    let cached = pool.cached_blocks();
    let (recording, generation) = sink.with_history(|history| match history {
        Some(h) => (
            Some(Recording {
                config: h.config,
                dropped: h.dropped,
                stacks_refused: h.stacks_refused,
                stacks_unread: 0,
                events: h.events().copied().collect(),
                stacks: h.stacks().to_vec(),
            }),
            Some(h.generation),
        ),
        None => (None, None),
    });
    let mut live = Vec::with_capacity(holders.len());
    for (address, requested, size, holder) in &holders {
        // Only allocations hold blocks.
        let Some(allocation) = holder.downcast_ref::<Allocation>() else { continue };
        let origin = allocation.origin();
        let current = generation == Some(origin.generation) && origin.time_ns != 0;
        live.push(LiveBlock {
            address: *address,
            requested: *requested,
            size: *size,
            kind: allocation.kind(),
            device: origin.device,
            stack: if current { origin.stack } else { NO_STACK },
            time_ns: current.then_some(origin.time_ns),
        });
    }
    // The holders go now, outside every lock (one may be the last reference).
    drop(holders);
    let mut recording = recording;
    if let Some(r) = recording.as_mut() {
        // A live block's stack read since its allocation is looked up in the recording.
        if live.iter().any(|b| history::is_provisional(b.stack)) {
            sink.with_history(|h| {
                if let Some(h) = h.filter(|h| Some(h.generation) == generation) {
                    for block in &mut live {
                        block.stack = h.live_stack(block.stack);
                    }
                }
            });
        }
        let unread = r.events.iter().map(|e| e.stack).chain(live.iter().map(|b| b.stack));
        r.stacks_unread = unread.filter(|&s| history::is_provisional(s)).count() as u64;
    }
    Snapshot {
        epoch_unix_ms: sink.epoch_unix_ms(),
        time_ns: sink.elapsed_ns(),
        devices: sink.figures(),
        live,
        cached,
        recording,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::memory::history::Action;
    use crate::memory::observe::Sink;
    use crate::memory::pool::Limits;
    use crate::runtime::fake::{FakeContext, FakeDevice};

    fn own_pool() -> &'static Pool {
        Box::leak(Box::new(Pool::new(true, Limits::default())))
    }

    #[test]
    fn the_figures_follow_allocations_through_the_pool() {
        let pool = own_pool();
        let context = FakeContext::new(3000, FakeDevice::new(1 << 34, 1 << 34));
        let queue = context.queue();
        let device = queue.device();
        let a = Allocation::new(pool, &queue, UsmKind::Device, 5000, 0).unwrap();
        let b = Allocation::new(pool, &queue, UsmKind::Host, 100, 0).unwrap();
        let stats = pool.sink().stats_of(device.as_ref());
        let dev = stats.kinds[0];
        assert_eq!(
            (dev.allocated_bytes.current, dev.requested_bytes.current, dev.reserved_bytes.current),
            (5120, 5000, 5120)
        );
        assert_eq!((dev.pool_misses, dev.pool_hits, dev.segments.current), (1, 0, 1));
        assert_eq!(stats.all.allocated_bytes.current, 5120 + 512);
        drop(a);
        let stats = pool.sink().stats_of(device.as_ref());
        assert_eq!(
            (stats.kinds[0].allocated_bytes.current, stats.kinds[0].reserved_bytes.current),
            (0, 5120),
            "cached"
        );
        let c = Allocation::new(pool, &queue, UsmKind::Device, 4200, 0).unwrap();
        let dev = pool.sink().stats_of(device.as_ref()).kinds[0];
        assert_eq!((dev.pool_hits, dev.reserved_bytes.current, dev.allocations.allocated), (1, 5120, 2));
        drop(c);
        assert_eq!(pool.trim(), 5120);
        let stats = pool.sink().stats_of(device.as_ref());
        assert_eq!((stats.kinds[0].reserved_bytes.current, stats.kinds[0].pool_trims), (0, 1));
        assert_eq!(stats.kinds[0].reserved_bytes.peak, 5120);
        assert_eq!(stats.all.reserved_bytes.current, 512, "the live host block");
        drop(b);
        // Every byte the runtime handed out is accounted for as reserved.
        let counts = context.counts();
        let live_bytes: u64 = counts.live.values().sum();
        assert_eq!(pool.sink().stats_of(device.as_ref()).all.reserved_bytes.current, live_bytes);
    }

    #[test]
    fn a_snapshot_lists_live_and_cached_blocks_with_their_stacks() {
        let pool = own_pool();
        let context = FakeContext::new(3001, FakeDevice::new(1 << 34, 1 << 34));
        let queue = context.queue();
        let before = Allocation::new(pool, &queue, UsmKind::Shared, 64, 0).unwrap();
        pool.sink().record(Some(HistoryConfig { max_entries: 100, stacks: true }));
        pool.sink().set_next_stack("at alloc (app.js:7:3)");
        let a = Allocation::new(pool, &queue, UsmKind::Host, 1000, 0).unwrap();
        let b = Allocation::new(pool, &queue, UsmKind::Host, 2000, 0).unwrap();
        drop(b);
        let snapshot = take(pool);
        assert_eq!(snapshot.recording.as_ref().unwrap().stacks_unread, 0);
        assert_eq!(snapshot.live.len(), 2);
        let live_a = snapshot.live.iter().find(|l| l.address == a.address()).unwrap();
        let recording = snapshot.recording.as_ref().unwrap();
        assert_eq!(&*recording.stacks[live_a.stack as usize], "at alloc (app.js:7:3)");
        assert!(live_a.time_ns.is_some());
        let live_before = snapshot.live.iter().find(|l| l.address == before.address()).unwrap();
        assert_eq!((live_before.stack, live_before.time_ns), (NO_STACK, None), "allocated before the recording");
        assert_eq!(snapshot.cached.len(), 1);
        assert_eq!((snapshot.cached[0].kind, snapshot.cached[0].size), (UsmKind::Host, 2048));
        let actions: Vec<Action> = recording.events.iter().map(|e| e.action).collect();
        assert_eq!(actions, [Action::Alloc, Action::Alloc, Action::Free]);
        assert_eq!(recording.events[1].stack, NO_STACK, "the stack went with the first allocation only");
        assert_eq!(snapshot.devices.len(), 1);
    }

    #[test]
    fn provisional_stacks_are_listed_while_named_and_read_ones_are_snapshot_as_ids() {
        let pool = own_pool();
        let context = FakeContext::new(3004, FakeDevice::new(1 << 34, 1 << 34));
        let queue = context.queue();
        let sink = pool.sink();
        let copy = crate::memory::observe::new_stack_source().unwrap();
        assert!(sink.referenced_stacks(sink.recording_generation(), copy).is_none(), "no recording");
        sink.record(Some(HistoryConfig { max_entries: 3, stacks: true }));
        let generation = sink.recording_generation();
        let mut allocations = Vec::new();
        for sequence in 1..=4 {
            assert!(sink.set_next_stack_provisional(generation, copy, sequence));
            allocations.push(Allocation::new(pool, &queue, UsmKind::Host, 100, 0).unwrap());
        }
        // The ring holds the last three allocations; 1 and 2 are freed, 3 and 4 live.
        allocations.drain(..2);
        let r = sink.referenced_stacks(generation, copy).unwrap();
        assert_eq!((r.live, r.named, r.holes, r.live_allocations), (vec![3, 4], Some((1, 4)), vec![], 2));
        let snapshot = take(pool);
        assert_eq!(snapshot.recording.as_ref().unwrap().stacks_unread, 5, "three events and two live blocks, unread");
        let id = StackRef::from(sink.intern_stack(generation, "at f (a.js:1:1)").unwrap());
        sink.resolve_stacks(generation, copy, &[3, 4, 2], &[id, NO_STACK, id], 2);
        let r = sink.referenced_stacks(generation, copy).unwrap();
        assert_eq!((r.live, r.named, r.holes), (vec![], Some((1, 1)), vec![]), "read ones are no longer named");
        let snapshot = take(pool);
        let mut live: Vec<StackRef> = snapshot.live.iter().map(|b| b.stack).collect();
        live.sort_unstable();
        assert_eq!(live, [id, NO_STACK], "one read, one refused (a full table)");
        assert_eq!(snapshot.recording.as_ref().unwrap().stacks_unread, 1, "the free of 1");
        assert!(sink.set_next_stack_provisional(generation, copy, 6));
        allocations.push(Allocation::new(pool, &queue, UsmKind::Host, 100, 0).unwrap());
        let r = sink.referenced_stacks(generation, copy).unwrap();
        assert_eq!((r.live, r.named, r.holes), (vec![6], Some((1, 6)), vec![2, 3, 4, 5]), "a range and its holes");
        assert!(sink.referenced_stacks(generation.wrapping_add(1), copy).is_none(), "another recording");
    }

    #[test]
    fn a_refusal_is_told_with_what_was_asked_held_and_retried_and_counted() {
        let pool = own_pool();
        let context = FakeContext::new(3002, FakeDevice::new(1 << 34, 1 << 34));
        context.counts().capacity = Some(3 << 20);
        let queue = context.queue();
        let a = Allocation::new(pool, &queue, UsmKind::Device, 1 << 20, 0).unwrap();
        let b = Allocation::new(pool, &queue, UsmKind::Device, 1 << 20, 0).unwrap();
        drop(b);
        let err = Allocation::new(pool, &queue, UsmKind::Device, 3 << 20, 0).unwrap_err();
        let crate::error::MemoryError::UsmAllocation { message } = &err else { panic!("{err:?}") };
        for part in [
            "3.00 MiB (3145728 bytes) of device memory on fake:",
            "failed: out of memory: 3145728 bytes",
            "holds 1.00 MiB in use and 0 B cached",
            "gave back the 1.00 MiB it had cached and retried",
        ] {
            assert!(message.contains(part), "{part:?} in {message}");
        }
        let stats = pool.sink().stats_of(queue.device().as_ref()).kinds[0];
        assert_eq!((stats.ooms, stats.alloc_retries, stats.pool_trims), (1, 1, 1));
        // Nothing cached: no retry, and the message says so.
        let err = Allocation::new(pool, &queue, UsmKind::Device, 3 << 20, 0).unwrap_err();
        assert!(err.to_string().contains("nothing cached to give back"), "{err}");
        drop(a);
        let _ = Sink::take_next_stack();
    }

    #[test]
    fn concurrent_allocations_keep_the_reserve_equal_to_what_the_runtime_handed_out() {
        let pool: &'static Pool =
            Box::leak(Box::new(Pool::new(true, Limits { host_cap: 2 << 20, ..Limits::default() })));
        let context = FakeContext::new(3003, FakeDevice::new(1 << 34, 1 << 34));
        let queue = context.queue();
        let threads: Vec<_> = (0..8u64)
            .map(|t| {
                let queue = queue.clone();
                std::thread::spawn(move || {
                    for i in 0..400u64 {
                        let size = (1 + (i * 7 + t) % 13) * 50_000;
                        let a = Allocation::new(pool, &queue, UsmKind::Host, size, 0).unwrap();
                        let b = Allocation::new(pool, &queue, UsmKind::Device, size / 3 + 1, 0).unwrap();
                        if i % 50 == 0 {
                            pool.trim();
                        }
                        drop((a, b));
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let stats = pool.sink().stats_of(queue.device().as_ref());
        let counts = context.counts();
        assert_eq!(stats.all.reserved_bytes.current, counts.live.values().sum::<u64>());
        assert_eq!(stats.all.segments.current, counts.live.len() as u64);
        assert_eq!(stats.all.allocated_bytes.current, 0);
        assert_eq!(stats.all.allocations.allocated, 6400);
        assert_eq!(stats.all.pool_hits + stats.all.pool_misses, 6400);
        assert_eq!(stats.all.segments.allocated, counts.allocations);
        assert!(stats.all.pool_evictions > 0 && stats.all.pool_trims > 0, "{stats:?}");
    }
}
