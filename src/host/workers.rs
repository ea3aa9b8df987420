//! Persistent worker threads for the parallel copies (staging lanes, large host copies).
//! Spawning threads for each copy costs tens of microseconds apiece, a large share of a
//! copy of a few MiB; these are made once, on first use, and kept. A worker that finishes
//! a job watches the queue for a short while before it sleeps: copies come in runs (a loop
//! of copies of a few MiB), and waking a sleeping thread costs a scheduler round trip per
//! worker, which for the mid sizes is as long as the copy's own share of a lane.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::sync::lock;

/// One unit of a parallel copy, run once on whichever thread takes it.
pub(crate) type Job = Box<dyn FnOnce() + Send + 'static>;

/// How long an idle worker watches the queue before it sleeps.
const WATCH: Duration = Duration::from_micros(200);

/// The jobs not yet taken, and how many workers sleep on `wake`.
struct Queue {
    jobs: VecDeque<Job>,
    sleeping: usize,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    /// `queue.jobs.len()`, readable without the lock: what a watching worker polls.
    waiting: AtomicUsize,
}

/// The worker threads, fed through one queue: an idle worker takes the next job.
pub(crate) struct Workers {
    shared: Arc<Shared>,
}

impl Shared {
    /// The next job, taken under the lock when one is there.
    fn try_take(&self) -> Option<Job> {
        if self.waiting.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut queue = lock(&self.queue);
        let job = queue.jobs.pop_front();
        self.waiting.store(queue.jobs.len(), Ordering::Release);
        job
    }

    /// The next job: watched for during `WATCH`, then waited for asleep.
    fn take(&self) -> Job {
        let until = Instant::now() + WATCH;
        loop {
            if let Some(job) = self.try_take() {
                return job;
            }
            if Instant::now() >= until {
                break;
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

fn work(shared: Arc<Shared>) {
    loop {
        // A panicking job must not take the worker down (its `Done` still counts).
        drop(catch_unwind(AssertUnwindSafe(shared.take())));
    }
}

impl Workers {
    /// Up to `count` workers; `None` when the OS gives none (then jobs run inline).
    fn start(count: usize) -> Option<Workers> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue { jobs: VecDeque::new(), sleeping: 0 }),
            wake: Condvar::new(),
            waiting: AtomicUsize::new(0),
        });
        let started = (0..count)
            .filter(|i| {
                let shared = shared.clone();
                std::thread::Builder::new().name(format!("dpctl-memory-copy-{i}")).spawn(move || work(shared)).is_ok()
            })
            .count();
        (started > 0).then_some(Workers { shared })
    }

    /// Queues `jobs`, waking as many sleeping workers as there are jobs (watching ones
    /// take them without a wake-up).
    fn send(&self, jobs: impl IntoIterator<Item = Job>) {
        let mut queue = lock(&self.shared.queue);
        queue.jobs.extend(jobs);
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
    done: Mutex<usize>,
    all_done: Condvar,
    piece: Box<dyn Fn(usize) + Send + Sync>,
}

/// Counts one piece as run when dropped, also when the piece panicked, so the caller of
/// `run_pieces` never waits forever.
struct PieceDone<'a>(&'a Pieces);

impl Drop for PieceDone<'_> {
    fn drop(&mut self) {
        let mut done = lock(&self.0.done);
        *done += 1;
        if *done >= self.0.total {
            self.0.all_done.notify_all();
        }
    }
}

impl Pieces {
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
        done: Mutex::new(0),
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
    {
        let mut done = lock(&pieces.done);
        while *done < total {
            done = pieces.all_done.wait(done).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }
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
}
