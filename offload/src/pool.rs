//! [`HostPool`]: the process-wide pool of OS threads that the Host and simulated devices run
//! their multi-threaded CPU kernels on ([`Device::sgemm`](crate::Device::sgemm),
//! [`Device::pi_hits`](crate::Device::pi_hits),
//! [`Device::option_paths_sum`](crate::Device::option_paths_sum)).
//!
//! # Why persistent
//!
//! These helpers used to start scoped threads on every call. A thread start and its wake-up
//! cost tens of microseconds on a VM, more under load, so a Host timing measured thread
//! start-up as much as the kernel, and varied with it. The pool's threads are started once,
//! on first use ([`HostPool::global`]), and wait for work between calls.
//!
//! # How many threads
//!
//! [`host_threads`]: `std::thread::available_parallelism` (1 when the platform cannot say),
//! the number of parts a helper splits its work into. The calling thread runs the first part
//! itself and then waits for the rest (see [`HostPool::run_all`]).
//!
//! # Why not gmprt's Ps
//!
//! The pool is separate from the runtime's Ps on purpose: a kernel part occupies its thread
//! for the whole run and never yields, so running it on a P would stall every green task
//! queued there (the runtime's answer for such work is a blocking handoff, which is what a
//! Batcher worker thread already is). The pool is built on `rayon-core`, the standard
//! work-stealing pool (the core of rayon, without parallel iterators), well kept and used
//! widely; only its [`scope`](rayon_core::ThreadPool::in_place_scope) is used.
use gmprt_kernels::parallel::{Parallel, Task};
use std::sync::OnceLock;

/// CPU threads available to this process: `available_parallelism`, or 1 when the platform
/// cannot say. The pool's size, and how many threads the Host device reports.
///
/// ```
/// assert!(gmprt_offload::pool::host_threads() >= 1);
/// ```
pub fn host_threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// The process-wide host pool (see the module docs). Implements the kernels'
/// [`Parallel`], so a kernel that splits its work runs the parts here.
///
/// ```
/// use gmprt_offload::kernels::Parallel;
/// use gmprt_offload::pool::HostPool;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// let pool = HostPool::global();
/// let sum = AtomicU64::new(0);
/// let sum = &sum;
/// pool.run_all((1..=4u64).map(|i| Box::new(move || { sum.fetch_add(i, Ordering::Relaxed); }) as _).collect());
/// assert_eq!(sum.load(Ordering::Relaxed), 10);
/// ```
pub struct HostPool {
    pool: rayon_core::ThreadPool,
    threads: usize,
}

impl HostPool {
    /// The pool, built with [`host_threads`] threads (named `gmprt-host-N`) on the first call.
    ///
    /// # Panics
    /// If the OS refuses to start the pool's threads on that first call.
    ///
    /// ```
    /// use gmprt_offload::kernels::Parallel;
    /// use gmprt_offload::pool::{host_threads, HostPool};
    ///
    /// let pool = HostPool::global();
    /// assert!(std::ptr::eq(pool, HostPool::global())); // one pool per process
    /// assert_eq!(pool.threads(), host_threads());
    /// ```
    pub fn global() -> &'static HostPool {
        static POOL: OnceLock<HostPool> = OnceLock::new();
        POOL.get_or_init(|| {
            let threads = host_threads();
            let pool = rayon_core::ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(|i| format!("gmprt-host-{i}"))
                .build()
                .expect("cannot start the host pool's threads");
            HostPool { pool, threads }
        })
    }

    /// Splits blocks `0..blocks` into at most `parts` contiguous ranges, runs
    /// `f(first, count)` for each on the pool (the first on the calling thread), and returns
    /// the results in block order. A panic in a part is re-raised here.
    ///
    /// ```
    /// let pool = gmprt_offload::pool::HostPool::global();
    /// let parts = pool.split_blocks(10, 3, |first, count| (first, count));
    /// assert_eq!(parts, [(0, 4), (4, 3), (7, 3)]);
    /// ```
    pub fn split_blocks<T: Send>(
        &self,
        blocks: u64,
        parts: usize,
        f: impl Fn(u64, u64) -> T + Sync,
    ) -> Vec<T> {
        let parts = (parts.max(1) as u64).min(blocks.max(1));
        let per = blocks / parts;
        let extra = blocks % parts;
        let mut out: Vec<Option<T>> = (0..parts).map(|_| None).collect();
        let f = &f;
        let tasks: Vec<Task<'_>> = out
            .iter_mut()
            .enumerate()
            .map(|(i, slot)| {
                let i = i as u64;
                let (first, count) = (i * per + i.min(extra), per + u64::from(i < extra));
                Box::new(move || *slot = Some(f(first, count))) as Task<'_>
            })
            .collect();
        self.run_all(tasks);
        out.into_iter().map(|r| r.expect("run_all ran every part")).collect()
    }
}

impl Parallel for HostPool {
    fn threads(&self) -> usize {
        self.threads
    }

    /// Every task but the first is spawned on the pool; the first runs on the calling thread,
    /// which then waits in rayon's scope (helping with the rest when it is a pool thread).
    fn run_all(&self, tasks: Vec<Task<'_>>) {
        let mut tasks = tasks.into_iter();
        let Some(first) = tasks.next() else { return };
        self.pool.in_place_scope(|s| {
            for t in tasks {
                s.spawn(move |_| t());
            }
            first();
        });
    }
}

impl std::fmt::Debug for HostPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostPool").field("threads", &self.threads).finish()
    }
}
