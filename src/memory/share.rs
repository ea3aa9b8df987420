//! Sharing memory with other threads of this process (`mem.share()` / `openShared()`).
//!
//! A share is an entry of one process-wide table: the memory (so its allocation) held
//! under a token until exactly one of three things closes it:
//! - **open**: the receiver takes the memory out, into a memory object of its own;
//! - **revoke**: anyone holding the token gives the hold back;
//! - **expiry**: the token's timeout passes unopened (a reaper thread gives it back, so a
//!   token posted to a thread that never opens it pins nothing for longer than that).
//!
//! A token is single-open. Its text is `<id hex>.<mac hex>`, where the mac is a keyed hash
//! of the id with a key drawn at random for this process: a token made up, edited, or made
//! by another process is refused as invalid, never taken for another share. (Code in the
//! same process can read its memory anyway; the mac guards against mistakes, not against
//! that code.) Closed tokens are remembered (the last [`CLOSED_KEPT`]) so that a second
//! open, or one after revoke or expiry, says which; older ones read as expired.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::error::{MemoryError, Result};
use crate::memory::usm::UsmMemory;
use crate::runtime::UsmKind;

/// The timeout of a token made without one.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// The longest timeout a token may have (that of a JS `setTimeout`, about 24.8 days).
pub const MAX_TIMEOUT_MS: u64 = (1 << 31) - 1;
/// How many closed tokens are remembered with what closed them.
pub const CLOSED_KEPT: usize = 1 << 16;

/// What closed a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    Opened,
    Revoked,
    Expired,
}

/// A parsed token: the share's id and its mac.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareToken {
    id: u64,
    mac: u64,
}

impl ShareToken {
    /// Parses the text [`ShareToken::text`] writes, and only that: lowercase hex, the id
    /// without leading zeros, the mac in exactly 16 digits. Any other spelling of the same
    /// numbers (upper case, zero padding) is `ERR_SHARE_TOKEN_INVALID`, so an altered
    /// handle never opens (and so never closes) the share it resembles.
    pub fn parse(text: &str) -> Result<ShareToken> {
        fn hex(digits: &str) -> Option<u64> {
            let plain = !digits.is_empty() && digits.len() <= 16 && digits.bytes().all(|b| b.is_ascii_hexdigit());
            plain.then(|| u64::from_str_radix(digits, 16).ok()).flatten()
        }
        let parsed = text.split_once('.').and_then(|(id, mac)| {
            let mac = if mac.len() == 16 { hex(mac)? } else { return None };
            Some(ShareToken { id: hex(id)?, mac })
        });
        parsed
            .filter(|token| token.text() == text)
            .ok_or_else(|| invalid("its handle is not of the form share() writes"))
    }

    /// The text form a token carries.
    pub fn text(&self) -> String {
        format!("{:x}.{:016x}", self.id, self.mac)
    }
}

fn invalid(why: &str) -> MemoryError {
    MemoryError::ShareTokenInvalid {
        message: format!(
            "not a token made by share() in this process: {why}. A token opens only in the process that made it"
        ),
    }
}

/// A token's timeout in milliseconds (`None`: the default), checked.
pub fn timeout_of(ms: Option<f64>) -> Result<Duration> {
    let Some(ms) = ms else { return Ok(Duration::from_millis(DEFAULT_TIMEOUT_MS)) };
    if ms.fract() != 0.0 || !(1.0..=MAX_TIMEOUT_MS as f64).contains(&ms) {
        return Err(MemoryError::InvalidTimeout {
            message: format!("timeout must be an integer number of milliseconds from 1 to {MAX_TIMEOUT_MS}, not {ms}"),
        });
    }
    Ok(Duration::from_millis(ms as u64))
}

struct Pending {
    memory: UsmMemory,
    deadline: Instant,
}

