//! Wakers point at the task: a `Waker` is the task pointer plus a static vtable, so cloning is
//! a reference-count increment and waking allocates nothing.

use super::core::{drop_reference, Header, Notified};
use super::state::WakeAction;
use std::ptr::NonNull;
use std::task::{RawWaker, RawWakerVTable, Waker};

pub(crate) static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake_by_val, wake_by_ref, drop_waker);

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

/// The joiner's waker in a task header, in one word instead of a `Waker`'s two (issue 25's
/// 176-byte parked task; `core.rs`'s tests list the four 8-byte cuts).
///
/// Encoding: 0 is empty. A gmprt task's waker (the common joiner: a task awaiting a
/// `JoinHandle`) is stored as its task pointer, which it holds one reference on, exactly as the
/// `Waker` did; task cells are at least 8-aligned, so bit 0 is clear. Any other waker (a
/// `block_on`, another executor) is boxed and stored with bit 0 set: one allocation per
/// registration of a foreign joiner, none for a task joiner.
///
/// Access follows the `JOIN_WAKER` rules in `state.rs` (the slot is an `UnsafeCell` in the
/// header); this type only encodes.
pub(crate) struct JoinWaker(usize);

/// Bit 0 set: the word is a `Box<Waker>`.
const FOREIGN: usize = 1;

impl JoinWaker {
    /// An empty slot.
    pub(crate) const fn none() -> Self {
        JoinWaker(0)
    }

    /// Stores `w` (taking over its reference or its box).
    pub(crate) fn new(w: Waker) -> Self {
        // `VTABLE` is a `static`, so its address identifies gmprt's wakers exactly.
        if std::ptr::eq(w.vtable(), &VTABLE) {
            let data = std::mem::ManuallyDrop::new(w).data() as usize;
            debug_assert!(data & FOREIGN == 0 && data != 0, "a task pointer is non-null and aligned");
            JoinWaker(data)
        } else {
            let boxed = Box::into_raw(Box::new(w)) as usize;
            debug_assert!(boxed & FOREIGN == 0, "Box<Waker> is 8-aligned");
            JoinWaker(boxed | FOREIGN)
        }
    }

    /// Whether the slot holds a waker that would wake the same task as `other`.
    pub(crate) fn will_wake(&self, other: &Waker) -> bool {
        match self.0 {
            0 => false,
            w if w & FOREIGN != 0 => {
                // SAFETY: a FOREIGN word is a live `Box<Waker>` owned by this slot.
                unsafe { &*((w & !FOREIGN) as *const Waker) }.will_wake(other)
            }
            w => std::ptr::eq(other.vtable(), &VTABLE) && other.data() as usize == w,
        }
    }

    /// Wakes the stored waker, keeping it (a no-op when empty).
    pub(crate) fn wake_by_ref(&self) {
        match self.0 {
            0 => {}
            // SAFETY: as in `will_wake`.
            w if w & FOREIGN != 0 => unsafe { &*((w & !FOREIGN) as *const Waker) }.wake_by_ref(),
            // SAFETY: a task word is a live task pointer holding this slot's reference.
            w => unsafe { wake_by_ref(w as *const ()) },
        }
    }
}

impl Drop for JoinWaker {
    fn drop(&mut self) {
        match self.0 {
            0 => {}
            // SAFETY: a FOREIGN word is a `Box<Waker>` this slot owns; dropped once, here.
            w if w & FOREIGN != 0 => drop(unsafe { Box::from_raw((w & !FOREIGN) as *mut Waker) }),
            // SAFETY: a task word holds one reference, released once, here.
            w => unsafe { drop_waker(w as *const ()) },
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::JoinWaker;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A foreign waker is boxed, wakes, compares and is released (no leak: the Arc's count).
    #[test]
    fn a_foreign_joiner_is_boxed_and_released() {
        let c = Arc::new(Count(AtomicUsize::new(0)));
        let w = Waker::from(c.clone());
        let slot = JoinWaker::new(w.clone());
        assert!(slot.will_wake(&w));
        assert!(!slot.will_wake(Waker::noop()));
        slot.wake_by_ref();
        slot.wake_by_ref();
        assert_eq!(c.0.load(Ordering::SeqCst), 2);
        assert_eq!(Arc::strong_count(&c), 3, "the test's, `w`'s and the slot's");
        drop(slot);
        assert_eq!(Arc::strong_count(&c), 2);
        assert!(!JoinWaker::none().will_wake(&w));
    }
}
