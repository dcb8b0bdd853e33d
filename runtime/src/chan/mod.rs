//! Go's channels: [`chan::<T>(cap)`](chan), `send`/`recv`/`try_send`/`try_recv`/`close`, and
//! [`select!`](crate::select).
//!
//! ```
//! use gmprt_runtime::chan::chan;
//!
//! let rt = gmprt_runtime::Runtime::builder().procs(2).build().unwrap();
//! let sum = rt.block_on(async {
//!     let (tx, rx) = chan::<u64>(0); // unbuffered: each send waits for its receiver
//!     for w in 0..4u64 {
//!         let tx = tx.clone();
//!         gmprt_runtime::spawn(async move {
//!             for i in 0..100 {
//!                 tx.send(w * 100 + i).await.unwrap();
//!             }
//!         });
//!     }
//!     drop(tx); // the workers hold the last senders: the channel closes when they finish
//!     let mut sum = 0;
//!     while let Some(v) = rx.recv().await {
//!         sum += v;
//!     }
//!     sum
//! });
//! assert_eq!(sum, (0..400).sum::<u64>());
//! ```
//!
//! # Semantics (Go's, plus Rust's ownership)
//!
//! * `chan(0)` is unbuffered: a `send` completes only when a receiver takes the value (or is
//!   promised it, see below). `chan(n)` buffers up to `n` values.
//! * [`Sender`] and [`Receiver`] are `Clone`: many senders, many receivers. Each value goes to
//!   exactly one receiver; values leave in the order they entered.
//! * `close` (on either end, any number of times) ends the channel: sends fail, and receivers
//!   get what is buffered, then `None`. Dropping every `Sender` closes it; dropping every
//!   `Receiver` closes it and drops what is buffered.
//! * **Nothing is lost.** A send that fails returns its value in the error — including a send
//!   that was blocked when the channel closed. A dropped `send` future drops its own value
//!   unless a receiver already has it. A dropped `recv` future never takes a value with it.
//!
//! Differences from Go: sending on a closed channel is an error, not a panic; closing twice is
//! a no-op; there is no nil channel (to disable a `select!` arm, leave it out).
//!
//! # The protocol
//!
//! A channel is Go's `hchan` (`hchan.rs`): one lock over a buffer (`buf`, a ring), a queue of
//! waiting receivers (`recvq`) and one of waiting senders, each sender holding its value in
//! its waiter slot (`waitq.rs`, Go's `sudog`). Operations complete on the fast path under the
//! lock; otherwise they queue a waiter and return `Pending`. A counterpart completes a waiter
//! by unlinking it, marking it `Done`, and waking it **after releasing the lock**. A receiver
//! woken by a sender running in a task goes to that task's P's `runnext`, as Go's `ready`.
//!
//! The one deviation from Go's `hchan`: **a sender never hands a value to a receiver directly.**
//! Go copies the value into the waiting receiver's stack slot; here the receiver is a future
//! that may be dropped before it runs again, and a value inside it would be lost (or have to
//! be put back at the wrong place in the order). Instead the sender appends the value to
//! `buf` and grants the receiver a *reservation*: `reserved += 1`, receiver `Done`. The woken
//! receiver takes the oldest value in `buf` and drops the count. So:
//!
//! * `len() = buf.len() - reserved` is what a *new* receiver may take; a new receiver never
//!   takes a promised value, so every `Done` receiver finds one;
//! * values leave in the order they entered, whoever takes them: receivers only ever take
//!   `buf`'s oldest value, and a receiver that takes a blocked sender's value while promised
//!   values are buffered takes the oldest of those instead and queues the sender's behind them;
//! * a `Done` receiver that is dropped gives its reservation to the next waiting receiver, or,
//!   with none, leaves the value buffered (so `len()` can then exceed `capacity()` by one per
//!   such cancellation: the value is kept rather than lost);
//! * so a *closed* channel is drained only once no promise is outstanding: until then a new
//!   receiver waits (a promise may come back), and is released when the last promise is taken.
//!   A *non-blocking* receive (`try_recv`, a `select!` with `default`) does not wait for
//!   promises made to others: closed, with nothing free for it, it answers `Closed` at once —
//!   Go's "a receive on a closed channel can always proceed" (issue 24; a value given back
//!   later is still delivered to the next receiver, never lost).
//!   `None` is final: no value is ever received after it.
//!
//! Senders are simpler: a blocked sender's value sits in its slot, in the channel. A receiver
//! takes it from there (unbuffered) or moves it to `buf`'s tail as it frees a place (Go's
//! `recv`), marking the sender `Done`. If the send future is dropped first, it takes its value
//! back out of the slot and drops it; if after, the send happened.
//!
//! **No lost wakeup.** Invariants, under the lock: a waiter that can be completed sits in
//! `recvq` only while `len() == 0` and no completable sender waits, and in `sendq` only while
//! `len() >= cap` and no completable receiver waits — because an operation queues itself only
//! after finding nothing to do under the same lock, and every event that could let a waiter
//! proceed (a send, a receive freeing buffer space, a reservation given back, a close, the last
//! promise on a closed channel taken) happens under that lock and, in the same critical section,
//! completes the first completable waiter (or releases all of them). A completed waiter's status is set before its waker is taken,
//! and its future reads the status under the lock, so a wake can only be early, never missed.
//!
//! **select.** A `select!` waits with one waiter per arm sharing a token; a counterpart must win
//! the token (CAS `WAITING → CLAIMED(arm)`, under the channel's lock) before completing such a
//! waiter, so exactly one arm takes effect; losers leave the slot alone. A select re-checking its
//! arms holds its token as `POLLING` (counterparts skip it) and then re-checks and re-queues
//! under the locks of all its channels at once, taken in a global order; whoever skipped it must
//! have queued itself before that, and is found. The details and the argument are in
//! `select.rs`. Arms do only "try" operations until chosen, so an arm that is not chosen never
//! takes or gives a value.
//!
//! Allocation: none per operation on the fast path. Blocking takes a slot from the channel's
//! slab, which grows to the largest number of operations ever blocked at once and is reused
//! (Go pools `sudog`s per P); a blocking `select` also reuses a per-thread token.

