//! `syscall`: a task blocked in a blocking call does not stop other tasks (its P is handed
//! off), the thread cap gives an error (never a crash or a hang), and sysmon reports polls that
//! hog their P. Every wait here is on an event (a channel), never on time.

mod common;
use common::*;
use gmprt::runtime::{syscall, Runtime};
use std::sync::mpsc;

#[test]
fn blocked_syscall_does_not_stop_other_tasks_on_one_p() {
    let rt = rt(1);
    let (tx, rx) = mpsc::channel::<u32>();
    let out = rt.block_on(rt.spawn(async move {
        // The helper task can only run if this task's P is handed to another M while this one
        // blocks: procs = 1.
        let helper = gmprt::spawn(async move {
            tx.send(42).unwrap();
            7
        });
        let got = syscall(move || rx.recv().unwrap()).expect("below the thread cap");
        (got, helper.await.unwrap())
    }));
    assert_eq!(out.unwrap(), (42, 7));
    let st = rt.stats();
    assert_eq!(st.syscalls, 1);
    assert!(st.retakes >= 1, "sysmon must have retaken the P: {st:?}");
    assert!(st.threads >= 2, "another M ran the P: {st:?}");
}

#[test]
fn returning_from_a_syscall_gets_a_p_even_when_none_goes_idle() {
    // procs = 1 and a task that never stops yielding: the P is never idle, so the M coming
    // back from the call must be handed the P at a scheduling round, not wait for an idle one.
    let rt = rt(1);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<()>();
    let d2 = done.clone();
    let blocked = rt.spawn(async move {
        syscall(move || rx.recv().unwrap()).expect("below the cap");
        done.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    let spinner = rt.spawn(async move {
        // Runs only once the blocked task's P was handed off; then lets the call return.
        tx.send(()).unwrap();
        let mut rounds = 0u64;
        while !d2.load(std::sync::atomic::Ordering::SeqCst) {
            rounds += 1;
            gmprt::yield_now().await;
        }
        rounds
    });
    blocked.join().unwrap();
    assert!(spinner.join().unwrap() >= 1);
}

#[test]
fn many_blocking_calls_complete_and_threads_come_back_to_idle() {
    let rt = rt(2);
    let n = 64;
    let (tx, rx) = mpsc::channel::<()>();
    let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
    let hs: Vec<_> = (0..n)
        .map(|i| {
            let rx = rx.clone();
            rt.spawn(async move {
                syscall(move || rx.lock().unwrap().recv().unwrap()).expect("below the cap");
                i
            })
        })
        .collect();
    for _ in 0..n {
        tx.send(()).unwrap();
    }
    let sum: usize = hs.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(sum, n * (n - 1) / 2);
    let st = rt.stats();
    assert_eq!(st.syscalls, n as u64);
    drop(rt);
}

#[test]
fn thread_cap_gives_an_error_with_the_closure_back() {
    let rt = Runtime::builder().procs(1).max_threads(1).build().unwrap();
    let r = rt.block_on(rt.spawn(async {
        match syscall(|| 5) {
            Ok(_) => panic!("the cap of 1 thread leaves no M to hand the P to"),
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains("max_threads"), "{msg}");
                assert_eq!(e.limit, 1);
                (e.f)() // the closure came back unrun
            }
        }
    }));
    assert_eq!(r.unwrap(), 5);
}

#[test]
fn max_threads_below_procs_is_a_build_error() {
    let e = Runtime::builder().procs(4).max_threads(2).build().unwrap_err();
    assert!(e.to_string().contains("max_threads"), "{e}");
}

#[test]
fn syscall_off_an_m_just_runs() {
    assert_eq!(syscall(|| 3).unwrap(), 3);
    let rt = rt(1);
    assert_eq!(rt.block_on(async { syscall(|| 4).unwrap() }), 4);
}

#[test]
fn long_poll_is_reported_by_sysmon() {
    let rt = rt(2);
    let (tx, rx) = mpsc::channel::<()>();
    let (seen_tx, seen_rx) = mpsc::channel::<()>();
    let h = rt.spawn(async move {
        // Block the P (deliberately, without syscall) until the test has seen the report.
        rx.recv().unwrap();
        seen_tx.send(()).unwrap();
    });
    wait_until(|| rt.stats().long_polls >= 1);
    tx.send(()).unwrap();
    seen_rx.recv().unwrap();
    h.join().unwrap();
    assert!(rt.stats().long_polls >= 1);
}

/// A long poll with nothing queued behind it (a compute task alone on its P, as a calibration's
/// timing task is) is counted but delays nobody: not counted as delaying, not warned about.
#[test]
fn long_poll_with_nothing_queued_is_not_delaying() {
    let rt = rt(2);
    let (tx, rx) = mpsc::channel::<()>();
    let h = rt.spawn(async move { rx.recv().unwrap() });
    wait_until(|| rt.stats().long_polls >= 1);
    // Sysmon has seen the poll as long, and nothing was ever queued on any P.
    let st = rt.stats();
    tx.send(()).unwrap();
    h.join().unwrap();
    assert_eq!(st.long_polls_delaying, 0, "{st:?}");
}

/// A long poll with a task queued behind it on its P (procs = 1: no other P can steal it) is
/// counted as delaying; that is the one the stderr warning names.
#[test]
fn long_poll_with_a_task_behind_it_is_delaying() {
    let rt = rt(1);
    let (tx, rx) = mpsc::channel::<()>();
    let h = rt.spawn(async move {
        let behind = gmprt::spawn(async {}); // lands in this P's runnext
        rx.recv().unwrap(); // block the only P (deliberately, without syscall)
        behind.await.unwrap();
    });
    wait_until(|| rt.stats().long_polls_delaying >= 1);
    tx.send(()).unwrap();
    h.join().unwrap();
    let st = rt.stats();
    assert!(st.long_polls >= st.long_polls_delaying && st.long_polls_delaying >= 1, "{st:?}");
}
