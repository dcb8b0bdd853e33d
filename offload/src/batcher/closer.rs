//! The closer: with `max_delay = 0` on a runtime, a batch closes when the tasks that were
//! runnable when it opened have run — batch boundaries at the scheduler's rounds.
//!
//! `max_delay = 0` is Triton's default: a free slot takes whatever is queued. Taken
//! literally by a slot worker on its own OS thread, "whatever is queued" is one item: the
//! worker sees the first item the moment it is admitted, and the tasks that were about to
//! submit (already runnable, on the Ps) miss the batch. Measured on 2 cores with 1,000
//! long-lived submitters, batches of 1-10 items cost a worker wake, a take, a launch and a
//! scatter each, and the workers took 38% of the CPU. tokio's hand-written peer (a collector
//! *task*) does not have the problem: the collector runs when the scheduler reaches it, after
//! the tasks queued before it have sent their items.
//!
//! The closer gives the Batcher that behaviour without putting a task in the data path: one
//! small task per Batcher, spawned on its runtime, that only says *when*.
//!
//! # Protocol (all under `central`)
//! * `armed`: a batch opened and the closer has not released it. Set by the submit whose
//!   admission opens a batch (`announce`), which also takes the closer's waker and wakes it:
//!   from a task the closer goes to that P's `runnext`, and runs right after the submitter
//!   parks.
//! * The closer, woken and `armed`, yields once (`yield_now`: to the *tail* of its P's run
//!   queue, behind every task already runnable there), then sets `released` and notifies an
//!   idle worker. It parks again until the next batch opens.
//! * A worker takes a non-full batch with `max_delay = 0` only once it is `released` (or on
//!   flush, shutdown, or when full); the take clears `armed` and `released`.
//! * `started`: a closer task runs. The first batch that opens from a task on a runtime
//!   starts one there (spawned by that submit after it released `central`: a submit that
//!   holds `central`, on the slow path, or one off any runtime, starts none and notifies a
//!   worker as before). Its drop — the Batcher closed and it exited, or its runtime shut
//!   down and cancelled it, or the spawn was refused — clears `started`: a worker then takes
//!   at once, so nothing waits for a task that no longer exists, and the next batch that
//!   opens on a runtime starts another.
//!
//! Why nothing waits forever: `released` is set by the closer, which is woken (under
//! `central`) by the very admission that arms it, and a woken task runs unless its runtime
//! is gone — and then its drop clears `started`. Full batches, flush and shutdown never wait for
//! the closer. Without a runtime at `Batcher::new`, or with `max_delay > 0`, there is no
//! closer and nothing changes. Lock order: `central` → the runtime's queues (a wake, a
//! spawn), which never call back into a Batcher.
use super::{Central, Shared};
use crate::jobs::BatchKernel;
use gmprt_runtime::dump::ExternalWait;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

/// The closer's state in `central`.
#[derive(Debug, Default)]
pub(super) struct Closer {
    /// A closer task is running for this Batcher (set when it is spawned, cleared by its
    /// drop: then the next batch that opens on a runtime starts another).
    pub(super) started: bool,
    /// A batch opened and was not released yet.
    pub(super) armed: bool,
    /// The open batch may close (the runnable tasks have had their turn).
    pub(super) released: bool,
    /// The parked closer task.
    pub(super) waker: Option<Waker>,
}

/// What [`Closer::arm`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Armed {
    /// No closer (none may be started here): the caller notifies a worker itself.
    No,
    /// The running closer was woken: it will release the batch.
    Woken,
    /// The caller must start a closer ([`Shared::start_closer`]) once it has released
    /// `central`; the batch is armed for it.
    Start,
}

impl Closer {
    /// Whether a worker must wait for the closer before taking a non-full batch.
    pub(super) fn holds(&self) -> bool {
        self.started && !self.released
    }