mod arms;
mod error;
mod hchan;
mod macros;
mod ops;
mod select;
mod token;
mod waitq;

pub use error::{SendError, TryRecvError, TrySendError};
pub use ops::{RecvFuture, SendFuture};

use crate::loom::sync::atomic::Ordering;
use hchan::Chan;
use std::fmt;
use std::sync::Arc;

/// What `select!` expands to. Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use super::arms::{FutArm, RecvArm, SendArm};
    pub use super::select::{select, Op, Select, DEFAULT, MAX_ARMS};
    use super::{Receiver, Sender};

    /// `recv(x)` on an `Option` of a receiver: `None` is Go's nil channel, an arm that never
    /// fires. (A plain `Receiver` uses its inherent `__recv_arm`.)
    pub trait NilRecv {
        /// The values received.
        type Item;
        /// The arm.
        fn __recv_arm(&self) -> RecvArm<'_, Self::Item>;
    }

    impl<T> NilRecv for Option<Receiver<T>> {
        type Item = T;
        fn __recv_arm(&self) -> RecvArm<'_, T> {
            self.as_ref().map_or_else(RecvArm::nil, |rx| rx.__recv_arm())
        }
    }

    impl<T> NilRecv for Option<&Receiver<T>> {
        type Item = T;
        fn __recv_arm(&self) -> RecvArm<'_, T> {
            self.map_or_else(RecvArm::nil, |rx| rx.__recv_arm())
        }
    }

    /// `send(x, v)` on an `Option` of a sender: `None` is Go's nil channel.
    pub trait NilSend {
        /// The values sent.
        type Item;
        /// The arm.
        fn __send_arm(&self, value: Self::Item) -> SendArm<'_, Self::Item>;
    }

    impl<T> NilSend for Option<Sender<T>> {
        type Item = T;
        fn __send_arm(&self, value: T) -> SendArm<'_, T> {
            match self {
                Some(tx) => tx.__send_arm(value),
                None => SendArm::nil(value),
            }
        }
    }

    impl<T> NilSend for Option<&Sender<T>> {
        type Item = T;
        fn __send_arm(&self, value: T) -> SendArm<'_, T> {
            match self {
                Some(tx) => tx.__send_arm(value),
                None => SendArm::nil(value),
            }
        }
    }
}

