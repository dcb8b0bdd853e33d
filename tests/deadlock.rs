//! Go's "all goroutines are asleep - deadlock!": `block_on` reports a program nothing can
//! wake, with a task dump, and stays quiet while a timer, a `syscall`, an external source or a
//! foreign future can still wake it. Every case synchronises on events (the dump's view of a
//! parked task), never on sleeps.

use gmprt::runtime::chan::chan;
use gmprt::runtime::dump::{wait_external, TaskState, WaitReason};
use gmprt::runtime::sync::{Mutex, WaitGroup};
use gmprt::runtime::{syscall, time, Runtime};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

fn rt() -> Runtime {
    Runtime::builder().procs(2).detect_deadlock(true).build().unwrap()
}

#[test]
fn two_tasks_receiving_from_each_other_are_reported_with_a_dump() {
    let rt = rt();
    let (a_tx, a_rx) = chan::<u32>(0);
    let (b_tx, b_rx) = chan::<u32>(0);
    let a = rt.spawn(async move {
        let v = b_rx.recv().await;
        drop(a_tx);
        v
    });
    let b = rt.spawn(async move {
        let v = a_rx.recv().await;
        drop(b_tx);
        v
    });
    let err = rt.try_block_on(a).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("all goroutines are asleep - deadlock!"), "{text}");
    for id in [err.dump.tasks[0].id, err.dump.tasks[1].id] {
        let t = err.dump.tasks.iter().find(|t| t.id == id).unwrap();
        assert_eq!(t.state, TaskState::Parked);
        assert!(matches!(t.wait, WaitReason::ChanRecv { .. }), "{t}");
        assert!(t.site.contains("tests/deadlock.rs"), "{t}");
    }
    // The main future waits on a's JoinHandle.
    let main = err.dump.tasks.iter().find(|t| t.id.is_none()).unwrap();
    assert!(matches!(main.wait, WaitReason::Join { .. }), "{main}");
    assert!(text.contains("chan receive on chan #"), "{text}");
    drop(b);
}

#[test]
fn a_waitgroup_nobody_finishes_is_reported() {
    let rt = rt();
    let wg = WaitGroup::new();
    wg.add(1);
    let err = rt.try_block_on(async { wg.wait().await }).unwrap_err();
    let main = err.dump.tasks.iter().find(|t| t.id.is_none()).unwrap();
    assert_eq!(main.wait, WaitReason::WaitGroup { count: 1 });
    assert!(main.site.contains("tests/deadlock.rs"), "{main}");
}

#[test]
fn a_mutex_locked_twice_is_reported() {
    let rt = rt();
    let m = Arc::new(Mutex::new(0u32));
    let h = rt.spawn(async move {
        let _g = m.lock().await;
        let _again = m.lock().await; // never: this task holds it
    });
    let err = rt.try_block_on(h).unwrap_err();
    assert!(err.dump.tasks.iter().any(|t| matches!(t.wait, WaitReason::Mutex { .. })), "{err}");
}

#[test]
fn block_on_panics_with_gos_message() {
    let rt = rt();
    let (_tx, rx) = chan::<u32>(0);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rt.block_on(async { rx.recv().await })));
    let msg = r.unwrap_err().downcast::<String>().unwrap();
    assert!(msg.starts_with("all goroutines are asleep - deadlock!"), "{msg}");
}

#[test]
fn the_check_can_be_turned_off() {
    // Off: a real deadlock hangs, as before; shown here by a plain thread that ends it
    // only after the dump shows the main future parked (it would have been reported).
    let rt = Arc::new(Runtime::builder().procs(1).detect_deadlock(false).build().unwrap());
    let (tx, rx) = chan::<u32>(0);
    let h = rt.handle();
    let t = std::thread::spawn(move || {
        wait_until_parked(&h, |w| matches!(w, WaitReason::ChanRecv { .. }));
        drop(tx); // the last sender: the receive ends with None
    });
    assert_eq!(rt.block_on(async { rx.recv().await }), None);
    t.join().unwrap();
}

#[test]
fn a_pending_timer_is_not_a_deadlock() {
    let rt = rt();
    let (tx, rx) = chan::<u32>(0);
    rt.spawn(async move {
        time::sleep(Duration::from_millis(5)).await;
        tx.send(1).await.unwrap();
    });
    assert_eq!(rt.try_block_on(async { rx.recv().await }).unwrap(), Some(1));
}

