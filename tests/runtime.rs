//! Integration tests of the gmprt runtime through its public API only.
//!
//! Every test synchronises on events (joins, channels, gates, latches), never on sleeps, so the
//! suite is deterministic on a 2-core machine. Futures and outputs carry drop counters, so
//! "exactly once" is checked, not assumed.

use gmprt::runtime::{BuildError, Handle, JoinError, JoinHandle, Runtime, SpawnError};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

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
// Every task runs exactly once
// ---------------------------------------------------------------------------------------------

#[test]
fn every_task_runs_exactly_once_100k() {
    const N: usize = 100_000;
    let rt = rt(2);
    let runs = Counters::new(N);
    let drops = Counters::new(N);
    let bad = rt.block_on(async {
        let hs: Vec<_> = (0..N)
            .map(|i| {
                let runs = runs.clone();
                let g = DropGuard::new(&drops, i);
                gmprt::spawn(async move {
                    let _g = g;
                    runs.bump(i);
                    i as u64 * 3 + 1
                })
            })
            .collect();
        let mut bad = Vec::new();
        for (i, h) in hs.into_iter().enumerate() {
            match h.await {
                Ok(v) if v == i as u64 * 3 + 1 => {}
                other => bad.push((i, other)),
            }
        }
        bad
    });
    assert!(bad.is_empty(), "wrong results (first 5): {:?}", &bad[..bad.len().min(5)]);
    runs.assert_all(1, "runs");
    drops.assert_all(1, "future drops");
    let st = rt.stats();
    assert_eq!(st.spawned, N as u64, "{st:?}");
    assert_eq!(st.completed, N as u64, "{st:?}");
    assert_eq!(st.cancelled, 0, "{st:?}");
    // None of these futures ever returns Pending: one poll each.
    assert_eq!(st.polls, N as u64, "{st:?}");
    assert_balanced(&st);
}

#[test]
fn every_task_runs_exactly_once_when_spawned_from_tasks() {
    const SPAWNERS: usize = 8;
    const PER: usize = 5_000;
    for procs in [1, 3] {
        let rt = rt(procs);
        let runs = Counters::new(SPAWNERS * PER);
        let total: u64 = rt.block_on(async {
            let spawners: Vec<_> = (0..SPAWNERS)
                .map(|s| {
                    let runs = runs.clone();
                    gmprt::spawn(async move {
                        // Children go to this P's runnext / local queue; other Ps steal them.
                        let hs: Vec<_> = (0..PER)
                            .map(|k| {
                                let runs = runs.clone();
                                let i = s * PER + k;
                                gmprt::spawn(async move {
                                    runs.bump(i);
                                    if i.is_multiple_of(7) {
                                        gmprt::yield_now().await;
                                    }
                                    i as u64
                                })
                            })
                            .collect();
                        let mut sum = 0;
                        for h in hs {
                            sum += h.await.unwrap();
                        }
                        sum
                    })
                })
                .collect();
            let mut total = 0;
            for h in spawners {
                total += h.await.unwrap();
            }
            total
        });
        let n = (SPAWNERS * PER) as u64;
        assert_eq!(total, n * (n - 1) / 2, "procs={procs}");
        runs.assert_all(1, "runs");
        let st = rt.stats();
        assert_eq!(st.spawned, n + SPAWNERS as u64, "procs={procs} {st:?}");
        assert_balanced(&st);
    }
}

// ---------------------------------------------------------------------------------------------
// Nested spawns
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

fn tree_nodes(depth: u32, fanout: usize) -> usize {
    (0..=depth).map(|d| fanout.pow(d)).sum()
}

#[test]
fn nested_spawn_tree_joined() {
    let (depth, fanout) = (6, 4);
    let nodes = tree_nodes(depth, fanout);
    for procs in 1..=4 {
        let rt = rt(procs);
        let visits = Counters::new(nodes);
        let leaves = rt.block_on(joined_tree(0, depth, fanout, visits.clone()));
        assert_eq!(leaves, fanout.pow(depth) as u64, "procs={procs}");
        visits.assert_all(1, "tree node visits");
        let st = rt.stats();
        // The root runs in block_on (not a task); every other node is a task.
        assert_eq!(st.spawned, nodes as u64 - 1, "procs={procs} {st:?}");
        assert_balanced(&st);
    }
}

#[test]
fn nested_spawn_tree_detached() {
    let (depth, fanout) = (5, 5);
    let nodes = tree_nodes(depth, fanout);
    for procs in [1, 2, 4] {
        let rt = rt(procs);
        let visits = Counters::new(nodes);
        let remaining = Arc::new(AtomicUsize::new(nodes));
        let (tx, rx) = mpsc::channel();
        // Spawned from outside: the root goes through the global queue.
        drop(rt.spawn(detached_tree(0, depth, fanout, visits.clone(), remaining.clone(), tx)));
        rx.recv().expect("the last node reports");
        assert_eq!(remaining.load(SeqCst), 0);
        visits.assert_all(1, "tree node visits");
        drop(rt);
    }
}

// ---------------------------------------------------------------------------------------------
// Spawning from outside the runtime
// ---------------------------------------------------------------------------------------------

#[test]
fn spawn_from_foreign_threads() {
    const THREADS: usize = 4;
    const PER: usize = 2_000;
    let rt = rt(2);
    let runs = Counters::new(THREADS * PER);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let handle: Handle = rt.handle();
            let rt = &rt;
            let runs = runs.clone();
            s.spawn(move || {
                let hs: Vec<JoinHandle<u64>> = (0..PER)
                    .map(|k| {
                        let i = t * PER + k;
                        let runs = runs.clone();
                        let fut = async move {
                            runs.bump(i);
                            if i.is_multiple_of(3) {
                                gmprt::yield_now().await;
                            }
                            i as u64 * 2
                        };
                        match k % 3 {
                            0 => handle.spawn(fut),
                            1 => handle.try_spawn(fut).expect("try_spawn on a live runtime"),
                            _ => rt.spawn(fut),
                        }
                    })
                    .collect();
                for (k, h) in hs.into_iter().enumerate() {
                    assert_eq!(h.join(), Ok((t * PER + k) as u64 * 2));
                }
            });
        }
    });
    runs.assert_all(1, "runs");
    let st = rt.stats();
    assert_eq!(st.spawned, (THREADS * PER) as u64, "{st:?}");
    assert_balanced(&st);
}

