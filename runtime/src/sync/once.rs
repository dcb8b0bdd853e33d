//! `Once`: Go's `sync.Once` — an initialiser that runs exactly once, however many callers race.
//!
//! # Protocol
//! State: `done` (an atomic flag, the fast path) and, under an internal lock, `running` plus a
//! [`WaitList`] of parked callers.
//!
//! 1. **Fast path**: `done` reads true (Acquire) → return; the initialiser's effects are
//!    visible (it was stored with Release after the initialiser returned).
//! 2. **Begin** (under the lock): `done` → return. Not `running` → set `running`; this caller
//!    is the *runner*. `running` → queue a waker and park (a task parks; a thread blocks).
//! 3. **Finish** (the runner, under the lock): clear `running`; if the initialiser completed
//!    (returned, or panicked: see below) set `done`; notify every parked caller. Each woken
//!    caller goes back to step 2: it finds `done`, or — if the runner was cancelled — becomes
//!    the next runner.
//!
//! No wakeup is lost: a caller queues only under the lock after seeing `running`, and the
//! runner clears `running` and notifies under the same lock, so it sees every queued caller.
//! Notification is sticky (a flag in the slot), so a wake-up between polls is kept.
//!
//! # When the initialiser does not return
//! * **It panics**: as in Go, the `Once` counts as done ("if f panics, Do considers it to have
//!   returned; future calls of Do return without calling f"). The panic propagates to the
//!   caller that ran it; the others return normally. The runner tells a panic from a normal
//!   return with a drop guard that checks [`std::thread::panicking`] — so a drop of the
//!   runner's future *during some other unwinding* also counts as done.
//! * **Its future is cancelled** (the `call_once_async` future is dropped before the
//!   initialiser's future finished, e.g. its task was aborted): the initialiser did not run to
//!   completion, so the `Once` is *not* done: `running` is cleared and a parked caller (or the
//!   next caller) runs its own initialiser. Nothing is lost and nothing runs twice to
//!   completion.
//!
//! # Blocking and the runtime
//! [`Once::call_once`] takes a plain closure; callers that must wait block their thread. On an
//! M they wait the way [`crate::syscall`] does (the M gives up its P), so the runtime keeps
//! running other tasks — including, if the runner is an async initialiser, the runner's own
//! task. [`Once::call_once_async`] parks waiting *tasks* instead of blocking Ms. As in Go,
//! calling the same `Once` from inside its own initialiser deadlocks.

use super::block;
use super::waiters::{Parked, WaitList};
use crate::loom::sync::atomic::{AtomicBool, Ordering::Acquire, Ordering::Release};
use crate::loom::sync::Mutex;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Go's `sync.Once`: runs an initialiser exactly once, even with many concurrent callers;
/// every caller returns only after it has completed.
///
/// Two forms share one state: [`call_once`](Once::call_once) (a plain closure; waiters block)
/// and [`call_once_async`](Once::call_once_async) (an async initialiser; waiting tasks park).
/// A panicking initialiser counts as done, as in Go; a *cancelled* async one does not (see the
/// module doc of `sync::once`).
///
/// ```
/// use gmprt_runtime::{sync::Once, Runtime};
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
///
/// static INIT: Once = Once::new();
/// static RUNS: AtomicUsize = AtomicUsize::new(0);
///
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// rt.block_on(async {
///     let tasks: Vec<_> = (0..50)
///         .map(|_| {
///             gmprt_runtime::spawn(async {
///                 INIT.call_once_async(|| async {
///                     RUNS.fetch_add(1, Ordering::SeqCst);
///                 })
///                 .await;
///                 assert!(INIT.is_completed());
///             })
///         })
///         .collect();
///     for t in tasks {
///         t.await.unwrap();
///     }
/// });
/// INIT.call_once(|| unreachable!("already done"));
/// assert_eq!(RUNS.load(Ordering::SeqCst), 1);
/// ```
pub struct Once {
    done: AtomicBool,
    state: Mutex<State>,
}

struct State {
    /// A runner is executing the initialiser.
    running: bool,
    /// Callers parked while `running`.
    waiters: WaitList<Parked>,
}