#[test]
fn a_task_in_syscall_is_not_a_deadlock() {
    let rt = rt();
    let (std_tx, std_rx) = std::sync::mpsc::channel::<u32>();
    let h = rt.handle();
    let task = rt.spawn(async move { syscall(move || std_rx.recv().unwrap()).ok().unwrap() });
    let t = std::thread::spawn(move || {
        wait_until_parked(&h, |w| matches!(w, WaitReason::Join { .. }));
        std_tx.send(9).unwrap();
    });
    assert_eq!(rt.try_block_on(task).unwrap().unwrap(), 9);
    t.join().unwrap();
}

/// A future completed from a plain thread; `external` says so to the runtime.
struct Outside {
    slot: Arc<StdMutex<(bool, Option<Waker>)>>,
    external: bool,
}

impl Future for Outside {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut s = self.slot.lock().unwrap();
        if s.0 {
            return Poll::Ready(());
        }
        s.1 = Some(cx.waker().clone());
        if self.external {
            wait_external("test device", 3);
        }
        Poll::Pending
    }
}

fn outside_case(external: bool) {
    let rt = rt();
    let slot = Arc::new(StdMutex::new((false, None::<Waker>)));
    let h = rt.handle();
    let s2 = slot.clone();
    let t = std::thread::spawn(move || {
        let want = move |w: &WaitReason| {
            if external {
                matches!(w, WaitReason::External { what: "test device", id: 3 })
            } else {
                *w == WaitReason::Unknown
            }
        };
        wait_until_parked(&h, want);
        let w = {
            let mut s = s2.lock().unwrap();
            s.0 = true;
            s.1.take()
        };
        w.unwrap().wake();
    });
    rt.try_block_on(Outside { slot, external }).unwrap();
    t.join().unwrap();
}

#[test]
fn an_external_wait_is_not_a_deadlock() {
    outside_case(true);
}

#[test]
fn a_foreign_future_is_not_a_deadlock() {
    outside_case(false);
}

// A program is every runtime of the process: a task of one runtime may await a task (or a
// channel) of another, so one runtime with every task parked is not a deadlock while another
// can still wake it, and a cycle through two runtimes is one.

#[test]
fn a_task_awaiting_a_busy_runtime_is_not_a_deadlock() {
    let a = Runtime::builder().procs(1).detect_deadlock(true).build().unwrap();
    let b = Runtime::builder().procs(1).detect_deadlock(true).build().unwrap();
    let go = Arc::new(AtomicBool::new(false));
    let go2 = go.clone();
    let inner = b.spawn(async move {
        // Runnable on b until the main thread has read a's verdict.
        while !go2.load(Ordering::Acquire) {
            gmprt::runtime::yield_now().await;
        }
        7
    });
    let outer = a.spawn(async move { inner.await.unwrap() });
    // Every P of a idle, its only task parked on b's JoinHandle: a alone looks deadlocked.
    loop {
        let parked = a
            .dump()
            .tasks
            .iter()
            .any(|t| t.state == TaskState::Parked && matches!(t.wait, WaitReason::Join { .. }));
        if parked && a.stats().idle_procs == a.procs() {
            break;
        }
        std::thread::yield_now();
    }
    let verdict = a.handle().deadlocked();
    assert!(verdict.is_none(), "false report while runtime b can still wake a:\n{}", verdict.unwrap());
    go.store(true, Ordering::Release);
    assert_eq!(a.block_on(outer).unwrap(), 7);
}

#[test]
fn a_cycle_through_two_runtimes_is_reported() {
    let a = rt();
    // The check is off on b: b does not report, but its tasks count in a's check all the same.
    let b = Runtime::builder().procs(1).detect_deadlock(false).build().unwrap();
    let (tx, rx) = chan::<u32>(0);
    let inner = b.spawn(async move { rx.recv().await });
    let outer = a.spawn(async move {
        // Holds the only sender while it awaits the receiver: neither can go on.
        let v = inner.await;
        drop(tx);
        v
    });
    let err = a.try_block_on(outer).unwrap_err();
    let t = err.dump.tasks.iter().find(|t| t.id.is_some()).unwrap();
    assert!(matches!(t.wait, WaitReason::Join { .. }), "{t}");
    // b's side of the cycle, as b's own dump shows it.
    let d = b.dump();
    assert!(d.tasks.iter().any(|t| matches!(t.wait, WaitReason::ChanRecv { .. })), "{d}");
}

/// Waits (yielding, no sleeps) until the dump shows the `block_on` future parked on a
/// reason `want` accepts.
fn wait_until_parked(h: &gmprt::runtime::Handle, want: impl Fn(&WaitReason) -> bool) {
    loop {
        let d = h.dump();
        if d.tasks.iter().any(|t| t.id.is_none() && t.state == TaskState::Parked && want(&t.wait)) {
            return;
        }
        std::thread::yield_now();
    }
}
