//! The deadlock check and plain threads: a gmprt `Mutex` held by a plain OS thread (through
//! `lock_blocking`) while every task waits on it is not a deadlock, and the check must not say
//! so. Its own test binary: the first use of a primitive from outside a runtime turns the
//! check's reports off for the whole process (`dump.rs`), which would silence the cases in
//! `tests/deadlock.rs` that must be reported.

use gmprt::runtime::dump::{TaskState, WaitReason};
use gmprt::runtime::sync::Mutex;
use gmprt::runtime::Runtime;
use std::sync::Arc;

#[test]
fn a_mutex_held_by_a_plain_thread_is_not_a_deadlock() {
    let rt = Runtime::builder().procs(2).detect_deadlock(true).build().unwrap();
    let m = Arc::new(Mutex::new(0u32));
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let m2 = m.clone();
    let holder = std::thread::spawn(move || {
        let mut g = m2.lock_blocking();
        held_tx.send(()).unwrap();
        release_rx.recv().unwrap();
        *g += 1;
    });
    held_rx.recv().unwrap();
    let m3 = m.clone();
    let task = rt.spawn(async move {
        let mut g = m3.lock().await;
        *g += 1;
        *g
    });
    // Release the plain thread only once the task is parked on the mutex and block_on is
    // parked on the task: the moment a check that could not see the thread would report.
    let h = rt.handle();
    let releaser = std::thread::spawn(move || {
        loop {
            let d = h.dump();
            let task_parked = d.tasks.iter().any(|t| {
                t.id.is_some() && t.state == TaskState::Parked && matches!(t.wait, WaitReason::Mutex { .. })
            });
            let main_parked = d.tasks.iter().any(|t| t.id.is_none() && t.state == TaskState::Parked);
            // Every P idle too: nothing changes now until the plain thread lets go.
            if task_parked && main_parked && h.stats().idle_procs == 2 {
                break;
            }
            std::thread::yield_now();
        }
        // The check block_on runs, asked directly: a plain thread holds the mutex, so no.
        let verdict = h.deadlocked();
        release_tx.send(()).unwrap();
        assert!(verdict.is_none(), "false deadlock report:\n{}", verdict.unwrap());
    });
    assert_eq!(rt.try_block_on(task).unwrap().unwrap(), 2);
    holder.join().unwrap();
    releaser.join().unwrap();
}
