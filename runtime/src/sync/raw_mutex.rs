//! `RawMutex`: the lock protocol behind [`Mutex<T>`](super::Mutex) — Go's `sync.Mutex`
//! (`src/sync/mutex.go`) rebuilt for futures, with its two modes.
//!
//! # Modes (Go's rules)
//! * **Normal mode**: waiters queue in FIFO order, but a woken waiter does not own the mutex:
//!   it competes with newly arriving lockers, which may *barge* in on the fast path. Newcomers
//!   are already running, so they win often — good throughput, possible unfairness. A woken
//!   waiter that loses keeps its place at the head of the queue.
//! * **Starvation mode**: entered when a woken waiter loses to a barger after having waited
//!   more than [`STARVATION_THRESHOLD`] (1 ms, Go's `starvationThresholdNs`). Unlock then
//!   *hands ownership directly* to the waiter at the head of the queue; newcomers do not try
//!   to take the mutex even if it looks unlocked, and queue at the tail. The mode ends at a
//!   hand-off whose receiver waited less than 1 ms, or that empties the queue.
//!
//! # State
//! One atomic word: [`LOCKED`] (owned by a guard, or granted to a waiter that has not polled
//! yet), [`STARVING`], [`WAITERS`] (the queue is non-empty). The queue is a [`WaitList`] of
//! [`Waiter`]s under `queue`, an internal (short, never held across an await) lock. The fast
//! paths touch only the word: lock is a CAS that sets `LOCKED` when neither `LOCKED` nor
//! `STARVING` is set (barging is allowed with waiters queued), unlock is a CAS `LOCKED → 0`
//! that succeeds only when nobody waits. Everything else happens under `queue`.
//!
//! # Invariants (whenever `queue` is not held)
//! * **I1** `WAITERS` ⇔ the queue is non-empty. `WAITERS` changes only under `queue`.
//! * **I2** `STARVING` ⇒ `LOCKED` ∧ `WAITERS`. So in starvation mode the owner's unlock always
//!   takes the slow path and finds a head to hand off to.
//! * **I3** ¬`LOCKED` ∧ queue non-empty ⇒ the head is `Woken` (its wake has been issued).
//!   This is "no lost wakeup": an unlocked mutex with waiters always has one on its way.
//!
//! While `queue` is held with `WAITERS` set, `LOCKED` can go 0 → 1 (a barger's CAS) but never
//! 1 → 0: the owner's fast unlock fails because the word is not exactly `LOCKED`, and its slow
//! unlock needs `queue`. Every check-then-act below relies on that.
//!
//! # Transitions
//! 1. **Lock, slow path** (under `queue`): in one CAS loop either take the mutex (it is
//!    unlocked and not starving) or set `WAITERS` while `LOCKED` is still set — so the owner's
//!    fast unlock cannot slip in between "saw it locked" and "queued" (I1, I3). Then queue a
//!    `Waiting` slot at the tail with the waker and the time.
//! 2. **Unlock, normal mode**: clear `LOCKED`; if the head is `Waiting`, mark it `Woken` and
//!    wake it (I3). At most the head is ever `Woken`.
//! 3. **Woken waiter polls**: if the mutex is unlocked, take it with a CAS and leave the queue.
//!    Otherwise a barger won: back to `Waiting`, and if it has waited > 1 ms set `STARVING`
//!    (legal by I2: it just saw `LOCKED`, and it is queued).
//! 4. **Unlock, starvation mode**: keep `LOCKED` set, unlink the head, mark it `Granted` and
//!    wake it: it owns the mutex now. Leave starvation mode if the queue is now empty or the
//!    receiver waited < 1 ms.
//! 5. **Granted waiter polls**: frees its slot and returns the guard.
//!
//! # Cancellation (a pending `lock()` future dropped)
//! Under `queue` the future frees its slot, then by its status:
//! * `Waiting`: just leave. If the queue is now empty clear `WAITERS` and `STARVING` (I1, I2).
//!   The owner's unlock will then find nobody, or the next head.
//! * `Woken`: the mutex was unlocked for us and we will never take it, so pass the wake on —
//!   if the mutex is still unlocked and the queue non-empty, wake the new head (I3). If a
//!   barger holds it, its unlock wakes the head.
//! * `Granted`: we *own* the mutex (step 4 made us the owner without our polling), so release
//!   it exactly as a guard would: unlock, which hands off to the next waiter in starvation mode.
//!
//! So a hand-off is never lost: ownership moves only to a slot that is either polled (and
//! becomes a guard) or dropped (and unlocks), and a wake-up is never lost: every `Woken` slot
//! either polls or, when dropped, re-issues the wake-up while the mutex is still unlocked.
//!
//! # Memory ordering
//! The protected data is published by the unlocker's release (the `LOCKED → 0` CAS or the
//! `fetch_and`, Release/AcqRel) to the next owner's acquiring CAS; a hand-off publishes it
//! through `queue` (the unlocker writes `Granted` under it, the receiver reads it under it).
//!
//! # loom
//! loom models cannot depend on real time, so under `cfg(loom)` every waiter counts as having
//! waited past the threshold ([`WaitStart::starved`] is always true): a woken waiter that loses
//! to a barger always enters starvation mode, and the mode then ends only when the queue
//! empties. That lets the models reach the hand-off paths (and their cancellation) in few
//! steps.

