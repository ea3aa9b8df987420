//! Registered host memory: the policy of which copy may use a registration.
//!
//! A registration page-locks host memory the user owns (a JS `ArrayBuffer`) so that copies
//! between it and device memory run at the pinned rate. The runtime remembers a registered
//! range by its addresses; if the memory under them were freed and mapped again while
//! still registered, a DMA by address would reach the old pages. So:
//!
//! - A copy uses a registration only when its caller vouches for it (the binding checks
//!   that the buffer it was given is the registered buffer object, not detached, with the
//!   registered data pointer and length) and the host range lies inside it; it then runs
//!   through `Queue::memcpy_registered`.
//! - Every other runtime copy whose host side overlaps a pinned (or pending) registration,
//!   of any context or thread, goes through a bounce buffer the CPU copies to or from:
//!   no plain runtime copy is ever given memory that may be stale registered memory.
//! - Registrations never overlap (a second one over the same bytes is refused), so a
//!   range has at most one registration to vouch for.
//! - A registration ends when its last `Arc` goes: an in-flight copy that uses it holds
//!   one, so `unregister()` during the copy unregisters when the copy is done.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::{MemoryError, Result};
use crate::host::{host_memcpy_parallel, Scratch};
use crate::runtime::registration::RegisterOutcome;
use crate::runtime::{Address, Context, Queue, ReadBytes, WriteBytes};
use crate::sync::lock;

/// One live range of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    len: u64,
    /// Registered with the runtime, or being registered: plain copies must avoid it.
    pinned: bool,
}

/// Every live registration of the process by start address (ranges never overlap), with
/// its count for a lock-free "none" on the copy path.
static LIVE: Mutex<BTreeMap<Address, Entry>> = Mutex::new(BTreeMap::new());
static LIVE_COUNT: AtomicUsize = AtomicUsize::new(0);

/// The live entry overlapping `address..address + len`, as `(start, entry)`.
fn overlapping(table: &BTreeMap<Address, Entry>, address: Address, len: u64) -> Option<(Address, Entry)> {
    let end = address.saturating_add(len.max(1));
    let (&start, &entry) = table.range(..end).next_back()?;
    (start.saturating_add(entry.len) > address).then_some((start, entry))
}

