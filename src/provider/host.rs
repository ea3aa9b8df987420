//! Plain CPU access to host-accessible memory: host memory and USM host or shared
//! allocations, which the USM model lets the host read and write directly.

use std::sync::Mutex;

use crate::provider::workers::{run_all, Workers};
use crate::sync::lock;
use crate::provider::Address;

/// Copies `nbytes` from `src` to `dst` with the CPU. Same contract as `Queue::memcpy`:
/// the caller guarantees both ranges are valid, host-accessible, and not in use by a
/// device while the copy runs (every operation of this library has completed when it
/// returns). The ranges may overlap.
pub(crate) fn host_memcpy(dst: Address, src: Address, nbytes: u64) {
    if nbytes == 0 || dst == src {
        return;
    }
    // SAFETY: the caller's guarantee above; `copy` (memmove) tolerates overlap, as a copy
    // from a memory object into its own `buffer` would have.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, nbytes as usize) };
}

/// Fills `nbytes` at `dst` with `value` with the CPU. Same contract as `host_memcpy`.
pub(crate) fn host_memset(dst: Address, value: u8, nbytes: u64) {
    if nbytes == 0 {
        return;
    }
    // SAFETY: the caller's guarantee that `dst..dst+nbytes` is valid host-accessible memory.
    unsafe { std::ptr::write_bytes(dst as *mut u8, value, nbytes as usize) };
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
pub(crate) struct Scratch(Vec<u8>);

/// Freed scratch blocks kept for reuse, and how many bytes they may hold in all.
static SCRATCH: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
const SCRATCH_KEPT_MAX: usize = 1 << 30;

impl Scratch {
    /// `len` bytes of scratch memory, or `None` when there is no such memory.
    pub(crate) fn new(len: usize) -> Option<Scratch> {
        let reused = {
            let mut kept = lock(&SCRATCH);
            let fit = kept.iter().position(|block| block.capacity() >= len && block.capacity() <= len.saturating_mul(2));
            fit.map(|index| kept.swap_remove(index))
        };
        let mut block = match reused {
            Some(block) => block,
            None => zeroed_bytes(len)?,
        };
        block.truncate(len);
        // A reused block is at least `len` long: its bytes up to its capacity are initialised.
        if block.len() < len {
            block = zeroed_bytes(len)?;
        }
        Some(Scratch(block))
    }

    /// A copy of `src` (over several threads when large).
    pub(crate) fn copy_of(src: &[u8]) -> Option<Scratch> {
        let mut scratch = Scratch::new(src.len())?;
        host_memcpy_parallel(scratch.0.as_mut_ptr() as Address, src.as_ptr() as Address, src.len() as u64);
        Some(scratch)
    }
}

impl std::ops::Deref for Scratch {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl std::ops::DerefMut for Scratch {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let block = std::mem::take(&mut self.0);
        let mut kept = lock(&SCRATCH);
        let held: usize = kept.iter().map(Vec::capacity).sum();
        if held + block.capacity() <= SCRATCH_KEPT_MAX {
            kept.push(block);
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
/// runtime does with its own memcpy (one core moves about 9-10 GB/s here). Overlapping
/// ranges are copied by one thread, as `memmove`.
pub(crate) fn host_memcpy_parallel(dst: Address, src: Address, nbytes: u64) {
    let threads = copy_threads().min(nbytes / PER_THREAD_MIN).max(1);
    let overlap = dst < src.saturating_add(nbytes) && src < dst.saturating_add(nbytes);
    if nbytes < PARALLEL_MIN || threads == 1 || overlap {
        host_memcpy(dst, src, nbytes);
        return;
    }
    // Slices on 4 KiB boundaries, so threads never share a page.
    let slice = nbytes.div_ceil(threads).next_multiple_of(4096);
    copy_slices(dst, src, nbytes, slice, crate::provider::workers::workers());
}

/// Copies `slice`-sized pieces of a non-overlapping range, the first on this thread and
/// the others on `workers` (on this thread too where there are none).
fn copy_slices(dst: Address, src: Address, nbytes: u64, slice: u64, workers: Option<&Workers>) {
    let jobs = (0..nbytes)
        .step_by(slice as usize)
        .map(|start| {
            let len = slice.min(nbytes - start);
            Box::new(move || host_memcpy(dst + start, src + start, len)) as crate::provider::workers::Job
        })
        .collect();
    run_all(workers, jobs);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_copy_moves_every_byte_and_overlap_is_a_memmove() {
        let n = 9 << 20 | 123;
        let src: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
        let mut dst = vec![0u8; n];
        host_memcpy_parallel(dst.as_mut_ptr() as Address, src.as_ptr() as Address, n as u64);
        assert!(dst == src);
        // Shift the buffer right by 1000 bytes within itself.
        let mut buf = src.clone();
        let base = buf.as_mut_ptr() as Address;
        host_memcpy_parallel(base + 1000, base, (n - 1000) as u64);
        assert!(buf[1000..] == src[..n - 1000]);
    }

    #[test]
    fn heap_copies_are_exact_and_zeroed_blocks_are_zero() {
        let src: Vec<u8> = (0..(9 << 20)).map(|i| (i % 253) as u8).collect();
        assert!(Scratch::copy_of(&src).is_some_and(|copy| *copy == src[..]));
        // A reused block serves a shorter request with the right length.
        assert!(Scratch::new(8 << 20).is_some_and(|block| block.len() == 8 << 20));
        assert!(zeroed_bytes(5 << 20).is_some_and(|zeros| zeros.len() == 5 << 20 && zeros.iter().all(|&b| b == 0)));
        assert!(zeroed_bytes(0).is_some_and(|empty| empty.is_empty()));
        assert!(zeroed_bytes(usize::MAX).is_none(), "an impossible size is None, not an abort");
    }

    #[test]
    fn slices_are_copied_with_or_without_workers() {
        let n = (5 << 20) | 77;
        let src: Vec<u8> = (0..n).map(|i| (i * 13 % 251) as u8).collect();
        for workers in [None, crate::provider::workers::workers()] {
            let mut dst = vec![0u8; n];
            copy_slices(dst.as_mut_ptr() as Address, src.as_ptr() as Address, n as u64, 1 << 20, workers);
            assert!(dst == src);
        }
    }
}
