//! `yield_now().await`: Go's `runtime.Gosched()` for a future.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Returns `Pending` once, and the task goes to the *tail* of its P's local queue (not
/// `runnext`): every task queued before it runs first. Polled by its own task, it does not wake
/// itself: it asks the poll harness to re-queue the task when the poll ends, one state
/// transition instead of a wake and then another (`task/wait.rs`, `request_self_yield`);
/// under any other waker it wakes that waker. Use it in long loops:
/// futures cannot be preempted, so a task that never yields keeps its P.
///
/// ```
/// let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
/// let n = rt.block_on(async {
///     gmprt_runtime::spawn(async {
///         let mut sum = 0u64;
///         for i in 0..1_000u64 {
///             sum += i;
///             if i % 100 == 0 {
///                 gmprt_runtime::yield_now().await;
///             }
///         }
///         sum
///     })
///     .await
///     .unwrap()
/// });
/// assert_eq!(n, 499_500);
/// ```
pub fn yield_now() -> YieldNow {
    YieldNow { yielded: false }
}

/// Future returned by [`yield_now`].
#[derive(Debug)]
#[must_use = "yield_now does nothing unless awaited"]
pub struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        requeue_self(cx);
        Poll::Pending
    }
}

/// Any future about to return `Pending` so that its task runs again after the tasks queued
/// before it (a yield, a spent budget: `coop.rs`). Polled by its own task (the common case),
/// the poll harness re-queues the task when this poll ends, in one state transition, instead
/// of a wake now and another then. Any other waker (an executor inside the task, `block_on`)
/// is woken as usual.
pub(crate) fn requeue_self(cx: &Context<'_>) {
    let own = crate::task::wait::request_self_yield(|cell| crate::task::core::is_own_waker(cell, cx.waker()));
    if !own {
        cx.waker().wake_by_ref();
    }
}
