//! Spawning: every task runs exactly once, nested spawn trees, and spawns from outside the runtime.

use super::*;

// ---------------------------------------------------------------------------------------------
// Every task runs exactly once
// ---------------------------------------------------------------------------------------------

#[test]
fn every_task_runs_exactly_once_100k() {
    const N: usize = 100_000;
    let rt = rt(2);
    let runs = Counters::new(N);
    let drops = Counters::new(N);
    let bad = rt.block_on(async {
        let hs: Vec<_> = (0..N)
            .map(|i| {
                let runs = runs.clone();
                let g = DropGuard::new(&drops, i);
                gmprt::spawn(async move {
                    let _g = g;
                    runs.bump(i);
                    i as u64 * 3 + 1
                })
            })
            .collect();
        let mut bad = Vec::new();
        for (i, h) in hs.into_iter().enumerate() {
            match h.await {
                Ok(v) if v == i as u64 * 3 + 1 => {}
                other => bad.push((i, other)),
            }
        }
        bad
    });
    assert!(bad.is_empty(), "wrong results (first 5): {:?}", &bad[..bad.len().min(5)]);
    runs.assert_all(1, "runs");
    drops.assert_all(1, "future drops");
    let st = rt.stats();
    assert_eq!(st.spawned, N as u64, "{st:?}");
    assert_eq!(st.completed, N as u64, "{st:?}");
    assert_eq!(st.cancelled, 0, "{st:?}");
    // None of these futures ever returns Pending: one poll each.
    assert_eq!(st.polls, N as u64, "{st:?}");
    assert_balanced(&st);
}

#[test]
fn every_task_runs_exactly_once_when_spawned_from_tasks() {
    const SPAWNERS: usize = 8;
    const PER: usize = 5_000;
    for procs in [1, 3] {
        let rt = rt(procs);
        let runs = Counters::new(SPAWNERS * PER);
        let total: u64 = rt.block_on(async {
            let spawners: Vec<_> = (0..SPAWNERS)
                .map(|s| {
                    let runs = runs.clone();
                    gmprt::spawn(async move {
                        // Children go to this P's runnext / local queue; other Ps steal them.
                        let hs: Vec<_> = (0..PER)
                            .map(|k| {
                                let runs = runs.clone();
                                let i = s * PER + k;
                                gmprt::spawn(async move {
                                    runs.bump(i);
                                    if i.is_multiple_of(7) {
                                        gmprt::yield_now().await;
                                    }
                                    i as u64
                                })
                            })
                            .collect();
                        let mut sum = 0;
                        for h in hs {
                            sum += h.await.unwrap();
                        }
                        sum
                    })
                })
                .collect();
            let mut total = 0;
            for h in spawners {
                total += h.await.unwrap();
            }
            total
        });
        let n = (SPAWNERS * PER) as u64;
        assert_eq!(total, n * (n - 1) / 2, "procs={procs}");
        runs.assert_all(1, "runs");
        let st = rt.stats();
        assert_eq!(st.spawned, n + SPAWNERS as u64, "procs={procs} {st:?}");
        assert_balanced(&st);
    }
}

// ---------------------------------------------------------------------------------------------
// Nested spawns
// ---------------------------------------------------------------------------------------------

#[test]
fn nested_spawn_tree_joined() {
    let (depth, fanout) = (6, 4);
    let nodes = tree_nodes(depth, fanout);
    for procs in 1..=4 {
        let rt = rt(procs);
        let visits = Counters::new(nodes);
        let leaves = rt.block_on(joined_tree(0, depth, fanout, visits.clone()));
        assert_eq!(leaves, fanout.pow(depth) as u64, "procs={procs}");
        visits.assert_all(1, "tree node visits");
        let st = rt.stats();
        // The root runs in block_on (not a task); every other node is a task.
        assert_eq!(st.spawned, nodes as u64 - 1, "procs={procs} {st:?}");
        assert_balanced(&st);
    }
}

#[test]
fn nested_spawn_tree_detached() {
    let (depth, fanout) = (5, 5);
    let nodes = tree_nodes(depth, fanout);
    for procs in [1, 2, 4] {
        let rt = rt(procs);
        let visits = Counters::new(nodes);
        let remaining = Arc::new(AtomicUsize::new(nodes));
        let (tx, rx) = mpsc::channel();
        // Spawned from outside: the root goes through the global queue.
        drop(rt.spawn(detached_tree(0, depth, fanout, visits.clone(), remaining.clone(), tx)));
        rx.recv().expect("the last node reports");
        assert_eq!(remaining.load(SeqCst), 0);
        visits.assert_all(1, "tree node visits");
        drop(rt);
    }
}

