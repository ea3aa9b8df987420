//! Plain CPU access to host-accessible memory: host memory and USM host or shared
//! allocations, which the USM model lets the host read and write directly.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

pub(crate) mod workers;

use crate::error::{MemoryError, Result};
use crate::host::workers::{run_pieces, Workers};
use crate::runtime::held::Held;
use crate::runtime::{ReadBytes, WriteBytes};
use crate::sync::lock;

/// Copies all of `src` into the start of `dst` (at most `dst.len()` bytes) with the CPU.
/// Both ranges must be memory the host can reach (host memory, USM host or shared
/// memory, or any USM memory of a CPU device). The ranges may overlap (as `memmove`).
pub(crate) fn host_memcpy(dst: WriteBytes<'_>, src: ReadBytes<'_>) {
    let nbytes = src.len().min(dst.len());
    if nbytes == 0 || dst.address() == src.address() {
        return;
    }
    if nbytes >= STRING_COPY_MIN && dst.address().is_multiple_of(64) && !src.overlaps(&dst) && string_copy_is_fast() {
        // SAFETY: both ranges are valid for `nbytes` bytes (their constructors' contract)
        // and do not overlap.
        unsafe { string_copy(dst.address() as *mut u8, src.address() as *const u8, nbytes as usize) };
        return;
    }
    // SAFETY: both ranges are valid for `nbytes` bytes (their constructors' contract);
    // `copy` (memmove) tolerates overlap, as a copy from a memory object into its own
    // `buffer` would have.
    unsafe { std::ptr::copy(src.address() as *const u8, dst.address() as *mut u8, nbytes as usize) };
}

/// Copies all of `src` into the start of `dst` (at most `dst.len()` bytes; ranges that
/// overlap go through `host_memcpy`) with stores that bypass the caches where the CPU has
/// them (x86-64): for a buffer a DMA reads next, which then reads every byte from memory
/// instead of snooping it out of the writing cores' caches, and runs at the pinned rate.
/// The stores are fenced before it returns, so whatever this thread publishes afterwards
/// (a piece counted done) is ordered after them.
pub(crate) fn host_memcpy_for_dma(dst: WriteBytes<'_>, src: ReadBytes<'_>) {
    let nbytes = src.len().min(dst.len()) as usize;
    if nbytes < UNCACHED_COPY_MIN || src.overlaps(&dst) {
        host_memcpy(dst, src);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let (to, from) = (dst.address() as *mut u8, src.address() as *const u8);
        if has_avx() {
            // SAFETY: both ranges are valid for `nbytes` bytes (their constructors'
            // contract) and do not overlap; the CPU has AVX.
            unsafe { uncached_copy_avx(to, from, nbytes) };
        } else {
            // SAFETY: as above (SSE2 is part of x86-64).
            unsafe { uncached_copy_sse2(to, from, nbytes) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    host_memcpy(dst, src);
}

/// Below this a copy for a DMA keeps the cached stores (the head and tail around the
/// aligned body would be most of it).
const UNCACHED_COPY_MIN: usize = 4 << 10;

/// Whether the CPU has AVX (asked once).
#[cfg(target_arch = "x86_64")]
fn has_avx() -> bool {
    static AVX: OnceLock<bool> = OnceLock::new();
    *AVX.get_or_init(|| std::arch::is_x86_feature_detected!("avx"))
}

/// `len` bytes from `src` to `dst`: the destination's head up to a `LANE`-byte boundary
/// and its tail by plain copies, the body `4 * LANE` bytes at a time by unaligned loads
/// and non-temporal stores (`copy_lanes`), then a store fence.
///
/// # Safety
/// `src` must be valid for reads and `dst` for writes of `len` bytes, not overlapping.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn uncached_copy<const LANE: usize>(
    dst: *mut u8,
    src: *const u8,
    len: usize,
    copy_lanes: impl Fn(*mut u8, *const u8),
) {
    let head = dst.align_offset(LANE).min(len);
    let body = (len - head) / (4 * LANE) * (4 * LANE);
    // SAFETY: every offset below stays within `0..len` of both ranges (the caller's
    // contract); `head` aligns the body's stores to `LANE` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, head);
        let (mut from, mut to) = (src.add(head), dst.add(head));
        let end = to.add(body);
        while to < end {
            copy_lanes(to, from);
            (from, to) = (from.add(4 * LANE), to.add(4 * LANE));
        }
        std::ptr::copy_nonoverlapping(from, to, len - head - body);
        std::arch::x86_64::_mm_sfence();
    }
}

/// `uncached_copy` by 32-byte AVX stores, reading ahead of the loads.
///
/// # Safety
/// As `uncached_copy`; the CPU has AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn uncached_copy_avx(dst: *mut u8, src: *const u8, len: usize) {
    use std::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_stream_si256, _mm_prefetch, _MM_HINT_T0};
    // SAFETY: `uncached_copy` hands each call 128 bytes inside both ranges, the stores on
    // a 32-byte boundary; a prefetch never faults.
    unsafe {
        uncached_copy::<32>(dst, src, len, |to, from| {
            _mm_prefetch(from.wrapping_add(1024) as *const i8, _MM_HINT_T0);
            let words = [0, 1, 2, 3].map(|i| _mm256_loadu_si256(from.add(32 * i) as *const __m256i));
            for (i, word) in words.into_iter().enumerate() {
                _mm256_stream_si256(to.add(32 * i) as *mut __m256i, word);
            }
        })
    }
}

