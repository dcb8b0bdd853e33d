//! Property tests of the scheduler: random programs of spawns, yields, gate wakes, joins,
//! aborts and detaches, run by a root task on 1..=4 Ps, checked against a model.
//!
//! Invariants, per task:
//! * its future is dropped exactly once (by completion, abort or shutdown), and before its
//!   `JoinHandle` resolves;
//! * it is never polled after it returned `Ready`;
//! * a join yields `Ok(the right value)` only if the task was not told to panic, `Panicked` only
//!   if it was (with its message), `Cancelled` only if it was aborted or the runtime shut down
//!   first — and certainly `Cancelled` if it was aborted (or shut down) while its gate was shut;
//! * an output that was produced is dropped exactly once.
//!
//! And for the runtime: after everything is joined or released and the runtime is dropped,
//! `spawned == completed + cancelled`, with `spawned` = the program's spawns + the root.

use gmprt::runtime::{JoinError, JoinHandle, Runtime, RuntimeStats};
use proptest::prelude::*;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

mod common;
use common::{quiet_expected_panics, EXPECTED};

const GATES: usize = 4;
const MAX_OPS: usize = 40;

// ---------------------------------------------------------------------------------------------
// The gate: tasks park on it until it opens (once, for good).
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct Gate {
    state: Mutex<(bool, Vec<Waker>)>,
}

