//! Panics in a poll, in a drop of a future or of an output: each contained and reported once.

use super::*;

/// The handle marks a taken output in its pointer's low bit (it is one word): a second poll is
/// refused, and dropping the handle afterwards does not drop the taken output again, whether
/// the output was taken on the first poll or after the handle parked.
#[test]
fn a_handle_polled_after_its_output_refuses_and_drops_nothing_twice() {
    for procs in [1, 2] {
        let rt = rt(procs);
        let drops = Counters::new(2);
        let gate = Gate::new();
        let (d0, d1, g) = (drops.clone(), drops.clone(), gate.clone());
        let (ready, parked) = rt.block_on(async move {
            // Finished before the first poll of its handle.
            let mut ready = gmprt::spawn(async move { Output { value: 7, _guard: DropGuard::new(&d0, 0) } });
            while !ready.is_finished() {
                gmprt::yield_now().await;
            }
            let out = (&mut ready).await.expect("the task returns");
            assert_eq!(out.value, 7);
            drop(out);
            // Finished after its handle stored a waker.
            let mut parked = gmprt::spawn(async move {
                g.wait().await;
                Output { value: 8, _guard: DropGuard::new(&d1, 1) }
            });
            let opener = gmprt::spawn(async move { gate_open_later(gate).await });
            let out = (&mut parked).await.expect("the task returns");
            assert_eq!(out.value, 8);
            drop(out);
            opener.await.expect("the opener returns");
            (ready, parked)
        });
        drops.assert_all(1, "each output dropped once, by its reader");
        for mut h in [ready, parked] {
            assert!(h.is_finished());
            let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut cx = Context::from_waker(Waker::noop());
                let _ = Pin::new(&mut h).poll(&mut cx);
            }));
            assert!(again.is_err(), "a second poll after the output must panic");
            drop(h);
        }
        drops.assert_all(1, "dropping the handles dropped nothing again");
        assert_eq!(rt.stats().live(), 0, "both tasks completed");
    }
}

/// Opens `gate` after one yield, so the task waiting on it has parked and its joiner stored a
/// waker.
async fn gate_open_later(gate: Arc<Gate>) {
    gmprt::yield_now().await;
    gate.open();
}

#[test]
fn panicking_task_reports_message_and_runtime_keeps_working() {
    for procs in [1, 2] {
        let rt = rt(procs);
        let formatted = rt.spawn(async {
            gmprt::yield_now().await;
            panic!("{EXPECTED} formatted {}", 42);
        });
        let literal = rt.spawn(async { panic!("[expected test panic] literal") });
        let payload = rt.spawn(async { std::panic::panic_any(ExpectedPayload(7)) });
        assert_eq!(formatted.join(), Err(JoinError::Panicked(format!("{EXPECTED} formatted 42"))));
        assert_eq!(literal.join(), Err(JoinError::Panicked(format!("{EXPECTED} literal"))));
        match payload.join() {
            Err(JoinError::Panicked(m)) => assert!(m.contains("non-string"), "message: {m}"),
            other => panic!("want Panicked for a non-string payload, got {other:?}"),
        }
        // The Ms survived: more work runs, including panics inside nested tasks.
        let sum = rt.block_on(async {
            let hs: Vec<_> = (0..500u64)
                .map(|i| {
                    gmprt::spawn(async move {
                        if i % 50 == 0 {
                            let inner = gmprt::spawn(async move {
                                panic!("{EXPECTED} inner {i}");
                            });
                            assert_eq!(
                                inner.await,
                                Err(JoinError::Panicked(format!("{EXPECTED} inner {i}")))
                            );
                        }
                        gmprt::yield_now().await;
                        i
                    })
                })
                .collect();
            let mut s = 0;
            for h in hs {
                s += h.await.unwrap();
            }
            s
        });
        assert_eq!(sum, (0..500u64).sum::<u64>());
        let st = rt.stats();
        // Panicked tasks count as completed.
        assert_eq!(st.spawned, 3 + 500 + 10, "{st:?}");
        assert_eq!(st.completed, st.spawned, "{st:?}");
        assert_balanced(&st);
    }
}

