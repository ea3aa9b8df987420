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

/// The pieces of one `run_pieces`: the next one to take, how many have run, and what
/// running one does.
struct Pieces {
    next: AtomicUsize,
    total: usize,
    done: AtomicUsize,
    /// Taken by the caller to sleep on `all_done`, and by the piece that ends last to
    /// wake it, so that the wake-up cannot fall between the caller's check and its sleep.
    sleep: Mutex<()>,
    all_done: Condvar,
    piece: Box<dyn Fn(usize) + Send + Sync>,
}

/// Counts one piece as run when dropped, also when the piece panicked, so the caller of
/// `run_pieces` never waits forever.
struct PieceDone<'a>(&'a Pieces);

impl Drop for PieceDone<'_> {
    fn drop(&mut self) {
        if self.0.done.fetch_add(1, Ordering::AcqRel) + 1 >= self.0.total {
            let _sleep = lock(&self.0.sleep);
            self.0.all_done.notify_all();
        }
    }
}

impl Pieces {
    fn all_ran(&self) -> bool {
        self.done.load(Ordering::Acquire) >= self.total
    }

    /// Returns once every piece has run: watched for during `WAIT_WATCH`, then asleep.
    fn wait_all(&self) {
        let until = Instant::now() + WAIT_WATCH;
        while !self.all_ran() && Instant::now() < until {
            std::hint::spin_loop();
        }
        let mut sleep = lock(&self.sleep);
        while !self.all_ran() {
            sleep = self.all_done.wait(sleep).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    /// Takes and runs pieces until none is left.
    fn work(&self) {
        loop {
            let index = self.next.fetch_add(1, Ordering::Relaxed);
            if index >= self.total {
                return;
            }
            let _done = PieceDone(self);
            (self.piece)(index);
        }
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
    if total == 0 {
        return;
    }
    let pieces = Arc::new(Pieces {
        next: AtomicUsize::new(0),
        total,
        done: AtomicUsize::new(0),
        sleep: Mutex::new(()),
        all_done: Condvar::new(),
        piece: Box::new(piece),
    });
    if let Some(workers) = workers {
        workers.send((0..helpers.min(total - 1)).map(|_| {
            let shared = pieces.clone();
            Box::new(move || shared.work()) as Job
        }));
    }
    // A piece that panics here must not end the wait early (workers may still be copying
    // into the caller's memory): the rest are taken, every piece awaited, then it unwinds.
    let mut panicked = None;
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
        // A piece that panics on a worker is counted as run; the call returns.
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            run_pieces(workers(), 3, 50, move |i| {
                counted.fetch_add(1, Ordering::SeqCst);
                assert!(i != 7, "a piece that panics");
            })
        }));
        // The panic lands on whichever thread ran piece 7: this one (an Err, after every
        // piece ran) or a worker (the others take the rest).
        let _ = outcome;
        assert_eq!(hits.load(Ordering::SeqCst), 50, "every piece ran, the panicking one too");
        run_pieces(workers(), 3, 10, |_| {});
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
