//! `RwMutex<T>`: Go's `sync.RWMutex` for tasks — many readers or one writer, with Go's writer
//! preference — owning its data.
//!
//! # Protocol
//! One lock (`state`) guards everything: the readers holding the lock, whether a writer holds
//! it, and a FIFO [`WaitList`] of the waiting readers and writers. Nothing is lock-free, so the
//! argument is the usual one for a monitor: every change happens under `state`, and every
//! change that can let a waiter in ends with [`State::dispatch`].
//!
//! * **Acquire.** A reader gets in at once if no writer holds the lock *and nobody waits*;
//!   a writer if nobody holds it and nobody waits. Otherwise they queue at the tail. So a
//!   reader arriving while a writer waits queues behind it: Go's writer preference ("if a
//!   goroutine calls Lock while the lock is held by readers, later RLock calls block until the
//!   writer has acquired and released it"), and no writer starves.
//! * **Dispatch** (after any release or cancellation): grant the head while it can go in — a
//!   writer when nobody holds the lock (then stop), readers one after another while no writer
//!   holds it (a batch: the readers that queued behind a writer all go in together when it
//!   leaves, as Go's `Unlock` releases every blocked reader). A grant updates the counts at
//!   once, unlinks the waiter, marks it granted and wakes it (after `state` is released).
//! * **Cancellation.** A waiting future that is dropped frees its slot; if it had been granted
//!   already, it releases what it was granted. Either way it dispatches: a writer that leaves
//!   the head may let the readers behind it in.
//!
//! No wake-up is lost: a waiter is only ever woken by a grant, a grant happens in `dispatch`
//! under `state`, and every event that can make a grant possible (an unlock, a cancellation)
//! runs `dispatch` under `state` after changing the counts. `tests/loom_sync.rs` checks
//! readers against a writer, and a cancelled writer with readers queued behind it.
//!
//! Misuse that Go reports at run time ("RUnlock of unlocked RWMutex", "Unlock of unlocked
//! RWMutex") cannot be written here: the guards unlock, once each. Re-locking from a task that
//! holds a read guard while a writer waits deadlocks, as in Go (the writer waits for that
//! reader, which waits behind the writer).

use super::block;
use super::waiters::{update_waker, WaitList};
use crate::loom::cell::UnsafeCell;
use crate::loom::sync::Mutex;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// A queued reader or writer.
#[derive(Debug)]
struct Waiter {
    write: bool,
    waker: Option<Waker>,
    /// Granted by `dispatch` (and unlinked): the lock is this future's to take.
    granted: bool,
}

#[derive(Debug)]
struct State {
    readers: usize,
    writer: bool,
    queue: WaitList<Waiter>,
}

impl State {
    /// The one admission rule (module doc): a writer needs nobody holding the lock, a reader
    /// needs no writer holding it. Who may *try* (an empty queue) is the caller's part.
    fn can_enter(&self, write: bool) -> bool {
        !self.writer && (!write || self.readers == 0)
    }

    /// Takes the lock for a caller `can_enter` let in.
    fn enter(&mut self, write: bool) {
        debug_assert!(self.can_enter(write));
        if write {
            self.writer = true;
        } else {
            self.readers += 1;
        }
    }

    /// An arriving caller gets in at once only if nobody waits (Go's writer preference).
    fn try_enter(&mut self, write: bool) -> bool {
        let ok = self.queue.is_empty() && self.can_enter(write);
        if ok {
            self.enter(write);
        }
        ok
    }

    /// Grants the head of the queue while it can go in (module doc); returns the wakers.
    fn dispatch(&mut self) -> Vec<Waker> {
        let mut wake = Vec::new();
        while let Some(k) = self.queue.front() {
            let write = self.queue.get_mut(k).write;
            if !self.can_enter(write) {
                break;
            }
            self.enter(write);
            let w = self.queue.get_mut(k);
            w.granted = true;
            wake.extend(w.waker.take());
            self.queue.unlink(k);
            if write {
                break;
            }
        }
        wake
    }

    /// Gives back a read (`write` false) or the write lock.
    fn release(&mut self, write: bool) -> Vec<Waker> {
        if write {
            debug_assert!(self.writer, "write unlock without the write lock");
            self.writer = false;
        } else {
            debug_assert!(self.readers > 0, "read unlock without a read lock");
            self.readers -= 1;
        }
        self.dispatch()
    }
}

