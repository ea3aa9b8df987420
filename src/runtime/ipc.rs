//! The optional capability of sharing device memory with other processes (IPC handles):
//! a context that offers it returns it from `Context::ipc`. The policy (what may be
//! exported, what an open checks, who closes a mapping) is `memory::ipc`'s; this is only
//! what a runtime must do.

use crate::error::Result;
use crate::runtime::{Address, Device};

/// Memory of another process, mapped into this one by [`Ipc::open`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapped {
    pub address: Address,
    /// Bytes of the exported allocation, as the runtime reports them (at least what its
    /// exporter asked for: the runtime may round up).
    pub size: u64,
}

/// The capability to share device memory with other processes through handles.
pub trait Ipc: Send + Sync {
    /// How many bytes a handle of this runtime has (CUDA: 64, a `CUipcMemHandle`).
    fn handle_len(&self) -> usize;
    /// The handle of the device allocation that starts at `address` (one this context
    /// made, whole): bytes another process opens with [`Ipc::open`]. An error for any
    /// other address.
    fn export(&self, address: Address) -> Result<Vec<u8>>;
    /// Maps the memory whose handle another process exported into this context, for
    /// `device` (one of the context's devices). An error for bytes that name no memory
    /// this context can map (freed by its exporter, from another machine, not a handle).
    /// Every success is closed once with [`Ipc::close`].
    fn open(&self, handle: &[u8], device: &dyn Device) -> Result<Mapped>;
    /// Unmaps memory that [`Ipc::open`] mapped.
    ///
    /// # Safety
    /// `address` is the address of a mapping [`Ipc::open`] of this context returned,
    /// closed once; nothing reads or writes it afterwards.
    unsafe fn close(&self, address: Address) -> Result<()>;
}