/// A registration of host memory with the runtime of one context (or a reported no-op
/// where the runtime needs none). Dropping the last `Arc` ends it.
pub struct Registration {
    context: Arc<dyn Context>,
    address: Address,
    len: u64,
    outcome: RegisterOutcome,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Registration({} bytes at {:#x}, {:?})", self.len, self.address, self.outcome)
    }
}

impl Registration {
    /// Registers `bytes` with the runtime of `queue`'s context.
    ///
    /// # Safety
    /// `bytes` is host memory mapped now (a JS buffer's bytes). The registration may
    /// outlive that memory: copies use it only when vouched for (see the module).
    pub unsafe fn new(queue: &Arc<dyn Queue>, bytes: ReadBytes<'_>) -> Result<Arc<Registration>> {
        let (address, len) = (bytes.address(), bytes.len());
        if len == 0 {
            return Err(MemoryError::EmptyRegistration);
        }
        {
            let mut table = lock(&LIVE);
            if let Some((start, entry)) = overlapping(&table, address, len) {
                return Err(MemoryError::RegistrationOverlap { len, address, registered: entry.len, start });
            }
            // Reserved as pinned while the runtime call runs (it may take tens of ms for a
            // large buffer): plain copies avoid the range from now on.
            table.insert(address, Entry { len, pinned: true });
            LIVE_COUNT.fetch_add(1, Ordering::Relaxed);
        }
        let context = queue.context();
        let outcome = match context.host_registration() {
            // SAFETY: the caller's contract; the registration is unregistered once, in Drop.
            Some(capability) => unsafe { capability.register(address, len) },
            None => Ok(RegisterOutcome::NotNeeded),
        };
        let mut table = lock(&LIVE);
        match outcome {
            Ok(outcome) => {
                table.insert(address, Entry { len, pinned: outcome == RegisterOutcome::Registered });
                Ok(Arc::new(Registration { context, address, len, outcome }))
            }
            Err(e) => {
                table.remove(&address);
                LIVE_COUNT.fetch_sub(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    /// Whether the runtime registered the memory (`false`: a reported no-op).
    pub fn registered(&self) -> bool {
        self.outcome == RegisterOutcome::Registered
    }

    /// Where the registered range starts.
    pub fn address(&self) -> Address {
        self.address
    }

    /// The registered range's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether `address..address + len` lies inside the registered range.
    pub fn covers(&self, address: Address, len: u64) -> bool {
        address >= self.address && address.saturating_add(len) <= self.address.saturating_add(self.len)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if self.outcome == RegisterOutcome::Registered {
            if let Some(capability) = self.context.host_registration() {
                // SAFETY: registered through this context by `new`, unregistered once (the
                // last Arc); no copy uses it (each holds an Arc for its duration). A failure
                // leaves nothing to do: the range stays in no table of ours.
                let _ = unsafe { capability.unregister(self.address) };
            }
        }
        // Removed only now: until the runtime has let go, plain copies keep avoiding it.
        if lock(&LIVE).remove(&self.address).is_some() {
            LIVE_COUNT.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Which side of a copy is the host memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostSide {
    Destination,
    Source,
}

/// How a runtime copy with one host side goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Plain,
    Registered,
    Bounce,
}

fn route(host: (Address, u64), vouched: Option<&Registration>) -> Route {
    if LIVE_COUNT.load(Ordering::Relaxed) == 0 {
        return Route::Plain;
    }
    let Some((start, entry)) = overlapping(&lock(&LIVE), host.0, host.1) else {
        return Route::Plain;
    };
    match vouched {
        Some(r) if r.address == start && r.covers(host.0, host.1) => {
            if r.registered() {
                Route::Registered
            } else {
                Route::Plain
            }
        }
        _ if entry.pinned => Route::Bounce,
        _ => Route::Plain,
    }
}

/// A runtime copy between host memory (the `host` side) and memory of `queue`, by the
/// rules of this module. `vouched` is the registration the caller checked the host
/// memory still belongs to.
pub(crate) fn host_copy(
    queue: &Arc<dyn Queue>,
    dst: WriteBytes<'_>,
    src: ReadBytes<'_>,
    host: HostSide,
    vouched: Option<&Registration>,
) -> Result<()> {
    let range = match host {
        HostSide::Destination => (dst.address(), dst.len().min(src.len())),
        HostSide::Source => (src.address(), src.len()),
    };
    match route(range, vouched) {
        Route::Plain => queue.memcpy(dst, src),
        Route::Registered => queue.memcpy_registered(dst, src),
        Route::Bounce => bounce(queue, dst, src, host),
    }
}

/// The copy through memory of our own, which the CPU copies to or from the host side.
fn bounce(queue: &Arc<dyn Queue>, dst: WriteBytes<'_>, src: ReadBytes<'_>, host: HostSide) -> Result<()> {
    let nbytes = src.copy_len(&dst)?;
    let mut scratch = Scratch::for_copy(nbytes)?;
    let own = WriteBytes::of_slice(&mut scratch);
    if route((own.address(), own.len()), None) != Route::Plain {
        return Err(MemoryError::BounceInRegistration { nbytes });
    }
    match host {
        HostSide::Destination => {
            queue.memcpy(own, src)?;
            host_memcpy_parallel(dst, own.as_read());
        }
        HostSide::Source => {
            host_memcpy_parallel(own, src);
            queue.memcpy(dst, own.as_read())?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::runtime::fake::{FakeContext, FakeDevice};

    /// The table is process-wide: tests that count on it run one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn fake(registers: bool) -> (Arc<FakeContext>, Arc<dyn Queue>) {
        let context = FakeContext::new(7, FakeDevice::new(1 << 30, 1 << 30));
        context.counts().registers = registers;
        let queue = context.queue();
        (context, queue)
    }

    fn register(queue: &Arc<dyn Queue>, bytes: &[u8]) -> Result<Arc<Registration>> {
        // SAFETY: the test's own buffer, alive for the test.
        unsafe { Registration::new(queue, ReadBytes::of_slice(bytes)) }
    }

    #[test]
    fn a_registration_is_unregistered_once_when_its_last_arc_goes() {
        let _serial = lock(&SERIAL);
        let (context, queue) = fake(true);
        let host = vec![1u8; 4096];
        let registration = register(&queue, &host).unwrap();
        assert!(registration.registered());
        let in_flight = registration.clone();
        drop(registration);
        assert!(context.counts().unregistered.is_empty(), "a copy still holds it");
        drop(in_flight);
        assert_eq!(context.counts().unregistered, vec![host.as_ptr() as Address]);
        // The range is free again.
        drop(register(&queue, &host).unwrap());
    }

    #[test]
    fn a_runtime_that_cannot_register_reports_a_no_op() {
        let _serial = lock(&SERIAL);
        let (context, queue) = fake(false);
        let host = vec![0u8; 64];
        let registration = register(&queue, &host).unwrap();
        assert!(!registration.registered());
        drop(registration);
        assert!(context.counts().unregistered.is_empty());
    }

    #[test]
    fn overlapping_and_empty_registrations_are_refused_with_codes() {
        let _serial = lock(&SERIAL);
        let (_context, queue) = fake(true);
        let host = vec![0u8; 8192];
        let first = register(&queue, &host[..4096]).unwrap();
        let err = register(&queue, &host[4095..]).unwrap_err();
        assert_eq!(err.code(), "ERR_HOST_RANGE_REGISTERED");
        // Adjacent is fine.
        let second = register(&queue, &host[4096..]).unwrap();
        assert_eq!(register(&queue, &host[..0]).unwrap_err().code(), "ERR_INVALID_SIZE");
        drop((first, second));
    }

    #[test]
    fn a_failed_runtime_registration_leaves_no_entry() {
        let _serial = lock(&SERIAL);
        let (context, queue) = fake(true);
        context.counts().fail_registration = true;
        let host = vec![0u8; 64];
        assert!(register(&queue, &host).is_err());
        context.counts().fail_registration = false;
        drop(register(&queue, &host).unwrap());
    }

    #[test]
    fn only_a_vouched_copy_inside_the_registration_uses_it_and_others_bounce() {
        let _serial = lock(&SERIAL);
        let (context, queue) = fake(true);
        let mut host = vec![5u8; 4096];
        let registration = register(&queue, &host).unwrap();
        let device = queue.allocate(crate::runtime::UsmKind::Device, 4096, 0).unwrap();
        // SAFETY: the fake never touches memory.
        let device_bytes = unsafe { WriteBytes::from_raw(device, 4096) };

        host_copy(&queue, device_bytes, ReadBytes::of_slice(&host), HostSide::Source, Some(&registration)).unwrap();
        assert_eq!(context.counts().registered_copies, 1);
        let plain_before = context.counts().plain_copies.len();

        // Not vouched: through a bounce buffer, never the registered range itself.
        host_copy(
            &queue,
            WriteBytes::of_slice(&mut host[..100]),
            device_bytes.as_read().prefix(100).unwrap(),
            HostSide::Destination,
            None,
        )
        .unwrap();
        let counts = context.counts();
        assert_eq!(counts.registered_copies, 1);
        let plain = &counts.plain_copies[plain_before..];
        assert_eq!(plain.len(), 1);
        assert!(!registration.covers(plain[0].0, 100), "the runtime was given the bounce buffer");
        drop(counts);

        // Vouched for another registration's bytes (a range it does not cover): bounced.
        let other = vec![0u8; 64];
        let other_registration = register(&queue, &other).unwrap();
        host_copy(&queue, device_bytes, ReadBytes::of_slice(&host), HostSide::Source, Some(&other_registration))
            .unwrap();
        assert_eq!(context.counts().registered_copies, 1);
        drop((registration, other_registration));

        // No registration left: plain again, with the caller's own range.
        host_copy(&queue, device_bytes, ReadBytes::of_slice(&host), HostSide::Source, None).unwrap();
        let last = *context.counts().plain_copies.last().unwrap();
        assert_eq!(last.1, host.as_ptr() as Address);
    }

    #[test]
    fn a_no_op_registration_leaves_copies_plain() {
        let _serial = lock(&SERIAL);
        let (context, queue) = fake(false);
        let host = vec![5u8; 256];
        let registration = register(&queue, &host).unwrap();
        let device = queue.allocate(crate::runtime::UsmKind::Device, 256, 0).unwrap();
        // SAFETY: the fake never touches memory.
        let device_bytes = unsafe { WriteBytes::from_raw(device, 256) };
        host_copy(&queue, device_bytes, ReadBytes::of_slice(&host), HostSide::Source, None).unwrap();
        host_copy(&queue, device_bytes, ReadBytes::of_slice(&host), HostSide::Source, Some(&registration)).unwrap();
        let counts = context.counts();
        assert_eq!(counts.registered_copies, 0);
        assert!(counts.plain_copies.iter().all(|&(_, src)| src == host.as_ptr() as Address));
    }
}
