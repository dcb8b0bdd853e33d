//! Issue 11 item 3: a deadline past the end of time is "never", as in Go and tokio — no panic
//! ("overflow when adding duration to instant"), no early fire. Outcomes only: a sleep that
//! never fires loses every race against a short one, whatever the machine's load.

mod common;
use common::*;
use gmprt::runtime::chan::chan;
use gmprt::runtime::time::{interval, sleep, sleep_until, timeout};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::{Duration, Instant};

/// Short enough to keep the suite fast; its length decides nothing (a never-sleep loses to any).
const SHORT: Duration = Duration::from_millis(1);

#[test]
fn sleep_duration_max_never_fires_and_takes_no_timer() {
    let rt = rt(2);
    let (lost, timers) = rt.block_on(async {
        let s = sleep(Duration::MAX);
        assert!(s.deadline().is_none(), "Duration::MAX reaches past the end of time");
        assert!(!s.is_elapsed());
        let lost = timeout(SHORT, s).await;
        (lost, gmprt::runtime::Handle::try_current().unwrap().stats().timers)
    });
    assert!(lost.is_err(), "sleep(Duration::MAX) completed");
    assert_eq!(timers, 0, "a never-firing sleep holds no heap slot");
}

#[test]
fn timeout_duration_max_is_no_limit() {
    let rt = rt(2);
    rt.block_on(async {
        // Ready on the first poll: the case panicked even here.
        assert_eq!(timeout(Duration::MAX, async { 7 }).await, Ok(7));
        // Ready later: the value comes through.
        let (tx, rx) = chan::<u32>(0);
        gmprt::spawn(async move { tx.send(9).await.unwrap() });
        assert_eq!(timeout(Duration::MAX, rx.recv()).await, Ok(Some(9)));
    });
}

#[test]
fn a_deadline_beyond_the_clock_range_does_not_fire_early() {
    // 1,000 years is representable as an Instant here but not as u64 nanoseconds of the
    // runtime clock (584 years): it must saturate, not wrap to a time in the past.
    let far = Instant::now().checked_add(Duration::from_secs(1000 * 365 * 86_400));
    let Some(far) = far else {
        eprintln!("this platform's Instant cannot hold now + 1000 years; sleep(MAX) covers it");
        return;
    };
    let rt = rt(2);
    let got = rt.block_on(async move { timeout(SHORT, sleep_until(far)).await });
    assert!(got.is_err(), "a sleep 1000 years out fired");
}

#[test]
fn interval_duration_max_ticks_once_then_never() {
    let rt = rt(2);
    rt.block_on(async {
        let mut tick = interval(Duration::MAX);
        let first = tick.tick().await; // immediate
        assert!(first <= Instant::now());
        assert!(timeout(SHORT, tick.tick()).await.is_err(), "a second tick came");
    });
}

#[test]
fn a_task_sleeping_forever_is_cancelled_at_shutdown() {
    let rt = rt(2);
    let h = rt.spawn(async { sleep(Duration::MAX).await });
    drop(rt);
    assert_eq!(h.join(), Err(gmprt::JoinError::Cancelled));
}

#[test]
fn schedtrace_every_duration_max_builds_and_runs() {
    // The monitor thread computed `start + every` and panicked on overflow. That panic stays in
    // its thread (dropping the runtime joins it and ignores the result), so a panic hook
    // records panics of the monitor thread; the join in `drop` orders it before the check.
    static SYSMON_PANICKED: AtomicBool = AtomicBool::new(false);
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() == Some("gmprt-sysmon") {
            SYSMON_PANICKED.store(true, SeqCst);
        }
        prev(info);
    }));
    let rt = gmprt::Runtime::builder().procs(1).schedtrace(Duration::MAX).build().unwrap();
    assert_eq!(rt.block_on(async { 1 + 1 }), 2);
    drop(rt);
    assert!(!SYSMON_PANICKED.load(SeqCst), "the monitor thread panicked");
}
