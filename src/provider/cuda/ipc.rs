//! IPC handles of CUDA device memory (`Context::ipc`): `cuIpcGetMemHandle`,
//! `cuIpcOpenMemHandle` (with `CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS`, so a handle of
//! another device of the machine opens where peer access is possible) and
//! `cuIpcCloseMemHandle`. A handle's bytes are the driver's 64-byte `CUipcMemHandle`,
//! so CuPy, PyTorch and every other CUDA program open what this exports, and this opens
//! what they export.
//!
//! The driver's handle names the whole `cuMemAlloc` allocation, and another process maps
//! it at its start: only allocations whose handed-out address is the driver's own are
//! exported (not blocks over-allocated for a large alignment and aligned inside).
//!
//! The mappings this process opened are kept here, so that the context answers
//! `pointer_kind` and `address_range` for them without asking the driver (a copy must
//! never take a mapping for pageable host memory and stage it through the CPU).

use std::sync::Mutex;

use super::driver::{IpcMemHandle, IPC_MEM_LAZY_ENABLE_PEER_ACCESS};
use super::CudaContext;
use crate::error::{MemoryError, Result};
use crate::runtime::ipc::{Ipc, Mapped};
use crate::runtime::ranges::RangeBook;
use crate::runtime::UsmKind;
use crate::runtime::{Address, Device};
use crate::sync::lock;

/// The open mappings of this process by range, with the raw handle of the context each
/// is mapped into. The model keeps its own book of them (`memory::ipc_mapping`), which
/// this provider cannot read (the layers point one way): the provider needs this one to
/// route its own copies.
static MAPPINGS: Mutex<RangeBook<usize>> = Mutex::new(RangeBook::new());

/// `(base, size)` of the mapping of `context` that holds `address`, if any.
pub(super) fn mapping_of(context: &CudaContext, address: Address) -> Option<(Address, u64)> {
    let mappings = lock(&MAPPINGS);
    let range = mappings.holding(address)?;
    (*range.value == context.handle.as_raw()).then_some((range.start, range.len))
}

impl Ipc for CudaContext {
    fn handle_len(&self) -> usize {
        IpcMemHandle::LEN
    }

    fn export(&self, address: Address) -> Result<Vec<u8>> {
        let whole = self
            .lookup(address)
            .is_some_and(|(start, a)| start == address && a.raw == address && a.kind == UsmKind::Device);
        if !whole {
            return Err(MemoryError::IpcNotExportable {
                message: format!(
                    "no IPC handle can be made of 0x{address:x}: it is not the start of a CUDA device allocation of this \
                     context (memory allocated with an alignment the driver does not give lies inside a larger block, \
                     which a handle would name instead)"
                ),
            });
        }
        // The model keeps an allocation's handle (`Allocation::ipc_handle`), so the driver
        // is asked once per allocation.
        let handle = self.current()?.ipc_get_mem_handle(address)?;
        Ok(handle.as_bytes().to_vec())
    }

    fn open(&self, bytes: &[u8], device: &dyn Device) -> Result<Mapped> {
        let Some(handle) = IpcMemHandle::from_bytes(bytes) else {
            return Err(MemoryError::IpcHandleLength { len: bytes.len() as u64, expected: IpcMemHandle::LEN as u64 });
        };
        if !self.device.same_device(device) {
            return Err(MemoryError::IpcHandleInvalid {
                message: format!("device '{}' is not the device of this CUDA context", device.info().name),
            });
        }
        let current = self.current()?;
        let address = current.ipc_open_mem_handle(&handle, IPC_MEM_LAZY_ENABLE_PEER_ACCESS).map_err(|e| {
            MemoryError::IpcHandleInvalid {
                message: format!(
                    "the CUDA driver cannot open this IPC handle on '{}': {e}. A handle opens in a process other than \
                     its exporter's, on the same machine, while the exporter keeps the memory (freed memory, a handle \
                     of a device without peer access, or bytes that are no handle cannot be opened)",
                    self.device.info.name
                ),
            }
        })?;
        match current.mem_get_address_range(address) {
            Ok((base, size)) if base == address && size > 0 => {
                let mut mappings = lock(&MAPPINGS);
                // A range there is of a mapping closed behind our back: it makes room.
                while let Some(start) = mappings.first_overlapping(address, size as u64).map(|range| range.start) {
                    mappings.remove(start);
                }
                let _ = mappings.insert(address, size as u64, self.handle.as_raw());
                Ok(Mapped { address, size: size as u64 })
            }
            other => {
                // SAFETY: opened just above, closed once here, never used.
                let _ = unsafe { current.ipc_close_mem_handle(address) };
                Err(MemoryError::CudaDriver {
                    message: match other {
                        Err(e) => format!("cuMemGetAddressRange of an opened IPC mapping failed: {e}"),
                        Ok((base, size)) => format!(
                            "the CUDA driver mapped an IPC handle at 0x{address:x}, inside an extent of {size} bytes at \
                             0x{base:x}"
                        ),
                    },
                })
            }
        }
    }

    unsafe fn close(&self, address: Address) -> Result<()> {
        lock(&MAPPINGS).remove(address);
        // SAFETY: `address` is a mapping `open` returned in this context, closed once with
        // nothing using it after (this function's contract).
        Ok(unsafe { self.current()?.ipc_close_mem_handle(address) }?)
    }
}