#[derive(Default)]
struct Book {
    /// The id of the next share (ids start at 1 and are never reused).
    next: u64,
    pending: HashMap<u64, Pending>,
    /// `(deadline, id)` of every pending share, earliest first.
    deadlines: BTreeSet<(Instant, u64)>,
    closed: HashMap<u64, Closed>,
    /// Closed ids, oldest first, for forgetting beyond `CLOSED_KEPT`.
    closed_order: VecDeque<u64>,
    /// When the reaper wakes next (`None`: not until woken). A share whose deadline is
    /// later needs no wake-up: waking it costs a context switch per share.
    reaper_wakes: Option<Instant>,
}

impl Book {
    fn close(&mut self, id: u64, how: Closed) {
        self.closed.insert(id, how);
        self.closed_order.push_back(id);
        while self.closed_order.len() > CLOSED_KEPT {
            if let Some(old) = self.closed_order.pop_front() {
                self.closed.remove(&old);
            }
        }
    }

    fn take(&mut self, id: u64, how: Closed) -> Option<UsmMemory> {
        let pending = self.pending.remove(&id)?;
        self.deadlines.remove(&(pending.deadline, id));
        self.close(id, how);
        Some(pending.memory)
    }

    /// Takes out every share whose deadline is at or before `now`; the caller drops
    /// them after unlocking (giving an allocation back takes the pool's locks).
    fn take_expired(&mut self, now: Instant) -> Vec<UsmMemory> {
        let mut expired = Vec::new();
        while let Some(&(deadline, id)) = self.deadlines.first() {
            if deadline > now {
                break;
            }
            if let Some(memory) = self.take(id, Closed::Expired) {
                expired.push(memory);
            } else {
                self.deadlines.remove(&(deadline, id));
            }
        }
        expired
    }
}

/// The table of shares (one per process, the
/// [`ProcessRuntime`](crate::memory::process::ProcessRuntime)'s; tests make their own).
pub struct ShareTable {
    book: Mutex<Book>,
    /// Wakes the reaper when a share has an earlier deadline than every other.
    wake: Condvar,
    key: RandomState,
    /// The reaper thread, started at the first share (or why it could not start).
    reaper: OnceLock<std::result::Result<(), String>>,
}

/// What [`ShareTable::share`] tells its caller beyond the token.
pub struct Shared {
    pub token: ShareToken,
    /// The new share's deadline comes before the reaper would wake: it must be woken.
    pub wake_reaper: bool,
}

impl Default for ShareTable {
    fn default() -> Self {
        ShareTable {
            book: Mutex::new(Book { next: 1, ..Book::default() }),
            wake: Condvar::new(),
            key: RandomState::new(),
            reaper: OnceLock::new(),
        }
    }
}

