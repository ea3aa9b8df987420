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
//!   through `Queue::memcpy_registered`, with the registration in use (an end waits).
//! - Every other runtime copy whose host side overlaps a pinned (or pending) registration,
//!   of any context or thread, goes through a bounce buffer the CPU copies to or from:
//!   no plain runtime copy is ever given memory that may be stale registered memory.
//! - Live registrations never overlap (a second one over the same bytes is refused), so a
//!   range has at most one registration to vouch for.
//! - A registration ends when its last `Arc` goes (an in-flight copy that uses it holds
//!   one, so `unregister()` during the copy unregisters when the copy is done), or when a
//!   new registration over its bytes finds it stale (see [`Holder`]): the book is
//!   process-wide, and a registration of one thread can be stale by what another thread
//!   did (its `ArrayBuffer` transferred there, its memory freed and allocated there), so
//!   any thread may end another's stale registration. One in use by a copy is never
//!   stale (the copy proves its buffer holds the bytes).
//!
//! Every lookup is by range in the [`RangeBook`] of live registrations (a
//! [`RegistrationBook`], the process value's): O(log n).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::error::{MemoryError, Result};
use crate::host::{host_memcpy_parallel, Scratch, ScratchStore};
use crate::memory::allocation::Allocation;
use crate::runtime::ranges::RangeBook;
use crate::runtime::registration::RegisterOutcome;
use crate::runtime::{Address, Context, Queue, ReadBytes, WriteBytes};
use crate::sync::lock;

/// What holds a registration's bytes, so that a registration of another thread can tell
/// whether the bytes may still be the registered ones.
#[derive(Debug, Clone)]
pub enum Holder {
    /// USM memory of ours (a memory object's `buffer`): the bytes are the allocation's
    /// while it lives. Stale once it is gone (its block went back to the pool).
    Allocation(Weak<Allocation>),
    /// A plain `ArrayBuffer` of JS's own: its bytes belong to that one buffer object.
    /// Stale when another thread registers bytes over them: they are then that thread's
    /// (the buffer was transferred there, or collected and its memory reused).
    Sole,
    /// A `SharedArrayBuffer`, which other threads may hold too. Stale when another
    /// thread registers the bytes of a buffer that is not shared (the shared memory was
    /// freed, so every holder is gone).
    Shared,
}

impl Holder {
    /// The holder of host bytes at `address..address + len`: USM memory of ours when an
    /// allocation holds them, else as `shared` says.
    pub fn of(allocation: Option<&Arc<Allocation>>, shared: bool) -> Holder {
        match allocation {
            Some(allocation) => Holder::Allocation(Arc::downgrade(allocation)),
            None if shared => Holder::Shared,
            None => Holder::Sole,
        }
    }
}

/// One live range of the book.
#[derive(Debug)]
struct Entry {
    registration: Weak<Registration>,
    /// Registered with the runtime, or being registered: plain copies must avoid it.
    pinned: bool,
}

impl Entry {
    fn is(&self, registration: &Registration) -> bool {
        std::ptr::eq(self.registration.as_ptr(), registration)
    }
}

/// Every live registration of a process by range (ranges never overlap), with its count
/// for a lock-free "none" on the copy path. The process value holds the process's one
/// (`ProcessRuntime::registrations`); every copy with a host side consults it.
pub struct RegistrationBook {
    live: Mutex<RangeBook<Entry>>,
    count: AtomicUsize,
}

impl Default for RegistrationBook {
    fn default() -> Self {
        RegistrationBook { live: Mutex::new(RangeBook::new()), count: AtomicUsize::new(0) }
    }
}

impl RegistrationBook {
    /// How many registrations are live now.
    pub fn live_count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Whether `address` lies in host memory registered with a runtime now: memory of the
    /// user's, never USM memory of a context, whatever a runtime says of it (CUDA's driver
    /// calls registered memory host memory).
    pub fn registered_at(&self, address: Address) -> bool {
        self.live_count() > 0 && lock(&self.live).holding(address).is_some_and(|range| range.value.pinned)
    }

    fn lock(&self) -> MutexGuard<'_, RangeBook<Entry>> {
        lock(&self.live)
    }
}

