//! Registered host memory: an optional capability of a `Context` (`host_registration()`),
//! for runtimes that can page-lock memory they did not allocate so that copies between it
//! and device memory go straight to the DMA engine (CUDA `cuMemHostRegister`, SYCL
//! `prepare_for_device_copy`). Which copy may use a registration is the model's policy
//! (`memory::registration`); a provider only registers, unregisters and copies.

use crate::error::Result;
use crate::runtime::Address;

/// What a registration call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisterOutcome {
    /// The runtime registered the range: it must be unregistered once.
    Registered,
    /// The runtime cannot register here and needs nothing (a CPU device, whose memory is
    /// host memory): nothing was done and nothing is to be undone.
    NotNeeded,
}

/// The capability to register (pin) host memory with the runtime, so DMA reaches it.
pub trait HostRegistration: Send + Sync {
    /// Registers `len` bytes of host memory at `address` with the runtime of this context.
    ///
    /// # Safety
    /// `address..address + len` is host memory mapped now. It is unregistered (with
    /// [`HostRegistration::unregister`], once) before this context goes; copies use it only
    /// while it is still the memory that was registered (the model's rule).
    unsafe fn register(&self, address: Address, len: u64) -> Result<RegisterOutcome>;

    /// Ends a registration of `address` that [`HostRegistration::register`] reported as
    /// `Registered`.
    ///
    /// # Safety
    /// `address` was registered through this context and is unregistered once, with no
    /// copy using it in flight.
    unsafe fn unregister(&self, address: Address) -> Result<()>;
}