impl ShareTable {
    fn book(&self) -> MutexGuard<'_, Book> {
        crate::sync::lock(&self.book)
    }

    fn mac(&self, id: u64) -> u64 {
        self.key.hash_one(id)
    }

    /// The share a token names, if its mac is this table's.
    fn checked(&self, token: &ShareToken) -> Result<u64> {
        if token.id == 0 || self.mac(token.id) != token.mac {
            return Err(invalid("its handle was not issued here, or was altered"));
        }
        Ok(token.id)
    }

    /// Holds `memory` under a new token that expires `timeout` after `now`. Only memory
    /// whose allocation this process made can be shared: nothing here could keep another
    /// library's memory alive for the receiver.
    pub fn share(&self, memory: &UsmMemory, timeout: Duration, now: Instant) -> Result<Shared> {
        memory.check_owned_here("be shared")?;
        let deadline = now.checked_add(timeout).ok_or_else(|| MemoryError::InvalidTimeout {
            message: format!("a timeout of {} ms is beyond this clock", timeout.as_millis()),
        })?;
        let (token, wake_reaper, expired) = {
            let mut book = self.book();
            let expired = book.take_expired(now);
            let id = book.next;
            book.next += 1;
            let wake_reaper = book.reaper_wakes.is_none_or(|wakes| deadline < wakes);
            if wake_reaper {
                book.reaper_wakes = Some(deadline);
            }
            book.pending.insert(id, Pending { memory: memory.clone(), deadline });
            book.deadlines.insert((deadline, id));
            (ShareToken { id, mac: self.mac(id) }, wake_reaper, expired)
        };
        drop(expired);
        Ok(Shared { token, wake_reaper })
    }

    /// Opens a token: the memory it holds, which the caller now holds instead. `kind` and
    /// `nbytes` are what the token says of it; a token that disagrees with its share was
    /// altered and is refused without closing the share.
    pub fn open(&self, token: &ShareToken, kind: UsmKind, nbytes: u64, now: Instant) -> Result<UsmMemory> {
        let id = self.checked(token)?;
        let mut book = self.book();
        let expired = book.take_expired(now);
        let result = match book.pending.get(&id) {
            Some(pending) if pending.memory.usm_type(None) != kind || pending.memory.nbytes() != nbytes => {
                Err(invalid(&format!(
                    "it says {nbytes} bytes of {} memory, but its share holds {} bytes of {} memory",
                    kind.name(),
                    pending.memory.nbytes(),
                    pending.memory.usm_type(None).name()
                )))
            }
            Some(_) => book.take(id, Closed::Opened).ok_or_else(|| invalid("its share vanished")),
            None => Err(closed_error(book.closed.get(&id).copied(), id < book.next)),
        };
        drop(book);
        drop(expired);
        result
    }

    /// Revokes a token that is still pending (`true`), giving its hold back; a token
    /// already closed is left as it is (`false`).
    pub fn revoke(&self, token: &ShareToken, now: Instant) -> Result<bool> {
        let id = self.checked(token)?;
        let (revoked, expired) = {
            let mut book = self.book();
            let expired = book.take_expired(now);
            (book.take(id, Closed::Revoked), expired)
        };
        drop(expired);
        Ok(revoked.is_some())
    }

    /// Gives back every share whose timeout has passed at `now`; how many (the reaper's
    /// step, for tests that set the time).
    #[cfg(test)]
    pub fn expire(&self, now: Instant) -> usize {
        let expired = self.book().take_expired(now);
        expired.len()
    }

    /// Shares not yet opened, revoked or expired.
    #[cfg(test)]
    pub fn pending(&self) -> usize {
        self.book().pending.len()
    }

    /// Runs forever: gives back each share when its timeout passes.
    fn reap(&self) {
        let mut book = self.book();
        loop {
            let now = Instant::now();
            let expired = book.take_expired(now);
            if !expired.is_empty() {
                drop(book);
                drop(expired);
                book = self.book();
                continue;
            }
            let next = book.deadlines.first().map(|&(deadline, _)| deadline);
            book.reaper_wakes = next;
            book = match next {
                Some(deadline) => {
                    let wait = deadline.saturating_duration_since(now);
                    self.wake.wait_timeout(book, wait).map(|(guard, _)| guard).unwrap_or_else(|p| p.into_inner().0)
                }
                None => self.wake.wait(book).unwrap_or_else(|p| p.into_inner()),
            };
        }
    }
}

fn closed_error(closed: Option<Closed>, issued: bool) -> MemoryError {
    match closed {
        Some(Closed::Opened) => MemoryError::ShareTokenOpened {
            message: "this token was opened already: a token opens once (share() again for another receiver)".into(),
        },
        Some(Closed::Revoked) => MemoryError::ShareTokenRevoked,
        Some(Closed::Expired) => MemoryError::ShareTokenExpired {
            message: "this token expired before it was opened (its timeout passed; share({ timeout }) sets it)".into(),
        },
        None if issued => MemoryError::ShareTokenExpired {
            message: format!(
                "this token was closed (opened, revoked or expired) before the last {CLOSED_KEPT} tokens were"
            ),
        },
        None => invalid("no such share was made"),
    }
}

