//! Shutdown racing wakes from a thread outside the runtime.
//!
//! Kept in its own test binary: when the race it targets goes wrong the result is a double
//! release of a task reference, which in a release build corrupts the heap and aborts the
//! whole process — it must not take the other integration tests down with it.
//!
//! The scenario: a plain thread keeps waking thousands of parked tasks while the `Runtime` is
//! dropped. A wake that lands after the shutdown flag is up is pushed to the global queue and
//! then drained — and the task cancelled — by the waking thread itself (`Shared::inject`), while
//! the dropping thread walks the owned-task list (`OwnedTasks::close_and_drain`). Each future
//! must still be dropped exactly once, and nothing may panic or crash.

use gmprt::runtime::Runtime;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};

mod common;
use common::*;

/// A future that stays pending forever, waking nobody, and re-registers its waker in `slot`
/// each poll.
fn forever_pending(slot: Arc<Mutex<Option<Waker>>>, d: DropGuard) -> impl Future<Output = ()> + Send {
    std::future::poll_fn(move |cx| {
        let _keep = &d;
        *slot.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    })
}

#[test]
fn shutdown_while_foreign_thread_wakes_parked_tasks() {
    // A foreign thread keeps waking parked tasks while the runtime is dropped. Wakes that
    // arrive after the shutdown flag is up are cancelled by the waking thread itself, at the
    // same time as shutdown walks the owned-task list.
    const N: usize = 20_000;
    for round in 0..64 {
        let procs = 1 + round % 2;
        let rt = Runtime::builder().procs(procs).build().unwrap();
        let handle = rt.handle();
        let drops = Counters::new(N);
        let slots: Vec<Arc<Mutex<Option<Waker>>>> = (0..N).map(|_| Arc::default()).collect();
        for (i, slot) in slots.iter().enumerate() {
            drop(rt.spawn(forever_pending(slot.clone(), DropGuard::new(&drops, i))));
        }
        wait_until(|| slots.iter().all(|s| s.lock().unwrap().is_some()));
        let wakers: Vec<Waker> = slots.iter().map(|s| s.lock().unwrap().clone().unwrap()).collect();
        let stop = AtomicBool::new(false);
        let waking = AtomicBool::new(false);
        std::thread::scope(|s| {
            let waker_thread = s.spawn(|| {
                let mut passes = 0;
                while !stop.load(SeqCst) {
                    for w in wakers.iter().rev() {
                        w.wake_by_ref();
                    }
                    passes += 1;
                    waking.store(true, SeqCst);
                }
                passes
            });
            // Shut down while the wakes are in full swing.
            wait_until(|| waking.load(SeqCst));
            drop(rt);
            stop.store(true, SeqCst);
            let passes = waker_thread.join().expect("the waking thread must not panic");
            assert!(passes >= 1);
        });
        drops.assert_all(1, &format!("round {round} (procs {procs}): future drops"));
        assert_shut_down(&handle.stats());
        drop(wakers);
        drop(slots);
    }
}
