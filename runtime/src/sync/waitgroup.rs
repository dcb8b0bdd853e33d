//! `WaitGroup`: Go's `sync.WaitGroup` for tasks and threads.
//!
//! # Protocol
//! The counter is an atomic word; the waiters are a [`WaitList`] under a mutex.
//!
//! 1. **add(δ)**: `fetch_add` (AcqRel) on the counter. A result below zero is a programmer
//!    error: the add is undone and `add` panics ("sync: negative WaitGroup counter", as Go).
//!    The add that brings the counter to zero takes the waiter lock and *notifies all*: every
//!    queued waiter is unlinked, marked notified, and woken after the lock is released.
//! 2. **wait**: if the counter reads zero (Acquire), ready. Otherwise take the waiter lock,
//!    read the counter *again under the lock*, and either return (zero) or queue a waker.
//!    Later polls return once the slot is marked notified; dropping the future frees the slot.
//!
//! # Why no wakeup is lost
//! A waiter queues only after reading a non-zero counter under the lock. The add that later
//! brings the counter to zero does so before it takes the lock, so either the waiter's
//! re-check (under the lock) comes after that lock section — then it saw the waiter queued and
//! notified it — or before it — then the waiter is already in the list when the zero-crossing
//! add takes the lock, and is notified. Notification is sticky (a flag in the slot), so a wake
//! that arrives before the waiter's next poll is not lost either. A waiter that was notified
//! returns even if the counter has since gone up again (the group was reused): `wait` returns
//! once the counter has reached zero after the waiter queued, which is Go's contract.
//!
//! # Memory ordering
//! Every `add` is an AcqRel read-modify-write on one counter, so the decrements form a release
//! sequence: a waiter that reads zero (Acquire) or is notified (through the lock, which the
//! zero-crossing add took after its own RMW) sees everything the group's tasks did before
//! their `done()`.

use super::block;
use super::waiters::{update_waker, Parked, WaitList};
use crate::loom::sync::atomic::{AtomicUsize, Ordering::AcqRel, Ordering::Acquire};
use crate::loom::sync::Mutex;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Go's `sync.WaitGroup`: waits for a collection of tasks (or threads) to finish.
///
/// `WaitGroup` is a cheap, cloneable *handle* (an `Arc` inside): clone it into each task you
/// spawn — where Go passes `*sync.WaitGroup` — and every clone names the same group. Call
/// [`add`](WaitGroup::add) before starting the work, [`done`](WaitGroup::done) when each piece
/// finishes, and [`wait`](WaitGroup::wait)`.await` (in a task) or
/// [`wait_blocking`](WaitGroup::wait_blocking) (on a thread) for the counter to reach zero.
/// Any number of waiters may wait at once; all are woken together.
///
/// ```
/// use gmprt_runtime::{sync::WaitGroup, Runtime};
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
///
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// let hits = Arc::new(AtomicUsize::new(0));
/// rt.block_on(async {
///     let wg = WaitGroup::new();
///     for _ in 0..100 {
///         wg.add(1);
///         let (wg, hits) = (wg.clone(), hits.clone());
///         gmprt_runtime::spawn(async move {
///             hits.fetch_add(1, Ordering::Relaxed);
///             wg.done();
///         });
///     }
///     wg.wait().await;
/// });
/// assert_eq!(hits.load(Ordering::Relaxed), 100);
/// ```
#[derive(Clone)]
pub struct WaitGroup {
    inner: Arc<Inner>,
}

struct Inner {
    /// The counter, an `isize` stored as `usize` (two's complement).
    count: AtomicUsize,
    waiters: Mutex<WaitList<Parked>>,
}

impl WaitGroup {
    /// A new group with a counter of zero.
    pub fn new() -> Self {
        WaitGroup {
            inner: Arc::new(Inner { count: AtomicUsize::new(0), waiters: Mutex::new(WaitList::new()) }),
        }
    }

    /// Adds `delta` (which may be negative, as in Go) to the counter. When the counter reaches
    /// zero every waiter is woken.
    ///
    /// As in Go, call `add` with a positive delta *before* starting the work it counts (before
    /// the `spawn`), not inside the spawned task, or a waiter may see zero too early.
    ///
    /// # Panics
    /// If the counter would go below zero ("sync: negative WaitGroup counter", Go's message);
    /// the counter is left as it was.
    #[track_caller]
    pub fn add(&self, delta: isize) {
        let prev = self.inner.count.fetch_add(delta as usize, AcqRel) as isize;
        let now = prev.wrapping_add(delta);
        if now < 0 {
            // Undo, so a caught panic leaves the group as it was. If the undo is what brings
            // the counter back to zero, a waiter that queued while it read negative is owed a
            // notification.
            let back = (self.inner.count.fetch_sub(delta as usize, AcqRel) as isize).wrapping_sub(delta);
            if back == 0 {
                self.inner.notify_all();
            }
            panic!(
                "sync: negative WaitGroup counter: adding {delta} to {prev} (more done() calls than \
                 add(1) calls; add before spawning, done once per unit of work)"
            );
        }
        if now == 0 && delta != 0 {
            self.inner.notify_all();
        }
    }

