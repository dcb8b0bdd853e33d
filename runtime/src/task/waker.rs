//! Wakers point at the task: a `Waker` is the task pointer plus a static vtable, so cloning is
//! a reference-count increment and waking allocates nothing.

use super::core::{drop_reference, Header, Notified};
use super::state::WakeAction;
use std::ptr::NonNull;
use std::task::{RawWaker, RawWakerVTable, Waker};

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake_by_val, wake_by_ref, drop_waker);

/// A waker that borrows the caller's reference (wrap it in `ManuallyDrop`: dropping it would
/// release a reference it never took).
pub(crate) fn waker_ref(ptr: NonNull<Header>) -> Waker {
    // SAFETY: the vtable functions uphold RawWaker's contract for task pointers.
    unsafe { Waker::from_raw(RawWaker::new(ptr.as_ptr() as *const (), &VTABLE)) }
}

unsafe fn clone(data: *const ()) -> RawWaker {
    // SAFETY: `data` is a live task pointer (the waker being cloned holds a reference).
    let header = unsafe { &*(data as *const Header) };
    header.state.ref_inc();
    RawWaker::new(data, &VTABLE)
}

unsafe fn wake_by_val(data: *const ()) {
    // SAFETY: as in `clone`; this consumes the waker's reference.
    let ptr = unsafe { NonNull::new_unchecked(data as *mut Header) };
    // SAFETY: live task.
    let header = unsafe { ptr.as_ref() };
    match header.state.wake_by_val() {
        WakeAction::Nothing => {}
        WakeAction::Submit => header.shared().schedule(Notified(ptr), false),
        // SAFETY: last reference released.
        WakeAction::Dealloc => unsafe { (header.vtable.dealloc)(ptr) },
    }
}

unsafe fn wake_by_ref(data: *const ()) {
    // SAFETY: as in `clone`.
    let ptr = unsafe { NonNull::new_unchecked(data as *mut Header) };
    // SAFETY: live task.
    let header = unsafe { ptr.as_ref() };
    match header.state.wake_by_ref() {
        WakeAction::Submit => header.shared().schedule(Notified(ptr), false),
        WakeAction::Nothing | WakeAction::Dealloc => {}
    }
}

unsafe fn drop_waker(data: *const ()) {
    // SAFETY: as in `clone`; releases the waker's reference.
    drop_reference(unsafe { NonNull::new_unchecked(data as *mut Header) });
}

/// What [`wake_for_list`] made of a waker.
pub(crate) enum ListWake {
    /// A gmprt task that must be queued: the caller pushes it (the waker's reference is now
    /// the queue's).
    Queue(Notified),
    /// A gmprt task that needs nothing more (running, already notified, or complete).
    Done,
    /// Another executor's waker, returned unwoken.
    Foreign(Waker),
}

/// Consumes `w` for `injectglist`: the state transition of `Waker::wake`, without queueing.
pub(crate) fn wake_for_list(w: Waker) -> ListWake {
    // `VTABLE` is a `static`, so its address identifies gmprt's wakers exactly.
    if !std::ptr::eq(w.vtable(), &VTABLE) {
        return ListWake::Foreign(w);
    }
    let w = std::mem::ManuallyDrop::new(w);
    // SAFETY: a gmprt waker's data is a live task pointer holding one reference, which
    // `ManuallyDrop` keeps from being released twice: it is consumed below, as `wake_by_val`.
    let ptr = unsafe { NonNull::new_unchecked(w.data() as *mut Header) };
    // SAFETY: live task (the waker's reference).
    let header = unsafe { ptr.as_ref() };
    match header.state.wake_by_val() {
        WakeAction::Nothing => ListWake::Done,
        WakeAction::Submit => ListWake::Queue(Notified(ptr)),
        WakeAction::Dealloc => {
            // SAFETY: last reference released.
            unsafe { (header.vtable.dealloc)(ptr) };
            ListWake::Done
        }
    }
}
