//! [`Parallel`]: where a multi-threaded CPU kernel runs its independent parts.
//!
//! A kernel that splits its work ([`sgemm_crate_on`](crate::sgemm::sgemm_crate_on): one part
//! per row block of C) hands the parts to a `Parallel` and returns when all have run. This
//! crate depends on no executor of ours, so the choice is the caller's:
//! * [`ScopedThreads`] (the default of [`sgemm_crate`](crate::sgemm::sgemm_crate)) spawns a
//!   scoped OS thread per part but the first, which runs on the calling thread — no state
//!   between calls, at the price of a thread start per part per call;
//! * a persistent pool (the offload crate's `HostPool`, over `rayon-core`) implements the trait
//!   to run the parts on threads that already exist, so repeated calls do not pay for thread
//!   start-up.
//!
//! The split does not depend on the executor, so every executor gives bit-identical results;
//! only where and when the parts run differs.

/// One part of a parallel kernel: runs once, may borrow from the caller's stack.
///
/// ```
/// use gmprt_kernels::parallel::{Parallel, ScopedThreads, Task};
///
/// let mut parts = [0u64; 3];
/// // Each task writes its own element of a local array: borrows, no `'static` needed.
/// let tasks: Vec<Task<'_>> =
///     parts.iter_mut().zip(1..).map(|(p, i)| Box::new(move || *p = i * 10) as Task<'_>).collect();
/// ScopedThreads.run_all(tasks);
/// assert_eq!(parts, [10, 20, 30]);
/// ```
pub type Task<'a> = Box<dyn FnOnce() + Send + 'a>;

/// An executor for a kernel's independent parts (see the module docs).
///
/// ```
/// use gmprt_kernels::parallel::{Parallel, Task};
/// use gmprt_kernels::sgemm::sgemm_crate_on;
///
/// /// Runs the parts one after the other on the calling thread.
/// struct Inline;
/// impl Parallel for Inline {
///     fn threads(&self) -> usize {
///         2
///     }
///     fn run_all(&self, tasks: Vec<Task<'_>>) {
///         tasks.into_iter().for_each(|t| t());
///     }
/// }
/// // [1 2; 3 4] · [5 6; 7 8], one part per row of C.
/// let mut c = [0.0; 4];
/// sgemm_crate_on(&Inline, 2, 2, 2, &[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], &mut c, 0).unwrap();
/// assert_eq!(c, [19.0, 22.0, 43.0, 50.0]);
/// ```
pub trait Parallel: Sync {
    /// How many threads the parts can run on at once: what a kernel asked for "all threads"
    /// splits its work into.
    fn threads(&self) -> usize;

    /// Runs every task once and returns when all have finished. The tasks may run in any
    /// order and concurrently. A panic in a task is re-raised here once the others have
    /// finished (they borrow the caller's data, so none may outlive this call).
    fn run_all(&self, tasks: Vec<Task<'_>>);
}

/// Scoped OS threads per call: every task but the first on its own
/// [`std::thread::scope`] thread, the first on the calling thread (one thread fewer to start,
/// and the caller does not sit idle). [`threads`](Parallel::threads) is
/// [`std::thread::available_parallelism`] (1 when unknown).
///
/// ```
/// use gmprt_kernels::parallel::{Parallel, ScopedThreads, Task};
/// use std::panic::{catch_unwind, AssertUnwindSafe};
///
/// assert!(ScopedThreads.threads() >= 1);
/// // A panic in a part reaches the caller with its own payload.
/// let tasks: Vec<Task<'static>> = vec![Box::new(|| ()), Box::new(|| panic!("part 2 failed"))];
/// let payload = catch_unwind(AssertUnwindSafe(|| ScopedThreads.run_all(tasks))).unwrap_err();
/// assert_eq!(payload.downcast_ref::<&str>(), Some(&"part 2 failed"));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ScopedThreads;

impl Parallel for ScopedThreads {
    fn threads(&self) -> usize {
        std::thread::available_parallelism().map_or(1, |t| t.get())
    }

    fn run_all(&self, tasks: Vec<Task<'_>>) {
        let mut tasks = tasks.into_iter();
        let Some(first) = tasks.next() else { return };
        std::thread::scope(|s| {
            let handles: Vec<_> = tasks.map(|t| s.spawn(t)).collect();
            first();
            for h in handles {
                // A panic in a part is re-raised with its own payload, as if the part had run
                // on this thread.
                h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            }
        });
    }
}
