//! The closer: the Batcher's one task on a runtime, which says *when* a batch that runtime's
//! tasks opened may close — with `max_delay = 0`, once the tasks that were runnable when it
//! opened have run (batch boundaries at the scheduler's rounds); with `max_delay > 0`, at its
//! deadline, on the runtime's timers, so that no slot worker thread is woken to watch it.
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
//! With `max_delay > 0` a batch that a task opens usually closes on its runtime's quiescence
//! (the `quiesce` module), long before its deadline, and the deadline only has to hold when
//! the runtime stays busy. Keeping it with a slot worker meant that the submit which opened a
//! batch woke a parked worker (a futex call on the submitting M, and a thread for the kernel
//! to place: on 2 cores it often displaced the M) whenever no worker was awake — every batch
//! of a server whose requests come more than `max_delay` apart.
//! `offload_submitters/10x1` (2-core VM, rounds alternating with the tokio peer's, so the
//! workers' watch had often ended), 1 P: p99 50.8 → 30.6 µs and p50 7.1 → 6.2 µs, medians of
//! 4 alternating rounds; with the closer armed for every such batch (no hand-over, below) the
//! p99 fell 0.24-0.38× at 1 and 2 Ps, but a P then held its timer for as long as batches kept
//! coming (`benches/results/offload-submitters-2core-amd-2026-11-29-closer-deadline-ab.txt`).
//!
//! The closer gives the Batcher both without putting a task in the data path: one small task
//! per Batcher, spawned on the runtime of the first task that opens a batch.
//!
//! # Protocol (all under `central`)
//! * `armed`: a batch opened and the closer has not released it. Set by the submit whose
//!   admission opens a batch (`announce`), which also takes the closer's waker and wakes it:
//!   from a task the closer goes to that P's `runnext`, and runs right after the submitter
//!   parks. With `max_delay > 0` it is armed only where it replaces a futex wake: no worker
//!   is awake to keep the deadline (none watching an older one, none spinning or back from a
//!   batch: every idle worker parked), and the submit is from a task of the closer's runtime
//!   ([`Closer::keeps_deadline_here`]); any other opener notifies a worker, as without a
//!   closer, so that its batch never waits on a runtime it does not run on. An awake worker
//!   is preferred to the closer's timer because a P that holds a pending timer reads the
//!   clock every scheduling round (`sched/timers.rs`): with the closer arming every batch,
//!   `offload_submitters/1000x1000` at 1 P took 1.33× the time.
//! * `max_delay = 0`: the closer, woken and `armed`, yields once (`yield_now`: to the *tail*
//!   of its P's run queue, behind every task already runnable there), then sets `released`
//!   and notifies an idle worker. It parks again until the next batch opens. A worker takes
//!   a non-full batch only once it is `released` (or on flush, shutdown, quiescence, or when
//!   full).
//! * `max_delay > 0`: the closer, woken and `armed`, sleeps on the runtime's timers until the
//!   open batch's deadline (`opened + max_delay`). When it wakes it reads the open batch again:
//!   taken meanwhile (quiescence, full, flush), it parks until the next batch opens; past the
//!   deadline, it sets `released` and notifies an idle worker, which closes the batch
//!   (`CloseReason::Deadline`); a newer batch, armed while it slept (no wake: its waker was
//!   taken), means batches keep coming: it sets `released` and notifies a worker, which
//!   watches that batch's deadline and the next ones while they keep coming, as before the
//!   closer (one futex wake per `max_delay` at most, on no submit's path, instead of a timer
//!   on the runtime for as long as batches come). So a batch its runtime closes
//!   on quiescence costs one task wake at most (none while the closer sleeps for an older
//!   batch; like any wake, it may start an M for an idle P: `wakep`), and no thread wake of
//!   the Batcher's. A worker that is awake still watches deadlines itself.
//! * The take clears `armed` and `released`.
//! * `started`: a closer task runs. The first batch that opens from a task on a runtime
//!   starts one there (spawned by that submit after it released `central`: a submit that
//!   holds `central`, on the slow path, or one off any runtime, starts none and notifies a
//!   worker as before), and `rt` names that runtime. Its drop — the Batcher closed and it
//!   exited, or its runtime shut down and cancelled it, or the spawn was refused — clears
//!   `started`: a worker then takes at once, or watches the deadline, so nothing waits for a
//!   task that no longer exists, and the next batch that opens on a runtime starts another.
//!
//! Why nothing waits forever: `released` is set by the closer, which is woken (under
//! `central`) by the very admission that arms it, and a woken task runs unless its runtime
//! is gone — and then its drop clears `started` and notifies. A deadline the closer keeps is
//! a timer of the runtime the batch's opener runs on: the runtime fires it at its next
//! scheduling round, or an idle M parks until it (`sched/timers.rs`), so it holds while that
//! runtime runs; a task that keeps its P past the deadline without yielding delays it, as it
//! delays that runtime's every timer — and the batch's own submitters, which run there.
//! Full batches, flush and shutdown never wait for the closer. Without a runtime at
//! `Batcher::new` and no task submitting, there is no closer and nothing changes. Lock order:
//! `central` → the runtime's queues and timers (a wake, a spawn), which never call back into
//! a Batcher.
use super::{Central, Shared};
use crate::jobs::BatchKernel;
use gmprt_runtime::dump::ExternalWait;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

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
    /// The parked closer task (a batch that opens wakes it).
    pub(super) waker: Option<Waker>,
    /// The closer asleep until a deadline (`max_delay > 0`): only shutdown wakes it (a batch
    /// that opens meanwhile does not: its deadline is later).
    pub(super) sleeper: Option<Waker>,
    /// The runtime the closer runs on (set with `started`): with `max_delay > 0` it keeps the
    /// deadlines only of batches its own tasks open.
    pub(super) rt: Option<gmprt_runtime::Handle>,
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

    /// With `max_delay > 0`: whether the batch the caller opens may leave its deadline to the
    /// closer (under `central`): the caller is a task of the closer's runtime, or may start
    /// the closer on its own (`on_runtime`: a submit from a task, not holding `central` on
    /// entry). Any other opener (a plain thread, a `block_on`, another runtime's task) has a
    /// worker keep its deadline, as without a closer: its batch must not wait on a runtime
    /// that it does not run on.
    pub(super) fn keeps_deadline_here(&self, on_runtime: bool) -> bool {
        match &self.rt {
            Some(rt) if self.started => gmprt_runtime::procid().is_some() && rt.is_current(),
            _ => on_runtime && !self.started,
        }
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
            // The caller is a task of the runtime `start_closer` will spawn it on.
            self.rt = gmprt_runtime::Handle::try_current();
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
    c.closer.sleeper = None;
    c.closer.rt = None;
    shared.work.notify_all();
}

