//! Go's own timer tests (issue 24), ported: `TestAfterStop`, `TestTimerStopStress` and
//! `TestReset` (`time/sleep_test.go`), plus Go's ticker start and `Reset`.
//!
//! Go's versions sleep and then look, retrying with longer durations when a loaded machine
//! made them miss. These wait for events instead: a timer meant to be stopped gets an hour (so
//! `stop` returning true is certain), and a timer meant to fire is awaited, with its firing
//! instant compared to its deadline (a timer never fires early). `BOUND` only turns a hang into
//! a failure.
use gmprt::runtime::time::{after, after_func, ticker, timeout, Timer};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BOUND: Duration = Duration::from_secs(30);
const HOUR: Duration = Duration::from_secs(3600);

fn rt() -> gmprt::Runtime {
    gmprt::Runtime::builder().procs(2).build().unwrap()
}

/// `TestAfterStop`: stopped timers (a channel one and a function one) never fire, even after a
/// later timer has; `Stop` is true once and false the second time.
#[test]
fn after_stop() {
    rt().block_on(async {
        let _unrelated = after_func(Duration::from_millis(1), || {});
        let t0 = Timer::new(HOUR);
        let (c1_tx, c1) = gmprt::runtime::chan::chan::<bool>(1);
        let t1 = after_func(HOUR, move || {
            let _ = c1_tx.try_send(true);
        });
        let c2 = after(Duration::from_millis(20));
        assert!(t0.stop(), "failed to stop event 0");
        assert!(t1.stop(), "failed to stop event 1");
        timeout(BOUND, c2.recv()).await.expect("the later timer fires").unwrap();
        assert!(t0.c().try_recv().is_err(), "event 0 was not stopped");
        assert!(c1.try_recv().is_err(), "event 1 was not stopped");
        assert!(!t1.stop(), "Stop returned true twice");
        assert!(!t0.stop(), "Stop returned true twice");
    });
}

/// `TestTimerStopStress`, by events: 100 tasks each make an `after_func` timer of a few
/// milliseconds and stop it at once. Whatever the race, `stop` is true exactly for the timers
/// whose function never runs: the functions that ran are those whose `stop` said false.
#[test]
fn timer_stop_stress() {
    rt().block_on(async {
        let ran = Arc::new(AtomicUsize::new(0));
        let (done_tx, done_rx) = gmprt::runtime::chan::chan::<()>(100);
        let mut tasks = Vec::new();
        for i in 0..100u64 {
            let (ran, done_tx) = (ran.clone(), done_tx.clone());
            tasks.push(gmprt::spawn(async move {
                let t = after_func(Duration::from_micros(i * 20), move || {
                    ran.fetch_add(1, SeqCst);
                    let _ = done_tx.try_send(());
                });
                t.stop()
            }));
        }
        let mut not_stopped = 0;
        for t in tasks {
            not_stopped += usize::from(!t.await.unwrap());
        }
        for _ in 0..not_stopped {
            timeout(BOUND, done_rx.recv()).await.expect("a timer Stop did not stop runs").unwrap();
        }
        assert_eq!(ran.load(SeqCst), not_stopped, "a stopped timer's function ran");
    });
}

/// `TestReset`: resetting an unfired timer returns true and moves its firing (never early: the
/// instant it sends is at least the new deadline); resetting a fired one returns false. Go's
/// first timer is `2d` and it resets after sleeping `d`, retrying with a larger `d` when a
/// loaded machine let it fire first; an hour, reset at once, makes "unfired" certain instead.
#[test]
fn reset() {
    rt().block_on(async {
        let d = Duration::from_millis(2);
        let t0 = Timer::new(HOUR);
        let reset_at = Instant::now();
        assert!(t0.reset(3 * d), "resetting unfired timer returned false");
        let fired = timeout(BOUND, t0.c().recv()).await.expect("reset timer did not fire").unwrap();
        assert!(fired >= reset_at + 3 * d, "timer fired early");
        assert!(!t0.reset(Duration::from_millis(50)), "resetting expired timer returned true");
        assert!(t0.stop(), "the reset re-armed it");
        assert!(!t0.stop());
        // A timer that fired and was reset fires again (Go's Reset of an expired timer).
        assert!(!t0.reset(Duration::from_millis(1)));
        timeout(BOUND, t0.c().recv()).await.expect("fires again after Reset").unwrap();
    });
}

/// `Duration::MAX` never fires and stops cleanly; an `after_func` runs again after a reset.
#[test]
fn never_and_refire() {
    rt().block_on(async {
        let t = Timer::new(Duration::MAX);
        assert!(t.stop());
        let (tx, rx) = gmprt::runtime::chan::chan::<()>(2);
        let f = after_func(Duration::from_millis(1), move || {
            let _ = tx.try_send(());
        });
        timeout(BOUND, rx.recv()).await.unwrap().unwrap();
        assert!(!f.reset(Duration::from_millis(1)), "it had fired");
        timeout(BOUND, rx.recv()).await.expect("f runs again after Reset").unwrap();
    });
}

/// Go's `NewTicker`: the first tick one period after the start, never at once; `Reset` moves
/// the next tick one new period from the reset.
#[test]
fn ticker_starts_one_period_in_and_resets() {
    rt().block_on(async {
        let p = Duration::from_millis(3);
        let start = Instant::now();
        let mut t = ticker(p);
        let first = t.tick().await;
        assert!(first >= start + p && Instant::now() >= first, "first tick at {:?}", first - start);
        let second = t.tick().await;
        assert!(second >= first + p);
        let reset_at = Instant::now();
        t.reset(Duration::from_millis(7));
        assert!(t.tick().await >= reset_at + Duration::from_millis(7));
        assert_eq!(t.period(), Duration::from_millis(7));
    });
}

/// Made outside a runtime, a timer says so (its firing runs as a task).
#[test]
fn a_timer_outside_a_runtime_says_so() {
    let e = std::panic::catch_unwind(|| Timer::new(Duration::from_secs(1))).unwrap_err();
    let msg = e.downcast_ref::<String>().unwrap();
    assert!(msg.contains("Timer::new outside a gmprt runtime"), "{msg}");
}
