//! Closing on quiescence (issue 26): a batch that is not full closes when its runtime has
//! nothing runnable, not at `max_delay`. Every test uses a `max_delay` of an hour, so a batch
//! that waited for its deadline would hang: each test runs its work on a thread and fails
//! (instead of hanging) if the work has not finished after [`HANG`] — a hang bound, never a
//! timing the test asserts on. Deterministic otherwise: everything else waits on results.
use gmprt_offload::jobs::Saxpy;
use gmprt_offload::runtime::{spawn, Runtime};
use gmprt_offload::{Batcher, BatcherConfig, CloseReason, Device};
use std::sync::mpsc;
use std::time::Duration;

/// Longer than any of these tests takes on a loaded 2-core machine by orders of magnitude;
/// shorter than `max_delay`, so a batch waiting for its deadline fails the test.
const HANG: Duration = Duration::from_secs(300);
const DELAY: Duration = Duration::from_secs(3600);

/// Runs `f` on its own thread; panics naming `what` if it has not returned after [`HANG`].
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(HANG)
        .unwrap_or_else(|_| panic!("{what}: still waiting after {HANG:?} (max_delay is {DELAY:?})"))
}

fn batcher(rt: &Runtime, max_batch: usize, max_delay: Duration) -> Batcher<Saxpy> {
    let cfg = BatcherConfig { max_batch, max_delay, runtime: Some(rt.handle()), ..BatcherConfig::default() };
    Batcher::new(Saxpy { a: 2.0 }, &Device::host(), cfg).expect("batcher")
}

/// `b` ran one batch, closed at its deadline: its item waited at least `delay` (a lower bound
/// the close itself guarantees, however loaded the machine).
fn assert_one_deadline_close(b: &Batcher<Saxpy>, delay: Duration) {
    let tl = b.timelines();
    assert_eq!((tl.len(), tl[0].closed_by), (1, CloseReason::Deadline), "{tl:?}");
    assert!(tl[0].queue_wait >= delay, "queue_wait {:?} < max_delay {delay:?}", tl[0].queue_wait);
}

/// Holds the only P of `rt` (procs = 1) with a task blocked on a channel, so the runtime is
/// never quiescent; returns once it is held. Calling the result releases it and waits for it.
fn hold_the_only_p(rt: &Runtime) -> impl FnOnce() + '_ {
    let (hold_tx, hold_rx) = mpsc::channel::<()>();
    let (held_tx, held_rx) = mpsc::channel::<()>();
    let holder = rt.spawn(async move {
        held_tx.send(()).unwrap();
        hold_rx.recv().unwrap(); // blocks the M that holds the only P
    });
    held_rx.recv().unwrap();
    move || {
        hold_tx.send(()).unwrap();
        rt.block_on(holder).expect("holder");
    }
}

/// `tasks` tasks submit `per_task` items each, one after another; returns every result.
fn submitters(procs: usize, tasks: usize, per_task: usize, max_batch: usize) -> (Vec<f32>, Batcher<Saxpy>) {
    let rt = Runtime::builder().procs(procs).build().expect("runtime");
    let b = batcher(&rt, max_batch, DELAY);
    let b2 = b.clone();
    let outs = rt.block_on(async move {
        let hs: Vec<_> = (0..tasks)
            .map(|t| {
                let b = b2.clone();
                spawn(async move {
                    let mut outs = Vec::with_capacity(per_task);
                    for j in 0..per_task {
                        outs.push(b.submit(((t * per_task + j) as f32, 1.0)).await.expect("item"));
                    }
                    outs
                })
            })
            .collect();
        let mut outs = Vec::new();
        for h in hs {
            outs.extend(h.await.expect("task"));
        }
        outs
    });
    (outs, b)
}

fn ten_tasks_one_item_each(procs: usize) {
    let (outs, b) = bounded("10 tasks, one submit each", move || submitters(procs, 10, 1, 1000));
    assert_eq!(outs, (0..10).map(|i| 2.0 * i as f32 + 1.0).collect::<Vec<_>>());
    let tl = b.timelines();
    assert!(tl.iter().all(|t| t.closed_by == CloseReason::Quiescent), "{tl:?}");
    assert_eq!(tl.iter().map(|t| t.n).sum::<usize>(), 10);
    let s = b.stats();
    assert_eq!((s.closed_quiescent, s.closed_deadline, s.items), (tl.len() as u64, 0, 10));
}

/// Ten tasks, one submit each, then a wait: the batch closes when the last of them parks.
#[test]
fn ten_submitters_close_on_quiescence_procs_1() {
    ten_tasks_one_item_each(1);
}

#[test]
fn ten_submitters_close_on_quiescence_procs_2() {
    ten_tasks_one_item_each(2);
}

