//! loom models of timer cancellation (`time/mod.rs`, `time/heap.rs`, `sched/timers.rs`): a
//! `Sleep`'s node lives inside the pinned future and, once registered in a P's heap, is touched
//! (by its owner's poll or drop, or by the M firing it) only under that P's heap lock. Checks,
//! in every interleaving:
//! * dropping a registered `Sleep` while another thread fires its P's timers: no use after free
//!   and no unsynchronised node access (loom's `UnsafeCell` tracking), the heap ends empty, and
//!   the waker is woken at most once;
//! * one of two `Sleep`s on the same heap cancelled while the other fires: the survivor is woken
//!   exactly once and then completes, the cancelled one at most once, the heap ends empty;
//! * a `Sleep` re-polled while (or after) another thread fires it: no lost wake-up (a `Pending`
//!   re-poll is always followed by the wake), and a poll after the wake is `Ready`. With the
//!   same waker the re-poll takes the lock-free fast path (`fired` and the waker slot read
//!   without the heap lock: `time/heap.rs`); with a new waker (the task moved under a
//!   combinator that wraps it) it takes the lock to store it, and then the *new* waker is the
//!   one woken.
//!
//! The fast path's unlocked read of the waker slot races only the firer's read of it (a clone):
//! loom's `UnsafeCell` tracking checks that no interleaving pairs it with a write.
//!
//! The model threads play the Ms through `gmprt_runtime::loom_hooks` (no M threads). Sleeps are
//! registered from a context with no P (as in `block_on`: on P 0's heap) with a deadline an hour
//! away, so that the registering poll never completes on the clock; the firer uses
//! `Scheduler::run_timers_at` (`Shared::run_timers` with an explicit clock, `u64::MAX`: every
//! timer due), so "due" does not depend on real time. Run with
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p gmprt-runtime --release --test loom_time
//! ```
//! with no `LOOM_MAX_PREEMPTIONS`: every model here ends without a preemption bound (under a second each
//! on the 2-core VM), so loom explores every interleaving it can make, and CI runs them so
//! (`EXHAUSTIVE` in `.ci/run`).
#![cfg(loom)]

use gmprt_runtime::loom_hooks::Scheduler;
use gmprt_runtime::time::{sleep, Sleep};
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// Far enough away that a poll never finds the deadline passed on the real clock.
const LATER: Duration = Duration::from_secs(3600);

/// A waker that counts its wakes.
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

fn counter() -> (Arc<Counter>, Waker) {
    let c = Arc::new(Counter(AtomicUsize::new(0)));
    (c.clone(), Waker::from(c))
}

