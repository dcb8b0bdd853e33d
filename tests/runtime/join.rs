//! `JoinHandle`s dropped before and after completion, and wakes of tasks from foreign threads.

use super::*;

// ---------------------------------------------------------------------------------------------
// JoinHandle: drop before / after completion, waker replacement
// ---------------------------------------------------------------------------------------------

#[test]
fn join_handle_dropped_before_completion_output_dropped_once() {
    let rt = rt(2);
    const N: usize = 200;
    let gate = Gate::new();
    let outs = Counters::new(N);
    let (tx, rx) = mpsc::channel();
    for i in 0..N {
        let (g, o, tx) = (gate.clone(), outs.clone(), tx.clone());
        let h = rt.spawn(async move {
            g.wait().await;
            tx.send(i).unwrap();
            Output { value: i as u64, _guard: DropGuard::new(&o, i) }
        });
        drop(h);
    }
    gate.wait_for_waiters(N);
    gate.open();
    for _ in 0..N {
        rx.recv().unwrap();
    }
    // The send happens before the output exists; wait for the runtime to drop each output.
    wait_until(|| outs.sum() == N);
    drop(rt);
    outs.assert_all(1, "output drops");
}

#[test]
fn join_handle_dropped_after_completion_output_dropped_once() {
    let rt = rt(2);
    const N: usize = 100;
    let outs = Counters::new(N);
    let hs: Vec<_> = (0..N)
        .map(|i| {
            let o = outs.clone();
            rt.spawn(async move { Output { value: i as u64, _guard: DropGuard::new(&o, i) } })
        })
        .collect();
    for (i, h) in hs.into_iter().enumerate() {
        wait_until(|| h.is_finished());
        assert_eq!(outs.get(i), 0, "output {i} dropped while its handle still holds it");
        drop(h);
        assert_eq!(outs.get(i), 1, "dropping the handle of a finished task drops its output");
    }
    drop(rt);
    outs.assert_all(1, "output drops");
}

#[test]
fn join_handles_dropped_while_tasks_complete() {
    // Handle drops race completions (and, for some, a stored join waker): every output is
    // dropped exactly once, by whichever side comes second.
    const N: usize = 20_000;
    let rt = rt(2);
    let outs = Counters::new(N);
    let hs: Vec<_> = (0..N)
        .map(|i| {
            let o = outs.clone();
            rt.spawn(async move {
                if i % 4 == 0 {
                    gmprt::yield_now().await;
                }
                Output { value: i as u64, _guard: DropGuard::new(&o, i) }
            })
        })
        .collect();
    rt.block_on(async {
        for (i, mut h) in hs.into_iter().enumerate() {
            if i % 3 == 0 {
                // Store a join waker first, then drop.
                std::future::poll_fn(|cx| {
                    let _ = Pin::new(&mut h).poll(cx);
                    Poll::Ready(())
                })
                .await;
            }
            drop(h);
        }
    });
    wait_until(|| outs.sum() >= N);
    drop(rt);
    outs.assert_all(1, "output drops");
}

#[test]
fn aborts_racing_completions() {
    const N: usize = 20_000;
    let rt = rt(2);
    let produced = Counters::new(N);
    let outs = Counters::new(N);
    let futs = Counters::new(N);
    let hs: Vec<_> = (0..N)
        .map(|i| {
            let (p, o, f) = (produced.clone(), outs.clone(), DropGuard::new(&futs, i));
            rt.spawn(async move {
                let _f = f;
                if i % 2 == 0 {
                    gmprt::yield_now().await;
                }
                p.bump(i);
                Output { value: i as u64, _guard: DropGuard::new(&o, i) }
            })
        })
        .collect();
    let mut cancelled = 0;
    for h in &hs {
        h.abort();
    }
    for (i, h) in hs.into_iter().enumerate() {
        match h.join() {
            Ok(out) => {
                assert_eq!(out.value, i as u64);
                assert_eq!(produced.get(i), 1);
            }
            Err(JoinError::Cancelled) => {
                assert_eq!(produced.get(i), 0, "task {i} produced an output but joined Cancelled");
                cancelled += 1;
            }
            Err(e) => panic!("task {i}: {e:?}"),
        }
        assert_eq!(futs.get(i), 1, "task {i}: future drops");
        assert_eq!(outs.get(i), produced.get(i), "task {i}: output drops");
    }
    let st = rt.stats();
    assert_eq!(st.cancelled, cancelled, "{st:?}");
    assert_balanced(&st);
}