/// Makes a channel: Go's `make(chan T, cap)`. `cap == 0` gives an unbuffered channel (every
/// send meets a receiver); `cap > 0` buffers up to `cap` values.
///
/// ```
/// let (tx, rx) = gmprt_runtime::chan::chan::<&str>(2);
/// tx.try_send("a").unwrap();
/// tx.try_send("b").unwrap();
/// assert!(tx.try_send("c").unwrap_err().is_full());
/// assert_eq!((rx.len(), rx.capacity()), (2, 2));
/// assert_eq!(rx.try_recv(), Ok("a"));
/// ```
pub fn chan<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    let chan = Arc::new(Chan::new(cap));
    (Sender { chan: chan.clone() }, Receiver { chan })
}

/// The sending end of a channel. Clone it for more senders; the channel closes when the last
/// one is dropped (or on [`close`](Sender::close)).
pub struct Sender<T> {
    chan: Arc<Chan<T>>,
}

/// The receiving end of a channel. Clone it for more receivers (each value goes to one).
/// Dropping the last one closes the channel and drops the values still buffered.
pub struct Receiver<T> {
    chan: Arc<Chan<T>>,
}

impl<T> Sender<T> {
    /// Sends `value`, waiting while the buffer is full (unbuffered: until a receiver takes it).
    /// `Err(SendError(value))` if the channel is or gets closed while waiting — the value comes
    /// back.
    ///
    /// **Cancel safety:** dropping the future before it completes withdraws the value (it is
    /// dropped with the future), unless a receiver already took it — then the send happened.
    /// See [`SendFuture`].
    ///
    /// ```
    /// use gmprt_runtime::chan::{chan, SendError};
    /// let rt = gmprt_runtime::Runtime::builder().procs(2).build().unwrap();
    /// rt.block_on(async {
    ///     let (tx, rx) = chan::<u32>(0);
    ///     let h = gmprt_runtime::spawn(async move { rx.recv().await });
    ///     tx.send(1).await.unwrap(); // waits for the receiver
    ///     assert_eq!(h.await.unwrap(), Some(1));
    ///     // The receiver is gone: the channel is closed and the value comes back.
    ///     assert_eq!(tx.send(2).await, Err(SendError(2)));
    /// });
    /// ```
    pub fn send(&self, value: T) -> SendFuture<'_, T> {
        SendFuture::new(&self.chan, value)
    }

    /// Sends `value` if that needs no waiting: `Full(value)` if the buffer is full (for an
    /// unbuffered channel: no receiver is waiting), `Closed(value)` if the channel is closed.
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        crate::checkdead::note_outside_use();
        self.chan.with_lock(|st, wakes| st.send_now(value, wakes))
    }

    /// Closes the channel (Go's `close`): waiting receivers wake and drain what is buffered,
    /// then see `None`; waiting and future sends fail with their values back. Returns true if
    /// this call closed it, false if it was closed already.
    pub fn close(&self) -> bool {
        crate::checkdead::note_outside_use();
        self.chan.with_lock(|st, wakes| st.close(wakes))
    }

    /// Closes the channel and panics if it was closed already — Go's `close`, for ports that
    /// rely on its "close of closed channel" panic to find the bug. [`close`](Self::close)
    /// returns `false` instead.
    ///
    /// ```should_panic
    /// let (tx, _rx) = gmprt_runtime::chan::chan::<u32>(0);
    /// tx.close_or_panic();
    /// tx.close_or_panic(); // panics: close of closed channel
    /// ```
    ///
    /// # Panics
    /// If the channel was closed already (by any sender or receiver, or by the last sender's
    /// drop).
    #[track_caller]
    pub fn close_or_panic(&self) {
        assert!(self.close(), "close of closed channel");
    }

    /// True once the channel is closed.
    pub fn is_closed(&self) -> bool {
        self.chan.with_lock(|st, _| st.is_closed())
    }

    /// Values buffered and not yet promised to a receiver (Go's `len(ch)`).
    pub fn len(&self) -> usize {
        self.chan.with_lock(|st, _| st.len())
    }

    /// True if [`len`](Sender::len) is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buffer size the channel was made with (Go's `cap(ch)`).
    pub fn capacity(&self) -> usize {
        self.chan.capacity()
    }

    /// A `send(self, value)` arm (used by `select!`).
    #[doc(hidden)]
    pub fn __send_arm(&self, value: T) -> __private::SendArm<'_, T> {
        __private::SendArm::new(&self.chan, value)
    }
}

