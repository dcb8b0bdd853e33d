//! Issue 23, case 5: a `Runtime` dropped inside a task. The drop cannot join the runtime's
//! threads there (it would block an M), so it signals them, hands the join to a detached
//! helper and returns; it never panics, not even while the task unwinds (which used to abort
//! the process: a panic inside a drop during unwinding). The inner runtime's threads must end.
//!
//! Its own binary: it counts this process's threads by name. Every wait is for an event (the
//! named threads gone), bounded far above any real wait so a leak fails instead of hanging.
#![cfg(all(target_os = "linux", not(loom)))]

use gmprt_runtime::Runtime;
use std::time::{Duration, Instant};

/// Threads of this process whose name starts with `prefix` (`/proc/self/task/*/comm`).
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with(prefix))
        .count()
}

fn until_no_threads_named(prefix: &str) {
    let start = Instant::now();
    while threads_named(prefix) > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} threads named {prefix:?} live on",
            threads_named(prefix)
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Waits until some thread is named `prefix…`: std names a new thread from inside it, so a
/// thread just started may still show its parent's name for a moment.
fn until_threads_named(prefix: &str) {
    let start = Instant::now();
    while threads_named(prefix) == 0 {
        assert!(start.elapsed() < Duration::from_secs(60), "no thread named {prefix:?} appeared");
        std::thread::yield_now();
    }
}

fn inner(name: &str) -> Runtime {
    let rt = Runtime::builder().procs(2).thread_name(name).build().unwrap();
    // Make it start its Ms and leave a task parked in it, so the drop has work to do.
    let (tx, rx) = gmprt_runtime::chan::chan::<()>(0);
    rt.spawn(async move {
        let _ = rx.recv().await;
    });
    rt.block_on(async {});
    std::mem::forget(tx); // the task stays parked until shutdown drops it
    rt
}

#[test]
fn dropping_a_runtime_inside_a_task_returns_and_its_threads_end() {
    let outer = Runtime::builder().procs(2).build().unwrap();
    let rt = inner("inner-a");
    until_threads_named("inner-a");
    outer.block_on(outer.spawn(async move { drop(rt) })).expect("the drop did not panic");
    until_no_threads_named("inner-a");
}

#[test]
fn dropping_a_runtime_while_a_task_unwinds_does_not_abort() {
    let outer = Runtime::builder().procs(2).build().unwrap();
    let rt = inner("inner-b");
    let r = outer.block_on(outer.spawn(async move {
        let _rt = rt; // dropped by the unwinding
        panic!("the task fails while it owns a runtime");
    }));
    assert!(r.is_err(), "the task's panic is its JoinHandle's error");
    until_no_threads_named("inner-b");
}

/// A runtime dropped by one of its own tasks: the M running that task cannot join itself; the
/// helper joins it once the task's poll has returned.
#[test]
fn a_runtime_dropped_by_its_own_task() {
    let rt = inner("inner-c");
    let handle = rt.handle();
    let (tx, rx) = std::sync::mpsc::channel();
    let cell = std::sync::Arc::new(std::sync::Mutex::new(Some(rt)));
    let cell2 = cell.clone();
    drop(handle.spawn(async move {
        drop(cell2.lock().unwrap().take());
        tx.send(()).unwrap();
    }));
    rx.recv_timeout(Duration::from_secs(60)).expect("the task ran its drop");
    until_no_threads_named("inner-c");
    assert!(cell.lock().unwrap().is_none());
}
