//! The forward pass's worker threads: a small persistent pool that runs one piece of work split across
//! every thread at once (the caller's thread takes the first share), spinning briefly between pieces
//! and sleeping when idle. How many: `TUNEBENCH_THREADS`, else the machine's available parallelism.
//!
//! Work is split into units (row groups of a matrix, tokens, attention heads) and each unit is computed
//! whole by one thread in the same order whatever the thread count, so the numbers never depend on it.

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The variable that sets the model's threads (default: the machine's available parallelism).
pub const THREADS_VAR: &str = "TUNEBENCH_THREADS";

/// The most threads a pool takes (more never helps a model this size).
pub const MAX_THREADS: usize = 64;

/// How long an idle worker spins before it sleeps (covers the gap between two tokens).
const SPIN: Duration = Duration::from_micros(300);

/// The thread count: `TUNEBENCH_THREADS` when it is a positive number, else the machine's.
pub fn configured() -> usize {
    let set = std::env::var(THREADS_VAR).ok().and_then(|t| t.trim().parse::<usize>().ok()).filter(|t| *t > 0);
    set.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).clamp(1, MAX_THREADS)
}

/// One piece of work: `work(thread, range)` for each thread's share of `0..units`.
struct Job<'a> {
    work: &'a (dyn Fn(usize, Range<usize>) + Sync),
    units: usize,
    threads: usize,
}

impl Job<'_> {
    /// Thread `index`'s share: contiguous, in thread order.
    fn share(&self, index: usize) -> Range<usize> {
        self.units * index / self.threads..self.units * (index + 1) / self.threads
    }
}

struct Shared {
    /// Bumped once per job; a worker runs a job when the epoch moves past the one it saw.
    epoch: AtomicUsize,
    job: AtomicPtr<Job<'static>>,
    /// Workers still running the current job.
    pending: AtomicUsize,
    /// Workers asleep (or about to be) on `wake`.
    sleeping: AtomicUsize,
    stop: AtomicBool,
    /// A worker's share panicked (a bug): the caller reports it.
    failed: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
}

/// A pool of `threads − 1` workers plus the caller's thread.
pub struct Pool {
    threads: usize,
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("threads", &self.threads).finish()
    }
}

/// A worker thread could not start, or one's share of the work failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolError(pub String);

