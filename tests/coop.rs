//! Cooperative budget: a task whose channel is always ready still yields its P, so other
//! tasks on the same P run. procs = 1 makes the interleaving deterministic.

mod common;
use common::*;
use gmprt::runtime::chan::chan;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;

#[test]
fn always_ready_receiver_yields_to_other_tasks() {
    let rt = rt(1);
    let n = 10_000u32;
    let (tx, rx) = chan::<u32>(n as usize);
    for i in 0..n {
        tx.try_send(i).unwrap();
    }
    drop(tx);
    let flag = Arc::new(AtomicBool::new(false));
    let drainer = rt.spawn(async move {
        let mut seen_at = None;
        let mut got = 0u32;
        while let Some(_v) = rx.recv().await {
            got += 1;
            if got == 1 {
                // Queued on this P (procs = 1) behind the running drainer: without a budget
                // it could run only after all 10,000 values are drained.
                let f = flag.clone();
                gmprt::go(move || async move { f.store(true, SeqCst) });
            }
            if seen_at.is_none() && flag.load(SeqCst) {
                seen_at = Some(got);
            }
        }
        (got, seen_at)
    });
    let (got, seen_at) = drainer.join().unwrap();
    assert_eq!(got, n);
    let at = seen_at.expect("the other task ran while values remained");
    assert!(
        at <= gmprt::runtime::coop::BUDGET as u32 + 1,
        "the drainer yielded only after {at} receives (budget {})",
        gmprt::runtime::coop::BUDGET
    );
}

#[test]
fn no_budget_outside_tasks() {
    let (tx, rx) = chan::<u32>(1000);
    let rt = rt(1);
    // block_on is not a task: 1000 ready receives in a row never yield.
    let n = rt.block_on(async move {
        for i in 0..1000 {
            tx.send(i).await.unwrap();
        }
        drop(tx);
        let mut n = 0;
        while rx.recv().await.is_some() {
            n += 1;
        }
        n
    });
    assert_eq!(n, 1000);
    assert!(gmprt::runtime::coop::has_budget_remaining());
}
