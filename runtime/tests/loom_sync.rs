//! loom models of `gmprt_runtime::sync` (`runtime/src/sync/`): `WaitGroup`, `Mutex<T>` and
//! `Once`. No runtime is involved: the model's threads drive the futures by hand (a
//! `block_on` that parks the loom thread, or single polls), or use the blocking forms, which
//! park on the crate's loom-visible `ThreadParker`. Checks, in every interleaving:
//! * `WaitGroup`: a `done()` racing `wait()` never loses the wake-up (loom reports a deadlock
//!   otherwise), and everything done before `done()` is visible after `wait()` (loom cells);
//!   a pending `wait()` dropped while the counter reaches zero leaves the group consistent.
//! * `Mutex`: mutual exclusion (the data is a loom `UnsafeCell`: two owners at once, or an
//!   owner that does not happen-after the previous one, is a causality violation); lock, unlock
//!   and dropping a pending `lock()` future race without losing a wake-up or a hand-off, and
//!   the mutex ends unlocked with an empty queue.
//! * `Once`: concurrent callers run the initialiser exactly once and all see its effect; a
//!   cancelled runner lets a parked caller take over.
//!
//! Under loom every waiter counts as having waited past the 1 ms starvation threshold (loom
//! models cannot depend on real time; see `raw_mutex.rs`), so a woken waiter that loses to a
//! barger always switches the mutex to starvation mode, and the models reach the hand-off paths.
//!
//! Run with
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p gmprt-runtime --release --test loom_sync
//! ```
//! with no `LOOM_MAX_PREEMPTIONS`: every model here ends without a preemption bound (at most 6 s each
//! on the 2-core VM), so loom explores every interleaving it can make, and CI runs them so
//! (`EXHAUSTIVE` in `.ci/run`).
#![cfg(loom)]

use gmprt_runtime::sync::{Mutex, Once, WaitGroup};
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use loom::thread;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// Wakes a loom thread parked in [`block_on`].
struct Unpark(thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Drives `f` on this loom thread, parking between polls (loom reports a deadlock if a wake-up
/// is lost).
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        thread::park();
    }
}

/// Polls `f` once with `waker`.
fn poll_once<F: Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(waker))
}

/// A plain loom cell, written by one thread and read by another after a sync operation: loom
/// reports a causality violation if the operation did not order them.
struct Cell(UnsafeCell<usize>);

// SAFETY: accesses are ordered by the primitive under test; loom checks exactly that.
unsafe impl Sync for Cell {}

impl Cell {
    fn new() -> Self {
        Cell(UnsafeCell::new(0))
    }
    fn set(&self, v: usize) {
        // SAFETY: see the Sync impl (loom verifies the ordering).
        self.0.with_mut(|p| unsafe { *p = v })
    }
    fn get(&self) -> usize {
        // SAFETY: as above.
        self.0.with(|p| unsafe { *p })
    }
}

/// A mutex whose guards can move to another loom thread (which needs `'static`); free it with
/// [`reclaim`] once every thread that borrowed it has been joined.
fn leak<T>(t: T) -> &'static T {
    Box::leak(Box::new(t))
}

/// Frees what [`leak`] returned.
///
/// # Safety
/// No borrow of `r` may be used afterwards (every thread that had one has been joined).
unsafe fn reclaim<T>(r: &'static T) {
    // SAFETY: `r` came from `Box::leak` in `leak`, and the caller guarantees no borrow remains.
    drop(unsafe { Box::from_raw(r as *const T as *mut T) });
}

// ---------------------------------------------------------------------------------------------
// WaitGroup
// ---------------------------------------------------------------------------------------------

/// Two `done()`s race a waiter: it is woken, and it sees both workers' writes.
#[test]
fn waitgroup_done_races_wait() {
    loom::model(|| {
        let wg = WaitGroup::new();
        let cells = Arc::new([Cell::new(), Cell::new()]);
        wg.add(2);
        let workers: Vec<_> = (0..2)
            .map(|i| {
                let (wg, cells) = (wg.clone(), cells.clone());
                thread::spawn(move || {
                    cells[i].set(i + 1);
                    wg.done();
                })
            })
            .collect();
        block_on(wg.wait());
        assert_eq!((cells[0].get(), cells[1].get()), (1, 2));
        for w in workers {
            w.join().unwrap();
        }
    });
}

/// Two waiters (one through `wait_blocking`, the crate's own thread parker) and one `done()`.
#[test]
fn waitgroup_two_waiters_one_done() {
    loom::model(|| {
        let wg = WaitGroup::new();
        let cell = Arc::new(Cell::new());
        wg.add(1);
        let waiter = {
            let (wg, cell) = (wg.clone(), cell.clone());
            thread::spawn(move || {
                wg.wait_blocking();
                assert_eq!(cell.get(), 7);
            })
        };
        let worker = {
            let (wg, cell) = (wg.clone(), cell.clone());
            thread::spawn(move || {
                cell.set(7);
                wg.done();
            })
        };
        block_on(wg.wait());
        assert_eq!(cell.get(), 7);
        waiter.join().unwrap();
        worker.join().unwrap();
    });
}

