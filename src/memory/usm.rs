//! A USM memory object: an address range, the queue it is used through, and its
//! [`Owner`], what keeps the bytes alive. Views share the owner of what they view, so the
//! owner chain is always flat.

use std::sync::Arc;

use crate::error::{MemoryError, Result};
use crate::memory::allocation::Allocation;
use crate::memory::ipc_mapping::IpcMapping;
use crate::memory::peer::{staged_copy, Side};
use crate::memory::pool::Pool;
use crate::memory::registration::{host_copy, HostCopies, HostSide, Registration};
use crate::runtime::hints::{Advice, HintOutcome, Location};
use crate::runtime::UsmKind;
use crate::runtime::{Address, Context, Queue, ReadBytes, WriteBytes};

/// Copies up to this size between host memory and host-accessible USM are done by the
/// CPU directly: a runtime call costs microseconds (tens of them on the SYCL CPU
/// device), a memcpy of a few KiB a fraction of one (the CPU bench shows both).
const DIRECT_HOST_COPY_MAX: u64 = 256 << 10;

/// How the CPU may reach a memory object's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CpuAccess {
    /// Only through the runtime (device memory of a GPU, unknown memory).
    None,
    /// Directly for small copies; large ones go to the runtime (CUDA managed memory, which
    /// a large CPU copy would migrate page by page).
    Small,
    /// Directly at any size, over several threads when large (USM host memory; every kind
    /// on a CPU device, whose memory is host memory).
    Full,
}

impl CpuAccess {
    fn of(kind: UsmKind, queue: &Arc<dyn Queue>) -> CpuAccess {
        let host_device = queue.device().device_memory_is_host_memory();
        match kind {
            UsmKind::Host => CpuAccess::Full,
            UsmKind::Shared | UsmKind::Device if host_device => CpuAccess::Full,
            UsmKind::Shared => CpuAccess::Small,
            UsmKind::Device | UsmKind::Unknown => CpuAccess::None,
        }
    }

    fn covers(self, nbytes: u64) -> bool {
        match self {
            CpuAccess::None => false,
            CpuAccess::Small => nbytes <= DIRECT_HOST_COPY_MAX,
            CpuAccess::Full => true,
        }
    }
}