#[test]
fn output_of_finished_task_survives_shutdown() {
    let rt = rt(2);
    let outs = Counters::new(2);
    let (o0, o1) = (outs.clone(), outs.clone());
    let h0 = rt.spawn(async move { Output { value: 1, _guard: DropGuard::new(&o0, 0) } });
    let h1 = rt.spawn(async move { Output { value: 2, _guard: DropGuard::new(&o1, 1) } });
    wait_until(|| h0.is_finished() && h1.is_finished());
    drop(rt);
    assert_eq!(outs.sum(), 0, "shutdown dropped an output that belongs to a handle");
    assert_eq!(h0.join().unwrap().value, 1);
    assert_eq!(outs.get(0), 1);
    drop(h1);
    assert_eq!(outs.get(1), 1);
}

#[test]
fn join_handle_polled_then_dropped() {
    // The handle stores a waker (JOIN_WAKER) and is then dropped before the task completes.
    let rt = rt(2);
    let gate = Gate::new();
    let outs = Counters::new(1);
    let (g, o) = (gate.clone(), outs.clone());
    let mut h = rt.spawn(async move {
        g.wait().await;
        Output { value: 3, _guard: DropGuard::new(&o, 0) }
    });
    let first = rt.block_on(std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut h).poll(cx).is_pending())));
    assert!(first, "the task cannot be done before the gate opens");
    drop(h);
    gate.open();
    wait_until(|| outs.get(0) == 1);
    drop(rt);
    assert_eq!(outs.get(0), 1);
}

#[test]
fn join_handle_waker_is_replaced_when_polled_from_elsewhere() {
    // Poll the handle once from block_on (one waker), then await it from a task (another):
    // the completion must wake the second one.
    let rt = rt(2);
    let gate = Gate::new();
    let g = gate.clone();
    let mut h = rt.spawn(async move {
        g.wait().await;
        77u32
    });
    let pending = rt.block_on(std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut h).poll(cx).is_pending())));
    assert!(pending);
    // A JoinHandle is itself a future: the waiter task awaits it.
    let waiter = rt.spawn(h);
    // Make sure the waiter has parked on the handle before the gate opens.
    wait_until(|| rt.stats().parked_tasks == 2);
    gate.open();
    assert_eq!(waiter.join(), Ok(Ok(77)));
}

// ---------------------------------------------------------------------------------------------
// Wakes from foreign threads
// ---------------------------------------------------------------------------------------------

#[test]
fn wake_from_foreign_threads() {
    const N: usize = 1_000;
    for procs in [1, 2] {
        let rt = rt(procs);
        let slots: Vec<Arc<Slot>> = (0..N).map(|_| Arc::default()).collect();
        let hs: Vec<_> = slots
            .iter()
            .map(|s| {
                let t = s.take();
                rt.spawn(async move { t.await + 1 })
            })
            .collect();
        std::thread::scope(|sc| {
            for half in slots.chunks(N / 2) {
                sc.spawn(move || {
                    for (k, s) in half.iter().enumerate() {
                        // Fill some before and some after the task parked.
                        if k % 2 == 0 {
                            wait_until(|| s.has_waiter());
                        }
                        s.fill(k as u64);
                    }
                });
            }
        });
        for (i, h) in hs.into_iter().enumerate() {
            assert_eq!(h.join(), Ok((i % (N / 2)) as u64 + 1), "procs={procs} task {i}");
        }
        assert_balanced(&rt.stats());
    }
}

#[test]
fn gate_opened_from_foreign_thread_wakes_many_tasks() {
    const N: usize = 2_000;
    let rt = rt(2);
    let gates = [Gate::new(), Gate::new()];
    let hs: Vec<_> = (0..N)
        .map(|i| {
            let g = gates[i % 2].clone();
            rt.spawn(async move {
                g.wait().await;
                i
            })
        })
        .collect();
    std::thread::scope(|s| {
        for g in &gates {
            s.spawn(move || {
                g.wait_for_waiters(N / 2);
                g.open();
            });
        }
    });
    for (i, h) in hs.into_iter().enumerate() {
        assert_eq!(h.join(), Ok(i));
    }
    assert_balanced(&rt.stats());
}
