//! `Once`: exactly once across tasks and threads, a panic counts as done, a cancelled runner
//! lets another caller run.

use super::*;

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
