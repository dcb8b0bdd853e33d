//! loom models of the task state word (`task/state.rs`) and the poll harness (`task/core.rs`,
//! `task/waker.rs`): a wake from another thread racing a poll, a completion, or the last
//! release of the task. Checks, in every interleaving:
//! * a wake during a poll causes exactly one more poll (counted with a loom atomic);
//! * a wake racing (or following) completion causes no poll and no crash;
//! * every task is freed exactly once (a task cell holds a count on the scheduler; a double
//!   free would trip loom's `UnsafeCell` tracking or crash first), and none leaks.
//!
//! The model threads play the Ms through `gmprt_runtime::loom_hooks` (no M threads), so the
//! state space is the task protocol's own; the last model instead uses the real `Runtime` for
//! a wake from a plain thread racing shutdown (future dropped exactly once: the double release
//! fixed in 7ad0462 shows up here as a loom `UnsafeCell` race on the owned-list links). Run with
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
//!     cargo test -p gmprt-runtime --release --test loom_task
//! ```
#![cfg(loom)]

use gmprt_runtime::loom_hooks::Scheduler;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::sync::mpsc;
use loom::thread;
use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;

/// First poll hands a waker to another thread, which wakes it while the poll finishes
/// (`owned.insert`, `transition_to_idle`) or after. Exactly two polls in every interleaving.
#[test]
fn wake_during_poll_repolls_exactly_once() {
    loom::model(|| {
        let (s, _) = Scheduler::new(1); // no Ps: this thread plays the M
        let polls = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        let handle = {
            let polls = polls.clone();
            s.spawn(poll_fn(move |cx| {
                let n = polls.fetch_add(1, SeqCst) + 1;
                if n == 1 {
                    tx.send(cx.waker().clone()).unwrap();
                    Poll::Pending
                } else {
                    Poll::Ready(n)
                }
            }))
        };
        let waker = thread::spawn(move || rx.recv().unwrap().wake());

        // Poll 1; also poll 2 if the wake landed during poll 1 (re-queued on the global queue).
        let first = s.run_global();
        waker.join().unwrap();
        // Poll 2 if the wake came after poll 1 parked the task.
        let second = s.run_global();

        assert_eq!(first + second, 2, "first {first}, second {second}");
        assert_eq!(polls.load(SeqCst), 2);
        assert!(handle.is_finished());
        assert_eq!(handle.join(), Ok(2));
        assert_eq!(s.live_tasks(), 0, "a task leaked");
    });
}

/// The only poll hands a waker out and completes; the other thread wakes (consuming the
/// waker) racing the completion. No second poll, nothing re-queued, the task freed once.
#[test]
fn wake_racing_completion_is_noop() {
    loom::model(|| {
        let (s, _) = Scheduler::new(1); // no Ps: this thread plays the M
        let polls = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        let handle = {
            let polls = polls.clone();
            s.spawn(poll_fn(move |cx| {
                polls.fetch_add(1, SeqCst);
                tx.send(cx.waker().clone()).unwrap();
                Poll::Ready(7u32)
            }))
        };
        let waker = thread::spawn(move || {
            let w = rx.recv().unwrap();
            w.wake_by_ref();
            w.wake();
        });

        assert_eq!(s.run_global(), 1);
        waker.join().unwrap();
        assert_eq!(s.run_global(), 0, "a wake after completion re-queued the task");
        assert_eq!(polls.load(SeqCst), 1);
        assert_eq!(handle.join(), Ok(7));
        assert_eq!(s.live_tasks(), 0, "a task leaked");
    });
}

/// A completed task, one stale waker woken on another thread while the `JoinHandle` is
/// dropped: whichever releases the last reference frees the task (the wake path's
/// `WakeAction::Dealloc`), exactly once.
#[test]
fn wake_after_completion_races_last_release() {
    loom::model(|| {
        let (s, _) = Scheduler::new(1); // no Ps: this thread plays the M
        let polls = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        let handle = {
            let polls = polls.clone();
            s.spawn(poll_fn(move |cx| {
                polls.fetch_add(1, SeqCst);
                tx.send(cx.waker().clone()).unwrap();
                Poll::Ready(())
            }))
        };
        assert_eq!(s.run_global(), 1);
        let stale = rx.recv().unwrap();

        let waker = thread::spawn(move || stale.wake());
        drop(handle);
        waker.join().unwrap();

        assert_eq!(s.run_global(), 0);
        assert_eq!(polls.load(SeqCst), 1);
        assert_eq!(s.live_tasks(), 0, "a task leaked");
    });
}