/// A future that is ready at once and panics when dropped.
struct PanicOnDrop {
    drops: Counters,
}

impl Future for PanicOnDrop {
    type Output = u32;
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u32> {
        Poll::Ready(7)
    }
}

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        self.drops.bump(0);
        panic!("{EXPECTED} drop of future");
    }
}

/// A future that parks forever (on a gate) and panics when dropped.
struct ParkedPanicOnDrop {
    wait: GateWait,
    drops: Counters,
    i: usize,
}

impl Future for ParkedPanicOnDrop {
    type Output = u32;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        Pin::new(&mut self.wait).poll(cx).map(|()| 1)
    }
}

impl Drop for ParkedPanicOnDrop {
    fn drop(&mut self) {
        self.drops.bump(self.i);
        panic!("{EXPECTED} drop of parked future {}", self.i);
    }
}

#[test]
fn panic_in_drop_of_completed_future_becomes_the_result() {
    let rt = rt(2);
    let drops = Counters::new(1);
    let h = rt.spawn(PanicOnDrop { drops: drops.clone() });
    assert_eq!(h.join(), Err(JoinError::Panicked(format!("{EXPECTED} drop of future"))));
    assert_eq!(drops.get(0), 1, "the future is dropped exactly once");
    assert_eq!(rt.block_on(async { gmprt::spawn(async { 5 }).await }), Ok(5));
    assert_balanced(&rt.stats());
}

#[test]
fn panic_in_drop_of_cancelled_future_is_contained() {
    let rt = rt(2);
    let gate = Gate::new(); // never opened
    let drops = Counters::new(3);
    let mk = |i| ParkedPanicOnDrop { wait: gate.wait(), drops: drops.clone(), i };
    let aborted = rt.spawn(mk(0));
    let at_shutdown = rt.spawn(mk(1));
    let detached_at_shutdown = rt.spawn(mk(2));
    drop(detached_at_shutdown);
    gate.wait_for_waiters(3);
    aborted.abort();
    assert_eq!(aborted.join(), Err(JoinError::Cancelled));
    assert_eq!(drops.get(0), 1);
    // The M that dropped it is still there.
    assert_eq!(rt.spawn(async { 9 }).join(), Ok(9));
    let handle = rt.handle();
    drop(rt); // drops the two parked futures; their panics must not escape shutdown
    assert_eq!(at_shutdown.join(), Err(JoinError::Cancelled));
    drops.assert_all(1, "panicking future drops");
    assert_shut_down(&handle.stats());
}

/// An output whose drop panics (and is counted).
struct PanickyOutput {
    drops: Counters,
    i: usize,
}

impl Drop for PanickyOutput {
    fn drop(&mut self) {
        self.drops.bump(self.i);
        panic!("{EXPECTED} drop of output {}", self.i);
    }
}

#[test]
fn panic_in_drop_of_unclaimed_output_is_contained() {
    let rt = rt(2);
    let drops = Counters::new(2);
    // 0: detached before completion, so the runtime drops the output.
    let gate = Gate::new();
    let g = gate.clone();
    let d = drops.clone();
    let h0 = rt.spawn(async move {
        g.wait().await;
        PanickyOutput { drops: d, i: 0 }
    });
    gate.wait_for_waiters(1);
    drop(h0);
    gate.open();
    // 1: completed, then the handle is dropped, so the handle drops the output.
    let d = drops.clone();
    let h1 = rt.spawn(async move { PanickyOutput { drops: d, i: 1 } });
    wait_until(|| h1.is_finished());
    drop(h1);
    assert_eq!(drops.get(1), 1);
    wait_until(|| drops.get(0) == 1);
    assert_eq!(rt.spawn(async { 3 }).join(), Ok(3));
    drop(rt);
    drops.assert_all(1, "output drops");
}
