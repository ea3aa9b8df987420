//! Several devices in one process: peer access as dpctl 0.20+ has it
//! (`SyclDevice.can_access_peer`, `enable_peer_access`, `disable_peer_access`), and the
//! path a copy between memory of two contexts takes.
//!
//! **Which pairs may be asked.** As dpctl's `_check_peer_access`: peer access exists only
//! between two devices of one backend among `cuda`, `hip` and `level_zero`.
//! `can_access_peer` answers `false` for every other pair (and for a device and itself, as
//! `cuDeviceCanAccessPeer(d, d)` does); `enable`/`disable` refuse them with
//! `ERR_PEER_ACCESS_UNSUPPORTED` and dpctl's messages. The runtime is never asked about
//! such a pair: SYCL's OpenCL adapter aborts the process in
//! `ext_oneapi_enable_peer_access`. A device whose runtime has no peer capability here
//! (`Device::peer` is `None`, e.g. a SYCL Level Zero device, whose shim has no peer entry
//! points) answers `false` and refuses the same way.
//!
//! **A device and itself.** `canAccessPeer(self)` is `false` (CUDA's answer, and dpctl's);
//! `enablePeerAccess(self)` and `disablePeerAccess(self)` are errors: enable is allowed
//! exactly when `canAccessPeer` is true, and a device reaches its own memory anyway.
//!
//! **Idempotent.** Enabling an enabled pair succeeds (CUDA's
//! `CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED` is success); disabling a pair that is not
//! enabled succeeds too (CUDA's `CUDA_ERROR_PEER_ACCESS_NOT_ENABLED`; dpctl only logs the
//! runtime's error there): the call's postcondition holds either way.
//!
//! **Copies between two contexts** ([`route`]): device memory of two devices of one
//! runtime with the peer capability goes device to device when a direct path exists (the
//! same device, or peer access enabled either way: the copy runs on the queue of the side
//! that can reach the other), else staged through host memory by that runtime itself.
//! Every other pair (two runtimes, memory that is not device memory on one side) is
//! staged through host memory of our own, as before.

use std::sync::Arc;

use crate::error::{MemoryError, Result};
use crate::memory::registration::{host_copy, HostCopies, HostSide};
use crate::runtime::peer::{PeerAccess, PeerQuery};
use crate::runtime::{Device, Queue, ReadBytes, UsmKind, WriteBytes};

/// The backends with peer access (dpctl's `_peer_access_backends`).
pub const PEER_BACKENDS: [&str; 3] = ["cuda", "hip", "level_zero"];

/// dpctl's `_raise_invalid_peer_access`: the pair's backends, then the runtime's
/// capability, which is returned.
fn capability<'d>(device: &'d dyn Device, peer: &dyn Device) -> Result<&'d dyn PeerAccess> {
    let (backend, peer_backend) = (&device.info().backend, &peer.info().backend);
    if backend != peer_backend {
        return Err(MemoryError::PeerBackendMismatch { backend: backend.clone(), peer_backend: peer_backend.clone() });
    }
    if !PEER_BACKENDS.contains(&backend.as_str()) {
        return Err(MemoryError::PeerBackendUnsupported { backend: backend.clone() });
    }
    device.peer().ok_or_else(|| MemoryError::PeerAccessUnavailable {
        message: format!("the runtime of '{}' (backend {backend}) offers no peer access here", device.info().name),
    })
}

/// `canAccessPeer(peer, value)`: whether `device` can be given access to `peer`'s device
/// memory; `false` for every pair [`capability`] refuses and for a device and itself.
pub fn can_access_peer(device: &dyn Device, peer: &dyn Device, query: PeerQuery) -> Result<bool> {
    let Ok(capability) = capability(device, peer) else { return Ok(false) };
    if device.same_device(peer) {
        return Ok(false);
    }
    capability.can_access_peer(device, peer, query)
}

/// The capability, for a pair that is not a device and itself.
fn distinct<'d>(device: &'d dyn Device, peer: &dyn Device) -> Result<&'d dyn PeerAccess> {
    let capability = capability(device, peer)?;
    if device.same_device(peer) {
        return Err(MemoryError::PeerAccessSelf { device: device.info().name.clone() });
    }
    Ok(capability)
}

/// `enablePeerAccess(peer)`: lets `device` access `peer`'s device memory.
pub fn enable_peer_access(device: &dyn Device, peer: &dyn Device) -> Result<()> {
    let capability = distinct(device, peer)?;
    if !capability.can_access_peer(device, peer, PeerQuery::AccessSupported)? {
        return Err(MemoryError::PeerAccessUnavailable {
            message: format!(
                "'{}' cannot access memory of '{}': the runtime says this pair has no peer access \
                 (canAccessPeer() is false)",
                device.info().name,
                peer.info().name
            ),
        });
    }
    capability.enable_peer_access(device, peer)
}

