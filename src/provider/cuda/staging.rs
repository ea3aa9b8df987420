//! Pipelined staging of copies between pageable host memory (a plain JS `ArrayBuffer`)
//! and device memory. The driver copies pageable memory through one small bounce buffer
//! with one CPU thread (7-8 GB/s host to device on the H200 here); staging through pinned
//! buffers, with the host-side memcpy spread over several threads and overlapped with the
//! DMA, reached 47.6 / 39.5 GB/s in the measurement in `shared/anchors`.
//!
//! Shape: `lanes` lanes (one on the calling thread, the others on the persistent copy
//! workers of `provider::workers`); lane `t` copies chunks `t, t + lanes, ...`. Each lane
//! owns two pinned buffers, each with its own stream, so one buffer's DMA overlaps the
//! memcpy into (or out of) the other. Lanes run concurrently, so the copy engine always
//! has work queued. Buffers and streams are made once per context and kept.

use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys::{CUstream, CUstream_flags, CU_MEMHOSTALLOC_PORTABLE};

use super::driver::{CurrentContext, Driver, CUDA_SUCCESS};
use super::CtxHandle;
use crate::error::{MemoryError, Result};
use crate::host::workers::{run_all, workers, Job};
use crate::runtime::Address;
use crate::sync::lock;

/// Tunables, read once from the environment (for measurement). The defaults come from
/// `bench/staging-sweep.js` on the H200 machine: a direct copy wins up to 8 MiB (15.9 vs
/// 15.1 GB/s host to device), they tie at 12 MiB, staging wins from 16 MiB (17.2 vs 16.4;
/// 32.5 vs 14.0 at 64 MiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct StagingConfig {
    /// Copies smaller than this go straight to the driver.
    pub threshold: u64,
    pub chunk: usize,
    pub lanes: usize,
}

impl StagingConfig {
    pub(super) fn get() -> StagingConfig {
        static CONFIG: OnceLock<StagingConfig> = OnceLock::new();
        *CONFIG.get_or_init(|| {
            let read = |name: &str, default: u64| -> u64 {
                std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
            };
            let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as u64;
            StagingConfig {
                // 0 turns staging off.
                threshold: read("DPCTL_MEMORY_STAGING_THRESHOLD", 12 << 20),
                chunk: read("DPCTL_MEMORY_STAGING_CHUNK", 4 << 20).max(64 << 10) as usize,
                lanes: read("DPCTL_MEMORY_STAGING_LANES", cores.min(8)).clamp(1, 32) as usize,
            }
        })
    }

    pub(super) fn applies(&self, nbytes: u64) -> bool {
        self.threshold != 0 && self.lanes > 1 && nbytes >= self.threshold
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    HostToDevice,
    DeviceToHost,
}

struct PinnedBuffer {
    ptr: *mut u8,
    stream: CUstream,
}

/// One context's staging buffers.
pub(super) struct Stager {
    driver: &'static Driver,
    context: CtxHandle,
    chunk: usize,
    /// `2 * lanes` buffers: lane `t` uses `2t` and `2t + 1`.
    buffers: Vec<PinnedBuffer>,
}

// SAFETY: the pinned pointers and streams are process-wide driver objects usable from any
// thread with the context current; the Stager is only used under its context's mutex.
unsafe impl Send for Stager {}
// SAFETY: during `copy` the lanes share the Stager read-only, and each lane touches only
// its own two buffers and streams, so no buffer is used by two threads at once.
unsafe impl Sync for Stager {}

/// The part of a copy one lane does, with raw addresses so it can cross threads.
#[derive(Clone, Copy)]
struct LaneJob {
    lane: usize,
    lanes: usize,
    direction: Direction,
    host: usize,
    device: Address,
    nbytes: usize,
}

impl Stager {
    /// Makes the buffers and streams. The context must be current on this thread.
    pub(super) fn new(driver: &'static Driver, context: CtxHandle, config: StagingConfig) -> Result<Stager> {
        let mut stager = Stager { driver, context, chunk: config.chunk, buffers: Vec::new() };
        for _ in 0..config.lanes * 2 {
            let mut ptr: *mut c_void = std::ptr::null_mut();
            // SAFETY: valid out-pointer; the context is current.
            let r = unsafe { (driver.cuMemHostAlloc)(&mut ptr, config.chunk, CU_MEMHOSTALLOC_PORTABLE) };
            driver.check("cuMemHostAlloc (staging buffer)", r)?;
            let mut stream: CUstream = std::ptr::null_mut();
            // SAFETY: valid out-pointer and flags; the context is current.
            let r = unsafe { (driver.cuStreamCreate)(&mut stream, CUstream_flags::CU_STREAM_NON_BLOCKING as u32) };
            if r != CUDA_SUCCESS {
                // SAFETY: frees the buffer just allocated, which nothing else holds.
                let _ = unsafe { (driver.cuMemFreeHost)(ptr) };
                return Err(MemoryError::CudaDriver(driver.failure("cuStreamCreate (staging)", r)));
            }
            stager.buffers.push(PinnedBuffer { ptr: ptr.cast(), stream });
        }
        Ok(stager)
    }

    /// Bytes of pinned memory the buffers hold.
    pub(super) fn bytes(&self) -> u64 {
        (self.chunk as u64).saturating_mul(self.buffers.len() as u64)
    }