/// What keeps a memory object's bytes alive. Every holder (memory objects, views, zero-copy
/// `ArrayBuffer`s, in-flight copies) holds a clone; the bytes go when the last one does.
#[derive(Debug, Clone)]
pub enum Owner {
    /// An allocation of this process, given back to the pool when its last holder goes.
    Allocation(#[allow(dead_code, reason = "held for its Drop, which gives the allocation back")] Arc<Allocation>),
    /// Memory another party allocated and keeps alive (an interface over foreign memory,
    /// which the exporting object keeps alive, as dpctl trusts).
    Foreign,
    /// Device memory of another process mapped through an IPC handle, closed when its
    /// last holder goes (never pooled: the memory is the exporter's).
    Mapping(#[allow(dead_code, reason = "held for its Drop, which closes the mapping")] Arc<IpcMapping>),
    /// An allocation of another copy of this package in the process (`memory::copies`),
    /// held until the last holder here goes.
    OtherCopy(
        #[allow(dead_code, reason = "held for its Drop, which gives the hold back")] crate::memory::copies::OtherHold,
    ),
}

impl Owner {
    /// The allocation of this process under the memory, if it is one.
    #[cfg(test)]
    pub fn allocation(&self) -> Option<&Arc<Allocation>> {
        match self {
            Owner::Allocation(allocation) => Some(allocation),
            Owner::Foreign | Owner::Mapping(_) | Owner::OtherCopy(_) => None,
        }
    }
}

/// A memory object: a validated range of USM memory, the queue it is used through, and
/// what keeps its bytes alive. Clones (views, other threads' objects) share the owner.
#[derive(Clone)]
pub struct UsmMemory {
    address: Address,
    nbytes: u64,
    /// The USM kind in the memory's own context, fixed at creation.
    kind: UsmKind,
    cpu_access: CpuAccess,
    queue: Arc<dyn Queue>,
    owner: Owner,
    read_only: bool,
}

impl std::fmt::Debug for UsmMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UsmMemory({} bytes at {:#x})", self.nbytes, self.address)
    }
}

impl UsmMemory {
    /// A fresh allocation from `pool`, owned by the new object.
    pub fn allocate(
        pool: &'static Pool,
        queue: &Arc<dyn Queue>,
        kind: UsmKind,
        nbytes: u64,
        alignment: u64,
    ) -> Result<Self> {
        let allocation = Allocation::new(pool, queue, kind, nbytes, alignment)
            .map_err(|error| beyond_device_limit(error, queue, nbytes))?;
        Ok(UsmMemory {
            address: allocation.address(),
            nbytes,
            kind,
            cpu_access: CpuAccess::of(kind, queue),
            queue: queue.clone(),
            owner: Owner::Allocation(allocation),
            read_only: false,
        })
    }

    /// Memory described by an interface: `owner` is the allocation under it when this
    /// process made that allocation (kept alive by the view), else `Owner::Foreign`.
    ///
    /// # Safety
    /// `address..address + nbytes` is USM memory of `queue`'s context that stays
    /// allocated while the result (or a clone) lives: inside `owner`'s allocation when
    /// there is one (the view holds it), else memory whose exporter keeps it alive.
    pub unsafe fn from_interface(
        address: Address,
        nbytes: u64,
        queue: Arc<dyn Queue>,
        owner: Owner,
        read_only: bool,
    ) -> Self {
        let kind = queue.context().pointer_kind(address);
        let cpu_access = CpuAccess::of(kind, &queue);
        UsmMemory { address, nbytes, kind, cpu_access, queue, owner, read_only }
    }

    /// Device memory of another process, opened through an IPC handle: the first
    /// `nbytes` of `mapping` (at most its size), used through `queue` (of the mapping's
    /// context).
    pub fn from_mapping(mapping: Arc<IpcMapping>, nbytes: u64, queue: Arc<dyn Queue>) -> Self {
        let nbytes = nbytes.min(mapping.size());
        let cpu_access = CpuAccess::of(UsmKind::Device, &queue);
        let address = mapping.address();
        UsmMemory {
            address,
            nbytes,
            kind: UsmKind::Device,
            cpu_access,
            queue,
            owner: Owner::Mapping(mapping),
            read_only: false,
        }
    }

    /// The memory's bytes, for copies.
    fn bytes(&self) -> WriteBytes<'_> {
        // SAFETY: every constructor makes the range valid for as long as the object lives
        // (an allocation it holds, or `from_interface`'s contract).
        unsafe { WriteBytes::from_raw(self.address, self.nbytes) }
    }

    /// A copy between this memory and host memory (the `host` side): by the CPU where it
    /// can reach the memory (see `CpuAccess`), else through the queue, using `registration`
    /// as `memory::registration` allows.
    fn host_transfer(
        &self,
        host_copies: &'static HostCopies,
        dst: WriteBytes<'_>,
        src: ReadBytes<'_>,
        host: HostSide,
        registration: Option<&Registration>,
    ) -> Result<()> {
        if self.cpu_access.covers(src.len()) {
            crate::host::host_memcpy_parallel(dst, src);
            return Ok(());
        }
        // The host side may be this memory's own bytes (its zero-copy buffer, or that of a
        // view of the same allocation): a runtime copy of overlapping ranges is undefined.
        if src.overlaps(&dst) {
            return staged_copy(host_copies, &self.queue, &self.queue, dst, src);
        }
        host_copy(host_copies, &self.queue, dst, src, host, registration)
    }

    /// Where the memory starts (dpctl's `_pointer`).
    pub fn address(&self) -> Address {
        self.address
    }

    /// The memory's extent in bytes.
    pub fn nbytes(&self) -> u64 {
        self.nbytes
    }

    /// The queue the memory is used through (`syclQueue`).
    pub fn queue(&self) -> &Arc<dyn Queue> {
        &self.queue
    }

    /// What keeps the bytes alive.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// Whether the memory comes from a read-only interface (no writes, no `buffer`).
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// The USM kind of the memory in `context`, or in its own queue's context.
    pub fn usm_type(&self, context: Option<&dyn Context>) -> UsmKind {
        match context {
            Some(context) => context.pointer_kind(self.address),
            None => self.kind,
        }
    }

    fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(MemoryError::ReadOnlyWrite { address: self.address });
        }
        Ok(())
    }

    /// Copies all `nbytes` into the start of `dst`, which must be at least that long
    /// (`host_copies`: the process's registrations, which a runtime copy must avoid, and
    /// its scratch).
    pub fn copy_to_host(&self, host_copies: &'static HostCopies, dst: WriteBytes<'_>) -> Result<()> {
        self.copy_to_host_via(host_copies, dst, None)
    }

    /// The argument check of `copy_to_host` into `len` bytes: the async copy makes it
    /// before any work starts, so both report the same error.
    pub fn check_copy_to_host(&self, len: u64) -> Result<()> {
        if len < self.nbytes {
            return Err(MemoryError::DestinationTooSmall { nbytes: self.nbytes, len });
        }
        Ok(())
    }

    /// The argument checks of `copy_from_host` from `len` bytes (see `check_copy_to_host`).
    pub fn check_copy_from_host(&self, len: u64) -> Result<()> {
        if len > self.nbytes {
            return Err(MemoryError::SourceTooLarge { nbytes: self.nbytes, len });
        }
        self.check_writable()
    }

    /// The argument checks of `copy_from_device` from `src` (see `check_copy_to_host`).
    pub fn check_copy_from_device(&self, src: &UsmMemory) -> Result<()> {
        self.check_copy_from_host(src.nbytes)
    }

    /// The argument check of `memset` (see `check_copy_to_host`).
    pub fn check_memset(&self) -> Result<()> {
        self.check_writable()
    }

    /// `copy_to_host` through `registration`, which the caller checked still holds `dst`.
    pub fn copy_to_host_via(
        &self,
        host_copies: &'static HostCopies,
        dst: WriteBytes<'_>,
        registration: Option<&Registration>,
    ) -> Result<()> {
        self.check_copy_to_host(dst.len())?;
        self.host_transfer(host_copies, dst, self.bytes().as_read(), HostSide::Destination, registration)
    }

    /// Writes `src` at offset 0; a shorter source leaves the tail unchanged.
    pub fn copy_from_host(&self, host_copies: &'static HostCopies, src: ReadBytes<'_>) -> Result<()> {
        self.copy_from_host_via(host_copies, src, None)
    }

    /// `copy_from_host` through `registration`, which the caller checked still holds `src`.
    pub fn copy_from_host_via(
        &self,
        host_copies: &'static HostCopies,
        src: ReadBytes<'_>,
        registration: Option<&Registration>,
    ) -> Result<()> {
        let len = src.len();
        self.check_copy_from_host(len)?;
        if len == 0 {
            return Ok(());
        }
        self.host_transfer(host_copies, self.bytes(), src, HostSide::Source, registration)
    }

    /// Copies all of `src` to offset 0 of this memory: one runtime copy in one context;
    /// between two contexts along `memory::peer::route` (device to device where a direct
    /// path exists, else staged: a runtime may not reject a cross-context copy, so none is
    /// asked of it without the peer capability); through the host when they overlap (the
    /// result is then as with `memmove`).
    pub fn copy_from_device(&self, host_copies: &'static HostCopies, src: &UsmMemory) -> Result<()> {
        self.check_copy_from_device(src)?;
        if self.cpu_access.covers(src.nbytes) && src.cpu_access.covers(src.nbytes) {
            // Both sides are host memory (e.g. on a CPU device): no runtime call, and no
            // staging even across contexts.
            crate::host::host_memcpy_parallel(self.bytes(), src.bytes().as_read());
            return Ok(());
        }
        let same_context = self.queue.context().same_context(src.queue.context().as_ref());
        // Overlapping ranges (a view copied into its own allocation) go through the host:
        // a runtime copy of overlapping ranges is undefined (memcpy, not memmove).
        let overlap = src.bytes().as_read().overlaps(&self.bytes());
        if same_context && !overlap {
            return self.queue.memcpy(self.bytes(), src.bytes().as_read());
        }
        if overlap {
            return staged_copy(host_copies, &src.queue, &self.queue, self.bytes(), src.bytes().as_read());
        }
        // Two contexts (two devices, or two contexts of one): device to device where a
        // direct path exists (`memory::peer`).
        let (dst_side, src_side) = (self.side(), src.side());
        crate::memory::peer::copy_across(host_copies, dst_side, self.bytes(), src_side, src.bytes().as_read())
            .map(|_| ())
    }

    /// The memory as one side of a copy between contexts.
    pub(crate) fn side(&self) -> Side<'_> {
        Side { queue: &self.queue, kind: self.kind }
    }

    /// Migrates shared memory to `to` (`prefetch()`) and waits; other kinds are refused.
    pub fn prefetch(&self, to: Location) -> Result<HintOutcome> {
        self.check_shared("prefetch")?;
        match self.queue.shared_memory_hints() {
            Some(hints) => hints.prefetch(self.bytes().as_read(), to),
            None => Ok(HintOutcome::NoOp),
        }
    }

    /// Gives the runtime a usage hint about shared memory (`memAdvise()`).
    pub fn advise(&self, advice: Advice) -> Result<HintOutcome> {
        self.check_shared("memAdvise")?;
        match self.queue.shared_memory_hints() {
            Some(hints) => hints.advise(self.bytes().as_read(), advice),
            None => Ok(HintOutcome::NoOp),
        }
    }

    fn check_shared(&self, operation: &'static str) -> Result<()> {
        if self.kind != UsmKind::Shared {
            return Err(MemoryError::NotSharedMemory { operation, object: self.describe() });
        }
        Ok(())
    }

    /// Fills every byte with `value`: by the CPU for small host-reachable memory, else
    /// through the queue.
    pub fn memset(&self, value: u8) -> Result<()> {
        self.check_memset()?;
        if self.cpu_access.covers(self.nbytes) && self.nbytes <= DIRECT_HOST_COPY_MAX {
            crate::host::host_memset(self.bytes(), value);
            return Ok(());
        }
        self.queue.memset(self.bytes(), value)
    }

    /// The memory of `source` as memory of `kind`, as the constructors
    /// `new MemoryUSM<Kind>(usmObj, { copy, queue })` make it: `source` itself when it
    /// is of that kind (zero-copy); with `copy`, a new allocation of `kind` on `queue`
    /// holding a copy of it (given back at once if the copy fails); else an error.
    pub fn adopt(
        pool: &'static Pool,
        host_copies: &'static HostCopies,
        source: UsmMemory,
        kind: UsmKind,
        copy: bool,
        queue: &Arc<dyn Queue>,
    ) -> Result<Adopted> {
        let source_kind = source.usm_type(None);
        if source_kind == kind {
            return Ok(Adopted::View(source));
        }
        if !copy {
            return Err(MemoryError::KindMismatch {
                object: source.describe(),
                expected: kind.name(),
                actual: source_kind.name(),
            });
        }
        let memory = UsmMemory::allocate(pool, queue, kind, source.nbytes(), 0)?;
        memory.copy_from_device(host_copies, &source)?;
        Ok(Adopted::Copy(memory))
    }

    /// `(address, length)` of the bytes a zero-copy `ArrayBuffer` may view: only host
    /// and shared memory, never memory of a read-only interface (JS buffers cannot be
    /// read-only), and at most `max_len` bytes (the engine's `ArrayBuffer` limit).
    pub fn host_view(&self, max_len: u64) -> Result<(Address, usize)> {
        if !self.kind.host_accessible() {
            return Err(MemoryError::NotHostAccessible);
        }
        if self.read_only {
            return Err(MemoryError::ReadOnlyBuffer);
        }
        match usize::try_from(self.nbytes) {
            Ok(len) if self.nbytes <= max_len => Ok((self.address, len)),
            _ => Err(too_large_for_host(self.nbytes, max_len)),
        }
    }

    /// What a `SharedArrayBuffer` over the memory needs: its bytes, as `host_view` gives
    /// them, and the owner that keeps them alive for every thread the buffer reaches.
    /// Only memory this process allocated qualifies: another library's exporter keeps its
    /// memory alive for this thread alone (as for `share`).
    pub fn shared_view(&self, max_len: u64) -> Result<(Address, usize, Owner)> {
        let (address, len) = self.host_view(max_len)?;
        self.check_owned_here("be a SharedArrayBuffer")?;
        Ok((address, len, self.owner.clone()))
    }

    /// `ERR_SHARE_NOT_OWNED` for memory another library's exporter keeps alive: only what
    /// dpctl-memory allocated (or a view of it) can `what` (reach other threads).
    pub fn check_owned_here(&self, what: &str) -> Result<()> {
        if matches!(self.owner, Owner::Foreign) {
            return Err(MemoryError::ShareNotOwned { message: format!(
                "{} belongs to another library's exporter, which alone keeps it alive: only memory dpctl-memory allocated (or a view of it) can {what}",
                self.describe()
            ) });
        }
        Ok(())
    }

    /// `<SYCL(TM) USM-shared allocation of 16 bytes at 0x…>`, as dpctl's `repr`.
    pub fn describe(&self) -> String {
        format!(
            "<SYCL(TM) USM-{} allocation of {} bytes at {:#x}>",
            self.usm_type(None).name(),
            self.nbytes,
            self.address
        )
    }
}

