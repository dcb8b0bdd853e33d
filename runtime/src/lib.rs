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
//! assert_eq!(total, (0..1000u64).map(|i| i * i).sum());
//! ```
//!
//! What gmprt cannot do that Go can: preempt. Go interrupts a goroutine that runs too long
//! (signals since 1.14); a future can only give up its M at an `.await`. A task that computes
//! for a long time without awaiting keeps its P; call [`yield_now`] in long loops.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

pub mod chan;
pub mod coop;
pub(crate) mod loom;
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_hooks;
pub mod par;
mod park;
mod runtime;
pub(crate) mod sched;
#[cfg(not(loom))]
mod schedtrace;
pub mod sync;
pub(crate) mod task;
pub mod time;
pub mod trace;
mod yield_now;

pub use crate::par::parallel_for;
pub use crate::runtime::{BuildError, Builder, Handle, Runtime, SpawnError, DEFAULT_MAX_THREADS};
pub use crate::sched::stats::RuntimeStats;
pub use crate::sched::syscall::{syscall, ThreadLimit};
pub use crate::task::{JoinError, JoinHandle, TaskId};
pub use crate::yield_now::{yield_now, YieldNow};

use std::future::Future;

/// Spawns a task on the current runtime (from inside a task or `Runtime::block_on`). From a
/// running task it goes to the current P's `runnext`, as Go's `go` statement does.
///
/// # Panics
/// Outside a runtime, with a message saying how to fix it; use [`try_spawn`] to get an error.
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match Handle::try_current() {
        Some(h) => h.spawn(future),
        None => panic!("gmprt::spawn: {}", SpawnError::NoRuntime),
    }
}

/// Like [`spawn`], but returns an error outside a runtime or after shutdown.
pub fn try_spawn<F>(future: F) -> Result<JoinHandle<F::Output>, SpawnError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match Handle::try_current() {
        Some(h) => h.try_spawn(future),
        None => Err(SpawnError::NoRuntime),
    }
}

/// Go's `go f()`: runs a plain closure as a task on the current runtime and detaches it.
/// Returns the handle for those who want the result after all.
///
/// # Panics
/// Outside a runtime, as [`spawn`].
pub fn go<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    spawn(async move { f() })
}
