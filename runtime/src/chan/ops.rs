//! The futures of `send(v).await` and `recv().await`, and what dropping them does.
//!
//! Both complete at once when they can (one lock, no allocation); otherwise they queue a
//! waiter and return `Pending`. A later poll reads the waiter's status under the lock:
//! `Queued` — still waiting (the waker is refreshed); `Done` — a counterpart completed it;
//! `Unlinked` — the channel was closed, so the operation is retried and finds it closed.

use super::error::{SendError, TryRecvError, TrySendError};
use super::hchan::{Chan, Dir};
use super::waitq::Status;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Future returned by [`Sender::send`](super::Sender::send).
///
/// **Cancellation.** Dropping it before it completes withdraws the send: the value is dropped
/// with the future and no receiver gets it — *unless* a receiver already took it (the future
/// was completed but not yet polled), in which case the send happened and the receiver has the
/// value. Either way the channel stays consistent and the value is in exactly one place.
#[must_use = "a send does nothing unless awaited"]
pub struct SendFuture<'a, T> {
    chan: &'a Chan<T>,
    /// The value, while it is not in a waiter's slot.
    value: Option<T>,
    slot: Option<u32>,
}

impl<'a, T> SendFuture<'a, T> {
    pub(crate) fn new(chan: &'a Chan<T>, value: T) -> Self {
        SendFuture { chan, value: Some(value), slot: None }
    }
}

// Never pin-projected: the value is moved in and out by `&mut`, never pinned.
impl<T> Unpin for SendFuture<'_, T> {}

impl<T> Future for SendFuture<'_, T> {
    type Output = Result<(), SendError<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        // A fresh operation spends coop budget (a waiting one has yielded already).
        if this.slot.is_none() && crate::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        let chan = this.chan;
        let r = chan.with_lock(|st, wakes| {
            if let Some(i) = this.slot {
                match st.status(i) {
                    Status::Queued => {
                        st.set_waker(i, cx.waker(), wakes);
                        return Poll::Pending;
                    }
                    Status::Done => {
                        this.slot = None;
                        st.remove(Dir::Send, i, wakes);
                        return Poll::Ready(Ok(()));
                    }
                    Status::Unlinked => {
                        // Closed: take the value back and let `send_now` say so.
                        this.slot = None;
                        this.value = st.remove(Dir::Send, i, wakes).1;
                    }
                }
            }
            let v = this.value.take().expect("SendFuture polled after it completed");
            match st.send_now(v, wakes) {
                Ok(()) => Poll::Ready(Ok(())),
                Err(TrySendError::Closed(v)) => Poll::Ready(Err(SendError(v))),
                Err(TrySendError::Full(v)) => {
                    this.slot = Some(st.enqueue(Dir::Send, cx.waker().clone(), Some(v), None));
                    Poll::Pending
                }
            }
        });
        if r.is_pending() {
            // Parked on this channel: what a dump and the deadlock check read.
            crate::task::wait::set(crate::task::wait::CHAN_SEND, chan.id(), 0);
        }
        r
    }
}

impl<T> Drop for SendFuture<'_, T> {
    fn drop(&mut self) {
        if let Some(i) = self.slot.take() {
            // Whatever the slot still holds is dropped here, outside the lock.
            let _value = self.chan.with_lock(|st, wakes| st.remove(Dir::Send, i, wakes).1);
        }
    }
}

impl<T> fmt::Debug for SendFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendFuture").field("waiting", &self.slot.is_some()).finish()
    }
}

/// Future returned by [`Receiver::recv`](super::Receiver::recv).
///
/// **Cancellation.** Dropping it loses no value. A waiting receiver is only ever *promised* a
/// value (it stays in the channel's buffer until the receiver takes it); if the future is
/// dropped after a sender promised it one, the promise passes to the next waiting receiver,
/// or the value stays buffered for the next `recv`.
#[must_use = "a recv does nothing unless awaited"]
pub struct RecvFuture<'a, T> {
    chan: &'a Chan<T>,
    slot: Option<u32>,
}

impl<'a, T> RecvFuture<'a, T> {
    pub(crate) fn new(chan: &'a Chan<T>) -> Self {
        RecvFuture { chan, slot: None }
    }
}

impl<T> Future for RecvFuture<'_, T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        // A fresh operation spends coop budget (a waiting one has yielded already).
        if this.slot.is_none() && crate::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        let chan = this.chan;
        let r = chan.with_lock(|st, wakes| {
            if let Some(i) = this.slot {
                match st.status(i) {
                    Status::Queued => {
                        st.set_waker(i, cx.waker(), wakes);
                        return Poll::Pending;
                    }
                    Status::Done => {
                        this.slot = None;
                        st.remove(Dir::Recv, i, wakes);
                        return Poll::Ready(Some(st.take_reserved(wakes)));
                    }
                    Status::Unlinked => {
                        // Closed and drained.
                        this.slot = None;
                        st.remove(Dir::Recv, i, wakes);
                    }
                }
            }
            match st.recv_now(wakes, false) {
                Ok(v) => Poll::Ready(Some(v)),
                Err(TryRecvError::Closed) => Poll::Ready(None),
                Err(TryRecvError::Empty) => {
                    this.slot = Some(st.enqueue(Dir::Recv, cx.waker().clone(), None, None));
                    Poll::Pending
                }
            }
        });
        if r.is_pending() {
            // Parked on this channel: what a dump and the deadlock check read.
            crate::task::wait::set(crate::task::wait::CHAN_RECV, chan.id(), 0);
        }
        r
    }
}

impl<T> Drop for RecvFuture<'_, T> {
    fn drop(&mut self) {
        if let Some(i) = self.slot.take() {
            self.chan.with_lock(|st, wakes| {
                if st.remove(Dir::Recv, i, wakes).0 == Status::Done {
                    st.cancel_reservation(wakes);
                }
            });
        }
    }
}

impl<T> fmt::Debug for RecvFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvFuture").field("waiting", &self.slot.is_some()).finish()
    }
}