/// `uncached_copy` by 16-byte SSE2 stores (every x86-64 CPU has them).
///
/// # Safety
/// As `uncached_copy`.
#[cfg(target_arch = "x86_64")]
unsafe fn uncached_copy_sse2(dst: *mut u8, src: *const u8, len: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    // SAFETY: `uncached_copy` hands each call 64 bytes inside both ranges, the stores on a
    // 16-byte boundary.
    unsafe {
        uncached_copy::<16>(dst, src, len, |to, from| {
            let words = [0, 1, 2, 3].map(|i| _mm_loadu_si128(from.add(16 * i) as *const __m128i));
            for (i, word) in words.into_iter().enumerate() {
                _mm_stream_si128(to.add(16 * i) as *mut __m128i, word);
            }
        })
    }
}

/// From this size on a copy into a destination on a cache line goes through the CPU's
/// string copy (`rep movsb`) where the CPU says it is fast (ERMS): for ranges larger than
/// the caches the C library switches to non-temporal stores, which measured slower than
/// the string copy (in cache, below this, the two are alike). Into a destination off a
/// cache line (a JS buffer's bytes start 16 bytes into a page) the string copy measured
/// slower, so those stay with the C library.
const STRING_COPY_MIN: u64 = 1 << 20;

/// Whether the CPU has enhanced `rep movsb` (asked once).
fn string_copy_is_fast() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static FAST: OnceLock<bool> = OnceLock::new();
        *FAST.get_or_init(|| std::arch::is_x86_feature_detected!("ermsb"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `len` bytes from `src` to `dst` by the CPU's string copy.
///
/// # Safety
/// `src` must be valid for reads and `dst` for writes of `len` bytes, not overlapping.
#[cfg(target_arch = "x86_64")]
unsafe fn string_copy(dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: the caller's contract; `rep movsb` moves forward (the direction flag is
    // clear on entry to `asm!`, which Rust guarantees) and touches exactly these bytes.
    unsafe {
        std::arch::asm!(
            "rep movsb",
            inout("rdi") dst => _,
            inout("rsi") src => _,
            inout("rcx") len => _,
            options(nostack, preserves_flags)
        );
    }
}

/// Elsewhere, `copy_nonoverlapping` (never reached: `string_copy_is_fast` is false there).
///
/// # Safety
/// As the x86-64 version.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn string_copy(dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
}

/// Fills `dst` with `value` with the CPU (memory the host can reach, as `host_memcpy`).
pub(crate) fn host_memset(dst: WriteBytes<'_>, value: u8) {
    if dst.is_empty() {
        return;
    }
    // SAFETY: `dst` is valid for writes of its length (its constructor's contract).
    unsafe { std::ptr::write_bytes(dst.address() as *mut u8, value, dst.len() as usize) };
}

/// `len` zero bytes on the heap, or `None` when there is no such memory. Large blocks
/// come from the allocator as fresh zero pages, so nothing is written until used.
pub(crate) fn zeroed_bytes(len: usize) -> Option<Vec<u8>> {
    if len == 0 {
        return Some(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(len).ok()?;
    // SAFETY: `layout` has a non-zero size.
    let data = unsafe { std::alloc::alloc_zeroed(layout) };
    if data.is_null() {
        return None;
    }
    // SAFETY: `data` was allocated by the global allocator with exactly this layout (u8,
    // `len` bytes), all of them initialised (zeroed); the Vec takes ownership of it.
    Some(unsafe { Vec::from_raw_parts(data, len, len) })
}

/// Scratch memory for copies that go through the host (asynchronous copies of plain JS
/// buffers). Blocks are kept for reuse once dropped, because the first touch of fresh
/// pages costs more than the copy itself; their contents are whatever the last user left.
/// A kept block idle for [`SCRATCH_IDLE`] is freed (by a thread that sleeps until then),
/// and `poolTrim()` frees them all, so a burst of copies does not hold memory for good.
pub(crate) struct Scratch {
    /// Every byte initialised: `block.len()` is the whole block, of which `len` are used.
    block: Vec<u8>,
    len: usize,
    /// Where the block goes back to when dropped.
    store: &'static ScratchStore,
}

/// How many bytes the kept blocks may hold in all, how many blocks may be kept (a burst
/// of async copies returns one block each: beyond what copies at once reuse, the rest
/// is freed at once), and for how long an idle one is kept.
const SCRATCH_KEPT_MAX: usize = 1 << 30;
const SCRATCH_KEPT_BLOCKS: usize = 64;
const SCRATCH_IDLE: Duration = Duration::from_secs(5);

/// Idle scratch blocks (each used up to its full length), by length for `take` and by
/// when each was returned for `expire`: both O(log n) per block.
struct Kept {
    /// Blocks by `(length, number)`, numbered in the order they were returned.
    by_len: BTreeMap<(usize, u64), Vec<u8>>,
    /// `(returned at, number)` to length, of the same blocks.
    by_age: BTreeMap<(Instant, u64), usize>,
    /// `number` to when it was returned, to find a block's `by_age` key from `by_len`.
    returned: BTreeMap<u64, Instant>,
    next: u64,
    /// The reaper sleeps without a deadline (nothing was kept): `put` wakes it.
    reaper_asleep: bool,
    /// How many times `put` woke the reaper, and how many times the reaper looked.
    wakes: u64,
    reaper_rounds: u64,
    bytes: usize,
    max: usize,
    max_blocks: usize,
    idle: Duration,
}

impl Kept {
    const fn new(max: usize, max_blocks: usize, idle: Duration) -> Kept {
        Kept {
            by_len: BTreeMap::new(),
            by_age: BTreeMap::new(),
            returned: BTreeMap::new(),
            next: 0,
            reaper_asleep: false,
            wakes: 0,
            reaper_rounds: 0,
            bytes: 0,
            max,
            max_blocks,
            idle,
        }
    }

    fn blocks(&self) -> usize {
        self.by_len.len()
    }

    /// The smallest block of `len` to `2 * len` bytes (the oldest of equal ones).
    fn take(&mut self, len: usize) -> Option<Vec<u8>> {
        let (&key, _) = self.by_len.range((len, 0)..=(len.saturating_mul(2), u64::MAX)).next()?;
        let block = self.by_len.remove(&key)?;
        if let Some(at) = self.returned.remove(&key.1) {
            self.by_age.remove(&(at, key.1));
        }
        self.bytes = self.bytes.saturating_sub(block.len());
        Some(block)
    }

    /// Keeps `block`; gives it back when it would exceed the cap on bytes or on blocks.
    fn put(&mut self, block: Vec<u8>, now: Instant) -> Option<Vec<u8>> {
        if block.is_empty() || self.blocks() >= self.max_blocks || self.bytes.saturating_add(block.len()) > self.max {
            return Some(block);
        }
        let number = self.next;
        self.next += 1;
        self.bytes += block.len();
        self.by_age.insert((now, number), block.len());
        self.returned.insert(number, now);
        self.by_len.insert((block.len(), number), block);
        None
    }

    /// Takes out the blocks idle for `idle` or longer at `now` (to be freed after the lock).
    fn expire(&mut self, now: Instant) -> Vec<Vec<u8>> {
        let mut expired = Vec::new();
        while let Some((&(at, number), &len)) = self.by_age.first_key_value() {
            if now.saturating_duration_since(at) < self.idle {
                break;
            }
            self.by_age.remove(&(at, number));
            self.returned.remove(&number);
            if let Some(block) = self.by_len.remove(&(len, number)) {
                self.bytes = self.bytes.saturating_sub(block.len());
                expired.push(block);
            }
        }
        expired
    }

    /// Takes out every block.
    fn drain(&mut self) -> Vec<Vec<u8>> {
        self.bytes = 0;
        self.by_age.clear();
        self.returned.clear();
        std::mem::take(&mut self.by_len).into_values().collect()
    }

    /// When the oldest block expires.
    fn next_expiry(&self) -> Option<Instant> {
        self.by_age.first_key_value().and_then(|(&(at, _), _)| at.checked_add(self.idle))
    }
}

/// The kept blocks, the condition their reaper sleeps on, and whether it was started.
/// The process value holds the process's one (`memory::registration::HostCopies`);
/// tests make their own.
pub struct ScratchStore {
    kept: Mutex<Kept>,
    wake: Condvar,
    reaper: OnceLock<bool>,
    /// Every block from made to freed, in use or kept (`memoryStats().staging`).
    held: Held,
}

impl Default for ScratchStore {
    fn default() -> Self {
        ScratchStore::new(SCRATCH_KEPT_MAX, SCRATCH_KEPT_BLOCKS, SCRATCH_IDLE)
    }
}

impl ScratchStore {
    const fn new(max: usize, max_blocks: usize, idle: Duration) -> ScratchStore {
        ScratchStore {
            kept: Mutex::new(Kept::new(max, max_blocks, idle)),
            wake: Condvar::new(),
            reaper: OnceLock::new(),
            held: Held::new(),
        }
    }

    /// The blocks made and freed so far, those in use and those kept.
    pub(crate) fn held(&self) -> &Held {
        &self.held
    }

    /// Frees `blocks` (outside the lock: unmapping a large block takes a while).
    fn free(&self, blocks: Vec<Vec<u8>>) {
        let bytes = blocks.iter().map(Vec::len).sum::<usize>();
        let count = blocks.len();
        drop(blocks);
        if count > 0 {
            self.held.freed(bytes as u64, count as u64);
        }
    }

    /// `len` fresh bytes, counted.
    fn fresh(&self, len: usize) -> Option<Vec<u8>> {
        let block = zeroed_bytes(len)?;
        self.held.made(len as u64, 1);
        Some(block)
    }

    fn take(&self, len: usize) -> Option<Vec<u8>> {
        let (block, expired) = {
            let mut kept = lock(&self.kept);
            let expired = kept.expire(Instant::now());
            (kept.take(len), expired)
        };
        self.free(expired);
        block
    }

    fn put(&'static self, block: Vec<u8>) {
        let (refused, expired) = {
            let mut kept = lock(&self.kept);
            let now = Instant::now();
            let expired = kept.expire(now);
            let refused = kept.put(block, now);
            // Woken only from its sleep without a deadline (nothing was kept): a copy that
            // takes and returns the one kept block does not wake it each time.
            if kept.reaper_asleep && refused.is_none() {
                kept.reaper_asleep = false;
                kept.wakes += 1;
                self.wake.notify_all();
            }
            (refused, expired)
        };
        let mut freed = expired;
        freed.extend(refused);
        self.free(freed);
        self.start_reaper();
    }

    /// Frees every idle (kept) block; returns the bytes freed. Blocks in use are untouched.
    pub(crate) fn trim_idle(&self) -> u64 {
        let blocks = lock(&self.kept).drain();
        let bytes = blocks.iter().map(Vec::len).sum::<usize>() as u64;
        self.free(blocks);
        bytes
    }

    /// `(blocks, bytes)` of idle blocks kept for reuse now.
    pub(crate) fn idle_stats(&self) -> (u64, u64) {
        let kept = lock(&self.kept);
        (kept.blocks() as u64, kept.bytes as u64)
    }

    /// One thread per store, asleep until the oldest block expires (or for good while
    /// none is kept). Without it (spawn failed) blocks still expire when scratch is
    /// taken or returned.
    fn start_reaper(&'static self) {
        self.reaper.get_or_init(|| {
            std::thread::Builder::new()
                .name("dpctl-memory-scratch".into())
                .stack_size(64 << 10)
                .spawn(move || self.reap())
                .is_ok()
        });
    }

    fn reap(&self) {
        let mut kept = lock(&self.kept);
        loop {
            kept.reaper_rounds += 1;
            let expired = kept.expire(Instant::now());
            if !expired.is_empty() {
                // Freed without the lock: unmapping a large block takes a while.
                drop(kept);
                self.free(expired);
                kept = lock(&self.kept);
                continue;
            }
            kept = match kept.next_expiry() {
                None => {
                    kept.reaper_asleep = true;
                    let mut kept = self.wake.wait(kept).unwrap_or_else(|poisoned| poisoned.into_inner());
                    kept.reaper_asleep = false;
                    kept
                }
                Some(at) => {
                    let wait = at.saturating_duration_since(Instant::now());
                    self.wake.wait_timeout(kept, wait).map_or_else(|poisoned| poisoned.into_inner().0, |(kept, _)| kept)
                }
            };
        }
    }
}

impl Scratch {
    /// `len` bytes of scratch memory from `store`, or `None` when there is no such memory.
    /// Neither a reused nor a fresh block is written here (fresh pages come zeroed from
    /// the OS).
    pub(crate) fn new(store: &'static ScratchStore, len: usize) -> Option<Scratch> {
        if len == 0 {
            return Some(Scratch { block: Vec::new(), len, store });
        }
        let block = match store.take(len) {
            Some(block) => block,
            // Out of memory: the idle blocks may be what is in the way.
            None => store.fresh(len).or_else(|| (store.trim_idle() > 0).then(|| store.fresh(len)).flatten())?,
        };
        Some(Scratch { block, len, store })
    }

    /// `nbytes` of scratch memory for a copy, or the error that there is no such memory.
    pub(crate) fn for_copy(store: &'static ScratchStore, nbytes: u64) -> Result<Scratch> {
        usize::try_from(nbytes)
            .ok()
            .and_then(|len| Scratch::new(store, len))
            .ok_or(MemoryError::HostAllocation { nbytes })
    }

    /// A copy of `src` (over several threads when large).
    pub(crate) fn copy_of(store: &'static ScratchStore, src: ReadBytes<'_>) -> Option<Scratch> {
        let mut scratch = Scratch::new(store, usize::try_from(src.len()).ok()?)?;
        host_memcpy_parallel(WriteBytes::of_slice(&mut scratch), src);
        Some(scratch)
    }
}

impl std::ops::Deref for Scratch {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.block.get(..self.len).unwrap_or_default()
    }
}

impl std::ops::DerefMut for Scratch {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.block.get_mut(..self.len).unwrap_or_default()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let block = std::mem::take(&mut self.block);
        if !block.is_empty() {
            self.store.put(block);
        }
    }
}

/// Copies of at least this many bytes are split over threads.
const PARALLEL_MIN: u64 = 4 << 20;
/// Each thread copies at least this much.
const PER_THREAD_MIN: u64 = 2 << 20;

fn copy_threads() -> u64 {
    static THREADS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(8) as u64)
}

