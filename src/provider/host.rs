//! Plain CPU access to host-accessible memory: host memory and USM host or shared
//! allocations, which the USM model lets the host read and write directly.

use crate::provider::Address;

/// Copies `nbytes` from `src` to `dst` with the CPU. Same contract as `Queue::memcpy`:
/// the caller guarantees both ranges are valid, host-accessible, and not in use by a
/// device while the copy runs (every operation of this library has completed when it
/// returns). The ranges may overlap.
pub fn host_memcpy(dst: Address, src: Address, nbytes: u64) {
    if nbytes == 0 || dst == src {
        return;
    }
    // SAFETY: the caller's guarantee above; `copy` (memmove) tolerates overlap, as a copy
    // from a memory object into its own `buffer` would have.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, nbytes as usize) };
}
