//! Shutdown with tasks parked, queued and spawning from foreign threads: every future dropped once.

use super::*;

#[test]
fn shutdown_drops_parked_tasks_exactly_once() {
    const N: usize = 1_000;
    let rt = rt(2);
    let gate = Gate::new(); // never opened before shutdown
    let drops = Counters::new(N);
    let mut kept = Vec::new();
    for i in 0..N {
        let (g, d) = (gate.clone(), DropGuard::new(&drops, i));
        let h = rt.spawn(async move {
            let _d = d;
            if i % 3 == 0 {
                gmprt::yield_now().await;
            }
            g.wait().await;
            i
        });
        if i % 2 == 0 {
            kept.push(h);
        }
    }
    gate.wait_for_waiters(N);
    assert_eq!(drops.sum(), 0);
    let handle = rt.handle();
    drop(rt);
    drops.assert_all(1, "future drops at shutdown");
    for h in kept {
        assert_eq!(h.join(), Err(JoinError::Cancelled));
    }
    // Stale wakers fire after shutdown: nothing is polled or dropped again.
    gate.open();
    drops.assert_all(1, "future drops after late wakes");
    let st = handle.stats();
    assert_eq!((st.spawned, st.cancelled), (N as u64, N as u64), "{st:?}");
    assert_shut_down(&st);
}

/// Tasks in every state at shutdown. Ms are held inside polls by blocker tasks while the test
/// arranges queued tasks, then the runtime is dropped on another thread and the blockers are
/// released only once the shutdown flag is up (seen through `try_spawn`).
fn shutdown_with_everything_pending(procs: usize) {
    let rt = rt(procs);
    let handle = rt.handle();
    // 0..P: parked once on `never`; P..2P: parked on `first`, woken, parked again on `never`;
    // 2P..3P: parked on `woken`, woken while every M is blocked (queued at shutdown);
    // 3P..4P: spawned from outside while every M is blocked (global queue, never polled);
    // 4P..5P: spawned by the blockers before blocking (runnext / local queues).
    const P: usize = 300;
    let drops = Counters::new(5 * P);
    let polled = Counters::new(5 * P);
    let never = Gate::new();
    let first = Gate::new();
    let woken = Gate::new();
    let mut handles: Vec<(usize, JoinHandle<usize>)> = Vec::new();
    let spawn_waiter = |i: usize, gates: Vec<Arc<Gate>>| {
        let (d, p) = (DropGuard::new(&drops, i), polled.clone());
        handle.spawn(async move {
            let _d = d;
            p.bump(i);
            for g in gates {
                g.wait().await;
            }
            i
        })
    };
    for i in 0..P {
        handles.push((i, spawn_waiter(i, vec![never.clone()])));
        handles.push((P + i, spawn_waiter(P + i, vec![first.clone(), never.clone()])));
        handles.push((2 * P + i, spawn_waiter(2 * P + i, vec![woken.clone(), never.clone()])));
    }
    first.wait_for_waiters(P);
    woken.wait_for_waiters(P);
    first.open();
    never.wait_for_waiters(2 * P);

    // Hold every M inside a poll.
    let latch = Latch::new();
    let (tx, rx) = mpsc::channel();
    let blockers: Vec<_> = (0..procs)
        .map(|b| {
            let (latch, tx, never, drops, polled) =
                (latch.clone(), tx.clone(), never.clone(), drops.clone(), polled.clone());
            handle.spawn(async move {
                let per = P / procs + 1;
                let mut children = 0;
                for i in (4 * P + b * per..4 * P + (b + 1) * per).filter(|&i| i < 5 * P) {
                    let (d, p, g) = (DropGuard::new(&drops, i), polled.clone(), never.clone());
                    drop(gmprt::spawn(async move {
                        let _d = d;
                        p.bump(i);
                        g.wait().await;
                    }));
                    children += 1;
                }
                tx.send(()).unwrap();
                latch.wait();
                children
            })
        })
        .collect();
    for _ in 0..procs {
        rx.recv().unwrap();
    }
    // Every M is blocked, so every earlier poll has returned: the waiters are idle.
    woken.open(); // 2P..3P become queued, and stay so
    for i in 3 * P..4 * P {
        handles.push((i, spawn_waiter(i, vec![])));
    }

    let mut late_drops = 0usize;
    let late = Counters::new(1);
    std::thread::scope(|s| {
        let dropper = s.spawn(move || drop(rt));
        // Wait for the shutdown flag; each refused or accepted probe is counted.
        loop {
            late_drops += 1;
            let d = DropGuard::new(&late, 0);
            match handle.try_spawn(async move { drop(d) }) {
                Err(SpawnError::Shutdown) => break,
                Err(e) => panic!("unexpected {e:?}"),
                Ok(h) => drop(h),
            }
            std::thread::yield_now();
        }
        latch.release();
        dropper.join().unwrap();
    });

    drops.assert_all(1, "future drops at shutdown");
    assert_eq!(late.get(0), late_drops, "probe futures dropped exactly once");
    for i in 3 * P..4 * P {
        assert_eq!(polled.get(i), 0, "task {i}, queued while every M was blocked, was polled after shutdown");
    }
    for i in 2 * P..3 * P {
        assert_eq!(polled.get(i), 1, "task {i}, woken while every M was blocked, was polled again");
    }
    for (i, h) in handles {
        assert_eq!(h.join(), Err(JoinError::Cancelled), "task {i}");
    }
    let mut children = 0;
    for b in blockers {
        children += b.join().expect("blockers complete");
    }
    assert_eq!(children, P);
    never.open();
    woken.open();
    drops.assert_all(1, "future drops after late wakes");
    let st = handle.stats();
    assert_eq!(st.spawned, (5 * P + procs + late_drops) as u64, "{st:?}");
    assert_eq!(st.completed, procs as u64, "only the blockers complete: {st:?}");
    assert_shut_down(&st);
}