// ---------------------------------------------------------------------------------------------
// Spawning from outside the runtime
// ---------------------------------------------------------------------------------------------

#[test]
fn spawn_from_foreign_threads() {
    const THREADS: usize = 4;
    const PER: usize = 2_000;
    let rt = rt(2);
    let runs = Counters::new(THREADS * PER);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let handle: Handle = rt.handle();
            let rt = &rt;
            let runs = runs.clone();
            s.spawn(move || {
                let hs: Vec<JoinHandle<u64>> = (0..PER)
                    .map(|k| {
                        let i = t * PER + k;
                        let runs = runs.clone();
                        let fut = async move {
                            runs.bump(i);
                            if i.is_multiple_of(3) {
                                gmprt::yield_now().await;
                            }
                            i as u64 * 2
                        };
                        match k % 3 {
                            0 => handle.spawn(fut),
                            1 => handle.try_spawn(fut).expect("try_spawn on a live runtime"),
                            _ => rt.spawn(fut),
                        }
                    })
                    .collect();
                for (k, h) in hs.into_iter().enumerate() {
                    assert_eq!(h.join(), Ok((t * PER + k) as u64 * 2));
                }
            });
        }
    });
    runs.assert_all(1, "runs");
    let st = rt.stats();
    assert_eq!(st.spawned, (THREADS * PER) as u64, "{st:?}");
    assert_balanced(&st);
}

#[test]
fn go_runs_a_closure_as_a_task() {
    let rt = rt(2);
    let on_m = rt.block_on(async {
        let a = gmprt::go(|| async { 6 * 7 });
        let b = gmprt::go(|| async { std::thread::current().name().map(str::to_owned) });
        (a.await.unwrap(), b.await.unwrap())
    });
    assert_eq!(on_m.0, 42);
    assert!(on_m.1.as_deref().is_some_and(|n| n.starts_with("gmprt-m")), "ran on {:?}", on_m.1);
}

/// Issue 11 item 2: a Go programmer's first port, `go(move || async move { tx.send(1).await })`,
/// compiled and silently never ran its body. Now the body runs (and blocks on the channel like
/// a goroutine would until the receiver comes); the detached handle is dropped at once.
#[test]
fn go_runs_the_body_of_an_async_closure() {
    let rt = rt(2);
    let got = rt.block_on(async {
        let (tx, rx) = gmprt::runtime::chan::chan::<u32>(0);
        let tx2 = tx.clone();
        drop(gmprt::go(move || async move { tx.send(1).await.unwrap() }));
        // Rust's async closures work too.
        drop(gmprt::go(async move || tx2.send(2).await.unwrap()));
        let mut got = vec![rx.recv().await.unwrap(), rx.recv().await.unwrap()];
        got.sort_unstable();
        got
    });
    assert_eq!(got, [1, 2]);
}

#[test]
fn thread_name_prefixes_m_threads() {
    let rt = Runtime::builder().procs(2).thread_name("probe").build().unwrap();
    let names: Vec<Option<String>> = (0..16)
        .map(|_| rt.spawn(async { std::thread::current().name().map(str::to_owned) }).join().unwrap())
        .collect();
    for n in names {
        assert!(n.as_deref().is_some_and(|n| n.starts_with("probe-")), "task ran on thread {n:?}");
    }
}

#[test]
fn cross_runtime_spawn_and_join() {
    let a = rt(2);
    let b = rt(1);
    let hb = b.handle();
    let sum = a.block_on(async move {
        let hs: Vec<_> = (0..200u64)
            .map(|i| {
                let hb = hb.clone();
                gmprt::spawn(async move {
                    // A task of runtime A awaits a task of runtime B: B's M wakes A's task.
                    let inner = hb.spawn(async move {
                        gmprt::yield_now().await;
                        i * 10
                    });
                    inner.await.unwrap() + 1
                })
            })
            .collect();
        let mut s = 0;
        for h in hs {
            s += h.await.unwrap();
        }
        s
    });
    assert_eq!(sum, (0..200u64).map(|i| i * 10 + 1).sum::<u64>());
    assert_eq!(a.stats().spawned, 200);
    assert_eq!(b.stats().spawned, 200);
    assert_balanced(&a.stats());
    assert_balanced(&b.stats());
}
