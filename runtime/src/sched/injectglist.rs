//! Go's `injectglist`: a list of woken tasks goes into the global queue at once, and only as
//! many idle Ps are started as there is work for.
//!
//! # Why
//! A thread outside the runtime that wakes many tasks one by one (a Batcher's slot worker
//! delivering a batch of results, a completion thread) pays `Shared::inject` per task: a
//! global-queue push, a `SeqCst` fence and a `wakep` — and each `wakep` that finds an idle P
//! and no spinner starts an M, which may find its task already taken by the M started for
//! the previous one. Go's answer (`injectglist`, used by `netpoll` and the GC) is to queue the
//! whole list and then start `min(list length, idle Ps)` Ms, each with a P, in one round.
//!
//! # The protocol
//! 1. Each waker is consumed with the same state transition `Waker::wake` makes
//!    (`State::wake_by_val`); the tasks that must be queued are pushed to their runtime's
//!    global queue (`injector`) in list order. Wakers of other executors are woken as usual.
//! 2. Per runtime touched: `fence(SeqCst)` then the shutdown check — as `inject`: either we
//!    see the flag and drain the queue ourselves, or shutdown's drain sees our pushes.
//! 3. Then `startidle(n)`: for each of the `n` tasks queued, while a P is idle, take it under
//!    `sched` and `startm` it (non-spinning: it has work). The loop ends early when no P is
//!    idle; every busy P's M reaches the global queue in `find_runnable` before it can go idle.
//! 4. Last, one `wakep`: if every task went to an M started here, it returns at once (no idle
//!    P); if some are still queued because `npidle` read 0 while an M was between its idle
//!    path's `pidleput` and its recheck, the ordinary protocol covers them.
//!
//! [`wake_all`] is the same protocol without step 3, for lists of short tasks: one `wakep`,
//! and Ms come up only as the ones already up find work.
//!
//! # Why no wakeup is lost
//! Step 4 is the submitter step of the park/unpark protocol (`idle.rs`, step 1) for the
//! whole list: the pushes come before its fence, so the proof there applies unchanged with
//! "task T" read as "any task of the list". Step 3 only adds Ms early; an M started there is
//! an M with a P, which runs `find_runnable` before it can park. `tests/loom_park.rs`
//! (`injectglist_*`) checks a list of two racing an M's idle path and a P going idle.
use super::Shared;
use crate::loom::sync::atomic::{fence, Ordering::SeqCst};
use crate::task::Notified;

impl Shared {
    /// Step 2-4 of the module protocol for `n` tasks this caller just pushed to `injector`.
    /// Any thread may call it; it must follow the pushes.
    /// `start` says whether step 3 runs ([`wake_all`] skips it).
    pub(crate) fn injectglist_wake(&self, n: usize, start: StartIdle) {
        debug_assert!(n > 0, "injectglist_wake with nothing pushed");
        // Pairs with the fence in `shutdown` (see `inject`).
        fence(SeqCst);
        if self.is_shutdown() {
            self.drain_injector();
            return;
        }
        if start == StartIdle::PerTask {
            self.startidle(n);
        }
        self.wakep(super::idle::WakeFrom::Inject);
    }

    /// Go's `startIdle`: start up to `n` idle Ps on Ms (non-spinning: there is queued work
    /// for each). Stops at the first round that finds no idle P.
    fn startidle(&self, n: usize) {
        for _ in 0..n {
            if self.npidle.load(SeqCst) == 0 {
                return;
            }
            let mut s = self.sched.lock();
            // Under `sched`, as in `wakep`: no P leaves the idle list after shutdown.
            let p = self.pidleget_unless_shutdown(&mut s);
            match p {
                Some(p) => self.startm(s, p, false, super::idle::WakeFrom::Inject),
                None => return,
            }
        }
    }

    /// Pushes `task` to the global queue for `injectglist` (step 1): no fence, no wakeup —
    /// the caller runs `injectglist_wake` after the last push.
    pub(crate) fn injectglist_push(&self, task: Notified) {
        self.trace_ready(task.header());
        self.injector.push(task);
    }
}

