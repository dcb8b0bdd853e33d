//! `WaitGroup`: many tasks and waiters, waiting at zero and reuse, `done` below zero.

use super::*;

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
