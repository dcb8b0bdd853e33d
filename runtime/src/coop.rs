//! Cooperative budget: how a task that is always ready still lets others run.
//!
//! Go preempts a goroutine that runs too long (since 1.14, by signalling its thread: *async
//! preemption*). A Rust future cannot be interrupted between `.await`s — there is no stack to
//! save, only the future's state, which is only consistent at an `.await` — so gmprt cannot do
//! that. What it can do, like tokio's coop budget:
//! * every poll of a task starts with a budget of [`BUDGET`] operations;
//! * every gmprt future that can complete without parking — channel `send`/`recv`, `select!`,
//!   a `JoinHandle` whose task has finished, an elapsed `sleep`, an uncontended `Mutex::lock`,
//!   a `WaitGroup::wait` at zero, a finished `Once` — calls [`poll_proceed`] first, which spends
//!   one unit, and once the budget is gone returns `Pending` after waking the task — so the task
//!   goes to the back of its P's queue, exactly as if it had called `yield_now`. (Joining a
//!   million finished handles in one loop was one 48 ms poll before `JoinHandle` did this.)
//! * a task that never awaits anything still keeps its P: sysmon reports it (`long_polls`) and
//!   the fix is `yield_now().await` or `syscall(..)`.
//!
//! Outside a gmprt task (a plain thread, `block_on`) there is no budget: nothing is limited.

use std::cell::Cell;
use std::task::{Context, Poll};

/// Operations per poll before a ready resource makes the task yield. tokio uses 128 too; at
/// ~50–150 ns per channel operation that is 6–20 µs of work between yields: rare enough to cost
/// nothing measurable, and three orders of magnitude under sysmon's 10 ms long-poll line.
pub const BUDGET: u8 = 128;

crate::loom::thread_local! {
    /// `None` outside a task poll (unlimited).
    static LEFT: Cell<Option<u8>> = const { Cell::new(None) };
}

/// Runs `f` (a task poll) with a fresh budget, restoring the previous one after.
pub(crate) fn with_budget<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(Option<u8>);
    impl Drop for Restore {
        fn drop(&mut self) {
            LEFT.with(|l| l.set(self.0));
        }
    }
    let _restore = Restore(LEFT.with(|l| l.replace(Some(BUDGET))));
    f()
}

/// Spends one unit of the current task's budget. `Ready(())`: go ahead. `Pending`: the budget
/// is spent; the task is to run again after the tasks queued behind it (`requeue_self`) and
/// must return `Pending` now. For resources that can be ready many times in a row.
pub fn poll_proceed(cx: &mut Context<'_>) -> Poll<()> {
    LEFT.with(|l| match l.get() {
        None => Poll::Ready(()),
        Some(0) => {
            crate::yield_now::requeue_self(cx);
            Poll::Pending
        }
        Some(n) => {
            l.set(Some(n - 1));
            Poll::Ready(())
        }
    })
}

/// True if the current task has budget left (always true outside a task).
pub fn has_budget_remaining() -> bool {
    LEFT.with(|l| l.get() != Some(0))
}
