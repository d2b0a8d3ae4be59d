//! The forward pass's worker threads: a small persistent pool that runs one piece of work on every
//! thread at once (the caller's thread among them), spinning briefly between pieces and sleeping when
//! idle. How many: `TUNEBENCH_THREADS`, else the machine's available parallelism.
//!
//! Work is split into units (row groups of a matrix, tokens, attention heads) that the threads claim a
//! chunk at a time, so a thread the system has descheduled holds up no one: the others take its
//! share. Chunks shrink as the work runs out (each claim takes a share of what is left, never less
//! than the job's smallest chunk): long runs first, short ones at the end, so a thread that finishes
//! early waits for at most a short chunk of another's. Each unit is computed whole by one thread in
//! the same order whoever runs it, so the numbers never depend on the thread count.

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The variable that sets the model's threads (default: the machine's available parallelism).
pub const THREADS_VAR: &str = "TUNEBENCH_THREADS";

/// The most threads a pool takes (more never helps a model this size).
pub const MAX_THREADS: usize = 64;

/// How long an idle worker spins before it sleeps (covers the gap between two tokens).
const SPIN: Duration = Duration::from_micros(300);

/// Chunks per thread a piece of work is cut into (small enough to even out, big enough to claim rarely).
pub const CHUNKS_PER_THREAD: usize = 4;

/// The thread count: `TUNEBENCH_THREADS` when it is a positive number, else the machine's.
pub fn configured() -> usize {
    let set = std::env::var(THREADS_VAR).ok().and_then(|t| t.trim().parse::<usize>().ok()).filter(|t| *t > 0);
    set.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).clamp(1, MAX_THREADS)
}

type Work<'a> = &'a (dyn Fn(usize, Range<usize>) + Sync);

struct Shared {
    /// The current job's epoch (high 32 bits) and its next unclaimed unit (low 32 bits).
    claim: AtomicU64,
    /// The current job's units and smallest chunk (set before its epoch is published).
    units: AtomicUsize,
    smallest: AtomicUsize,
    /// The share of the units left a claim takes (one `parts`-th): half a thread's, so a quarter of a
    /// job first on two threads, then less and less down to the job's smallest chunk.
    parts: usize,
    /// The current job's work; read only by a thread holding a claimed chunk of it.
    work: AtomicPtr<Work<'static>>,
    /// Units of the current job finished.
    done: AtomicUsize,
    /// Workers asleep (or about to be) on `wake`.
    sleeping: AtomicUsize,
    stop: AtomicBool,
    /// A unit panicked (a bug): the caller reports it.
    failed: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
}

fn epoch_of(claim: u64) -> u32 {
    (claim >> 32) as u32
}

impl Shared {
    /// Claims the next chunk of job `epoch`, if it has one left.
    fn claim(&self, epoch: u32) -> Option<Range<usize>> {
        let mut current = self.claim.load(Ordering::Acquire);
        loop {
            if epoch_of(current) != epoch {
                return None;
            }
            // If the claim word still holds `current` when the exchange below succeeds, these are job
            // `epoch`'s: `split` changes the word (closes it) before it stores the next job's.
            let (units, smallest) = (self.units.load(Ordering::Acquire), self.smallest.load(Ordering::Acquire));
            let next = (current & u64::from(u32::MAX)) as usize;
            if next >= units {
                return None;
            }
            let end = (next + (units - next).div_ceil(self.parts).max(smallest).max(1)).min(units);
            let claimed = (u64::from(epoch) << 32) | end as u64;
            match self.claim.compare_exchange_weak(current, claimed, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(next..end),
                Err(now) => current = now,
            }
        }
    }

    /// Runs chunks of job `epoch` as thread `thread` until none is left.
    fn run(&self, epoch: u32, thread: usize) {
        while let Some(range) = self.claim(epoch) {
            let len = range.len();
            // SAFETY: this thread holds an unfinished chunk of job `epoch`, so its caller is still
            // waiting in `Pool::split` (until `done` counts this chunk) and the work is alive; the
            // pointer was stored before the epoch was published (release/acquire on `claim`).
            let work = unsafe { &**self.work.load(Ordering::Acquire) };
            if catch_unwind(AssertUnwindSafe(|| work(thread, range))).is_err() {
                self.failed.store(true, Ordering::Relaxed);
            }
            self.done.fetch_add(len, Ordering::AcqRel);
        }
    }
}