/// Wakes every waker of `wakers`, as `Waker::wake` would, but the gmprt tasks among them go to
/// their runtime's global queue together and start only as many idle Ps as there are tasks
/// (Go's `injectglist`; see the module docs). For a thread outside the runtime that wakes
/// many tasks at once, such as an offload worker delivering a batch. Order is kept: tasks
/// enter the global queue in list order. Wakers of other executors are woken one by one.
///
/// ```
/// use gmprt_runtime::{injectglist, Runtime};
/// use std::sync::{Arc, Mutex};
/// use std::task::{Poll, Waker};
///
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// let parked: Arc<Mutex<Vec<Waker>>> = Arc::default();
/// let hs: Vec<_> = (0..100)
///     .map(|i| {
///         let parked = parked.clone();
///         let mut first = true;
///         rt.spawn(std::future::poll_fn(move |cx| {
///             if std::mem::take(&mut first) {
///                 parked.lock().unwrap().push(cx.waker().clone());
///                 return Poll::Pending;
///             }
///             Poll::Ready(i)
///         }))
///     })
///     .collect();
/// // Wait (by polling the count) until every task has parked, then wake all of them at once.
/// while parked.lock().unwrap().len() < 100 {
///     std::thread::yield_now();
/// }
/// injectglist(std::mem::take(&mut *parked.lock().unwrap()));
/// let sum: i32 = hs.into_iter().map(|h| h.join().unwrap()).sum();
/// assert_eq!(sum, (0..100).sum::<i32>());
/// ```
pub fn injectglist(wakers: impl IntoIterator<Item = std::task::Waker>) {
    inject_list(wakers, StartIdle::PerTask);
}

/// [`injectglist`] without its step 3: the list goes to the global queue at once, and one
/// `wakep` starts at most one M, which brings the next only if it finds work (a spinning M
/// that finds a task wakes another, `idle.rs`), so Ms come up as fast as the list keeps them
/// busy. For lists of short tasks: a Batcher's submitters, each of which takes its result,
/// submits its next item and parks again. [`injectglist`] starts one M per task up to the idle
/// Ps: with 16 Ps, 100 such submitters woke 15 Ms per round that each found a task or two,
/// searched every P (~770 steal attempts a round) and parked again, and the Batcher's
/// quiescence waited for the last of them (`offload_submitters/100x100`, 2-core VM, 16 Ps:
/// 120-152 µs a round with `injectglist`, 57-60 µs with this; at 2 Ps no change;
/// `benches/results/offload-submitters-wake-all-2core.txt`). No wake-up is lost: step 4 is
/// the park/unpark protocol's submitter step for the whole list, step 3 only ever added Ms
/// early (module docs).
///
/// ```
/// use gmprt_runtime::{wake_all, Runtime};
/// use std::sync::{Arc, Mutex};
/// use std::task::{Poll, Waker};
///
/// let rt = Runtime::builder().procs(4).build().unwrap();
/// let parked: Arc<Mutex<Vec<Waker>>> = Arc::default();
/// let hs: Vec<_> = (0..100)
///     .map(|i| {
///         let parked = parked.clone();
///         let mut first = true;
///         rt.spawn(std::future::poll_fn(move |cx| {
///             if std::mem::take(&mut first) {
///                 parked.lock().unwrap().push(cx.waker().clone());
///                 return Poll::Pending;
///             }
///             Poll::Ready(i)
///         }))
///     })
///     .collect();
/// while parked.lock().unwrap().len() < 100 {
///     std::thread::yield_now();
/// }
/// wake_all(std::mem::take(&mut *parked.lock().unwrap()));
/// let sum: i32 = hs.into_iter().map(|h| h.join().unwrap()).sum();
/// assert_eq!(sum, (0..100).sum::<i32>());
/// ```
pub fn wake_all(wakers: impl IntoIterator<Item = std::task::Waker>) {
    inject_list(wakers, StartIdle::No);
}

/// Whether a list's wake starts an idle P per task (step 3) or leaves it to one `wakep`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum StartIdle {
    /// Go's `startIdle(n)`: [`injectglist`].
    PerTask,
    /// One `wakep` only: [`wake_all`].
    No,
}

/// The one body of [`injectglist`] and [`wake_all`] (steps 1-4, step 3 as `start` says).
fn inject_list(wakers: impl IntoIterator<Item = std::task::Waker>, start: StartIdle) {
    use crate::task::waker::{wake_for_list, ListWake};
    // The runtime whose tasks are being pushed, and how many. Usually one per call; a switch
    // to another runtime finishes the first one's round before pushing to the next. The Arc
    // keeps that runtime alive until its round is done (its tasks may complete and drop their
    // own counts meanwhile).
    let mut cur: Option<(std::sync::Arc<Shared>, usize)> = None;
    for w in wakers {
        match wake_for_list(w) {
            ListWake::Queue(task) => {
                let shared = task.header().shared();
                let same = matches!(&cur, Some((s, _)) if std::ptr::eq(&**s, shared));
                if !same {
                    if let Some((s, n)) = cur.take() {
                        s.injectglist_wake(n, start);
                    }
                    cur = Some((shared.arc(), 0));
                }
                let (s, n) = cur.as_mut().expect("set above");
                s.injectglist_push(task);
                *n += 1;
            }
            ListWake::Done => {}
            ListWake::Foreign(w) => w.wake(),
        }
    }
    if let Some((s, n)) = cur {
        s.injectglist_wake(n, start);
    }
}