impl ShareTable {
    /// Shares `memory` now (`timeout_ms`: `None` for the default), with this table's
    /// reaper thread (started at the first share) to give it back at its timeout.
    pub fn share_token(&'static self, memory: &UsmMemory, timeout_ms: Option<f64>) -> Result<ShareToken> {
        let timeout = timeout_of(timeout_ms)?;
        let reaper = self.reaper.get_or_init(|| {
            std::thread::Builder::new()
                .name("dpctl-memory-share-reaper".into())
                .spawn(move || self.reap())
                .map(drop)
                .map_err(|err| err.to_string())
        });
        if let Err(why) = reaper {
            return Err(MemoryError::ShareReaperUnavailable { why: why.clone() });
        }
        let shared = self.share(memory, timeout, Instant::now())?;
        if shared.wake_reaper {
            self.wake.notify_one();
        }
        Ok(shared.token)
    }

    /// Opens a token's text now.
    pub fn open_token(&self, token: &str, kind: UsmKind, nbytes: u64) -> Result<UsmMemory> {
        self.open(&ShareToken::parse(token)?, kind, nbytes, Instant::now())
    }

    /// Revokes a token's text now.
    pub fn revoke_token(&self, token: &str) -> Result<bool> {
        self.revoke(&ShareToken::parse(token)?, Instant::now())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::memory::pool::test_pool;
    use crate::memory::usm::Owner;
    use crate::runtime::fake::{FakeContext, FakeDevice};

    fn context(id: u64) -> Arc<FakeContext> {
        FakeContext::new(id, FakeDevice::new(1 << 34, 1 << 34))
    }

    fn code<T>(result: Result<T>) -> &'static str {
        match result {
            Ok(_) => "ok",
            Err(err) => err.code(),
        }
    }

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn share_a_token_opens_once_into_the_same_allocation_and_the_allocation_outlives_the_sender() {
        let context = context(3001);
        let queue = context.queue();
        let table = ShareTable::default();
        let now = Instant::now();
        let sender = UsmMemory::allocate(test_pool(), &queue, UsmKind::Shared, 4096, 0).unwrap();
        let address = sender.address();
        let token = table.share(&sender, SECOND, now).unwrap().token;
        drop(sender); // the sender frees before the receiver opens
        assert!(context.counts().frees.is_empty());
        assert_eq!(test_pool().cached_range(address), None, "the token holds the allocation");
        let parsed = ShareToken::parse(&token.text()).unwrap();
        assert_eq!(parsed, token);
        let received = table.open(&parsed, UsmKind::Shared, 4096, now).unwrap();
        assert_eq!(received.address(), address, "zero-copy: the same bytes");
        assert!(Arc::ptr_eq(received.queue(), &queue), "and the same queue");
        assert_eq!(code(table.open(&parsed, UsmKind::Shared, 4096, now)), "ERR_SHARE_TOKEN_OPENED");
        assert_eq!(table.pending(), 0);
        assert!(!table.revoke(&parsed, now).unwrap(), "an opened token has nothing to revoke");
        drop(received);
        let pooled = test_pool().enabled();
        assert_eq!(test_pool().cached_range(address).is_some(), pooled, "the last holder gave it back");
        assert_eq!(context.counts().bad_frees, 0);
    }

