//! `Mutex<T>`: mutual exclusion under contention, the basics, and cancellation of queued
//! lockers (a dropped or aborted `lock()` future never loses the lock).

use super::*;

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
