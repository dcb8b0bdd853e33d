//! loom models of the `JoinHandle` hand-off (`task/join.rs`, the `JOIN_INTEREST` /
//! `JOIN_WAKER` rules in `task/state.rs`, `complete` in `task/core.rs`). A task completes on one
//! thread while its handle is dropped, awaited, or aborted on another. Checks, in every
//! interleaving:
//! * the output (a type whose `Drop` bumps a loom counter) is dropped exactly once, by the
//!   handle's owner or by the runtime, never both, never neither;
//! * the joiner's waker slot (a loom `UnsafeCell`) is never accessed by both sides at once;
//! * a blocked `join()` is always woken (loom reports a deadlock otherwise);
//! * the task is freed exactly once and none leaks.
//!
//! The main model thread plays the M through `gmprt_runtime::loom_hooks`. Run with
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p gmprt-runtime --release --test loom_join
//! ```
//! with no `LOOM_MAX_PREEMPTIONS`: every model here ends without a preemption bound (under a second each
//! on the 2-core VM), so loom explores every interleaving it can make, and CI runs them so
//! (`EXHAUSTIVE` in `.ci/run`).
#![cfg(loom)]

use gmprt_runtime::loom_hooks::Scheduler;
use gmprt_runtime::JoinError;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::{Arc, Mutex as StdMutex};
use std::task::{Context, Poll, Waker};

/// A task output that counts its drops.
#[derive(Debug)]
struct Out(Arc<AtomicUsize>);

impl Drop for Out {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// The handle is dropped on another thread while the task completes here. The task also hands
/// out a waker, which keeps its cell alive past both: so the output must be dropped by the
/// handle or the completer, not merely when the cell is freed.
#[test]
fn join_handle_drop_races_completion() {
    loom::model(|| {
        let (s, _) = Scheduler::new(1);
        let drops = Arc::new(AtomicUsize::new(0));
        let kept: Arc<StdMutex<Option<Waker>>> = Arc::default();
        let handle = {
            let (drops, kept) = (drops.clone(), kept.clone());
            s.spawn(poll_fn(move |cx| {
                *kept.lock().unwrap() = Some(cx.waker().clone());
                Poll::Ready(Out(drops.clone()))
            }))
        };
        let dropper = thread::spawn(move || drop(handle));
        assert_eq!(s.run_global(), 1);
        dropper.join().unwrap();
        assert_eq!(drops.load(SeqCst), 1, "output dropped {} times", drops.load(SeqCst));
        assert_eq!(s.live_tasks(), 1); // the kept waker's
        drop(kept.lock().unwrap().take());
        assert_eq!(drops.load(SeqCst), 1);
        assert_eq!(s.live_tasks(), 0, "a task leaked");
    });
}

/// As above, but the handle was polled first, so it has stored a waker (`JOIN_WAKER` set): the
/// completing side reads the waker slot while the dropping side wants to clear it.
#[test]
fn join_handle_with_waker_drop_races_completion() {
    loom::model(|| {
        let (s, _) = Scheduler::new(1);
        let drops = Arc::new(AtomicUsize::new(0));
        let mut handle = {
            let drops = drops.clone();
            s.spawn(async move { Out(drops) })
        };
        let mut cx = Context::from_waker(Waker::noop());
        assert!(Pin::new(&mut handle).poll(&mut cx).is_pending());
        let dropper = thread::spawn(move || drop(handle));
        assert_eq!(s.run_global(), 1);
        dropper.join().unwrap();
        assert_eq!(drops.load(SeqCst), 1, "output dropped {} times", drops.load(SeqCst));
        assert_eq!(s.live_tasks(), 0, "a task leaked");
    });
}

/// Another thread blocks in `JoinHandle::join` (which polls the handle, stores a thread-parker
/// waker and sleeps) while the task completes here. The joiner always wakes, gets the output,
/// and the output is dropped exactly once (by the joiner).
#[test]
fn join_awaited_races_completion() {
    loom::model(|| {
        let (s, _) = Scheduler::new(1);
        let drops = Arc::new(AtomicUsize::new(0));
        let handle = {
            let drops = drops.clone();
            s.spawn(async move { Out(drops) })
        };
        let joiner = {
            let drops = drops.clone();
            thread::spawn(move || {
                let out = handle.join().expect("task failed");
                assert_eq!(drops.load(SeqCst), 0, "output dropped before the joiner got it");
                drop(out);
            })
        };
        assert_eq!(s.run_global(), 1);
        joiner.join().unwrap();
        assert_eq!(drops.load(SeqCst), 1, "output dropped {} times", drops.load(SeqCst));
        assert_eq!(s.live_tasks(), 0, "a task leaked");
    });
}

/// `abort()` on another thread races the task's only poll. The joiner gets the output or
/// `Cancelled`; either way the output is dropped exactly once and the future is polled at most
/// once.
#[test]
fn abort_races_completion() {
    loom::model(|| {
        let (s, _) = Scheduler::new(1);
        let drops = Arc::new(AtomicUsize::new(0));
        let polls = Arc::new(AtomicUsize::new(0));
        let handle = {
            let drops = drops.clone();
            let polls = polls.clone();
            s.spawn(async move {
                polls.fetch_add(1, SeqCst);
                Out(drops)
            })
        };
        let aborter = thread::spawn(move || {
            handle.abort();
            handle
        });
        // The task itself, and the re-queue of an abort that found it parked or queued.
        s.run_global();
        let handle = aborter.join().unwrap();
        s.run_global();
        let polled = polls.load(SeqCst);
        assert!(polled <= 1);
        match handle.join() {
            Ok(out) => {
                assert_eq!(polled, 1);
                drop(out);
            }
            Err(JoinError::Cancelled) => assert_eq!(polled, 0, "cancelled after running"),
            Err(e) => panic!("{e}"),
        }
        assert_eq!(drops.load(SeqCst), polled, "output dropped {} times", drops.load(SeqCst));
        assert_eq!(s.live_tasks(), 0, "a task leaked");
    });
}