    /// Decrements the counter by one: Go's `wg.Done()`.
    ///
    /// # Panics
    /// If the counter is already zero ("sync: negative WaitGroup counter").
    #[track_caller]
    pub fn done(&self) {
        self.add(-1);
    }

    /// Waits until the counter is zero: returns at once if it is zero now, else once an
    /// [`add`](WaitGroup::add)/[`done`](WaitGroup::done) brings it to zero. Dropping the future
    /// simply stops waiting.
    pub fn wait(&self) -> Wait<'_> {
        Wait { inner: &self.inner, key: None }
    }

    /// Like [`wait`](WaitGroup::wait), blocking the calling thread. Meant for plain threads
    /// (and `Runtime::block_on`'s thread); inside a task it waits like [`crate::syscall`],
    /// giving up the M's P so other tasks keep running — prefer `wait().await` there.
    pub fn wait_blocking(&self) {
        block::block_on(self.wait());
    }

    /// Go 1.25's `wg.Go(f)`: adds one to the counter, spawns `future` on the current runtime,
    /// and calls `done` when it finishes — also when it panics or is cancelled.
    ///
    /// # Panics
    /// Outside a runtime, as [`crate::spawn`] (the counter is left unchanged).
    #[track_caller]
    pub fn go<F>(&self, future: F) -> crate::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        /// Calls `done` when dropped: after the future completes, or while unwinding.
        struct DoneOnDrop(WaitGroup);
        impl Drop for DoneOnDrop {
            fn drop(&mut self) {
                self.0.done();
            }
        }
        if crate::Handle::try_current().is_none() {
            panic!("WaitGroup::go: {}", crate::SpawnError::NoRuntime);
        }
        self.add(1);
        let guard = DoneOnDrop(self.clone());
        crate::spawn(async move {
            let _done = guard;
            future.await
        })
    }
}

impl Inner {
    /// The counter as Go sees it.
    fn count(&self) -> isize {
        self.count.load(Acquire) as isize
    }

    /// Notifies every queued waiter (step 1 of the protocol), waking them after the lock.
    fn notify_all(&self) {
        let wakers = self.waiters.lock().notify_all();
        for w in wakers {
            w.wake();
        }
    }
}

impl Default for WaitGroup {
    fn default() -> Self {
        WaitGroup::new()
    }
}

impl fmt::Debug for WaitGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitGroup").field("count", &self.inner.count()).finish_non_exhaustive()
    }
}

/// Future returned by [`WaitGroup::wait`]. Cancel-safe: dropping it only removes its waker.
#[must_use = "futures do nothing unless awaited"]
pub struct Wait<'a> {
    inner: &'a Inner,
    /// Our slot in `inner.waiters` once queued.
    key: Option<usize>,
}

impl Future for Wait<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        // A wait that may complete without parking spends budget (coop.rs), as channels do.
        if this.key.is_none() && crate::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        if this.key.is_none() && this.inner.count() == 0 {
            return Poll::Ready(());
        }
        let mut list = this.inner.waiters.lock();
        match this.key {
            None => {
                // Re-check under the lock (see "Why no wakeup is lost").
                if this.inner.count() == 0 {
                    return Poll::Ready(());
                }
                this.key = Some(list.push_back(Parked::new(cx)));
                crate::task::wait::set(crate::task::wait::WAITGROUP, 0, this.inner.count() as u64);
                Poll::Pending
            }
            Some(k) => {
                let w = list.get_mut(k);
                if w.notified {
                    list.free(k);
                    this.key = None;
                    Poll::Ready(())
                } else {
                    update_waker(&mut w.waker, cx);
                    crate::task::wait::set(crate::task::wait::WAITGROUP, 0, this.inner.count() as u64);
                    Poll::Pending
                }
            }
        }
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        if let Some(k) = self.key.take() {
            self.inner.waiters.lock().free(k);
        }
    }
}

impl fmt::Debug for Wait<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wait").field("queued", &self.key.is_some()).finish_non_exhaustive()
    }
}
