//! G — the task.
//!
//! A task is **one heap allocation** (`core.rs`'s `Cell`): a [`Header`] (the atomic state word
//! with the reference count, the owned-list links, a vtable, the id and spawn site, the
//! scheduler it belongs to, the joiner's waker and the wait reason), followed by the *stage*:
//! the future while it runs, then its output. Go gives every goroutine a 2 KB stack; a gmprt task costs the
//! larger of its future and its output plus a 72-byte header.
//!
//! # References
//! The state word counts references. They are held by: the run queue entry ([`Notified`], at
//! most one, see `state.rs`), the [`JoinHandle`], each [`Waker`](std::task::Waker) clone, and
//! the owned-task list while the task is parked there. The last one to go frees the cell.
//!
//! # Lifecycle
//! ```text
//! spawn ──▶ NOTIFIED (queued) ──poll──▶ RUNNING ──Ready/panic──▶ COMPLETE
//!               ▲                          │  Pending (no wake during poll)
//!               │ wake                     ▼
//!               └──────────────────── idle (parked; registered in the owned list)
//! ```
//! A wake during the poll leaves `NOTIFIED` set and the poller re-queues the task, so it is
//! polled exactly once more; a wake after `COMPLETE` is a no-op.
//!
//! # The owned-task list
//! Shutdown must drop every unfinished future exactly once, including tasks that are parked
//! (referenced only by wakers held somewhere). Queued tasks are found by draining the queues;
//! parked tasks are found through the owned list. A task joins that list the first time it
//! parks, not at spawn, so the common spawn → run → complete path never takes a lock for it.

pub(crate) mod cache;
pub(crate) mod core;
pub(crate) mod heap;
pub(crate) mod join;
pub(crate) mod owned;
pub(crate) mod site;
pub(crate) mod state;
pub(crate) mod wait;
pub(crate) mod waker;

pub(crate) use self::core::{Header, Notified};
pub use self::core::{TaskId, TASK_HEADER_BYTES};
pub use self::join::{JoinError, JoinHandle};