impl Gate {
    fn open(&self) {
        let wakers = {
            let mut s = self.state.lock().unwrap();
            s.0 = true;
            std::mem::take(&mut s.1)
        };
        for w in wakers {
            w.wake();
        }
    }
    fn is_open(&self) -> bool {
        self.state.lock().unwrap().0
    }
    fn wait(self: &Arc<Self>) -> impl Future<Output = ()> + Send + 'static {
        let me = self.clone();
        std::future::poll_fn(move |cx| {
            let mut s = me.state.lock().unwrap();
            if s.0 {
                Poll::Ready(())
            } else {
                s.1.push(cx.waker().clone());
                Poll::Pending
            }
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Per-task probes
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct Track {
    polls: AtomicUsize,
    polls_after_ready: AtomicUsize,
    ready: AtomicUsize,
    /// Reached its `panic!` (so it completed as `Panicked`).
    panicked: AtomicUsize,
    future_drops: AtomicUsize,
    output_drops: AtomicUsize,
}

/// The output of task `id`; its drops are counted.
struct Out {
    id: usize,
    value: u64,
    tracks: Arc<Vec<Track>>,
}

impl Drop for Out {
    fn drop(&mut self) {
        self.tracks[self.id].output_drops.fetch_add(1, SeqCst);
    }
}

fn value_of(id: usize) -> u64 {
    id as u64 * 7 + 1
}

fn panic_message(id: usize) -> String {
    format!("{EXPECTED} task {id}")
}

/// Wraps a task's future: counts polls, flags polls after `Ready`, counts drops.
struct Probe {
    inner: Pin<Box<dyn Future<Output = Out> + Send>>,
    tracks: Arc<Vec<Track>>,
    id: usize,
    done: bool,
}

impl Future for Probe {
    type Output = Out;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Out> {
        let t = &self.tracks[self.id];
        t.polls.fetch_add(1, SeqCst);
        if self.done {
            t.polls_after_ready.fetch_add(1, SeqCst);
            return Poll::Pending;
        }
        let r = self.inner.as_mut().poll(cx);
        if r.is_ready() {
            self.tracks[self.id].ready.fetch_add(1, SeqCst);
            self.done = true;
        }
        r
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.tracks[self.id].future_drops.fetch_add(1, SeqCst);
    }
}

// ---------------------------------------------------------------------------------------------
// Programs
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    /// Spawn a task that waits on `gate` (if any), yields `yields` times, then returns its
    /// value or panics.
    Spawn { gate: Option<usize>, yields: u8, panics: bool },
    /// The root yields.
    Yield,
    /// Open a gate.
    WakeGate(usize),
    /// Open a gate from a fresh std thread (its wakes come from off the runtime).
    WakeGateElsewhere(usize),
    /// Await task `i % tasks` (opening its gate first if it is shut, so the join terminates).
    Join(usize),
    /// Abort task `i % tasks`.
    Abort(usize),
    /// Drop task `i % tasks`'s handle (detach it).
    DropHandle(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (proptest::option::of(0..GATES), 0u8..6, proptest::bool::weighted(0.2))
            .prop_map(|(gate, yields, panics)| Op::Spawn { gate, yields, panics }),
        1 => Just(Op::Yield),
        2 => (0..GATES).prop_map(Op::WakeGate),
        1 => (0..GATES).prop_map(Op::WakeGateElsewhere),
        2 => any::<usize>().prop_map(Op::Join),
        2 => any::<usize>().prop_map(Op::Abort),
        1 => any::<usize>().prop_map(Op::DropHandle),
    ]
}

/// What the root knows about one task.
#[derive(Debug, Clone)]
struct Model {
    gate: Option<usize>,
    panics: bool,
    aborted: bool,
    /// Aborted while its gate was shut: it cannot have completed, so it must be `Cancelled`.
    must_cancel: bool,
    joined: bool,
}

/// Checks one join result against the model; returns a description of what is wrong.
fn check_join(
    id: usize,
    m: &Model,
    r: Result<Out, JoinError>,
    tracks: &[Track],
    shut_down: bool,
) -> Vec<String> {
    let mut errs = Vec::new();
    let t = &tracks[id];
    if t.future_drops.load(SeqCst) != 1 {
        errs.push(format!(
            "task {id}: handle resolved but future dropped {} times",
            t.future_drops.load(SeqCst)
        ));
    }
    match r {
        Ok(out) => {
            if m.panics {
                errs.push(format!("task {id}: told to panic, joined Ok"));
            }
            if m.must_cancel {
                errs.push(format!("task {id}: aborted behind a shut gate, joined Ok"));
            }
            if out.id != id || out.value != value_of(id) {
                errs.push(format!("task {id}: wrong output (id {}, value {})", out.id, out.value));
            }
        }
        Err(JoinError::Panicked(msg)) => {
            if !m.panics {
                errs.push(format!("task {id}: not told to panic, joined Panicked({msg:?})"));
            } else if msg != panic_message(id) {
                errs.push(format!("task {id}: wrong panic message {msg:?}"));
            }
            if m.must_cancel {
                errs.push(format!("task {id}: aborted behind a shut gate, joined Panicked"));
            }
        }
        Err(JoinError::Cancelled) => {
            if !m.aborted && !shut_down {
                errs.push(format!("task {id}: never aborted, joined Cancelled"));
            }
            if t.ready.load(SeqCst) != 0 {
                errs.push(format!("task {id}: returned Ready but joined Cancelled"));
            }
        }
    }
    errs
}

/// What the root hands back to the test thread.
struct RootOut {
    errors: Vec<String>,
    models: Vec<Model>,
    /// Handles neither joined nor dropped (only when the program did not release).
    leftovers: Vec<(usize, JoinHandle<Out>)>,
}

/// Runs `ops` in a root task. With `release`, it finally opens every gate and joins every
/// handle it still holds; without, it leaves them to shutdown.
async fn root(ops: Vec<Op>, gates: Arc<Vec<Arc<Gate>>>, tracks: Arc<Vec<Track>>, release: bool) -> RootOut {
    let mut errors = Vec::new();
    let mut models: Vec<Model> = Vec::new();
    let mut handles: Vec<Option<JoinHandle<Out>>> = Vec::new();
    for op in ops {
        match op {
            Op::Spawn { gate, yields, panics } => {
                let id = models.len();
                let g = gate.map(|g| gates[g].clone());
                let tr = tracks.clone();
                let inner = async move {
                    if let Some(g) = g {
                        g.wait().await;
                    }
                    for _ in 0..yields {
                        gmprt::yield_now().await;
                    }
                    if panics {
                        tr[id].panicked.fetch_add(1, SeqCst);
                        panic!("{}", panic_message(id));
                    }
                    id
                };
                let tr = tracks.clone();
                let probe = Probe {
                    inner: Box::pin(async move {
                        let id = inner.await;
                        Out { id, value: value_of(id), tracks: tr }
                    }),
                    tracks: tracks.clone(),
                    id,
                    done: false,
                };
                handles.push(Some(gmprt::spawn(probe)));
                models.push(Model { gate, panics, aborted: false, must_cancel: false, joined: false });
            }
            Op::Yield => gmprt::yield_now().await,
            Op::WakeGate(g) => gates[g].open(),
            Op::WakeGateElsewhere(g) => {
                let gate = gates[g].clone();
                // Blocks this M briefly; the gate's wakes go through the global queue.
                std::thread::spawn(move || gate.open()).join().unwrap();
            }
            Op::Join(i) if !handles.is_empty() => {
                let id = i % handles.len();
                if let Some(h) = handles[id].take() {
                    let m = &mut models[id];
                    if let Some(g) = m.gate {
                        if !m.aborted {
                            gates[g].open();
                        }
                    }
                    let r = h.await;
                    m.joined = true;
                    errors.extend(check_join(id, m, r, &tracks, false));
                }
            }
            Op::Abort(i) if !handles.is_empty() => {
                let id = i % handles.len();
                if let Some(h) = &handles[id] {
                    h.abort();
                    let m = &mut models[id];
                    m.aborted = true;
                    if m.gate.is_some_and(|g| !gates[g].is_open()) {
                        m.must_cancel = true;
                    }
                }
            }
            Op::DropHandle(i) if !handles.is_empty() => {
                let id = i % handles.len();
                drop(handles[id].take());
            }
            Op::Join(_) | Op::Abort(_) | Op::DropHandle(_) => {}
        }
    }
    let mut leftovers = Vec::new();
    if release {
        for g in gates.iter() {
            g.open();
        }
        for (id, h) in handles.into_iter().enumerate() {
            if let Some(h) = h {
                let r = h.await;
                models[id].joined = true;
                errors.extend(check_join(id, &models[id], r, &tracks, false));
            }
        }
    } else {
        leftovers = handles.into_iter().enumerate().filter_map(|(id, h)| h.map(|h| (id, h))).collect();
    }
    RootOut { errors, models, leftovers }
}

fn run_program(procs: usize, ops: Vec<Op>, release: bool) -> Result<(), TestCaseError> {
    quiet_expected_panics();
    let rt = Runtime::builder().procs(procs).build().unwrap();
    let handle = rt.handle();
    let spawns = ops.iter().filter(|o| matches!(o, Op::Spawn { .. })).count();
    let tracks: Arc<Vec<Track>> = Arc::new((0..spawns).map(|_| Track::default()).collect());
    let gates: Arc<Vec<Arc<Gate>>> = Arc::new((0..GATES).map(|_| Arc::default()).collect());
    let out = rt
        .spawn(root(ops, gates.clone(), tracks.clone(), release))
        .join()
        .map_err(|e| TestCaseError::fail(format!("the root task failed: {e}")))?;
    let RootOut { mut errors, models, leftovers } = out;
    drop(rt);
    let gate_open: Vec<bool> = gates.iter().map(|g| g.is_open()).collect();

    // Handles the root left behind resolve after shutdown.
    for (id, h) in leftovers {
        let mut m = models[id].clone();
        if m.gate.is_some_and(|g| !gate_open[g]) {
            // Its gate never opened: shutdown (or an abort) must have cancelled it.
            m.must_cancel = true;
        }
        let r = h.join();
        if m.must_cancel && !matches!(r, Err(JoinError::Cancelled)) {
            errors
                .push(format!("task {id}: gate never opened, but joined {:?}", r.as_ref().map(|o| o.value)));
        }
        errors.extend(check_join(id, &m, r, &tracks, true));
    }

    // Every task, joined or not: its future went exactly once; never polled after Ready; an
    // output that was produced was dropped exactly once.
    for (id, t) in tracks.iter().enumerate() {
        let (fd, par, ready, od) = (
            t.future_drops.load(SeqCst),
            t.polls_after_ready.load(SeqCst),
            t.ready.load(SeqCst),
            t.output_drops.load(SeqCst),
        );
        if fd != 1 {
            errors.push(format!("task {id}: future dropped {fd} times ({:?})", models[id]));
        }
        if par != 0 {
            errors.push(format!("task {id}: polled {par} times after Ready"));
        }
        if ready > 1 {
            errors.push(format!("task {id}: returned Ready {ready} times"));
        }
        if od != ready {
            errors.push(format!("task {id}: output produced {ready} times, dropped {od} times"));
        }
        if models[id].gate.is_some_and(|g| !gate_open[g]) && ready != 0 {
            errors.push(format!("task {id}: completed although its gate never opened"));
        }
        if models[id].panics && ready != 0 {
            errors.push(format!("task {id}: told to panic, returned Ready"));
        }
    }

    let st: RuntimeStats = handle.stats();
    let expect_spawned = spawns as u64 + 1;
    if st.spawned != expect_spawned {
        errors.push(format!("stats.spawned {} != {expect_spawned}", st.spawned));
    }
    if st.spawned != st.completed + st.cancelled {
        errors.push(format!("spawned != completed + cancelled: {st:?}"));
    }
    // A task that neither returned Ready nor reached its panic was cancelled; all others (and
    // the root) completed.
    let cancelled =
        tracks.iter().filter(|t| t.ready.load(SeqCst) == 0 && t.panicked.load(SeqCst) == 0).count();
    if st.cancelled != cancelled as u64 {
        errors.push(format!("stats.cancelled {} != tasks cancelled {cancelled}: {st:?}", st.cancelled));
    }
    if st.threads != 0 || st.parked_tasks != 0 || st.global_queue_len != 0 {
        errors.push(format!("runtime not fully shut down: {st:?}"));
    }
    prop_assert!(errors.is_empty(), "procs={procs} release={release}:\n{}", errors.join("\n"));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Programs that end by opening every gate and joining every handle.
    #[test]
    fn random_programs_released(
        procs in 1usize..=4,
        ops in proptest::collection::vec(op(), 0..=MAX_OPS),
    ) {
        run_program(procs, ops, true)?;
    }

    /// Programs that leave their tasks to shutdown: the runtime is dropped while some wait on
    /// shut gates, some are queued and some are still yielding.
    #[test]
    fn random_programs_shut_down(
        procs in 1usize..=4,
        ops in proptest::collection::vec(op(), 0..=MAX_OPS),
    ) {
        run_program(procs, ops, false)?;
    }
}

/// The model's bookkeeping is itself tested: a fixed program whose outcome is known exactly.
#[test]
fn fixed_program_outcome() {
    quiet_expected_panics();
    let ops = vec![
        Op::Spawn { gate: Some(0), yields: 2, panics: false }, // 0: aborted behind a shut gate
        Op::Spawn { gate: None, yields: 1, panics: true },     // 1: panics
        Op::Spawn { gate: Some(1), yields: 0, panics: false }, // 2: joined after its gate opens
        Op::Abort(0),
        Op::Join(0),
        Op::Join(1),
        Op::WakeGate(1),
        Op::Join(2),
    ];
    let rt = Runtime::builder().procs(2).build().unwrap();
    let tracks: Arc<Vec<Track>> = Arc::new((0..3).map(|_| Track::default()).collect());
    let gates: Arc<Vec<Arc<Gate>>> = Arc::new((0..GATES).map(|_| Arc::default()).collect());
    let out = rt.spawn(root(ops, gates, tracks.clone(), true)).join().unwrap();
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert!(out.models[0].must_cancel && out.models.iter().all(|m| m.joined));
    let st = rt.stats();
    assert_eq!((st.spawned, st.completed, st.cancelled), (4, 3, 1), "{st:?}");
    let t: Vec<usize> = tracks.iter().map(|t| t.ready.load(SeqCst)).collect();
    assert_eq!(t, vec![0, 0, 1]);
    drop(rt);
    for t in tracks.iter() {
        assert_eq!(t.future_drops.load(SeqCst), 1);
    }
    // A wrong model is caught: claim task 2 was told to panic.
    let m = Model { gate: None, panics: true, aborted: false, must_cancel: false, joined: false };
    let fake = Out { id: 2, value: value_of(2), tracks: tracks.clone() };
    assert!(!check_join(2, &m, Ok(fake), &tracks, false).is_empty());
}
