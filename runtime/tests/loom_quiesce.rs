//! loom models of the quiescence hook (`sched/quiesce.rs`), run through the real `Runtime`:
//! the idle path of `find_runnable` that checks for quiescence, takes a P back and runs the
//! hook is the real one, as are the Ms, the wake-ups and shutdown.
//!
//! The hook here is a minimal batcher, [`MiniBatch`]: a submit adds its item to the open batch
//! and parks; the hook's `run` closes the open batch (every item in it gets its result, its
//! task is woken). Nothing else closes a batch a task submitted to — no deadline, no worker —
//! so if some interleaving reached quiescence without running the hook, the task would stay
//! parked while every M sleeps, and loom would report the deadlock. Also checked in every
//! execution: each item is closed exactly once (no batch closes twice, none is lost), and a
//! submit from a plain thread (which the runtime cannot see) is closed by the hook or by the
//! caller's flush, never both.
//!
//! Run with
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
//!     cargo test -p gmprt-runtime --release --test loom_quiesce
//! ```
#![cfg(loom)]

use gmprt_runtime::{QuiescentHook, Runtime};
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::sync::Mutex;
use loom::thread;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// One submitted item: closed (`Some(batch)`) or still open, and its waiter.
#[derive(Default)]
struct Item {
    closed_in: Option<usize>,
    waker: Option<Waker>,
}

/// The open batch, the items ever submitted, and the closes counted per item.
#[derive(Default)]
struct State {
    items: Vec<Item>,
    open: Vec<usize>,
    batches: usize,
}

#[derive(Default)]
struct MiniBatch {
    state: Mutex<State>,
    /// `open.len()`, readable without the lock (the hook's `pending` is a load).
    open: AtomicUsize,
    /// Times an item was closed (must equal the items at the end: none twice, none lost).
    closes: AtomicUsize,
    /// If not 0: every submitter the model has, all of them tasks. A quiescence seen while
    /// one of them is still runnable (queued, or taken by an M and not polled yet) would run
    /// the hook with fewer items submitted: `run` asserts it never does.
    submitters: usize,
}

impl MiniBatch {
    /// Adds an item to the open batch; returns its index.
    fn submit(&self) -> usize {
        let mut s = self.state.lock().unwrap();
        let i = s.items.len();
        s.items.push(Item::default());
        s.open.push(i);
        self.open.store(s.open.len(), SeqCst);
        i
    }

    /// Closes the open batch: marks its items, wakes their waiters. Returns whether it held
    /// any. Both the hook and a caller's flush use it; the lock decides who finds the items.
    fn close(&self) -> bool {
        let wakers: Vec<Waker> = {
            let mut s = self.state.lock().unwrap();
            if s.open.is_empty() {
                return false;
            }
            let batch = s.batches;
            s.batches += 1;
            let open = std::mem::take(&mut s.open);
            self.open.store(0, SeqCst);
            let mut ws = Vec::new();
            for i in open {
                assert!(s.items[i].closed_in.is_none(), "item {i} closed twice");
                s.items[i].closed_in = Some(batch);
                self.closes.fetch_add(1, SeqCst);
                ws.extend(s.items[i].waker.take());
            }
            ws
        };
        for w in wakers {
            w.wake();
        }
        true
    }

    /// Waits for item `i`'s batch to close.
    fn wait(self: &Arc<Self>, i: usize) -> WaitClosed {
        WaitClosed { b: self.clone(), i }
    }
}

impl QuiescentHook for MiniBatch {
    fn pending(&self) -> bool {
        self.open.load(SeqCst) > 0
    }

    fn run(&self) {
        if self.submitters > 0 {
            let s = self.state.lock().unwrap();
            if !s.open.is_empty() {
                assert_eq!(s.items.len(), self.submitters, "the hook ran while a submitter was runnable");
            }
        }
        self.close();
    }
}

struct WaitClosed {
    b: Arc<MiniBatch>,
    i: usize,
}

