//! `abort` of a task in every state: parked, queued (locally and globally), running, finished, itself.

use super::*;

#[test]
fn abort_parked_task_from_outside() {
    let rt = rt(2);
    let gate = Gate::new();
    let drops = Counters::new(1);
    let d = DropGuard::new(&drops, 0);
    let g = gate.clone();
    let h = rt.spawn(async move {
        let _d = d;
        g.wait().await;
        1u32
    });
    gate.wait_for_waiters(1);
    assert!(!h.is_finished());
    h.abort();
    h.abort(); // twice is harmless
    wait_until(|| h.is_finished());
    assert_eq!(drops.get(0), 1, "the aborted future is dropped once, before the handle resolves");
    // A wake after cancellation must not poll (or drop) anything again.
    gate.open();
    assert_eq!(h.join(), Err(JoinError::Cancelled));
    assert_eq!(drops.get(0), 1);
    let st = rt.stats();
    assert_eq!((st.spawned, st.completed, st.cancelled), (1, 0, 1), "{st:?}");
    assert_balanced(&st);
}

#[test]
fn abort_parked_task_from_a_task_on_one_p() {
    // On one P the child has certainly finished its poll and parked before the parent resumes.
    let rt = rt(1);
    let drops = Counters::new(1);
    let gate = Gate::new();
    let (d, g) = (drops.clone(), gate.clone());
    let res = rt
        .spawn(async move {
            let dg = DropGuard::new(&d, 0);
            let g2 = g.clone();
            let child = gmprt::spawn(async move {
                let _dg = dg;
                g2.wait().await;
                5u8
            });
            while g.waiters() == 0 {
                gmprt::yield_now().await;
            }
            child.abort();
            let r = child.await;
            (r, d.get(0))
        })
        .join()
        .unwrap();
    assert_eq!(res, (Err(JoinError::Cancelled), 1));
    gate.open();
    drop(rt);
    assert_eq!(drops.get(0), 1);
}

#[test]
fn abort_of_finished_task_keeps_its_output() {
    let rt = rt(2);
    let drops = Counters::new(1);
    let d = drops.clone();
    let h = rt.spawn(async move { Output { value: 11, _guard: DropGuard::new(&d, 0) } });
    wait_until(|| h.is_finished());
    h.abort();
    let out = h.join().expect("abort after completion keeps Ok");
    assert_eq!(out.value, 11);
    assert_eq!(drops.get(0), 0, "the output is alive while we hold it");
    drop(out);
    assert_eq!(drops.get(0), 1);
    let st = rt.stats();
    assert_eq!((st.completed, st.cancelled), (1, 0), "{st:?}");
}

#[test]
fn abort_of_queued_task_never_polls_it() {
    // One P, busy with the parent: the child sits in runnext until the parent yields.
    let rt = rt(1);
    let polled = Arc::new(AtomicBool::new(false));
    let drops = Counters::new(1);
    let (p, d) = (polled.clone(), drops.clone());
    let r = rt
        .spawn(async move {
            let dg = DropGuard::new(&d, 0);
            let child = gmprt::spawn(async move {
                let _dg = dg;
                p.store(true, SeqCst);
                1u8
            });
            child.abort();
            child.await
        })
        .join()
        .unwrap();
    assert_eq!(r, Err(JoinError::Cancelled));
    assert!(!polled.load(SeqCst), "an aborted queued task was polled");
    assert_eq!(drops.get(0), 1);
    let st = rt.stats();
    assert_eq!((st.spawned, st.completed, st.cancelled), (2, 1, 1), "{st:?}");
}

