//! Pipelined staging of copies between pageable host memory (a plain JS `ArrayBuffer`)
//! and device memory. The driver copies pageable memory through one small bounce buffer
//! with one CPU thread; staging through pinned buffers, with the host-side memcpy spread
//! over several threads and overlapped with the DMA, is several times faster.
//!
//! Shape: `lanes` lanes (one on the calling thread, the others on the persistent copy
//! workers of `host::workers`); each lane takes the next chunk no lane has taken yet, so a
//! lane whose thread gets a core late leaves its share to the others instead of holding
//! the copy up, and the caller waits for the chunks, not for lanes that took none. Each
//! lane owns two pinned buffers, each with its own stream, so one buffer's DMA overlaps
//! the memcpy into (or out of) the other. Lanes run concurrently, so the copy engine
//! always has work queued. Buffers and streams are made once per context and kept.
//!
//! Mid-size copies take the pipelined path instead (`Stager::copy_pipelined`,
//! `StagingConfig::pipelines`): one chunk per buffer, every driver call on the calling
//! thread, the copy workers only splitting each chunk's memcpy.
//!
//! A copy to the device of up to `StagingConfig::uncached_max` bytes writes the pinned
//! buffers with stores that bypass the caches (`host_memcpy_for_dma`): a DMA that reads
//! bytes still in the writing cores' caches runs at a fraction of the pinned rate.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use cudarc::driver::sys::CU_MEMHOSTALLOC_PORTABLE;

use super::driver::{ContextHandle, CurrentContext, Driver, PinnedHost, Stream};
use crate::error::{MemoryError, Result};
use crate::host::workers::{queue_jobs, run_pieces_in_groups, threads, workers, Job};
use crate::host::{host_memcpy_for_dma, host_memcpy_in_pieces, pieces_for_every_thread};
use crate::runtime::held::Held;
use crate::runtime::Address;
use crate::runtime::{ReadBytes, WriteBytes};
use crate::sync::lock;

/// Tunables, read once from the environment (for measurement: `bench/staging-sweep.js`
/// sweeps them). The defaults are the sweeps' best single setting over 1-256 MiB both
/// ways: eight lanes of chunks up to 2 MiB, mid sizes split down to 512 KiB chunks so that
/// every lane still overlaps its memcpy with a DMA, and copies of up to 8 MiB to the device
/// and 32 MiB to the host pipelined from the calling thread; staging starts at 1 MiB both
/// ways (below it the driver's own copy is as fast).
///
/// - `DPCTL_MEMORY_STAGING_THRESHOLD` (bytes; default 1 MiB): smaller copies go straight
///   to the driver; 0 turns staging off.
/// - `DPCTL_MEMORY_STAGING_CHUNK` (bytes, default 2 MiB, at least 64 KiB): the largest
///   chunk, and the size of each pinned buffer.
/// - `DPCTL_MEMORY_STAGING_MIN_CHUNK` (bytes, default 512 KiB, at least 64 KiB): the
///   smallest chunk a copy is split into.
/// - `DPCTL_MEMORY_STAGING_LANES` (default: the cores, at most 8; 1..32): concurrent lanes.
/// - `DPCTL_MEMORY_STAGING_PIPELINE_MAX` (bytes; 0: never): copies up to this size take
///   the pipelined path (`Stager::copy_pipelined`) when their chunks fit in the buffers:
///   the calling thread makes every driver call and the copy workers only split each
///   chunk's memcpy. By default copies to the host up to 32 MiB and to the device up to
///   8 MiB do, where it beat the lanes in the sweep (`SWEEP_SET=pipeline`); larger copies
///   to the device keep the lanes, each memcpy overlapping its own DMA.
/// - `DPCTL_MEMORY_STAGING_UNCACHED_MAX` (bytes; default 64 MiB; 0: never): copies to the
///   device up to this size write the pinned buffers with non-temporal stores. Up to
///   64 MiB they made the copies 1.2-1.6x faster; at 256 MiB, a copy that streams from
///   memory either way, the bench ran slower with them than before them (while a process
///   of its own ran as fast or faster), so larger copies keep the cached stores until
///   the bench says otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct StagingConfig {
    /// Copies to the device smaller than this go straight to the driver (0: never staged).
    pub to_device_threshold: u64,
    /// Copies to the host smaller than this go straight to the driver (0: never staged).
    pub to_host_threshold: u64,
    /// The largest chunk (the pinned buffers' size).
    pub chunk: usize,
    /// The smallest chunk.
    pub min_chunk: usize,
    pub lanes: usize,
    /// Copies to the device up to this size are pipelined from the calling thread (0: none).
    pub pipeline_to_device_max: u64,
    /// Copies to the host up to this size are pipelined from the calling thread (0: none).
    pub pipeline_to_host_max: u64,
    /// Copies to the device up to this size fill the pinned buffers with non-temporal
    /// stores (0: none).
    pub uncached_max: u64,
}

