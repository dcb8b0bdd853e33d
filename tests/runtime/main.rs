//! Integration tests of the gmprt runtime through its public API only.
//!
//! Every test synchronises on events (joins, channels, gates, latches), never on sleeps, so the
//! suite is deterministic on a 2-core machine. Futures and outputs carry drop counters, so
//! "exactly once" is checked, not assumed.
//!
//! One test binary, one file per concern; the helpers below are shared by all of them:
//! * `spawn.rs`: every task runs exactly once, nested spawn trees, spawns from outside;
//! * `yields.rs`: `yield_now`; `panics.rs`: panics in polls and drops;
//! * `abort.rs`: `abort` in every task state; `join.rs`: `JoinHandle` drops, foreign wakes;
//! * `workload.rs`: a representative workload for procs 1..=8;
//! * `shutdown.rs`: shutdown with tasks in every state; `api.rs`: errors and `stats()`.

use gmprt::runtime::{BuildError, Handle, JoinError, JoinHandle, Runtime, SpawnError};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

#[path = "../common/mod.rs"]
mod common;
use common::*;

/// A task output whose drops are counted.
struct Output {
    value: u64,
    _guard: DropGuard,
}

/// A one-shot gate: tasks `wait()` on it (and park) until someone `open()`s it. Tracks how many
/// distinct waits have registered, so a plain thread can wait for tasks to have parked.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
}

#[derive(Default)]
struct GateState {
    open: bool,
    wakers: Vec<Waker>,
    waiters: usize,
}

impl Gate {
    fn new() -> Arc<Gate> {
        Arc::default()
    }

    fn wait(self: &Arc<Self>) -> GateWait {
        GateWait { gate: self.clone(), registered: false }
    }

    /// Opens the gate and wakes every waiter (outside the lock).
    fn open(&self) {
        let wakers = {
            let mut s = self.state.lock().unwrap();
            s.open = true;
            std::mem::take(&mut s.wakers)
        };
        for w in wakers {
            w.wake();
        }
    }

    /// Distinct waits that have registered so far.
    fn waiters(&self) -> usize {
        self.state.lock().unwrap().waiters
    }

    /// Blocks a plain thread until `n` waits have registered.
    fn wait_for_waiters(&self, n: usize) {
        let mut s = self.state.lock().unwrap();
        while s.waiters < n {
            s = self.cv.wait(s).unwrap();
        }
    }
}

struct GateWait {
    gate: Arc<Gate>,
    registered: bool,
}

impl Future for GateWait {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let mut s = this.gate.state.lock().unwrap();
        if s.open {
            return Poll::Ready(());
        }
        s.wakers.push(cx.waker().clone());
        if !this.registered {
            this.registered = true;
            s.waiters += 1;
            this.gate.cv.notify_all();
        }
        Poll::Pending
    }
}

/// Blocks plain threads (or, on purpose, an M inside a poll) until released.
#[derive(Default)]
struct Latch {
    released: Mutex<bool>,
    cv: Condvar,
}

impl Latch {
    fn new() -> Arc<Latch> {
        Arc::default()
    }
    fn release(&self) {
        *self.released.lock().unwrap() = true;
        self.cv.notify_all();
    }
    fn wait(&self) {
        let mut r = self.released.lock().unwrap();
        while !*r {
            r = self.cv.wait(r).unwrap();
        }
    }
}

/// A one-value slot filled from anywhere; the waiting task is woken with `Waker::wake` (by
/// value), the way a foreign thread completing an I/O request would.
#[derive(Default)]
struct Slot {
    inner: Mutex<(Option<u64>, Option<Waker>)>,
}

impl Slot {
    fn fill(&self, v: u64) {
        let w = {
            let mut g = self.inner.lock().unwrap();
            g.0 = Some(v);
            g.1.take()
        };
        if let Some(w) = w {
            w.wake();
        }
    }
    fn take(self: &Arc<Self>) -> impl Future<Output = u64> + Send + 'static {
        let me = self.clone();
        std::future::poll_fn(move |cx| {
            let mut g = me.inner.lock().unwrap();
            match g.0.take() {
                Some(v) => Poll::Ready(v),
                None => {
                    g.1 = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
    }
    fn has_waiter(&self) -> bool {
        self.inner.lock().unwrap().1.is_some()
    }
}

// ---------------------------------------------------------------------------------------------
// Spawn trees (spawn.rs, workload.rs)
// ---------------------------------------------------------------------------------------------

type BoxFut<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A node of a spawn tree in heap numbering: node `id`'s children are `id*fanout + 1 ..=`.
/// Awaits its children; returns the number of leaves below it.
fn joined_tree(id: usize, depth: u32, fanout: usize, visits: Counters) -> BoxFut<u64> {
    Box::pin(async move {
        visits.bump(id);
        if depth == 0 {
            return 1;
        }
        let hs: Vec<_> = (1..=fanout)
            .map(|k| gmprt::spawn(joined_tree(id * fanout + k, depth - 1, fanout, visits.clone())))
            .collect();
        let mut leaves = 0;
        for h in hs {
            leaves += h.await.expect("child task failed");
        }
        leaves
    })
}

/// Like `joined_tree`, but children are detached; the last node to finish reports on `done`.
fn detached_tree(
    id: usize,
    depth: u32,
    fanout: usize,
    visits: Counters,
    remaining: Arc<AtomicUsize>,
    done: mpsc::Sender<()>,
) -> BoxFut<()> {
    Box::pin(async move {
        visits.bump(id);
        if depth > 0 {
            for k in 1..=fanout {
                drop(gmprt::spawn(detached_tree(
                    id * fanout + k,
                    depth - 1,
                    fanout,
                    visits.clone(),
                    remaining.clone(),
                    done.clone(),
                )));
            }
        }
        gmprt::yield_now().await;
        if remaining.fetch_sub(1, SeqCst) == 1 {
            done.send(()).unwrap();
        }
    })
}

/// Nodes of a full tree of `depth` levels below the root, `fanout` children each.
fn tree_nodes(depth: u32, fanout: usize) -> usize {
    (0..=depth).map(|d| fanout.pow(d)).sum()
}

mod abort;
mod api;
mod join;
mod panics;
mod shutdown;
mod spawn;
mod workload;
mod yields;