/// Records that an outcome was seen in some interleaving (std atomics: they outlive the loom
/// iterations), so a model can assert that loom explored both sides of its race.
fn seen(flag: &'static AtomicBool) {
    flag.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn was_seen(flag: &AtomicBool) -> bool {
    flag.load(std::sync::atomic::Ordering::Relaxed)
}

fn wakes(c: &Counter) -> usize {
    c.0.load(SeqCst)
}

/// Polls `sleep` once inside `s`'s context (no P: registers on P 0).
fn poll(s: &Scheduler, sleep: &mut Pin<Box<Sleep>>, waker: &Waker) -> Poll<()> {
    s.enter(|| sleep.as_mut().poll(&mut Context::from_waker(waker)))
}

/// A registered `Sleep` (`Pending` on first poll; on P 0's heap).
fn registered(s: &Scheduler, waker: &Waker) -> Pin<Box<Sleep>> {
    let mut sl = Box::pin(sleep(LATER));
    assert_eq!(poll(s, &mut sl, waker), Poll::Pending);
    sl
}

/// Model 1: a due `Sleep` dropped (cancelled) on one thread while another fires P 0's timers.
#[test]
fn cancel_racing_fire() {
    static FIRED: AtomicBool = AtomicBool::new(false);
    static CANCELLED_FIRST: AtomicBool = AtomicBool::new(false);
    loom::model(|| {
        let (s, _ps) = Scheduler::new(1);
        let s = Arc::new(s);
        let (count, waker) = counter();
        let sl = registered(&s, &waker);
        drop(waker);
        assert_eq!(s.timers(), 1);

        let canceller = thread::spawn(move || drop(sl));
        let fired = s.run_timers_at(0, u64::MAX);
        canceller.join().unwrap();

        assert_eq!(s.timers(), 0, "heap not empty");
        assert_eq!(s.timer0_when(0), 0, "timer0_when stale");
        let n = wakes(&count);
        assert!(n <= 1, "woken {n} times");
        assert_eq!(fired, n == 1, "fired {fired}, woken {n} times");
        seen(if fired { &FIRED } else { &CANCELLED_FIRST });
    });
    assert!(was_seen(&FIRED) && was_seen(&CANCELLED_FIRST), "loom missed a side of the race");
}

/// Model 2: two `Sleep`s on P 0's heap; one is cancelled while the timers fire.
#[test]
fn cancel_one_while_other_fires() {
    loom::model(|| {
        let (s, _ps) = Scheduler::new(1);
        let s = Arc::new(s);
        let (c_cancel, w_cancel) = counter();
        let (c_keep, w_keep) = counter();
        let cancelled = registered(&s, &w_cancel);
        let mut keep = registered(&s, &w_keep);
        assert_eq!(s.timers(), 2);

        let canceller = thread::spawn(move || drop(cancelled));
        let firer = {
            let s = s.clone();
            thread::spawn(move || s.run_timers_at(0, u64::MAX))
        };
        canceller.join().unwrap();
        assert!(firer.join().unwrap(), "the survivor did not fire");

        assert_eq!(wakes(&c_keep), 1, "survivor woken {} times", wakes(&c_keep));
        assert!(wakes(&c_cancel) <= 1, "cancelled woken {} times", wakes(&c_cancel));
        assert_eq!(s.timers(), 0, "heap not empty");
        assert_eq!(poll(&s, &mut keep, &w_keep), Poll::Ready(()), "fired but not ready");
        drop(keep);
        assert_eq!(s.timers(), 0);
        assert_eq!(s.timer0_when(0), 0, "timer0_when stale");
    });
}

/// Models 3 and 4: a registered `Sleep` re-polled (with the waker it registered, or with a new
/// one) concurrently with another thread firing it. Exactly one wake per fire, to one of the
/// two wakers; if the re-poll is `Pending`, it is the re-poll's waker that was woken, and the
/// poll after it is `Ready`. `ready`/`pending` record which sides of the race loom explored.
fn repoll_racing_fire(same_waker: bool, ready: &'static AtomicBool, pending: &'static AtomicBool) {
    loom::model(move || {
        let (s, _ps) = Scheduler::new(1);
        let s = Arc::new(s);
        let (old_count, old) = counter();
        let (new_count, new) = if same_waker { (old_count.clone(), old.clone()) } else { counter() };
        let mut sl = registered(&s, &old);

        let firer = {
            let s = s.clone();
            thread::spawn(move || s.run_timers_at(0, u64::MAX))
        };
        let second = poll(&s, &mut sl, &new);
        assert!(firer.join().unwrap(), "the timer did not fire");

        // Fired exactly once, whether before or after the second poll: no lost wake-up.
        let (o, n) = (wakes(&old_count), wakes(&new_count));
        let total = if same_waker { o } else { o + n };
        assert_eq!(total, 1, "woken old {o} + new {n} times: exactly one wake per fire");
        seen(if second.is_ready() { ready } else { pending });
        if second.is_pending() {
            assert_eq!(n, 1, "pending with the re-poll's waker, but that waker was not woken");
            assert_eq!(poll(&s, &mut sl, &new), Poll::Ready(()), "woken but not ready");
        }
        assert_eq!(s.timers(), 0);
        drop(sl);
        assert_eq!(s.timers(), 0);
        assert_eq!(s.timer0_when(0), 0);
    });
    assert!(was_seen(ready) && was_seen(pending), "loom missed a side of the race");
}

/// Model 3: the re-poll comes with the waker the `Sleep` registered, so it takes the lock-free
/// fast path (`fired` and the waker slot read without the heap lock).
#[test]
fn repoll_after_fire_is_ready() {
    static READY: AtomicBool = AtomicBool::new(false);
    static PENDING: AtomicBool = AtomicBool::new(false);
    repoll_racing_fire(true, &READY, &PENDING);
}

/// Model 4: the re-poll comes with a new waker, so it takes the lock to store it; the old waker
/// may have been woken by a fire that came first.
#[test]
fn repoll_with_new_waker_racing_fire() {
    static READY: AtomicBool = AtomicBool::new(false);
    static PENDING: AtomicBool = AtomicBool::new(false);
    repoll_racing_fire(false, &READY, &PENDING);
}
