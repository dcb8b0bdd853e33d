//! `Mutex<T>`: an async mutual-exclusion lock with Go's fairness rules, owning its data.
//!
//! The lock protocol — normal mode with barging, starvation mode with direct hand-off, the
//! FIFO queue and the cancellation rules — lives in [`raw_mutex`](super::raw_mutex); this file
//! is the typed wrapper: the data cell, [`MutexGuard`], and the [`Lock`] future.
//!
//! # Invariant
//! The data is accessed only through a `MutexGuard` (or `&mut Mutex`), and a guard exists only
//! while its holder owns `LOCKED` in the raw mutex; so at most one guard exists at a time.

use super::block;
use super::raw_mutex::RawMutex;
use crate::loom::cell::UnsafeCell;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll};

/// Go's `sync.Mutex`, for tasks, owning the data it protects.
///
/// * [`lock`](Mutex::lock)`.await` waits without blocking the M; [`try_lock`](Mutex::try_lock)
///   never waits; [`lock_blocking`](Mutex::lock_blocking) is for plain threads.
/// * The [`MutexGuard`] unlocks on drop. It may be held across `.await`s and moved between
///   tasks' threads (it is `Send` when `T` is).
/// * **Fairness, as in Go.** In *normal mode* waiters queue FIFO but a newly arriving locker
///   may take an unlocked mutex before the woken waiter does (barging: better throughput).
///   When a woken waiter loses after having waited more than
///   [`STARVATION_THRESHOLD`](super::STARVATION_THRESHOLD) (1 ms), the mutex enters
///   *starvation mode*: unlock hands ownership straight to the head of the queue, and
///   newcomers queue behind it, until a receiver has waited less than 1 ms or the queue is
///   empty.
/// * **Cancellation-safe.** Dropping a pending `lock()` future removes it from the queue; if
///   the mutex had already been handed to it, it is passed on to the next waiter (or
///   unlocked), and if it had been woken to compete, the wake-up is passed on. See
///   `raw_mutex.rs`, "Cancellation".
/// * No poisoning: a panic while holding the guard unlocks the mutex (Go has no poisoning).
/// * Re-locking from the task that holds the guard deadlocks, as in Go.
///
/// ```
/// use gmprt_runtime::{sync::Mutex, Runtime};
/// use std::sync::Arc;
///
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// let total = rt.block_on(async {
///     let m = Arc::new(Mutex::new(0u64));
///     let tasks: Vec<_> = (0..100)
///         .map(|_| {
///             let m = m.clone();
///             gmprt_runtime::spawn(async move {
///                 *m.lock().await += 1;
///             })
///         })
///         .collect();
///     for t in tasks {
///         t.await.unwrap();
///     }
///     let n = *m.lock().await;
///     n
/// });
/// assert_eq!(total, 100);
/// ```
pub struct Mutex<T> {
    raw: RawMutex,
    data: UnsafeCell<T>,
}

// SAFETY: the mutex hands the `T` to one thread at a time (moving it between threads, hence
// `T: Send`), and the raw mutex's state is itself thread-safe.
unsafe impl<T: Send> Send for Mutex<T> {}
// SAFETY: `&Mutex<T>` gives access to the `T` only through a guard, and at most one guard
// exists at a time (module invariant), so sharing the mutex only ever *moves* access to the
// `T` between threads: `T: Send` suffices, as for `std::sync::Mutex`.
unsafe impl<T: Send> Sync for Mutex<T> {}

impl<T> Mutex<T> {
    /// A new, unlocked mutex holding `value`. `const` (usable in a `static`) except in loom
    /// builds.
    #[cfg(not(loom))]
    pub const fn new(value: T) -> Self {
        Mutex { raw: RawMutex::new(), data: UnsafeCell::new(value) }
    }

    /// A new, unlocked mutex holding `value`.
    #[cfg(loom)]
    pub fn new(value: T) -> Self {
        Mutex { raw: RawMutex::new(), data: UnsafeCell::new(value) }
    }

