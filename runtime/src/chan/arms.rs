//! The arms of a `select!`: `recv`, `send`, and any future. Each keeps its operation's state
//! (a send arm its value, a waiting arm its slot) and, once chosen, its result, which the macro
//! takes after the select completes. `select.rs` drives them through [`Op`]s.
//!
//! Each arm also takes its waiter back when dropped, so even a select future that is leaked
//! leaves no waiter behind that could be completed without anyone to report it.

use super::error::{SendError, TryRecvError, TrySendError};
use super::hchan::{Chan, Dir};
use super::select::{Op, OpKind};
use super::waitq::Status;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A `recv(rx)` arm. Its result is what `recv().await` would give: `Some(value)`, or `None`
/// once the channel is closed and drained.
#[doc(hidden)]
pub struct RecvArm<'r, T> {
    /// `None`: a nil channel's arm (Go's idiom for switching an arm off): never ready, never
    /// waits on anything.
    chan: Option<&'r Chan<T>>,
    slot: Option<u32>,
    out: Option<Option<T>>,
}

impl<'r, T> RecvArm<'r, T> {
    pub(crate) fn new(chan: &'r Chan<T>) -> Self {
        RecvArm { chan: Some(chan), slot: None, out: None }
    }

    /// The arm of a nil channel: never chosen.
    pub(crate) fn nil() -> Self {
        RecvArm { chan: None, slot: None, out: None }
    }

    /// Runs one step of the select protocol on this arm (called by `select!`).
    #[doc(hidden)]
    pub fn handle<'x>(&mut self, op: &mut Op<'_, 'x>) -> bool
    where
        'r: 'x,
    {
        // A nil arm reports no lock, so the select neither locks nor registers it; its looks
        // find it not ready.
        let Some(chan) = self.chan else { return false };
        // A select with a `default` arm never waits: a closed channel answers now.
        let nonblocking = op.nonblocking;
        match &mut op.kind {
            OpKind::Lock(out) => {
                **out = Some(chan.raw_lock());
                false
            }
            OpKind::TryNow(_) => chan.with_lock(|st, wakes| self.finish(st.recv_now(wakes, nonblocking))),
            OpKind::TryLocked(held, wakes) => {
                chan.with_held(held, |st| self.finish(st.recv_now(wakes, nonblocking)))
            }
            OpKind::Register { held, token, arm, waker } => {
                debug_assert!(self.slot.is_none());
                let i = chan.with_held(held, |st| {
                    st.enqueue(Dir::Recv, (*waker).clone(), None, Some(((*token).clone(), *arm)))
                });
                self.slot = Some(i);
                false
            }
            OpKind::Release { keep } => {
                self.release(*keep);
                false
            }
        }
    }

    fn finish(&mut self, r: Result<T, TryRecvError>) -> bool {
        match r {
            Ok(v) => self.out = Some(Some(v)),
            Err(TryRecvError::Closed) => self.out = Some(None),
            Err(TryRecvError::Empty) => return false,
        }
        true
    }

    fn release(&mut self, keep: bool) {
        let Some(i) = self.slot.take() else { return };
        let chan = self.chan.expect("only a channel arm has a waiter slot");
        chan.with_lock(|st, wakes| {
            let (status, _) = st.remove(Dir::Recv, i, wakes);
            match (status, keep) {
                // A sender picked this arm: take the value promised to it.
                (Status::Done, true) => self.out = Some(Some(st.take_reserved(wakes))),
                // Picked, but the select is being dropped: pass the promise on.
                (Status::Done, false) => st.cancel_reservation(wakes),
                // Picked by `close` (or by the last promise being taken after it): the channel
                // is drained, and stays so.
                (Status::Unlinked, true) => {
                    let r = st.recv_now(wakes, false);
                    debug_assert!(matches!(r, Err(TryRecvError::Closed)), "released only when drained");
                    self.out = Some(r.ok());
                }
                (Status::Unlinked, false) | (Status::Queued, false) => {}
                (Status::Queued, true) => unreachable!("a claimed waiter is unlinked"),
            }
        });
    }

    /// The chosen arm's result (called by `select!`).
    #[doc(hidden)]
    pub fn take(mut self) -> Option<T> {
        self.out.take().expect("select!: the chosen recv arm has a result")
    }
}

impl<T> Drop for RecvArm<'_, T> {
    fn drop(&mut self) {
        self.release(false);
    }
}

/// A `send(tx, value)` arm. Its result is what `send(value).await` would give: `Ok(())`, or
/// `Err(SendError(value))` if the channel is closed.
#[doc(hidden)]
pub struct SendArm<'s, T> {
    /// `None`: a nil channel's arm (never ready; its value is dropped with the select).
    chan: Option<&'s Chan<T>>,
    /// The value, while it is not in a waiter's slot.
    value: Option<T>,
    slot: Option<u32>,
    out: Option<Result<(), SendError<T>>>,
}

