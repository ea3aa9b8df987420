//! Peer access between CUDA devices, and copies between memory of two CUDA contexts.
//!
//! - **Access** is that of the devices' primary contexts (every default queue's):
//!   `enablePeerAccess(peer)` makes this device's primary context current and calls
//!   `cuCtxEnablePeerAccess(peer's primary context)`. Already enabled is success; so is
//!   disabling a pair that is not enabled (`CUDA_ERROR_PEER_ACCESS_NOT_ENABLED`). What
//!   this process enabled is kept per device (the driver has no query for it), and read
//!   by the copies' route (`memory::peer::route`).
//! - **Copies** are `cuMemcpyPeerAsync` on the stream of the queue the route chose, then
//!   synchronised: device to device where peer access is enabled or both contexts are of
//!   one device. Between two devices without peer access the same call is staged by the
//!   driver through host buffers of its own (the CUDA programming guide: with peer access
//!   a peer copy "no longer needs to be staged through the host"); that is the staged
//!   route here, one driver call instead of two copies through our pageable scratch. Its
//!   pipelining is the driver's and undocumented: `bench/multigpu.js` measures it against
//!   a pinned host round trip.

use std::any::Any;

use super::driver::P2P_NATIVE_ATOMIC_SUPPORTED;
use super::{driver_size, CudaDevice, CudaQueue};
use crate::error::{MemoryError, Result};
use crate::runtime::peer::{PeerAccess, PeerQuery};
use crate::runtime::{Device, Queue, ReadBytes, WriteBytes};
use crate::sync::lock;

/// `device` as a CUDA device of this provider; an error for any other device.
fn cuda_device(device: &dyn Device) -> Result<&CudaDevice> {
    device.as_any().downcast_ref::<CudaDevice>().ok_or_else(|| MemoryError::PeerAccessUnavailable {
        message: format!("'{}' is not a device of the CUDA driver", device.info().name),
    })
}

/// `queue` as a CUDA queue; an error for any other queue.
fn cuda_queue(queue: &dyn Queue) -> Result<&CudaQueue> {
    let any: &dyn Any = queue;
    any.downcast_ref::<CudaQueue>().ok_or_else(|| MemoryError::PeerAccessUnavailable {
        message: "a copy between CUDA devices was given a queue of another runtime".into(),
    })
}

impl PeerAccess for CudaDevice {
    fn can_access_peer(&self, _device: &dyn Device, peer: &dyn Device, query: PeerQuery) -> Result<bool> {
        let peer = cuda_device(peer)?;
        Ok(match query {
            PeerQuery::AccessSupported => self.driver.device_can_access_peer(self.handle, peer.handle)?,
            PeerQuery::AtomicsSupported => {
                self.driver.device_p2p_attribute(P2P_NATIVE_ATOMIC_SUPPORTED, self.handle, peer.handle)? != 0
            }
        })
    }

    fn enable_peer_access(&self, _device: &dyn Device, peer: &dyn Device) -> Result<()> {
        let peer = cuda_device(peer)?;
        let (context, peer_context) = (self.primary_context()?, peer.primary_context()?);
        // The set is locked across the call, so a concurrent disable cannot interleave.
        let mut enabled = lock(&self.peers_enabled);
        context.current()?.ctx_enable_peer_access(peer_context.handle)?;
        enabled.insert(peer.ordinal);
        Ok(())
    }

    fn disable_peer_access(&self, _device: &dyn Device, peer: &dyn Device) -> Result<()> {
        let peer = cuda_device(peer)?;
        let (context, peer_context) = (self.primary_context()?, peer.primary_context()?);
        let mut enabled = lock(&self.peers_enabled);
        context.current()?.ctx_disable_peer_access(peer_context.handle)?;
        enabled.remove(&peer.ordinal);
        Ok(())
    }

    fn peer_access_enabled(&self, _device: &dyn Device, peer: &dyn Device) -> bool {
        cuda_device(peer).is_ok_and(|peer| lock(&self.peers_enabled).contains(&peer.ordinal))
    }

    fn copy_direct(
        &self,
        run_on: &dyn Queue,
        dst_queue: &dyn Queue,
        dst: WriteBytes<'_>,
        src_queue: &dyn Queue,
        src: ReadBytes<'_>,
    ) -> Result<()> {
        peer_copy(cuda_queue(run_on)?, cuda_queue(dst_queue)?, dst, cuda_queue(src_queue)?, src)
    }

    fn copy_staged(
        &self,
        dst_queue: &dyn Queue,
        dst: WriteBytes<'_>,
        src_queue: &dyn Queue,
        src: ReadBytes<'_>,
    ) -> Result<()> {
        let dst_queue = cuda_queue(dst_queue)?;
        peer_copy(dst_queue, dst_queue, dst, cuda_queue(src_queue)?, src)
    }
}

/// One `cuMemcpyPeerAsync` from `src` (device memory of `src_queue`'s context) to `dst`
/// (of `dst_queue`'s) on `run_on`'s stream, waited for.
fn peer_copy(
    run_on: &CudaQueue,
    dst_queue: &CudaQueue,
    dst_bytes: WriteBytes<'_>,
    src_queue: &CudaQueue,
    src_bytes: ReadBytes<'_>,
) -> Result<()> {
    let nbytes = src_bytes.copy_len(&dst_bytes)?;
    let (dst, src) = (dst_bytes.address(), src_bytes.address());
    let Some(size) = driver_size(nbytes, "copy")? else { return Ok(()) };
    let current = run_on.context.current()?;
    // SAFETY: both ranges are valid for `nbytes` (device memory of the two queues'
    // contexts, the model's `Side`s: their types' contract) for this call, which
    // synchronises below.
    unsafe {
        current.memcpy_peer_async(dst, dst_queue.context.handle, src, src_queue.context.handle, size, &run_on.stream)
    }
    .map_err(|e| MemoryError::CudaDriver {
        message: format!(
            "cuMemcpyPeerAsync of {nbytes} bytes from 0x{src:x} (device {}) to 0x{dst:x} (device {}) failed: {}",
            src_queue.context.device.ordinal,
            dst_queue.context.device.ordinal,
            e.description()
        ),
    })?;
    Ok(current.synchronize(&run_on.stream)?)
}
