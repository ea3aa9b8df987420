//! The SYCL provider's prefetch and advice for shared memory (`queue::prefetch`/
//! `queue::mem_advise`, which the OpenCL backend accepts and ignores).

use std::ffi::c_int;

use super::{runtime_error, SyclQueue};
use crate::error::Result;
use crate::runtime::hints::{Advice, HintOutcome, Location, SharedMemoryHints};
use crate::runtime::ReadBytes;

/// `ur_usm_advice_flags_t` (the unified runtime's `ur_api.h`), which `queue::mem_advise`
/// hands to the backend adapter.
mod ur_advice {
    use std::ffi::c_int;
    /// Mostly read: copies may be kept.
    pub(super) const SET_READ_MOSTLY: c_int = 1 << 1;
    /// Undoes `SET_READ_MOSTLY`.
    pub(super) const CLEAR_READ_MOSTLY: c_int = 1 << 2;
    /// Prefer the device as the memory's home.
    pub(super) const SET_PREFERRED_LOCATION: c_int = 1 << 3;
    /// Undoes `SET_PREFERRED_LOCATION`.
    pub(super) const CLEAR_PREFERRED_LOCATION: c_int = 1 << 4;
    /// The device will access it: map it there.
    pub(super) const SET_ACCESSED_BY_DEVICE: c_int = 1 << 9;
    /// Undoes `SET_ACCESSED_BY_DEVICE`.
    pub(super) const CLEAR_ACCESSED_BY_DEVICE: c_int = 1 << 10;
    /// The host will access it: map it there.
    pub(super) const SET_ACCESSED_BY_HOST: c_int = 1 << 11;
    /// Undoes `SET_ACCESSED_BY_HOST`.
    pub(super) const CLEAR_ACCESSED_BY_HOST: c_int = 1 << 12;
    /// Prefer the host as the memory's home.
    pub(super) const SET_PREFERRED_LOCATION_HOST: c_int = 1 << 13;
    /// Undoes `SET_PREFERRED_LOCATION_HOST`.
    pub(super) const CLEAR_PREFERRED_LOCATION_HOST: c_int = 1 << 14;
}

/// The unified runtime's flag for `advice`.
fn ur_flag(advice: Advice) -> c_int {
    use ur_advice::*;
    match advice {
        Advice::ReadMostly(true) => SET_READ_MOSTLY,
        Advice::ReadMostly(false) => CLEAR_READ_MOSTLY,
        Advice::PreferredLocation(Location::Device, true) => SET_PREFERRED_LOCATION,
        Advice::PreferredLocation(Location::Device, false) => CLEAR_PREFERRED_LOCATION,
        Advice::PreferredLocation(Location::Host, true) => SET_PREFERRED_LOCATION_HOST,
        Advice::PreferredLocation(Location::Host, false) => CLEAR_PREFERRED_LOCATION_HOST,
        Advice::AccessedBy(Location::Device, true) => SET_ACCESSED_BY_DEVICE,
        Advice::AccessedBy(Location::Device, false) => CLEAR_ACCESSED_BY_DEVICE,
        Advice::AccessedBy(Location::Host, true) => SET_ACCESSED_BY_HOST,
        Advice::AccessedBy(Location::Host, false) => CLEAR_ACCESSED_BY_HOST,
    }
}

fn outcome(applied: bool) -> HintOutcome {
    if applied {
        HintOutcome::Applied
    } else {
        HintOutcome::NoOp
    }
}

impl SharedMemoryHints for SyclQueue {
    fn prefetch(&self, bytes: ReadBytes<'_>, to: Location) -> Result<HintOutcome> {
        let _one_at_a_time = self.cpu_device_guard();
        let applied =
            self.handle.prefetch(bytes, to == Location::Host).map_err(|e| runtime_error("SYCL prefetch failed", e))?;
        Ok(outcome(applied))
    }

    fn advise(&self, bytes: ReadBytes<'_>, advice: Advice) -> Result<HintOutcome> {
        let _one_at_a_time = self.cpu_device_guard();
        let applied =
            self.handle.mem_advise(bytes, ur_flag(advice)).map_err(|e| runtime_error("SYCL mem_advise failed", e))?;
        Ok(outcome(applied))
    }
}