    /// Copies `nbytes` between pageable `host` and `device` memory of this context, one
    /// lane on this thread and the others on the persistent copy workers. The caller
    /// guarantees both ranges are valid for the whole call, and holds the context's
    /// staging lock (the buffers serve one copy at a time).
    pub(super) fn copy(
        self: &Arc<Self>,
        direction: Direction,
        host: usize,
        device: Address,
        nbytes: usize,
    ) -> Result<()> {
        let lanes = self.buffers.len() / 2;
        let used = lanes.min(nbytes.div_ceil(self.chunk)).max(1);
        let results: Arc<Mutex<Vec<Result<()>>>> = Arc::new(Mutex::new(Vec::with_capacity(used)));
        let jobs: Vec<Job> = (0..used)
            .map(|lane| {
                let job = LaneJob { lane, lanes: used, direction, host, device, nbytes };
                let (stager, results) = (self.clone(), results.clone());
                Box::new(move || {
                    let result = stager.run_lane(job);
                    lock(&results).push(result);
                }) as Job
            })
            .collect();
        run_all(workers(), jobs);
        let results = std::mem::take(&mut *lock(&results));
        if results.len() != used {
            // Only a panicking lane records nothing; no lane is known to panic.
            return Err(MemoryError::CudaDriver("a staging lane did not finish".into()));
        }
        results.into_iter().collect()
    }

    fn run_lane(&self, job: LaneJob) -> Result<()> {
        let _current = CurrentContext::push(self.driver, self.context.0)?;
        let buffers = [&self.buffers[2 * job.lane], &self.buffers[2 * job.lane + 1]];
        // Chunks of this lane: (offset, length).
        let chunks = (job.lane..)
            .step_by(job.lanes)
            .map(|i| i * self.chunk)
            .take_while(|&offset| offset < job.nbytes)
            .map(|offset| (offset, self.chunk.min(job.nbytes - offset)));
        let mut pending: [Option<(usize, usize)>; 2] = [None, None];
        let result = (|| -> Result<()> {
            for (n, (offset, len)) in chunks.enumerate() {
                let slot = n % 2;
                let buffer = buffers[slot];
                // The buffer's previous transfer must be complete before it is reused.
                self.sync(buffer.stream)?;
                if let Some((prev_offset, prev_len)) = pending[slot].take() {
                    if job.direction == Direction::DeviceToHost {
                        self.drain(buffer, job.host + prev_offset, prev_len);
                    }
                }
                match job.direction {
                    Direction::HostToDevice => {
                        // SAFETY: the caller vouches for `host..host+nbytes`; the pinned
                        // buffer holds `chunk >= len` bytes and its last DMA is complete.
                        unsafe { std::ptr::copy_nonoverlapping((job.host + offset) as *const u8, buffer.ptr, len) };
                        self.enqueue(job.device + offset as u64, buffer.ptr as Address, len, buffer.stream)?;
                    }
                    Direction::DeviceToHost => {
                        self.enqueue(buffer.ptr as Address, job.device + offset as u64, len, buffer.stream)?;
                    }
                }
                pending[slot] = Some((offset, len));
            }
            for (slot, buffer) in buffers.iter().enumerate() {
                self.sync(buffer.stream)?;
                if let Some((offset, len)) = pending[slot].take() {
                    if job.direction == Direction::DeviceToHost {
                        self.drain(buffer, job.host + offset, len);
                    }
                }
            }
            Ok(())
        })();
        if result.is_err() {
            // Leave no DMA running into or out of memory the caller may reuse.
            for buffer in buffers {
                let _ = self.sync(buffer.stream);
            }
        }
        result
    }

    fn drain(&self, buffer: &PinnedBuffer, host: usize, len: usize) {
        // SAFETY: the DMA into the buffer is complete (its stream was synchronised); the
        // caller vouches for the host range.
        unsafe { std::ptr::copy_nonoverlapping(buffer.ptr, host as *mut u8, len) };
    }

    fn enqueue(&self, dst: Address, src: Address, len: usize, stream: CUstream) -> Result<()> {
        // SAFETY: both ranges are valid for `len` bytes (pinned buffer and the caller's
        // device range) until the stream is synchronised.
        let r = unsafe { (self.driver.cuMemcpyAsync)(dst, src, len, stream) };
        self.driver.check("cuMemcpyAsync (staged)", r)
    }

    fn sync(&self, stream: CUstream) -> Result<()> {
        // SAFETY: a live stream of the current context.
        let r = unsafe { (self.driver.cuStreamSynchronize)(stream) };
        self.driver.check("cuStreamSynchronize (staged)", r)
    }
}

impl Drop for Stager {
    fn drop(&mut self) {
        if let Ok(_current) = CurrentContext::push(self.driver, self.context.0) {
            for buffer in self.buffers.drain(..) {
                // SAFETY: each stream and buffer was made by `new` and is released once;
                // nothing is queued (every copy synchronises before returning).
                unsafe {
                    let _ = (self.driver.cuStreamDestroy)(buffer.stream);
                    let _ = (self.driver.cuMemFreeHost)(buffer.ptr.cast());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_applies_only_above_the_threshold_with_several_lanes() {
        let config = StagingConfig { threshold: 8 << 20, chunk: 4 << 20, lanes: 8 };
        assert!(!config.applies((8 << 20) - 1));
        assert!(config.applies(8 << 20));
        assert!(!StagingConfig { lanes: 1, ..config }.applies(1 << 30));
        assert!(!StagingConfig { threshold: 0, ..config }.applies(1 << 30));
    }
}