/// Go's `sync.RWMutex`, for tasks, owning the data it protects: any number of readers
/// ([`read`](RwMutex::read), Go's `RLock`) or one writer ([`write`](RwMutex::write), `Lock`),
/// with Go's writer preference (a reader that arrives while a writer waits queues behind it).
/// The guards unlock on drop. See the module doc for the protocol.
///
/// ```
/// use gmprt_runtime::sync::RwMutex;
/// use std::sync::Arc;
///
/// let rt = gmprt_runtime::Runtime::builder().procs(2).build().unwrap();
/// rt.block_on(async {
///     let prices = Arc::new(RwMutex::new(vec![100.0, 101.5]));
///     let r1 = prices.read().await;
///     let r2 = prices.read().await; // readers share it
///     assert_eq!(r1.len() + r2.len(), 4);
///     assert!(prices.try_write().is_none(), "a writer waits for the readers");
///     drop((r1, r2));
///     prices.write().await.push(99.0);
///     assert_eq!(prices.read().await.len(), 3);
/// });
/// ```
pub struct RwMutex<T> {
    state: Mutex<State>,
    data: UnsafeCell<T>,
}

// SAFETY: the lock hands the `T` to one writer at a time, or shares `&T` among readers on any
// threads: `T: Send + Sync` for sharing (as `std::sync::RwLock`), `T: Send` to move it.
unsafe impl<T: Send> Send for RwMutex<T> {}
// SAFETY: as above: readers on several threads hold `&T` at once, so `T: Sync` too.
unsafe impl<T: Send + Sync> Sync for RwMutex<T> {}

impl<T> RwMutex<T> {
    /// A new, unlocked `RwMutex` holding `value`.
    pub fn new(value: T) -> Self {
        RwMutex {
            state: Mutex::new(State { readers: 0, writer: false, queue: WaitList::new() }),
            data: UnsafeCell::new(value),
        }
    }

    /// Go's `RLock`: shares the lock with other readers, waiting (without blocking the M)
    /// while a writer holds it or waits for it.
    pub fn read(&self) -> Acquire<'_, T, false> {
        Acquire { lock: self, key: None, done: false }
    }

    /// Go's `Lock`: takes the lock alone, waiting while readers or a writer hold it or others
    /// queued first.
    pub fn write(&self) -> Acquire<'_, T, true> {
        Acquire { lock: self, key: None, done: false }
    }

    /// Go's `TryRLock`: a read guard if no writer holds the lock and nobody waits.
    pub fn try_read(&self) -> Option<RwMutexReadGuard<'_, T>> {
        crate::checkdead::note_outside_use();
        self.state.lock().try_enter(false).then(|| RwMutexReadGuard { lock: self, _marker: PhantomData })
    }

    /// Go's `TryLock`: the write guard if nobody holds the lock and nobody waits.
    pub fn try_write(&self) -> Option<RwMutexWriteGuard<'_, T>> {
        crate::checkdead::note_outside_use();
        self.state.lock().try_enter(true).then(|| RwMutexWriteGuard { lock: self, _marker: PhantomData })
    }

    /// `read`, blocking the calling thread (for plain threads; inside a task it waits as
    /// [`crate::syscall`] does — prefer `read().await` there).
    pub fn read_blocking(&self) -> RwMutexReadGuard<'_, T> {
        block::block_on(self.read())
    }

    /// `write`, blocking the calling thread (see [`read_blocking`](Self::read_blocking)).
    pub fn write_blocking(&self) -> RwMutexWriteGuard<'_, T> {
        block::block_on(self.write())
    }

    /// The data, through a unique borrow: no locking needed.
    pub fn get_mut(&mut self) -> &mut T {
        // SAFETY: `&mut self` excludes every guard and every other access to the cell.
        self.data.with_mut(|p| unsafe { &mut *p })
    }

    fn unlock(&self, write: bool) {
        let wake = self.state.lock().release(write);
        wake.into_iter().for_each(Waker::wake);
    }
}

impl<T: fmt::Debug> fmt::Debug for RwMutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        f.debug_struct("RwMutex")
            .field("readers", &st.readers)
            .field("writer", &st.writer)
            .field("waiting", &st.queue.len())
            .finish_non_exhaustive()
    }
}

