//! A caching allocator for USM blocks (dpctl has none).
//!
//! Why: an allocation from the runtime is slow where it matters most: pinned host memory
//! (`cuMemHostAlloc` pins every page before it returns), and on the SYCL
//! OpenCL CPU device every fresh block pays its first touch because the runtime never
//! reuses blocks (the bench measures both). A block that goes back to a cache and out
//! again costs a lock and a map lookup instead.
//!
//! **Keys.** Cached blocks are kept per `(context, kind, size class)`. Contexts have no
//! hash, only `Context::same_context`, and a process has few of them, so the per-context
//! pools live in a small `Vec` searched linearly: first by `Arc` identity (the common case:
//! every allocation through one queue carries that queue's very `Arc`), then with
//! `same_context` (the SYCL provider makes a new `Arc` wrapper per `default_context()`).
//!
//! **Size classes.** Requests up to 4 KiB round up to a multiple of 512 bytes (8 classes);
//! above that each power-of-two interval `(2^k, 2^(k+1)]` has 4 classes (multiples of
//! `2^(k-2)`), so a block is less than 25 % larger than the request (jemalloc-style
//! spacing): fine enough that rounding wastes little, coarse enough that a workload of
//! slightly varying sizes still hits. Sizes that are classes themselves (powers of two,
//! 1.25/1.5/1.75 of them) cost nothing extra. The `Allocation` still reports the
//! REQUESTED `nbytes`: bounds checks, `allocation::provenance`, `ArrayBuffer` lengths and everything
//! users see use it; only the block, and the pool's byte counts, use the class size.
//!
//! **What is not pooled** (allocated at the exact size and freed on release, as before):
//! requests above [`Limits::max_block`] (4 GiB); alignments above [`MAX_POOLED_ALIGNMENT`] (256, the
//! alignment every runtime here gives by default; a cached block serves an alignment
//! request only if its address is aligned, which for larger alignments would miss too
//! often); classes beyond the device's `max_mem_alloc_size`; and everything when the pool
//! is disabled.
//!
//! **Large blocks.** Blocks above [`LARGE_BLOCK`] (256 MiB) are pooled too (a fresh one
//! costs the runtime far more than a small one), but a released one is cached only while
//! its device keeps a quarter of its memory free after it, where the runtime can tell
//! (CUDA: `cuMemGetInfo`), so one process's cache never starves others of device memory.
//!
//! **Caps and eviction.** Each `(context, kind)` caches at most: host 1 GiB; device and
//! shared `min(4 GiB, global memory / 8)` of the context's (first) device. A block that
//! would exceed the cap evicts the oldest cached blocks of that `(context, kind)` (least
//! recently released first); reuse is LIFO within a class (the most recently released
//! block is the warmest in caches and TLBs).
//!
//! **Shared (managed) memory is pooled.** On the CPU device it is host memory and pays
//! the same first-touch cost; on CUDA a reused managed block skips the managed-memory
//! admission check (`cuMemGetInfo`), which is fine: it was admitted once and the cap keeps
//! what the pool hides small. When the runtime refuses an allocation (out of memory, or
//! the admission check), the pool frees every cached block and retries once, then tries
//! the exact requested size, so caching never turns a satisfiable request into a failure.
//! Requests that bypass the cache retry the same way (what is cached may be what is in
//! their way). The process's pool also frees the idle host scratch blocks of async copies
//! (`host::Scratch`) whenever it trims: on such a retry and in `poolTrim()`.
//!
//! **One address book.** The pool keeps the book of every block it handed out: live
//! (with the requested size and a weak reference to its allocation), cached, or
//! releasing (on its way to the cache or back to the runtime). `Pool::lookup` (under
//! `allocation::provenance`) answers from it in one lookup, so no block is ever in no book on its way between
//! owners.
//!
//! **No stale views.** A block returns here only when the LAST `Arc<Allocation>` drops.
//! Every memory object, every view of it (zero-copy constructor, `asUsmMemory`, interface
//! views of our own memory through `allocation::bind_view`), every in-flight copy and every
//! zero-copy `ArrayBuffer` holds one: the buffer's finalizer owns a lease
//! (`src/js/handles.rs`, `BufferLease`) that `free()` drops only after it has detached the
//! buffer itself. So while any TypedArray can still reach a block, the block is not in the
//! pool and cannot reach a new owner; once it is in the pool, every view that JS could
//! hold is detached (length 0). A raw pointer (a `BigInt` kept from `pointer` or an old
//! interface dictionary) is the one thing that can still name a cached block, and the
//! runtime still calls it valid USM memory: the book knows better, and
//! `allocation::provenance` (what interface consumers bound views with) calls such a block
//! unowned, so no view can cover any byte of it.
//!
//! **Contents of a reused block are not cleared** (as with `malloc`, and as with the
//! runtime itself, which gives no guarantee about fresh memory either).
//!
//! **`DPCTL_MEMORY_POOL=0`** (also `false`, `off`, `no`), read once at first use, turns
//! the pool off: every allocation goes to the runtime and every release frees at once.
//! Hits, cached blocks and evictions then stay 0; misses and bytes in use still count.
//!
//! **Locking.** One `Mutex` guards the pool; the runtime's allocate and free are never
//! called under it (blocks to free are collected under the lock and freed after it).
//! `release` never panics and ignores free failures (it runs in `Drop`).
//!
//! **Process exit.** The pool is never dropped (its owner is leaked, and Rust never drops
//! statics). The binding trims it when the last JS environment ends and once more at
//! process exit, before the runtimes' own destructors (`js::state`): every cached block
//! goes back to the runtime, so a leak checker run over a program (compute-sanitizer's)
//! sees only what the program itself still holds. [`Pool::held_from_runtime`] says what
//! is left.

use std::any::Any;
use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsStr;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use crate::error::{MemoryError, Result};
use crate::memory::history::Action;
use crate::memory::observe::{GivenBack, Origin, OutOfMemory, Sink, Source};
use crate::memory::stats::Giveback;
/// What the pool did for one kind of memory (kept in `memory::stats`, which gives it per
/// device too).
pub use crate::memory::stats::KindStats;
use crate::runtime::ranges::entry_holding;
use crate::runtime::UsmKind;
use crate::runtime::{Address, Context, Device, Queue};

/// The environment variable that turns the pool off (`0`, `false`, `off`, `no`).
pub const ENV_VAR: &str = "DPCTL_MEMORY_POOL";

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Requests up to this size round up to a multiple of [`SMALL_STEP`].
pub const SMALL_LIMIT: u64 = 4 * KIB;
/// Class spacing up to [`SMALL_LIMIT`].
pub const SMALL_STEP: u64 = 512;
/// Larger alignments bypass the pool.
pub const MAX_POOLED_ALIGNMENT: u64 = 256;
/// Blocks above this size are cached only while their device keeps a quarter of its
/// memory free (where the runtime can tell).
pub const LARGE_BLOCK: u64 = 256 * MIB;

/// The size class of a request: the size of the block that serves it.
pub fn size_class(nbytes: u64) -> u64 {
    let n = nbytes.max(1);
    if n <= SMALL_LIMIT {
        return round_up(n, SMALL_STEP);
    }
    // n - 1 >= 4096, so the top bit is at least 12 and the step at least 1 KiB.
    let top = 63 - (n - 1).leading_zeros();
    round_up(n, 1u64 << (top - 2))
}

/// `n` rounded up to a multiple of `step` (a power of two); `n` itself on overflow.
fn round_up(n: u64, step: u64) -> u64 {
    n.checked_add(step - 1).map_or(n, |m| m & !(step - 1))
}

/// Whether the value of [`ENV_VAR`] leaves the pool on.
pub fn enabled_from(value: Option<&OsStr>) -> bool {
    let Some(value) = value.and_then(OsStr::to_str) else {
        return true;
    };
    !matches!(value.trim().to_ascii_lowercase().as_str(), "0" | "false" | "off" | "no")
}

