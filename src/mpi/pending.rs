//! [`Pending`]: one non-blocking MPI send or receive and the buffer it owns, for the
//! [`Wait::Poll`](super::Wait::Poll) strategy, where a task tests the request between parks.
//!
//! # Why this file has `unsafe`
//!
//! rsmpi ties a request to its buffer with a lifetime: a request must be completed inside an
//! [`mpi::request::scope`] closure (a `LocalScope`), or its buffer must be `'static`. Neither fits
//! a task that awaits between tests: a closure cannot await, and a `'static` buffer would have
//! to be leaked. So [`Pending`] owns the buffer (a `Vec`, whose heap block does not move when
//! the `Vec` or the `Pending` moves) and hands MPI a `'static` view of it, which it upholds by
//! hand: nothing reads, writes or frees the block while the request is live. Two rules make
//! that true:
//! 1. the buffer is private, and only [`Pending::try_finish`] returns it — after `MPI_Test`
//!    said the request completed; a send's buffer is an `Arc<Vec<T>>`, which other sends may
//!    read at the same time but nobody can write;
//! 2. a `Pending` dropped before completion (its task was cancelled) leaks the buffer and the
//!    request instead of freeing the block under MPI: memory is lost, never corrupted, and
//!    nothing blocks (waiting there could hang, if the peer never comes).
//!
//! rsmpi's `Request` is not `Send` because it holds Open MPI's request handle, a C pointer.
//! [`Mpi::init`](super::Mpi::init) refuses to run unless MPI granted `MPI_THREAD_MULTIPLE`, under
//! which any thread may test any request (MPI-3.1 §12.4); a `Pending` is only used through
//! `&mut self`, one thread at a time. So it may move between the runtime's Ms.
use mpi::datatype::Equivalence;
use mpi::point_to_point::{Destination, Source, Status};
use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::Tag;
use std::ops::Range;
use std::sync::Arc;

/// A non-blocking send or receive in flight, owning its buffer (see the module docs).
pub(super) struct Pending<T: Equivalence + 'static> {
    /// The message (send) or the space for it (receive). Not touched while `req` is live.
    buf: Buf<T>,
    /// `None` once completed.
    req: Option<Request<'static, [T]>>,
}

/// What a request reads or writes.
enum Buf<T> {
    /// A send's message: a range of a buffer other sends may share (a scatter's parts), read
    /// only.
    Shared(Arc<Vec<T>>),
    /// A receive's space, written by MPI.
    Owned(Vec<T>),
}

// SAFETY: the request handle may be tested from any thread because `Mpi::init` requires
// MPI_THREAD_MULTIPLE (module docs), and `Pending` is used only through `&mut self`; the buffer
// is an owned `Vec<T>` or an `Arc<Vec<T>>`, both `Send` for `T: Send + Sync`.
unsafe impl<T: Equivalence + Send + Sync + 'static> Send for Pending<T> {}

impl<T: Equivalence + 'static> Pending<T> {
    /// Starts sending `buf[range]` to rank `to` with `tag` (`MPI_Isend`).
    ///
    /// # Panics
    /// If `range` is out of `buf`'s bounds (a programmer error: callers check it).
    pub(super) fn send(buf: Arc<Vec<T>>, range: Range<usize>, to: i32, tag: Tag) -> Pending<T> {
        let part = &buf[range];
        // SAFETY: the view points into the heap block of the `Vec` that `buf` keeps alive until
        // this `Pending` completes (`try_finish`) or leaks it (`drop`): it is not freed while MPI
        // reads it, and nobody writes it — an `Arc<Vec<T>>` gives no `&mut` (module docs).
        let view: &'static [T] = unsafe { std::slice::from_raw_parts(part.as_ptr(), part.len()) };
        let req =
            SimpleCommunicator::world().process_at_rank(to).immediate_send_with_tag(StaticScope, view, tag);
        Pending { buf: Buf::Shared(buf), req: Some(req) }
    }

    /// Starts receiving into `buf` (its length is the count expected) from rank `from` with
    /// `tag` (`MPI_Irecv`).
    pub(super) fn recv(mut buf: Vec<T>, from: i32, tag: Tag) -> Pending<T> {
        // SAFETY: as in `send`, and no other view of the block exists while MPI writes it: the
        // `Vec` is only moved (its pointer, not the block) until `try_finish` returns it.
        let view: &'static mut [T] = unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr(), buf.len()) };
        let req = SimpleCommunicator::world().process_at_rank(from).immediate_receive_into_with_tag(
            StaticScope,
            view,
            tag,
        );
        Pending { buf: Buf::Owned(buf), req: Some(req) }
    }

    /// Tests the request once (`MPI_Test`, which also drives MPI's progress): when it has
    /// completed, the status and, for a receive, the filled buffer (`None` for a send); else
    /// `None` (test again later).
    pub(super) fn try_finish(&mut self) -> Option<(Option<Vec<T>>, Status)> {
        let req = self.req.take()?;
        match req.test() {
            Ok(status) => {
                let buf = match std::mem::replace(&mut self.buf, Buf::Owned(Vec::new())) {
                    Buf::Owned(v) => Some(v),
                    // The send's reference to the message goes: MPI is done reading it.
                    Buf::Shared(message) => {
                        drop(message);
                        None
                    }
                };
                Some((buf, status))
            }
            Err(req) => {
                self.req = Some(req);
                None
            }
        }
    }
}

impl<T: Equivalence + 'static> Drop for Pending<T> {
    fn drop(&mut self) {
        if let Some(req) = self.req.take() {
            // Cancelled before completion: MPI may still read or write the block. Leak both
            // (module docs, rule 2); rsmpi's `Request` panics when dropped uncompleted.
            std::mem::forget(req);
            std::mem::forget(std::mem::replace(&mut self.buf, Buf::Owned(Vec::new())));
        }
    }
}