/// Future returned by [`RwMutex::read`] (`WRITE = false`) and [`RwMutex::write`] (`true`);
/// resolves to the guard. Dropping it while it waits leaves the queue (module doc).
#[must_use = "futures do nothing unless awaited"]
pub struct Acquire<'a, T, const WRITE: bool> {
    lock: &'a RwMutex<T>,
    key: Option<usize>,
    done: bool,
}

impl<'a, T> Future for Acquire<'a, T, false> {
    type Output = RwMutexReadGuard<'a, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let lock = self.lock;
        self.get_mut().poll_acquire(cx).map(|()| RwMutexReadGuard { lock, _marker: PhantomData })
    }
}

impl<'a, T> Future for Acquire<'a, T, true> {
    type Output = RwMutexWriteGuard<'a, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let lock = self.lock;
        self.get_mut().poll_acquire(cx).map(|()| RwMutexWriteGuard { lock, _marker: PhantomData })
    }
}

impl<T, const WRITE: bool> Acquire<'_, T, WRITE> {
    fn poll_acquire(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        assert!(!self.done, "RwMutex future polled after it returned its guard");
        // An uncontended acquire completes without parking: spend budget first (coop.rs). Not
        // once queued: a granted waiter must take its grant.
        if self.key.is_none() && crate::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        let mut st = self.lock.state.lock();
        match self.key {
            None => {
                if st.try_enter(WRITE) {
                    self.done = true;
                    return Poll::Ready(());
                }
                let waiter = Waiter { write: WRITE, waker: Some(cx.waker().clone()), granted: false };
                self.key = Some(st.queue.push_back(waiter));
            }
            Some(k) => {
                if st.queue.get_mut(k).granted {
                    st.queue.free(k);
                    self.key = None;
                    self.done = true;
                    return Poll::Ready(());
                }
                update_waker(&mut st.queue.get_mut(k).waker, cx);
            }
        }
        drop(st);
        let id = std::ptr::from_ref(self.lock).cast::<()>().addr() as u64;
        crate::task::wait::set(crate::task::wait::MUTEX, id, 0);
        Poll::Pending
    }
}

impl<T, const WRITE: bool> Drop for Acquire<'_, T, WRITE> {
    fn drop(&mut self) {
        let Some(k) = self.key.take() else { return };
        let wake = {
            let mut st = self.lock.state.lock();
            let granted = st.queue.free(k).granted;
            if granted {
                st.release(WRITE)
            } else {
                // Leaving the queue may let the waiters behind in (a writer at the head).
                st.dispatch()
            }
        };
        wake.into_iter().for_each(Waker::wake);
    }
}

impl<T, const WRITE: bool> fmt::Debug for Acquire<'_, T, WRITE> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire").field("write", &WRITE).field("queued", &self.key.is_some()).finish()
    }
}

/// A shared hold on an [`RwMutex`]: derefs to the data, releases on drop.
#[must_use = "the read lock is released as soon as the guard is dropped"]
pub struct RwMutexReadGuard<'a, T> {
    lock: &'a RwMutex<T>,
    /// `Sync` iff `T: Sync`; never `Send` for a `T: !Sync` (it hands out `&T`).
    _marker: PhantomData<&'a T>,
}

impl<T> Deref for RwMutexReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds a read lock: no writer exists until it is dropped, and
        // readers only read; the borrow lasts no longer than `&self`.
        self.lock.data.with(|p| unsafe { &*p })
    }
}

impl<T> Drop for RwMutexReadGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.unlock(false);
    }
}

impl<T: fmt::Debug> fmt::Debug for RwMutexReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// The sole hold on an [`RwMutex`]: derefs (mutably) to the data, releases on drop.
#[must_use = "the write lock is released as soon as the guard is dropped"]
pub struct RwMutexWriteGuard<'a, T> {
    lock: &'a RwMutex<T>,
    _marker: PhantomData<&'a mut T>,
}

impl<T> Deref for RwMutexWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the write lock: no other guard exists until it is dropped.
        self.lock.data.with(|p| unsafe { &*p })
    }
}

impl<T> DerefMut for RwMutexWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only borrow through the guard.
        self.lock.data.with_mut(|p| unsafe { &mut *p })
    }
}

impl<T> Drop for RwMutexWriteGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.unlock(true);
    }
}

impl<T: fmt::Debug> fmt::Debug for RwMutexWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