#[test]
fn go_runs_a_closure_as_a_task() {
    let rt = rt(2);
    let on_m = rt.block_on(async {
        let a = gmprt::go(|| async { 6 * 7 });
        let b = gmprt::go(|| async { std::thread::current().name().map(str::to_owned) });
        (a.await.unwrap(), b.await.unwrap())
    });
    assert_eq!(on_m.0, 42);
    assert!(on_m.1.as_deref().is_some_and(|n| n.starts_with("gmprt-m")), "ran on {:?}", on_m.1);
}

/// Issue 11 item 2: a Go programmer's first port, `go(move || async move { tx.send(1).await })`,
/// compiled and silently never ran its body. Now the body runs (and blocks on the channel like
/// a goroutine would until the receiver comes); the detached handle is dropped at once.
#[test]
fn go_runs_the_body_of_an_async_closure() {
    let rt = rt(2);
    let got = rt.block_on(async {
        let (tx, rx) = gmprt::runtime::chan::chan::<u32>(0);
        let tx2 = tx.clone();
        drop(gmprt::go(move || async move { tx.send(1).await.unwrap() }));
        // Rust's async closures work too.
        drop(gmprt::go(async move || tx2.send(2).await.unwrap()));
        let mut got = vec![rx.recv().await.unwrap(), rx.recv().await.unwrap()];
        got.sort_unstable();
        got
    });
    assert_eq!(got, [1, 2]);
}

#[test]
fn thread_name_prefixes_m_threads() {
    let rt = Runtime::builder().procs(2).thread_name("probe").build().unwrap();
    let names: Vec<Option<String>> = (0..16)
        .map(|_| rt.spawn(async { std::thread::current().name().map(str::to_owned) }).join().unwrap())
        .collect();
    for n in names {
        assert!(n.as_deref().is_some_and(|n| n.starts_with("probe-")), "task ran on thread {n:?}");
    }
}

#[test]
fn cross_runtime_spawn_and_join() {
    let a = rt(2);
    let b = rt(1);
    let hb = b.handle();
    let sum = a.block_on(async move {
        let hs: Vec<_> = (0..200u64)
            .map(|i| {
                let hb = hb.clone();
                gmprt::spawn(async move {
                    // A task of runtime A awaits a task of runtime B: B's M wakes A's task.
                    let inner = hb.spawn(async move {
                        gmprt::yield_now().await;
                        i * 10
                    });
                    inner.await.unwrap() + 1
                })
            })
            .collect();
        let mut s = 0;
        for h in hs {
            s += h.await.unwrap();
        }
        s
    });
    assert_eq!(sum, (0..200u64).map(|i| i * 10 + 1).sum::<u64>());
    assert_eq!(a.stats().spawned, 200);
    assert_eq!(b.stats().spawned, 200);
    assert_balanced(&a.stats());
    assert_balanced(&b.stats());
}

// ---------------------------------------------------------------------------------------------
// yield_now
// ---------------------------------------------------------------------------------------------

#[test]
fn yield_storm_across_procs() {
    const TASKS: usize = 200;
    const YIELDS: usize = 100;
    for procs in 1..=4 {
        let rt = rt(procs);
        let steps = Counters::new(TASKS);
        let hs: Vec<_> = (0..TASKS)
            .map(|i| {
                let steps = steps.clone();
                rt.spawn(async move {
                    for _ in 0..YIELDS {
                        steps.bump(i);
                        gmprt::yield_now().await;
                    }
                    i
                })
            })
            .collect();
        for (i, h) in hs.into_iter().enumerate() {
            assert_eq!(h.join(), Ok(i), "procs={procs}");
        }
        steps.assert_all(YIELDS, "steps");
        let st = rt.stats();
        // A yield costs exactly one extra poll: the wake during the poll re-queues the task
        // once, never twice.
        assert_eq!(st.polls, (TASKS * (YIELDS + 1)) as u64, "procs={procs} {st:?}");
        assert_eq!(st.spawned, TASKS as u64);
        assert_balanced(&st);
    }
}

#[test]
fn yield_now_goes_behind_queued_tasks() {
    // On one P, a yielding task goes to the tail of the local queue: every task queued before
    // it gets its first poll before any task gets its second.
    const TASKS: usize = 64;
    let rt = rt(1);
    let seq = Arc::new(AtomicUsize::new(0));
    let first = Counters::new(TASKS);
    let second = Counters::new(TASKS);
    let (f2, s2, seq2) = (first.clone(), second.clone(), seq.clone());
    rt.spawn(async move {
        let hs: Vec<_> = (0..TASKS)
            .map(|i| {
                let (first, second, seq) = (f2.clone(), s2.clone(), seq2.clone());
                gmprt::spawn(async move {
                    first.0[i].store(seq.fetch_add(1, SeqCst), SeqCst);
                    gmprt::yield_now().await;
                    second.0[i].store(seq.fetch_add(1, SeqCst), SeqCst);
                })
            })
            .collect();
        for h in hs {
            h.await.unwrap();
        }
    })
    .join()
    .unwrap();
    let last_first = (0..TASKS).map(|i| first.get(i)).max().unwrap();
    let first_second = (0..TASKS).map(|i| second.get(i)).min().unwrap();
    assert!(
        last_first < first_second,
        "a task's second poll (seq {first_second}) came before another task's first (seq {last_first})"
    );
}

/// A task's own `yield_now` re-queues it without a wake (the poll harness does it when the
/// poll ends); an abort that lands during that poll still wins: the task is cancelled, not
/// re-queued.
#[test]
fn abort_during_a_poll_that_yields() {
    for procs in [1, 2] {
        let rt = rt(procs);
        let latch = Latch::new();
        let drops = Counters::new(1);
        let (tx, rx) = mpsc::channel();
        let (l, d) = (latch.clone(), DropGuard::new(&drops, 0));
        let h = rt.spawn(async move {
            let _d = d;
            tx.send(()).unwrap();
            l.wait(); // the M is inside this poll while the test aborts
            loop {
                gmprt::yield_now().await;
            }
        });
        rx.recv().unwrap();
        h.abort();
        latch.release();
        assert_eq!(h.join(), Err(JoinError::Cancelled), "procs={procs}");
        assert_eq!(drops.get(0), 1, "procs={procs}");
        let st = rt.stats();
        assert_eq!((st.spawned, st.cancelled), (1, 1), "procs={procs} {st:?}");
        assert_balanced(&st);
    }
}

