//! `gmprt::runtime::sync`: `WaitGroup`, `Mutex<T>` (mutual exclusion, Go's starvation mode and
//! FIFO hand-off, cancellation of queued lockers) and `Once`, across tasks and threads.
//!
//! Everything synchronises on events (wait groups, joins, queue lengths), never on sleeps. The
//! one place real time matters — a waiter must have waited more than 1 ms before starvation
//! mode can start — is driven by hand: the test polls the lock futures itself, holds the lock
//! while it waits out the threshold as measured by `Instant`, and asserts only the mode
//! switch and the order of ownership, never a timing bound.

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

// ---------------------------------------------------------------------------------------------
// WaitGroup
// ---------------------------------------------------------------------------------------------

#[test]
fn waitgroup_many_tasks_and_waiters() {
    const WORKERS: usize = 1000;
    const WAITERS: usize = 50;
    for procs in 1..=4 {
        let rt = rt(procs);
        let finished = Arc::new(AtomicUsize::new(0));
        let wg = WaitGroup::new();
        // The gate keeps the workers from finishing until every waiter has been spawned (and
        // most have parked), so the waiters really wait.
        let gate = WaitGroup::new();
        gate.add(1);
        let ok = rt.block_on(async {
            wg.add(WORKERS as isize);
            for i in 0..WORKERS {
                let (wg, gate, finished) = (wg.clone(), gate.clone(), finished.clone());
                gmprt::spawn(async move {
                    gate.wait().await;
                    if i % 3 == 0 {
                        yield_now().await;
                    }
                    finished.fetch_add(1, SeqCst);
                    wg.done();
                });
            }
            let waiters: Vec<_> = (0..WAITERS)
                .map(|_| {
                    let (wg, finished) = (wg.clone(), finished.clone());
                    gmprt::spawn(async move {
                        wg.wait().await;
                        finished.load(SeqCst)
                    })
                })
                .collect();
            // A plain thread waits too.
            let thread = {
                let (wg, finished) = (wg.clone(), finished.clone());
                std::thread::spawn(move || {
                    wg.wait_blocking();
                    finished.load(SeqCst)
                })
            };
            gate.done();
            wg.wait().await;
            let mut ok = finished.load(SeqCst) == WORKERS;
            for w in waiters {
                ok &= w.await.unwrap() == WORKERS;
            }
            ok && thread.join().unwrap() == WORKERS
        });
        assert!(ok, "procs={procs}: a waiter returned before every worker was done");
    }
}

#[test]
fn waitgroup_wait_at_zero_and_reuse() {
    let rt = rt(2);
    rt.block_on(async {
        let wg = WaitGroup::new();
        wg.wait().await; // zero: returns at once
        for round in 0..20 {
            wg.add(3);
            for _ in 0..3 {
                let wg = wg.clone();
                gmprt::spawn(async move {
                    yield_now().await;
                    wg.done();
                });
            }
            wg.wait().await;
            assert_eq!(format!("{wg:?}"), "WaitGroup { count: 0, .. }", "round {round}");
        }
        // Go 1.25's wg.Go, including a task that panics: done still runs.
        let hits = Arc::new(AtomicUsize::new(0));
        for i in 0..100 {
            let hits = hits.clone();
            wg.go(async move {
                hits.fetch_add(1, SeqCst);
                if i == 7 {
                    panic!("{EXPECTED} inside wg.go");
                }
            });
        }
        wg.wait().await;
        assert_eq!(hits.load(SeqCst), 100);
    });
}