/// Sizes that bound what the pool keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Larger requests are never pooled.
    pub max_block: u64,
    /// Cached bytes per context of host memory.
    pub host_cap: u64,
    /// Upper bound of cached bytes per context of device and of shared memory ...
    pub device_cap: u64,
    /// ... which is also at most `global_mem_size / device_fraction` of the device.
    pub device_fraction: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_block: 4 * GIB, host_cap: GIB, device_cap: 4 * GIB, device_fraction: 8 }
    }
}

impl Limits {
    /// The cap of `kind` in a context whose device has `global_mem` bytes (0: unknown).
    pub fn cap(&self, kind: UsmKind, global_mem: u64) -> u64 {
        match kind {
            UsmKind::Host => self.host_cap,
            _ if global_mem == 0 => self.device_cap,
            _ => self.device_cap.min(global_mem / self.device_fraction.max(1)),
        }
    }
}

/// A block handed out to an allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub address: Address,
    /// Bytes the runtime allocated: the size class, or the request for an unpooled block.
    pub size: u64,
    /// Whether the block goes back to the cache on release (else it is freed).
    pub pooled: bool,
}

/// A block in the cache, as snapshots list it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachedBlock {
    pub address: Address,
    pub size: u64,
    pub kind: UsmKind,
    /// The sink's slot of the device whose allocation cached it.
    pub device: u16,
}

/// What `poolStats()` reports: whether the pool caches, and each kind's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Whether the pool caches at all (`DPCTL_MEMORY_POOL` can turn it off).
    pub enabled: bool,
    pub device: KindStats,
    pub host: KindStats,
    pub shared: KindStats,
}

impl PoolStats {
    /// The counters of `kind` (all zero for `Unknown`), for tests that go over every kind.
    #[cfg(test)]
    pub fn kind(&self, kind: UsmKind) -> KindStats {
        match kind {
            UsmKind::Device => self.device,
            UsmKind::Host => self.host,
            UsmKind::Shared => self.shared,
            UsmKind::Unknown => KindStats::default(),
        }
    }
}

const KINDS: [UsmKind; 3] = [UsmKind::Device, UsmKind::Host, UsmKind::Shared];

fn slot(kind: UsmKind) -> Option<usize> {
    match kind {
        UsmKind::Device => Some(0),
        UsmKind::Host => Some(1),
        UsmKind::Shared => Some(2),
        UsmKind::Unknown => None,
    }
}

struct Cached {
    address: Address,
    /// Release order, for evicting the oldest.
    seq: u64,
    /// The sink's slot of the device whose allocation cached it.
    device: u16,
}

/// The cached blocks of one `(context, kind)`.
struct KindPool {
    cap: u64,
    bytes: u64,
    blocks: u64,
    /// Blocks by size class; each queue runs oldest (front) to newest (back).
    classes: BTreeMap<u64, VecDeque<Cached>>,
}

impl KindPool {
    fn new(cap: u64) -> Self {
        KindPool { cap, bytes: 0, blocks: 0, classes: BTreeMap::new() }
    }

    /// The newest block of `class` whose address satisfies `alignment`, and the device
    /// slot that cached it.
    fn take(&mut self, class: u64, alignment: u64) -> Option<(Address, u16)> {
        let align = alignment.max(1);
        let queue = self.classes.get_mut(&class)?;
        let index = queue.iter().rposition(|c| c.address % align == 0)?;
        let cached = queue.remove(index)?;
        if queue.is_empty() {
            self.classes.remove(&class);
        }
        self.bytes = self.bytes.saturating_sub(class);
        self.blocks = self.blocks.saturating_sub(1);
        Some((cached.address, cached.device))
    }

    fn put(&mut self, class: u64, address: Address, seq: u64, device: u16) {
        self.classes.entry(class).or_default().push_back(Cached { address, seq, device });
        self.bytes = self.bytes.saturating_add(class);
        self.blocks += 1;
    }

    /// Takes out the least recently released block: `(address, size, device slot)`.
    fn evict_oldest(&mut self) -> Option<(Address, u64, u16)> {
        let class = self.classes.iter().filter_map(|(&class, queue)| queue.front().map(|c| (c.seq, class))).min()?.1;
        let queue = self.classes.get_mut(&class)?;
        let cached = queue.pop_front()?;
        if queue.is_empty() {
            self.classes.remove(&class);
        }
        self.bytes = self.bytes.saturating_sub(class);
        self.blocks = self.blocks.saturating_sub(1);
        Some((cached.address, class, cached.device))
    }

    /// Takes out every block: `(address, size, device slot)`.
    fn drain(&mut self) -> Vec<(Address, u64, u16)> {
        let blocks = std::mem::take(&mut self.classes)
            .into_iter()
            .flat_map(|(class, queue)| queue.into_iter().map(move |c| (c.address, class, c.device)))
            .collect();
        self.bytes = 0;
        self.blocks = 0;
        blocks
    }
}

struct ContextPool {
    /// Keeps the context alive while it has cached blocks (they are freed through it).
    context: Arc<dyn Context>,
    kinds: [KindPool; 3],
}

#[derive(Default)]
struct State {
    contexts: Vec<ContextPool>,
    /// hits, misses, in_use_bytes and evictions (the cached counts live in the pools).
    counters: [KindStats; 3],
    seq: u64,
    /// The one address book: every block of this pool that is live, cached or on its way
    /// back to the runtime, by address (see [`Pool::lookup`]).
    book: BTreeMap<Address, BookEntry>,
}

/// What the pool knows of a block it handed out.
#[derive(Debug)]
enum BookEntry {
    /// Held by a live allocation, which asked for `size` bytes of a `block`-sized block.
    Live { size: u64, block: u64, holder: Holder },
    /// In the cache (`size`: the class).
    Cached { size: u64 },
    /// No longer an allocation's, not yet the runtime's again (being cached or freed).
    Releasing { block: u64 },
}

impl BookEntry {
    /// Bytes of the block under the entry.
    fn extent(&self) -> u64 {
        match self {
            BookEntry::Live { size, block, .. } => (*size).max(*block),
            BookEntry::Cached { size } => *size,
            BookEntry::Releasing { block } => *block,
        }
    }
}

/// What holds a live block: the allocation, seen by the pool only as something alive
/// (the pool sits below `allocation`, which knows what it is).
pub type Holder = Weak<dyn Any + Send + Sync>;

/// What the book says of an address (`allocation::provenance` reads it).
pub enum BookAnswer {
    /// Inside the requested bytes of a live block: its holder, while alive.
    Live(Arc<dyn Any + Send + Sync>),
    /// A block of this pool that no live holder owns at this address (slack, cached,
    /// releasing, or a holder whose drop has begun).
    Unowned { block_base: Address },
    /// Not memory of this pool.
    Foreign,
}