/// `yield_now` polled with a waker that is not its task's own (an executor inside the task)
/// wakes that waker at once, and asks nothing of the task: it is polled exactly once.
#[test]
fn yield_now_under_another_waker_wakes_that_waker() {
    struct Count(AtomicUsize);
    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, SeqCst);
        }
    }
    let rt = rt(1);
    let woken = rt
        .spawn(async {
            let count = Arc::new(Count(AtomicUsize::new(0)));
            let waker = Waker::from(count.clone());
            let mut y = std::pin::pin!(gmprt::yield_now());
            let mut cx = Context::from_waker(&waker);
            assert!(y.as_mut().poll(&mut cx).is_pending());
            let woken = count.0.load(SeqCst);
            assert!(y.as_mut().poll(&mut cx).is_ready());
            woken
        })
        .join()
        .unwrap();
    assert_eq!(woken, 1, "the foreign waker was not woken");
    let st = rt.stats();
    assert_eq!(st.polls, 1, "the task was re-queued for another waker's yield: {st:?}");
}

// ---------------------------------------------------------------------------------------------
// Panics
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// abort
// ---------------------------------------------------------------------------------------------

#[test]
fn abort_parked_task_from_outside() {
    let rt = rt(2);
    let gate = Gate::new();
    let drops = Counters::new(1);
    let d = DropGuard::new(&drops, 0);
    let g = gate.clone();
    let h = rt.spawn(async move {
        let _d = d;
        g.wait().await;
        1u32
    });
    gate.wait_for_waiters(1);
    assert!(!h.is_finished());
    h.abort();
    h.abort(); // twice is harmless
    wait_until(|| h.is_finished());
    assert_eq!(drops.get(0), 1, "the aborted future is dropped once, before the handle resolves");
    // A wake after cancellation must not poll (or drop) anything again.
    gate.open();
    assert_eq!(h.join(), Err(JoinError::Cancelled));
    assert_eq!(drops.get(0), 1);
    let st = rt.stats();
    assert_eq!((st.spawned, st.completed, st.cancelled), (1, 0, 1), "{st:?}");
    assert_balanced(&st);
}

#[test]
fn abort_parked_task_from_a_task_on_one_p() {
    // On one P the child has certainly finished its poll and parked before the parent resumes.
    let rt = rt(1);
    let drops = Counters::new(1);
    let gate = Gate::new();
    let (d, g) = (drops.clone(), gate.clone());
    let res = rt
        .spawn(async move {
            let dg = DropGuard::new(&d, 0);
            let g2 = g.clone();
            let child = gmprt::spawn(async move {
                let _dg = dg;
                g2.wait().await;
                5u8
            });
            while g.waiters() == 0 {
                gmprt::yield_now().await;
            }
            child.abort();
            let r = child.await;
            (r, d.get(0))
        })
        .join()
        .unwrap();
    assert_eq!(res, (Err(JoinError::Cancelled), 1));
    gate.open();
    drop(rt);
    assert_eq!(drops.get(0), 1);
}

#[test]
fn abort_of_finished_task_keeps_its_output() {
    let rt = rt(2);
    let drops = Counters::new(1);
    let d = drops.clone();
    let h = rt.spawn(async move { Output { value: 11, _guard: DropGuard::new(&d, 0) } });
    wait_until(|| h.is_finished());
    h.abort();
    let out = h.join().expect("abort after completion keeps Ok");
    assert_eq!(out.value, 11);
    assert_eq!(drops.get(0), 0, "the output is alive while we hold it");
    drop(out);
    assert_eq!(drops.get(0), 1);
    let st = rt.stats();
    assert_eq!((st.completed, st.cancelled), (1, 0), "{st:?}");
}

#[test]
fn abort_of_queued_task_never_polls_it() {
    // One P, busy with the parent: the child sits in runnext until the parent yields.
    let rt = rt(1);
    let polled = Arc::new(AtomicBool::new(false));
    let drops = Counters::new(1);
    let (p, d) = (polled.clone(), drops.clone());
    let r = rt
        .spawn(async move {
            let dg = DropGuard::new(&d, 0);
            let child = gmprt::spawn(async move {
                let _dg = dg;
                p.store(true, SeqCst);
                1u8
            });
            child.abort();
            child.await
        })
        .join()
        .unwrap();
    assert_eq!(r, Err(JoinError::Cancelled));
    assert!(!polled.load(SeqCst), "an aborted queued task was polled");
    assert_eq!(drops.get(0), 1);
    let st = rt.stats();
    assert_eq!((st.spawned, st.completed, st.cancelled), (2, 1, 1), "{st:?}");
}

#[test]
fn abort_of_task_queued_in_the_global_queue() {
    // Both Ms are held by blockers, so tasks spawned from outside wait in the global queue.
    let rt = rt(2);
    let latch = Latch::new();
    let (tx, rx) = mpsc::channel();
    let blockers: Vec<_> = (0..2)
        .map(|_| {
            let (latch, tx) = (latch.clone(), tx.clone());
            rt.spawn(async move {
                tx.send(()).unwrap();
                latch.wait();
            })
        })
        .collect();
    rx.recv().unwrap();
    rx.recv().unwrap();
    let polled = Counters::new(100);
    let drops = Counters::new(100);
    let hs: Vec<_> = (0..100)
        .map(|i| {
            let (p, d) = (polled.clone(), DropGuard::new(&drops, i));
            rt.spawn(async move {
                let _d = d;
                p.bump(i);
                i
            })
        })
        .collect();
    for h in hs.iter().step_by(2) {
        h.abort();
    }
    latch.release();
    for (i, h) in hs.into_iter().enumerate() {
        if i % 2 == 0 {
            assert_eq!(h.join(), Err(JoinError::Cancelled));
            assert_eq!(polled.get(i), 0, "aborted task {i} was polled");
        } else {
            assert_eq!(h.join(), Ok(i));
            assert_eq!(polled.get(i), 1);
        }
    }
    for b in blockers {
        b.join().unwrap();
    }
    drops.assert_all(1, "future drops");
    let st = rt.stats();
    assert_eq!(st.cancelled, 50, "{st:?}");
    assert_balanced(&st);
}