/// `disablePeerAccess(peer)`; a pair that is not enabled is left as it is.
pub fn disable_peer_access(device: &dyn Device, peer: &dyn Device) -> Result<()> {
    distinct(device, peer)?.disable_peer_access(device, peer)
}

/// The path a copy between memory of two different contexts takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Device to device, run on the destination's queue (its device reaches the source:
    /// the same device, or peer access enabled from it to the source's device).
    DirectOnDestination,
    /// Device to device, run on the source's queue (peer access enabled from the source's
    /// device to the destination's only).
    DirectOnSource,
    /// Staged through host memory by the runtime of both sides, in one call (no peer
    /// access either way).
    PinnedStaged,
    /// Through host memory of our own, one runtime copy on each side (two runtimes, or
    /// memory that is not device memory on a side).
    HostStaged,
}

/// One side of a copy: the queue the memory is used through and its USM kind there.
#[derive(Clone, Copy)]
pub struct Side<'a> {
    pub queue: &'a Arc<dyn Queue>,
    pub kind: UsmKind,
}

/// The route of a copy from `src` into `dst`, memory of two different contexts.
pub fn route(dst: Side<'_>, src: Side<'_>) -> Route {
    let (to, from) = (dst.queue.device(), src.queue.device());
    let device_memory = dst.kind == UsmKind::Device && src.kind == UsmKind::Device;
    let one_runtime = to.info().backend == from.info().backend;
    let Some(capability) = to.peer().filter(|_| device_memory && one_runtime && from.peer().is_some()) else {
        return Route::HostStaged;
    };
    if to.same_device(from.as_ref()) || capability.peer_access_enabled(to.as_ref(), from.as_ref()) {
        Route::DirectOnDestination
    } else if from.peer().is_some_and(|c| c.peer_access_enabled(from.as_ref(), to.as_ref())) {
        Route::DirectOnSource
    } else {
        Route::PinnedStaged
    }
}

/// Copies all of `src` into the start of `dst` (memory of two different contexts, not
/// overlapping) along [`route`]; returns the route taken. The one copy between contexts
/// that `copyFromDevice`, its async form and a queue's `memcpy` all make.
pub fn copy_across(
    host_copies: &'static HostCopies,
    dst: Side<'_>,
    dst_bytes: WriteBytes<'_>,
    src: Side<'_>,
    src_bytes: ReadBytes<'_>,
) -> Result<Route> {
    let route = route(dst, src);
    let (dst_queue, src_queue) = (dst.queue.as_ref(), src.queue.as_ref());
    let device = dst_queue.device();
    match (route, device.peer()) {
        (Route::DirectOnDestination, Some(peer)) => {
            peer.copy_direct(dst_queue, dst_queue, dst_bytes, src_queue, src_bytes)?
        }
        (Route::DirectOnSource, Some(peer)) => {
            peer.copy_direct(src_queue, dst_queue, dst_bytes, src_queue, src_bytes)?
        }
        (Route::PinnedStaged, Some(peer)) => peer.copy_staged(dst_queue, dst_bytes, src_queue, src_bytes)?,
        // `route` gives the other routes only where the device has the capability.
        _ => staged_copy(host_copies, src.queue, dst.queue, dst_bytes, src_bytes)?,
    }
    Ok(route)
}

/// Copies all of `src` (read through `from`) into `dst` (written through `to`) by way of
/// host memory of our own: for ranges of two contexts, or ranges that overlap (`host_copies`:
/// the registrations either runtime copy must avoid, and the scratch it stages through).
pub(crate) fn staged_copy(
    host_copies: &'static HostCopies,
    from: &Arc<dyn Queue>,
    to: &Arc<dyn Queue>,
    dst: WriteBytes<'_>,
    src: ReadBytes<'_>,
) -> Result<()> {
    let nbytes = src.copy_len(&dst)?;
    // Scratch of the async copies: reused, and never zero-filled (the copy fills it).
    let mut staging = crate::host::Scratch::for_copy(&host_copies.scratch, nbytes)?;
    host_copy(host_copies, from, WriteBytes::of_slice(&mut staging), src, HostSide::Destination, None)?;
    host_copy(host_copies, to, dst, ReadBytes::of_slice(&staging), HostSide::Source, None)
}

#[cfg(test)]
#[path = "peer_tests.rs"]
mod tests;
