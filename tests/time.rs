//! Timers: never early, in deadline order, cancellation frees the heap slot, `timeout`,
//! `interval`, sleeping outside an M, and the runtime idling until the next timer.
//!
//! Lower bounds on elapsed time are the contract ("never early") and hold on any machine; no
//! test asserts an upper bound on lateness (the machines are shared and noisy).

mod common;
use common::*;
use gmprt::runtime::time::{interval, sleep, sleep_until, timeout};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[test]
fn sleep_never_returns_early() {
    for procs in [1, 2, 4] {
        let rt = rt(procs);
        let early = rt.block_on(async {
            let hs: Vec<_> = (0..2000u64)
                .map(|i| {
                    gmprt::spawn(async move {
                        let d = Duration::from_micros(200 + (i * 37) % 3000);
                        let t0 = Instant::now();
                        sleep(d).await;
                        t0.elapsed() < d
                    })
                })
                .collect();
            let mut early = 0;
            for h in hs {
                early += h.await.unwrap() as u32;
            }
            early
        });
        assert_eq!(early, 0, "procs={procs}: {early} sleeps returned before their deadline");
        let st = rt.stats();
        assert_eq!(st.timers, 0, "{st:?}");
    }
}

#[test]
fn timers_fire_in_deadline_order() {
    // The claim holds once every timer is in the heap before the first one is due; how long
    // registering 50 of them takes is up to the machine's load. So each task notes when its
    // timer was registered, and a round in which one was registered after the first deadline
    // (a busy machine stalled the spawns past the margin) proves nothing and is run again with
    // ten times the margin. The last margin (60 s) is only a hang guard.
    for margin_ms in [5, 50, 500, 5_000, 60_000] {
        let rt = rt(1);
        let order = Arc::new(Mutex::new(Vec::new()));
        let base = Instant::now() + Duration::from_millis(margin_ms);
        let registered = rt.block_on({
            let order = order.clone();
            async move {
                // Spawned in reverse deadline order, 20 µs apart so several expire in one
                // batch; one P, so completions are in firing order.
                let hs: Vec<_> = (0..50u32)
                    .rev()
                    .map(|i| {
                        let order = order.clone();
                        gmprt::spawn(async move {
                            let mut s =
                                std::pin::pin!(sleep_until(base + Duration::from_micros(20 * i as u64)));
                            // The first poll registers the timer (Pending), unless it is due.
                            let first = std::future::poll_fn(|cx| Poll::Ready(s.as_mut().poll(cx))).await;
                            let registered = first.is_pending().then(Instant::now);
                            s.await;
                            order.lock().unwrap().push(i);
                            registered
                        })
                    })
                    .collect();
                let mut registered = Vec::new();
                for h in hs {
                    registered.push(h.await.unwrap());
                }
                registered
            }
        });
        if registered.iter().any(|r| r.is_none_or(|t| t >= base)) {
            eprintln!(
                "a timer was registered after the first deadline (+{margin_ms} ms): again, with more margin"
            );
            continue;
        }
        let got = order.lock().unwrap().clone();
        assert_eq!(got, (0..50).collect::<Vec<_>>());
        return;
    }
    panic!("50 spawns never registered their timers within 60 s");
}

#[test]
fn cancelled_sleeps_free_their_heap_slots() {
    let rt = rt(2);
    let gate = Arc::new(std::sync::Barrier::new(2));
    let hs: Vec<_> = (0..1000).map(|_| rt.spawn(async { sleep(Duration::from_secs(3600)).await })).collect();
    // Wait until every task has registered its timer.
    wait_until(|| rt.stats().timers == 1000);
    for h in &hs {
        h.abort();
    }
    for h in hs {
        assert_eq!(h.join(), Err(gmprt::JoinError::Cancelled));
    }
    assert_eq!(rt.stats().timers, 0, "aborting the sleepers must remove their timers");
    // A timeout whose future wins removes its timer too.
    let r = rt.block_on(timeout(Duration::from_secs(3600), async { 7 }));
    assert_eq!(r, Ok(7));
    let r = rt.spawn(async { timeout(Duration::from_secs(3600), gmprt::yield_now()).await }).join();
    assert_eq!(r.unwrap(), Ok(()));
    assert_eq!(rt.stats().timers, 0);
    drop(gate);
}

