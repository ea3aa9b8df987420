//! Persistent worker threads for the parallel copies (staging lanes, large host copies).
//! Spawning threads for each copy costs tens of microseconds apiece, a large share of a
//! copy of a few MiB; these are made once, on first use, and kept. A worker that finishes
//! a job watches its own mailbox for a short while before it sleeps: copies come in runs
//! (a loop of copies of a few MiB), and waking a sleeping thread costs a scheduler round
//! trip per worker, which for the mid sizes is as long as the copy's own share of a lane.
//!
//! A sender hands each job to a watching worker's mailbox (one cache line per worker, so
//! watchers poll nothing another thread writes until a job comes); jobs no worker watches
//! for go to the shared queue, where a worker looks first when it finishes a job, and
//! sleeping workers are woken for them.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::sync::lock;

/// One unit of a parallel copy, run once on whichever thread takes it.
pub(crate) type Job = Box<dyn FnOnce() + Send + 'static>;

/// How long an idle worker watches its mailbox before it sleeps.
const WATCH: Duration = Duration::from_micros(200);

/// How long the caller of `run_pieces` watches for the last piece before it sleeps: the
/// pieces of a staged chunk end within microseconds of each other, sooner than a sleeping
/// thread is woken.
const WAIT_WATCH: Duration = Duration::from_micros(50);

/// The jobs no watching worker took, and how many workers sleep on `wake`.
struct Queue {
    jobs: VecDeque<Job>,
    sleeping: usize,
}

/// One worker's mailbox, on a cache line of its own.
#[repr(align(128))]
struct Mailbox {
    /// Set by the worker while it watches. A sender that clears it has claimed the
    /// mailbox and owes it one job; a worker that clears it itself has stopped watching.
    watching: AtomicBool,
    /// Set once the claimed job is in `job`.
    delivered: AtomicBool,
    job: Mutex<Option<Job>>,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    /// `queue.jobs.len()`, readable without the lock.
    waiting: AtomicUsize,
    mailboxes: Box<[Mailbox]>,
}

/// The worker threads: an idle worker takes the next job handed to it or queued.
pub(crate) struct Workers {
    shared: Arc<Shared>,
    /// How many were started.
    count: usize,
}

impl Mailbox {
    /// The job a sender claimed this mailbox for (it is delivered right after the claim).
    fn receive(&self) -> Job {
        loop {
            if self.delivered.load(Ordering::Acquire) {
                if let Some(job) = lock(&self.job).take() {
                    self.delivered.store(false, Ordering::Release);
                    return job;
                }
            }
            std::hint::spin_loop();
        }
    }

    /// Clears `watching`; `true` when this call cleared it: for a sender, the mailbox is
    /// claimed; for its worker, it stopped watching before any sender claimed it (else a
    /// job is coming).
    fn clear_watching(&self) -> bool {
        self.watching.compare_exchange(true, false, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }
}

impl Shared {
    /// The next queued job, if one is there.
    fn try_take(&self) -> Option<Job> {
        if self.waiting.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut queue = lock(&self.queue);
        let job = queue.jobs.pop_front();
        self.waiting.store(queue.jobs.len(), Ordering::Release);
        job
    }