#[test]
fn abort_of_running_task_takes_effect_when_its_poll_returns_pending() {
    let rt = rt(2);
    let latch = Latch::new();
    let gate = Gate::new(); // never opened
    let drops = Counters::new(1);
    let (tx, rx) = mpsc::channel();
    let (l, g, d) = (latch.clone(), gate.clone(), DropGuard::new(&drops, 0));
    let h = rt.spawn(async move {
        let _d = d;
        tx.send(()).unwrap();
        l.wait(); // the M is inside this poll while the test aborts
        g.wait().await;
        0u8
    });
    rx.recv().unwrap();
    h.abort();
    assert!(!h.is_finished(), "a running poll cannot be preempted");
    latch.release();
    assert_eq!(h.join(), Err(JoinError::Cancelled));
    assert_eq!(drops.get(0), 1);
    assert_eq!(gate.waiters(), 1);
}

#[test]
fn abort_of_running_task_that_then_completes() {
    // Futures are never preempted: an abort that arrives during the poll that returns Ready
    // cannot stop it. Either outcome is allowed, but it must be consistent.
    let rt = rt(2);
    let latch = Latch::new();
    let drops = Counters::new(2); // 0: future, 1: output
    let (tx, rx) = mpsc::channel();
    let (l, d, dd) = (latch.clone(), DropGuard::new(&drops, 0), drops.clone());
    let h = rt.spawn(async move {
        let _d = d;
        tx.send(()).unwrap();
        l.wait();
        Output { value: 8, _guard: DropGuard::new(&dd, 1) }
    });
    rx.recv().unwrap();
    h.abort();
    latch.release();
    match h.join() {
        Ok(out) => {
            assert_eq!(out.value, 8);
            drop(out);
            assert_eq!(drops.get(1), 1);
        }
        Err(JoinError::Cancelled) => {
            // The output was produced, so it must have been dropped by the runtime.
            assert_eq!(drops.get(1), 1);
        }
        Err(e) => panic!("unexpected {e:?}"),
    }
    assert_eq!(drops.get(0), 1);
    drop(rt);
    assert_eq!(drops.get(1), 1);
}

#[test]
fn task_aborting_itself() {
    let rt = rt(2);
    let gate = Gate::new();
    let drops = Counters::new(1);
    let me: Arc<Mutex<Option<JoinHandle<u8>>>> = Arc::default();
    let (m, g, d) = (me.clone(), gate.clone(), DropGuard::new(&drops, 0));
    let (tx, rx) = mpsc::channel::<()>();
    let h = rt.spawn(async move {
        let _d = d;
        rx.recv().unwrap(); // wait until our handle is in `me`
        m.lock().unwrap().as_ref().unwrap().abort();
        g.wait().await;
        1
    });
    *me.lock().unwrap() = Some(h);
    tx.send(()).unwrap();
    gate.wait_for_waiters(1);
    let h = loop {
        // The task aborts through a reference to the handle; take it back once it has.
        let mut slot = me.lock().unwrap();
        if slot.as_ref().unwrap().is_finished() {
            break slot.take().unwrap();
        }
        drop(slot);
        std::thread::yield_now();
    };
    assert_eq!(h.join(), Err(JoinError::Cancelled));
    assert_eq!(drops.get(0), 1);
}

// ---------------------------------------------------------------------------------------------
// JoinHandle: drop before / after completion, waker replacement
// ---------------------------------------------------------------------------------------------

#[test]
fn join_handle_dropped_before_completion_output_dropped_once() {
    let rt = rt(2);
    const N: usize = 200;
    let gate = Gate::new();
    let outs = Counters::new(N);
    let (tx, rx) = mpsc::channel();
    for i in 0..N {
        let (g, o, tx) = (gate.clone(), outs.clone(), tx.clone());
        let h = rt.spawn(async move {
            g.wait().await;
            tx.send(i).unwrap();
            Output { value: i as u64, _guard: DropGuard::new(&o, i) }
        });
        drop(h);
    }
    gate.wait_for_waiters(N);
    gate.open();
    for _ in 0..N {
        rx.recv().unwrap();
    }
    // The send happens before the output exists; wait for the runtime to drop each output.
    wait_until(|| outs.sum() == N);
    drop(rt);
    outs.assert_all(1, "output drops");
}

#[test]
fn join_handle_dropped_after_completion_output_dropped_once() {
    let rt = rt(2);
    const N: usize = 100;
    let outs = Counters::new(N);
    let hs: Vec<_> = (0..N)
        .map(|i| {
            let o = outs.clone();
            rt.spawn(async move { Output { value: i as u64, _guard: DropGuard::new(&o, i) } })
        })
        .collect();
    for (i, h) in hs.into_iter().enumerate() {
        wait_until(|| h.is_finished());
        assert_eq!(outs.get(i), 0, "output {i} dropped while its handle still holds it");
        drop(h);
        assert_eq!(outs.get(i), 1, "dropping the handle of a finished task drops its output");
    }
    drop(rt);
    outs.assert_all(1, "output drops");
}

#[test]
fn join_handles_dropped_while_tasks_complete() {
    // Handle drops race completions (and, for some, a stored join waker): every output is
    // dropped exactly once, by whichever side comes second.
    const N: usize = 20_000;
    let rt = rt(2);
    let outs = Counters::new(N);
    let hs: Vec<_> = (0..N)
        .map(|i| {
            let o = outs.clone();
            rt.spawn(async move {
                if i % 4 == 0 {
                    gmprt::yield_now().await;
                }
                Output { value: i as u64, _guard: DropGuard::new(&o, i) }
            })
        })
        .collect();
    rt.block_on(async {
        for (i, mut h) in hs.into_iter().enumerate() {
            if i % 3 == 0 {
                // Store a join waker first, then drop.
                std::future::poll_fn(|cx| {
                    let _ = Pin::new(&mut h).poll(cx);
                    Poll::Ready(())
                })
                .await;
            }
            drop(h);
        }
    });
    wait_until(|| outs.sum() >= N);
    drop(rt);
    outs.assert_all(1, "output drops");
}