/// Chunks are whole multiples of this.
const CHUNK_GRAIN: usize = 64 << 10;

impl StagingConfig {
    /// The tunables, read from the environment at first use.
    pub(super) fn get() -> StagingConfig {
        static CONFIG: OnceLock<StagingConfig> = OnceLock::new();
        *CONFIG.get_or_init(|| {
            let read = |name: &str, default: u64| -> u64 {
                std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
            };
            let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as u64;
            let chunk = read("DPCTL_MEMORY_STAGING_CHUNK", 2 << 20).max(CHUNK_GRAIN as u64) as usize;
            let threshold = std::env::var("DPCTL_MEMORY_STAGING_THRESHOLD").ok().and_then(|v| v.parse().ok());
            StagingConfig {
                to_device_threshold: threshold.unwrap_or(1 << 20),
                to_host_threshold: threshold.unwrap_or(1 << 20),
                chunk,
                min_chunk: (read("DPCTL_MEMORY_STAGING_MIN_CHUNK", 512 << 10).max(CHUNK_GRAIN as u64) as usize)
                    .min(chunk),
                lanes: read("DPCTL_MEMORY_STAGING_LANES", cores.min(8)).clamp(1, 32) as usize,
                pipeline_to_device_max: read("DPCTL_MEMORY_STAGING_PIPELINE_MAX", 8 << 20),
                pipeline_to_host_max: read("DPCTL_MEMORY_STAGING_PIPELINE_MAX", 32 << 20),
                uncached_max: read("DPCTL_MEMORY_STAGING_UNCACHED_MAX", 64 << 20),
            }
        })
    }

    /// Whether a pageable copy of `nbytes` may be staged in some direction: a check that
    /// needs no pointer query, made first.
    pub(super) fn may_apply(&self, nbytes: u64) -> bool {
        [Direction::HostToDevice, Direction::DeviceToHost].into_iter().any(|d| self.applies(d, nbytes))
    }

    /// Whether a pageable copy of `nbytes` going `direction` is staged (else the driver
    /// copies it itself).
    pub(super) fn applies(&self, direction: Direction, nbytes: u64) -> bool {
        let threshold = match direction {
            Direction::HostToDevice => self.to_device_threshold,
            Direction::DeviceToHost => self.to_host_threshold,
        };
        threshold != 0 && self.lanes > 1 && nbytes >= threshold
    }

    /// The chunk of a pipelined copy of `nbytes`: about a quarter of it, so that the DMA
    /// of one chunk overlaps the memcpy of the next, within `min_chunk..=chunk`.
    pub(super) fn pipeline_chunk(&self, nbytes: usize) -> usize {
        nbytes.div_ceil(4).div_ceil(CHUNK_GRAIN).saturating_mul(CHUNK_GRAIN).clamp(self.min_chunk, self.chunk)
    }

    /// Whether a staged copy of `nbytes` going `direction` is pipelined from the calling
    /// thread: small enough, and each of its chunks with a buffer of its own (`buffers`).
    pub(super) fn pipelines(&self, direction: Direction, nbytes: usize, buffers: usize) -> bool {
        let max = match direction {
            Direction::HostToDevice => self.pipeline_to_device_max,
            Direction::DeviceToHost => self.pipeline_to_host_max,
        };
        nbytes as u64 <= max && nbytes.div_ceil(self.pipeline_chunk(nbytes)) <= buffers
    }

    /// Whether a copy of `nbytes` to the device fills the pinned buffers with
    /// non-temporal stores.
    pub(super) fn uncached(&self, nbytes: usize) -> bool {
        nbytes as u64 <= self.uncached_max
    }

    /// The chunk a copy of `nbytes` is split into: small enough that each lane gets two
    /// (its memcpy of one overlaps the DMA of the other), within `min_chunk..=chunk`.
    pub(super) fn chunk_for(&self, nbytes: usize) -> usize {
        let per_two_rounds = nbytes.div_ceil(2 * self.lanes.max(1));
        let grained = per_two_rounds.div_ceil(CHUNK_GRAIN).saturating_mul(CHUNK_GRAIN);
        grained.clamp(self.min_chunk, self.chunk)
    }
}

