//! Errors and programmer errors at the API (zero procs, spawns outside a runtime, blocking inside a task), and `stats()`.

use super::*;

// ---------------------------------------------------------------------------------------------
// Errors and programmer errors
// ---------------------------------------------------------------------------------------------

#[test]
fn zero_procs_is_an_error() {
    match Runtime::builder().procs(0).build() {
        Err(e @ BuildError::ZeroProcs { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("procs must be at least 1"), "message: {msg}");
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("procs(0) built a runtime"),
    }
}

#[test]
fn runtime_new_starts() {
    let rt = Runtime::new();
    assert!(rt.procs() >= 1);
    assert_eq!(rt.block_on(async { gmprt::spawn(async { 2 + 2 }).await }), Ok(4));
    assert_eq!(rt.stats().procs, rt.procs());
}

#[test]
fn try_spawn_outside_a_runtime() {
    let drops = Counters::new(1);
    let d = DropGuard::new(&drops, 0);
    let r = gmprt::try_spawn(async move {
        let _d = d;
    });
    assert_eq!(r.err(), Some(SpawnError::NoRuntime));
    assert_eq!(drops.get(0), 1, "the refused future is dropped");
    assert!(SpawnError::NoRuntime.to_string().contains("not inside a gmprt runtime"));
    assert!(Handle::try_current().is_none());
}

#[test]
fn try_spawn_inside_a_runtime() {
    let rt = rt(1);
    let v = rt.block_on(async {
        assert!(Handle::try_current().is_some());
        gmprt::try_spawn(async { 5 }).expect("inside block_on").await
    });
    assert_eq!(v, Ok(5));
}

#[test]
#[should_panic(expected = "not inside a gmprt runtime")]
fn spawn_outside_a_runtime_panics() {
    drop(gmprt::spawn(async {}));
}

#[test]
#[should_panic(expected = "not inside a gmprt runtime")]
fn go_outside_a_runtime_panics() {
    drop(gmprt::go(|| async { 1 }));
}

#[test]
fn blocking_join_inside_a_task_is_refused() {
    let rt = rt(2);
    let gate = Gate::new();
    let g = gate.clone();
    let inner = rt.spawn(async move { g.wait().await });
    let outer = rt.spawn(async move {
        let _ = inner.join();
    });
    match outer.join() {
        Err(JoinError::Panicked(m)) => assert!(m.contains("would block an M"), "message: {m}"),
        other => panic!("want a panic, got {other:?}"),
    }
    gate.open();
    assert_eq!(rt.spawn(async { 1 }).join(), Ok(1));
}

#[test]
fn block_on_inside_a_task_is_refused() {
    let rt = Arc::new(rt(2));
    let rt2 = rt.clone();
    let r = rt.spawn(async move { rt2.block_on(async { 1 }) }).join();
    match r {
        Err(JoinError::Panicked(m)) => assert!(m.contains("would block an M"), "message: {m}"),
        other => panic!("want a panic, got {other:?}"),
    }
    assert_eq!(rt.spawn(async { 1 }).join(), Ok(1));
}

// ---------------------------------------------------------------------------------------------
// Stats
// ---------------------------------------------------------------------------------------------

#[test]
fn stats_are_consistent() {
    let rt = rt(3);
    let st0 = rt.stats();
    assert_eq!((st0.procs, st0.spawned, st0.completed, st0.cancelled, st0.polls), (3, 0, 0, 0, 0));
    assert_eq!(st0.local_queue_lens, vec![0, 0, 0]);

    let gate = Gate::new();
    let mut ok = Vec::new();
    let mut panicking = Vec::new();
    let mut aborted = Vec::new();
    for i in 0..300u64 {
        let g = gate.clone();
        match i % 3 {
            0 => ok.push(rt.spawn(async move { i })),
            1 => panicking.push(rt.spawn(async move {
                gmprt::yield_now().await;
                panic!("{EXPECTED} stats {i}")
            })),
            _ => aborted.push(rt.spawn(async move {
                g.wait().await;
                i
            })),
        }
    }
    gate.wait_for_waiters(100);
    // A waiter registers on the gate during the poll that then parks it: wait for the parks.
    wait_until(|| rt.stats().parked_tasks >= 100);
    let mid = rt.stats();
    assert_eq!(mid.parked_tasks, 100, "{mid:?}");
    assert!(mid.threads >= 1, "{mid:?}");
    for h in &aborted {
        h.abort();
    }
    for h in ok {
        assert!(h.join().is_ok());
    }
    for h in panicking {
        assert!(matches!(h.join(), Err(JoinError::Panicked(_))));
    }
    for h in aborted {
        assert_eq!(h.join(), Err(JoinError::Cancelled));
    }
    let st = rt.stats();
    assert_eq!((st.spawned, st.completed, st.cancelled), (300, 200, 100), "{st:?}");
    // A completing task leaves the owned list just after its handle can see the output, so an
    // M may still be finishing one completion: at most one per P.
    assert!(st.parked_tasks <= 3, "{st:?}");
    assert_eq!(st.global_queue_len, 0, "{st:?}");
    assert!(st.polls >= 300 + 100, "{st:?}");
    assert!(st.steals <= st.steal_attempts, "{st:?}");
    assert_balanced(&st);
    let handle = rt.handle();
    drop(rt);
    let after = handle.stats();
    assert_eq!((after.spawned, after.completed, after.cancelled), (300, 200, 100), "{after:?}");
    assert_shut_down(&after);
}
