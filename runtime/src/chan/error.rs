//! Errors of the channel operations. Every error that can happen to a value being sent carries
//! the value back: nothing is lost.

use std::fmt;

/// [`Sender::send`](super::Sender::send) failed because the channel is closed (by `close`, or
/// because every [`Receiver`](super::Receiver) is gone). Holds the value that was not sent.
///
/// ```
/// let (tx, rx) = gmprt_runtime::chan::chan::<String>(1);
/// rx.close();
/// let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
/// let err = rt.block_on(tx.send("hello".to_string())).unwrap_err();
/// assert_eq!(err.into_inner(), "hello");
/// ```
#[derive(PartialEq, Eq, Clone, Copy)]
pub struct SendError<T>(pub T);

impl<T> SendError<T> {
    /// The value that was not sent.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError(..)")
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sending on a closed channel (the value is returned in the error)")
    }
}

impl<T> std::error::Error for SendError<T> {}

/// [`Sender::try_send`](super::Sender::try_send) could not send without waiting. Holds the
/// value that was not sent.
#[derive(PartialEq, Eq, Clone, Copy)]
pub enum TrySendError<T> {
    /// The buffer is full (or, for an unbuffered channel, no receiver is waiting).
    Full(T),
    /// The channel is closed.
    Closed(T),
}

impl<T> TrySendError<T> {
    /// The value that was not sent.
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(v) | TrySendError::Closed(v) => v,
        }
    }

    /// True for [`TrySendError::Full`].
    pub fn is_full(&self) -> bool {
        matches!(self, TrySendError::Full(_))
    }

    /// True for [`TrySendError::Closed`].
    pub fn is_closed(&self) -> bool {
        matches!(self, TrySendError::Closed(_))
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("Full(..)"),
            TrySendError::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => {
                f.write_str("channel full: no buffer space and no waiting receiver (the value is returned)")
            }
            TrySendError::Closed(_) => f.write_str("sending on a closed channel (the value is returned)"),
        }
    }
}

impl<T> std::error::Error for TrySendError<T> {}

impl<T> From<SendError<T>> for TrySendError<T> {
    fn from(e: SendError<T>) -> Self {
        TrySendError::Closed(e.0)
    }
}

/// [`Receiver::try_recv`](super::Receiver::try_recv) found nothing to take.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum TryRecvError {
    /// Nothing is buffered and no sender is waiting; the channel is open.
    Empty,
    /// The channel is closed and drained: no value will ever come.
    Closed,
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("channel empty: nothing buffered and no sender waiting"),
            TryRecvError::Closed => f.write_str("channel closed and drained"),
        }
    }
}

impl std::error::Error for TryRecvError {}