/// Many rounds: 200 long-lived tasks × 20 items, batches of at most 64. Every batch closes
/// full or on quiescence, none at its deadline; every result is the item's own.
#[test]
fn long_lived_submitters_never_wait_for_the_deadline() {
    let (tasks, per_task) = (200, 20);
    let (outs, b) = bounded("200 × 20 submitters", move || submitters(2, tasks, per_task, 64));
    let want: Vec<f32> = (0..tasks * per_task).map(|i| 2.0 * i as f32 + 1.0).collect();
    assert_eq!(outs, want);
    let s = b.stats();
    assert_eq!(s.items, (tasks * per_task) as u64);
    assert_eq!(s.closed_deadline, 0, "{}", b.report());
    assert_eq!(s.closed_full + s.closed_quiescent, s.batches, "{}", b.report());
    assert!(s.closed_quiescent > 0);
    assert!(s.max_n <= 64);
}

/// A submit the runtime cannot see (a plain thread) is bounded by `max_delay`, not by the
/// runtime's quiescence: here the runtime's only P is held by a task blocked on a channel
/// (never quiescent), so the batch waits for its short deadline and says so.
#[test]
fn a_plain_threads_submit_waits_for_max_delay() {
    let rt = Runtime::builder().procs(1).build().expect("runtime");
    let delay = Duration::from_millis(20);
    let b = batcher(&rt, 1000, delay);
    let release = hold_the_only_p(&rt);
    let f = b.submit((3.0, 1.0));
    assert_eq!(Runtime::builder().procs(1).build().unwrap().block_on(f), Ok(7.0));
    release();
    assert_one_deadline_close(&b, delay);
}

/// The hook is gone with the Batcher: a runtime that outlives it never calls into it, and a
/// shut-down Batcher's open items were closed by shutdown, not lost.
#[test]
fn shutdown_unregisters_and_loses_nothing() {
    let rt = Runtime::builder().procs(2).build().expect("runtime");
    let b = batcher(&rt, 1000, DELAY);
    let f = b.submit((1.0, 1.0)); // from this thread: only shutdown or the deadline closes it
    b.shutdown();
    assert_eq!(rt.block_on(f), Ok(3.0));
    assert_eq!(b.timelines()[0].closed_by, CloseReason::Shutdown);
    // The runtime keeps going quiescent with nothing registered.
    for _ in 0..3 {
        rt.block_on(async { spawn(async {}).await.expect("task") });
    }
    assert_eq!(rt.stats().quiescent_runs, 0);
}

/// A runtime that never goes quiescent (a task yields in a loop until told to stop) still
/// closes a task's batch at its deadline: `max_delay` stays the bound when quiescence does not
/// come (the slot worker watching the deadline closes it).
#[test]
fn a_busy_runtime_closes_at_the_deadline() {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::sync::Arc;
    let rt = Runtime::builder().procs(2).build().expect("runtime");
    let delay = Duration::from_millis(20);
    let b = batcher(&rt, 1000, delay);
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let busy = rt.spawn(async move {
        while !stop2.load(SeqCst) {
            gmprt_offload::runtime::yield_now().await;
        }
    });
    let b2 = b.clone();
    let y = bounded("a submit on a busy runtime", move || {
        rt.block_on(async move { spawn(async move { b2.submit((4.0, 1.0)).await }).await.expect("task") })
    });
    stop.store(true, SeqCst);
    assert_eq!(y, Ok(9.0));
    assert_one_deadline_close(&b, delay);
    drop(busy);
}

/// Batches opened from a plain thread each close at their deadline, whether a worker is
/// *watching* when the batch opens (right after the previous batch: a timed wait of
/// `max_delay`, and the admission does not wake it: `Central::watching` in the batcher's module
/// docs) or every worker is parked (after a pause longer than the watch; the admission must
/// notify). A watch that ended without looking again, or an admission that skipped its notify
/// with nobody watching, leaves an item waiting: the test hangs until [`HANG`] and fails. The
/// parked case is reached by waiting until `parked_workers` says every worker is parked.
#[test]
fn batches_opened_while_a_worker_watches_close_at_their_deadline() {
    let rt = Runtime::builder().procs(1).build().expect("runtime");
    let delay = Duration::from_millis(2);
    let b = batcher(&rt, 1000, delay);
    // `batcher`'s: one worker per kit.
    let in_flight = BatcherConfig::default().in_flight;
    // No quiescence can close these batches.
    let release = hold_the_only_p(&rt);
    let b2 = b.clone();
    let outs = bounded("back-to-back batches from a plain thread", move || {
        let plain = Runtime::builder().procs(1).build().unwrap();
        (0..8)
            .map(|i| {
                if i % 2 == 1 {
                    while b2.parked_workers() < in_flight {
                        std::thread::yield_now(); // until the watch ends and every worker parks
                    }
                }
                plain.block_on(b2.submit((i as f32, 1.0))).expect("item")
            })
            .collect::<Vec<_>>()
    });
    release();
    assert_eq!(outs, (0..8).map(|i| 2.0 * i as f32 + 1.0).collect::<Vec<_>>());
    let tl = b.timelines();
    assert_eq!(tl.len(), 8, "{tl:?}");
    for t in &tl {
        assert_eq!((t.n, t.closed_by), (1, CloseReason::Deadline), "{tl:?}");
        assert!(t.queue_wait >= delay, "queue_wait {:?} < max_delay {delay:?}", t.queue_wait);
    }
}