impl<T> Receiver<T> {
    /// Receives the next value, waiting for one; `None` once the channel is closed and drained.
    ///
    /// **Cancel safety:** dropping the future loses no value: a value promised to it stays in the
    /// channel for another receiver. See [`RecvFuture`].
    ///
    /// ```
    /// use gmprt_runtime::chan::chan;
    /// let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
    /// rt.block_on(async {
    ///     let (tx, rx) = chan::<u32>(4);
    ///     tx.send(1).await.unwrap();
    ///     tx.send(2).await.unwrap();
    ///     drop(tx); // closes; buffered values are still delivered
    ///     assert_eq!(rx.recv().await, Some(1));
    ///     assert_eq!(rx.recv().await, Some(2));
    ///     assert_eq!(rx.recv().await, None);
    /// });
    /// ```
    pub fn recv(&self) -> RecvFuture<'_, T> {
        RecvFuture::new(&self.chan)
    }

    /// Receives a value if that needs no waiting: `Empty` if none is buffered and no sender is
    /// waiting, `Closed` if the channel is closed and nothing is left for this receiver (as
    /// Go's non-blocking receive: a value already handed to another receiver is not waited
    /// for).
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        crate::checkdead::note_outside_use();
        self.chan.with_lock(|st, wakes| st.recv_now(wakes, true))
    }

    /// Closes the channel, as [`Sender::close`]. Buffered values can still be received.
    pub fn close(&self) -> bool {
        crate::checkdead::note_outside_use();
        self.chan.with_lock(|st, wakes| st.close(wakes))
    }

    /// True once the channel is closed (values may still be buffered).
    pub fn is_closed(&self) -> bool {
        self.chan.with_lock(|st, _| st.is_closed())
    }

    /// Values buffered and not yet promised to a receiver (Go's `len(ch)`).
    pub fn len(&self) -> usize {
        self.chan.with_lock(|st, _| st.len())
    }

    /// True if [`len`](Receiver::len) is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buffer size the channel was made with (Go's `cap(ch)`).
    pub fn capacity(&self) -> usize {
        self.chan.capacity()
    }

    /// A `recv(self)` arm (used by `select!`).
    #[doc(hidden)]
    pub fn __recv_arm(&self) -> __private::RecvArm<'_, T> {
        __private::RecvArm::new(&self.chan)
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        // Relaxed: a new count derived from a live one (as `Arc::clone`).
        self.chan.senders.fetch_add(1, Ordering::Relaxed);
        Sender { chan: self.chan.clone() }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        // AcqRel: the last sender's close happens after every other sender's last operation.
        if self.chan.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.chan.with_lock(|st, wakes| st.close(wakes));
        }
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        self.chan.receivers.fetch_add(1, Ordering::Relaxed);
        Receiver { chan: self.chan.clone() }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        if self.chan.receivers.fetch_sub(1, Ordering::AcqRel) == 1 {
            // Nobody can receive any more: close, and drop the buffered values (outside the lock).
            let _buffered = self.chan.with_lock(|st, wakes| {
                st.close(wakes);
                st.drain()
            });
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender").field("len", &self.len()).field("capacity", &self.capacity()).finish()
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver").field("len", &self.len()).field("capacity", &self.capacity()).finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, not(loom)))]
impl<T> Receiver<T> {
    /// Waiter slots (in use, allocated) and whether both queues are empty.
    fn slab(&self) -> (usize, usize, bool) {
        self.chan.with_lock(|st, _| st.slab())
    }
}