    /// A batch opened (under `central`): arm and wake the running closer, or ask the caller
    /// to start one when `may_start` (a submit on a runtime, not holding `central` on entry).
    pub(super) fn arm(&mut self, may_start: bool) -> Armed {
        if !self.started && !may_start {
            return Armed::No;
        }
        self.armed = true;
        self.released = false;
        if !self.started {
            self.started = true;
            return Armed::Start;
        }
        if let Some(w) = self.waker.take() {
            // Under `central`: a wake only queues the task (the runtime's queues are leaf
            // locks), it never calls back into the Batcher.
            w.wake();
        }
        Armed::Woken
    }

    /// A worker took the open batch (under `central`).
    pub(super) fn taken(&mut self) {
        self.armed = false;
        self.released = false;
    }
}

/// How many more rounds the closer yields while reservations drain into the batch: each
/// round lets a P's queue run once; 8 rounds cover the waiters one take wakes at once
/// (spread over the global queue and the Ps' queues) without making a batch wait long for
/// a reservation whose task is slow to come back.
const RESERVED_ROUNDS: usize = 8;

/// What a parked closer shows in a task dump (interned once).
fn external() -> ExternalWait {
    static NAME: OnceLock<ExternalWait> = OnceLock::new();
    *NAME.get_or_init(|| ExternalWait::named("Batcher closer"))
}

impl<K: BatchKernel> Shared<K> {
    /// Spawns the closer on the caller's runtime, after [`Closer::arm`] said `Start` (not
    /// under `central`). If the spawn is refused, the guard's drop clears `started` and
    /// lets the workers go: this batch closes as without a closer.
    pub(super) fn start_closer(&self) {
        let (Some(me), Some(rt)) = (self.me.upgrade(), gmprt_runtime::Handle::try_current()) else {
            // No runtime after all (or the Batcher is being dropped): no closer.
            closer_gone(self);
            return;
        };
        let guard = Gone(me);
        // A refused spawn drops the future, whose guard does what a finished closer does.
        let _refused = rt.try_spawn(async move { guard.run().await });
    }
}

/// Owns the closer's `Arc<Shared>`; its drop (the task finished or was cancelled, or its
/// spawn refused) clears `started` and lets any worker waiting for a release go.
struct Gone<K: BatchKernel>(Arc<Shared<K>>);

/// The closer is gone (or never came): clear `started` and let every worker waiting for a
/// release go (they re-check `holds()` under `central`).
fn closer_gone<K: BatchKernel>(shared: &Shared<K>) {
    let mut c = shared.central.lock();
    c.closer.started = false;
    c.closer.waker = None;
    shared.work.notify_all();
}

impl<K: BatchKernel> Gone<K> {
    /// The closer's loop: park until armed, yield once, release; exit once closed.
    async fn run(&self) {
        let s = &self.0;
        loop {
            if !(WaitArmed { shared: s }).await {
                return;
            }
            gmprt_runtime::yield_now().await;
            // Waiters given room by the last take are runnable and about to enter this
            // batch: let them, while they make progress (bounded: a reservation whose task
            // does not come back soon is not waited for).
            let mut reserved = s.stage.word().reserved();
            for _ in 0..RESERVED_ROUNDS {
                if reserved == 0 {
                    break;
                }
                gmprt_runtime::yield_now().await;
                let now = s.stage.word().reserved();
                if now >= reserved {
                    break;
                }
                reserved = now;
            }
            let mut c = s.central.lock();
            if c.closer.armed {
                c.closer.released = true;
                s.work.notify_one();
            }
        }
    }
}

impl<K: BatchKernel> Drop for Gone<K> {
    fn drop(&mut self) {
        closer_gone(&self.0);
    }
}

/// Resolves to `true` once a batch is armed and not yet released, `false` once the Batcher
/// is closed.
struct WaitArmed<'a, K: BatchKernel> {
    shared: &'a Shared<K>,
}

impl<K: BatchKernel> Future for WaitArmed<'_, K> {
    type Output = bool;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let s = self.shared;
        let mut c: parking_lot::MutexGuard<'_, Central> = s.central.lock();
        if s.stage.word().closed() {
            return Poll::Ready(false);
        }
        if c.closer.armed && !c.closer.released {
            return Poll::Ready(true);
        }
        c.closer.waker = Some(cx.waker().clone());
        external().waiting(0);
        Poll::Pending
    }
}
