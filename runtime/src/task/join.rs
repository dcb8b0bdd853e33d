//! `JoinHandle<T>`: the way to wait for a task's output.
//!
//! The handle owns `JOIN_INTEREST` and one task reference. Its waker hand-off follows the
//! `JOIN_WAKER` rules in `state.rs`: the handle writes the slot only while `JOIN_WAKER` is
//! clear, then sets the bit (failing if the task completed meanwhile, in which case the output
//! is ready); the task reads the slot only while the bit is set.

use super::core::{drop_reference, Header, TaskId};
use crate::park::ThreadParker;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

/// Why a task produced no value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinError {
    /// The task panicked; the message is the panic payload (or a note that it was not a string).
    Panicked(String),
    /// The task was aborted with [`JoinHandle::abort`] or dropped at runtime shutdown.
    Cancelled,
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Panicked(m) => write!(f, "task panicked: {m}"),
            JoinError::Cancelled => write!(f, "task was cancelled (aborted or runtime shut down)"),
        }
    }
}

impl std::error::Error for JoinError {}

/// An owned permission to wait for a task's output. Awaiting it (or calling [`join`] outside
/// the runtime) yields `Ok(output)`, `Err(JoinError::Panicked(msg))` or
/// `Err(JoinError::Cancelled)`. Dropping it detaches the task, which keeps running.
///
/// [`join`]: JoinHandle::join
pub struct JoinHandle<T> {
    /// The task, with [`DONE`] set in the address's low bit once the output has been taken
    /// (polling again is a programmer error). A `Header` is 8-aligned, so the bit is free, and
    /// the handle is one word, as a plain pointer; a separate flag made it 16 bytes, which a
    /// program keeping a million handles paid in a million times 8 bytes of fresh memory.
    tagged: NonNull<Header>,
    _p: PhantomData<T>,
}

/// The low bit of [`JoinHandle::tagged`]: the output has been taken.
const DONE: usize = 1;
const _: () =
    assert!(std::mem::align_of::<Header>() > DONE, "the DONE bit must be free in a header's address");

// SAFETY: the handle only moves the output (T: Send) between threads.
unsafe impl<T: Send> Send for JoinHandle<T> {}
// SAFETY: &JoinHandle only reads the state word (is_finished) or aborts, both thread-safe.
unsafe impl<T: Send> Sync for JoinHandle<T> {}

impl<T> Unpin for JoinHandle<T> {}

impl<T> JoinHandle<T> {
    /// Wraps the handle's reference. Contract: `raw` carries one reference and `JOIN_INTEREST`.
    pub(crate) fn new(raw: NonNull<Header>) -> Self {
        debug_assert_eq!(raw.addr().get() & DONE, 0, "a header is aligned");
        JoinHandle { tagged: raw, _p: PhantomData }
    }

    /// The task's header pointer, without the tag.
    #[inline]
    fn raw(&self) -> NonNull<Header> {
        // SAFETY: a header's address is a non-zero multiple of its alignment (> DONE), so
        // clearing the DONE bit leaves it non-zero.
        self.tagged.map_addr(|a| unsafe { std::num::NonZero::new_unchecked(a.get() & !DONE) })
    }

    /// Whether the output has been taken.
    #[inline]
    fn done(&self) -> bool {
        self.tagged.addr().get() & DONE != 0
    }

    fn header(&self) -> &Header {
        // SAFETY: we own a reference.
        unsafe { self.raw().as_ref() }
    }

    /// True once the task has completed, panicked or been cancelled (its output is ready).
    pub fn is_finished(&self) -> bool {
        self.header().state.load().has(super::state::COMPLETE)
    }

    /// The task's id.
    pub fn id(&self) -> TaskId {
        self.header().id()
    }

    /// Asks the runtime to drop the task's future. Awaiting the handle then yields
    /// `Err(JoinError::Cancelled)` unless the task had already completed. A task that is being
    /// polled is dropped when that poll returns; futures are never preempted.
    pub fn abort(&self) {
        let header = self.header();
        if header.state.transition_to_cancelled() == super::state::WakeAction::Submit {
            header.ref_inc_and_schedule(self.raw());
        }
    }

    /// Blocks the calling thread until the task finishes. For threads outside the runtime
    /// (e.g. `main` or a test); inside a task use `.await`, which does not block an M.
    ///
    /// # Panics
    /// When called on an M (from inside a task): blocking there could deadlock the runtime.
    pub fn join(self) -> Result<T, JoinError> {
        crate::runtime::assert_not_on_m("JoinHandle::join");
        crate::park::block_on_local(self, ThreadParker::current_waker())
    }
}

