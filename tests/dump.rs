//! `Runtime::dump`: each parked task's line names what it waits on and where it was spawned.
//! Synchronised on events: the test waits until the dump itself shows every task parked.

use gmprt::runtime::chan::chan;
use gmprt::runtime::dump::{ExternalWait, TaskDump, TaskState, WaitReason};
use gmprt::runtime::sync::{Mutex, WaitGroup};
use gmprt::runtime::{time, Runtime};
use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

#[test]
fn every_parked_task_says_what_it_waits_on_and_where_it_was_spawned() {
    let rt = Runtime::builder().procs(2).build().unwrap();
    let (tx, rx) = chan::<u32>(0);
    let (full_tx, full_rx) = chan::<u32>(0);
    let m = Arc::new(Mutex::new(()));
    let wg = WaitGroup::new();
    wg.add(2);
    let (held_tx, held_rx) = chan::<()>(1);

    let recv = rt.spawn(async move { rx.recv().await });
    let send = rt.spawn(async move { full_tx.send(1).await.ok() });
    let m2 = m.clone();
    let holder = rt.spawn(async move {
        let _g = m2.lock().await;
        held_tx.send(()).await.unwrap();
        // Holds the mutex until the WaitGroup is done (never, in this test's lifetime).
        std::future::pending::<()>().await
    });
    rt.block_on(async { held_rx.recv().await.unwrap() });
    let m3 = m.clone();
    let locker = rt.spawn(async move {
        let _g = m3.lock().await;
    });
    let wg2 = wg.clone();
    let waiter = rt.spawn(async move { wg2.wait().await });
    let sleeper = rt.spawn(async { time::sleep(Duration::from_secs(3600)).await });
    let never = rt.spawn(async { time::sleep(Duration::MAX).await });
    let joined = rt.spawn(std::future::pending::<()>());
    let joined_id = joined.id();
    let joiner = rt.spawn(async move { joined.await.ok() });
    let device = ExternalWait::named("test device");
    let external = rt.spawn(poll_fn(move |_| {
        device.waiting(42);
        Poll::<()>::Pending
    }));

    let ids = [
        recv.id(),
        send.id(),
        holder.id(),
        locker.id(),
        waiter.id(),
        sleeper.id(),
        never.id(),
        joined_id,
        joiner.id(),
        external.id(),
    ];
    let d = loop {
        let d = rt.dump();
        let parked = |id| d.tasks.iter().any(|t| t.id == Some(id) && t.state == TaskState::Parked);
        if ids.iter().all(|&id| parked(id)) {
            break d;
        }
        std::thread::yield_now();
    };
    let reason = |id| line(&d, id).wait;
    assert!(matches!(reason(recv.id()), WaitReason::ChanRecv { .. }));
    assert!(matches!(reason(send.id()), WaitReason::ChanSend { .. }));
    assert!(matches!(reason(locker.id()), WaitReason::Mutex { .. }));
    assert_eq!(reason(waiter.id()), WaitReason::WaitGroup { count: 2 });
    match reason(sleeper.id()) {
        WaitReason::Timer { due_in: Some(d) } => assert!(d <= Duration::from_secs(3600)),
        other => panic!("sleeper waits on {other}"),
    }
    assert_eq!(reason(never.id()), WaitReason::Timer { due_in: None });
    assert_eq!(reason(joiner.id()), WaitReason::Join { task: joined_id });
    assert_eq!(reason(joined_id), WaitReason::Unknown);
    assert_eq!(reason(external.id()), WaitReason::External { what: "test device", id: 42 });
    for id in ids {
        assert!(line(&d, id).site.contains("tests/dump.rs"), "{}", line(&d, id));
    }
    // The printed form, as Go's goroutine dump reads.
    let text = d.to_string();
    assert!(text.contains(&format!("{} [parked]: spawned at tests/dump.rs", recv.id())), "{text}");
    assert!(text.contains("waiting on WaitGroup at 2"), "{text}");
    assert!(text.contains("waiting on test device #42 (outside the runtime)"), "{text}");
    // `rx`'s sender is still alive in `tx`; dropping the runtime cancels every parked task.
    drop(tx);
    drop(full_rx);
    drop(rt);
}

fn line(d: &TaskDump, id: gmprt::runtime::TaskId) -> gmprt::runtime::dump::TaskInfo {
    d.tasks.iter().find(|t| t.id == Some(id)).cloned().unwrap()
}