#[test]
fn abort_of_task_queued_in_the_global_queue() {
    // Both Ms are held by blockers, so tasks spawned from outside wait in the global queue.
    let rt = rt(2);
    let latch = Latch::new();
    let (tx, rx) = mpsc::channel();
    let blockers: Vec<_> = (0..2)
        .map(|_| {
            let (latch, tx) = (latch.clone(), tx.clone());
            rt.spawn(async move {
                tx.send(()).unwrap();
                latch.wait();
            })
        })
        .collect();
    rx.recv().unwrap();
    rx.recv().unwrap();
    let polled = Counters::new(100);
    let drops = Counters::new(100);
    let hs: Vec<_> = (0..100)
        .map(|i| {
            let (p, d) = (polled.clone(), DropGuard::new(&drops, i));
            rt.spawn(async move {
                let _d = d;
                p.bump(i);
                i
            })
        })
        .collect();
    for h in hs.iter().step_by(2) {
        h.abort();
    }
    latch.release();
    for (i, h) in hs.into_iter().enumerate() {
        if i % 2 == 0 {
            assert_eq!(h.join(), Err(JoinError::Cancelled));
            assert_eq!(polled.get(i), 0, "aborted task {i} was polled");
        } else {
            assert_eq!(h.join(), Ok(i));
            assert_eq!(polled.get(i), 1);
        }
    }
    for b in blockers {
        b.join().unwrap();
    }
    drops.assert_all(1, "future drops");
    let st = rt.stats();
    assert_eq!(st.cancelled, 50, "{st:?}");
    assert_balanced(&st);
}

#[test]
fn abort_of_running_task_takes_effect_when_its_poll_returns_pending() {
    let rt = rt(2);
    let latch = Latch::new();
    let gate = Gate::new(); // never opened
    let drops = Counters::new(1);
    let (tx, rx) = mpsc::channel();
    let (l, g, d) = (latch.clone(), gate.clone(), DropGuard::new(&drops, 0));
    let h = rt.spawn(async move {
        let _d = d;
        tx.send(()).unwrap();
        l.wait(); // the M is inside this poll while the test aborts
        g.wait().await;
        0u8
    });
    rx.recv().unwrap();
    h.abort();
    assert!(!h.is_finished(), "a running poll cannot be preempted");
    latch.release();
    assert_eq!(h.join(), Err(JoinError::Cancelled));
    assert_eq!(drops.get(0), 1);
    assert_eq!(gate.waiters(), 1);
}

#[test]
fn abort_of_running_task_that_then_completes() {
    // Futures are never preempted: an abort that arrives during the poll that returns Ready
    // cannot stop it. Either outcome is allowed, but it must be consistent.
    let rt = rt(2);
    let latch = Latch::new();
    let drops = Counters::new(2); // 0: future, 1: output
    let (tx, rx) = mpsc::channel();
    let (l, d, dd) = (latch.clone(), DropGuard::new(&drops, 0), drops.clone());
    let h = rt.spawn(async move {
        let _d = d;
        tx.send(()).unwrap();
        l.wait();
        Output { value: 8, _guard: DropGuard::new(&dd, 1) }
    });
    rx.recv().unwrap();
    h.abort();
    latch.release();
    match h.join() {
        Ok(out) => {
            assert_eq!(out.value, 8);
            drop(out);
            assert_eq!(drops.get(1), 1);
        }
        Err(JoinError::Cancelled) => {
            // The output was produced, so it must have been dropped by the runtime.
            assert_eq!(drops.get(1), 1);
        }
        Err(e) => panic!("unexpected {e:?}"),
    }
    assert_eq!(drops.get(0), 1);
    drop(rt);
    assert_eq!(drops.get(1), 1);
}

#[test]
fn task_aborting_itself() {
    let rt = rt(2);
    let gate = Gate::new();
    let drops = Counters::new(1);
    let me: Arc<Mutex<Option<JoinHandle<u8>>>> = Arc::default();
    let (m, g, d) = (me.clone(), gate.clone(), DropGuard::new(&drops, 0));
    let (tx, rx) = mpsc::channel::<()>();
    let h = rt.spawn(async move {
        let _d = d;
        rx.recv().unwrap(); // wait until our handle is in `me`
        m.lock().unwrap().as_ref().unwrap().abort();
        g.wait().await;
        1
    });
    *me.lock().unwrap() = Some(h);
    tx.send(()).unwrap();
    gate.wait_for_waiters(1);
    let h = loop {
        // The task aborts through a reference to the handle; take it back once it has.
        let mut slot = me.lock().unwrap();
        if slot.as_ref().unwrap().is_finished() {
            break slot.take().unwrap();
        }
        drop(slot);
        std::thread::yield_now();
    };
    assert_eq!(h.join(), Err(JoinError::Cancelled));
    assert_eq!(drops.get(0), 1);
}