/// What every copy through host memory consults: the registrations a runtime copy must
/// avoid, and the scratch it bounces or stages through. The process value holds the
/// process's (`ProcessRuntime::host_copies`); tests make their own.
#[derive(Default)]
pub struct HostCopies {
    pub registrations: RegistrationBook,
    pub scratch: ScratchStore,
}

impl HostCopies {
    /// A value of its own for a test, for the rest of the process (scratch blocks refer
    /// back to their store).
    #[cfg(test)]
    pub fn leaked() -> &'static HostCopies {
        Box::leak(Box::default())
    }
}

/// The state of a registration that changes after it is made.
#[derive(Debug)]
struct State {
    /// What the runtime did (`None` while the runtime call runs).
    outcome: Option<RegisterOutcome>,
    /// Copies using it now.
    uses: usize,
    /// Unregistered (or never registered) and out of the book.
    ended: bool,
}

/// A registration of host memory with the runtime of one context (or a reported no-op
/// where the runtime needs none). Dropping the last `Arc` ends it, if nothing did before.
pub struct Registration {
    /// The book it is in while it lives.
    book: &'static RegistrationBook,
    context: Arc<dyn Context>,
    address: Address,
    len: u64,
    holder: Holder,
    /// The thread (JS environment) that registered it, as the caller numbers them.
    owner: u64,
    state: Mutex<State>,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Registration({} bytes at {:#x}, {:?})", self.len, self.address, lock(&self.state).outcome)
    }
}

/// A copy's use of a registration: while it lasts the registration cannot end.
pub(crate) struct InUse<'a>(&'a Registration);

impl Drop for InUse<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.0.state);
        state.uses = state.uses.saturating_sub(1);
    }
}

impl Registration {
    /// Registers `bytes` with the runtime of `queue`'s context in `book`, for `owner` (the caller's
    /// number for the registering thread), the bytes held as `holder` says. Stale
    /// registrations over the bytes (see [`Holder`]) end first.
    ///
    /// # Safety
    /// `bytes` is host memory mapped now (a JS buffer's bytes), held as `holder` says.
    /// The registration may outlive that memory: copies use it only when vouched for (see
    /// the module).
    pub unsafe fn new(
        book: &'static RegistrationBook,
        queue: &Arc<dyn Queue>,
        bytes: ReadBytes<'_>,
        holder: Holder,
        owner: u64,
    ) -> Result<Arc<Registration>> {
        let (address, len) = (bytes.address(), bytes.len());
        if len == 0 {
            return Err(MemoryError::EmptyRegistration);
        }
        let context = queue.context();
        let registration = Arc::new(Registration {
            book,
            context,
            address,
            len,
            holder,
            owner,
            state: Mutex::new(State { outcome: None, uses: 0, ended: false }),
        });
        registration.reserve()?;
        let outcome = match registration.context.host_registration() {
            // SAFETY: the caller's contract; the registration is unregistered once, in `end`.
            Some(capability) => unsafe { capability.register(address, len) },
            None => Ok(RegisterOutcome::NotNeeded),
        };
        let mut state = lock(&registration.state);
        match outcome {
            Ok(outcome) => {
                state.outcome = Some(outcome);
                drop(state);
                if let Some(entry) = registration.book.lock().get_mut(address) {
                    entry.pinned = outcome == RegisterOutcome::Registered;
                }
                Ok(registration)
            }
            Err(e) => {
                // Nothing to unregister: out of the book now, and `end` does nothing.
                state.ended = true;
                drop(state);
                registration.leave_book();
                Err(e)
            }
        }
    }

