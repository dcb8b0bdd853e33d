//! `Mutex<T>`'s starvation mode and FIFO hand-off, driven by hand so that the 1-ms threshold is
//! the only real time involved, and only the mode switch and the order of ownership are asserted.

use super::*;

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