    /// Worker `me`'s next job: a queued one; else one handed to its mailbox while it
    /// watches during `WATCH` (it also looks at the queue now and then); else, asleep, the
    /// next queued one.
    fn take(&self, me: usize) -> Job {
        if let Some(job) = self.try_take() {
            return job;
        }
        let mailbox = &self.mailboxes[me];
        mailbox.watching.store(true, Ordering::Release);
        let until = Instant::now() + WATCH;
        let mut polls = 0u32;
        loop {
            if !mailbox.watching.load(Ordering::Acquire) {
                return mailbox.receive();
            }
            polls = polls.wrapping_add(1);
            if polls.is_multiple_of(64) {
                let expired = Instant::now() >= until;
                if expired || self.waiting.load(Ordering::Acquire) > 0 {
                    if !mailbox.clear_watching() {
                        return mailbox.receive();
                    }
                    if let Some(job) = self.try_take() {
                        return job;
                    }
                    if expired {
                        break;
                    }
                    mailbox.watching.store(true, Ordering::Release);
                }
            }
            std::hint::spin_loop();
        }
        let mut queue = lock(&self.queue);
        loop {
            if let Some(job) = queue.jobs.pop_front() {
                self.waiting.store(queue.jobs.len(), Ordering::Release);
                return job;
            }
            queue.sleeping += 1;
            queue = self.wake.wait(queue).unwrap_or_else(|poisoned| poisoned.into_inner());
            queue.sleeping -= 1;
        }
    }
}

fn work(shared: Arc<Shared>, me: usize) {
    loop {
        // A panicking job must not take the worker down (its `Done` still counts).
        drop(catch_unwind(AssertUnwindSafe(shared.take(me))));
    }
}

impl Workers {
    /// Up to `count` workers; `None` when the OS gives none (then jobs run inline).
    fn start(count: usize) -> Option<Workers> {
        let mailboxes = (0..count)
            .map(|_| Mailbox {
                watching: AtomicBool::new(false),
                delivered: AtomicBool::new(false),
                job: Mutex::new(None),
            })
            .collect();
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue { jobs: VecDeque::new(), sleeping: 0 }),
            wake: Condvar::new(),
            waiting: AtomicUsize::new(0),
            mailboxes,
        });
        // A worker that could not be spawned never watches, so nothing is handed to it.
        let started = (0..count)
            .filter(|&i| {
                let shared = shared.clone();
                std::thread::Builder::new()
                    .name(format!("dpctl-memory-copy-{i}"))
                    .spawn(move || work(shared, i))
                    .is_ok()
            })
            .count();
        (started > 0).then_some(Workers { shared, count: started })
    }

    /// Hands each of `jobs` to a watching worker; queues the rest, waking as many
    /// sleeping workers as there are queued jobs.
    fn send(&self, jobs: impl IntoIterator<Item = Job>) {
        let mut mailboxes = self.shared.mailboxes.iter();
        let mut left = Vec::new();
        for job in jobs {
            let claimed = mailboxes.by_ref().find(|m| m.watching.load(Ordering::Relaxed) && m.clear_watching());
            match claimed {
                Some(mailbox) => {
                    *lock(&mailbox.job) = Some(job);
                    mailbox.delivered.store(true, Ordering::Release);
                }
                None => left.push(job),
            }
        }
        if left.is_empty() {
            return;
        }
        let mut queue = lock(&self.shared.queue);
        queue.jobs.extend(left);
        self.shared.waiting.store(queue.jobs.len(), Ordering::Release);
        let wake = queue.sleeping.min(queue.jobs.len());
        drop(queue);
        for _ in 0..wake {
            self.shared.wake.notify_one();
        }
    }
}

/// The process's workers: one fewer than the copy threads wanted (the caller is one).
pub(crate) fn workers() -> Option<&'static Workers> {
    static WORKERS: OnceLock<Option<Workers>> = OnceLock::new();
    WORKERS
        .get_or_init(|| {
            let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            Workers::start(cores.clamp(1, 32) - 1)
        })
        .as_ref()
}

/// The threads a parallel copy can run on at once: the workers and the caller.
pub(crate) fn threads() -> usize {
    workers().map_or(0, |workers| workers.count) + 1
}

/// Queues `jobs` on the process's workers without waiting for them (runs them here, one
/// after the other, where there are none): for callers that wait on what the jobs do
/// rather than on each job having run.
pub(crate) fn queue_jobs(jobs: Vec<Job>) {
    match workers() {
        Some(workers) => workers.send(jobs),
        None => jobs.into_iter().for_each(|job| job()),
    }
}

/// The pieces of one `run_pieces_in_groups`: the next one to take, how many of each group
/// have run, and what running one does.
struct Pieces {
    next: AtomicUsize,
    total: usize,
    per_group: usize,
    /// Pieces run, per group of `per_group` consecutive pieces.
    groups_done: Box<[AtomicUsize]>,
    /// Set when a piece panicked (on whichever thread), so the caller never takes a group
    /// with a piece that did not finish for a whole one.
    failed: AtomicBool,
    /// Taken by the caller to sleep on `group_done`, and by the piece that ends a group to
    /// wake it, so that the wake-up cannot fall between the caller's check and its sleep.
    sleep: Mutex<()>,
    group_done: Condvar,
    piece: Box<dyn Fn(usize) + Send + Sync>,
}

/// Counts one piece as run when dropped, also when the piece panicked, so the caller of
/// `run_pieces_in_groups` never waits forever.
struct PieceDone<'a> {
    pieces: &'a Pieces,
    index: usize,
    /// Set once the piece returned: dropped without it, the piece panicked (a thread that
    /// was already unwinding when it ran the pieces is no sign of that).
    returned: bool,
}

impl Drop for PieceDone<'_> {
    fn drop(&mut self) {
        let pieces = self.pieces;
        if !self.returned {
            pieces.failed.store(true, Ordering::Release);
        }
        let group = self.index / pieces.per_group;
        if pieces.groups_done[group].fetch_add(1, Ordering::AcqRel) + 1 >= pieces.group_len(group) {
            let _sleep = lock(&pieces.sleep);
            pieces.group_done.notify_all();
        }
    }
}

