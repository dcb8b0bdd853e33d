//! The channel itself, Go's `hchan`: one lock, a ring buffer, and the queues of waiting
//! receivers and senders. Every operation here runs with the lock held; the protocol they
//! implement (hand-off, reservations, claims of `select` waiters) is described in the module
//! doc of `chan` — see "The protocol".

use super::error::{TryRecvError, TrySendError};
use super::select::HeldLocks;
use super::token::{Claim, SelToken};
use super::waitq::{Slots, Status, WaitQueue, Wakes, NIL};
use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::{Mutex, MutexGuard};
use std::collections::VecDeque;
use std::sync::Arc;
use std::task::Waker;

/// Which of the two wait queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    /// `recvq`: receivers waiting for a value.
    Recv,
    /// `sendq`: senders waiting, each with its value.
    Send,
}

/// The shared channel. Its `state` is guarded by `lock`, which is kept apart from the data
/// (as Go's `hchan.lock`) so that a `select` can hold the locks of channels of different
/// element types at once (see `select.rs`, "Phase B").
pub(crate) struct Chan<T> {
    /// Orders this channel's lock among others, for a `select` that takes several.
    id: u64,
    lock: Mutex<()>,
    state: UnsafeCell<State<T>>,
    /// Live `Sender`s; the last one to go closes the channel.
    pub(crate) senders: AtomicUsize,
    /// Live `Receiver`s; the last one to go closes the channel and drops what is buffered.
    pub(crate) receivers: AtomicUsize,
    cap: usize,
}

// SAFETY: `state` is only reached through `with_state`, under `lock` (see there), so at most
// one thread touches it at a time, exactly as with a `Mutex<State<T>>`; values of `T` are moved
// between threads through it, never shared, hence `T: Send` is all that is needed — the bounds
// of `Mutex<T>: Send + Sync`.
unsafe impl<T: Send> Send for Chan<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Chan<T> {}

/// What the lock guards.
pub(crate) struct State<T> {
    /// Values in the channel, oldest first: the first `reserved` of them (by count, not by
    /// position) are promised to receivers that were woken for them.
    buf: VecDeque<T>,
    /// Receivers completed by a sender (status `Done`) that have not taken their value yet.
    reserved: usize,
    closed: bool,
    cap: usize,
    recvq: WaitQueue,
    sendq: WaitQueue,
    slots: Slots<T>,
}

impl<T> Chan<T> {
    pub(crate) fn new(cap: usize) -> Self {
        let state = State {
            buf: VecDeque::with_capacity(cap.min(4096)),
            reserved: 0,
            closed: false,
            cap,
            recvq: WaitQueue::new(),
            sendq: WaitQueue::new(),
            slots: Slots::new(),
        };
        // A unique number, not synchronisation: Relaxed, and a std atomic (a loom one cannot
        // be a `static`; loom needs nothing from it, only that the order it gives is the same
        // in every execution, which addresses are not).
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Chan {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            lock: Mutex::new(()),
            state: UnsafeCell::new(state),
            senders: AtomicUsize::new(1),
            receivers: AtomicUsize::new(1),
            cap,
        }
    }

    /// The channel's id (`chan #N` in a task dump).
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    pub(crate) fn capacity(&self) -> usize {
        self.cap
    }

    /// The lock and its place in the lock order (Go's `lockorder`, by creation instead of by
    /// address), for a `select` that must hold several channels' locks at once.
    pub(crate) fn raw_lock(&self) -> (u64, &Mutex<()>) {
        (self.id, &self.lock)
    }

    /// Runs `f` on the state with the lock held, then — with the lock released — wakes and
    /// drops the wakers `f` collected.
    pub(crate) fn with_lock<R>(&self, f: impl FnOnce(&mut State<T>, &mut Wakes) -> R) -> R {
        let mut wakes = Wakes::new();
        let r = {
            let guard = self.lock.lock();
            let r = self.with_state(&guard, |st| f(st, &mut wakes));
            drop(guard);
            r
        };
        wakes.fire();
        r
    }

    /// Runs `f` on the state while a `select` holds this channel's lock among `held`.
    ///
    /// # Panics
    /// If `held` does not hold this channel's lock (a bug in `select`).
    pub(crate) fn with_held<R>(&self, held: &HeldLocks<'_, '_>, f: impl FnOnce(&mut State<T>) -> R) -> R {
        let guard = held.guard_of(self.id);
        self.with_state(guard, f)
    }

    /// The one place the state is reached. Taking a guard of `self.lock` proves the lock is
    /// held by this thread for the whole call.
    fn with_state<R>(&self, _guard: &MutexGuard<'_, ()>, f: impl FnOnce(&mut State<T>) -> R) -> R {
        self.state.with_mut(|p| {
            // SAFETY: the caller holds `self.lock` (a guard of it is borrowed for this call, and
            // `HeldLocks::guard_of` finds the guard by this channel's unique id), so no other thread can
            // be in here; and no code path calls `with_state` on the same channel from inside
            // `f`, so this is the only reference.
            f(unsafe { &mut *p })
        })
    }
}