/// `host_memcpy` spread over the machine's cores for large copies, as the SYCL CPU
/// runtime does with its own memcpy (one core cannot fill the memory bus). Overlapping
/// ranges are copied by one thread, as `memmove`.
pub(crate) fn host_memcpy_parallel(dst: WriteBytes<'_>, src: ReadBytes<'_>) {
    let nbytes = src.len().min(dst.len());
    let threads = copy_threads().min(nbytes / PER_THREAD_MIN).max(1);
    if nbytes < PARALLEL_MIN || threads == 1 || src.overlaps(&dst) {
        host_memcpy(dst, src);
        return;
    }
    copy_slices(dst.address(), src.address(), nbytes, PIECE, threads as usize - 1, crate::host::workers::workers());
}

/// `host_memcpy` of a non-overlapping pair in pieces of `piece` bytes, on this thread and
/// up to every worker, whatever the size: for a caller that pipelines several such copies
/// with other work (the CUDA staging's chunks) and picks the piece itself
/// (`pieces_for_every_thread`).
pub(crate) fn host_memcpy_in_pieces(dst: WriteBytes<'_>, src: ReadBytes<'_>, piece: u64) {
    let nbytes = src.len().min(dst.len());
    let piece = piece.max(1);
    if nbytes <= piece || src.overlaps(&dst) {
        host_memcpy(dst, src);
        return;
    }
    let helpers = (crate::host::workers::threads() as u64 - 1).min(nbytes.div_ceil(piece) - 1) as usize;
    copy_slices(dst.address(), src.address(), nbytes, piece, helpers, crate::host::workers::workers());
}