/// What [`UsmMemory::adopt`] made.
pub enum Adopted {
    /// The source memory itself.
    View(UsmMemory),
    /// A new allocation holding a copy.
    Copy(UsmMemory),
}

/// Host memory of `nbytes` is more than one JS `ArrayBuffer` may hold (`max_len`).
pub fn too_large_for_host(nbytes: u64, max_len: u64) -> MemoryError {
    MemoryError::HostBufferTooLarge { nbytes, max_len }
}

/// A refused allocation larger than the device's largest single allocation says so, with
/// the limit: the runtime's own message does not name it, and nothing else tells a
/// request that can never succeed from one that failed for want of memory.
fn beyond_device_limit(error: MemoryError, queue: &Arc<dyn Queue>, nbytes: u64) -> MemoryError {
    let device = queue.device();
    let info = device.info();
    match error {
        MemoryError::UsmAllocation { message } if nbytes > info.max_mem_alloc_size => MemoryError::UsmAllocation {
            message: format!(
                "{message} ({nbytes} bytes is more than the device's maxMemAllocSize, {} bytes: the largest single \
                 allocation that {} allows; allocate in parts)",
                info.max_mem_alloc_size, info.name
            ),
        },
        other => other,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::runtime::fake::{FakeContext, FakeDevice};

    /// Whether a recorded runtime copy of `len` bytes had overlapping ranges.
    fn overlapping(copies: &[(Address, Address)], len: u64) -> bool {
        copies.iter().any(|&(dst, src)| dst < src.saturating_add(len) && src < dst.saturating_add(len))
    }

    #[test]
    fn a_host_copy_between_memory_and_its_own_bytes_never_gives_the_runtime_overlapping_ranges() {
        // Shared memory of a device whose memory is not host memory (CUDA managed memory):
        // large copies go to the runtime, whose copy of overlapping ranges is undefined.
        let context = FakeContext::new(3101, FakeDevice::new(1 << 34, 1 << 34));
        let queue = context.queue();
        let nbytes = 4 * DIRECT_HOST_COPY_MAX;
        let memory = UsmMemory::allocate(crate::memory::pool::test_pool(), &queue, UsmKind::Shared, nbytes, 0).unwrap();
        let address = memory.address();
        // SAFETY: the fake never touches memory; these stand for the memory's own
        // zero-copy buffer, shifted by one byte.
        let (shifted_src, shifted_dst) =
            unsafe { (ReadBytes::from_raw(address + 1, nbytes - 1), WriteBytes::from_raw(address + 1, nbytes)) };
        memory.copy_from_host(HostCopies::leaked(), shifted_src).unwrap();
        memory.copy_to_host(HostCopies::leaked(), shifted_dst).unwrap();
        let copies = context.counts().plain_copies.clone();
        assert!(!copies.is_empty(), "the copies went to the runtime");
        assert!(!overlapping(&copies, nbytes), "overlapping runtime copies: {copies:x?} around {address:#x}");
    }

    #[test]
    fn a_shared_view_holds_this_processs_host_and_shared_memory_and_refuses_the_rest() {
        let context = FakeContext::new(3104, FakeDevice::new(1 << 34, 1 << 34));
        let queue = context.queue();
        for kind in [UsmKind::Host, UsmKind::Shared] {
            let memory = UsmMemory::allocate(crate::memory::pool::test_pool(), &queue, kind, 64, 0).unwrap();
            let (address, len, owner) = memory.shared_view(1 << 32).unwrap();
            assert_eq!((address, len), (memory.address(), 64));
            assert!(owner.allocation().is_some(), "the view holds the allocation itself");
        }
        let device = UsmMemory::allocate(crate::memory::pool::test_pool(), &queue, UsmKind::Device, 64, 0).unwrap();
        assert_eq!(device.shared_view(1 << 32).err().map(|e| e.code()), Some("ERR_NOT_HOST_ACCESSIBLE"));
        let host = UsmMemory::allocate(crate::memory::pool::test_pool(), &queue, UsmKind::Host, 64, 0).unwrap();
        assert_eq!(host.shared_view(32).err().map(|e| e.code()), Some("ERR_HOST_BUFFER_TOO_LARGE"));
        let exporter = [0u8; 16];
        // SAFETY: `exporter` stands for another library's memory and outlives `foreign`.
        let foreign = unsafe { UsmMemory::from_interface(exporter.as_ptr() as u64, 16, queue, Owner::Foreign, false) };
        let refused = foreign.shared_view(1 << 32).err();
        assert_eq!(refused.as_ref().map(|e| e.code()), Some("ERR_SHARE_NOT_OWNED"));
        assert!(refused.is_some_and(|e| e.to_string().contains("can be a SharedArrayBuffer")));
    }

    #[test]
    fn a_refused_allocation_beyond_the_devices_limit_names_the_limit() {
        let device = FakeDevice::new(1 << 20, 1 << 16);
        let context = FakeContext::new(3103, device);
        context.counts().capacity = Some(1 << 17);
        let queue = context.queue();
        for kind in [UsmKind::Host, UsmKind::Device, UsmKind::Shared] {
            let Err(MemoryError::UsmAllocation { message }) =
                UsmMemory::allocate(crate::memory::pool::test_pool(), &queue, kind, 1 << 18, 0)
            else {
                panic!("the fake refuses beyond its capacity");
            };
            assert!(
                message.contains("failed: out of memory: 262144 bytes"),
                "the runtime's message is kept: {message}"
            );
            assert!(message.contains("more than the device's maxMemAllocSize, 65536 bytes"), "{message}");
        }
        // Refused within the limit: the runtime's message alone (the limit is not why).
        let _held = UsmMemory::allocate(crate::memory::pool::test_pool(), &queue, UsmKind::Device, 1 << 16, 0).unwrap();
        let _also = UsmMemory::allocate(crate::memory::pool::test_pool(), &queue, UsmKind::Device, 1 << 16, 0).unwrap();
        let Err(MemoryError::UsmAllocation { message }) =
            UsmMemory::allocate(crate::memory::pool::test_pool(), &queue, UsmKind::Device, 1 << 16, 0)
        else {
            panic!("the fake is full");
        };
        assert!(!message.contains("maxMemAllocSize"), "{message}");
    }

    #[test]
    fn the_argument_checks_are_the_copies_own_and_refuse_before_any_runtime_copy() {
        // Device memory of a device whose memory is not host memory: every copy that got
        // past its checks would go to the runtime and be recorded.
        let context = FakeContext::new(3102, FakeDevice::new(1 << 34, 1 << 34));
        let queue = context.queue();
        let memory = UsmMemory::allocate(crate::memory::pool::test_pool(), &queue, UsmKind::Device, 64, 0).unwrap();
        let larger = UsmMemory::allocate(crate::memory::pool::test_pool(), &queue, UsmKind::Device, 65, 0).unwrap();
        let mut short = [0u8; 63];
        let long = [0u8; 65];
        assert_eq!(
            memory.check_copy_to_host(63),
            memory.copy_to_host(HostCopies::leaked(), WriteBytes::of_slice(&mut short))
        );
        assert_eq!(memory.check_copy_to_host(63), Err(MemoryError::DestinationTooSmall { nbytes: 64, len: 63 }));
        assert_eq!(
            memory.check_copy_from_host(65),
            memory.copy_from_host(HostCopies::leaked(), ReadBytes::of_slice(&long))
        );
        assert_eq!(memory.check_copy_from_host(65), Err(MemoryError::SourceTooLarge { nbytes: 64, len: 65 }));
        assert_eq!(memory.check_copy_from_device(&larger), memory.copy_from_device(HostCopies::leaked(), &larger));
        assert_eq!(memory.check_copy_from_device(&larger), Err(MemoryError::SourceTooLarge { nbytes: 64, len: 65 }));
        assert!(context.counts().plain_copies.is_empty(), "a refused copy reached the runtime");
        assert_eq!(memory.check_copy_to_host(64), Ok(()));
        assert_eq!(memory.check_copy_from_host(64), Ok(()));
        assert_eq!(larger.check_copy_from_device(&memory), Ok(()));
        assert_eq!(memory.check_memset(), Ok(()));

        // Read-only memory (from a read-only interface): every write is refused by its
        // check, with the copy's own error; reading is not.
        let backing = [0u8; 64];
        // SAFETY: the fake never touches memory; `backing` outlives `read_only`.
        let read_only =
            unsafe { UsmMemory::from_interface(backing.as_ptr() as u64, 64, queue.clone(), Owner::Foreign, true) };
        let written = Err(MemoryError::ReadOnlyWrite { address: read_only.address() });
        assert_eq!(read_only.check_copy_from_host(8), written);
        assert_eq!(
            read_only.check_copy_from_host(8),
            read_only.copy_from_host(HostCopies::leaked(), ReadBytes::of_slice(&long[..8]))
        );
        assert_eq!(read_only.check_copy_from_device(&memory), written);
        assert_eq!(read_only.check_memset(), written);
        assert_eq!(read_only.check_memset(), read_only.memset(0));
        assert_eq!(read_only.check_copy_to_host(64), Ok(()));
        // A size error is found first, as the synchronous copy finds it.
        assert_eq!(read_only.check_copy_from_host(65), Err(MemoryError::SourceTooLarge { nbytes: 64, len: 65 }));
    }
}