impl<T> State<T> {
    /// Values a receiver could take now: what is buffered minus what is promised (Go's
    /// `qcount`). Normally at most `cap`; one more per receiver that gave back a reservation
    /// with nobody waiting to pass it on to (see "Cancellation" in the module doc).
    pub(crate) fn len(&self) -> usize {
        self.buf.len() - self.reserved
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    fn queue(&mut self, dir: Dir) -> &mut WaitQueue {
        match dir {
            Dir::Recv => &mut self.recvq,
            Dir::Send => &mut self.sendq,
        }
    }

    /// Go's `waitq.dequeue`: unlinks and returns the first waiter of `dir` that this caller
    /// may complete. A plain waiter always qualifies; a `select` waiter only if its token is
    /// won here. A `select` that is mid-poll is skipped and left queued (it re-checks this
    /// channel under its lock before it waits again); one that another arm already won is
    /// unlinked as `Unlinked`. The returned slot is still `Queued`: the caller completes it.
    fn dequeue(&mut self, dir: Dir) -> Option<u32> {
        let mut i = self.queue(dir).head();
        while i != NIL {
            let next = self.slots.next(i);
            let claim = match &self.slots.get(i).select {
                None => Claim::Won,
                Some((token, arm)) => token.try_claim(*arm),
            };
            match claim {
                Claim::Won => {
                    self.unlink(dir, i);
                    return Some(i);
                }
                Claim::Busy => {}
                Claim::Gone => {
                    self.unlink(dir, i);
                    self.slots.get_mut(i).status = Status::Unlinked;
                }
            }
            i = next;
        }
        None
    }

    fn unlink(&mut self, dir: Dir, i: u32) {
        let q = match dir {
            Dir::Recv => &mut self.recvq,
            Dir::Send => &mut self.sendq,
        };
        self.slots.unlink(q, i);
    }

    /// Marks dequeued waiter `i` `Done` and queues its wake.
    fn complete(&mut self, i: u32, wakes: &mut Wakes) {
        let s = self.slots.get_mut(i);
        s.status = Status::Done;
        wakes.wake(s.waker.take());
    }

    /// Go's `chansend` without blocking: to the first waiting receiver (as a reservation), else
    /// into the buffer, else `Full`.
    pub(crate) fn send_now(&mut self, v: T, wakes: &mut Wakes) -> Result<(), TrySendError<T>> {
        if self.closed {
            return Err(TrySendError::Closed(v));
        }
        if let Some(i) = self.dequeue(Dir::Recv) {
            self.buf.push_back(v);
            self.reserved += 1;
            self.complete(i, wakes);
            return Ok(());
        }
        if self.len() < self.cap {
            self.buf.push_back(v);
            return Ok(());
        }
        Err(TrySendError::Full(v))
    }

    /// Go's `chanrecv` without blocking: the oldest free value (refilling the buffer from the
    /// first waiting sender), else the first waiting sender's value, else `Closed` or `Empty`.
    /// Values always leave in the order they entered `buf` (a sender's value "enters" when a
    /// receiver takes it from its slot).
    ///
    /// `Closed` once the channel is closed and nothing is left *for this receiver*
    /// (`nonblocking`: `try_recv`, a `select!` with a `default` arm — Go's spec: a receive on a
    /// closed channel can always proceed), or only once it is drained (a receiver that will
    /// wait: a value promised to another woken receiver may still be given back, and passed
    /// on to a waiting one; see `is_drained`).
    pub(crate) fn recv_now(&mut self, wakes: &mut Wakes, nonblocking: bool) -> Result<T, TryRecvError> {
        if self.len() > 0 {
            let v = self.buf.pop_front().expect("len() > 0 means a value is buffered");
            if self.len() < self.cap {
                if let Some(i) = self.dequeue(Dir::Send) {
                    let sv = self.slots.get_mut(i).value.take().expect("a queued sender holds its value");
                    self.buf.push_back(sv);
                    self.complete(i, wakes);
                }
            }
            return Ok(v);
        }
        if let Some(i) = self.dequeue(Dir::Send) {
            let sv = self.slots.get_mut(i).value.take().expect("a queued sender holds its value");
            self.complete(i, wakes);
            // Values promised to woken receivers are older than the sender's: take the oldest
            // and let the sender's value queue behind them, so values still leave in order.
            return Ok(match self.buf.pop_front() {
                Some(oldest) => {
                    self.buf.push_back(sv);
                    oldest
                }
                None => sv,
            });
        }
        let closed = if nonblocking { self.closed } else { self.is_drained() };
        Err(if closed { TryRecvError::Closed } else { TryRecvError::Empty })
    }

    /// Closed, and no value can appear any more. While values are promised to woken
    /// receivers, a promise may still be given back (its future dropped): until they are all
    /// taken, a closed channel is not drained, and receivers wait (see `take_reserved`).
    fn is_drained(&self) -> bool {
        self.closed && self.reserved == 0
    }

    /// Queues a waiter on `dir`; returns its slot. Call only after `send_now`/`recv_now` said
    /// `Full`/`Empty` under the same lock.
    pub(crate) fn enqueue(
        &mut self,
        dir: Dir,
        waker: Waker,
        value: Option<T>,
        select: Option<(Arc<SelToken>, usize)>,
    ) -> u32 {
        debug_assert!(!self.closed || (dir == Dir::Recv && !self.is_drained()));
        let q = match dir {
            Dir::Recv => &mut self.recvq,
            Dir::Send => &mut self.sendq,
        };
        self.slots.push_back(q, waker, value, select)
    }

    /// The status of waiter `i`.
    pub(crate) fn status(&self, i: u32) -> Status {
        self.slots.get(i).status
    }

    /// Replaces waiter `i`'s waker if `w` would wake a different task (a future may move).
    pub(crate) fn set_waker(&mut self, i: u32, w: &Waker, wakes: &mut Wakes) {
        let slot = self.slots.get_mut(i);
        if !slot.waker.as_ref().is_some_and(|old| old.will_wake(w)) {
            wakes.discard(slot.waker.replace(w.clone()));
        }
    }

    /// The owner of waiter `i` (on `dir`) takes its slot back: unlinks it if still queued and
    /// frees it. Returns the status it had and the value it still held (a sender's, unless a
    /// receiver took it), for the caller to use or drop outside the lock.
    pub(crate) fn remove(&mut self, dir: Dir, i: u32, wakes: &mut Wakes) -> (Status, Option<T>) {
        let status = self.slots.get(i).status;
        if status == Status::Queued {
            self.unlink(dir, i);
        }
        let (value, waker) = self.slots.release(i);
        wakes.discard(waker);
        (status, value)
    }

    /// A receiver that was completed (`Done`) takes the value it was promised: the oldest one.
    /// If that was the last promise on a closed channel, receivers that were waiting for it
    /// are released to find the channel drained.
    pub(crate) fn take_reserved(&mut self, wakes: &mut Wakes) -> T {
        debug_assert!(self.reserved > 0);
        self.reserved -= 1;
        let v = self.buf.pop_front().expect("a reservation always has its value in the buffer");
        if self.is_drained() {
            self.release_queue(Dir::Recv, wakes);
        }
        v
    }

    /// A receiver that was completed (`Done`) but will not take its value (its future was
    /// dropped) passes the reservation on to the next waiting receiver; with none waiting, the
    /// value simply stays buffered for the next `recv`. Nothing is lost either way.
    pub(crate) fn cancel_reservation(&mut self, wakes: &mut Wakes) {
        debug_assert!(self.reserved > 0);
        self.reserved -= 1;
        if let Some(i) = self.dequeue(Dir::Recv) {
            self.reserved += 1;
            self.complete(i, wakes);
        }
    }

    /// Go's `closechan`: marks the channel closed and releases every waiter — senders to take
    /// their values back, receivers to find the channel drained (see `is_drained` for when).
    /// `select` waiters are claimed, as Go's `dequeue` does in `closechan`, so the select
    /// reports this arm. Returns false if it was already closed.
    pub(crate) fn close(&mut self, wakes: &mut Wakes) -> bool {
        if self.closed {
            return false;
        }
        self.closed = true;
        self.release_queue(Dir::Send, wakes);
        // Receivers are released once nothing can appear any more: now, or when the last
        // value promised to a woken receiver is taken (`take_reserved`). Until then a promise
        // given back goes to them (`cancel_reservation`).
        if self.is_drained() {
            self.release_queue(Dir::Recv, wakes);
        }
        true
    }

    /// Unlinks every waiter of `dir` as `Unlinked` and wakes it, to retry on a closed channel.
    fn release_queue(&mut self, dir: Dir, wakes: &mut Wakes) {
        loop {
            let i = self.queue(dir).head();
            if i == NIL {
                return;
            }
            self.unlink(dir, i);
            let slot = self.slots.get_mut(i);
            slot.status = Status::Unlinked;
            let wake = match &slot.select {
                None => true,
                // Won: the select reports this arm. Busy: it is mid-poll and will find the
                // channel closed when it re-checks under the lock. Gone: it is done.
                Some((token, arm)) => token.try_claim(*arm) == Claim::Won,
            };
            if wake {
                wakes.wake(slot.waker.take());
            }
        }
    }

    /// Empties the buffer (when the last receiver is gone); the caller drops the values
    /// outside the lock.
    pub(crate) fn drain(&mut self) -> VecDeque<T> {
        debug_assert_eq!(self.reserved, 0, "no receiver left, so no reservation left");
        self.reserved = 0;
        std::mem::take(&mut self.buf)
    }

    /// Waiter slots (in use, allocated) and whether both queues are empty.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn slab(&self) -> (usize, usize, bool) {
        (self.slots.live(), self.slots.allocated(), self.recvq.is_empty() && self.sendq.is_empty())
    }
}