/// The piece that gives each thread of the machine one of `nbytes` (the caller and every
/// worker), in whole multiples of 16 KiB: for a mid-size copy, where a thread's wake-up and
/// hand-off are as long as a large piece's memcpy, every core copying at once is fastest.
pub(crate) fn pieces_for_every_thread(nbytes: u64) -> u64 {
    const GRAIN: u64 = 16 << 10;
    nbytes.div_ceil(crate::host::workers::threads() as u64).div_ceil(GRAIN).max(1) * GRAIN
}

/// The piece a thread of a parallel copy takes at a time: small enough that a thread
/// that gets its core late leaves little for the others, large enough that taking one
/// costs nothing next to copying it (a multiple of 4 KiB: threads never share a page).
const PIECE: u64 = 2 << 20;

/// Copies a non-overlapping range of `nbytes` in `slice`-sized pieces, taken in turn by
/// this thread and up to `helpers` of `workers` (see `run_pieces`). `run_pieces` returns
/// only when every piece is copied, within the borrows of the ranges its caller
/// (`host_memcpy_parallel`, `host_memcpy_in_pieces`) was given, which is what makes the
/// pieces below valid.
fn copy_slices(dst: u64, src: u64, nbytes: u64, slice: u64, helpers: usize, workers: Option<&Workers>) {
    let total = nbytes.div_ceil(slice) as usize;
    run_pieces(workers, helpers, total, move |index| {
        let start = index as u64 * slice;
        let len = slice.min(nbytes - start);
        // SAFETY: a piece inside the two ranges the caller was given, which outlive every
        // piece (`run_pieces` returns when all have run).
        let (dst, src) = unsafe { (WriteBytes::from_raw(dst + start, len), ReadBytes::from_raw(src + start, len)) };
        host_memcpy(dst, src);
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_for_a_dma_moves_every_byte_at_every_alignment() {
        let src: Vec<u8> = (0..(70 << 10)).map(|i| (i * 13 % 251) as u8).collect();
        for (from, to, len) in [(0, 0, 64 << 10), (1, 7, (64 << 10) + 5), (3, 16, 4096), (0, 9, 4095), (5, 0, 100)] {
            let mut dst = vec![0u8; len + 64];
            host_memcpy_for_dma(
                WriteBytes::of_slice(&mut dst[to..to + len]),
                ReadBytes::of_slice(&src[from..from + len]),
            );
            assert!(dst[to..to + len] == src[from..from + len], "{from} {to} {len}");
            assert!(dst[..to].iter().chain(&dst[to + len..]).all(|&b| b == 0), "nothing outside: {from} {to} {len}");
            #[cfg(target_arch = "x86_64")]
            {
                // The SSE2 body, which CPUs without AVX take.
                let mut dst = vec![0u8; len + 64];
                // SAFETY: both slices hold `len` bytes from these offsets and are distinct.
                unsafe { uncached_copy_sse2(dst[to..].as_mut_ptr(), src[from..].as_ptr(), len) };
                assert!(dst[to..to + len] == src[from..from + len], "sse2 {from} {to} {len}");
                assert!(dst[..to].iter().chain(&dst[to + len..]).all(|&b| b == 0), "sse2 outside: {from} {to} {len}");
            }
        }
    }

    #[test]
    fn parallel_copy_moves_every_byte_and_overlap_is_a_memmove() {
        let n = 9 << 20 | 123;
        let src: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
        let mut dst = vec![0u8; n];
        host_memcpy_parallel(WriteBytes::of_slice(&mut dst), ReadBytes::of_slice(&src));
        assert!(dst == src);
        // Shift the buffer right by 1000 bytes within itself.
        let mut buf = src.clone();
        let whole = WriteBytes::of_slice(&mut buf);
        // SAFETY: both ranges lie inside `buf`, which outlives the copy.
        let (to, from) = unsafe {
            (
                WriteBytes::from_raw(whole.address() + 1000, (n - 1000) as u64),
                whole.as_read().prefix((n - 1000) as u64).unwrap(),
            )
        };
        host_memcpy_parallel(to, from);
        assert!(buf[1000..] == src[..n - 1000]);
    }

    #[test]
    fn heap_copies_are_exact_and_zeroed_blocks_are_zero() {
        let src: Vec<u8> = (0..(9 << 20)).map(|i| (i % 253) as u8).collect();
        let store = own_store();
        assert!(Scratch::copy_of(store, ReadBytes::of_slice(&src)).is_some_and(|copy| *copy == src[..]));
        // A reused block serves a shorter request with the right length.
        assert!(Scratch::new(store, 8 << 20).is_some_and(|block| block.len() == 8 << 20));
        assert!(zeroed_bytes(5 << 20).is_some_and(|zeros| zeros.len() == 5 << 20 && zeros.iter().all(|&b| b == 0)));
        assert!(zeroed_bytes(0).is_some_and(|empty| empty.is_empty()));
        assert!(zeroed_bytes(usize::MAX).is_none(), "an impossible size is None, not an abort");
    }

    /// A store of the test's own (no process-wide store: the tests run in parallel).
    fn own_store() -> &'static ScratchStore {
        Box::leak(Box::default())
    }

    #[test]
    fn a_block_reused_for_a_short_request_serves_its_full_size_again() {
        let store = own_store();
        let full = (24 << 20) + 5;
        let first = Scratch::new(store, full).map(|s| s.as_ptr() as usize);
        let short = Scratch::new(store, 13 << 20).map(|s| (s.as_ptr() as usize, s.len()));
        assert_eq!(short.map(|(p, _)| Some(p)), Some(first), "the short request reuses the block");
        assert_eq!(short.map(|(_, len)| len), Some(13 << 20));
        let again = Scratch::new(store, full).map(|s| (s.as_ptr() as usize, s.len()));
        assert_eq!(again, first.map(|p| (p, full)), "and the full size reuses it too");
    }

    #[test]
    fn trim_frees_every_idle_block_and_counts_it() {
        let store = own_store();
        let blocks: Vec<Scratch> =
            [(31 << 20) + 1, 3 << 20].into_iter().filter_map(|len| Scratch::new(store, len)).collect();
        assert_eq!(blocks.len(), 2);
        assert_eq!(store.idle_stats(), (0, 0), "in use: none idle");
        drop(blocks);
        assert_eq!(store.idle_stats(), (2, (34 << 20) + 1));
        assert_eq!(store.trim_idle(), (34 << 20) + 1);
        assert_eq!(store.idle_stats(), (0, 0));
        let in_use = Scratch::new(store, 1 << 20);
        assert_eq!(store.trim_idle(), 0, "a block in use is not idle");
        drop(in_use);
        assert_eq!(store.idle_stats(), (1, 1 << 20));
        let held = store.held().figures();
        assert_eq!((held.bytes.current, held.bytes.peak, held.bytes.freed), (1 << 20, (34 << 20) + 1, (34 << 20) + 1));
        assert_eq!((held.blocks.current, held.blocks.allocated, held.blocks.freed), (1, 3, 2));
    }

    #[test]
    fn every_block_is_held_from_made_to_freed_in_use_kept_refused_or_expired() {
        let store: &'static ScratchStore = Box::leak(Box::new(ScratchStore::new(1 << 20, 1, Duration::ZERO)));
        let (a, b) = (Scratch::new(store, 1000), Scratch::new(store, 2000));
        assert_eq!(store.held().figures().bytes.current, 3000, "in use");
        drop(a);
        drop(b);
        // One kept (one block at most), the other refused; the kept one expires (no idle
        // time) at the next take, which makes a fresh block.
        let c = Scratch::new(store, 10);
        let held = store.held().figures();
        assert_eq!((held.bytes.current, held.blocks.current), (10, 1), "{held:?}");
        assert_eq!(held.bytes.freed, 3000);
        drop(c);
    }

    #[test]
    fn kept_blocks_fit_best_respect_the_cap_and_expire() {
        let t0 = Instant::now();
        let idle = Duration::from_secs(5);
        let mut kept = Kept::new(13 << 20, 64, idle);
        let block = |len: usize| zeroed_bytes(len).unwrap();
        assert!(kept.put(block(3 << 20), t0).is_none());
        assert!(kept.put(block(8 << 20), t0).is_none());
        assert!(kept.put(block(2 << 20), t0 + Duration::from_secs(2)).is_none());
        assert!(kept.put(block(1 << 20), t0).is_some_and(|b| b.len() == 1 << 20), "beyond the cap: refused");
        assert!(kept.put(Vec::new(), t0).is_some(), "an empty block is not kept");
        assert_eq!((kept.blocks(), kept.bytes), (3, 13 << 20));
        assert!(kept.take(9 << 20).is_none(), "none is large enough");
        assert!(kept.take((1 << 20) - 1).is_none(), "all are more than twice as large");
        assert_eq!(kept.take(3 << 20).map(|b| b.len()), Some(3 << 20), "the smallest that fits");
        let small = kept.take(3 << 19).unwrap();
        assert_eq!(small.len(), 2 << 20, "the smallest that fits");
        assert_eq!(kept.bytes, 8 << 20);
        assert!(kept.put(small, t0 + Duration::from_secs(2)).is_none());
        assert_eq!(kept.next_expiry(), Some(t0 + idle));
        assert!(kept.expire(t0 + idle - Duration::from_millis(1)).is_empty());
        let expired = kept.expire(t0 + idle);
        assert_eq!(expired.iter().map(Vec::len).collect::<Vec<_>>(), vec![8 << 20]);
        assert_eq!((kept.blocks(), kept.bytes), (1, 2 << 20));
        assert_eq!(kept.next_expiry(), Some(t0 + Duration::from_secs(2) + idle));
        assert_eq!(kept.drain().len(), 1);
        assert_eq!((kept.blocks(), kept.bytes, kept.next_expiry()), (0, 0, None));
    }

    #[test]
    fn a_burst_keeps_a_bounded_number_of_blocks_found_by_size() {
        let t0 = Instant::now();
        let mut kept = Kept::new(1 << 30, SCRATCH_KEPT_BLOCKS, SCRATCH_IDLE);
        // 20,000 blocks returned at once (a burst of async copies), of two sizes.
        let refused = (0..20_000).filter(|&i| kept.put(vec![0u8; 4096 + (i % 2) * 4096], t0).is_some()).count();
        assert_eq!(kept.blocks(), SCRATCH_KEPT_BLOCKS, "at most the bound is kept");
        assert_eq!(refused, 20_000 - SCRATCH_KEPT_BLOCKS, "the rest are freed at once");
        assert_eq!(kept.bytes, SCRATCH_KEPT_BLOCKS / 2 * (4096 + 8192));
        assert_eq!(kept.take(8000).map(|b| b.len()), Some(8192), "the one size that fits");
        assert_eq!(kept.take(4096).map(|b| b.len()), Some(4096), "the smallest that fits");
        assert_eq!(kept.blocks(), SCRATCH_KEPT_BLOCKS - 2);
        assert_eq!(kept.expire(t0 + SCRATCH_IDLE).len(), SCRATCH_KEPT_BLOCKS - 2);
        assert_eq!((kept.blocks(), kept.bytes), (0, 0));
    }

    #[test]
    fn the_reaper_frees_idle_blocks_on_its_own() {
        let store: &'static ScratchStore =
            Box::leak(Box::new(ScratchStore::new(1 << 30, 64, Duration::from_millis(100))));
        // Before the put: the block is stamped after this, so it is freed no sooner than
        // its idle time after it, however loaded the machine. The waits' bounds only end
        // a wait for a reaper that never comes.
        let start = Instant::now();
        store.put(zeroed_bytes(4 << 20).unwrap());
        assert_eq!(store.idle_stats(), (1, 4 << 20));
        while store.idle_stats() != (0, 0) && start.elapsed() < Duration::from_secs(120) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(store.idle_stats(), (0, 0), "freed with nothing taken or returned");
        assert!(start.elapsed() >= Duration::from_millis(100));
        // It sleeps again with nothing kept, and wakes for the next block.
        std::thread::sleep(Duration::from_millis(50));
        store.put(zeroed_bytes(1 << 20).unwrap());
        let start = Instant::now();
        while store.idle_stats() != (0, 0) && start.elapsed() < Duration::from_secs(120) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(store.idle_stats(), (0, 0));
    }

    #[test]
    fn a_block_taken_and_returned_again_and_again_does_not_wake_the_reaper_each_time() {
        let store: &'static ScratchStore = Box::leak(Box::new(ScratchStore::new(1 << 30, 64, Duration::from_secs(60))));
        store.put(zeroed_bytes(1 << 16).unwrap());
        // Until the reaper has looked once: it sleeps until the block's deadline, 60 s on.
        let start = Instant::now();
        while lock(&store.kept).reaper_rounds == 0 && start.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let before = lock(&store.kept).wakes;
        for _ in 0..100 {
            let block = store.take(1 << 16).unwrap();
            store.put(block);
        }
        // (At most one more: a spurious wake-up of the reaper may find the block in use.)
        assert!(lock(&store.kept).wakes - before <= 2, "one copy after another: the reaper sleeps on");
    }

    #[test]
    fn large_copies_move_exactly_their_bytes_at_any_alignment() {
        let n = (STRING_COPY_MIN as usize) * 3 + 4099;
        let src: Vec<u8> = (0..n + 64).map(|i| (i * 31 % 253) as u8).collect();
        for (from, to, len) in [(0, 0, n), (1, 7, n - 3), (13, 0, STRING_COPY_MIN as usize)] {
            let mut dst = vec![0xAAu8; n + 128];
            // From a cache line (the string copy's case) and off one.
            let to = to + dst.as_ptr().align_offset(64);
            // SAFETY: both ranges lie inside their vectors, which outlive the copy.
            let (d, s) = unsafe {
                (
                    WriteBytes::from_raw(dst.as_mut_ptr() as u64 + to as u64, len as u64),
                    ReadBytes::from_raw(src.as_ptr() as u64 + from as u64, len as u64),
                )
            };
            host_memcpy(d, s);
            assert!(dst[to..to + len] == src[from..from + len], "the bytes moved");
            assert!(dst[..to].iter().chain(&dst[to + len..]).all(|&b| b == 0xAA), "no byte outside the range");
        }
    }

    #[test]
    fn slices_are_copied_with_or_without_workers() {
        let n = (5 << 20) | 77;
        let src: Vec<u8> = (0..n).map(|i| (i * 13 % 251) as u8).collect();
        for workers in [None, crate::host::workers::workers()] {
            let mut dst = vec![0u8; n];
            copy_slices(dst.as_mut_ptr() as u64, src.as_ptr() as u64, n as u64, 1 << 20, 3, workers);
            assert!(dst == src);
        }
    }
}