impl<K: BatchKernel> Gone<K> {
    /// The closer's loop: park until armed; then with `max_delay = 0` yield once and release,
    /// else keep the batch's deadline; exit once closed.
    async fn run(&self) {
        let s = &self.0;
        loop {
            if !(WaitArmed { shared: s }).await {
                return;
            }
            if !s.config.max_delay.is_zero() {
                self.keep_deadline().await;
                continue;
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

impl<K: BatchKernel> Gone<K> {
    /// With `max_delay > 0`, once armed: sleeps on the runtime's timers until the open batch's
    /// deadline and, if that batch is still open then, releases it and notifies a worker,
    /// which closes it (`CloseReason::Deadline`). Returns once the batch it watches is taken
    /// (by quiescence, when full, by a flush) or released, or the Batcher is closed (shutdown
    /// wakes it: a deadline may be an hour away). Each time it wakes it re-reads the open
    /// batch: one opened while it slept for an older batch's deadline (earlier than the new
    /// one's) was armed without a wake, and is watched from here.
    async fn keep_deadline(&self) {
        let s = &self.0;
        // The `opened` of the batch it last slept for.
        let mut watched: Option<Instant> = None;
        loop {
            let until = {
                let mut c = s.central.lock();
                c.closer.sleeper = None;
                if s.stage.word().closed() || !c.closer.armed || c.closer.released {
                    return;
                }
                if watched.is_some_and(|w| c.opened != Some(w)) {
                    // A newer batch opened while it slept: batches keep coming, so it hands
                    // their deadlines back to a worker, which keeps watching while they do
                    // (the P holding this timer reads the clock every round). One futex wake
                    // per `max_delay` at most, on no submit's path.
                    c.closer.released = true;
                    s.work.notify_one();
                    return;
                }
                // `opened` is stamped under the lock of the admission that armed us, and
                // `max_delay ≤ 1 h` (validated): `None` cannot happen; if it did, a worker
                // would keep the batch's deadline as without a closer.
                match c.opened.and_then(|o| o.checked_add(s.config.max_delay)) {
                    Some(deadline) if Instant::now() < deadline => {
                        watched = c.opened;
                        deadline
                    }
                    _ => {
                        c.closer.released = true;
                        s.work.notify_one();
                        return;
                    }
                }
            };
            let mut sleep = std::pin::pin!(gmprt_runtime::time::sleep_until(until));
            std::future::poll_fn(|cx| {
                {
                    // Under `central`, after the closed bit is read: shutdown sets it before it
                    // takes `sleeper` under `central`, so it either sees our waker or we see
                    // the bit.
                    let mut c = s.central.lock();
                    if s.stage.word().closed() {
                        return Poll::Ready(());
                    }
                    match &mut c.closer.sleeper {
                        Some(w) if w.will_wake(cx.waker()) => {}
                        slot => *slot = Some(cx.waker().clone()),
                    }
                }
                sleep.as_mut().poll(cx)
            })
            .await;
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