use super::waiters::{update_waker, WaitList};
use crate::loom::sync::atomic::{AtomicUsize, Ordering::AcqRel, Ordering::Acquire, Ordering::Relaxed};
use crate::loom::sync::Mutex as QueueLock;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// The mutex is owned (by a guard or a granted waiter).
pub(crate) const LOCKED: usize = 1;
/// Starvation mode: unlock hands off to the head waiter; newcomers queue.
pub(crate) const STARVING: usize = 2;
/// The waiter queue is non-empty (I1).
pub(crate) const WAITERS: usize = 4;

/// Go's `starvationThresholdNs` (1e6): a waiter that has waited longer than this and still
/// lost to a barger switches the mutex to starvation mode.
pub const STARVATION_THRESHOLD: Duration = Duration::from_millis(1);

/// When a waiter started waiting. Real time normally; a constant "long ago" under loom.
#[cfg(not(loom))]
#[derive(Debug, Clone, Copy)]
pub(crate) struct WaitStart(std::time::Instant);

#[cfg(not(loom))]
impl WaitStart {
    fn now() -> Self {
        WaitStart(std::time::Instant::now())
    }
    /// Has this waiter waited longer than [`STARVATION_THRESHOLD`]?
    fn starved(self) -> bool {
        self.0.elapsed() > STARVATION_THRESHOLD
    }
}

/// Under loom every waiter counts as starved (see the module doc).
#[cfg(loom)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct WaitStart;

#[cfg(loom)]
impl WaitStart {
    fn now() -> Self {
        WaitStart
    }
    fn starved(self) -> bool {
        true
    }
}

/// Where a queued waiter stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    /// Queued; will be woken by an unlock.
    Waiting,
    /// Head of the queue, woken by a normal-mode unlock to compete for the mutex.
    Woken,
    /// Unlinked and handed the mutex by a starvation-mode unlock: it is the owner.
    Granted,
}

/// One queued `lock()` future.
#[derive(Debug)]
pub(crate) struct Waiter {
    waker: Option<Waker>,
    status: Status,
    since: WaitStart,
}

#[derive(Debug)]
struct Queue {
    list: WaitList<Waiter>,
    /// Starvation-mode hand-offs so far (diagnostics and tests).
    handoffs: u64,
}

/// The lock word and waiter queue of a `Mutex<T>` (see the module doc).
#[derive(Debug)]
pub(crate) struct RawMutex {
    state: AtomicUsize,
    queue: QueueLock<Queue>,
}

impl RawMutex {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        RawMutex {
            state: AtomicUsize::new(0),
            queue: QueueLock::new(Queue { list: WaitList::new(), handoffs: 0 }),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> Self {
        RawMutex {
            state: AtomicUsize::new(0),
            queue: QueueLock::new(Queue { list: WaitList::new(), handoffs: 0 }),
        }
    }