#[test]
fn shutdown_with_everything_pending_one_p() {
    shutdown_with_everything_pending(1);
}

#[test]
fn shutdown_with_everything_pending_two_ps() {
    shutdown_with_everything_pending(2);
}

#[test]
fn shutdown_while_foreign_threads_spawn() {
    // Spawns from outside race the shutdown: each future is run or dropped, exactly once, and
    // each handle resolves. Busy tasks that yield forever keep the Ps' local queues full, so
    // the Ms stop with queued work (which shutdown must find in every P).
    for round in 0..20 {
        let rt = rt(2);
        let handle = rt.handle();
        const T: usize = 2;
        const PER: usize = 2_000;
        const BUSY: usize = 500;
        let drops = Counters::new(T * PER);
        let ran = Counters::new(T * PER);
        let busy_drops = Counters::new(BUSY);
        let busy_polls = Arc::new(AtomicUsize::new(0));
        for i in 0..BUSY {
            let (d, polls) = (DropGuard::new(&busy_drops, i), busy_polls.clone());
            drop(rt.spawn(async move {
                let _d = d;
                loop {
                    polls.fetch_add(1, SeqCst);
                    gmprt::yield_now().await;
                }
            }));
        }
        wait_until(|| busy_polls.load(SeqCst) >= 4 * BUSY);
        let started = Arc::new(std::sync::Barrier::new(T + 1));
        std::thread::scope(|s| {
            let spawners: Vec<_> = (0..T)
                .map(|t| {
                    let (handle, drops, ran, started) = (handle.clone(), &drops, &ran, started.clone());
                    s.spawn(move || {
                        started.wait();
                        let mut hs = Vec::new();
                        for k in 0..PER {
                            let i = t * PER + k;
                            let (d, r) = (DropGuard::new(drops, i), ran.clone());
                            hs.push(handle.spawn(async move {
                                let _d = d;
                                gmprt::yield_now().await;
                                r.bump(i);
                                i
                            }));
                        }
                        hs
                    })
                })
                .collect();
            started.wait();
            drop(rt);
            for (t, sp) in spawners.into_iter().enumerate() {
                for (k, h) in sp.join().unwrap().into_iter().enumerate() {
                    let i = t * PER + k;
                    match h.join() {
                        Ok(v) => assert_eq!((v, ran.get(i)), (i, 1), "round {round}"),
                        Err(JoinError::Cancelled) => assert_eq!(ran.get(i), 0, "round {round} task {i}"),
                        Err(e) => panic!("round {round} task {i}: {e:?}"),
                    }
                }
            }
        });
        drops.assert_all(1, &format!("round {round}: future drops"));
        busy_drops.assert_all(1, &format!("round {round}: busy future drops"));
        assert_shut_down(&handle.stats());
    }
}

#[test]
fn spawn_after_shutdown() {
    let rt = rt(2);
    let handle = rt.handle();
    drop(rt);
    let drops = Counters::new(2);
    let d0 = DropGuard::new(&drops, 0);
    let h = handle.spawn(async move {
        let _d = d0;
        1
    });
    assert_eq!(drops.get(0), 1, "the refused future is dropped at once");
    assert!(h.is_finished());
    assert_eq!(h.join(), Err(JoinError::Cancelled));
    let d1 = DropGuard::new(&drops, 1);
    let r = handle.try_spawn(async move {
        let _d = d1;
        2
    });
    assert_eq!(r.err(), Some(SpawnError::Shutdown));
    assert_eq!(drops.get(1), 1);
    let st = handle.stats();
    assert_eq!((st.spawned, st.cancelled), (2, 2), "{st:?}");
    assert_shut_down(&st);
}