impl Header {
    /// Schedules after a transition that already counted a new queue reference.
    fn ref_inc_and_schedule(&self, raw: NonNull<Header>) {
        // SAFETY: the transition added the queue's reference.
        self.shared().schedule(unsafe { super::core::Notified::from_raw(raw) }, false);
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        assert!(!self.done(), "JoinHandle polled after it returned its output");
        let raw = self.raw();
        let header = self.header();
        let mut snap = header.state.load();
        if !snap.has(super::state::COMPLETE) {
            if snap.has(super::state::JOIN_WAKER) {
                let same = header.join_waker.with(|w| {
                    // SAFETY: the handle stored this waker and only the handle writes the slot.
                    unsafe { (*w).will_wake(cx.waker()) }
                });
                if same {
                    super::wait::set(super::wait::JOIN, header.id().0, 0);
                    return Poll::Pending;
                }
                // Take the slot back to replace the waker.
                if let Err(s) = header.state.unset_join_waker() {
                    snap = s;
                }
            }
            if !snap.has(super::state::COMPLETE) {
                // JOIN_WAKER is clear: exclusive access to the slot.
                header.join_waker.with_mut(|w| {
                    // SAFETY: see above.
                    unsafe { *w = super::waker::JoinWaker::new(cx.waker().clone()) }
                });
                if header.state.set_join_waker().is_ok() {
                    super::wait::set(super::wait::JOIN, header.id().0, 0);
                    return Poll::Pending;
                }
                // Completed meanwhile: the output is ready.
            }
        }
        // The output is ready: an `.await` that completes without parking spends budget, so a
        // loop joining many finished handles still lets the P's other tasks run (coop.rs).
        if crate::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        let mut out = Poll::Pending;
        // SAFETY: COMPLETE observed (acquire) and we hold JOIN_INTEREST: the output is ours.
        unsafe { (header.vtable.read_output)(raw, &mut out as *mut _ as *mut ()) };
        if out.is_ready() {
            self.tagged = self.tagged.map_addr(|a| a | DONE);
        }
        out
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        let raw = self.raw();
        let header = self.header();
        // With no waker stored (JOIN_WAKER clear), the slot is ours (state.rs rules), and
        // JOIN_INTEREST can go with our reference in one RMW: after COMPLETE (a finished join:
        // the runtime no longer touches the slot or the output, so both are dealt with first),
        // or before it (a detached spawn, `drop(spawn(..))`: the task then drops its own
        // output), unless the task completed meanwhile (then the general path below).
        let snap = header.state.load();
        if !snap.has(super::state::JOIN_WAKER) {
            let complete = snap.has(super::state::COMPLETE);
            if complete && !self.done() {
                // SAFETY: COMPLETE observed (acquire) with JOIN_INTEREST ours: the output is
                // ours, and nobody else drops it (`complete` does only without JOIN_INTEREST).
                unsafe { (header.vtable.drop_output)(raw) };
            }
            // SAFETY: JOIN_WAKER is clear: the slot is ours.
            header.join_waker.with_mut(|w| unsafe { *w = super::waker::JoinWaker::none() });
            let released = if complete {
                Some(header.state.drop_complete_join_handle())
            } else {
                header.state.drop_join_handle_early()
            };
            if let Some(last) = released {
                if last {
                    // SAFETY: that was the last reference: nobody else can touch the task.
                    unsafe { (header.vtable.dealloc)(raw) };
                }
                return;
            }
        }
        let prev = header.state.drop_join_interest();
        if prev.has(super::state::COMPLETE) && !self.done() {
            // Completed with nobody reading: the output is ours to drop.
            // SAFETY: COMPLETE and JOIN_INTEREST were ours.
            unsafe { (header.vtable.drop_output)(raw) };
        }
        if !prev.has(super::state::COMPLETE) || !prev.has(super::state::JOIN_WAKER) {
            // JOIN_WAKER is clear now (we cleared it, or it was): the slot is ours.
            // SAFETY: exclusive access per the JOIN_WAKER rules.
            header.join_waker.with_mut(|w| unsafe { *w = super::waker::JoinWaker::none() });
        }
        drop_reference(raw);
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.id())
            .field("state", &self.header().state.load())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// One word, as a plain pointer (and tokio's handle): the taken-output flag lives in the
    /// pointer's low bit, and `Option` still finds a niche in it.
    #[test]
    fn a_handle_is_one_word() {
        assert_eq!(std::mem::size_of::<JoinHandle<u64>>(), std::mem::size_of::<usize>());
        assert_eq!(std::mem::size_of::<Option<JoinHandle<String>>>(), std::mem::size_of::<usize>());
    }
}