impl Once {
    /// A new `Once` whose initialiser has not run. `const` (usable in a `static`) except in
    /// loom builds.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Once {
            done: AtomicBool::new(false),
            state: Mutex::new(State { running: false, waiters: WaitList::new() }),
        }
    }

    /// A new `Once` whose initialiser has not run.
    #[cfg(loom)]
    pub fn new() -> Self {
        Once {
            done: AtomicBool::new(false),
            state: Mutex::new(State { running: false, waiters: WaitList::new() }),
        }
    }

    /// True once an initialiser has completed (returned or panicked). When it returns true,
    /// the initialiser's effects are visible to the caller.
    pub fn is_completed(&self) -> bool {
        self.done.load(Acquire)
    }

    /// Go's `once.Do(f)`: runs `f` if no initialiser has completed yet, and returns once one
    /// has. If another caller is running its initialiser, this one waits — blocking its
    /// thread; on an M the wait gives up the P as [`crate::syscall`] does, so other tasks keep
    /// running. Inside tasks prefer [`call_once_async`](Once::call_once_async).
    ///
    /// If `f` panics the panic propagates to this caller, and the `Once` counts as done.
    pub fn call_once<F: FnOnce()>(&self, f: F) {
        if self.is_completed() || !block::block_on(self.begin()) {
            return;
        }
        let runner = Runner { once: self, completed: false };
        f();
        runner.finish();
    }

    /// The async form of [`call_once`](Once::call_once): runs `f().await` if no initialiser
    /// has completed yet, and returns once one has. Callers that must wait park their task
    /// (no M is blocked).
    ///
    /// If the initialiser's future panics, the panic propagates to this caller and the `Once`
    /// counts as done. If this future is dropped while the initialiser runs, the `Once` is not
    /// done, and a waiting caller runs its initialiser instead.
    pub async fn call_once_async<F, Fut>(&self, f: F)
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = ()>,
    {
        if self.is_completed() {
            // Done already: ready without parking, so spend budget like every such `.await`
            // (coop.rs); `Begin` does the same on its first poll.
            return std::future::poll_fn(crate::coop::poll_proceed).await;
        }
        if !self.begin().await {
            return;
        }
        let runner = Runner { once: self, completed: false };
        f().await;
        runner.finish();
    }

    /// Step 2: resolves to `true` if the caller became the runner, `false` once done.
    fn begin(&self) -> Begin<'_> {
        Begin { once: self, key: None }
    }

    /// Step 3: ends a runner's turn; `completed` sets `done`.
    fn finish(&self, completed: bool) {
        let wakers = {
            let mut st = self.state.lock();
            st.running = false;
            if completed {
                self.done.store(true, Release);
            }
            st.waiters.notify_all()
        };
        for w in wakers {
            w.wake();
        }
    }
}

impl Default for Once {
    fn default() -> Self {
        Once::new()
    }
}

impl fmt::Debug for Once {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Once").field("done", &self.is_completed()).finish_non_exhaustive()
    }
}

/// The runner's drop guard: ends its turn however the initialiser ends (module doc).
struct Runner<'a> {
    once: &'a Once,
    completed: bool,
}

impl Runner<'_> {
    fn finish(mut self) {
        self.completed = true;
    }
}

impl Drop for Runner<'_> {
    fn drop(&mut self) {
        // Returned, or panicked (Go's rule): done. Dropped otherwise (cancelled): not done.
        self.once.finish(self.completed || std::thread::panicking());
    }
}

/// Step 2 as a future. Holds a slot in the waiter list while parked.
struct Begin<'a> {
    once: &'a Once,
    key: Option<usize>,
}

impl Future for Begin<'_> {
    type Output = bool;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let this = self.get_mut();
        // A call that finds the value ready completes without parking: spend budget first
        // (coop.rs). Not once queued (it is woken only when something changed).
        if this.key.is_none() && crate::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        let mut st = this.once.state.lock();
        // Every change of `running`/`done` notifies all parked callers, so a slot that is not
        // notified yet means nothing changed: keep waiting with the new waker.
        if let Some(k) = this.key {
            let w = st.waiters.get_mut(k);
            if !w.notified {
                super::waiters::update_waker(&mut w.waker, cx);
                crate::task::wait::set(crate::task::wait::ONCE, 0, 0);
                return Poll::Pending;
            }
            st.waiters.free(k);
            this.key = None;
        }
        if this.once.done.load(Acquire) {
            Poll::Ready(false)
        } else if !st.running {
            st.running = true;
            Poll::Ready(true)
        } else {
            this.key = Some(st.waiters.push_back(Parked::new(cx)));
            crate::task::wait::set(crate::task::wait::ONCE, 0, 0);
            Poll::Pending
        }
    }
}

impl Drop for Begin<'_> {
    fn drop(&mut self) {
        // A notification we leave behind is not owed to anyone else: `finish` notifies every
        // parked caller at once, so they were all woken with us.
        if let Some(k) = self.key.take() {
            self.once.state.lock().waiters.free(k);
        }
    }
}