/// A queued `wait()` is dropped while the counter reaches zero (it may have been notified or
/// not); then the group is reused.
#[test]
fn waitgroup_pending_wait_dropped_racing_done() {
    loom::model(|| {
        let wg = WaitGroup::new();
        wg.add(1);
        let worker = {
            let wg = wg.clone();
            thread::spawn(move || wg.done())
        };
        let waker = Waker::noop();
        let mut w = wg.wait();
        // Ready if the worker already finished; else queued, and dropped below.
        let _ = poll_once(&mut w, waker);
        drop(w);
        worker.join().unwrap();
        // Reuse: a fresh wait returns at once, and a second round works.
        block_on(wg.wait());
        wg.add(1);
        wg.done();
        block_on(wg.wait());
    });
}

// ---------------------------------------------------------------------------------------------
// Mutex
// ---------------------------------------------------------------------------------------------

/// Two threads lock, increment through the guard and unlock while the main thread holds the
/// lock at the start: mutual exclusion, every increment kept, and (since under loom a woken
/// waiter that loses to a barger starts starvation mode) hand-offs along some paths.
#[test]
fn mutex_contended_lock_unlock() {
    loom::model(|| {
        let m = Arc::new(Mutex::new(0usize));
        let g = m.try_lock().expect("fresh mutex");
        let lockers: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                thread::spawn(move || {
                    let mut g = block_on(m.lock());
                    *g += 1;
                })
            })
            .collect();
        drop(g);
        for l in lockers {
            l.join().unwrap();
        }
        assert!(!m.is_locked() && !m.is_starving() && m.waiters() == 0);
        assert_eq!(*m.try_lock().unwrap(), 2);
    });
}

/// One thread locks twice in a row (it re-locks the moment it unlocks: Go's barging newcomer)
/// while another waits: every lock is granted exactly once, through barging, wake-ups or
/// hand-offs, with mutual exclusion.
#[test]
fn mutex_relocker_vs_waiter() {
    loom::model(|| {
        let m = Arc::new(Mutex::new(0usize));
        let g = m.try_lock().unwrap();
        let relocker = {
            let m = m.clone();
            thread::spawn(move || {
                for _ in 0..2 {
                    *block_on(m.lock()) += 1;
                }
            })
        };
        let waiter = {
            let m = m.clone();
            thread::spawn(move || {
                *block_on(m.lock()) += 10;
            })
        };
        drop(g);
        relocker.join().unwrap();
        waiter.join().unwrap();
        assert!(!m.is_locked() && !m.is_starving() && m.waiters() == 0);
        assert_eq!(*m.try_lock().unwrap(), 12);
    });
}

/// A barger (`try_lock`) races a queued waiter being woken; then starvation mode hands off.
#[test]
fn mutex_barger_races_woken_waiter() {
    loom::model(|| {
        let m = Arc::new(Mutex::new(0usize));
        let g = m.try_lock().unwrap();
        let waiter = {
            let m = m.clone();
            thread::spawn(move || {
                *block_on(m.lock()) += 1;
            })
        };
        let barger = {
            let m = m.clone();
            thread::spawn(move || {
                if let Some(mut g) = m.try_lock() {
                    *g += 10;
                }
            })
        };
        drop(g);
        waiter.join().unwrap();
        barger.join().unwrap();
        assert!(!m.is_locked() && !m.is_starving() && m.waiters() == 0);
        let v = *m.try_lock().unwrap();
        assert!(v == 1 || v == 11, "{v}");
    });
}

/// A pending `lock()` future is dropped while the owner unlocks: whatever the order (dropped
/// while waiting, after being woken, or after being handed the mutex), the next waiter gets
/// the mutex and it ends unlocked.
#[test]
fn mutex_cancelled_waiter_races_unlock() {
    loom::model(|| {
        let m = leak(Mutex::new(0usize));
        let g = m.try_lock().unwrap();
        // Main queues a waiter by hand; a second waiter blocks on another thread.
        let waker = Waker::noop();
        let mut cancelled = m.lock();
        assert!(poll_once(&mut cancelled, waker).is_pending());
        let next = thread::spawn(move || {
            *block_on(m.lock()) += 1;
        });
        let owner = thread::spawn(move || drop(g));
        drop(cancelled);
        owner.join().unwrap();
        next.join().unwrap();
        assert!(!m.is_locked() && !m.is_starving() && m.waiters() == 0);
        assert_eq!(*m.try_lock().unwrap(), 1);
        // SAFETY: both threads are joined and every guard and future is gone.
        unsafe { reclaim(m) };
    });
}