impl Future for WaitClosed {
    type Output = usize;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        let mut s = self.b.state.lock().unwrap();
        let item = &mut s.items[self.i];
        match item.closed_in {
            Some(batch) => Poll::Ready(batch),
            None => {
                item.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// A task's submit: the item enters the open batch, then the task parks until it closes.
async fn submit_and_wait(b: Arc<MiniBatch>) -> usize {
    let i = b.submit();
    b.wait(i).await
}

/// procs = 1. One task submits and parks; only the hook can close its batch.
#[test]
fn quiescence_closes_a_tasks_batch_procs1() {
    loom::model(|| {
        let rt = Runtime::builder().procs(1).loom_prestart_ms(0).build().unwrap();
        let b = Arc::new(MiniBatch::default());
        let reg = rt.handle().on_quiescent(b.clone());
        let b2 = b.clone();
        let batch = rt.block_on(async move { gmprt_runtime::spawn(submit_and_wait(b2)).await.unwrap() });
        assert_eq!(batch, 0);
        assert_eq!(b.closes.load(SeqCst), 1);
        drop(reg);
        drop(rt);
    });
}

/// procs = 2. Two tasks submit (one spawned by the other, so the two Ps race to run them and
/// to go idle); each parks on the batch. Whichever M sees quiescence last runs the hook; two
/// may both run it, and the batch still closes each item once. No M sees quiescence early:
/// while the spawned task is queued, stolen or being polled, the hook does not run (`run`'s
/// assertion), though a P handed to an M that has not run yet counts as idle.
#[test]
fn quiescence_closes_two_tasks_batch_procs2() {
    loom::model(|| {
        let rt = Runtime::builder().procs(2).loom_prestart_ms(0).build().unwrap();
        let b = Arc::new(MiniBatch { submitters: 2, ..MiniBatch::default() });
        let reg = rt.handle().on_quiescent(b.clone());
        let b2 = b.clone();
        // Both submitters are tasks: `block_on`'s own future runs on no P, so a submit from it
        // is one the runtime cannot see (the next model).
        let parent = async move {
            let b3 = b2.clone();
            let other = gmprt_runtime::spawn(submit_and_wait(b3));
            let mine = submit_and_wait(b2).await;
            let theirs = other.await.unwrap();
            assert_eq!((mine, theirs), (0, 0), "both items in the first batch");
        };
        rt.block_on(async move { gmprt_runtime::spawn(parent).await.unwrap() });
        assert_eq!(b.closes.load(SeqCst), 2);
        drop(reg);
        drop(rt);
    });
}

/// procs = 1. A plain thread submits late, racing the runtime's task and its quiescence: the
/// runtime cannot see that thread, so its item is closed by the hook (if an M went idle after
/// it) or by the thread's own flush after it — exactly once either way, and the task's item
/// is always closed by the hook.
#[test]
fn late_submit_from_a_plain_thread_is_closed_once() {
    loom::model(|| {
        let rt = Runtime::builder().procs(1).loom_prestart_ms(0).build().unwrap();
        let b = Arc::new(MiniBatch::default());
        let reg = rt.handle().on_quiescent(b.clone());
        let outside = {
            let b = b.clone();
            thread::spawn(move || {
                let _i = b.submit();
                // The flush (a Batcher's deadline): closes it unless the hook already did.
                b.close();
            })
        };
        let b2 = b.clone();
        rt.block_on(async move { gmprt_runtime::spawn(submit_and_wait(b2)).await.unwrap() });
        outside.join().unwrap();
        assert_eq!(b.closes.load(SeqCst), 2);
        drop(reg);
        drop(rt);
    });
}

/// procs = 1. The runtime shuts down (and the registration is dropped) while a task may be
/// parked on an open batch: shutdown completes, the hook is never run after its registration
/// was dropped and the runtime gone, and an item is closed at most once.
#[test]
fn shutdown_races_a_pending_hook() {
    loom::model(|| {
        let rt = Runtime::builder().procs(1).loom_prestart_ms(0).build().unwrap();
        let b = Arc::new(MiniBatch::default());
        let reg = rt.handle().on_quiescent(b.clone());
        let _parked = rt.spawn(submit_and_wait(b.clone()));
        drop(reg);
        drop(rt);
        assert!(b.closes.load(SeqCst) <= 1);
        // Whatever is still open stays so: nothing runs the hook any more.
        let open = b.open.load(SeqCst);
        assert_eq!(open + b.closes.load(SeqCst), b.state.lock().unwrap().items.len());
    });
}