/// A future that counts its drops.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// The real runtime (procs = 1): a task parks after handing its waker to a plain thread, which
/// wakes it while `Runtime::drop` shuts down. The wake may land before the flag (an M or the
/// shutdown drain cancels the queued task), or after it (`inject` drains and cancels the task
/// itself) while shutdown walks the owned-task list. The future must be dropped exactly once.
#[test]
fn wake_from_outside_races_shutdown() {
    loom::model(|| {
        let rt = gmprt_runtime::Runtime::builder().procs(1).loom_prestart_ms(0).build().unwrap();
        let drops = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        let guard = DropCount(drops.clone());
        drop(rt.spawn(poll_fn(move |cx| {
            let _keep = &guard;
            let _ = tx.send(cx.waker().clone());
            Poll::<()>::Pending
        })));
        let w = rx.recv().unwrap(); // polled once: parked (or about to)
        let waker = thread::spawn(move || w.wake());
        drop(rt);
        waker.join().unwrap();
        drop(rx); // wakers of any later polls
        assert_eq!(drops.load(SeqCst), 1, "future dropped {} times", drops.load(SeqCst));
    });
}

/// A task's own `yield_now` does not wake: the harness re-queues the task when the poll ends,
/// with one transition (`transition_to_requeue`). A wake from another thread racing it (during
/// the poll, between the poll and the re-queue, or after) adds no poll: exactly two polls in
/// every interleaving, the task freed once.
#[test]
fn self_yield_racing_a_wake_repolls_exactly_once() {
    loom::model(|| {
        let (s, _) = Scheduler::new(1); // no Ps: this thread plays the M
        let polls = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        let handle = {
            let polls = polls.clone();
            s.spawn(async move {
                polls.fetch_add(1, SeqCst);
                let w = poll_fn(|cx| Poll::Ready(cx.waker().clone())).await;
                tx.send(w).unwrap();
                gmprt_runtime::yield_now().await;
                polls.fetch_add(1, SeqCst) + 1
            })
        };
        let waker = thread::spawn(move || rx.recv().unwrap().wake());
        // Poll 1 yields; the re-queued task (global queue: no P) is polled again in the loop.
        let mut ran = s.run_global();
        waker.join().unwrap();
        ran += s.run_global();
        assert_eq!(ran, 2, "polls run");
        assert_eq!(handle.join(), Ok(2));
        assert_eq!(polls.load(SeqCst), 2);
        assert_eq!(s.live_tasks(), 0, "a task leaked");
    });
}

/// An abort racing a self-yield: the task is cancelled (during the poll: at the re-queue; while
/// queued: at its next dequeue) or finishes first; never polled after the abort is seen, never
/// lost, freed once.
#[test]
fn self_yield_racing_an_abort() {
    loom::model(|| {
        let (s, _) = Scheduler::new(1); // no Ps: this thread plays the M
        let polls = Arc::new(AtomicUsize::new(0));
        let handle = {
            let polls = polls.clone();
            Arc::new(s.spawn(async move {
                polls.fetch_add(1, SeqCst);
                gmprt_runtime::yield_now().await;
                polls.fetch_add(1, SeqCst) + 1
            }))
        };
        let aborter = {
            let handle = handle.clone();
            thread::spawn(move || handle.abort())
        };
        s.run_global();
        aborter.join().unwrap();
        s.run_global();
        let handle = Arc::try_unwrap(handle).unwrap_or_else(|_| panic!("the aborter kept its clone"));
        match handle.join() {
            Ok(n) => assert_eq!((n, polls.load(SeqCst)), (2, 2)),
            Err(gmprt_runtime::JoinError::Cancelled) => assert!(polls.load(SeqCst) <= 2),
            Err(e) => panic!("unexpected {e:?}"),
        }
        assert_eq!(s.live_tasks(), 0, "a task leaked");
    });
}