impl Pool {
    /// A pool of `threads` threads (at least 1: the caller's alone).
    pub fn new(threads: usize) -> Result<Self, PoolError> {
        let threads = threads.clamp(1, MAX_THREADS);
        let shared = Arc::new(Shared {
            epoch: AtomicUsize::new(0),
            job: AtomicPtr::new(std::ptr::null_mut()),
            pending: AtomicUsize::new(0),
            sleeping: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        });
        let mut pool = Self { threads, shared, workers: Vec::with_capacity(threads - 1) };
        for index in 1..threads {
            let shared = Arc::clone(&pool.shared);
            let spawned = std::thread::Builder::new()
                .name(format!("tunebench-model-{index}"))
                .spawn(move || worker(&shared, index));
            match spawned {
                Ok(handle) => pool.workers.push(handle),
                Err(error) => {
                    // The workers started so far stop when `pool` drops.
                    pool.threads = index;
                    return Err(PoolError(format!("cannot start model thread {index}: {error}")));
                }
            }
        }
        Ok(pool)
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `work(thread, share)` over `0..units`, split into one contiguous share per thread (thread 0
    /// is the caller's), and returns when every share is done. With one thread, or fewer than
    /// `min_units` units, the caller runs it all as thread 0.
    pub fn split(
        &mut self,
        units: usize,
        min_units: usize,
        work: &(dyn Fn(usize, Range<usize>) + Sync),
    ) -> Result<(), PoolError> {
        if self.threads == 1 || units < min_units.max(2) {
            work(0, 0..units);
            return Ok(());
        }
        let job = Job { work, units, threads: self.threads };
        let shared = &*self.shared;
        shared.pending.store(self.threads - 1, Ordering::Relaxed);
        // The workers read `job` only between this store and their `pending` decrement, and `Wait`
        // below returns (even when the caller's share panics) only once every worker has decremented:
        // `job` outlives every use.
        shared.job.store((&job as *const Job<'_>).cast::<Job<'static>>().cast_mut(), Ordering::Relaxed);
        shared.epoch.fetch_add(1, Ordering::SeqCst);
        if shared.sleeping.load(Ordering::SeqCst) > 0 {
            let _guard = shared.lock.lock().unwrap_or_else(|p| p.into_inner());
            shared.wake.notify_all();
        }
        let wait = Wait(shared);
        work(0, job.share(0));
        drop(wait);
        if shared.failed.swap(false, Ordering::Relaxed) {
            return Err(PoolError("a model thread failed mid-computation".into()));
        }
        Ok(())
    }
}

/// Waits for the workers' shares when dropped (so also while a panic unwinds the caller).
struct Wait<'a>(&'a Shared);

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        let mut spins = 0u32;
        while self.0.pending.load(Ordering::Acquire) != 0 {
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(4096) {
                // A worker is descheduled (busy cores): let it run.
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

fn worker(shared: &Shared, index: usize) {
    let mut seen = 0;
    loop {
        let Some(epoch) = next_epoch(shared, seen) else { return };
        seen = epoch;
        // SAFETY: the epoch moved after the job was stored (SeqCst), and the caller keeps the job alive
        // until this worker decrements `pending` below (see `Pool::split`).
        let job = unsafe { &*shared.job.load(Ordering::Relaxed) };
        let share = job.share(index);
        if catch_unwind(AssertUnwindSafe(|| (job.work)(index, share))).is_err() {
            shared.failed.store(true, Ordering::Relaxed);
        }
        shared.pending.fetch_sub(1, Ordering::Release);
    }
}

/// Waits for an epoch other than `seen`: spins a while, then sleeps; `None` when the pool stops.
fn next_epoch(shared: &Shared, seen: usize) -> Option<usize> {
    let started = Instant::now();
    let mut spins = 0u32;
    loop {
        let epoch = shared.epoch.load(Ordering::SeqCst);
        if epoch != seen {
            return Some(epoch);
        }
        if shared.stop.load(Ordering::Relaxed) {
            return None;
        }
        spins = spins.wrapping_add(1);
        if !spins.is_multiple_of(1024) || started.elapsed() < SPIN {
            std::hint::spin_loop();
            continue;
        }
        shared.sleeping.fetch_add(1, Ordering::SeqCst);
        let mut guard = shared.lock.lock().unwrap_or_else(|p| p.into_inner());
        while shared.epoch.load(Ordering::SeqCst) == seen && !shared.stop.load(Ordering::SeqCst) {
            guard = shared.wake.wait(guard).unwrap_or_else(|p| p.into_inner());
        }
        drop(guard);
        shared.sleeping.fetch_sub(1, Ordering::SeqCst);
        return next_epoch(shared, seen);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        {
            let _guard = self.shared.lock.lock().unwrap_or_else(|p| p.into_inner());
            self.shared.wake.notify_all();
        }
        for handle in self.workers.drain(..) {
            let _ = handle.join();
        }
    }
}

/// A slice that the threads of one [`Pool::split`] write at disjoint places.
pub struct Disjoint<'a, T> {
    ptr: *mut T,
    len: usize,
    _slice: std::marker::PhantomData<&'a mut [T]>,
}

// SAFETY: a `Disjoint` hands out access only through its unsafe methods, whose callers promise that no
// two threads touch the same element.
unsafe impl<T: Send> Sync for Disjoint<'_, T> {}
unsafe impl<T: Send> Send for Disjoint<'_, T> {}

impl<'a, T> Disjoint<'a, T> {
    pub fn new(slice: &'a mut [T]) -> Self {
        Self { ptr: slice.as_mut_ptr(), len: slice.len(), _slice: std::marker::PhantomData }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Elements `range` (panics when out of bounds).
    ///
    /// # Safety
    /// No other thread reads or writes any of these elements while the returned slice lives.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slice(&self, range: Range<usize>) -> &mut [T] {
        assert!(range.start <= range.end && range.end <= self.len, "{range:?} is outside 0..{}", self.len);
        // SAFETY: in bounds (checked above); exclusive by the caller's promise.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(range.start), range.len()) }
    }

    /// Reads element `i` (panics when out of bounds).
    ///
    /// # Safety
    /// No other thread writes element `i` during this [`Pool::split`].
    pub unsafe fn get(&self, i: usize) -> T
    where
        T: Copy,
    {
        assert!(i < self.len, "{i} is outside 0..{}", self.len);
        // SAFETY: in bounds (checked above); not written concurrently by the caller's promise.
        unsafe { self.ptr.add(i).read() }
    }

    /// Writes element `i` (panics when out of bounds).
    ///
    /// # Safety
    /// No other thread reads or writes element `i` during this [`Pool::split`].
    pub unsafe fn set(&self, i: usize, value: T) {
        assert!(i < self.len, "{i} is outside 0..{}", self.len);
        // SAFETY: in bounds (checked above); exclusive by the caller's promise.
        unsafe { self.ptr.add(i).write(value) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_runs_once_on_every_thread_count() {
        for threads in [1, 2, 3, 5] {
            let mut pool = Pool::new(threads).unwrap();
            assert_eq!(pool.threads(), threads);
            for units in [0, 1, 2, 7, 64, 1000] {
                let mut seen = vec![0u32; units];
                let out = Disjoint::new(&mut seen);
                pool.split(units, 1, &|_, range| {
                    for i in range {
                        // SAFETY: the shares are disjoint.
                        unsafe { out.set(i, 1 + i as u32 % 7) };
                    }
                })
                .unwrap();
                assert!(
                    seen.iter().enumerate().all(|(i, v)| *v == 1 + i as u32 % 7),
                    "{threads} threads, {units} units"
                );
            }
        }
    }

    #[test]
    fn workers_wake_after_sleeping_and_the_pool_stops_on_drop() {
        let mut pool = Pool::new(2).unwrap();
        let count = AtomicUsize::new(0);
        for round in 0..3 {
            if round > 0 {
                std::thread::sleep(SPIN * 4);
            }
            pool.split(10, 1, &|_, range| {
                count.fetch_add(range.len(), Ordering::Relaxed);
            })
            .unwrap();
        }
        assert_eq!(count.load(Ordering::Relaxed), 30);
        drop(pool);
    }

    #[test]
    fn a_failing_share_is_reported_not_hidden() {
        let mut pool = Pool::new(2).unwrap();
        let result = pool.split(4, 1, &|_, range| {
            if range.start > 0 {
                panic!("share {range:?} fails");
            }
        });
        assert!(result.is_err());
        // The pool still runs the next job.
        assert_eq!(pool.split(4, 1, &|_, _| {}), Ok(()));
    }
}