#[test]
fn waitgroup_done_below_zero_panics() {
    quiet_expected_panics();
    let wg = WaitGroup::new();
    let err = catch_unwind(AssertUnwindSafe(|| wg.done())).expect_err("done() at zero must panic");
    let msg = panic_message(&*err);
    assert!(msg.contains("negative WaitGroup counter"), "message was {msg:?}");
    // The counter was left as it was: the group still works.
    wg.add(2);
    let err = catch_unwind(AssertUnwindSafe(|| wg.add(-3))).expect_err("add(-3) at 2 must panic");
    assert!(panic_message(&*err).contains("negative WaitGroup counter"));
    wg.done();
    wg.done();
    let rt = rt(1);
    rt.block_on(wg.wait());
    // Inside a task the panic reaches the JoinHandle.
    let r = rt.block_on(rt.spawn(async move { wg.done() }));
    match r {
        Err(JoinError::Panicked(m)) => assert!(m.contains("negative WaitGroup counter"), "{m}"),
        other => panic!("expected a panic, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Mutex: mutual exclusion
// ---------------------------------------------------------------------------------------------

#[test]
fn mutex_mutual_exclusion_under_contention() {
    const TASKS: usize = 1000;
    const ROUNDS: u64 = 3;
    for procs in 2..=4 {
        let rt = rt(procs);
        let m = Arc::new(Mutex::new(0u64));
        let inside = Arc::new(AtomicBool::new(false));
        let overlaps = Arc::new(AtomicUsize::new(0));
        rt.block_on(async {
            let tasks: Vec<_> = (0..TASKS)
                .map(|i| {
                    let (m, inside, overlaps) = (m.clone(), inside.clone(), overlaps.clone());
                    gmprt::spawn(async move {
                        for _ in 0..ROUNDS {
                            let mut g = if i % 10 == 0 {
                                // try_lock first, as some real code does.
                                match m.try_lock() {
                                    Some(g) => g,
                                    None => m.lock().await,
                                }
                            } else {
                                m.lock().await
                            };
                            if inside.swap(true, SeqCst) {
                                overlaps.fetch_add(1, SeqCst);
                            }
                            // A non-atomic increment, split by a yield while holding the lock.
                            let v = *g;
                            if i % 4 == 0 {
                                yield_now().await;
                            }
                            *g = v + 1;
                            inside.store(false, SeqCst);
                        }
                    })
                })
                .collect();
            // Plain threads take part too.
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let (m, inside, overlaps) = (m.clone(), inside.clone(), overlaps.clone());
                    std::thread::spawn(move || {
                        for _ in 0..200 {
                            let mut g = m.lock_blocking();
                            if inside.swap(true, SeqCst) {
                                overlaps.fetch_add(1, SeqCst);
                            }
                            let v = *g;
                            std::thread::yield_now();
                            *g = v + 1;
                            inside.store(false, SeqCst);
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
            for t in threads {
                t.join().unwrap();
            }
        });
        assert_eq!(overlaps.load(SeqCst), 0, "procs={procs}: two owners at once");
        let m = Arc::into_inner(m).expect("all tasks are done");
        assert_eq!(m.waiters(), 0);
        assert!(!m.is_locked() && !m.is_starving());
        assert_eq!(m.into_inner(), TASKS as u64 * ROUNDS + 400, "procs={procs}: lost increments");
        assert_balanced(&rt.stats());
    }
}

#[test]
fn mutex_basics() {
    let mut m = Mutex::new(vec![1]);
    m.get_mut().push(2);
    {
        let g = m.try_lock().expect("unlocked");
        assert!(m.try_lock().is_none(), "try_lock of a locked mutex");
        assert_eq!(format!("{m:?}"), "Mutex { data: <locked>, starving: false, .. }");
        assert_eq!(*g, [1, 2]);
    }
    assert_eq!(format!("{m:?}"), "Mutex { data: [1, 2], starving: false, .. }");
    let rt = rt(1);
    rt.block_on(async {
        m.lock().await.push(3);
    });
    assert_eq!(m.into_inner(), [1, 2, 3]);
    static GLOBAL: Mutex<u32> = Mutex::new(5); // `new` is const
    assert_eq!(*GLOBAL.lock_blocking(), 5);
}

// ---------------------------------------------------------------------------------------------
// Mutex: starvation mode and FIFO hand-off (driven by hand, deterministic)
// ---------------------------------------------------------------------------------------------

/// A waiter that has waited more than 1 ms and then loses to a barging newcomer switches the
/// mutex to starvation mode; from then on unlock hands the mutex to the queue's head, in FIFO
/// order, and newcomers can neither barge nor `try_lock`.
#[test]
fn mutex_starvation_hands_off_fifo_before_newcomers() {
    let m = Mutex::new(Vec::<&str>::new());
    let holder = m.try_lock().unwrap();

    // W queues behind the holder, and waits past the threshold (the holder holds the lock).
    let mut w = Manual::new(m.lock());
    w.pending();
    let queued_by = Instant::now();
    wait_out_threshold(queued_by);
    assert!(!m.is_starving(), "waiting alone does not starve the mutex");

    // Normal-mode unlock: W is woken but does not own the mutex, so a newcomer barges in.
    drop(holder);
    assert_eq!(w.wakes(), 1, "unlock wakes the head waiter");
    let mut barger = m.try_lock().expect("normal mode lets a newcomer barge");
    barger.push("barger");

    // W polls, finds the mutex taken after waiting > 1 ms: starvation mode.
    w.pending();
    assert!(m.is_starving(), "a waiter that waited > 1 ms and lost must start starvation mode");

    // Newcomers now queue behind W; try_lock fails even when the mutex is free.
    assert!(m.try_lock().is_none());
    let mut n1 = Manual::new(m.lock());
    n1.pending();
    let mut n2 = Manual::new(m.lock());
    n2.pending();
    assert_eq!(m.waiters(), 3);
    // n1 and n2 wait past the threshold too, so every hand-off below keeps the mode until the
    // queue empties.
    wait_out_threshold(Instant::now());

    // Unlock hands off to W: it owns the mutex before it even polls, so no newcomer can get in.
    drop(barger);
    assert_eq!(m.handoffs(), 1);
    assert!(m.is_locked());
    assert!(m.try_lock().is_none(), "the mutex belongs to W after the hand-off");
    let mut gw = w.ready();
    gw.push("starved waiter");
    // W waited > 1 ms, so the mode persists: next hand-offs go to n1 then n2, in FIFO order,
    // however we poll them.
    n2.pending();
    drop(gw);
    assert_eq!(m.handoffs(), 2);
    assert!(n2.poll().is_pending(), "n2 must not overtake n1");
    let mut g1 = n1.ready();
    g1.push("n1");
    drop(g1);
    // That hand-off emptied the queue, which ends starvation mode.
    assert_eq!(m.handoffs(), 3);
    assert!(!m.is_starving(), "an empty queue ends starvation mode");
    let mut g2 = n2.ready();
    g2.push("n2");
    drop(g2);
    assert!(!m.is_locked() && !m.is_starving());
    drop((w, n1, n2));
    assert_eq!(m.into_inner(), ["barger", "starved waiter", "n1", "n2"]);
}

/// A woken waiter that loses to a barger *without* having waited 1 ms stays in normal mode
/// (asserted only when the measured wait really was short, so the test holds on a slow box).
#[test]
fn mutex_short_wait_does_not_starve() {
    for _ in 0..10 {
        let m = Mutex::new(());
        let holder = m.try_lock().unwrap();
        let t0 = Instant::now();
        let mut w = Manual::new(m.lock());
        w.pending();
        drop(holder);
        let barger = m.try_lock().expect("normal mode lets a newcomer barge");
        w.pending();
        let short = t0.elapsed() < STARVATION_THRESHOLD;
        if short {
            assert!(!m.is_starving(), "a waiter that waited < 1 ms must not start starvation mode");
        }
        drop(barger);
        let _g = w.ready(); // woken again, and the mutex is free
        if short {
            return;
        }
    }
}

/// Starvation mode ends at a hand-off whose receiver waited less than 1 ms, even with waiters
/// left in the queue (asserted only when the measured wait really was short).
#[test]
fn mutex_starvation_ends_when_head_waited_briefly() {
    for _ in 0..10 {
        let m = Mutex::new(());
        let holder = m.try_lock().unwrap();
        let mut w = Manual::new(m.lock());
        w.pending();
        wait_out_threshold(Instant::now());
        drop(holder);
        let barger = m.try_lock().unwrap();
        w.pending();
        assert!(m.is_starving());
        // Fresh waiters a and b queue; the barger's unlock hands off to w, which waited > 1 ms
        // (so the mode stays), and w's unlock at once hands off to a.
        let t0 = Instant::now();
        let mut a = Manual::new(m.lock());
        a.pending();
        let mut b = Manual::new(m.lock());
        b.pending();
        drop(barger);
        let gw = w.ready();
        assert!(m.is_starving(), "a receiver that waited > 1 ms keeps starvation mode");
        drop(gw);
        // a's wait at the hand-off was at most this:
        let short = t0.elapsed() < STARVATION_THRESHOLD;
        assert_eq!(m.handoffs(), 2);
        let ga = a.ready();
        if short {
            assert!(!m.is_starving(), "a receiver that waited < 1 ms ends starvation mode");
        }
        drop(ga);
        drop(b.ready());
        assert!(!m.is_locked() && !m.is_starving());
        if short {
            return;
        }
    }
}

/// Go's motivating case on the real runtime: a task that re-locks the instant it unlocks (and
/// holds the lock across a reschedule) would starve a waiter forever in normal mode — on
/// `procs = 1` the waiter only ever runs while the greedy task holds the lock. Starvation mode
/// hands the lock to the waiter once it has waited 1 ms, so the test terminates; on `procs = 1`
/// that hand-off is the *only* way the waiter can win, so it is asserted.
#[test]
fn mutex_starvation_mode_rescues_a_waiter_from_a_greedy_relocker() {
    for procs in 1..=2 {
        let rt = rt(procs);
        let m = Arc::new(Mutex::new(0u64));
        let stop = Arc::new(AtomicBool::new(false));
        let holding = WaitGroup::new();
        holding.add(1);
        let waited = rt.block_on(async {
            let greedy = {
                let (m, stop, holding) = (m.clone(), stop.clone(), holding.clone());
                gmprt::spawn(async move {
                    let mut first = true;
                    while !stop.load(SeqCst) {
                        let mut g = m.lock().await;
                        *g += 1;
                        if std::mem::take(&mut first) {
                            holding.done(); // let the waiter start while we hold the lock
                        }
                        yield_now().await; // the waiter runs now, and finds the lock taken
                        drop(g); // ... and we take it again at once (barging, in normal mode)
                    }
                })
            };
            let waiter = {
                let (m, stop) = (m.clone(), stop.clone());
                gmprt::spawn(async move {
                    holding.wait().await;
                    let t0 = Instant::now();
                    let _g = m.lock().await;
                    stop.store(true, SeqCst);
                    t0.elapsed()
                })
            };
            greedy.await.unwrap();
            waiter.await.unwrap()
        });
        let m = Arc::into_inner(m).unwrap();
        assert!(!m.is_locked() && !m.is_starving() && m.waiters() == 0, "procs={procs}");
        if procs == 1 {
            assert!(m.handoffs() >= 1, "procs=1: the waiter can only win by a hand-off");
            assert!(waited > STARVATION_THRESHOLD, "a hand-off needs a wait past the threshold");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Mutex: cancellation
// ---------------------------------------------------------------------------------------------

/// A queued `lock()` future dropped after the mutex was handed to it passes the mutex on to
/// the next waiter (starvation mode), or releases it if nobody waits.
#[test]
fn mutex_cancelled_waiter_passes_on_a_handoff() {
    let m = Mutex::new(0);
    let holder = m.try_lock().unwrap();
    let mut w = Manual::new(m.lock());
    w.pending();
    wait_out_threshold(Instant::now());
    drop(holder);
    let barger = m.try_lock().unwrap();
    w.pending();
    assert!(m.is_starving());
    let mut next = Manual::new(m.lock());
    next.pending();
    drop(barger); // hand-off to w
    assert_eq!(m.handoffs(), 1);
    drop(w); // w owned the mutex without polling: the drop must pass it on to `next`
    assert_eq!(m.handoffs(), 2);
    assert_eq!(next.wakes(), 1, "the next waiter is woken with the mutex");
    assert!(m.try_lock().is_none());
    let mut g = next.ready();
    *g += 1;
    drop(g);
    assert!(!m.is_locked() && !m.is_starving() && m.waiters() == 0);

    // Alone in the queue: a granted, dropped waiter releases the mutex.
    let holder = m.try_lock().unwrap();
    let mut w = Manual::new(m.lock());
    w.pending();
    wait_out_threshold(Instant::now());
    drop(holder);
    let barger = m.try_lock().unwrap();
    w.pending();
    drop(barger);
    drop(w);
    assert!(!m.is_locked() && !m.is_starving(), "a dropped hand-off with nobody waiting unlocks");
    assert_eq!(*m.try_lock().unwrap(), 1);
}

/// A head waiter woken by a normal-mode unlock and then dropped passes the wake-up on.
#[test]
fn mutex_cancelled_woken_waiter_passes_on_the_wakeup() {
    let m = Mutex::new(());
    let holder = m.try_lock().unwrap();
    let mut a = Manual::new(m.lock());
    a.pending();
    let mut b = Manual::new(m.lock());
    b.pending();
    let mut c = Manual::new(m.lock());
    c.pending();
    drop(holder);
    assert_eq!((a.wakes(), b.wakes()), (1, 0), "unlock wakes only the head");
    drop(a);
    assert_eq!(b.wakes(), 1, "a dropped woken head wakes the next waiter");
    // b is pending-woken; a waiting (not woken) c that is dropped wakes nobody.
    drop(c);
    let _g = b.ready();
    assert_eq!(m.waiters(), 0);
}

/// Many tasks queue on a held mutex; half are aborted while queued (some may already have been
/// handed the mutex by then); every survivor gets the lock, and the mutex ends free.
#[test]
fn mutex_aborted_lock_waiters_do_not_lose_the_lock() {
    const N: usize = 200;
    for procs in [1, 2, 4] {
        let rt = rt(procs);
        let m = Arc::new(Mutex::new(0usize));
        let (ok, cancelled) = rt.block_on(async {
            let holder = m.lock().await;
            let tasks: Vec<_> = (0..N)
                .map(|_| {
                    let m = m.clone();
                    gmprt::spawn(async move {
                        let mut g = m.lock().await;
                        *g += 1;
                        yield_now().await; // hold it across a reschedule
                    })
                })
                .collect();
            // Wait (on the event: the queue length) for every task to have queued. This is
            // block_on's thread, not an M: blocking it stops no task.
            wait_until(|| m.waiters() == N);
            // Wait past the threshold holding the lock, so the first woken waiter that loses
            // to a barger starts starvation mode and later releases are hand-offs.
            wait_out_threshold(Instant::now());
            for t in tasks.iter().step_by(2) {
                t.abort();
            }
            drop(holder);
            let (mut ok, mut cancelled) = (0, 0);
            for t in tasks {
                match t.await {
                    Ok(()) => ok += 1,
                    Err(JoinError::Cancelled) => cancelled += 1,
                    Err(e) => panic!("{e}"),
                }
            }
            (ok, cancelled)
        });
        assert_eq!(ok + cancelled, N);
        assert!(ok >= N / 2, "procs={procs}: only {ok} survivors");
        let m = Arc::into_inner(m).unwrap();
        assert!(!m.is_locked() && !m.is_starving() && m.waiters() == 0, "procs={procs}");
        assert_eq!(m.into_inner(), ok, "procs={procs}: every survivor locked exactly once");
    }
}

// ---------------------------------------------------------------------------------------------
// Once
// ---------------------------------------------------------------------------------------------

#[test]
fn once_runs_exactly_once_across_tasks_and_threads() {
    for procs in 1..=4 {
        let rt = rt(procs);
        let once = Arc::new(Once::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let seen_incomplete = Arc::new(AtomicUsize::new(0));
        let start = WaitGroup::new();
        start.add(1);
        rt.block_on(async {
            let mut tasks = Vec::new();
            for i in 0..200 {
                let (once, runs, seen, start) =
                    (once.clone(), runs.clone(), seen_incomplete.clone(), start.clone());
                tasks.push(gmprt::spawn(async move {
                    start.wait().await;
                    if i % 5 == 0 {
                        // The blocking form, from a task: waits like a syscall.
                        once.call_once(|| {
                            runs.fetch_add(1, SeqCst);
                        });
                    } else {
                        once.call_once_async(|| async {
                            // Yield a few times so many callers pile up behind the runner.
                            for _ in 0..5 {
                                yield_now().await;
                            }
                            runs.fetch_add(1, SeqCst);
                        })
                        .await;
                    }
                    if runs.load(SeqCst) != 1 || !once.is_completed() {
                        seen.fetch_add(1, SeqCst);
                    }
                }));
            }
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let (once, runs, seen) = (once.clone(), runs.clone(), seen_incomplete.clone());
                    std::thread::spawn(move || {
                        once.call_once(|| {
                            runs.fetch_add(1, SeqCst);
                        });
                        if runs.load(SeqCst) != 1 {
                            seen.fetch_add(1, SeqCst);
                        }
                    })
                })
                .collect();
            start.done();
            for t in tasks {
                t.await.unwrap();
            }
            for t in threads {
                t.join().unwrap();
            }
        });
        assert_eq!(runs.load(SeqCst), 1, "procs={procs}: the initialiser ran {} times", runs.load(SeqCst));
        assert_eq!(
            seen_incomplete.load(SeqCst),
            0,
            "procs={procs}: a caller returned before the initialiser"
        );
        assert_balanced(&rt.stats());
    }
}

#[test]
fn once_panic_counts_as_done() {
    quiet_expected_panics();
    let once = Once::new();
    let r = catch_unwind(AssertUnwindSafe(|| once.call_once(|| panic!("{EXPECTED} in Once"))));
    assert!(r.is_err(), "the panic reaches the caller that ran the initialiser");
    assert!(once.is_completed(), "Go's rule: a panicking initialiser counts as done");
    once.call_once(|| unreachable!("must not run again"));

    // The async form, in a task.
    let rt = rt(2);
    let once = Arc::new(Once::new());
    let o = once.clone();
    let r = rt.block_on(rt.spawn(async move {
        o.call_once_async(|| async { panic!("{EXPECTED} in async Once") }).await;
    }));
    assert!(matches!(r, Err(JoinError::Panicked(_))), "{r:?}");
    assert!(once.is_completed());
    rt.block_on(once.call_once_async(|| async { unreachable!("must not run again") }));
}

#[test]
fn once_cancelled_runner_lets_another_caller_run() {
    let once = Once::new();
    let runs = AtomicUsize::new(0);
    // The first runner is dropped while its initialiser is pending.
    let mut first = Manual::new(once.call_once_async(std::future::pending::<()>));
    first.pending();
    // A second caller parks behind it.
    let mut second = Manual::new(once.call_once_async(|| async {
        runs.fetch_add(1, SeqCst);
    }));
    second.pending();
    assert!(!once.is_completed());
    drop(first);
    assert!(!once.is_completed(), "a cancelled initialiser is not done");
    assert_eq!(second.wakes(), 1, "the parked caller is woken to take over");
    second.ready();
    assert!(once.is_completed());
    assert_eq!(runs.load(SeqCst), 1);
}

// ---------------------------------------------------------------------------------------------
// RwMutex (issue 24): Go's writer preference, batches of readers, cancellation
// ---------------------------------------------------------------------------------------------

fn poll_noop<F: Future + Unpin>(f: &mut F) -> std::task::Poll<F::Output> {
    Pin::new(f).poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
}

/// A reader that arrives while a writer waits queues behind it (Go: "later RLock calls block
/// until the writer has acquired and released the lock"); when the writer leaves, every reader
/// queued before the next writer goes in together; the next writer waits for them.
#[test]
fn rwmutex_writer_preference_and_reader_batches() {
    use gmprt::runtime::sync::RwMutex;
    let m = RwMutex::new(0u32);
    let r0 = m.try_read().unwrap();
    let mut w1 = Box::pin(m.write());
    assert!(poll_noop(&mut w1).is_pending(), "a writer waits for the reader");
    assert!(m.try_read().is_none(), "a new reader does not pass a waiting writer");
    let mut r1 = Box::pin(m.read());
    let mut r2 = Box::pin(m.read());
    assert!(poll_noop(&mut r1).is_pending() && poll_noop(&mut r2).is_pending());
    let mut w2 = Box::pin(m.write());
    let mut r3 = Box::pin(m.read());
    assert!(poll_noop(&mut w2).is_pending() && poll_noop(&mut r3).is_pending());
    drop(r0);
    let mut g1 = match poll_noop(&mut w1) {
        std::task::Poll::Ready(g) => g,
        _ => panic!("the writer gets the lock when the reader leaves"),
    };
    *g1 += 1;
    assert!(poll_noop(&mut r1).is_pending(), "readers wait while the writer holds it");
    drop(g1);
    let (g_r1, g_r2) = match (poll_noop(&mut r1), poll_noop(&mut r2)) {
        (std::task::Poll::Ready(a), std::task::Poll::Ready(b)) => (a, b),
        _ => panic!("both readers queued before w2 go in together"),
    };
    assert_eq!((*g_r1, *g_r2), (1, 1));
    assert!(poll_noop(&mut w2).is_pending(), "w2 waits for the batch");
    assert!(poll_noop(&mut r3).is_pending(), "r3 queued behind w2");
    drop((g_r1, g_r2));
    let g2 = match poll_noop(&mut w2) {
        std::task::Poll::Ready(g) => g,
        _ => panic!("w2 next"),
    };
    drop(g2);
    assert!(poll_noop(&mut r3).is_ready());
}

/// A waiting writer that is dropped lets the readers queued behind it in, though a read lock
/// is still held; a dropped future that had been granted the lock gives it back.
#[test]
fn rwmutex_cancellation() {
    use gmprt::runtime::sync::RwMutex;
    let m = RwMutex::new(());
    let r0 = m.try_read().unwrap();
    let mut w = Box::pin(m.write());
    assert!(poll_noop(&mut w).is_pending());
    let mut r1 = Box::pin(m.read());
    assert!(poll_noop(&mut r1).is_pending());
    drop(w);
    let g1 = match poll_noop(&mut r1) {
        std::task::Poll::Ready(g) => g,
        _ => panic!("the reader behind the cancelled writer goes in"),
    };
    drop((g1, r0));
    // Granted, then dropped before it was polled: the grant is given back.
    let r = m.try_read().unwrap();
    let mut w = Box::pin(m.write());
    assert!(poll_noop(&mut w).is_pending());
    drop(r); // grants w
    drop(w); // never took it
    assert!(m.try_write().is_some(), "the grant came back");
}

/// Many tasks: writers are alone, readers never see a write half done.
#[test]
fn rwmutex_readers_and_writers_on_tasks() {
    use gmprt::runtime::sync::RwMutex;
    let rt = gmprt::Runtime::builder().procs(2).build().unwrap();
    let m = Arc::new(RwMutex::new((0u64, 0u64)));
    let writers_in = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        let mut tasks = Vec::new();
        for i in 0..64 {
            let (m, writers_in) = (m.clone(), writers_in.clone());
            tasks.push(gmprt::spawn(async move {
                for _ in 0..50 {
                    if i % 4 == 0 {
                        let mut g = m.write().await;
                        assert_eq!(writers_in.fetch_add(1, SeqCst), 0, "two writers at once");
                        g.0 += 1;
                        yield_now().await;
                        g.1 += 1;
                        writers_in.fetch_sub(1, SeqCst);
                    } else {
                        let g = m.read().await;
                        assert_eq!(writers_in.load(SeqCst), 0, "a reader beside a writer");
                        assert_eq!(g.0, g.1, "a write seen half done");
                        yield_now().await;
                    }
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    assert_eq!(*m.read_blocking(), (16 * 50, 16 * 50));
}