impl Pieces {
    fn groups(&self) -> usize {
        self.groups_done.len()
    }

    /// How many pieces group `group` has (the last may have fewer).
    fn group_len(&self, group: usize) -> usize {
        self.per_group.min(self.total - group * self.per_group)
    }

    fn group_ran(&self, group: usize) -> bool {
        self.groups_done[group].load(Ordering::Acquire) >= self.group_len(group)
    }

    /// Returns once every piece of `group` has run: watched for during `WAIT_WATCH`, then
    /// asleep.
    fn wait_group(&self, group: usize) {
        let until = Instant::now() + WAIT_WATCH;
        while !self.group_ran(group) && Instant::now() < until {
            std::hint::spin_loop();
        }
        let mut sleep = lock(&self.sleep);
        while !self.group_ran(group) {
            sleep = self.group_done.wait(sleep).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    fn wait_all(&self) {
        (0..self.groups()).for_each(|group| self.wait_group(group));
    }

    /// Takes and runs the next piece; `false` when none was left.
    fn run_next(&self) -> bool {
        let index = self.next.fetch_add(1, Ordering::Relaxed);
        if index >= self.total {
            return false;
        }
        let mut done = PieceDone { pieces: self, index, returned: false };
        (self.piece)(index);
        done.returned = true;
        true
    }

    /// Takes and runs pieces until none is left.
    fn work(&self) {
        while self.run_next() {}
    }
}

/// Runs `piece(i)` for every `i` in `0..total`, each once, on this thread and on up to
/// `helpers` workers, each of which takes the next piece not yet taken. Returns when every
/// piece has run. A worker that gets a core only after the last piece was taken runs none,
/// so on a loaded machine the call costs at most what this thread alone would take (and
/// one piece), where a fixed split would wait for the slowest thread's share.
pub(crate) fn run_pieces(
    workers: Option<&Workers>,
    helpers: usize,
    total: usize,
    piece: impl Fn(usize) + Send + Sync + 'static,
) {
    run_pieces_in_groups(workers, helpers, total, total, piece, |_| {});
}

/// `run_pieces`, with the pieces in groups of `per_group` consecutive ones (the last may
/// have fewer): `ready(g)` runs on this thread for each group in order, once every piece
/// of group `g` has run, between this thread's own pieces and while it waits for the
/// others' (a staged copy queues each chunk's DMA while the threads copy the next chunks,
/// with one hand-off to the workers for the whole copy). After a panic of a piece or of
/// `ready`, no later `ready` runs; every piece still runs (other threads may be copying
/// into the caller's memory), then the panic goes on up. A piece that panicked on a
/// worker panics the caller in the same way (no `ready` for its group or a later one).
pub(crate) fn run_pieces_in_groups(
    workers: Option<&Workers>,
    helpers: usize,
    total: usize,
    per_group: usize,
    piece: impl Fn(usize) + Send + Sync + 'static,
    mut ready: impl FnMut(usize),
) {
    if total == 0 {
        return;
    }
    let per_group = per_group.clamp(1, total);
    let pieces = Arc::new(Pieces {
        next: AtomicUsize::new(0),
        total,
        per_group,
        groups_done: (0..total.div_ceil(per_group)).map(|_| AtomicUsize::new(0)).collect(),
        failed: AtomicBool::new(false),
        sleep: Mutex::new(()),
        group_done: Condvar::new(),
        piece: Box::new(piece),
    });
    if let Some(workers) = workers {
        workers.send((0..helpers.min(total - 1)).map(|_| {
            let shared = pieces.clone();
            Box::new(move || shared.work()) as Job
        }));
    }
    let mut readied = 0;
    let mut ready_in_order = |readied: &mut usize, wait: bool| {
        while *readied < pieces.groups() {
            if wait {
                pieces.wait_group(*readied);
            } else if !pieces.group_ran(*readied) {
                return;
            }
            assert!(!pieces.failed.load(Ordering::Acquire), "a piece of a parallel copy panicked");
            ready(*readied);
            *readied += 1;
        }
    };
    let mut panicked = catch_unwind(AssertUnwindSafe(|| {
        while pieces.run_next() {
            ready_in_order(&mut readied, false);
        }
        ready_in_order(&mut readied, true);
    }))
    .err();
    // Whatever happened, no piece may still be running when this returns.
    while let Err(payload) = catch_unwind(AssertUnwindSafe(|| pieces.work())) {
        panicked.get_or_insert(payload);
    }
    pieces.wait_all();
    if let Some(payload) = panicked {
        std::panic::resume_unwind(payload);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_piece_runs_once_with_workers_without_and_after_a_panic() {
        for (workers, helpers) in [(workers(), 7), (None, 3), (workers(), 0)] {
            let hits = Arc::new((0..100).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>());
            let counted = hits.clone();
            run_pieces(workers, helpers, 100, move |i| {
                counted[i].fetch_add(1, Ordering::SeqCst);
            });
            assert!(hits.iter().all(|h| h.load(Ordering::SeqCst) == 1), "each piece once");
        }
        // A piece that panics (here or on a worker) is counted as run; the others all run.
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            run_pieces(workers(), 3, 50, move |i| {
                counted.fetch_add(1, Ordering::SeqCst);
                assert!(i != 7, "a piece that panics");
            })
        }));
        // Whichever thread ran piece 7, the caller panics, after every piece ran.
        assert!(outcome.is_err(), "the panic reaches the caller");
        assert_eq!(hits.load(Ordering::SeqCst), 50, "every piece ran, the panicking one too");
        run_pieces(workers(), 3, 10, |_| {});
    }