    #[test]
    fn share_a_token_never_opened_expires_and_releases_its_memory() {
        let context = context(3002);
        let queue = context.queue();
        let table = ShareTable::default();
        let now = Instant::now();
        let memory = UsmMemory::allocate(test_pool(), &queue, UsmKind::Host, 100, 4096).unwrap(); // unpooled
        let address = memory.address();
        let long = table.share(&memory, SECOND, now).unwrap();
        assert!(long.wake_reaper, "the reaper was waiting for nothing");
        let short = table.share(&memory, Duration::from_millis(10), now).unwrap();
        assert!(short.wake_reaper, "an earlier deadline wakes the reaper");
        let later = table.share(&memory, SECOND, now).unwrap();
        assert!(!later.wake_reaper, "a later one does not");
        assert!(table.revoke(&later.token, now).unwrap());
        drop(memory);
        assert_eq!(table.expire(now + Duration::from_millis(9)), 0);
        assert_eq!(table.expire(now + Duration::from_millis(10)), 1);
        assert_eq!(code(table.open(&short.token, UsmKind::Host, 100, now)), "ERR_SHARE_TOKEN_EXPIRED");
        assert!(context.counts().frees.is_empty(), "the second token still holds it");
        // Expiry is checked at open too, whether or not the reaper has run.
        assert_eq!(code(table.open(&long.token, UsmKind::Host, 100, now + SECOND)), "ERR_SHARE_TOKEN_EXPIRED");
        assert_eq!(context.counts().frees, vec![address]);
        assert_eq!(table.pending(), 0);
    }

    #[test]
    fn share_revoked_forged_and_altered_tokens_have_their_codes() {
        let context = context(3003);
        let queue = context.queue();
        let table = ShareTable::default();
        let now = Instant::now();
        let memory = UsmMemory::allocate(test_pool(), &queue, UsmKind::Device, 64, 0).unwrap();
        let token = table.share(&memory, SECOND, now).unwrap().token;
        // Altered kind or size: refused, and the share stays open for the real receiver.
        assert_eq!(code(table.open(&token, UsmKind::Host, 64, now)), "ERR_SHARE_TOKEN_INVALID");
        assert_eq!(code(table.open(&token, UsmKind::Device, 65, now)), "ERR_SHARE_TOKEN_INVALID");
        // A made-up mac, a made-up id, a token of another table (another process).
        let forged = ShareToken { id: token.id, mac: token.mac ^ 1 };
        assert_eq!(code(table.open(&forged, UsmKind::Device, 64, now)), "ERR_SHARE_TOKEN_INVALID");
        assert_eq!(code(table.revoke(&forged, now)), "ERR_SHARE_TOKEN_INVALID");
        let other = ShareTable::default();
        let theirs = other.share(&memory, SECOND, now).unwrap().token;
        assert_eq!(theirs.id, token.id, "ids are per table");
        assert_eq!(code(table.open(&theirs, UsmKind::Device, 64, now)), "ERR_SHARE_TOKEN_INVALID");
        let unissued = ShareToken { id: 99, mac: table.mac(99) };
        assert_eq!(code(table.open(&unissued, UsmKind::Device, 64, now)), "ERR_SHARE_TOKEN_INVALID");
        for text in ["", ".", "1.", ".0123456789abcdef", "1.0123", "1.0123456789abcdefg", "x.0123456789abcdef", "1:0"] {
            assert_eq!(code(ShareToken::parse(text)), "ERR_SHARE_TOKEN_INVALID", "{text:?}");
        }
        // Other spellings of the real token's numbers: refused, and the share stays open.
        let text = token.text();
        let (id, mac) = text.split_once('.').unwrap();
        let respelled = [
            text.to_uppercase(),
            format!("{id}.{}", mac.to_uppercase()),
            format!("0{id}.{mac}"),
            format!("{:016x}.{mac}", token.id),
            format!("+{id}.{mac}"),
        ];
        // (An all-digit mac reads the same in upper case: that spelling is the token.)
        for spelling in respelled.iter().filter(|spelling| **spelling != text) {
            assert_eq!(code(ShareToken::parse(spelling)), "ERR_SHARE_TOKEN_INVALID", "{spelling:?}");
        }
        assert_eq!(ShareToken::parse(&text).unwrap(), token);
        assert!(table.revoke(&token, now).unwrap());
        assert!(!table.revoke(&token, now).unwrap(), "revoke is idempotent");
        assert_eq!(code(table.open(&token, UsmKind::Device, 64, now)), "ERR_SHARE_TOKEN_REVOKED");
        assert_eq!(table.pending(), 0);
        drop(other);
        drop(memory);
        assert_eq!(context.counts().bad_frees, 0);
    }