impl<'s, T> SendArm<'s, T> {
    pub(crate) fn new(chan: &'s Chan<T>, value: T) -> Self {
        SendArm { chan: Some(chan), value: Some(value), slot: None, out: None }
    }

    /// The arm of a nil channel: never chosen (the value was evaluated, as in Go, and is
    /// dropped with the select).
    pub(crate) fn nil(value: T) -> Self {
        SendArm { chan: None, value: Some(value), slot: None, out: None }
    }

    /// Runs one step of the select protocol on this arm (called by `select!`).
    #[doc(hidden)]
    pub fn handle<'x>(&mut self, op: &mut Op<'_, 'x>) -> bool
    where
        's: 'x,
    {
        let Some(chan) = self.chan else { return false }; // nil: see `RecvArm::handle`
        match &mut op.kind {
            OpKind::Lock(out) => {
                **out = Some(chan.raw_lock());
                false
            }
            OpKind::TryNow(_) => chan.with_lock(|st, wakes| {
                let v = self.value.take().expect("an unregistered send arm holds its value");
                self.finish(st.send_now(v, wakes))
            }),
            OpKind::TryLocked(held, wakes) => chan.with_held(held, |st| {
                let v = self.value.take().expect("an unregistered send arm holds its value");
                self.finish(st.send_now(v, wakes))
            }),
            OpKind::Register { held, token, arm, waker } => {
                debug_assert!(self.slot.is_none());
                let v = self.value.take();
                let i = chan.with_held(held, |st| {
                    st.enqueue(Dir::Send, (*waker).clone(), v, Some(((*token).clone(), *arm)))
                });
                self.slot = Some(i);
                false
            }
            OpKind::Release { keep } => {
                self.release(*keep);
                false
            }
        }
    }

    fn finish(&mut self, r: Result<(), TrySendError<T>>) -> bool {
        match r {
            Ok(()) => self.out = Some(Ok(())),
            Err(TrySendError::Closed(v)) => self.out = Some(Err(SendError(v))),
            Err(TrySendError::Full(v)) => {
                self.value = Some(v);
                return false;
            }
        }
        true
    }

    fn release(&mut self, keep: bool) {
        let Some(i) = self.slot.take() else { return };
        let chan = self.chan.expect("only a channel arm has a waiter slot");
        let (status, v) = chan.with_lock(|st, wakes| st.remove(Dir::Send, i, wakes));
        // The value (if a receiver did not take it) comes back out of the lock: it is either
        // the result, or kept for the next try, or dropped with the arm — never under the lock.
        match (status, keep) {
            (Status::Done, true) => self.out = Some(Ok(())),
            // Delivered before the select was dropped: the send happened.
            (Status::Done, false) => {}
            (Status::Unlinked, true) => {
                self.out = Some(Err(SendError(v.expect("an unlinked sender still holds its value"))))
            }
            (Status::Unlinked, false) | (Status::Queued, false) => self.value = v,
            (Status::Queued, true) => unreachable!("a claimed waiter is unlinked"),
        }
    }

    /// The chosen arm's result (called by `select!`).
    #[doc(hidden)]
    pub fn take(mut self) -> Result<(), SendError<T>> {
        self.out.take().expect("select!: the chosen send arm has a result")
    }
}

impl<T> Drop for SendArm<'_, T> {
    fn drop(&mut self) {
        self.release(false);
    }
}

/// A `pattern = future` arm: chosen when the future completes (e.g. a
/// `gmprt_runtime::time::sleep` as a timeout). It is polled only while the select polls, with
/// no channel lock held.
#[doc(hidden)]
pub struct FutArm<'p, F: Future> {
    fut: Pin<&'p mut F>,
    out: Option<F::Output>,
}

impl<'p, F: Future> FutArm<'p, F> {
    /// Wraps a pinned future (called by `select!`).
    #[doc(hidden)]
    pub fn new(fut: Pin<&'p mut F>) -> Self {
        FutArm { fut, out: None }
    }

    /// Runs one step of the select protocol on this arm (called by `select!`).
    #[doc(hidden)]
    pub fn handle(&mut self, op: &mut Op<'_, '_>) -> bool {
        match &mut op.kind {
            OpKind::TryNow(waker) => match self.fut.as_mut().poll(&mut Context::from_waker(waker)) {
                Poll::Ready(v) => {
                    self.out = Some(v);
                    true
                }
                Poll::Pending => false,
            },
            // No lock, no waiter: the future registers its own waker when polled.
            OpKind::Lock(_) | OpKind::TryLocked(..) | OpKind::Register { .. } | OpKind::Release { .. } => {
                false
            }
        }
    }

    /// The chosen arm's result (called by `select!`).
    #[doc(hidden)]
    pub fn take(mut self) -> F::Output {
        self.out.take().expect("select!: the chosen future arm has a result")
    }
}
