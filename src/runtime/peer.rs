//! The optional capability of peer access between two devices of one runtime, and of
//! copies between memory of two of its contexts: a device that offers it returns it from
//! `Device::peer`. What is checked before a runtime is asked (backends, a device and
//! itself) and which path a copy takes is `memory::peer`'s policy; this is only what a
//! runtime must do.

use crate::error::Result;
use crate::runtime::{Device, Queue, ReadBytes, WriteBytes};

/// What `canAccessPeer(peer, value)` asks (dpctl's `value` argument).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerQuery {
    /// Whether peer access to the peer's device memory can be enabled.
    AccessSupported,
    /// Whether atomics on the peer's memory are native once enabled.
    AtomicsSupported,
}

/// Peer access from one device of a runtime to the memory of another, and copies between
/// two contexts of the runtime. Every method is given devices (and queues) the model has
/// checked are two distinct devices of a backend that has peer access; an implementation
/// still refuses, with an error, a device that is not its runtime's.
pub trait PeerAccess: Send + Sync {
    /// Whether `device` can access memory of `peer` (CUDA: `cuDeviceCanAccessPeer`, or
    /// `cuDeviceGetP2PAttribute` for atomics).
    fn can_access_peer(&self, device: &dyn Device, peer: &dyn Device, query: PeerQuery) -> Result<bool>;
    /// Lets `device`'s contexts access memory of `peer`. Enabling what is already enabled
    /// succeeds.
    fn enable_peer_access(&self, device: &dyn Device, peer: &dyn Device) -> Result<()>;
    /// Ends what [`PeerAccess::enable_peer_access`] began. Disabling what is not enabled
    /// succeeds.
    fn disable_peer_access(&self, device: &dyn Device, peer: &dyn Device) -> Result<()>;
    /// Whether access from `device` to `peer` is enabled now (what this process enabled).
    fn peer_access_enabled(&self, device: &dyn Device, peer: &dyn Device) -> bool;
    /// Copies all of `src` (memory of `src_queue`'s context) into the start of `dst`
    /// (memory of `dst_queue`'s context) device to device, the copy run on `run_on`
    /// (one of the two queues, whose device has access to the other side's memory, or
    /// both sides on one device). Returns when the copy is complete.
    fn copy_direct(
        &self,
        run_on: &dyn Queue,
        dst_queue: &dyn Queue,
        dst: WriteBytes<'_>,
        src_queue: &dyn Queue,
        src: ReadBytes<'_>,
    ) -> Result<()>;
    /// The same copy between two devices without peer access: staged by the runtime
    /// through host memory of its own (pinned, and pipelined so that one chunk's copy to
    /// the host overlaps the previous chunk's copy to the device, where it can; CUDA's
    /// driver does it in one call). Returns when the copy is complete.
    fn copy_staged(
        &self,
        dst_queue: &dyn Queue,
        dst: WriteBytes<'_>,
        src_queue: &dyn Queue,
        src: ReadBytes<'_>,
    ) -> Result<()>;
}