/// A pool of `threads − 1` workers plus the caller's thread.
pub struct Pool {
    threads: usize,
    epoch: u32,
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("threads", &self.threads).finish()
    }
}

/// A worker thread could not start, or a unit of work failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolError(pub String);

impl Pool {
    /// A pool of `threads` threads (at least 1: the caller's alone).
    pub fn new(threads: usize) -> Result<Self, PoolError> {
        let threads = threads.clamp(1, MAX_THREADS);
        let shared = Arc::new(Shared {
            claim: AtomicU64::new(0),
            units: AtomicUsize::new(0),
            smallest: AtomicUsize::new(1),
            parts: 2 * threads,
            work: AtomicPtr::new(std::ptr::null_mut()),
            done: AtomicUsize::new(0),
            sleeping: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        });
        let mut pool = Self { threads, epoch: 0, shared, workers: Vec::with_capacity(threads - 1) };
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

    /// Runs `work(thread, units)` over chunks of `0..units` on every thread (thread 0 is the caller's)
    /// and returns when all are done. With one thread, or fewer than `min_units` units, the caller
    /// runs it all as thread 0. Chunks are no smaller than a [`CHUNKS_PER_THREAD`]-th of a thread's
    /// share.
    pub fn split(
        &mut self,
        units: usize,
        min_units: usize,
        work: &(dyn Fn(usize, Range<usize>) + Sync),
    ) -> Result<(), PoolError> {
        self.split_in(units, min_units, self.smallest_chunk(units, CHUNKS_PER_THREAD), work)
    }

    /// A `chunks_per_thread`-th of each thread's share of `units`.
    pub fn smallest_chunk(&self, units: usize, chunks_per_thread: usize) -> usize {
        units.div_ceil(self.threads * chunks_per_thread.max(1))
    }

    /// [`Self::split`], no chunk smaller than `smallest` units (but the last).
    pub fn split_in(
        &mut self,
        units: usize,
        min_units: usize,
        smallest: usize,
        work: &(dyn Fn(usize, Range<usize>) + Sync),
    ) -> Result<(), PoolError> {
        if self.threads == 1 || units < min_units.max(2) {
            work(0, 0..units);
            return Ok(());
        }
        if units > u32::MAX as usize {
            return Err(PoolError(format!("{units} units of work are more than a pool splits")));
        }
        let shared = &*self.shared;
        // First close the last job's claim word (a passing epoch whose next unit is past any job's
        // end): a worker still trying to claim from the last job read its word before this store, so
        // its exchange now fails and it never takes units of the job set up below with the last
        // job's word (it would run them a second time, or with a closure whose frame is gone).
        self.epoch = self.epoch.wrapping_add(1);
        shared.claim.store((u64::from(self.epoch) << 32) | u64::from(u32::MAX), Ordering::SeqCst);
        self.epoch = self.epoch.wrapping_add(1);
        let work: Work<'_> = work;
        // The workers dereference this only while they hold an unfinished chunk, and this call returns
        // only when every chunk is finished: `work` outlives every use.
        let erased = (&work as *const Work<'_>).cast::<Work<'static>>().cast_mut();
        shared.work.store(erased, Ordering::Release);
        shared.units.store(units, Ordering::Release);
        shared.smallest.store(smallest.max(1), Ordering::Release);
        shared.done.store(0, Ordering::Release);
        shared.claim.store(u64::from(self.epoch) << 32, Ordering::SeqCst);
        if shared.sleeping.load(Ordering::SeqCst) > 0 {
            let _guard = shared.lock.lock().unwrap_or_else(|p| p.into_inner());
            shared.wake.notify_all();
        }
        shared.run(self.epoch, 0);
        let mut spins = 0u32;
        while shared.done.load(Ordering::Acquire) < units {
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(4096) {
                // A worker holding the last chunk is descheduled (busy cores): let it run.
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        if shared.failed.swap(false, Ordering::Relaxed) {
            return Err(PoolError("a model thread failed mid-computation".into()));
        }
        Ok(())
    }
}

fn worker(shared: &Shared, index: usize) {
    let mut seen = 0;
    while let Some(epoch) = next_epoch(shared, seen) {
        seen = epoch;
        shared.run(epoch, index);
    }
}

/// Waits for a job epoch other than `seen`: spins a while, then sleeps; `None` when the pool stops.
fn next_epoch(shared: &Shared, seen: u32) -> Option<u32> {
    let started = Instant::now();
    let mut spins = 0u32;
    loop {
        let epoch = epoch_of(shared.claim.load(Ordering::SeqCst));
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
        while epoch_of(shared.claim.load(Ordering::SeqCst)) == seen && !shared.stop.load(Ordering::SeqCst) {
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

    /// Elements `range`, to read (panics when out of bounds).
    ///
    /// # Safety
    /// No thread writes any of these elements while the returned slice lives.
    pub unsafe fn shared(&self, range: Range<usize>) -> &[T] {
        assert!(range.start <= range.end && range.end <= self.len, "{range:?} is outside 0..{}", self.len);
        // SAFETY: in bounds (checked above); unchanged while it lives, by the caller's promise.
        unsafe { std::slice::from_raw_parts(self.ptr.add(range.start), range.len()) }
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
            for (units, smallest) in
                [0, 1, 2, 7, 64, 1000].into_iter().flat_map(|u| [(u, 0), (u, 1), (u, 2), (u, 4), (u, 2000)])
            {
                let mut seen = vec![0u32; units];
                let out = Disjoint::new(&mut seen);
                pool.split_in(units, 1, smallest, &|_, range| {
                    for i in range {
                        // SAFETY: the shares are disjoint.
                        unsafe { out.slice(i..i + 1)[0] += 1 + i as u32 % 7 };
                    }
                })
                .unwrap();
                assert!(
                    seen.iter().enumerate().all(|(i, v)| *v == 1 + i as u32 % 7),
                    "{threads} threads, {units} units, chunks of at least {smallest}"
                );
            }
        }
    }

    /// Chunks shrink as the work runs out: a quarter of the job first on two threads, never larger
    /// than the one before, none smaller than the smallest asked for but the last, the job covered once.
    #[test]
    fn chunks_shrink_to_the_smallest_as_the_work_runs_out() {
        let mut pool = Pool::new(2).unwrap();
        let claimed = Mutex::new(Vec::new());
        pool.split_in(1000, 1, 10, &|_, range| claimed.lock().unwrap().push(range)).unwrap();
        let mut chunks = claimed.into_inner().unwrap();
        chunks.sort_by_key(|r| r.start);
        assert_eq!(chunks[0], 0..250, "{chunks:?}");
        assert!(chunks.windows(2).all(|w| w[0].end == w[1].start && w[1].len() <= w[0].len()), "{chunks:?}");
        assert!(chunks[..chunks.len() - 1].iter().all(|r| r.len() >= 10), "{chunks:?}");
        assert_eq!(chunks.last().map(|r| r.end), Some(1000));
        assert!(chunks.len() > 8, "the chunks shrank: {chunks:?}");
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

    /// Job after job of different sizes, as a generated token's layers make them (3 units, then 6,
    /// then hundreds): every unit of a job runs once, within the job, and before `split` returns — a
    /// worker that was still looking for work in a finished job never takes units of the next one.
    #[test]
    fn back_to_back_jobs_of_every_size_run_each_unit_once_inside_its_job() {
        for threads in [2, 3] {
            let mut pool = Pool::new(threads).unwrap();
            for round in 0..1_000_000usize {
                let units = [3, 6, 1, 2, 195, 7][round % 6];
                let counts: Vec<AtomicUsize> = (0..units).map(|_| AtomicUsize::new(0)).collect();
                pool.split(units, 1, &|_, range| {
                    for i in range {
                        counts[i].fetch_add(1, Ordering::Relaxed);
                    }
                })
                .unwrap_or_else(|e| panic!("{threads} threads, round {round}: {e:?}"));
                for (i, count) in counts.iter().enumerate() {
                    assert_eq!(
                        count.load(Ordering::Relaxed),
                        1,
                        "{threads} threads, round {round}, unit {i} of {units}"
                    );
                }
            }
        }
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