#[test]
fn aborts_racing_completions() {
    const N: usize = 20_000;
    let rt = rt(2);
    let produced = Counters::new(N);
    let outs = Counters::new(N);
    let futs = Counters::new(N);
    let hs: Vec<_> = (0..N)
        .map(|i| {
            let (p, o, f) = (produced.clone(), outs.clone(), DropGuard::new(&futs, i));
            rt.spawn(async move {
                let _f = f;
                if i % 2 == 0 {
                    gmprt::yield_now().await;
                }
                p.bump(i);
                Output { value: i as u64, _guard: DropGuard::new(&o, i) }
            })
        })
        .collect();
    let mut cancelled = 0;
    for h in &hs {
        h.abort();
    }
    for (i, h) in hs.into_iter().enumerate() {
        match h.join() {
            Ok(out) => {
                assert_eq!(out.value, i as u64);
                assert_eq!(produced.get(i), 1);
            }
            Err(JoinError::Cancelled) => {
                assert_eq!(produced.get(i), 0, "task {i} produced an output but joined Cancelled");
                cancelled += 1;
            }
            Err(e) => panic!("task {i}: {e:?}"),
        }
        assert_eq!(futs.get(i), 1, "task {i}: future drops");
        assert_eq!(outs.get(i), produced.get(i), "task {i}: output drops");
    }
    let st = rt.stats();
    assert_eq!(st.cancelled, cancelled, "{st:?}");
    assert_balanced(&st);
}

#[test]
fn output_of_finished_task_survives_shutdown() {
    let rt = rt(2);
    let outs = Counters::new(2);
    let (o0, o1) = (outs.clone(), outs.clone());
    let h0 = rt.spawn(async move { Output { value: 1, _guard: DropGuard::new(&o0, 0) } });
    let h1 = rt.spawn(async move { Output { value: 2, _guard: DropGuard::new(&o1, 1) } });
    wait_until(|| h0.is_finished() && h1.is_finished());
    drop(rt);
    assert_eq!(outs.sum(), 0, "shutdown dropped an output that belongs to a handle");
    assert_eq!(h0.join().unwrap().value, 1);
    assert_eq!(outs.get(0), 1);
    drop(h1);
    assert_eq!(outs.get(1), 1);
}

#[test]
fn join_handle_polled_then_dropped() {
    // The handle stores a waker (JOIN_WAKER) and is then dropped before the task completes.
    let rt = rt(2);
    let gate = Gate::new();
    let outs = Counters::new(1);
    let (g, o) = (gate.clone(), outs.clone());
    let mut h = rt.spawn(async move {
        g.wait().await;
        Output { value: 3, _guard: DropGuard::new(&o, 0) }
    });
    let first = rt.block_on(std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut h).poll(cx).is_pending())));
    assert!(first, "the task cannot be done before the gate opens");
    drop(h);
    gate.open();
    wait_until(|| outs.get(0) == 1);
    drop(rt);
    assert_eq!(outs.get(0), 1);
}

#[test]
fn join_handle_waker_is_replaced_when_polled_from_elsewhere() {
    // Poll the handle once from block_on (one waker), then await it from a task (another):
    // the completion must wake the second one.
    let rt = rt(2);
    let gate = Gate::new();
    let g = gate.clone();
    let mut h = rt.spawn(async move {
        g.wait().await;
        77u32
    });
    let pending = rt.block_on(std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut h).poll(cx).is_pending())));
    assert!(pending);
    // A JoinHandle is itself a future: the waiter task awaits it.
    let waiter = rt.spawn(h);
    // Make sure the waiter has parked on the handle before the gate opens.
    wait_until(|| rt.stats().parked_tasks == 2);
    gate.open();
    assert_eq!(waiter.join(), Ok(Ok(77)));
}

// ---------------------------------------------------------------------------------------------
// Wakes from foreign threads
// ---------------------------------------------------------------------------------------------

#[test]
fn wake_from_foreign_threads() {
    const N: usize = 1_000;
    for procs in [1, 2] {
        let rt = rt(procs);
        let slots: Vec<Arc<Slot>> = (0..N).map(|_| Arc::default()).collect();
        let hs: Vec<_> = slots
            .iter()
            .map(|s| {
                let t = s.take();
                rt.spawn(async move { t.await + 1 })
            })
            .collect();
        std::thread::scope(|sc| {
            for half in slots.chunks(N / 2) {
                sc.spawn(move || {
                    for (k, s) in half.iter().enumerate() {
                        // Fill some before and some after the task parked.
                        if k % 2 == 0 {
                            wait_until(|| s.has_waiter());
                        }
                        s.fill(k as u64);
                    }
                });
            }
        });
        for (i, h) in hs.into_iter().enumerate() {
            assert_eq!(h.join(), Ok((i % (N / 2)) as u64 + 1), "procs={procs} task {i}");
        }
        assert_balanced(&rt.stats());
    }
}

#[test]
fn gate_opened_from_foreign_thread_wakes_many_tasks() {
    const N: usize = 2_000;
    let rt = rt(2);
    let gates = [Gate::new(), Gate::new()];
    let hs: Vec<_> = (0..N)
        .map(|i| {
            let g = gates[i % 2].clone();
            rt.spawn(async move {
                g.wait().await;
                i
            })
        })
        .collect();
    std::thread::scope(|s| {
        for g in &gates {
            s.spawn(move || {
                g.wait_for_waiters(N / 2);
                g.open();
            });
        }
    });
    for (i, h) in hs.into_iter().enumerate() {
        assert_eq!(h.join(), Ok(i));
    }
    assert_balanced(&rt.stats());
}

