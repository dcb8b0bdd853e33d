//! Blocking a plain OS thread on a future: `Runtime::block_on` and `JoinHandle::join`.
//!
//! The waker is an `Arc<ThreadParker>`: waking sets a flag under the parker's mutex and
//! signals its condvar; the blocked thread polls, and if the future is pending waits until the
//! flag is set, clears it and polls again. Setting the flag under the lock before notifying
//! means a wake between "poll returned Pending" and "wait" is never lost.

use crate::loom::sync::{Condvar, Mutex};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

/// A flag + condvar that a waker sets and a blocked thread waits on.
#[derive(Default)]
pub(crate) struct ThreadParker {
    notified: Mutex<bool>,
    cv: Condvar,
}

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_waker);

unsafe fn clone(p: *const ()) -> RawWaker {
    // SAFETY: `p` came from Arc::into_raw of a ThreadParker and is alive (the waker holds it).
    unsafe { Arc::increment_strong_count(p as *const ThreadParker) };
    RawWaker::new(p, &VTABLE)
}
unsafe fn wake(p: *const ()) {
    // SAFETY: consumes the waker's count.
    let a = unsafe { Arc::from_raw(p as *const ThreadParker) };
    a.unpark();
}
unsafe fn wake_by_ref(p: *const ()) {
    // SAFETY: borrowed from a live waker.
    unsafe { &*(p as *const ThreadParker) }.unpark();
}
unsafe fn drop_waker(p: *const ()) {
    // SAFETY: releases the waker's count.
    drop(unsafe { Arc::from_raw(p as *const ThreadParker) });
}

impl ThreadParker {
    /// A fresh parker and a waker for it.
    pub(crate) fn current_waker() -> (Arc<ThreadParker>, Waker) {
        let p = Arc::new(ThreadParker::default());
        let raw = Arc::into_raw(p.clone()) as *const ();
        // SAFETY: the vtable implements the RawWaker contract over an Arc<ThreadParker>.
        let w = unsafe { Waker::from_raw(RawWaker::new(raw, &VTABLE)) };
        (p, w)
    }

    fn unpark(&self) {
        let mut n = self.notified.lock();
        *n = true;
        self.cv.notify_one();
    }

    /// True if a wake-up is pending (the next `park` returns at once).
    pub(crate) fn is_notified(&self) -> bool {
        *self.notified.lock()
    }

    pub(crate) fn park(&self) {
        let mut n = self.notified.lock();
        while !*n {
            self.cv.wait(&mut n);
        }
        *n = false;
    }
}

/// Polls `fut` on this thread until it is ready, sleeping between wakes.
pub(crate) fn block_on_local<F: Future>(fut: F, (parker, waker): (Arc<ThreadParker>, Waker)) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        parker.park();
    }
}

/// `Runtime::try_block_on`'s loop: polls `fut` with `entry`'s wait cell current, and before
/// each park marks the thread parked and runs the deadlock check (`checkdead.rs`). `None`: the
/// check found that nothing can wake the program (the dump is in `dead`).
pub(crate) fn block_on_checked<F: Future>(
    fut: F,
    parker: &ThreadParker,
    entry: &crate::checkdead::BlockOn,
    shared: &crate::sched::Shared,
    dead: &mut Option<crate::dump::TaskDump>,
) -> Option<F::Output> {
    use std::sync::atomic::Ordering::Release;
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(&entry.waker);
    loop {
        let g = crate::task::wait::enter(&entry.wait);
        let r = fut.as_mut().poll(&mut cx);
        drop(g);
        if let Poll::Ready(v) = r {
            return Some(v);
        }
        // Release: a dump that reads `parked` (Acquire) also sees the wait reason above.
        entry.parked.store(true, Release);
        let found = crate::checkdead::park_block_on(shared, parker);
        entry.parked.store(false, Release);
        if found.is_some() {
            *dead = found;
            return None;
        }
    }
}