    /// The fast path and `try_lock`: sets `LOCKED` if neither `LOCKED` nor `STARVING` is set
    /// (Go's `TryLock`). Barging past queued waiters is allowed in normal mode.
    pub(crate) fn try_lock(&self) -> bool {
        let mut s = self.state.load(Relaxed);
        while s & (LOCKED | STARVING) == 0 {
            match self.state.compare_exchange_weak(s, s | LOCKED, AcqRel, Relaxed) {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
        false
    }

    /// Polls a `lock()` future whose queue slot is `key` (`None`: not queued yet). `Ready`
    /// means the caller owns the mutex and `key` is `None` again.
    pub(crate) fn poll_lock(&self, key: &mut Option<usize>, cx: &Context<'_>) -> Poll<()> {
        let Some(k) = *key else {
            if self.try_lock() {
                return Poll::Ready(());
            }
            return self.lock_slow(key, cx);
        };
        let mut q = self.queue.lock();
        let w = q.list.get_mut(k);
        match w.status {
            Status::Granted => {
                // Step 5: a starvation-mode unlock made us the owner.
                q.list.free(k);
                *key = None;
                Poll::Ready(())
            }
            Status::Waiting => {
                update_waker(&mut w.waker, cx);
                Poll::Pending
            }
            Status::Woken => {
                // Step 3. STARVING is clear here (only a Woken head sets it, and it is us).
                let mut s = self.state.load(Relaxed);
                while s & LOCKED == 0 {
                    debug_assert_eq!(s & STARVING, 0, "I2: unlocked yet starving");
                    match self.state.compare_exchange_weak(s, s | LOCKED, AcqRel, Relaxed) {
                        Ok(_) => {
                            q.list.free(k);
                            *key = None;
                            if q.list.is_empty() {
                                self.state.fetch_and(!WAITERS, AcqRel);
                            }
                            return Poll::Ready(());
                        }
                        Err(now) => s = now,
                    }
                }
                // A barger won. We stay at the head; past the threshold, starve the bargers.
                w.status = Status::Waiting;
                update_waker(&mut w.waker, cx);
                if w.since.starved() {
                    self.state.fetch_or(STARVING, AcqRel);
                }
                Poll::Pending
            }
        }
    }

    /// Step 1: take the mutex, or queue at the tail with `WAITERS` set atomically with seeing
    /// it locked.
    fn lock_slow(&self, key: &mut Option<usize>, cx: &Context<'_>) -> Poll<()> {
        let mut q = self.queue.lock();
        let mut s = self.state.load(Relaxed);
        loop {
            let (new, acquired) =
                if s & (LOCKED | STARVING) == 0 { (s | LOCKED, true) } else { (s | WAITERS, false) };
            match self.state.compare_exchange_weak(s, new, AcqRel, Relaxed) {
                Ok(_) if acquired => return Poll::Ready(()),
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        let since = WaitStart::now();
        *key = Some(q.list.push_back(Waiter {
            waker: Some(cx.waker().clone()),
            status: Status::Waiting,
            since,
        }));
        Poll::Pending
    }

    /// Cancellation of a pending `lock()` future that holds slot `key` (see the module doc).
    pub(crate) fn cancel_lock(&self, key: usize) {
        let mut q = self.queue.lock();
        let w = q.list.free(key);
        let empty = q.list.is_empty();
        if empty {
            // I1, I2. If we were Granted, LOCKED stays ours until the unlock below.
            self.state.fetch_and(!(WAITERS | STARVING), AcqRel);
        }
        match w.status {
            Status::Waiting => {}
            Status::Woken => {
                // Pass the wake-up on while the mutex is still unlocked (I3).
                if !empty && self.state.load(Acquire) & LOCKED == 0 {
                    let waker = Self::wake_head(&mut q);
                    drop(q);
                    waker.wake();
                }
            }
            Status::Granted => {
                // We own the mutex: release it as a guard would.
                drop(q);
                self.unlock();
            }
        }
    }

    /// Marks the `Waiting` head `Woken` and returns its waker (I3). Must hold `queue`; the
    /// queue is non-empty and the head is `Waiting` (it holds a waker).
    fn wake_head(q: &mut Queue) -> Waker {
        let head = q.list.front().expect("wake_head: empty queue");
        let w = q.list.get_mut(head);
        debug_assert_eq!(w.status, Status::Waiting);
        w.status = Status::Woken;
        w.waker.take().expect("a Waiting waiter holds a waker")
    }

    /// Releases the mutex. Contract: the caller owns it (a guard, or a granted slot).
    pub(crate) fn unlock(&self) {
        if self.state.compare_exchange(LOCKED, 0, AcqRel, Relaxed).is_ok() {
            return;
        }
        self.unlock_slow();
    }

    /// Steps 2 and 4.
    fn unlock_slow(&self) {
        let mut q = self.queue.lock();
        let s = self.state.load(Acquire);
        assert!(s & LOCKED != 0, "gmprt::sync::Mutex: unlock of an unlocked mutex");
        let waker = if s & STARVING != 0 {
            // Step 4: hand off to the head; LOCKED stays set for it.
            let head = q.list.front().expect("I2: starving without waiters");
            q.list.unlink(head);
            let empty = q.list.is_empty();
            let w = q.list.get_mut(head);
            w.status = Status::Granted;
            let waker = w.waker.take();
            if empty {
                self.state.fetch_and(!(WAITERS | STARVING), AcqRel);
            } else if !w.since.starved() {
                self.state.fetch_and(!STARVING, AcqRel);
            }
            q.handoffs += 1;
            waker
        } else {
            // Step 2: unlock, and wake the head unless it already is (I3).
            self.state.fetch_and(!LOCKED, AcqRel);
            match q.list.front() {
                Some(h) if q.list.get_mut(h).status == Status::Waiting => Some(Self::wake_head(&mut q)),
                _ => None,
            }
        };
        drop(q);
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Is the mutex in starvation mode now?
    pub(crate) fn is_starving(&self) -> bool {
        self.state.load(Acquire) & STARVING != 0
    }

    /// Is the mutex owned now?
    pub(crate) fn is_locked(&self) -> bool {
        self.state.load(Acquire) & LOCKED != 0
    }

    /// Starvation-mode hand-offs so far.
    pub(crate) fn handoffs(&self) -> u64 {
        self.queue.lock().handoffs
    }

    /// `lock()` futures queued now.
    pub(crate) fn waiters(&self) -> usize {
        self.queue.lock().list.len()
    }
}