/// Which way a staged copy goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    HostToDevice,
    DeviceToHost,
}

/// One pinned buffer and the stream its copies run on. The stream is declared first, so
/// it is destroyed before the buffer is freed.
struct PinnedBuffer {
    stream: Stream,
    host: PinnedHost,
}

/// One context's staging buffers, serving one copy at a time (the context's staging
/// lock): each lane of a copy touches only its own two buffers and streams; a pipelined
/// copy uses as many as it has chunks, from its calling thread.
pub(super) struct Stager {
    driver: &'static Driver,
    context: ContextHandle,
    config: StagingConfig,
    /// `2 * lanes` buffers: lane `t` uses `2t` and `2t + 1`.
    buffers: Vec<PinnedBuffer>,
    /// Where the buffers are counted (the device's staging figures), from made to freed.
    held: Arc<Held>,
}

impl Drop for Stager {
    fn drop(&mut self) {
        self.held.freed(self.bytes(), self.buffers.len() as u64);
    }
}

/// One copy, shared by its lanes, with raw addresses so it can cross threads: the next
/// chunk to take, and how many chunks are done (each counted when its lane has
/// synchronised its last transfer, or given up on it).
struct Chunks {
    chunk: usize,
    direction: Direction,
    host: usize,
    device: Address,
    nbytes: usize,
    total: usize,
    next: AtomicUsize,
    done: Mutex<usize>,
    all_done: Condvar,
    errors: Mutex<Vec<MemoryError>>,
}

impl Chunks {
    /// `(offset, length)` of the next chunk no lane has taken.
    fn take(&self) -> Option<(usize, usize)> {
        let index = self.next.fetch_add(1, Ordering::Relaxed);
        (index < self.total).then(|| {
            let offset = index * self.chunk;
            (offset, self.chunk.min(self.nbytes - offset))
        })
    }

    /// Takes every chunk left and counts it done without copying it (the copy failed).
    fn give_up_the_rest(&self) {
        let mut left = 0;
        while self.take().is_some() {
            left += 1;
        }
        self.count_done(left);
    }

    fn count_done(&self, chunks: usize) {
        if chunks == 0 {
            return;
        }
        let mut done = lock(&self.done);
        *done += chunks;
        if *done >= self.total {
            self.all_done.notify_all();
        }
    }
}

/// The chunks one lane took, counted done when the lane ends, however it ends (a
/// panicking lane included: the caller never waits forever).
struct Taken<'a> {
    chunks: &'a Chunks,
    count: usize,
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        self.chunks.count_done(self.count);
    }
}

impl Stager {
    /// Makes the buffers and streams in the current context, counted in `held`.
    pub(super) fn new(current: &CurrentContext, config: StagingConfig, held: &Arc<Held>) -> Result<Stager> {
        let mut buffers = Vec::with_capacity(config.lanes * 2);
        for _ in 0..config.lanes * 2 {
            let host = PinnedHost::new(current, config.chunk, CU_MEMHOSTALLOC_PORTABLE)
                .map_err(|e| e.during("staging buffer"))?;
            let stream = current.stream_create().map_err(|e| e.during("staging"))?;
            buffers.push(PinnedBuffer { stream, host });
        }
        let stager =
            Stager { driver: current.driver(), context: current.context(), config, buffers, held: held.clone() };
        stager.held.made(stager.bytes(), stager.buffers.len() as u64);
        Ok(stager)
    }

    /// Bytes of pinned memory the buffers hold.
    pub(super) fn bytes(&self) -> u64 {
        (self.config.chunk as u64).saturating_mul(self.buffers.len() as u64)
    }

