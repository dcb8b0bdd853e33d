//! `gmprt::runtime::sync`: `WaitGroup`, `Mutex<T>` (mutual exclusion, Go's starvation mode and
//! FIFO hand-off, cancellation of queued lockers), `Once` and `RwMutex`, across tasks and threads.
//!
//! Everything synchronises on events (wait groups, joins, queue lengths), never on sleeps. The
//! one place real time matters — a waiter must have waited more than 1 ms before starvation
//! mode can start — is driven by hand: the test polls the lock futures itself, holds the lock
//! while it waits out the threshold as measured by `Instant`, and asserts only the mode
//! switch and the order of ownership, never a timing bound.
//!
//! One test binary, one file per concern; the helpers below are shared by all of them:
//! * `waitgroup.rs`: `WaitGroup`;
//! * `mutex.rs`: `Mutex<T>`'s mutual exclusion and cancellation of queued lockers;
//! * `starvation.rs`: `Mutex<T>`'s starvation mode and FIFO hand-off;
//! * `once.rs`: `Once`; `rwmutex.rs`: `RwMutex`.

#[path = "../common/mod.rs"]
mod common;
use common::*;
use gmprt::runtime::sync::{Mutex, Once, WaitGroup, STARVATION_THRESHOLD};
use gmprt::runtime::JoinError;
use gmprt::yield_now;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A waker that counts its wakes, for futures polled by hand.
#[derive(Default)]
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A future polled by hand, with its own counting waker.
struct Manual<F> {
    fut: Pin<Box<F>>,
    wakes: Arc<CountingWaker>,
    waker: Waker,
}

impl<F: Future> Manual<F> {
    fn new(fut: F) -> Self {
        let wakes = Arc::new(CountingWaker::default());
        Manual { fut: Box::pin(fut), waker: Waker::from(wakes.clone()), wakes }
    }
    fn poll(&mut self) -> Poll<F::Output> {
        self.fut.as_mut().poll(&mut Context::from_waker(&self.waker))
    }
    #[track_caller]
    fn ready(&mut self) -> F::Output {
        match self.poll() {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("expected the future to be ready"),
        }
    }
    #[track_caller]
    fn pending(&mut self) {
        assert!(self.poll().is_pending(), "expected the future to be pending");
    }
    fn wakes(&self) -> usize {
        self.wakes.0.load(SeqCst)
    }
}

/// Holds the caller (who holds the lock: this is inside the critical section) until more than
/// the starvation threshold has passed since `queued_by`, by `Instant`. Not a sleep used to
/// order events: starvation mode is *defined* by a waiter's age, so the test must let real time
/// pass; the loop re-checks the clock, so a slow machine only makes it wait longer.
fn wait_out_threshold(queued_by: Instant) {
    while queued_by.elapsed() <= STARVATION_THRESHOLD {
        std::thread::sleep(STARVATION_THRESHOLD);
    }
}

fn panic_message(e: &(dyn std::any::Any + Send)) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

mod mutex;
mod once;
mod rwmutex;
mod starvation;
mod waitgroup;