    /// Locks the mutex, waiting (without blocking the M) while another holds it. The future
    /// queues in FIFO order on its first `Pending`; dropping it leaves the queue (and passes
    /// on a hand-off it may have received).
    pub fn lock(&self) -> Lock<'_, T> {
        Lock { mutex: self, key: None, done: false }
    }

    /// Locks the mutex if it is unlocked now and not in starvation mode (Go's `TryLock`: in
    /// starvation mode the mutex belongs to the queue's head even between owners).
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        crate::checkdead::note_outside_use();
        self.raw.try_lock().then(|| MutexGuard::new(self))
    }

    /// Locks the mutex, blocking the calling thread. Meant for plain threads; inside a task it
    /// waits like [`crate::syscall`], giving up the M's P — prefer `lock().await` there.
    pub fn lock_blocking(&self) -> MutexGuard<'_, T> {
        block::block_on(self.lock())
    }

    /// The data, through a unique borrow: no locking needed.
    pub fn get_mut(&mut self) -> &mut T {
        // SAFETY: `&mut self` excludes every guard and every other access to the cell.
        self.data.with_mut(|p| unsafe { &mut *p })
    }

    /// Consumes the mutex and returns the data.
    pub fn into_inner(self) -> T {
        let this = ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again, so each field is moved out of it
        // exactly once: `raw` here (and dropped normally), the cell below.
        drop(unsafe { std::ptr::read(&this.raw) });
        // SAFETY: as above; the cell is kept in `ManuallyDrop` so that the `T` read out of it
        // is dropped only by our caller, never by the cell.
        let cell = ManuallyDrop::new(unsafe { std::ptr::read(&this.data) });
        // SAFETY: we own the cell exclusively; the value is read out once and the cell is not
        // dropped (above).
        cell.with_mut(|p| unsafe { std::ptr::read(p) })
    }

    /// Is the mutex in starvation mode now? For tests and diagnostics.
    #[doc(hidden)]
    pub fn is_starving(&self) -> bool {
        self.raw.is_starving()
    }

    /// Is the mutex locked now (by a guard, or handed to a waiter)? For tests and diagnostics.
    #[doc(hidden)]
    pub fn is_locked(&self) -> bool {
        self.raw.is_locked()
    }

    /// Starvation-mode hand-offs (unlocks that gave the mutex straight to the queue's head)
    /// since the mutex was created. For tests and diagnostics.
    #[doc(hidden)]
    pub fn handoffs(&self) -> u64 {
        self.raw.handoffs()
    }

    /// `lock()` futures queued now. For tests and diagnostics.
    #[doc(hidden)]
    pub fn waiters(&self) -> usize {
        self.raw.waiters()
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T> From<T> for Mutex<T> {
    fn from(value: T) -> Self {
        Mutex::new(value)
    }
}

impl<T: fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.try_lock() {
            Some(g) => d.field("data", &&*g),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.field("starving", &self.is_starving()).finish_non_exhaustive()
    }
}

/// Future returned by [`Mutex::lock`]; resolves to a [`MutexGuard`].
#[must_use = "futures do nothing unless awaited"]
pub struct Lock<'a, T> {
    mutex: &'a Mutex<T>,
    /// Our slot in the raw mutex's queue, once queued.
    key: Option<usize>,
    /// The guard has been returned.
    done: bool,
}

impl<'a, T> Future for Lock<'a, T> {
    type Output = MutexGuard<'a, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<MutexGuard<'a, T>> {
        let this = self.get_mut();
        assert!(!this.done, "Mutex::lock future polled after it returned its guard");
        // An uncontended lock completes without parking: spend budget first (coop.rs), so a
        // task locking in a loop still lets the P's other tasks run. Not once queued: a queued
        // waiter may have been handed the lock and must take it.
        if this.key.is_none() && crate::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        match this.mutex.raw.poll_lock(&mut this.key, cx) {
            Poll::Ready(()) => {
                this.done = true;
                Poll::Ready(MutexGuard::new(this.mutex))
            }
            Poll::Pending => {
                // Queued behind the holder: what a dump and the deadlock check read.
                crate::task::wait::set(
                    crate::task::wait::MUTEX,
                    std::ptr::from_ref(this.mutex).cast::<()>().addr() as u64,
                    0,
                );
                Poll::Pending
            }
        }
    }
}

impl<T> Drop for Lock<'_, T> {
    fn drop(&mut self) {
        if let Some(k) = self.key.take() {
            self.mutex.raw.cancel_lock(k);
        }
    }
}

impl<T> fmt::Debug for Lock<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock").field("queued", &self.key.is_some()).finish_non_exhaustive()
    }
}

/// Proof of ownership of a [`Mutex`]: derefs to the data, unlocks on drop (handing off to the
/// head waiter in starvation mode).
#[must_use = "the mutex unlocks as soon as the guard is dropped"]
pub struct MutexGuard<'a, T> {
    mutex: &'a Mutex<T>,
    /// `Send` iff `T: Send`; `Sync` iff `T: Sync` (a shared guard hands out `&T`).
    _marker: PhantomData<&'a mut T>,
}

impl<'a, T> MutexGuard<'a, T> {
    /// Contract: the caller owns the raw mutex.
    fn new(mutex: &'a Mutex<T>) -> Self {
        MutexGuard { mutex, _marker: PhantomData }
    }
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard owns the mutex, so no other guard exists and nothing writes the
        // data; the borrow lasts no longer than `&self`, so not past the unlock in `drop`.
        self.mutex.data.with(|p| unsafe { &*p })
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only borrow through the guard.
        self.mutex.data.with_mut(|p| unsafe { &mut *p })
    }
}

impl<T> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        self.mutex.raw.unlock();
    }
}

impl<T: fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: fmt::Display> fmt::Display for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}