    /// Copies `nbytes` between pageable `host` and `device` memory of this context, one
    /// lane on this thread and the others on the persistent copy workers. The caller
    /// holds the context's staging lock (the buffers serve one copy at a time).
    ///
    /// # Safety
    /// `host..host + nbytes` (host memory) and `device..device + nbytes` (device memory of
    /// this context) are valid, for writes on the destination side, for the whole call.
    pub(super) unsafe fn copy(
        self: &Arc<Self>,
        direction: Direction,
        host: usize,
        device: Address,
        nbytes: usize,
    ) -> Result<()> {
        if self.config.pipelines(direction, nbytes, self.buffers.len()) {
            // SAFETY: this function's contract is the pipelined copy's.
            return unsafe { self.copy_pipelined(direction, host, device, nbytes) };
        }
        let lanes = self.buffers.len() / 2;
        let chunk = self.config.chunk_for(nbytes);
        let total = nbytes.div_ceil(chunk);
        let used = lanes.min(total).max(1);
        let chunks = Arc::new(Chunks {
            chunk,
            direction,
            host,
            device,
            nbytes,
            total,
            next: AtomicUsize::new(0),
            done: Mutex::new(0),
            all_done: Condvar::new(),
            errors: Mutex::new(Vec::new()),
        });
        let helpers: Vec<Job> = (1..used)
            .map(|lane| {
                let (stager, chunks) = (self.clone(), chunks.clone());
                Box::new(move || stager.run_lane(lane, &chunks)) as Job
            })
            .collect();
        // Queued, not awaited: a helper that starts after the last chunk was taken takes
        // none and touches nothing.
        queue_jobs(helpers);
        // Lane 0 runs here and takes chunks until none is left, so every chunk is taken by
        // a lane that runs. A panic here must not end the wait early (other lanes may
        // still be copying into the caller's memory): it unwinds after the wait.
        let here = catch_unwind(AssertUnwindSafe(|| self.run_lane(0, &chunks)));
        if here.is_err() {
            chunks.give_up_the_rest();
        }
        {
            let mut done = lock(&chunks.done);
            while *done < total {
                done = chunks.all_done.wait(done).unwrap_or_else(|poisoned| poisoned.into_inner());
            }
        }
        if let Err(payload) = here {
            std::panic::resume_unwind(payload);
        }
        let errors = std::mem::take(&mut *lock(&chunks.errors));
        match errors.into_iter().next() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// A mid-size copy: chunks of `pipeline_chunk`, each through a pinned buffer of its
    /// own, with every driver call made on this thread. To the device, the copy workers
    /// copy the chunks into their buffers and each chunk's DMA is queued as soon as it is
    /// in, so it overlaps the next chunks' memcpy (`fill_and_queue`); to the host, every DMA
    /// is queued first, each on its buffer's stream, and each chunk copied out (its memcpy
    /// split over the copy workers) once its stream is done. Every queued DMA is complete
    /// when this returns, also on failure.
    ///
    /// # Safety
    /// As [`Stager::copy`]; the chunks fit in the buffers (`StagingConfig::pipelines`).
    unsafe fn copy_pipelined(&self, direction: Direction, host: usize, device: Address, nbytes: usize) -> Result<()> {
        let current = self.driver.push(self.context)?;
        let chunk = self.config.pipeline_chunk(nbytes);
        let count = nbytes.div_ceil(chunk);
        if count > self.buffers.len() {
            // `copy` checks this (`StagingConfig::pipelines`); never a short copy if not.
            return Err(MemoryError::CudaDriver {
                message: format!(
                    "a pipelined copy of {nbytes} bytes needs {count} staging buffers; there are {}",
                    self.buffers.len()
                ),
            });
        }
        // Buffers with a DMA queued, and of those (to the host) the first ones already waited for.
        let (queued, waited) = (Cell::new(0usize), Cell::new(0usize));
        // Caught, so that a panicking piece of a memcpy still leaves no DMA running (below).
        let run = catch_unwind(AssertUnwindSafe(|| -> Result<()> {
            match direction {
                Direction::HostToDevice => {
                    // SAFETY: the caller vouches for the ranges; every DMA is complete when
                    // this returns (below).
                    unsafe { self.fill_and_queue(&current, host, device, nbytes, chunk, &queued) }?;
                }
                Direction::DeviceToHost => {
                    let pieces = pieces_for_every_thread(chunk as u64);
                    let chunks: Vec<(usize, usize)> =
                        (0..count).map(|i| (i * chunk, chunk.min(nbytes - i * chunk))).collect();
                    for (buffer, &(offset, len)) in self.buffers.iter().zip(&chunks) {
                        // SAFETY: as above; nothing reads the buffer until its stream is
                        // synchronised.
                        unsafe { current.memcpy_async(buffer.address(), device + offset as u64, len, &buffer.stream) }
                            .map_err(|e| e.during("staged"))?;
                        queued.set(queued.get() + 1);
                    }
                    for (buffer, &(offset, len)) in self.buffers.iter().zip(&chunks) {
                        sync(&current, buffer)?;
                        waited.set(waited.get() + 1);
                        // SAFETY: the DMA into the buffer is complete; the caller vouches for
                        // the host range.
                        let (to, from) = unsafe {
                            (
                                WriteBytes::from_raw((host + offset) as u64, len as u64),
                                ReadBytes::from_raw(buffer.address(), len as u64),
                            )
                        };
                        host_memcpy_in_pieces(to, from, pieces);
                    }
                }
            }
            Ok(())
        }));
        // No DMA may outlive the call: the caller reuses its memory, the next copy the buffers.
        // Every stream with a DMA not yet waited for is waited for, also after one wait
        // failed: to the device, the first buffer's, which carries every chunk's DMA.
        let unwaited = match direction {
            Direction::HostToDevice => &self.buffers[..queued.get().min(1)],
            Direction::DeviceToHost => &self.buffers[waited.get()..queued.get()],
        };
        let mut synced = Ok(());
        for buffer in unwaited {
            let wait = sync(&current, buffer);
            if synced.is_ok() {
                synced = wait;
            }
        }
        match run {
            Ok(result) => result.and(synced),
            Err(payload) => std::panic::resume_unwind(payload),
        }
    }

    /// To the device: copies each chunk of the host range into a buffer of its own, the
    /// memcpy spread over every copy thread in one hand-off for the whole copy, and queues
    /// each chunk's DMA as soon as its last piece is in, while the threads go on with the
    /// next chunks. Every DMA goes on the first buffer's stream (one engine carries them in
    /// turn either way; the caller then waits for one stream); `queued` counts them.
    ///
    /// # Safety
    /// As [`Stager::copy`]; there are `nbytes.div_ceil(chunk)` buffers of `chunk` bytes.
    unsafe fn fill_and_queue(
        &self,
        current: &CurrentContext,
        host: usize,
        device: Address,
        nbytes: usize,
        chunk: usize,
        queued: &Cell<usize>,
    ) -> Result<()> {
        let piece = pieces_for_every_thread(chunk as u64) as usize;
        let per_chunk = chunk.div_ceil(piece);
        let count = nbytes.div_ceil(chunk);
        // Shared by the pieces (on the copy threads) and the DMAs (here).
        let buffers: Arc<[Address]> = self.buffers[..count].iter().map(PinnedBuffer::address).collect();
        let targets = buffers.clone();
        let uncached = self.config.uncached(nbytes);
        let fill = move |index: usize| {
            let (at, within) = (index / per_chunk, index % per_chunk * piece);
            let start = at * chunk + within;
            let end = (start + piece).min((at + 1) * chunk).min(nbytes);
            if start < end {
                // SAFETY: a piece of the caller's host range and of chunk `at`'s buffer
                // (`within + piece <= chunk` bytes into it), both valid until every piece
                // has run: `run_pieces_in_groups` returns only then.
                let (to, from) = unsafe {
                    (
                        WriteBytes::from_raw(targets[at] + within as u64, (end - start) as u64),
                        ReadBytes::from_raw((host + start) as u64, (end - start) as u64),
                    )
                };
                fill_buffer(to, from, uncached);
            }
        };
        let stream = &self.buffers[0].stream;
        let mut failed = None;
        let queue_dma = |at: usize| {
            if failed.is_some() {
                return;
            }
            let (offset, len) = (at * chunk, chunk.min(nbytes - at * chunk));
            // SAFETY: every piece of chunk `at` is in its buffer, which holds `len` bytes; the
            // caller vouches for the device range; both stay valid until the stream is
            // synchronised, before `copy_pipelined` returns.
            match unsafe { current.memcpy_async(device + offset as u64, buffers[at], len, stream) } {
                Ok(()) => queued.set(queued.get() + 1),
                Err(error) => failed = Some(error.during("staged")),
            }
        };
        run_pieces_in_groups(workers(), threads() - 1, count * per_chunk, per_chunk, fill, queue_dma);
        failed.map_or(Ok(()), Err)
    }

    /// Lane `lane`: takes chunks until none is left, through its two buffers.
    /// A lane that fails takes the chunks left and counts them done (failed) too, so
    /// the caller, whose lane always runs, never waits for chunks no lane will take.
    fn run_lane(&self, lane: usize, chunks: &Chunks) {
        let Some(first) = chunks.take() else { return };
        let mut taken = Taken { chunks, count: 1 };
        if let Err(error) = self.lane_chunks(lane, chunks, first, &mut taken) {
            lock(&chunks.errors).push(error);
            drop(taken);
            chunks.give_up_the_rest();
        }
    }

    fn lane_chunks(&self, lane: usize, chunks: &Chunks, first: (usize, usize), taken: &mut Taken<'_>) -> Result<()> {
        let current = self.driver.push(self.context)?;
        let buffers = [&self.buffers[2 * lane], &self.buffers[2 * lane + 1]];
        let mut pending: [Option<(usize, usize)>; 2] = [None, None];
        let result = (|| -> Result<()> {
            let mut next = Some(first);
            let mut n = 0usize;
            while let Some((offset, len)) = next {
                let slot = n % 2;
                let buffer = buffers[slot];
                // The buffer's previous transfer must be complete before it is reused.
                sync(&current, buffer)?;
                if let Some((prev_offset, prev_len)) = pending[slot].take() {
                    if chunks.direction == Direction::DeviceToHost {
                        self.drain(buffer, chunks.host + prev_offset, prev_len);
                    }
                }
                match chunks.direction {
                    Direction::HostToDevice => {
                        // SAFETY: the caller vouches for `host..host+nbytes`; the pinned
                        // buffer holds `chunk >= len` bytes and its last DMA is complete.
                        let (to, from) = unsafe {
                            (
                                WriteBytes::from_raw(buffer.address(), len as u64),
                                ReadBytes::from_raw((chunks.host + offset) as u64, len as u64),
                            )
                        };
                        fill_buffer(to, from, self.config.uncached(chunks.nbytes));
                        // SAFETY: the caller vouches for the device range; the pinned buffer
                        // holds `len` bytes; both stay valid until the stream is synchronised
                        // (below, or at the buffer's next use), before the chunk counts done.
                        unsafe {
                            current.memcpy_async(chunks.device + offset as u64, buffer.address(), len, &buffer.stream)
                        }
                        .map_err(|e| e.during("staged"))?;
                    }
                    Direction::DeviceToHost => {
                        // SAFETY: as above; nothing reads the pinned buffer until the stream
                        // is synchronised.
                        unsafe {
                            current.memcpy_async(buffer.address(), chunks.device + offset as u64, len, &buffer.stream)
                        }
                        .map_err(|e| e.during("staged"))?;
                    }
                }
                pending[slot] = Some((offset, len));
                n += 1;
                next = chunks.take();
                if next.is_some() {
                    taken.count += 1;
                }
            }
            for (slot, buffer) in buffers.iter().enumerate() {
                sync(&current, buffer)?;
                if let Some((offset, len)) = pending[slot].take() {
                    if chunks.direction == Direction::DeviceToHost {
                        self.drain(buffer, chunks.host + offset, len);
                    }
                }
            }
            Ok(())
        })();
        if result.is_err() {
            // Leave no DMA running into or out of memory the caller may reuse; the chunks
            // this lane took count done (failed) only after this.
            for buffer in buffers {
                let _ = sync(&current, buffer);
            }
        }
        result
    }

    fn drain(&self, buffer: &PinnedBuffer, host: usize, len: usize) {
        // SAFETY: the DMA into the buffer is complete (its stream was synchronised); the
        // caller vouches for the host range.
        unsafe { std::ptr::copy_nonoverlapping(buffer.host.as_ptr(), host as *mut u8, len) };
    }
}

impl PinnedBuffer {
    fn address(&self) -> Address {
        self.host.as_ptr() as Address
    }
}

/// Copies `from` into a pinned buffer (`to`) that a DMA reads next: with non-temporal
/// stores when `uncached`, else with the C library's memcpy.
fn fill_buffer(to: WriteBytes<'_>, from: ReadBytes<'_>, uncached: bool) {
    if uncached {
        host_memcpy_for_dma(to, from);
    } else {
        // SAFETY: both ranges are valid for their lengths (their constructors' contract);
        // a pinned buffer never overlaps the caller's pageable memory.
        unsafe {
            std::ptr::copy_nonoverlapping(
                from.address() as *const u8,
                to.address() as *mut u8,
                from.len().min(to.len()) as usize,
            )
        };
    }
}

/// Waits for the buffer's stream.
fn sync(current: &CurrentContext, buffer: &PinnedBuffer) -> Result<()> {
    current.synchronize(&buffer.stream).map_err(|e| e.during("staged"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_applies_only_above_the_threshold_of_its_direction_with_several_lanes() {
        let config = StagingConfig {
            to_device_threshold: 8 << 20,
            to_host_threshold: 4 << 20,
            chunk: 4 << 20,
            min_chunk: 256 << 10,
            lanes: 8,
            pipeline_to_device_max: 0,
            pipeline_to_host_max: 16 << 20,
            uncached_max: 64 << 20,
        };
        let (to_device, to_host) = (Direction::HostToDevice, Direction::DeviceToHost);
        assert!(!config.applies(to_device, (8 << 20) - 1));
        assert!(config.applies(to_device, 8 << 20));
        assert!(config.applies(to_host, 4 << 20) && !config.applies(to_host, (4 << 20) - 1));
        assert!(config.may_apply(4 << 20) && !config.may_apply((4 << 20) - 1));
        assert!(!StagingConfig { lanes: 1, ..config }.may_apply(1 << 30));
        let off = StagingConfig { to_device_threshold: 0, to_host_threshold: 0, ..config };
        assert!(!off.may_apply(1 << 30));
    }

    #[test]
    fn copies_to_the_device_up_to_the_bound_fill_the_buffers_uncached() {
        let config = eight_lanes(2 << 20, 512 << 10);
        assert!(config.uncached(1 << 20) && config.uncached(64 << 20));
        assert!(!config.uncached((64 << 20) + 1) && !config.uncached(256 << 20));
        assert!(!StagingConfig { uncached_max: 0, ..config }.uncached(1 << 20));
    }

    /// Eight lanes of `chunk`-byte buffers, staging from 1 MiB, copies to the host
    /// pipelined up to 16 MiB.
    fn eight_lanes(chunk: usize, min_chunk: usize) -> StagingConfig {
        StagingConfig {
            to_device_threshold: 1 << 20,
            to_host_threshold: 1 << 20,
            chunk,
            min_chunk,
            lanes: 8,
            pipeline_to_device_max: 0,
            pipeline_to_host_max: 16 << 20,
            uncached_max: 64 << 20,
        }
    }

    #[test]
    fn mid_sizes_are_pipelined_in_about_four_chunks_that_fit_the_buffers() {
        let config = eight_lanes(2 << 20, 512 << 10);
        assert_eq!(config.pipeline_chunk(1 << 20), 512 << 10);
        assert_eq!(config.pipeline_chunk(4 << 20), 1 << 20);
        assert_eq!(config.pipeline_chunk(16 << 20), 2 << 20);
        let (to_device, to_host) = (Direction::HostToDevice, Direction::DeviceToHost);
        assert!(config.pipelines(to_host, 1 << 20, 16) && config.pipelines(to_host, 16 << 20, 16));
        assert!(!config.pipelines(to_host, (16 << 20) + 1, 16));
        assert!(!config.pipelines(to_device, 1 << 20, 16));
        assert!(StagingConfig { pipeline_to_device_max: 4 << 20, ..config }.pipelines(to_device, 4 << 20, 16));
        // Chunks that would not each have a buffer of their own go through the lanes.
        assert!(!config.pipelines(to_host, 16 << 20, 4));
        for n in [(1 << 20) + 1, 3 << 20, (16 << 20) - 1] {
            let chunk = config.pipeline_chunk(n);
            assert_eq!(chunk % CHUNK_GRAIN, 0);
            assert!(n.div_ceil(chunk) <= 4 || chunk == config.chunk, "{n}: {chunk}");
        }
    }

    #[test]
    fn chunks_give_every_lane_two_within_the_bounds() {
        let config = eight_lanes(4 << 20, 256 << 10);
        // 16 MiB over 8 lanes: two 1 MiB chunks each.
        assert_eq!(config.chunk_for(16 << 20), 1 << 20);
        // Large copies use the largest chunk, small ones the smallest.
        assert_eq!(config.chunk_for(256 << 20), 4 << 20);
        assert_eq!(config.chunk_for(1 << 20), 256 << 10);
        // Odd sizes round up to the grain; never past the buffers.
        assert_eq!(config.chunk_for((16 << 20) + 1) % CHUNK_GRAIN, 0);
        for n in [1usize, 4095, 3 << 20, 1 << 30] {
            let chunk = config.chunk_for(n);
            assert!((config.min_chunk..=config.chunk).contains(&chunk), "{n}: {chunk}");
        }
    }
}
