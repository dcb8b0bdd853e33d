//! gmprt-runtime: Go's G/M/P scheduler rebuilt as a work-stealing green-task runtime.
//!
//! * **G** — a task: one heap allocation holding a small header and the future (`task/`).
//! * **P** — a processor: a local FIFO run queue plus a `runnext` slot (`sched/processor.rs`);
//!   `procs` of them (GOMAXPROCS; env `GMPRT_MAXPROCS`).
//! * **M** — an OS thread that runs tasks only while it holds a P (`sched/worker.rs`); idle Ms
//!   park, at most half the busy Ps' worth spin, and a spawn wakes one only when needed
//!   (`sched/idle.rs`, which also proves no wakeup is lost).
//!
//! ```
//! use gmprt_runtime::Runtime;
//!
//! let rt = Runtime::builder().procs(2).build().unwrap();
//! let total: u64 = rt.block_on(async {
//!     let handles: Vec<_> = (0..1000u64).map(|i| gmprt_runtime::spawn(async move { i * i })).collect();
//!     let mut sum = 0;
//!     for h in handles {
//!         sum += h.await.unwrap();
//!     }
//!     sum
//! });
//! assert_eq!(total, (0..1000u64).map(|i| i * i).sum::<u64>());
//! ```
//!
//! What gmprt cannot do that Go can: preempt. Go interrupts a goroutine that runs too long
//! (signals since 1.14); a future can only give up its M at an `.await`. A task that computes
//! for a long time without awaiting keeps its P; call [`yield_now()`] in long loops.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

pub mod chan;
mod checkdead;
pub mod coop;
pub mod dump;
pub mod latency;
pub(crate) mod loom;
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_hooks;
#[cfg(unix)]
pub mod net;
pub(crate) mod netpoll;
pub mod par;
mod park;
mod rlimit;
mod runtime;
pub(crate) mod sched;
#[cfg(not(loom))]
mod schedtrace;
#[cfg(all(unix, not(loom)))]
mod sigquit;
pub mod sync;
pub(crate) mod task;
pub mod time;
pub mod trace;
mod yield_now;

pub use crate::latency::LatencySummary;
pub use crate::par::parallel_for;
pub use crate::rlimit::{nofile_limit, NofileLimit};
pub use crate::runtime::{BuildError, Builder, Handle, Runtime, SpawnError, DEFAULT_MAX_THREADS};
pub use crate::sched::context::procid;
pub use crate::sched::injectglist::{injectglist, wake_all};
pub use crate::sched::quiesce::{QuiescentHook, QuiescentRegistration};
pub use crate::sched::stats::RuntimeStats;
pub use crate::sched::syscall::{syscall, ThreadLimit};
pub use crate::task::{JoinError, JoinHandle, TaskId, TASK_HEADER_BYTES};
pub use crate::yield_now::{yield_now, YieldNow};

use std::future::Future;

/// Spawns a task on the current runtime (from inside a task or `Runtime::block_on`). From a
/// running task it goes to the current P's `runnext`, as Go's `go` statement does.
///
/// `spawn` takes a future; [`go`] takes a closure that returns one (`go(|| async { .. })`),
/// which reads like Go's `go func() { .. }()`. Both run the body.
///
/// ```
/// let rt = gmprt_runtime::Runtime::builder().procs(2).build().unwrap();
/// let n = rt.block_on(async { gmprt_runtime::spawn(async { 6 * 7 }).await.unwrap() });
/// assert_eq!(n, 42);
/// ```
///
/// # Panics
/// Outside a runtime, with a message saying how to fix it; use [`try_spawn`] to get an error.
#[track_caller]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match spawn_current(future) {
        Ok(Ok(h) | Err((_, h))) => h,
        Err(e) => panic!("gmprt::spawn: {e}"),
    }
}

/// Like [`spawn`], but returns an error outside a runtime or after shutdown.
#[track_caller]
pub fn try_spawn<F>(future: F) -> Result<JoinHandle<F::Output>, SpawnError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match spawn_current(future)? {
        Ok(h) => Ok(h),
        Err((sched::Refused::Shutdown, _)) => Err(SpawnError::Shutdown),
    }
}

/// Spawns on the runtime of the calling M or `block_on` thread, borrowing its scheduler
/// rather than cloning a [`Handle`]: a clone and its drop would be two atomic writes to the
/// one reference count every M's spawns share. `Err(NoRuntime)` outside a runtime.
#[track_caller]
fn spawn_current<F>(future: F) -> Result<sched::SpawnResult<F::Output>, SpawnError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let site = std::panic::Location::caller();
    sched::context::with_current(|cx| match cx {
        Some(cx) => Ok(cx.shared.spawn_at(future, true, site)),
        None => Err(SpawnError::NoRuntime),
    })
}

/// Go's `go func() { ... }()`: runs the body of an async closure as a new task on the current
/// runtime and detaches it. Returns the task's handle, for those who want the result after all.
///
/// The body is everything a goroutine's body is: it may block on channels, mutexes and timers
/// with `.await`, which parks the task, never the M.
///
/// ```
/// use gmprt_runtime::{chan::chan, go, Runtime};
///
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// let got = rt.block_on(async {
///     let (tx, rx) = chan::<u32>(0);
///     go(move || async move { tx.send(1).await.unwrap() }); // go func() { ch <- 1 }()
///     rx.recv().await
/// });
/// assert_eq!(got, Some(1));
/// ```
///
/// `go` and [`spawn`] differ only in what they take: `spawn(fut)` a future you already have,
/// `go(f)` a closure that makes one (`|| async move { ... }` or `async move || { ... }`), as Go's
/// `go` takes a function call. A closure that returns a plain value does not compile (it
/// would not be a goroutine body that can block): rustc says "`{integer}` is not a future ...
/// required for `{closure}` to implement `GoBody`":
///
/// ```compile_fail
/// # gmprt_runtime::Runtime::builder().procs(1).build().unwrap().block_on(async {
/// gmprt_runtime::go(|| 6 * 7); // error[E0277]: `{integer}` is not a future
/// # });
/// ```
///
/// # Panics
/// Outside a runtime, as [`spawn`].
#[track_caller]
pub fn go<F>(f: F) -> JoinHandle<F::Output>
where
    F: GoBody,
{
    spawn(async move { f.call().await })
}

/// What [`go`] takes: a closure (`Send + 'static`) that returns a future (`Send + 'static`, with
/// a `Send` output) — the body of the new task. Implemented for every such closure (`|| async { .. }`
/// and Rust's `async || { .. }` alike); not meant to be implemented by hand.
pub trait GoBody: Send + 'static {
    /// The task's output.
    type Output: Send + 'static;
    /// The future the closure returns.
    type Future: Future<Output = Self::Output> + Send + 'static;
    /// Calls the closure.
    fn call(self) -> Self::Future;
}

impl<F, Fut> GoBody for F
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    type Output = Fut::Output;
    type Future = Fut;
    fn call(self) -> Fut {
        self()
    }
}