    /// Puts the range in the book as pinned (plain copies avoid it from now on, while the
    /// runtime call runs: it may take tens of ms for a large buffer), ending the stale
    /// registrations over it first.
    fn reserve(self: &Arc<Self>) -> Result<()> {
        for attempt in 0..2 {
            let stale = {
                let mut book = self.book.lock();
                let mut stale = Vec::new();
                let mut live = None;
                for range in book.overlapping(self.address, self.len) {
                    match range.value.registration.upgrade() {
                        Some(other) if attempt == 0 && other.stale_beside(self) => stale.push(other),
                        // Live, or ending right now (its last `Arc` is going).
                        _ => live = Some((range.start, range.len)),
                    }
                }
                if let Some((start, registered)) = live {
                    return Err(MemoryError::RegistrationOverlap {
                        len: self.len,
                        address: self.address,
                        registered,
                        start,
                    });
                }
                if stale.is_empty() {
                    let entry = Entry { registration: Arc::downgrade(self), pinned: true };
                    if book.insert(self.address, self.len, entry).is_ok() {
                        self.book.count.fetch_add(1, Ordering::Relaxed);
                    }
                    return Ok(());
                }
                stale
            };
            // Ended without the book's lock (the runtime's unregistration takes a while);
            // one in use by a copy stays, and the second attempt refuses the overlap.
            for other in stale {
                other.end();
            }
        }
        let (start, registered) =
            self.book.lock().first_overlapping(self.address, self.len).map_or((self.address, 0), |r| (r.start, r.len));
        Err(MemoryError::RegistrationOverlap { len: self.len, address: self.address, registered, start })
    }

    /// Whether this registration may no longer hold its bytes, now that `new`'s owner
    /// holds bytes that overlap them (see [`Holder`]).
    fn stale_beside(&self, new: &Registration) -> bool {
        let stale = match &self.holder {
            Holder::Allocation(allocation) => allocation.strong_count() == 0,
            Holder::Sole => self.owner != new.owner,
            Holder::Shared => self.owner != new.owner && !matches!(new.holder, Holder::Shared),
        };
        stale && lock(&self.state).uses == 0
    }