    #[test]
    fn each_group_is_ready_once_in_order_after_all_its_pieces_ran() {
        for (total, per_group, helpers) in [(64, 16, 7), (37, 8, 3), (5, 1, 31), (9, 100, 2), (40, 16, 0)] {
            let hits = Arc::new((0..total).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>());
            let counted = hits.clone();
            let mut readied = Vec::new();
            run_pieces_in_groups(
                workers(),
                helpers,
                total,
                per_group,
                move |i| {
                    counted[i].fetch_add(1, Ordering::SeqCst);
                },
                |group| {
                    let pieces = group * per_group..((group + 1) * per_group).min(total);
                    assert!(pieces.clone().all(|i| hits[i].load(Ordering::SeqCst) == 1), "group {group} whole");
                    readied.push(group);
                },
            );
            assert_eq!(readied, (0..total.div_ceil(per_group)).collect::<Vec<_>>(), "{total}/{per_group}");
        }
    }

    #[test]
    fn a_piece_that_panics_stops_the_groups_and_reaches_the_caller() {
        // Whichever thread runs piece 3, the caller panics, every piece still runs, and no
        // group from the panicking one on is ready.
        for _ in 0..20 {
            let hits = Arc::new(AtomicUsize::new(0));
            let counted = hits.clone();
            let mut readied = Vec::new();
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
                run_pieces_in_groups(
                    workers(),
                    7,
                    32,
                    4,
                    move |i| {
                        counted.fetch_add(1, Ordering::SeqCst);
                        assert!(i != 3, "a piece that panics");
                    },
                    |group| readied.push(group),
                )
            }));
            assert!(outcome.is_err(), "the panic reaches the caller");
            assert_eq!(hits.load(Ordering::SeqCst), 32, "every piece ran");
            assert!(readied.is_empty(), "group 0 held the panicking piece: {readied:?}");
        }
    }

    #[test]
    fn pieces_run_from_a_drop_during_an_unwinding_do_not_count_as_panicked() {
        struct CopiesWhenDropped(Arc<AtomicUsize>);
        impl Drop for CopiesWhenDropped {
            fn drop(&mut self) {
                let counted = self.0.clone();
                run_pieces(workers(), 3, 8, move |_| {
                    counted.fetch_add(1, Ordering::SeqCst);
                });
            }
        }
        let hits = Arc::new(AtomicUsize::new(0));
        let guard = CopiesWhenDropped(hits.clone());
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(move || {
            let _guard = guard;
            panic!("unwinding past a value whose drop copies");
        }));
        assert!(outcome.is_err());
        assert_eq!(hits.load(Ordering::SeqCst), 8, "every piece ran, and the drop did not panic (an abort)");
    }

    #[test]
    fn senders_racing_for_the_watching_workers_run_every_piece_once() {
        // Several threads hand pieces out at once, in bursts with pauses long and short, so
        // claims meet workers that stop watching, sleep and wake.
        std::thread::scope(|scope| {
            for sender in 0..4u64 {
                scope.spawn(move || {
                    for round in 0..200u64 {
                        let hits = Arc::new((0..37).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>());
                        let counted = hits.clone();
                        run_pieces(workers(), 31, 37, move |i| {
                            counted[i].fetch_add(1, Ordering::SeqCst);
                        });
                        assert!(hits.iter().all(|h| h.load(Ordering::SeqCst) == 1), "sender {sender} round {round}");
                        if round % 50 == 49 {
                            std::thread::sleep(Duration::from_micros(300 * (sender + 1)));
                        }
                    }
                });
            }
        });
    }
}
