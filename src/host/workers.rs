//! Persistent worker threads for the parallel copies (staging lanes, large host copies).
//! Spawning threads for each copy costs tens of microseconds apiece, a large share of a
//! copy of a few MiB; these are made once, on first use, and kept.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use crate::sync::lock;

/// One unit of a parallel copy, run once on whichever thread takes it.
pub(crate) type Job = Box<dyn FnOnce() + Send + 'static>;

/// The worker threads, fed through one channel: an idle worker takes the next job.
pub(crate) struct Workers {
    sender: Sender<Job>,
}

/// How many jobs of a `run_all` are still running; `Drop` of a `Done` counts one down,
/// also when its job panicked, so the caller never waits forever.
struct Countdown {
    left: Mutex<usize>,
    zero: Condvar,
}

struct Done(Arc<Countdown>);

impl Drop for Done {
    fn drop(&mut self) {
        let mut left = lock(&self.0.left);
        *left = left.saturating_sub(1);
        if *left == 0 {
            self.0.zero.notify_all();
        }
    }
}

fn work(receiver: Arc<Mutex<Receiver<Job>>>) {
    loop {
        let job = lock(&receiver).recv();
        match job {
            // A panicking job must not take the worker down (its `Done` still counts).
            Ok(job) => drop(catch_unwind(AssertUnwindSafe(job))),
            Err(_) => return,
        }
    }
}

impl Workers {
    /// Up to `count` workers; `None` when the OS gives none (then jobs run inline).
    fn start(count: usize) -> Option<Workers> {
        let (sender, receiver) = channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        let started = (0..count)
            .filter(|i| {
                let receiver = receiver.clone();
                std::thread::Builder::new().name(format!("dpctl-memory-copy-{i}")).spawn(move || work(receiver)).is_ok()
            })
            .count();
        (started > 0).then_some(Workers { sender })
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

/// Runs every job and returns when all have run: the first on this thread, the others
/// on `workers` (or on this thread too, where there are none or they cannot take one).
pub(crate) fn run_all(workers: Option<&Workers>, mut jobs: Vec<Job>) {
    if jobs.is_empty() {
        return;
    }
    let first = jobs.remove(0);
    let countdown = Arc::new(Countdown { left: Mutex::new(jobs.len()), zero: Condvar::new() });
    for job in jobs {
        let done = Done(countdown.clone());
        let counted: Job = Box::new(move || {
            let _done = done;
            job();
        });
        match workers {
            Some(workers) => {
                if let Err(refused) = workers.sender.send(counted) {
                    (refused.0)();
                }
            }
            None => counted(),
        }
    }
    first();
    let mut left = lock(&countdown.left);
    while *left > 0 {
        left = countdown.zero.wait(left).unwrap_or_else(|poisoned| poisoned.into_inner());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn counting_jobs(n: usize, hits: &Arc<AtomicUsize>) -> Vec<Job> {
        (0..n)
            .map(|_| {
                let hits = hits.clone();
                Box::new(move || {
                    hits.fetch_add(1, Ordering::SeqCst);
                }) as Job
            })
            .collect()
    }

    #[test]
    fn every_job_runs_once_with_workers_without_and_after_a_panic() {
        let hits = Arc::new(AtomicUsize::new(0));
        run_all(workers(), counting_jobs(40, &hits));
        assert_eq!(hits.load(Ordering::SeqCst), 40);
        run_all(None, counting_jobs(5, &hits));
        assert_eq!(hits.load(Ordering::SeqCst), 45);
        // A panicking job is counted done; the workers survive it.
        let mut jobs = counting_jobs(3, &hits);
        jobs.push(Box::new(|| panic!("a job that panics")));
        run_all(workers(), jobs);
        run_all(workers(), counting_jobs(10, &hits));
        assert_eq!(hits.load(Ordering::SeqCst), 58);
    }
}