    /// Takes the range out of the book if it is still this registration's.
    fn leave_book(&self) {
        if self.book.lock().remove_if(self.address, |entry| entry.is(self)).is_some() {
            self.book.count.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Ends the registration now unless a copy uses it: the runtime lets go, then the
    /// range leaves the book (until then plain copies keep avoiding it). Returns whether
    /// it is ended.
    fn end(&self) -> bool {
        let outcome = {
            let mut state = lock(&self.state);
            if state.ended {
                return true;
            }
            if state.uses > 0 {
                return false;
            }
            state.ended = true;
            state.outcome
        };
        if outcome == Some(RegisterOutcome::Registered) {
            if let Some(capability) = self.context.host_registration() {
                // SAFETY: registered through this context by `new`, unregistered once (the
                // `ended` flag), with no copy using it (`uses` is 0 and no more can begin).
                // A failure leaves nothing to do: the range leaves our book either way.
                let _ = unsafe { capability.unregister(self.address) };
            }
        }
        self.leave_book();
        true
    }

    /// The registration for one copy, unless it has ended.
    pub(crate) fn begin_use(&self) -> Option<InUse<'_>> {
        let mut state = lock(&self.state);
        if state.ended || state.outcome.is_none() {
            return None;
        }
        state.uses += 1;
        Some(InUse(self))
    }

    /// Whether it has ended (found stale by a registration of another thread).
    pub fn ended(&self) -> bool {
        lock(&self.state).ended
    }

    /// Whether the runtime registered the memory (`false`: a reported no-op).
    pub fn registered(&self) -> bool {
        lock(&self.state).outcome == Some(RegisterOutcome::Registered)
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
        // No copy uses it (each holds an `Arc` for its use), so this ends it.
        self.end();
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

fn route(book: &RegistrationBook, host: (Address, u64), vouched: Option<&Registration>) -> Route {
    if book.live_count() == 0 {
        return Route::Plain;
    }
    let book = book.lock();
    let mut overlapping = book.overlapping(host.0, host.1).peekable();
    if let (Some(r), Some(range)) = (vouched, overlapping.peek()) {
        // Inside the vouched registration: it is the only range the copy overlaps.
        if range.value.is(r) && range.covers(host.0, host.1) {
            return if r.registered() { Route::Registered } else { Route::Plain };
        }
    }
    if overlapping.any(|range| range.value.pinned) {
        Route::Bounce
    } else {
        Route::Plain
    }
}

/// A runtime copy between host memory (the `host` side) and memory of `queue`, by the
/// rules of this module, over the registrations of `host` (bouncing through its
/// scratch). `vouched` is the registration the caller checked the host memory still
/// belongs to.
pub(crate) fn host_copy(
    host_copies: &'static HostCopies,
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
    // Held for the copy: a registration found stale meanwhile cannot end under it.
    let in_use = vouched.and_then(Registration::begin_use);
    match route(&host_copies.registrations, range, in_use.as_ref().map(|used| used.0)) {
        Route::Plain => queue.memcpy(dst, src),
        Route::Registered => queue.memcpy_registered(dst, src),
        Route::Bounce => bounce(host_copies, queue, dst, src, host),
    }
}
/// The copy through memory of our own, which the CPU copies to or from the host side.
fn bounce(
    host_copies: &'static HostCopies,
    queue: &Arc<dyn Queue>,
    dst: WriteBytes<'_>,
    src: ReadBytes<'_>,
    host: HostSide,
) -> Result<()> {
    let nbytes = src.copy_len(&dst)?;
    let mut scratch = Scratch::for_copy(&host_copies.scratch, nbytes)?;
    let own = WriteBytes::of_slice(&mut scratch);
    if route(&host_copies.registrations, (own.address(), own.len()), None) != Route::Plain {
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

    fn fake(registers: bool) -> (Arc<FakeContext>, Arc<dyn Queue>) {
        let context = FakeContext::new(7, FakeDevice::new(1 << 30, 1 << 30));
        context.counts().registers = registers;
        let queue = context.queue();
        (context, queue)
    }

    fn register(book: &'static RegistrationBook, queue: &Arc<dyn Queue>, bytes: &[u8]) -> Result<Arc<Registration>> {
        register_as(book, queue, bytes, Holder::Sole, 1)
    }

    fn register_as(
        book: &'static RegistrationBook,
        queue: &Arc<dyn Queue>,
        bytes: &[u8],
        holder: Holder,
        owner: u64,
    ) -> Result<Arc<Registration>> {
        // SAFETY: the test's own buffer, alive for the test.
        unsafe { Registration::new(book, queue, ReadBytes::of_slice(bytes), holder, owner) }
    }

    #[test]
    fn a_registration_is_unregistered_once_when_its_last_arc_goes() {
        // Registrations and scratch of this test's own: the tests run in parallel.
        let copies = HostCopies::leaked();
        let book = &copies.registrations;
        let (context, queue) = fake(true);
        let host = vec![1u8; 4096];
        let registration = register(book, &queue, &host).unwrap();
        assert!(registration.registered());
        let in_flight = registration.clone();
        drop(registration);
        assert!(context.counts().unregistered.is_empty(), "a copy still holds it");
        drop(in_flight);
        assert_eq!(context.counts().unregistered, vec![host.as_ptr() as Address]);
        // The range is free again.
        drop(register(book, &queue, &host).unwrap());
    }

    #[test]
    fn a_runtime_that_cannot_register_reports_a_no_op() {
        // Registrations and scratch of this test's own: the tests run in parallel.
        let copies = HostCopies::leaked();
        let book = &copies.registrations;
        let (context, queue) = fake(false);
        let host = vec![0u8; 64];
        let registration = register(book, &queue, &host).unwrap();
        assert!(!registration.registered());
        drop(registration);
        assert!(context.counts().unregistered.is_empty());
    }

    #[test]
    fn overlapping_and_empty_registrations_are_refused_with_codes() {
        // Registrations and scratch of this test's own: the tests run in parallel.
        let copies = HostCopies::leaked();
        let book = &copies.registrations;
        let (_context, queue) = fake(true);
        let host = vec![0u8; 8192];
        let first = register(book, &queue, &host[..4096]).unwrap();
        let err = register(book, &queue, &host[4095..]).unwrap_err();
        assert_eq!(err.code(), "ERR_HOST_RANGE_REGISTERED");
        // Adjacent is fine.
        let second = register(book, &queue, &host[4096..]).unwrap();
        assert_eq!(register(book, &queue, &host[..0]).unwrap_err().code(), "ERR_INVALID_SIZE");
        drop((first, second));
    }

    #[test]
    fn a_failed_runtime_registration_leaves_no_entry() {
        // Registrations and scratch of this test's own: the tests run in parallel.
        let copies = HostCopies::leaked();
        let book = &copies.registrations;
        let (context, queue) = fake(true);
        context.counts().fail_registration = true;
        let host = vec![0u8; 64];
        assert!(register(book, &queue, &host).is_err());
        context.counts().fail_registration = false;
        drop(register(book, &queue, &host).unwrap());
    }

    #[test]
    fn only_a_vouched_copy_inside_the_registration_uses_it_and_others_bounce() {
        // Registrations and scratch of this test's own: the tests run in parallel.
        let copies = HostCopies::leaked();
        let book = &copies.registrations;
        let (context, queue) = fake(true);
        let mut host = vec![5u8; 4096];
        let registration = register(book, &queue, &host).unwrap();
        let device = queue.allocate(crate::runtime::UsmKind::Device, 4096, 0).unwrap();
        // SAFETY: the fake never touches memory.
        let device_bytes = unsafe { WriteBytes::from_raw(device, 4096) };

        host_copy(copies, &queue, device_bytes, ReadBytes::of_slice(&host), HostSide::Source, Some(&registration))
            .unwrap();
        assert_eq!(context.counts().registered_copies, 1);
        let plain_before = context.counts().plain_copies.len();

        // Not vouched: through a bounce buffer, never the registered range itself.
        host_copy(
            copies,
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
        let other_registration = register(book, &queue, &other).unwrap();
        host_copy(
            copies,
            &queue,
            device_bytes,
            ReadBytes::of_slice(&host),
            HostSide::Source,
            Some(&other_registration),
        )
        .unwrap();
        assert_eq!(context.counts().registered_copies, 1);
        drop((registration, other_registration));

        // No registration left: plain again, with the caller's own range.
        host_copy(copies, &queue, device_bytes, ReadBytes::of_slice(&host), HostSide::Source, None).unwrap();
        let last = *context.counts().plain_copies.last().unwrap();
        assert_eq!(last.1, host.as_ptr() as Address);
    }

    #[test]
    fn a_no_op_registration_leaves_copies_plain() {
        // Registrations and scratch of this test's own: the tests run in parallel.
        let copies = HostCopies::leaked();
        let book = &copies.registrations;
        let (context, queue) = fake(false);
        let host = vec![5u8; 256];
        let registration = register(book, &queue, &host).unwrap();
        let device = queue.allocate(crate::runtime::UsmKind::Device, 256, 0).unwrap();
        // SAFETY: the fake never touches memory.
        let device_bytes = unsafe { WriteBytes::from_raw(device, 256) };
        host_copy(copies, &queue, device_bytes, ReadBytes::of_slice(&host), HostSide::Source, None).unwrap();
        host_copy(copies, &queue, device_bytes, ReadBytes::of_slice(&host), HostSide::Source, Some(&registration))
            .unwrap();
        let counts = context.counts();
        assert_eq!(counts.registered_copies, 0);
        assert!(counts.plain_copies.iter().all(|&(_, src)| src == host.as_ptr() as Address));
    }

    #[test]
    fn a_sole_buffer_registered_by_another_thread_ends_the_stale_one() {
        // Registrations and scratch of this test's own: the tests run in parallel.
        let copies = HostCopies::leaked();
        let book = &copies.registrations;
        let (context, queue) = fake(true);
        let host = vec![0u8; 4096];
        // Thread 1 registered it; the buffer went to thread 2 (transferred), which
        // registers the same bytes: thread 1's is stale and ends, unregistered once.
        let first = register_as(book, &queue, &host, Holder::Sole, 1).unwrap();
        let same_thread = register_as(book, &queue, &host, Holder::Sole, 1).unwrap_err();
        assert_eq!(same_thread.code(), "ERR_HOST_RANGE_REGISTERED", "a live overlap of one thread is refused");
        let second = register_as(book, &queue, &host, Holder::Sole, 2).unwrap();
        assert!(first.ended() && !second.ended());
        assert_eq!(context.counts().unregistered, vec![host.as_ptr() as Address]);
        drop(first);
        assert_eq!(context.counts().unregistered.len(), 1, "ended once, not again when dropped");
        assert!(book.registered_at(host.as_ptr() as Address), "the new one holds the range");
        drop(second);
        assert!(!book.registered_at(host.as_ptr() as Address));
    }

    #[test]
    fn shared_memory_of_two_threads_is_a_real_overlap_and_one_in_use_is_never_stale() {
        // Registrations and scratch of this test's own: the tests run in parallel.
        let copies = HostCopies::leaked();
        let book = &copies.registrations;
        let (_context, queue) = fake(true);
        let host = vec![0u8; 4096];
        let first = register_as(book, &queue, &host, Holder::Shared, 1).unwrap();
        let err = register_as(book, &queue, &host, Holder::Shared, 2).unwrap_err();
        assert_eq!(err.code(), "ERR_HOST_RANGE_REGISTERED", "a SharedArrayBuffer may be held by both");
        // A plain buffer over those bytes in thread 2: the shared memory was freed.
        let in_use = first.begin_use().unwrap();
        assert!(register_as(book, &queue, &host, Holder::Sole, 2).is_err(), "a copy uses it: it holds its bytes");
        drop(in_use);
        let second = register_as(book, &queue, &host, Holder::Sole, 2).unwrap();
        assert!(first.ended() && first.begin_use().is_none(), "an ended registration serves no copy");
        drop((first, second));
    }

    #[test]
    fn a_registration_of_memory_whose_allocation_is_gone_is_stale_to_anyone() {
        // Registrations and scratch of this test's own: the tests run in parallel.
        let copies = HostCopies::leaked();
        let book = &copies.registrations;
        let (context, queue) = fake(true);
        let host = vec![0u8; 256];
        let pool = Box::leak(Box::new(crate::memory::pool::Pool::new(false, crate::memory::pool::Limits::default())));
        let allocation = Allocation::new(pool, &queue, crate::runtime::UsmKind::Host, 256, 0).unwrap();
        let first = register_as(book, &queue, &host, Holder::of(Some(&allocation), false), 1).unwrap();
        assert!(register_as(book, &queue, &host, Holder::Sole, 2).is_err(), "the allocation lives: a real overlap");
        drop(allocation);
        let second = register_as(book, &queue, &host, Holder::Sole, 1).unwrap();
        assert!(first.ended());
        assert_eq!(context.counts().unregistered, vec![host.as_ptr() as Address]);
        drop((first, second));
    }

    #[test]
    fn a_copy_over_several_registrations_bounces_if_any_is_pinned() {
        // Registrations and scratch of this test's own: the tests run in parallel.
        let copies = HostCopies::leaked();
        let book = &copies.registrations;
        let (pinning, queue) = fake(true);
        let (_cpu, cpu_queue) = fake(false);
        let host = vec![3u8; 8192];
        let pinned = register(book, &queue, &host[..4096]).unwrap();
        // A no-op registration of another context above it, which the copy also overlaps.
        let no_op = register(book, &cpu_queue, &host[4096..]).unwrap();
        let device = queue.allocate(crate::runtime::UsmKind::Device, 8192, 0).unwrap();
        // SAFETY: the fake never touches memory.
        let device_bytes = unsafe { WriteBytes::from_raw(device, 8192) };
        host_copy(copies, &queue, device_bytes, ReadBytes::of_slice(&host), HostSide::Source, None).unwrap();
        let last = *pinning.counts().plain_copies.last().unwrap();
        assert_ne!(last.1, host.as_ptr() as Address, "bounced: the runtime never saw the pinned range");
        drop((pinned, no_op));
    }

    #[test]
    fn many_registrations_cost_a_lookup_each() {
        // Registrations and scratch of this test's own: the tests run in parallel.
        let copies = HostCopies::leaked();
        let book = &copies.registrations;
        let (_context, queue) = fake(false);
        let host = vec![0u8; 100_000];
        let before = book.live_count();
        let all: Vec<_> = (0..host.len()).map(|i| register(book, &queue, &host[i..=i]).unwrap()).collect();
        assert_eq!(book.live_count(), before + host.len());
        assert!(register(book, &queue, &host[500..501]).is_err());
        drop(all);
        assert_eq!(book.live_count(), before);
    }
}