#[test]
fn timeout_elapses_and_drops_the_future() {
    let rt = rt(2);
    let drops = Counters::new(1);
    let d2 = drops.clone();
    let t0 = Instant::now();
    let r = rt.block_on(async move {
        let guard = DropGuard::new(&d2, 0);
        timeout(Duration::from_millis(3), async move {
            let _g = guard;
            std::future::pending::<()>().await
        })
        .await
    });
    assert!(r.is_err());
    assert!(t0.elapsed() >= Duration::from_millis(3));
    drops.assert_all(1, "the timed-out future is dropped once");
}

#[test]
fn interval_ticks_are_never_early_and_skip_missed_ones() {
    let rt = rt(2);
    let period = Duration::from_millis(2);
    let ticks = rt.block_on(rt.spawn(async move {
        let mut iv = interval(period);
        let start = iv.tick().await; // immediate
        let mut ticks = vec![start];
        for _ in 0..5 {
            ticks.push(iv.tick().await);
        }
        ticks
    }));
    let ticks = ticks.unwrap();
    for w in ticks.windows(2) {
        assert!(w[1] >= w[0] + period, "ticks closer than the period: {:?}", w[1] - w[0]);
    }
}

/// A deadline further off than the coarse clock's slack (two kernel ticks: 2-20 ms) fires on a
/// P that never goes idle: the M's per-round check skips the precise clock while the coarse
/// one says the deadline is surely ahead, and must read it once that is no longer sure
/// (`runtime/src/sched/clock.rs`). One P, kept busy by a task that yields until the sleeper
/// is done, so only that per-round check can fire the timer. The 30 s bound is a hang guard
/// (a gate stuck at "ahead" never fires it), not a lateness limit.
#[test]
fn a_far_deadline_fires_on_a_p_that_never_idles() {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    let rt = rt(1);
    let done = Arc::new(AtomicBool::new(false));
    let d = Duration::from_millis(50);
    let (slept, spun_out) = rt.block_on({
        let done = done.clone();
        async move {
            let busy = gmprt::spawn({
                let done = done.clone();
                async move {
                    let guard = Instant::now() + Duration::from_secs(30);
                    while !done.load(SeqCst) {
                        if Instant::now() > guard {
                            return true;
                        }
                        gmprt::yield_now().await;
                    }
                    false
                }
            });
            let sleeper = gmprt::spawn(async move {
                let t0 = Instant::now();
                sleep(d).await;
                done.store(true, SeqCst);
                t0.elapsed()
            });
            // The busy task first: if it gave up, the sleeper is left to the runtime's drop.
            if busy.await.unwrap() {
                return (None, true);
            }
            (Some(sleeper.await.unwrap()), false)
        }
    });
    assert!(!spun_out, "a {d:?} sleep did not fire in 30 s on a busy P");
    let slept = slept.expect("the sleeper finished");
    assert!(slept >= d, "woke after {slept:?}, before its {d:?} deadline");
}

#[test]
fn idle_runtime_wakes_for_a_timer_set_from_outside() {
    // Every M is parked; a sleep registered from block_on (no M) must still fire.
    let rt = rt(2);
    wait_until(|| rt.stats().parks >= 1);
    for _ in 0..20 {
        let t0 = Instant::now();
        rt.block_on(sleep(Duration::from_millis(1)));
        assert!(t0.elapsed() >= Duration::from_millis(1));
    }
    // And from a task, when the runtime goes idle meanwhile.
    let t0 = Instant::now();
    rt.spawn(sleep(Duration::from_millis(2))).join().unwrap();
    assert!(t0.elapsed() >= Duration::from_millis(2));
}

#[test]
#[should_panic(expected = "gmprt timers need a runtime")]
fn sleep_outside_a_runtime_panics_with_a_hint() {
    let mut s = Box::pin(sleep(Duration::from_secs(1)));
    let w = std::task::Waker::noop();
    let _ = s.as_mut().poll(&mut std::task::Context::from_waker(w));
}

use std::future::Future;
use std::task::Poll;