    #[test]
    fn share_of_memory_another_library_owns_and_bad_timeouts_are_refused() {
        let context = context(3004);
        let queue = context.queue();
        let table = ShareTable::default();
        let exporter = vec![0u8; 16];
        // SAFETY: `exporter` stands for another library's memory and outlives `foreign`.
        let foreign = unsafe { UsmMemory::from_interface(exporter.as_ptr() as u64, 16, queue, Owner::Foreign, false) };
        assert_eq!(code(table.share(&foreign, SECOND, Instant::now())), "ERR_SHARE_NOT_OWNED");
        drop(foreign);
        drop(exporter);
        for bad in [0.0, -1.0, 0.5, f64::NAN, f64::INFINITY, MAX_TIMEOUT_MS as f64 + 1.0] {
            assert_eq!(code(timeout_of(Some(bad))), "ERR_INVALID_TIMEOUT", "{bad}");
        }
        assert_eq!(timeout_of(None).unwrap(), Duration::from_millis(DEFAULT_TIMEOUT_MS));
        assert_eq!(timeout_of(Some(1.0)).unwrap(), Duration::from_millis(1));
    }

    #[test]
    fn share_closed_tokens_are_remembered_up_to_a_bound_then_read_as_expired() {
        let context = context(3005);
        let queue = context.queue();
        let table = ShareTable::default();
        let now = Instant::now();
        let memory = UsmMemory::allocate(test_pool(), &queue, UsmKind::Host, 8, 0).unwrap();
        let first = table.share(&memory, SECOND, now).unwrap().token;
        drop(table.open(&first, UsmKind::Host, 8, now).unwrap());
        for _ in 0..CLOSED_KEPT {
            let token = table.share(&memory, SECOND, now).unwrap().token;
            assert!(table.revoke(&token, now).unwrap());
        }
        let error = table.open(&first, UsmKind::Host, 8, now).unwrap_err();
        assert_eq!(error.code(), "ERR_SHARE_TOKEN_EXPIRED");
        assert!(error.to_string().contains("before the last"), "{error}");
        assert!(table.book().closed.len() <= CLOSED_KEPT);
    }

    #[test]
    fn share_a_table_reaper_releases_an_unopened_token_by_itself() {
        let context = context(3006);
        let queue = context.queue();
        let memory = UsmMemory::allocate(test_pool(), &queue, UsmKind::Host, 100, 8192).unwrap(); // unpooled
        let address = memory.address();
        let table: &'static ShareTable = Box::leak(Box::default());
        let token = table.share_token(&memory, Some(20.0)).unwrap();
        let kept = table.share_token(&memory, Some(MAX_TIMEOUT_MS as f64)).unwrap();
        drop(memory);
        let start = Instant::now();
        let closed = || table.book().closed.get(&token.id).copied();
        // The bound only ends a wait for a reaper that never comes.
        while closed().is_none() && start.elapsed() < Duration::from_secs(120) {
            std::thread::sleep(Duration::from_millis(5));
        }
        // Nothing here touched the token: only the reaper can have closed it.
        assert_eq!(closed(), Some(Closed::Expired));
        assert_eq!(code(table.open(&token, UsmKind::Host, 100, Instant::now())), "ERR_SHARE_TOKEN_EXPIRED");
        assert!(context.counts().frees.is_empty(), "the other token still holds it");
        assert!(table.revoke_token(&kept.text()).unwrap());
        assert_eq!(context.counts().frees, vec![address]);
        assert_eq!(code(table.open_token(&kept.text(), UsmKind::Host, 100)), "ERR_SHARE_TOKEN_REVOKED");
    }
}
