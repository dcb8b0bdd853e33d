//! Trace hooks: the scheduler's event points, for a trace exporter to subscribe to.
//!
//! Attach a [`Tracer`] with `Builder::tracer`. With none attached (the default) every event
//! point is one predictable branch on a field that never changes after start-up; the event
//! value is not even built, because it is constructed inside a closure that is not called.

use crate::task::TaskId;

/// One scheduler event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceEvent {
    /// A task was created. `p`: the P it was spawned from (`None`: from outside the runtime).
    Spawn {
        /// The new task.
        task: TaskId,
        /// The spawning P, if any.
        p: Option<usize>,
    },
    /// An M is about to poll a task on P `p`.
    PollBegin {
        /// The task.
        task: TaskId,
        /// The P running it.
        p: Option<usize>,
    },
    /// The poll returned; `ready` if the task finished.
    PollEnd {
        /// The task.
        task: TaskId,
        /// The P running it.
        p: Option<usize>,
        /// True if the future completed (or panicked).
        ready: bool,
    },
    /// P `thief` took work from P `victim`.
    Steal {
        /// The stealing P.
        thief: usize,
        /// The P robbed.
        victim: usize,
    },
    /// M `m` parked for lack of work.
    Park {
        /// The M (thread) id.
        m: usize,
    },
    /// A parked M was handed a P and woken.
    Unpark,
}

/// Receives scheduler events. Called on the hot path of the M where the event happens: keep
/// it short (push into a per-thread buffer) and never block.
pub trait Tracer: Send + Sync + 'static {
    /// One event.
    fn event(&self, ev: &TraceEvent);
}