fn same_arc(a: &Arc<dyn Context>, b: &Arc<dyn Context>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

impl State {
    /// The pool of `context`. A pool found through `same_context` whose stored `Arc`
    /// nobody else holds any more takes the caller's `Arc`, so it is not pruned.
    fn find(&mut self, context: &Arc<dyn Context>, deferred: &mut Deferred) -> Option<usize> {
        if let Some(i) = self.contexts.iter().position(|p| same_arc(&p.context, context)) {
            return Some(i);
        }
        let i = self.contexts.iter().position(|p| p.context.same_context(context.as_ref()))?;
        let pool = &mut self.contexts[i];
        if Arc::strong_count(&pool.context) == 1 {
            deferred.contexts.push(std::mem::replace(&mut pool.context, context.clone()));
        }
        Some(i)
    }

    fn find_or_insert(&mut self, context: &Arc<dyn Context>, limits: &Limits, deferred: &mut Deferred) -> usize {
        if let Some(i) = self.find(context, deferred) {
            return i;
        }
        let global_mem = context.devices().first().map_or(0, |d| d.info().global_mem_size);
        let kinds = KINDS.map(|kind| KindPool::new(limits.cap(kind, global_mem)));
        self.contexts.push(ContextPool { context: context.clone(), kinds });
        self.contexts.len() - 1
    }

    /// Drops the pools of contexts that only the pool still holds (their queues and
    /// memory objects are gone): their blocks are freed and the context released, after
    /// the lock. `keep` (an index of `contexts`) is kept; returns its new index.
    fn prune(&mut self, keep: Option<usize>, deferred: &mut Deferred) -> Option<usize> {
        let mut keep = keep;
        let mut i = self.contexts.len();
        while i > 0 {
            i -= 1;
            if Some(i) == keep || Arc::strong_count(&self.contexts[i].context) > 1 {
                continue;
            }
            let mut pool = self.contexts.remove(i);
            for (kind, cache) in KINDS.into_iter().zip(&mut pool.kinds) {
                for (address, size, device) in cache.drain() {
                    self.book.insert(address, BookEntry::Releasing { block: size });
                    deferred.free(&pool.context, kind, address, size, device, Giveback::Pruned);
                }
            }
            deferred.contexts.push(pool.context);
            keep = keep.map(|k| if k > i { k - 1 } else { k });
        }
        keep
    }

    /// Takes every cached block out of the pool.
    fn drain_all(&mut self, deferred: &mut Deferred) {
        for mut pool in self.contexts.drain(..) {
            for (kind, cache) in KINDS.into_iter().zip(&mut pool.kinds) {
                for (address, size, device) in cache.drain() {
                    self.book.insert(address, BookEntry::Releasing { block: size });
                    deferred.free(&pool.context, kind, address, size, device, Giveback::Trimmed);
                }
            }
            deferred.contexts.push(pool.context);
        }
    }
}

/// Work for after the lock: blocks to free, then contexts to release.
#[derive(Default)]
struct Deferred {
    frees: Vec<(Arc<dyn Context>, Address, u64)>,
    /// The same blocks, as the sink hears of them.
    given_back: Vec<GivenBack>,
    contexts: Vec<Arc<dyn Context>>,
}

impl Deferred {
    fn free(
        &mut self,
        context: &Arc<dyn Context>,
        kind: UsmKind,
        address: Address,
        size: u64,
        device: u16,
        why: Giveback,
    ) {
        self.frees.push((context.clone(), address, size));
        self.given_back.push(GivenBack { device, kind, address, size, why });
    }

    /// Tells the sink of the blocks given back, frees them (failures ignored: nothing can
    /// report them), takes them out of `pool`'s book, and releases the contexts, in that
    /// order. Returns the bytes freed. A block stays in the book (as releasing) until the
    /// runtime has it back: until then no view may be made of it, and after it a new
    /// allocation may get the address.
    fn run(self, pool: &Pool) -> u64 {
        let Deferred { frees, given_back, contexts } = self;
        if frees.is_empty() {
            drop(contexts);
            return 0;
        }
        pool.sink.gave_back(&given_back);
        let mut freed = 0u64;
        let addresses: Vec<Address> = frees.iter().map(|(_, address, _)| *address).collect();
        for (context, address, size) in frees {
            // SAFETY: a block reaches `frees` once, from the one place that held it: a
            // release (the last `Arc<Allocation>` is gone, so no view or copy uses it) or
            // the cache (which nothing outside the pool can reach).
            if unsafe { context.free(address) }.is_ok() {
                freed = freed.saturating_add(size);
            }
        }
        {
            let mut state = pool.lock();
            for address in addresses {
                // Only if no new owner has taken the address meanwhile.
                if matches!(state.book.get(&address), Some(BookEntry::Releasing { .. })) {
                    state.book.remove(&address);
                }
            }
        }
        drop(contexts);
        freed
    }
}

/// One allocation from the runtime; 0 is a failure.
fn fresh(queue: &Arc<dyn Queue>, kind: UsmKind, size: u64, alignment: u64) -> Result<Address> {
    let address = queue.allocate(kind, size, alignment)?;
    if address == 0 {
        return Err(MemoryError::UsmAllocation {
            message: format!("USM allocation failed: {size} bytes of {} memory", kind.name()),
        });
    }
    Ok(address)
}

/// What a pool asks of the state that owns it (the process value): the memory other
/// parts keep idle, and how its messages name a device.
pub trait PoolOwner: Send + Sync {
    /// Frees other idle memory (host scratch, the providers' staging); the bytes freed.
    fn trim_spare(&self) -> u64;
    /// How an error message names `device` (its filter string, as `devices()` lists it).
    fn device_name(&self, device: &dyn Device) -> String;
}

/// The caching allocator. The process has one (its
/// [`ProcessRuntime`](crate::memory::process::ProcessRuntime)'s); tests make their own.
pub struct Pool {
    enabled: bool,
    limits: Limits,
    /// Where every allocation, free and block given back is reported.
    sink: Arc<Sink>,
    state: Mutex<State>,
    /// Frees other idle memory on `trim` and names devices in messages. Set once, by the
    /// process value that owns the pool; a pool without one frees only its own blocks.
    owner: OnceLock<&'static dyn PoolOwner>,
    /// The last reading of a context's free device memory: (context, when, bytes).
    free_memory_seen: Mutex<Option<(usize, Instant, u64)>>,
}

/// How long a reading of a device's free memory stands for the large-block rule.
const FREE_MEMORY_REFRESH: Duration = Duration::from_millis(100);

impl Pool {
    /// A pool that caches only when `enabled`; the process's own is its
    /// [`ProcessRuntime`](crate::memory::process::ProcessRuntime)'s, tests make more.
    pub fn new(enabled: bool, limits: Limits) -> Self {
        Pool {
            enabled,
            limits,
            state: Mutex::new(State::default()),
            sink: Arc::new(Sink::default()),
            owner: OnceLock::new(),
            free_memory_seen: Mutex::new(None),
        }
    }

    /// Sets the state that owns this pool, once (a later call changes nothing): its
    /// `trim` also frees what the owner keeps idle (memory that a refused allocation, or
    /// `poolTrim()`, should get back).
    pub fn set_owner(&self, owner: &'static dyn PoolOwner) {
        let _ = self.owner.set(owner);
    }

    /// The pool that reports to `sink`.
    pub fn with_sink(self, sink: Arc<Sink>) -> Self {
        Pool { sink, ..self }
    }

    /// Where this pool reports what it does.
    pub fn sink(&self) -> &Sink {
        &self.sink
    }

    /// Whether this pool caches at all.
    #[cfg(test)]
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// The size class serving `nbytes` at `alignment` on `queue`, or `None` when the
    /// request bypasses the pool.
    fn class_for(&self, queue: &Arc<dyn Queue>, nbytes: u64, alignment: u64) -> Option<u64> {
        if !self.enabled || alignment > MAX_POOLED_ALIGNMENT || nbytes > self.limits.max_block {
            return None;
        }
        let class = size_class(nbytes);
        if class > nbytes {
            let max = queue.device().info().max_mem_alloc_size;
            if max != 0 && class > max {
                return None;
            }
        }
        Some(class)
    }

    /// A block of at least `nbytes` of `kind` memory in `queue`'s context, aligned to
    /// `alignment` (0 or a power of two): a cached one when one fits, else a new one.
    #[cfg(test)]
    pub fn acquire(&self, queue: &Arc<dyn Queue>, kind: UsmKind, nbytes: u64, alignment: u64) -> Result<Block> {
        self.acquire_observed(queue, kind, nbytes, alignment, None).map(|(block, _)| block)
    }

    /// A block as `acquire` (the tests' form) gives one, reported to the sink with the JS
    /// stack of the allocating call (`stack`, from [`Sink::take_next_stack`]): returns what
    /// the allocation keeps to report its end. A refusal for want of memory says what was asked, what the device
    /// has free, what this process holds and whether a trim and retry ran.
    pub fn acquire_observed(
        &self,
        queue: &Arc<dyn Queue>,
        kind: UsmKind,
        nbytes: u64,
        alignment: u64,
        stack: crate::memory::observe::PendingStack,
    ) -> Result<(Block, Origin)> {
        let Some(slot) = slot(kind) else {
            return Err(MemoryError::UnknownKindAllocation);
        };
        let device = queue.device();
        let mut retried_after = None;
        match self.take_block(queue, &device, kind, slot, nbytes, alignment, &mut retried_after) {
            Ok((block, source)) => {
                let origin = self.sink.allocated(&device, kind, block.address, nbytes, block.size, source, stack);
                Ok((block, origin))
            }
            Err(error) => Err(self.out_of_memory(queue, &device, kind, nbytes, retried_after, error)),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn take_block(
        &self,
        queue: &Arc<dyn Queue>,
        device: &Arc<dyn Device>,
        kind: UsmKind,
        slot: usize,
        nbytes: u64,
        alignment: u64,
        retried_after: &mut Option<u64>,
    ) -> Result<(Block, Source)> {
        let Some(class) = self.class_for(queue, nbytes, alignment) else {
            self.lock().counters[slot].misses += 1;
            // Not cached, but what the cache holds may still be what does not fit.
            let address = match fresh(queue, kind, nbytes, alignment) {
                Ok(address) => address,
                Err(first) => {
                    let freed = self.trim_to_retry(device, kind, nbytes);
                    if freed == 0 {
                        return Err(first);
                    }
                    *retried_after = Some(freed);
                    fresh(queue, kind, nbytes, alignment).map_err(|_| first)?
                }
            };
            self.add_in_use(slot, nbytes);
            return Ok((Block { address, size: nbytes, pooled: false }, Source::Runtime));
        };
        let context = queue.context();
        let mut deferred = Deferred::default();
        let hit = {
            let mut state = self.lock();
            let found = state.find(&context, &mut deferred);
            let hit = found.and_then(|i| state.contexts[i].kinds[slot].take(class, alignment));
            if let Some((address, _)) = hit {
                // Releasing until the allocation records itself (no view before).
                state.book.insert(address, BookEntry::Releasing { block: class });
            }
            let counters = &mut state.counters[slot];
            match hit {
                Some(_) => {
                    counters.hits += 1;
                    counters.in_use_bytes = counters.in_use_bytes.saturating_add(class);
                }
                None => counters.misses += 1,
            }
            state.prune(found, &mut deferred);
            hit
        };
        deferred.run(self);
        if let Some((address, cached_by)) = hit {
            return Ok((Block { address, size: class, pooled: true }, Source::Cache { cached_by }));
        }
        let block = match fresh(queue, kind, class, alignment) {
            Ok(address) => Block { address, size: class, pooled: true },
            Err(first) => {
                // Out of memory, perhaps because of what the pool holds: give it all back
                // and retry, then at the exact size (the class may be what does not fit).
                let freed = self.trim_to_retry(device, kind, nbytes);
                if freed > 0 {
                    *retried_after = Some(freed);
                }
                let retried = if freed > 0 { fresh(queue, kind, class, alignment).ok() } else { None };
                match retried {
                    Some(address) => Block { address, size: class, pooled: true },
                    None if class != nbytes => {
                        let address = fresh(queue, kind, nbytes, alignment)?;
                        Block { address, size: nbytes, pooled: false }
                    }
                    None => return Err(first),
                }
            }
        };
        self.add_in_use(slot, block.size);
        Ok((block, Source::Runtime))
    }

    /// The trim before a retry; the retry is counted when it gave anything back.
    fn trim_to_retry(&self, device: &Arc<dyn Device>, kind: UsmKind, nbytes: u64) -> u64 {
        let freed = self.trim();
        if freed > 0 {
            self.sink.refused(device, kind, nbytes, Action::Retry, true);
        }
        freed
    }

    /// The error of a failed allocation: a refusal of the runtime, told as
    /// [`OutOfMemory`] says; any other error as it is.
    fn out_of_memory(
        &self,
        queue: &Arc<dyn Queue>,
        device: &Arc<dyn Device>,
        kind: UsmKind,
        nbytes: u64,
        retried_after: Option<u64>,
        error: MemoryError,
    ) -> MemoryError {
        let MemoryError::UsmAllocation { message } = &error else {
            return error;
        };
        self.sink.refused(device, kind, nbytes, Action::Oom, retried_after.is_some());
        let info = device.info();
        let name = self.owner.get().map_or_else(
            || format!("{}:{}", info.backend, info.device_type.name()),
            |owner| owner.device_name(device.as_ref()),
        );
        let report = OutOfMemory {
            requested: nbytes,
            kind,
            device: format!("{name} ({})", info.name),
            total: info.global_mem_size,
            free: queue.context().free_memory(),
            figures: self.sink.stats_of(device.as_ref()),
            retried_after,
            cause: message.trim_end_matches('.'),
        };
        MemoryError::UsmAllocation { message: report.message() }
    }

    fn add_in_use(&self, slot: usize, size: u64) {
        let mut state = self.lock();
        let counters = &mut state.counters[slot];
        counters.in_use_bytes = counters.in_use_bytes.saturating_add(size);
    }

    /// Takes back a block of `kind` from `context` that no allocation holds any more:
    /// caches it (evicting the oldest blocks beyond the cap) or frees it. Never panics;
    /// free failures are ignored.
    #[cfg(test)]
    pub fn release(&self, context: &Arc<dyn Context>, kind: UsmKind, block: Block) {
        self.release_observed(context, kind, block, block.size, Origin::NONE);
    }

    /// `release` (the tests' form) of the block of an allocation that asked for `requested` bytes,
    /// reported to the sink with the `origin` its acquisition returned.
    pub fn release_observed(
        &self,
        context: &Arc<dyn Context>,
        kind: UsmKind,
        block: Block,
        requested: u64,
        origin: Origin,
    ) {
        let mut deferred = Deferred::default();
        // A large block stays cached only while the device keeps room for others (other
        // processes too): asked outside the lock, where the runtime can tell.
        let keep_large =
            block.size <= LARGE_BLOCK || kind == UsmKind::Host || self.device_has_room(context, block.size);
        let mut cached = false;
        {
            let mut state = self.lock();
            state.book.insert(block.address, BookEntry::Releasing { block: block.size });
            let slot = slot(kind);
            if let Some(slot) = slot {
                let counters = &mut state.counters[slot];
                counters.in_use_bytes = counters.in_use_bytes.saturating_sub(block.size);
            }
            match slot {
                Some(slot) if self.enabled && block.pooled && keep_large => {
                    let found = state.find_or_insert(context, &self.limits, &mut deferred);
                    state.seq += 1;
                    let seq = state.seq;
                    let State { contexts, counters, book, .. } = &mut *state;
                    let pool = &mut contexts[found].kinds[slot];
                    if block.size > pool.cap {
                        deferred.free(context, kind, block.address, block.size, origin.device, Giveback::Released);
                    } else {
                        while pool.bytes.saturating_add(block.size) > pool.cap {
                            let Some((address, size, device)) = pool.evict_oldest() else { break };
                            book.insert(address, BookEntry::Releasing { block: size });
                            counters[slot].evictions += 1;
                            deferred.free(context, kind, address, size, device, Giveback::Evicted);
                        }
                        pool.put(block.size, block.address, seq, origin.device);
                        book.insert(block.address, BookEntry::Cached { size: block.size });
                        cached = true;
                    }
                    state.prune(Some(found), &mut deferred);
                }
                _ => deferred.free(context, kind, block.address, block.size, origin.device, Giveback::Released),
            }
        }
        self.sink.released(origin, kind, block.address, requested, block.size, cached);
        deferred.run(self);
    }

    /// Frees every cached block, and the idle memory of `spare`; returns the bytes released.
    pub fn trim(&self) -> u64 {
        let mut deferred = Deferred::default();
        self.lock().drain_all(&mut deferred);
        let freed = deferred.run(self).saturating_add(self.owner.get().map_or(0, |owner| owner.trim_spare()));
        self.sink.trimmed(freed);
        freed
    }

    /// Blocks this pool holds from the runtime now (live, cached, or on their way back to
    /// it) and their bytes: the book's entries, which every block enters when the runtime
    /// makes it and leaves only once the runtime has it back.
    pub fn held_from_runtime(&self) -> (u64, u64) {
        let state = self.lock();
        let bytes = state.book.values().fold(0u64, |sum, entry| sum.saturating_add(entry.extent()));
        (state.book.len() as u64, bytes)
    }

    /// The counters now, with the cache's blocks and bytes summed over every context.
    pub fn stats(&self) -> PoolStats {
        let state = self.lock();
        let mut kinds = state.counters;
        for pool in &state.contexts {
            for (stats, kind) in kinds.iter_mut().zip(&pool.kinds) {
                stats.cached_blocks += kind.blocks;
                stats.cached_bytes = stats.cached_bytes.saturating_add(kind.bytes);
            }
        }
        let [device, host, shared] = kinds;
        PoolStats { enabled: self.enabled, device, host, shared }
    }

    /// Whether caching `size` more bytes in `context` leaves its device at least a quarter
    /// of its memory free (true where the runtime cannot tell).
    /// The reading is kept for [`FREE_MEMORY_REFRESH`]: asking the runtime costs more than
    /// the rest of a pooled release, and the rule is a soft one.
    fn device_has_room(&self, context: &Arc<dyn Context>, size: u64) -> bool {
        let global = context.devices().first().map_or(0, |d| d.info().global_mem_size);
        let identity = Arc::as_ptr(context) as *const () as usize;
        let now = Instant::now();
        let seen = *crate::sync::lock(&self.free_memory_seen);
        let free = match seen {
            Some((who, at, free)) if who == identity && now.duration_since(at) < FREE_MEMORY_REFRESH => Some(free),
            _ => {
                let free = context.free_memory();
                if let Some(free) = free {
                    *crate::sync::lock(&self.free_memory_seen) = Some((identity, now, free));
                }
                free
            }
        };
        free.is_none_or(|free| free.saturating_sub(size) >= global / 4)
    }

    /// Records the block of a new allocation (asked for `size` bytes) as live.
    pub(crate) fn record_live(&self, block: Block, size: u64, holder: Holder) {
        self.lock().book.insert(block.address, BookEntry::Live { size, block: block.size, holder });
    }

    /// What the book says of `address`, in one lookup.
    pub fn lookup(&self, address: Address) -> BookAnswer {
        let state = self.lock();
        let Some((base, entry)) = entry_holding(&state.book, address, BookEntry::extent) else {
            return BookAnswer::Foreign;
        };
        match entry {
            BookEntry::Live { size, holder, .. } if address < base.saturating_add(*size) => {
                // A failed upgrade is a holder whose `Drop` has not yet run.
                holder.upgrade().map_or(BookAnswer::Unowned { block_base: base }, BookAnswer::Live)
            }
            _ => BookAnswer::Unowned { block_base: base },
        }
    }

    /// Every live block whose holder is alive: `(address, requested bytes, block bytes,
    /// holder)`. The caller drops the holders after this returns (outside the lock).
    pub fn live_blocks(&self) -> Vec<(Address, u64, u64, Arc<dyn Any + Send + Sync>)> {
        let state = self.lock();
        state
            .book
            .iter()
            .filter_map(|(&address, entry)| match entry {
                BookEntry::Live { size, block, holder } => holder.upgrade().map(|h| (address, *size, *block, h)),
                _ => None,
            })
            .collect()
    }

    /// Every cached block, oldest first within each class.
    pub fn cached_blocks(&self) -> Vec<CachedBlock> {
        let state = self.lock();
        let mut blocks = Vec::new();
        for pool in &state.contexts {
            for (kind, cache) in KINDS.into_iter().zip(&pool.kinds) {
                for (&size, queue) in &cache.classes {
                    blocks.extend(queue.iter().map(|c| CachedBlock {
                        address: c.address,
                        size,
                        kind,
                        device: c.device,
                    }));
                }
            }
        }
        blocks
    }

    /// The first block of this pool (live, cached or releasing) that starts inside
    /// `base..base + size`.
    pub fn block_within(&self, base: Address, size: u64) -> Option<Address> {
        self.lock().book.range(base..base.saturating_add(size)).next().map(|(&address, _)| address)
    }

    /// `(base, size)` of the cached (freed, not yet reused) block holding `address`, if any.
    #[cfg(test)]
    pub fn cached_range(&self, address: Address) -> Option<(Address, u64)> {
        let state = self.lock();
        match entry_holding(&state.book, address, BookEntry::extent) {
            Some((base, BookEntry::Cached { size })) => Some((base, *size)),
            _ => None,
        }
    }
}

/// The pool the model's tests allocate from where a test needs no pool of its own (as
/// the process's, on unless [`ENV_VAR`] turns it off).
#[cfg(test)]
pub fn test_pool() -> &'static Pool {
    static TESTS: OnceLock<Pool> = OnceLock::new();
    TESTS.get_or_init(|| Pool::new(enabled_from(std::env::var_os(ENV_VAR).as_deref()), Limits::default()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::runtime::fake::{FakeContext, FakeDevice};

    const GLOBAL_MEM: u64 = 64 * GIB;

    fn setup(id: u64) -> (Arc<FakeContext>, Arc<dyn Queue>) {
        let context = FakeContext::new(id, FakeDevice::new(GLOBAL_MEM, GLOBAL_MEM));
        let queue = context.queue();
        (context, queue)
    }

    fn dyn_ctx(context: &Arc<FakeContext>) -> Arc<dyn Context> {
        context.clone()
    }

    /// The runtime's refusal of `nbytes`, told as the out-of-memory message tells it.
    fn assert_refused(err: &MemoryError, nbytes: u64) {
        assert_refused_on(err, nbytes, "fake:cpu");
    }

    /// [`assert_refused`] on the device that messages name `device`.
    fn assert_refused_on(err: &MemoryError, nbytes: u64, device: &str) {
        let MemoryError::UsmAllocation { message } = err else { panic!("{err:?}") };
        let cause =
            format!("({nbytes} bytes) of device memory on {device} (fake) failed: out of memory: {nbytes} bytes.");
        let host = cause.replace("device memory", "host memory");
        assert!(message.contains(&cause) || message.contains(&host), "{message}");
    }

    #[test]
    fn size_classes() {
        let table = [
            (1, 512),
            (512, 512),
            (513, 1024),
            (4000, 4096),
            (4096, 4096),
            (4097, 5120),
            (5000, 5120),
            (8192, 8192),
            (8193, 10240),
            (MIB, MIB),
            (MIB + 1, MIB + MIB / 4),
            (3 * MIB, 3 * MIB),
            (200 * MIB, 224 * MIB),
            (256 * MIB, 256 * MIB),
        ];
        for (n, class) in table {
            assert_eq!(size_class(n), class, "size_class({n})");
        }
        assert_eq!(size_class(0), 512);
        assert_eq!(size_class(u64::MAX), u64::MAX, "no overflow");
    }

    #[test]
    fn size_classes_cover_the_request_with_less_than_a_quarter_wasted_and_are_fixed_points() {
        let mut n = 1u64;
        while n < 512 * MIB {
            for m in [n, n + 1, n + n / 3, n + n / 2 + 7] {
                let class = size_class(m);
                assert!(class >= m, "{m}");
                assert_eq!(size_class(class), class, "a class is its own class ({m})");
                if m > SMALL_LIMIT {
                    assert!((class - m) * 4 < m, "waste of {m}: {class}");
                } else {
                    assert!(class - m < SMALL_STEP);
                }
            }
            n *= 2;
        }
    }

    #[test]
    fn env_values() {
        assert!(enabled_from(None));
        for on in ["1", "", "yes", "on", "true"] {
            assert!(enabled_from(Some(OsStr::new(on))), "{on:?}");
        }
        for off in ["0", "false", "OFF", " no ", "False"] {
            assert!(!enabled_from(Some(OsStr::new(off))), "{off:?}");
        }
    }

    #[test]
    fn caps() {
        let limits = Limits::default();
        assert_eq!(limits.cap(UsmKind::Host, 4 * GIB), GIB);
        assert_eq!(limits.cap(UsmKind::Device, 4 * GIB), GIB / 2);
        assert_eq!(limits.cap(UsmKind::Shared, 4 * GIB), GIB / 2);
        assert_eq!(limits.cap(UsmKind::Device, 141 * GIB), 4 * GIB);
        assert_eq!(limits.cap(UsmKind::Device, 0), 4 * GIB, "unknown size: the upper bound");
    }

    #[test]
    fn a_released_block_is_reused_and_counted() {
        let pool = Pool::new(true, Limits::default());
        let (ctx, queue) = setup(1);
        let a = pool.acquire(&queue, UsmKind::Host, MIB, 0).unwrap();
        assert_eq!(a, Block { address: a.address, size: MIB, pooled: true });
        assert_eq!(pool.stats().host, KindStats { misses: 1, in_use_bytes: MIB, ..Default::default() });
        pool.release(&dyn_ctx(&ctx), UsmKind::Host, a);
        assert_eq!(
            pool.stats().host,
            KindStats { misses: 1, cached_blocks: 1, cached_bytes: MIB, ..Default::default() }
        );
        assert_eq!(pool.cached_range(a.address + 100), Some((a.address, MIB)));
        let b = pool.acquire(&queue, UsmKind::Host, MIB - 1000, 0).unwrap();
        assert_eq!(b, a, "same class: the cached block");
        assert_eq!(pool.cached_range(a.address), None, "in use again");
        assert_eq!(pool.stats().host, KindStats { hits: 1, misses: 1, in_use_bytes: MIB, ..Default::default() });
        assert_eq!(ctx.counts().allocations, 1);
        assert!(ctx.counts().frees.is_empty());
        assert_eq!(pool.stats().device, KindStats::default());
        assert!(pool.stats().enabled);
        pool.release(&dyn_ctx(&ctx), UsmKind::Host, b);
        assert_eq!(pool.trim(), MIB);
        assert_eq!(ctx.counts().frees, vec![a.address]);
        assert_eq!(ctx.counts().bad_frees, 0);
    }

    #[test]
    fn blocks_are_not_shared_between_kinds_classes_or_contexts() {
        let pool = Pool::new(true, Limits::default());
        let (ctx, queue) = setup(2);
        let (other_ctx, other_queue) = setup(3);
        let a = pool.acquire(&queue, UsmKind::Host, 5000, 0).unwrap();
        assert_eq!(a.size, 5120);
        pool.release(&dyn_ctx(&ctx), UsmKind::Host, a);
        let d = pool.acquire(&queue, UsmKind::Device, 5000, 0).unwrap();
        let s = pool.acquire(&queue, UsmKind::Shared, 5000, 0).unwrap();
        let bigger = pool.acquire(&queue, UsmKind::Host, 5121, 0).unwrap();
        let smaller = pool.acquire(&queue, UsmKind::Host, 4096, 0).unwrap();
        let elsewhere = pool.acquire(&other_queue, UsmKind::Host, 5000, 0).unwrap();
        for block in [d, s, bigger, smaller, elsewhere] {
            assert_ne!(block.address, a.address);
        }
        assert_eq!(pool.stats().host.hits, 0);
        assert_eq!(pool.stats().host.misses, 4);
        assert_eq!(pool.stats().host.in_use_bytes, 6144 + 4096 + 5120);
        let again = pool.acquire(&queue, UsmKind::Host, 4097, 0).unwrap();
        assert_eq!(again.address, a.address);
        drop((other_ctx, ctx));
    }

    #[test]
    fn another_arc_of_the_same_context_finds_its_pool() {
        let pool = Pool::new(true, Limits::default());
        let (ctx, queue) = setup(4);
        let twin = FakeContext::wrap(ctx.device.clone(), ctx.shared.clone());
        let a = pool.acquire(&queue, UsmKind::Device, 4096, 0).unwrap();
        pool.release(&dyn_ctx(&ctx), UsmKind::Device, a);
        let b = pool.acquire(&twin.queue(), UsmKind::Device, 4096, 0).unwrap();
        assert_eq!(a, b);
        // The pool's own Arc may now be the last of `ctx`: it adopts the twin's instead
        // of pruning a context still in use.
        drop(queue);
        drop(ctx);
        pool.release(&dyn_ctx(&twin), UsmKind::Device, b);
        assert_eq!(pool.stats().device.cached_blocks, 1);
        let c = pool.acquire(&twin.queue(), UsmKind::Device, 4096, 0).unwrap();
        assert_eq!(c, a);
        assert_eq!(twin.counts().allocations, 1);
    }

    #[test]
    fn alignment_is_honoured_and_large_alignments_bypass() {
        let pool = Pool::new(true, Limits::default());
        let (ctx, queue) = setup(5);
        ctx.counts().misalign = 64;
        let a = pool.acquire(&queue, UsmKind::Host, 4096, 0).unwrap();
        assert_eq!(a.address % 128, 64);
        pool.release(&dyn_ctx(&ctx), UsmKind::Host, a);
        let b = pool.acquire(&queue, UsmKind::Host, 4096, 128).unwrap();
        assert_ne!(b.address, a.address, "a cached block that is not 128-aligned is not used");
        assert_eq!(b.address % 128, 0);
        let c = pool.acquire(&queue, UsmKind::Host, 4096, 64).unwrap();
        assert_eq!(c.address, a.address, "but serves 64");
        let big = pool.acquire(&queue, UsmKind::Host, 5000, 4096).unwrap();
        assert_eq!(big, Block { address: big.address, size: 5000, pooled: false });
        pool.release(&dyn_ctx(&ctx), UsmKind::Host, big);
        assert_eq!(ctx.counts().frees, vec![big.address], "an unpooled block is freed at once");
        assert_eq!(pool.stats().host.cached_blocks, 0);
    }

    #[test]
    fn big_blocks_are_not_pooled() {
        let limits = Limits { max_block: 8 * MIB, ..Limits::default() };
        let pool = Pool::new(true, limits);
        let (ctx, queue) = setup(6);
        let a = pool.acquire(&queue, UsmKind::Device, 8 * MIB + 1, 0).unwrap();
        assert_eq!(a.size, 8 * MIB + 1);
        assert!(!a.pooled);
        pool.release(&dyn_ctx(&ctx), UsmKind::Device, a);
        assert_eq!(ctx.counts().frees, vec![a.address]);
        let b = pool.acquire(&queue, UsmKind::Device, 8 * MIB, 0).unwrap();
        assert!(b.pooled);
        assert_eq!(pool.stats().device.misses, 2);
        assert_eq!(pool.stats().device.in_use_bytes, 8 * MIB);
    }

    #[test]
    fn a_class_beyond_max_mem_alloc_size_bypasses() {
        let pool = Pool::new(true, Limits::default());
        let ctx = FakeContext::new(7, FakeDevice::new(GLOBAL_MEM, 5000));
        let a = pool.acquire(&ctx.queue(), UsmKind::Device, 4097, 0).unwrap();
        assert_eq!(a, Block { address: a.address, size: 4097, pooled: false });
        let b = pool.acquire(&ctx.queue(), UsmKind::Device, 4096, 0).unwrap();
        assert!(b.pooled);
    }

    #[test]
    fn the_cap_evicts_the_oldest_blocks_first() {
        let limits = Limits { host_cap: 3 * MIB, ..Limits::default() };
        let pool = Pool::new(true, limits);
        let (ctx, queue) = setup(8);
        let context = dyn_ctx(&ctx);
        let blocks: Vec<Block> = (0..4).map(|_| pool.acquire(&queue, UsmKind::Host, MIB, 0).unwrap()).collect();
        let two = pool.acquire(&queue, UsmKind::Host, 2 * MIB, 0).unwrap();
        let four = pool.acquire(&queue, UsmKind::Host, 4 * MIB, 0).unwrap();
        for &block in &blocks {
            pool.release(&context, UsmKind::Host, block);
        }
        assert_eq!(ctx.counts().frees, vec![blocks[0].address], "the oldest goes first");
        let stats = pool.stats().host;
        assert_eq!((stats.cached_blocks, stats.cached_bytes, stats.evictions), (3, 3 * MIB, 1));
        pool.release(&context, UsmKind::Host, two);
        assert_eq!(ctx.counts().frees, [0, 1, 2].map(|i| blocks[i].address).to_vec());
        let stats = pool.stats().host;
        assert_eq!((stats.cached_blocks, stats.cached_bytes, stats.evictions), (2, 3 * MIB, 3));
        // A block larger than the cap is freed, not cached, and evicts nothing.
        pool.release(&context, UsmKind::Host, four);
        assert_eq!(ctx.counts().frees.last(), Some(&four.address));
        assert_eq!(pool.stats().host.evictions, 3);
        assert_eq!(pool.stats().host.cached_bytes, 3 * MIB);
        // LIFO reuse: the newest 1 MiB block comes back first.
        assert_eq!(pool.acquire(&queue, UsmKind::Host, MIB, 0).unwrap().address, blocks[3].address);
        assert_eq!(pool.stats().host.in_use_bytes, MIB);
    }

    #[test]
    fn device_and_shared_caps_follow_the_device_memory() {
        let pool = Pool::new(true, Limits::default());
        let ctx = FakeContext::new(9, FakeDevice::new(16 * MIB, 16 * MIB));
        let queue = ctx.queue();
        let context = dyn_ctx(&ctx);
        for kind in [UsmKind::Device, UsmKind::Shared, UsmKind::Host] {
            let blocks: Vec<Block> = (0..3).map(|_| pool.acquire(&queue, kind, MIB, 0).unwrap()).collect();
            for block in blocks {
                pool.release(&context, kind, block);
            }
        }
        let stats = pool.stats();
        assert_eq!((stats.device.cached_bytes, stats.device.evictions), (2 * MIB, 1), "16 MiB / 8");
        assert_eq!((stats.shared.cached_bytes, stats.shared.evictions), (2 * MIB, 1));
        assert_eq!((stats.host.cached_bytes, stats.host.evictions), (3 * MIB, 0));
    }

    #[test]
    fn trim_frees_everything_and_releases_the_contexts() {
        let pool = Pool::new(true, Limits::default());
        let (ctx, queue) = setup(10);
        let context = dyn_ctx(&ctx);
        let blocks: Vec<(UsmKind, Block)> = [UsmKind::Device, UsmKind::Host, UsmKind::Shared, UsmKind::Host]
            .into_iter()
            .map(|kind| (kind, pool.acquire(&queue, kind, 10_000, 0).unwrap()))
            .collect();
        for &(kind, block) in &blocks {
            pool.release(&context, kind, block);
        }
        assert_eq!(pool.stats().host.cached_blocks, 2);
        let baseline = Arc::strong_count(&ctx);
        assert_eq!(pool.trim(), 4 * 10240);
        assert_eq!(ctx.counts().frees.len(), 4);
        assert!(ctx.counts().live.is_empty());
        assert_eq!(Arc::strong_count(&ctx), baseline - 1, "the pool no longer holds the context");
        let stats = pool.stats();
        for kind in KINDS {
            assert_eq!(stats.kind(kind).cached_blocks, 0);
            assert_eq!(stats.kind(kind).cached_bytes, 0);
            assert_eq!(stats.kind(kind).in_use_bytes, 0);
        }
        assert_eq!(pool.trim(), 0);
        assert_eq!(ctx.counts().bad_frees, 0);
    }

    #[test]
    fn a_context_only_the_pool_holds_is_pruned() {
        let pool = Pool::new(true, Limits::default());
        let (ctx, queue) = setup(11);
        let shared = ctx.shared.clone();
        let weak = Arc::downgrade(&ctx);
        let a = pool.acquire(&queue, UsmKind::Host, MIB, 0).unwrap();
        pool.release(&dyn_ctx(&ctx), UsmKind::Host, a);
        drop(queue);
        drop(ctx);
        assert!(weak.upgrade().is_some(), "the pool keeps the context for its blocks");
        // Any later pool operation frees the orphan's blocks and lets the context go.
        let (_other, other_queue) = setup(12);
        let _b = pool.acquire(&other_queue, UsmKind::Host, 64, 0).unwrap();
        assert!(weak.upgrade().is_none());
        let counts = shared.counts.lock().unwrap();
        assert_eq!(counts.frees, vec![a.address]);
        assert_eq!(pool.stats().host.cached_blocks, 0);
    }

    #[test]
    fn disabled_pool_allocates_and_frees_every_time() {
        let pool = Pool::new(false, Limits::default());
        let (ctx, queue) = setup(13);
        for _ in 0..3 {
            let a = pool.acquire(&queue, UsmKind::Host, 5000, 0).unwrap();
            assert_eq!(a, Block { address: a.address, size: 5000, pooled: false });
            assert_eq!(pool.stats().host.in_use_bytes, 5000);
            pool.release(&dyn_ctx(&ctx), UsmKind::Host, a);
        }
        assert_eq!(ctx.counts().allocations, 3);
        assert_eq!(ctx.counts().frees.len(), 3);
        let stats = pool.stats();
        assert!(!stats.enabled);
        assert_eq!(stats.host, KindStats { misses: 3, ..Default::default() });
        assert_eq!(pool.trim(), 0);
    }

    #[test]
    fn out_of_memory_gives_the_cache_back_and_retries() {
        let pool = Pool::new(true, Limits::default());
        let (ctx, queue) = setup(14);
        ctx.counts().capacity = Some(3 * MIB + 600 * KIB);
        let a = pool.acquire(&queue, UsmKind::Device, 3 * MIB, 0).unwrap();
        pool.release(&dyn_ctx(&ctx), UsmKind::Device, a);
        // 2 MiB does not fit beside the cached 3 MiB: the pool frees it and retries.
        let b = pool.acquire(&queue, UsmKind::Device, 2 * MIB, 0).unwrap();
        assert!(b.pooled);
        assert_eq!(ctx.counts().frees, vec![a.address]);
        assert_eq!(pool.stats().device.cached_blocks, 0);
        // 1600 KiB rounds to 1792 KiB, which does not fit in the 1624 KiB left; the
        // exact size does.
        let c = pool.acquire(&queue, UsmKind::Device, 1600 * KIB, 0).unwrap();
        assert_eq!(c, Block { address: c.address, size: 1600 * KIB, pooled: false });
        // Nothing fits: the runtime's error, for the requested size.
        let err = pool.acquire(&queue, UsmKind::Device, MIB + 1, 0).unwrap_err();
        assert_refused(&err, MIB + 1);
        assert_eq!(pool.stats().device.misses, 4);
        assert_eq!(pool.stats().device.in_use_bytes, 2 * MIB + 1600 * KIB);
        assert_eq!(ctx.counts().bad_frees, 0);
    }

    #[test]
    fn requests_the_pool_does_not_cache_also_give_the_cache_back_and_retry() {
        let pool = Pool::new(true, Limits { max_block: 256 * MIB, ..Limits::default() });
        let (ctx, queue) = setup(17);
        let context = dyn_ctx(&ctx);
        // The runtime refuses while more than 1.25 GiB would be outstanding.
        ctx.counts().capacity = Some(GIB + 256 * MIB);
        let blocks: Vec<Block> = (0..4).map(|_| pool.acquire(&queue, UsmKind::Host, 256 * MIB, 0).unwrap()).collect();
        for &block in &blocks {
            pool.release(&context, UsmKind::Host, block);
        }
        assert_eq!(pool.stats().host.cached_bytes, GIB);
        // Above max_block: not pooled, refused beside the cached 1 GiB, served after the trim.
        let big = pool.acquire(&queue, UsmKind::Host, 512 * MIB, 0).unwrap();
        assert_eq!(big, Block { address: big.address, size: 512 * MIB, pooled: false });
        assert_eq!(pool.stats().host.cached_bytes, 0);
        assert_eq!(ctx.counts().frees.len(), 4, "the cached blocks went back");
        pool.release(&context, UsmKind::Host, big);
        // An alignment above MAX_POOLED_ALIGNMENT bypasses the pool: the same.
        let blocks: Vec<Block> = (0..4).map(|_| pool.acquire(&queue, UsmKind::Host, 256 * MIB, 0).unwrap()).collect();
        for &block in &blocks {
            pool.release(&context, UsmKind::Host, block);
        }
        let aligned = pool.acquire(&queue, UsmKind::Host, 512 * MIB, 4096).unwrap();
        assert!(!aligned.pooled);
        assert_eq!(pool.stats().host.cached_bytes, 0);
        // Nothing cached: no retry, the runtime's error.
        let err = pool.acquire(&queue, UsmKind::Host, GIB, 0).unwrap_err();
        assert_refused(&err, GIB);
        assert_eq!(ctx.counts().bad_frees, 0);
    }

    #[test]
    fn trim_also_frees_the_spare_memory_and_a_refusal_retries_after_it() {
        use std::sync::atomic::{AtomicU64, Ordering};
        #[derive(Default)]
        struct Owner {
            calls: AtomicU64,
        }
        impl PoolOwner for Owner {
            fn trim_spare(&self) -> u64 {
                self.calls.fetch_add(1, Ordering::SeqCst);
                1000
            }
            fn device_name(&self, _device: &dyn Device) -> String {
                "named:by-owner".into()
            }
        }
        let owner: &'static Owner = Box::leak(Box::default());
        let pool = Pool::new(true, Limits::default());
        pool.set_owner(owner);
        let (ctx, queue) = setup(18);
        assert_eq!(pool.trim(), 1000);
        assert_eq!(owner.calls.load(Ordering::SeqCst), 1);
        ctx.counts().capacity = Some(MIB);
        for (nbytes, alignment) in [(2 * MIB, 0), (2 * MIB, 4096), (512 * MIB, 0)] {
            let err = pool.acquire(&queue, UsmKind::Device, nbytes, alignment).unwrap_err();
            assert_refused_on(&err, nbytes, "named:by-owner");
        }
        assert_eq!(owner.calls.load(Ordering::SeqCst), 4, "each refused request trimmed once");
    }

    #[test]
    fn unknown_kind_is_refused() {
        let pool = Pool::new(true, Limits::default());
        let (_ctx, queue) = setup(15);
        assert!(pool.acquire(&queue, UsmKind::Unknown, 64, 0).is_err());
    }

    #[test]
    fn concurrent_use_keeps_the_books_straight() {
        let limits = Limits { host_cap: 2 * MIB, ..Limits::default() };
        let pool = Arc::new(Pool::new(true, limits));
        let (ctx, queue) = setup(16);
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let pool = pool.clone();
                let queue = queue.clone();
                let context = dyn_ctx(&ctx);
                std::thread::spawn(move || {
                    for i in 0..500u64 {
                        let size = (1 + (i * 7 + t) % 13) * 100 * KIB;
                        let a = pool.acquire(&queue, UsmKind::Host, size, 0).unwrap();
                        let b = pool.acquire(&queue, UsmKind::Host, size / 3 + 1, 0).unwrap();
                        pool.release(&context, UsmKind::Host, a);
                        pool.release(&context, UsmKind::Host, b);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let stats = pool.stats().host;
        let counts = ctx.counts();
        assert_eq!(counts.bad_frees, 0);
        assert_eq!(stats.hits + stats.misses, 8000);
        assert_eq!(counts.allocations, stats.misses);
        assert_eq!(counts.live.len() as u64, stats.cached_blocks);
        assert_eq!(counts.live.values().sum::<u64>(), stats.cached_bytes);
        assert!(stats.cached_bytes <= 2 * MIB);
        assert_eq!(stats.in_use_bytes, 0);
        assert_eq!(counts.allocations - counts.frees.len() as u64, stats.cached_blocks);
        assert!(stats.hits > 0 && stats.evictions > 0, "{stats:?}");
    }

    #[test]
    fn large_blocks_are_cached_only_while_the_device_keeps_room() {
        let pool = Pool::new(true, Limits::default());
        let (ctx, queue) = setup(23);
        let context = dyn_ctx(&ctx);
        // The runtime cannot tell its free memory: large blocks are cached within the cap.
        let block = pool.acquire(&queue, UsmKind::Device, GIB, 0).unwrap();
        assert!(block.pooled);
        pool.release(&context, UsmKind::Device, block);
        assert_eq!(pool.stats().device.cached_bytes, GIB);
        let again = pool.acquire(&queue, UsmKind::Device, GIB, 0).unwrap();
        assert_eq!((again.address, pool.stats().device.hits), (block.address, 1), "the same block, from the cache");
        // Little free memory left on the device: the block goes back to the runtime.
        ctx.counts().free_memory = Some(GIB);
        pool.release(&context, UsmKind::Device, again);
        assert_eq!(pool.stats().device.cached_bytes, 0);
        assert_eq!(ctx.counts().frees, vec![block.address]);
        // Blocks up to LARGE_BLOCK are cached whatever the free memory.
        let small = pool.acquire(&queue, UsmKind::Device, LARGE_BLOCK, 0).unwrap();
        pool.release(&context, UsmKind::Device, small);
        assert_eq!(pool.stats().device.cached_bytes, LARGE_BLOCK);
        assert_eq!(ctx.counts().bad_frees, 0);
    }

    #[test]
    fn a_block_freed_on_one_device_never_serves_another() {
        let (_peers, devices) = crate::runtime::fake::FakePeers::devices(2, "cuda");
        let contexts: Vec<Arc<FakeContext>> =
            devices.iter().enumerate().map(|(i, d)| FakeContext::new(5101 + i as u64, d.clone())).collect();
        let queues: Vec<Arc<dyn Queue>> = contexts.iter().map(FakeContext::queue).collect();
        let pool = Pool::new(true, Limits::default());
        for kind in KINDS {
            let on1 = pool.acquire(&queues[1], kind, MIB, 0).unwrap();
            pool.release(&dyn_ctx(&contexts[1]), kind, on1);
            let fresh_on0 = contexts[0].counts().allocations;
            let on0 = pool.acquire(&queues[0], kind, MIB, 0).unwrap();
            assert_ne!(on0.address, on1.address, "{kind:?}: GPU 1's cached block went to GPU 0");
            assert_eq!(contexts[0].counts().allocations, fresh_on0 + 1, "{kind:?}: GPU 0 allocated its own");
            assert!(contexts[1].counts().frees.is_empty(), "{kind:?}: GPU 1's block stays in its cache");
            let again = pool.acquire(&queues[1], kind, MIB, 0).unwrap();
            assert_eq!(again.address, on1.address, "{kind:?}: GPU 1 reuses its own block");
            pool.release(&dyn_ctx(&contexts[0]), kind, on0);
            pool.release(&dyn_ctx(&contexts[1]), kind, again);
        }
    }
}
