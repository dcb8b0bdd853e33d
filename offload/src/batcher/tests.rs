//! Tests that watch what a Batcher does with its slots and worker threads, through a probe
//! backend (Host slots wrapped to count every access): a CPU-placed batch never touches the
//! slot (its staging is write-combined on CUDA), and shutdown joins the workers (every slot
//! dropped, every worker thread gone, when it returns). Deterministic: barriers and
//! counters, no sleeps.
use super::{Batcher, BatcherConfig, Placement};
use crate::backend::{Backend, MemoryNeed, PhaseTimes, Phases, Slot};
use crate::cuda::CudaJob;
use crate::device::Device;
use crate::error::OffloadError;
use crate::host::HostBackend;
use crate::jobs::Saxpy;
use gmprt_runtime::Runtime;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::time::Duration;

/// What the probe slots saw, shared by all slots of one backend.
#[derive(Default)]
struct Probe {
    staging_in: AtomicUsize,
    staging_out: AtomicUsize,
    runs: AtomicUsize,
    /// Slots made and not yet dropped.
    slots_live: AtomicIsize,
    /// Worker threads that ran a batch on a probe slot and have not exited (a thread-local
    /// guard, dropped when the thread exits).
    threads_live: AtomicIsize,
    /// Every slot's first run waits here (so each worker runs one batch), when set.
    barrier: Option<Barrier>,
    /// Called (once, on the worker thread) at the start of a slot's run, when set.
    hook: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Probe {
    fn touches(&self) -> (usize, usize, usize) {
        (self.staging_in.load(SeqCst), self.staging_out.load(SeqCst), self.runs.load(SeqCst))
    }
}

struct ProbeBackend {
    host: HostBackend,
    probe: Arc<Probe>,
}

impl Backend for ProbeBackend {
    fn describe(&self) -> String {
        "probe (host slots, counted)".into()
    }
    fn new_slot(&self, in_words: usize, out_words: usize) -> Result<Box<dyn Slot>, OffloadError> {
        let inner = self.host.new_slot(in_words, out_words)?;
        self.probe.slots_live.fetch_add(1, SeqCst);
        Ok(Box::new(ProbeSlot { inner, probe: self.probe.clone() }))
    }
    fn check_memory(&self, need: &MemoryNeed) -> Result<(), OffloadError> {
        self.host.check_memory(need)
    }
}

struct ProbeSlot {
    inner: Box<dyn Slot>,
    probe: Arc<Probe>,
}

impl Drop for ProbeSlot {
    fn drop(&mut self) {
        self.probe.slots_live.fetch_sub(1, SeqCst);
    }
}

/// Decrements `threads_live` when its thread exits.
struct ThreadGuard(Arc<Probe>);

impl Drop for ThreadGuard {
    fn drop(&mut self) {
        self.0.threads_live.fetch_sub(1, SeqCst);
    }
}

thread_local! {
    static GUARD: RefCell<Option<ThreadGuard>> = const { RefCell::new(None) };
}

impl Slot for ProbeSlot {
    fn upload(&mut self, ranges: &[std::ops::Range<usize>]) -> Result<std::time::Duration, OffloadError> {
        self.inner.upload(ranges)
    }
    fn staging_in(&mut self) -> &mut [u32] {
        self.probe.staging_in.fetch_add(1, SeqCst);
        self.inner.staging_in()
    }
    fn staging_out(&self) -> &[u32] {
        self.probe.staging_out.fetch_add(1, SeqCst);
        self.inner.staging_out()
    }
    fn run(
        &mut self,
        job: &dyn CudaJob,
        n: usize,
        in_words: usize,
        out_words: usize,
        phases: Phases,
    ) -> Result<PhaseTimes, OffloadError> {
        let first = GUARD.with(|g| {
            let mut g = g.borrow_mut();
            let first = g.is_none();
            if first {
                self.probe.threads_live.fetch_add(1, SeqCst);
                *g = Some(ThreadGuard(self.probe.clone()));
            }
            first
        });
        if first && let Some(b) = &self.probe.barrier {
            b.wait();
        }
        let hook = self.probe.hook.lock().take();
        if let Some(hook) = hook {
            hook();
        }
        self.probe.runs.fetch_add(1, SeqCst);
        self.inner.run(job, n, in_words, out_words, phases)
    }
}

/// A Batcher of SAXPY (a = 2) on the Host device, its slots from a probe backend.
fn batcher(probe: &Arc<Probe>, config: BatcherConfig) -> Batcher<Saxpy> {
    let backend = ProbeBackend { host: HostBackend::new(None), probe: probe.clone() };
    Batcher::with_backend(Saxpy { a: 2.0 }, &Device::host(), &backend, config).expect("batcher")
}

/// Submits `n` items (x = i, y = 1) from `n` tasks on `rt` and checks each result (2i + 1).
fn submit_all(rt: &Runtime, b: &Batcher<Saxpy>, n: usize) {
    let hs: Vec<_> = (0..n)
        .map(|i| {
            let b = b.clone();
            rt.spawn(async move { b.submit((i as f32, 1.0)).await })
        })
        .collect();
    rt.block_on(async move {
        for (i, h) in hs.into_iter().enumerate() {
            assert_eq!(h.await.expect("task").expect("item"), 2.0 * i as f32 + 1.0, "item {i}");
        }
    });
}

fn rt(procs: usize) -> Runtime {
    Runtime::builder().procs(procs).build().expect("runtime")
}

#[test]
fn cpu_placed_batches_never_touch_the_slot() {
    let rt = rt(2);
    let cfg = BatcherConfig { max_batch: 64, placement: Placement::Cpu, ..BatcherConfig::default() };
    // On the worker thread (no runtime given, and `new` is called outside one): staged into
    // the worker's own host buffers.
    let probe = Arc::new(Probe::default());
    let b = batcher(&probe, BatcherConfig { runtime: None, ..cfg.clone() });
    submit_all(&rt, &b, 300);
    assert!(b.stats().launches == 0 && b.stats().items == 300, "{:?}", b.stats());
    assert_eq!(probe.touches(), (0, 0, 0), "(staging_in, staging_out, run) on CPU batches, worker thread");
    drop(b);
    // On the runtime's Ps: staged per chunk.
    let probe = Arc::new(Probe::default());
    let b = batcher(&probe, BatcherConfig { runtime: Some(rt.handle()), ..cfg.clone() });
    submit_all(&rt, &b, 300);
    assert_eq!(probe.touches(), (0, 0, 0), "(staging_in, staging_out, run) on CPU batches, Ps");
    drop(b);
    // The control: device-placed batches do go through the slot, and the probe sees it.
    let probe = Arc::new(Probe::default());
    let b = batcher(&probe, BatcherConfig { placement: Placement::Gpu, ..cfg });
    submit_all(&rt, &b, 300);
    let (sin, sout, runs) = probe.touches();
    assert!(sin >= 1 && sout >= 1 && runs >= 1, "device batches: {:?}", probe.touches());
}

/// `in_flight` workers, each made to run one batch (max_batch 1, a barrier in every slot's
/// first run), so each worker thread is counted alive before the shutdown under test.
fn all_workers_busy_once(probe: &Arc<Probe>, in_flight: usize, rt: &Runtime) -> Batcher<Saxpy> {
    let cfg = BatcherConfig { max_batch: 1, in_flight, runtime: None, ..BatcherConfig::default() };
    let b = batcher(probe, cfg);
    submit_all(rt, &b, in_flight);
    assert_eq!(probe.threads_live.load(SeqCst), in_flight as isize, "every worker ran a batch");
    assert_eq!(probe.slots_live.load(SeqCst), in_flight as isize);
    b
}

fn barrier_probe(in_flight: usize) -> Arc<Probe> {
    Arc::new(Probe { barrier: Some(Barrier::new(in_flight)), ..Probe::default() })
}

#[test]
fn shutdown_joins_every_worker_and_drops_every_slot() {
    let rt = rt(2);
    let probe = barrier_probe(3);
    let b = all_workers_busy_once(&probe, 3, &rt);
    let other = b.clone();
    b.shutdown();
    assert_eq!(probe.slots_live.load(SeqCst), 0, "slots alive after shutdown returned");
    assert_eq!(probe.threads_live.load(SeqCst), 0, "worker threads alive after shutdown returned");
    // Idempotent, and the other clone sees it closed.
    other.shutdown();
    assert!(other.is_closed());
}

#[test]
fn dropping_the_last_clone_joins_the_workers() {
    let rt = rt(2);
    let probe = barrier_probe(2);
    let b = all_workers_busy_once(&probe, 2, &rt);
    let b2 = b.clone();
    drop(b);
    assert_eq!(probe.slots_live.load(SeqCst), 2, "a clone is still alive: nothing shut down");
    drop(b2);
    assert_eq!(probe.slots_live.load(SeqCst), 0);
    assert_eq!(probe.threads_live.load(SeqCst), 0);
}

#[test]
fn shutdown_on_a_task_joins_and_lets_cpu_batches_finish_on_the_only_p() {
    // procs 1: the task calling shutdown holds the only P, and the batch the shutdown closes
    // runs its chunks on the Ps. The wait hands the P off (`syscall`), so the chunks run.
    let rt = rt(1);
    let probe = Arc::new(Probe::default());
    let cfg = BatcherConfig {
        max_batch: 1000,
        max_delay: Duration::from_secs(3600),
        placement: Placement::Cpu,
        runtime: Some(rt.handle()),
        ..BatcherConfig::default()
    };
    let b = batcher(&probe, cfg);
    let probe2 = probe.clone();
    let outs = rt.block_on(rt.spawn(async move {
        // Accepted into the open batch at once; it closes only at shutdown.
        let subs: Vec<_> = (0..500).map(|i| b.submit((i as f32, 1.0))).collect();
        assert!(subs.iter().all(|s| s.is_accepted()));
        b.shutdown();
        assert_eq!(probe2.slots_live.load(SeqCst), 0, "slots alive after shutdown returned on an M");
        let mut outs = Vec::new();
        for s in subs {
            outs.push(s.await.expect("accepted items run at shutdown"));
        }
        outs
    }));
    let outs = outs.expect("task");
    assert!(outs.iter().enumerate().all(|(i, &y)| y == 2.0 * i as f32 + 1.0));
}

#[test]
fn shutdown_from_a_slot_worker_returns_and_a_later_shutdown_joins() {
    let rt = rt(2);
    let probe = Arc::new(Probe::default());
    let cfg = BatcherConfig { max_batch: 1, in_flight: 2, runtime: None, ..BatcherConfig::default() };
    let b = batcher(&probe, cfg);
    // The first run calls shutdown on its worker thread: it must not wait for itself.
    let clone = b.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    *probe.hook.lock() = Some(Box::new(move || {
        clone.shutdown();
        tx.send(std::thread::current().name().map(String::from)).expect("send");
    }));
    submit_all(&rt, &b, 1);
    let on = rx.recv().expect("the hook ran").unwrap_or_default();
    assert!(on.starts_with("offload slot ") && on.ends_with(" (saxpy)"), "shutdown called on {on}");
    assert!(b.is_closed());
    // The worker shutdown did not join; this one does.
    b.shutdown();
    assert_eq!(probe.slots_live.load(SeqCst), 0);
    assert_eq!(probe.threads_live.load(SeqCst), 0);
}