// ---------------------------------------------------------------------------------------------
// A representative workload for procs 1..=8
// ---------------------------------------------------------------------------------------------

/// An async mailbox with one receiver (enough for ping-pong).
#[derive(Default)]
struct Mailbox {
    inner: Mutex<(std::collections::VecDeque<u64>, Option<Waker>)>,
}

impl Mailbox {
    fn send(&self, v: u64) {
        let w = {
            let mut g = self.inner.lock().unwrap();
            g.0.push_back(v);
            g.1.take()
        };
        if let Some(w) = w {
            w.wake();
        }
    }
    fn recv(self: &Arc<Self>) -> impl Future<Output = u64> + Send + 'static {
        let me = self.clone();
        std::future::poll_fn(move |cx| {
            let mut g = me.inner.lock().unwrap();
            match g.0.pop_front() {
                Some(v) => Poll::Ready(v),
                None => {
                    g.1 = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
    }
}

fn representative_workload(procs: usize) {
    let rt = rt(procs);
    const PAIRS: usize = 32;
    const ROUNDS: u64 = 50;
    let drops = Counters::new(PAIRS * 2);
    let total = rt.block_on(async {
        let mut hs = Vec::new();
        for p in 0..PAIRS {
            let (a, b) = (Arc::new(Mailbox::default()), Arc::new(Mailbox::default()));
            let (a2, b2) = (a.clone(), b.clone());
            let dping = DropGuard::new(&drops, 2 * p);
            let dpong = DropGuard::new(&drops, 2 * p + 1);
            // ping: sends 0, expects back +1, sends that, ...
            hs.push(gmprt::spawn(async move {
                let _d = dping;
                let mut v = 0;
                for _ in 0..ROUNDS {
                    b2.send(v);
                    v = a2.recv().await;
                }
                v
            }));
            hs.push(gmprt::spawn(async move {
                let _d = dpong;
                let mut last = 0;
                for r in 0..ROUNDS {
                    let v = b.recv().await;
                    if r % 8 == 0 {
                        gmprt::yield_now().await;
                    }
                    last = v + 1;
                    a.send(last);
                }
                last
            }));
        }
        // Plus a spawn tree and a yield storm running alongside.
        let visits = Counters::new(tree_nodes(4, 3));
        let tree = gmprt::spawn(joined_tree(0, 4, 3, visits.clone()));
        let storm: Vec<_> = (0..64u64)
            .map(|i| {
                gmprt::spawn(async move {
                    for _ in 0..20 {
                        gmprt::yield_now().await;
                    }
                    i
                })
            })
            .collect();
        let mut total = 0;
        for h in hs {
            total += h.await.unwrap();
        }
        assert_eq!(tree.await.unwrap(), 81);
        visits.assert_all(1, "tree visits");
        for (i, h) in storm.into_iter().enumerate() {
            assert_eq!(h.await.unwrap(), i as u64);
        }
        total
    });
    assert_eq!(total, 2 * PAIRS as u64 * ROUNDS, "procs={procs}");
    drops.assert_all(1, "future drops");
    let st = rt.stats();
    assert_eq!(st.procs, procs);
    assert_eq!(st.local_queue_lens.len(), procs);
    // The tree's root is a task here too.
    assert_eq!(st.spawned, (2 * PAIRS + tree_nodes(4, 3) + 64) as u64, "procs={procs} {st:?}");
    assert_balanced(&st);
    let h = rt.handle();
    drop(rt);
    assert_shut_down(&h.stats());
}

#[test]
fn representative_workload_procs_1_to_8() {
    for procs in 1..=8 {
        representative_workload(procs);
    }
}

// ---------------------------------------------------------------------------------------------
// Shutdown
// ---------------------------------------------------------------------------------------------

#[test]
fn shutdown_drops_parked_tasks_exactly_once() {
    const N: usize = 1_000;
    let rt = rt(2);
    let gate = Gate::new(); // never opened before shutdown
    let drops = Counters::new(N);
    let mut kept = Vec::new();
    for i in 0..N {
        let (g, d) = (gate.clone(), DropGuard::new(&drops, i));
        let h = rt.spawn(async move {
            let _d = d;
            if i % 3 == 0 {
                gmprt::yield_now().await;
            }
            g.wait().await;
            i
        });
        if i % 2 == 0 {
            kept.push(h);
        }
    }
    gate.wait_for_waiters(N);
    assert_eq!(drops.sum(), 0);
    let handle = rt.handle();
    drop(rt);
    drops.assert_all(1, "future drops at shutdown");
    for h in kept {
        assert_eq!(h.join(), Err(JoinError::Cancelled));
    }
    // Stale wakers fire after shutdown: nothing is polled or dropped again.
    gate.open();
    drops.assert_all(1, "future drops after late wakes");
    let st = handle.stats();
    assert_eq!((st.spawned, st.cancelled), (N as u64, N as u64), "{st:?}");
    assert_shut_down(&st);
}

/// Tasks in every state at shutdown. Ms are held inside polls by blocker tasks while the test
/// arranges queued tasks, then the runtime is dropped on another thread and the blockers are
/// released only once the shutdown flag is up (seen through `try_spawn`).
fn shutdown_with_everything_pending(procs: usize) {
    let rt = rt(procs);
    let handle = rt.handle();
    // 0..P: parked once on `never`; P..2P: parked on `first`, woken, parked again on `never`;
    // 2P..3P: parked on `woken`, woken while every M is blocked (queued at shutdown);
    // 3P..4P: spawned from outside while every M is blocked (global queue, never polled);
    // 4P..5P: spawned by the blockers before blocking (runnext / local queues).
    const P: usize = 300;
    let drops = Counters::new(5 * P);
    let polled = Counters::new(5 * P);
    let never = Gate::new();
    let first = Gate::new();
    let woken = Gate::new();
    let mut handles: Vec<(usize, JoinHandle<usize>)> = Vec::new();
    let spawn_waiter = |i: usize, gates: Vec<Arc<Gate>>| {
        let (d, p) = (DropGuard::new(&drops, i), polled.clone());
        handle.spawn(async move {
            let _d = d;
            p.bump(i);
            for g in gates {
                g.wait().await;
            }
            i
        })
    };
    for i in 0..P {
        handles.push((i, spawn_waiter(i, vec![never.clone()])));
        handles.push((P + i, spawn_waiter(P + i, vec![first.clone(), never.clone()])));
        handles.push((2 * P + i, spawn_waiter(2 * P + i, vec![woken.clone(), never.clone()])));
    }
    first.wait_for_waiters(P);
    woken.wait_for_waiters(P);
    first.open();
    never.wait_for_waiters(2 * P);

    // Hold every M inside a poll.
    let latch = Latch::new();
    let (tx, rx) = mpsc::channel();
    let blockers: Vec<_> = (0..procs)
        .map(|b| {
            let (latch, tx, never, drops, polled) =
                (latch.clone(), tx.clone(), never.clone(), drops.clone(), polled.clone());
            handle.spawn(async move {
                let per = P / procs + 1;
                let mut children = 0;
                for i in (4 * P + b * per..4 * P + (b + 1) * per).filter(|&i| i < 5 * P) {
                    let (d, p, g) = (DropGuard::new(&drops, i), polled.clone(), never.clone());
                    drop(gmprt::spawn(async move {
                        let _d = d;
                        p.bump(i);
                        g.wait().await;
                    }));
                    children += 1;
                }
                tx.send(()).unwrap();
                latch.wait();
                children
            })
        })
        .collect();
    for _ in 0..procs {
        rx.recv().unwrap();
    }
    // Every M is blocked, so every earlier poll has returned: the waiters are idle.
    woken.open(); // 2P..3P become queued, and stay so
    for i in 3 * P..4 * P {
        handles.push((i, spawn_waiter(i, vec![])));
    }

    let mut late_drops = 0usize;
    let late = Counters::new(1);
    std::thread::scope(|s| {
        let dropper = s.spawn(move || drop(rt));
        // Wait for the shutdown flag; each refused or accepted probe is counted.
        loop {
            late_drops += 1;
            let d = DropGuard::new(&late, 0);
            match handle.try_spawn(async move { drop(d) }) {
                Err(SpawnError::Shutdown) => break,
                Err(e) => panic!("unexpected {e:?}"),
                Ok(h) => drop(h),
            }
            std::thread::yield_now();
        }
        latch.release();
        dropper.join().unwrap();
    });

    drops.assert_all(1, "future drops at shutdown");
    assert_eq!(late.get(0), late_drops, "probe futures dropped exactly once");
    for i in 3 * P..4 * P {
        assert_eq!(polled.get(i), 0, "task {i}, queued while every M was blocked, was polled after shutdown");
    }
    for i in 2 * P..3 * P {
        assert_eq!(polled.get(i), 1, "task {i}, woken while every M was blocked, was polled again");
    }
    for (i, h) in handles {
        assert_eq!(h.join(), Err(JoinError::Cancelled), "task {i}");
    }
    let mut children = 0;
    for b in blockers {
        children += b.join().expect("blockers complete");
    }
    assert_eq!(children, P);
    never.open();
    woken.open();
    drops.assert_all(1, "future drops after late wakes");
    let st = handle.stats();
    assert_eq!(st.spawned, (5 * P + procs + late_drops) as u64, "{st:?}");
    assert_eq!(st.completed, procs as u64, "only the blockers complete: {st:?}");
    assert_shut_down(&st);
}

#[test]
fn shutdown_with_everything_pending_one_p() {
    shutdown_with_everything_pending(1);
}

#[test]
fn shutdown_with_everything_pending_two_ps() {
    shutdown_with_everything_pending(2);
}

#[test]
fn shutdown_while_foreign_threads_spawn() {
    // Spawns from outside race the shutdown: each future is run or dropped, exactly once, and
    // each handle resolves. Busy tasks that yield forever keep the Ps' local queues full, so
    // the Ms stop with queued work (which shutdown must find in every P).
    for round in 0..20 {
        let rt = rt(2);
        let handle = rt.handle();
        const T: usize = 2;
        const PER: usize = 2_000;
        const BUSY: usize = 500;
        let drops = Counters::new(T * PER);
        let ran = Counters::new(T * PER);
        let busy_drops = Counters::new(BUSY);
        let busy_polls = Arc::new(AtomicUsize::new(0));
        for i in 0..BUSY {
            let (d, polls) = (DropGuard::new(&busy_drops, i), busy_polls.clone());
            drop(rt.spawn(async move {
                let _d = d;
                loop {
                    polls.fetch_add(1, SeqCst);
                    gmprt::yield_now().await;
                }
            }));
        }
        wait_until(|| busy_polls.load(SeqCst) >= 4 * BUSY);
        let started = Arc::new(std::sync::Barrier::new(T + 1));
        std::thread::scope(|s| {
            let spawners: Vec<_> = (0..T)
                .map(|t| {
                    let (handle, drops, ran, started) = (handle.clone(), &drops, &ran, started.clone());
                    s.spawn(move || {
                        started.wait();
                        let mut hs = Vec::new();
                        for k in 0..PER {
                            let i = t * PER + k;
                            let (d, r) = (DropGuard::new(drops, i), ran.clone());
                            hs.push(handle.spawn(async move {
                                let _d = d;
                                gmprt::yield_now().await;
                                r.bump(i);
                                i
                            }));
                        }
                        hs
                    })
                })
                .collect();
            started.wait();
            drop(rt);
            for (t, sp) in spawners.into_iter().enumerate() {
                for (k, h) in sp.join().unwrap().into_iter().enumerate() {
                    let i = t * PER + k;
                    match h.join() {
                        Ok(v) => assert_eq!((v, ran.get(i)), (i, 1), "round {round}"),
                        Err(JoinError::Cancelled) => assert_eq!(ran.get(i), 0, "round {round} task {i}"),
                        Err(e) => panic!("round {round} task {i}: {e:?}"),
                    }
                }
            }
        });
        drops.assert_all(1, &format!("round {round}: future drops"));
        busy_drops.assert_all(1, &format!("round {round}: busy future drops"));
        assert_shut_down(&handle.stats());
    }
}

#[test]
fn spawn_after_shutdown() {
    let rt = rt(2);
    let handle = rt.handle();
    drop(rt);
    let drops = Counters::new(2);
    let d0 = DropGuard::new(&drops, 0);
    let h = handle.spawn(async move {
        let _d = d0;
        1
    });
    assert_eq!(drops.get(0), 1, "the refused future is dropped at once");
    assert!(h.is_finished());
    assert_eq!(h.join(), Err(JoinError::Cancelled));
    let d1 = DropGuard::new(&drops, 1);
    let r = handle.try_spawn(async move {
        let _d = d1;
        2
    });
    assert_eq!(r.err(), Some(SpawnError::Shutdown));
    assert_eq!(drops.get(1), 1);
    let st = handle.stats();
    assert_eq!((st.spawned, st.cancelled), (2, 2), "{st:?}");
    assert_shut_down(&st);
}

// ---------------------------------------------------------------------------------------------
// Errors and programmer errors
// ---------------------------------------------------------------------------------------------

#[test]
fn zero_procs_is_an_error() {
    match Runtime::builder().procs(0).build() {
        Err(e @ BuildError::ZeroProcs { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("procs must be at least 1"), "message: {msg}");
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("procs(0) built a runtime"),
    }
}

#[test]
fn runtime_new_starts() {
    let rt = Runtime::new();
    assert!(rt.procs() >= 1);
    assert_eq!(rt.block_on(async { gmprt::spawn(async { 2 + 2 }).await }), Ok(4));
    assert_eq!(rt.stats().procs, rt.procs());
}

#[test]
fn try_spawn_outside_a_runtime() {
    let drops = Counters::new(1);
    let d = DropGuard::new(&drops, 0);
    let r = gmprt::try_spawn(async move {
        let _d = d;
    });
    assert_eq!(r.err(), Some(SpawnError::NoRuntime));
    assert_eq!(drops.get(0), 1, "the refused future is dropped");
    assert!(SpawnError::NoRuntime.to_string().contains("not inside a gmprt runtime"));
    assert!(Handle::try_current().is_none());
}

#[test]
fn try_spawn_inside_a_runtime() {
    let rt = rt(1);
    let v = rt.block_on(async {
        assert!(Handle::try_current().is_some());
        gmprt::try_spawn(async { 5 }).expect("inside block_on").await
    });
    assert_eq!(v, Ok(5));
}

#[test]
#[should_panic(expected = "not inside a gmprt runtime")]
fn spawn_outside_a_runtime_panics() {
    drop(gmprt::spawn(async {}));
}

#[test]
#[should_panic(expected = "not inside a gmprt runtime")]
fn go_outside_a_runtime_panics() {
    drop(gmprt::go(|| async { 1 }));
}

#[test]
fn blocking_join_inside_a_task_is_refused() {
    let rt = rt(2);
    let gate = Gate::new();
    let g = gate.clone();
    let inner = rt.spawn(async move { g.wait().await });
    let outer = rt.spawn(async move {
        let _ = inner.join();
    });
    match outer.join() {
        Err(JoinError::Panicked(m)) => assert!(m.contains("would block an M"), "message: {m}"),
        other => panic!("want a panic, got {other:?}"),
    }
    gate.open();
    assert_eq!(rt.spawn(async { 1 }).join(), Ok(1));
}

#[test]
fn block_on_inside_a_task_is_refused() {
    let rt = Arc::new(rt(2));
    let rt2 = rt.clone();
    let r = rt.spawn(async move { rt2.block_on(async { 1 }) }).join();
    match r {
        Err(JoinError::Panicked(m)) => assert!(m.contains("would block an M"), "message: {m}"),
        other => panic!("want a panic, got {other:?}"),
    }
    assert_eq!(rt.spawn(async { 1 }).join(), Ok(1));
}

// ---------------------------------------------------------------------------------------------
// Stats
// ---------------------------------------------------------------------------------------------

#[test]
fn stats_are_consistent() {
    let rt = rt(3);
    let st0 = rt.stats();
    assert_eq!((st0.procs, st0.spawned, st0.completed, st0.cancelled, st0.polls), (3, 0, 0, 0, 0));
    assert_eq!(st0.local_queue_lens, vec![0, 0, 0]);

    let gate = Gate::new();
    let mut ok = Vec::new();
    let mut panicking = Vec::new();
    let mut aborted = Vec::new();
    for i in 0..300u64 {
        let g = gate.clone();
        match i % 3 {
            0 => ok.push(rt.spawn(async move { i })),
            1 => panicking.push(rt.spawn(async move {
                gmprt::yield_now().await;
                panic!("{EXPECTED} stats {i}")
            })),
            _ => aborted.push(rt.spawn(async move {
                g.wait().await;
                i
            })),
        }
    }
    gate.wait_for_waiters(100);
    // A waiter registers on the gate during the poll that then parks it: wait for the parks.
    wait_until(|| rt.stats().parked_tasks >= 100);
    let mid = rt.stats();
    assert_eq!(mid.parked_tasks, 100, "{mid:?}");
    assert!(mid.threads >= 1, "{mid:?}");
    for h in &aborted {
        h.abort();
    }
    for h in ok {
        assert!(h.join().is_ok());
    }
    for h in panicking {
        assert!(matches!(h.join(), Err(JoinError::Panicked(_))));
    }
    for h in aborted {
        assert_eq!(h.join(), Err(JoinError::Cancelled));
    }
    let st = rt.stats();
    assert_eq!((st.spawned, st.completed, st.cancelled), (300, 200, 100), "{st:?}");
    // A completing task leaves the owned list just after its handle can see the output, so an
    // M may still be finishing one completion: at most one per P.
    assert!(st.parked_tasks <= 3, "{st:?}");
    assert_eq!(st.global_queue_len, 0, "{st:?}");
    assert!(st.polls >= 300 + 100, "{st:?}");
    assert!(st.steals <= st.steal_attempts, "{st:?}");
    assert_balanced(&st);
    let handle = rt.handle();
    drop(rt);
    let after = handle.stats();
    assert_eq!((after.spawned, after.completed, after.cancelled), (300, 200, 100), "{after:?}");
    assert_shut_down(&after);
}
