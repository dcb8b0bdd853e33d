//! Dropping a `Runtime` uses bounded stack whatever the shape of the task graph.
//!
//! Shutdown cancels every parked task by dropping its future. Dropping one future can wake
//! another task — its parent awaiting its `JoinHandle`, or the next stage of a channel pipeline
//! whose sender it held — and that wake comes back into shutdown's drain. Before the fix each
//! such wake drained (and so cancelled) the woken task inside the frame that woke it: one set of
//! frames per task, and a 5,000-stage pipeline overflowed a 2 MiB stack (the process dies with
//! SIGSEGV, so this whole binary fails).
//!
//! Each case builds a 1,000,000-deep graph, waits (on an event, not a sleep) until its deepest
//! task has run, drops the runtime, and checks that every future was dropped exactly once. The
//! cases run on the main thread (libtest-mimic with one test thread runs them there; the
//! default harness would use 2 MiB worker threads) and again on a thread started with a 2 MiB
//! stack. `GMPRT_SHUTDOWN_DEPTH=N` changes the depth (e.g. for a quick run).
use gmprt::runtime::chan::{chan, Receiver, Sender};
use gmprt::Runtime;
use libtest_mimic::{Arguments, Failed, Trial};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc};

/// The depth the issue asks for: a million tasks in one chain.
const DEPTH: usize = 1_000_000;

/// The stack of the threads the cases also run on: std's default for spawned threads.
const SMALL_STACK: usize = 2 << 20;

fn depth() -> usize {
    std::env::var("GMPRT_SHUTDOWN_DEPTH").ok().and_then(|v| v.parse().ok()).unwrap_or(DEPTH)
}

/// Counts its own drop: one per task future, so "dropped exactly once" is `drops == tasks`.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Link `i` of a chain: spawns link `i + 1` and awaits its handle; the last link says it is
/// running and parks forever. Boxed because the future type would otherwise contain itself.
fn link(i: usize, n: usize, drops: Arc<AtomicUsize>, deepest: mpsc::Sender<()>) -> BoxFuture {
    Box::pin(async move {
        let _c = Counted(drops.clone());
        if i + 1 < n {
            let child = gmprt::spawn(link(i + 1, n, drops, deepest));
            let _ = child.await;
        } else {
            deepest.send(()).expect("the test waits for this");
            std::future::pending::<()>().await;
        }
    })
}

/// One stage of a pipeline: forwards from `rx` to `tx` until `rx` closes.
async fn stage(rx: Receiver<u64>, tx: Sender<u64>, drops: Arc<AtomicUsize>, started: Arc<Barrier>) {
    let _c = Counted(drops);
    started.arrive();
    while let Some(v) = rx.recv().await {
        if tx.send(v).await.is_err() {
            break;
        }
    }
}

/// The sink: receives until its channel closes.
async fn sink(rx: Receiver<u64>, drops: Arc<AtomicUsize>, started: Arc<Barrier>) {
    let _c = Counted(drops);
    started.arrive();
    while rx.recv().await.is_some() {}
}

/// Counts arrivals; the last of `n` signals the waiting test thread.
struct Barrier {
    left: AtomicUsize,
    done: mpsc::SyncSender<()>,
}

impl Barrier {
    fn new(n: usize) -> (Arc<Barrier>, mpsc::Receiver<()>) {
        let (done, rx) = mpsc::sync_channel(1);
        (Arc::new(Barrier { left: AtomicUsize::new(n), done }), rx)
    }

    fn arrive(&self) {
        if self.left.fetch_sub(1, SeqCst) == 1 {
            self.done.send(()).expect("the test waits for this");
        }
    }
}

fn runtime() -> Runtime {
    Runtime::builder().procs(2).build().expect("runtime")
}

/// A chain of `n` tasks, each awaiting the next one's `JoinHandle`, dropped with the runtime.
fn chain_case(n: usize) -> Result<(), Failed> {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, deepest) = mpsc::channel();
    let rt = runtime();
    let root = rt.spawn(link(0, n, drops.clone(), tx));
    deepest.recv().map_err(|_| "the deepest link never ran")?;
    drop(rt);
    // The root's handle outlives the runtime: it reads Cancelled, the future is already gone.
    let joined = root.join();
    check(n, &drops, "chain")?;
    if joined != Err(gmprt::JoinError::Cancelled) {
        return Err(format!("the root task should read Cancelled after shutdown, got {joined:?}").into());
    }
    Ok(())
}

/// A pipeline of `n` tasks (n − 1 forwarding stages and a sink) built sink-first, each parked
/// on `recv`, dropped with the runtime; the test keeps the head sender until after the drop.
fn pipeline_case(n: usize) -> Result<(), Failed> {
    let drops = Arc::new(AtomicUsize::new(0));
    let (started, all_started) = Barrier::new(n);
    let rt = runtime();
    let (mut tx, rx) = chan::<u64>(0);
    rt.spawn(sink(rx, drops.clone(), started.clone()));
    for _ in 1..n {
        let (prev_tx, rx) = chan::<u64>(0);
        rt.spawn(stage(rx, tx, drops.clone(), started.clone()));
        tx = prev_tx;
    }
    all_started.recv().map_err(|_| "a stage never started")?;
    drop(rt);
    check(n, &drops, "pipeline")?;
    drop(tx);
    check(n, &drops, "pipeline (after the head sender dropped)")
}

fn check(n: usize, drops: &AtomicUsize, what: &str) -> Result<(), Failed> {
    let d = drops.load(SeqCst);
    if d != n {
        return Err(format!("{what}: {d} of {n} futures dropped; each must be dropped exactly once").into());
    }
    Ok(())
}

/// Runs `case` on a new thread with a 2 MiB stack.
fn on_small_stack(case: fn(usize) -> Result<(), Failed>, n: usize) -> Result<(), Failed> {
    std::thread::Builder::new()
        .name("shutdown-2MiB".into())
        .stack_size(SMALL_STACK)
        .spawn(move || case(n))
        .map_err(|e| format!("cannot start a 2 MiB thread: {e}"))?
        .join()
        .map_err(|_| "the case panicked on the 2 MiB thread")?
}

fn main() {
    let mut args = Arguments::from_args();
    // One test thread: libtest-mimic then runs every trial on the main thread.
    args.test_threads = Some(1);
    let n = depth();
    let trials = vec![
        Trial::test("chain_of_joins_drops_on_main_thread", move || chain_case(n)),
        Trial::test("chain_of_joins_drops_on_2mib_thread", move || on_small_stack(chain_case, n)),
        Trial::test("pipeline_built_sink_first_drops_on_main_thread", move || pipeline_case(n)),
        Trial::test("pipeline_built_sink_first_drops_on_2mib_thread", move || {
            on_small_stack(pipeline_case, n)
        }),
    ];
    libtest_mimic::run(&args, trials).exit();
}