/// Starvation mode set up by hand, then the hand-off to the head races that head's
/// cancellation: a granted, dropped waiter must pass the mutex on to the next waiter.
#[test]
fn mutex_handoff_races_cancel() {
    loom::model(|| {
        let m = leak(Mutex::new(0usize));
        let waker = Waker::noop();
        let holder = m.try_lock().unwrap();
        let mut head = m.lock();
        assert!(poll_once(&mut head, waker).is_pending());
        drop(holder); // normal mode: head woken
        let barger = m.try_lock().expect("normal mode lets a newcomer barge");
        assert!(poll_once(&mut head, waker).is_pending()); // lost: starvation mode (loom)
        assert!(m.is_starving());
        let mut next = m.lock();
        assert!(poll_once(&mut next, waker).is_pending());
        // The barger's unlock hands off to `head` while `head` is dropped.
        let unlocker = thread::spawn(move || drop(barger));
        drop(head);
        unlocker.join().unwrap();
        // Either way `next` owns the mutex now (hand-off) or gets it when polled.
        let mut g = block_on(next);
        *g += 1;
        drop(g);
        assert!(!m.is_locked() && !m.is_starving() && m.waiters() == 0);
        assert_eq!(*m.try_lock().unwrap(), 1);
        // SAFETY: the unlocker is joined and every guard and future is gone.
        unsafe { reclaim(m) };
    });
}

// ---------------------------------------------------------------------------------------------
// Once
// ---------------------------------------------------------------------------------------------

/// Three callers (two blocking, one async) race: one initialiser runs, all see its write.
#[test]
fn once_concurrent_callers() {
    loom::model(|| {
        let once = Arc::new(Once::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let cell = Arc::new(Cell::new());
        let callers: Vec<_> = (0..2)
            .map(|_| {
                let (once, runs, cell) = (once.clone(), runs.clone(), cell.clone());
                thread::spawn(move || {
                    once.call_once(|| {
                        runs.fetch_add(1, Relaxed);
                        cell.set(42);
                    });
                    assert_eq!(cell.get(), 42);
                })
            })
            .collect();
        block_on(once.call_once_async(|| async {
            runs.fetch_add(1, Relaxed);
            cell.set(42);
        }));
        assert_eq!(cell.get(), 42);
        for c in callers {
            c.join().unwrap();
        }
        assert_eq!(runs.load(SeqCst), 1);
        assert!(once.is_completed());
    });
}

/// The runner's future is dropped mid-initialiser while another caller parks: the other caller
/// takes over and runs its own initialiser (a cancelled initialiser is not "done").
#[test]
fn once_cancelled_runner_races_waiter() {
    loom::model(|| {
        let once = Arc::new(Once::new());
        let waker = Waker::noop();
        let mut runner = Box::pin(once.call_once_async(std::future::pending::<()>));
        assert!(poll_once(&mut runner, waker).is_pending());
        let other = {
            let once = once.clone();
            thread::spawn(move || {
                let ran = Arc::new(AtomicUsize::new(0));
                let r = ran.clone();
                block_on(once.call_once_async(|| async move {
                    r.fetch_add(1, Relaxed);
                }));
                ran.load(Relaxed)
            })
        };
        drop(runner);
        assert_eq!(other.join().unwrap(), 1, "the waiting caller must take over");
        assert!(once.is_completed());
    });
}

// ---------------------------------------------------------------------------------------------
// RwMutex
// ---------------------------------------------------------------------------------------------

/// A writer races two readers: the writer's write is never seen half-done (a loom cell, so a
/// reader overlapping the writer is a reported race), each reader sees 0 or 1, and nobody is
/// left waiting (loom fails a model in which every thread blocks).
#[test]
fn rwmutex_writer_races_two_readers() {
    loom::model(|| {
        let m = Arc::new(gmprt_runtime::sync::RwMutex::new(0usize));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                thread::spawn(move || {
                    let v = *block_on(m.read());
                    assert!(v <= 1);
                })
            })
            .collect();
        *block_on(m.write()) += 1;
        for r in readers {
            r.join().unwrap();
        }
        assert_eq!(*block_on(m.read()), 1);
    });
}

/// A writer queued behind a held read lock is cancelled while another reader queues behind
/// it: that reader must get in although the first read lock is still held — the cancellation
/// dispatches (checked to fail, as a deadlock, when it does not).
#[test]
fn rwmutex_cancelled_writer_lets_readers_in() {
    loom::model(|| {
        let m = leak(gmprt_runtime::sync::RwMutex::new(()));
        let r1 = m.try_read().expect("free");
        let mut w = Box::pin(m.write());
        assert!(poll_once(&mut w, Waker::noop()).is_pending());
        let reader = thread::spawn(move || drop(block_on(m.read())));
        let canceller = thread::spawn(move || drop(w));
        canceller.join().unwrap();
        reader.join().unwrap();
        drop(r1);
        assert!(m.try_write().is_some(), "nothing is held or waiting at the end");
        // SAFETY: both threads that borrowed `m` were joined; no guard is alive.
        unsafe { reclaim(m) };
    });
}
