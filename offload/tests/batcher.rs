//! Batcher tests on the Host device, with a test kernel defined here (item `x: u32` →
//! `mix(x)`), so they do not depend on any real kernel. Deterministic: every wait is on an
//! event (a future's result, a gate the kernel reports to, a waker flag) — no sleeps.
use gmprt_offload::cuda::{CudaJob, LaunchCtx};
use gmprt_offload::jobs::{BlackScholes, Saxpy, SmallSgemm};
use gmprt_offload::kernels::black_scholes::{Contract, OptionKind};
use gmprt_offload::kernels::{InvalidInput, KernelError};
use gmprt_offload::runtime::Runtime;
use gmprt_offload::{
    BatchKernel, Batcher, BatcherConfig, CloseReason, Device, DeviceKind, Job, OffloadError, Phases,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// An item that fails its whole batch in `run_host`.
const POISON: u32 = u32::MAX;
/// An item rejected by `validate`.
const INVALID: u32 = u32::MAX - 1;

fn mix(x: u32) -> u32 {
    x.wrapping_mul(0x9E37_79B9).rotate_left(7) ^ 0xA5A5_A5A5
}

/// Lets the test hold the kernel: each run reports its entry and waits for a permit.
#[derive(Default)]
struct Gate {
    state: Mutex<(usize, usize)>, // (runs entered, permits)
    cv: Condvar,
}

impl Gate {
    fn enter(&self) {
        let mut s = self.state.lock().unwrap();
        s.0 += 1;
        self.cv.notify_all();
        while s.1 == 0 {
            s = self.cv.wait(s).unwrap();
        }
        s.1 -= 1;
    }
    fn wait_entered(&self, k: usize) {
        let mut s = self.state.lock().unwrap();
        while s.0 < k {
            s = self.cv.wait(s).unwrap();
        }
    }
    fn release(&self, permits: usize) {
        self.state.lock().unwrap().1 += permits;
        self.cv.notify_all();
    }
}

#[derive(Default)]
struct Mix {
    gate: Option<Arc<Gate>>,
}

impl Job for Mix {
    fn name(&self) -> &'static str {
        "mix"
    }
    fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
        assert_eq!((input.len(), output.len()), (n, n), "the Batcher passes exactly n words");
        if let Some(g) = &self.gate {
            g.enter();
        }
        if input.contains(&POISON) {
            return Err("poison item in the batch".into());
        }
        for (o, &x) in output.iter_mut().zip(input) {
            *o = mix(x);
        }
        Ok(())
    }
}

impl CudaJob for Mix {
    fn launch_cuda(&self, _ctx: &mut LaunchCtx<'_>, _n: usize) -> Result<(), OffloadError> {
        Err(OffloadError::Config("the test kernel has no CUDA version".into()))
    }
}

impl BatchKernel for Mix {
    type Item = u32;
    type Output = u32;
    fn in_words(&self) -> usize {
        1
    }
    fn out_words(&self) -> usize {
        1
    }
    fn validate(&self, item: &u32, index: usize) -> Result<(), OffloadError> {
        if *item == INVALID {
            return Err(InvalidInput {
                field: "item",
                index,
                value: f64::from(*item),
                why: "reserved value",
            }
            .into());
        }
        Ok(())
    }
    fn stage(&self, items: &[u32], input: &mut [u32]) {
        input.copy_from_slice(items);
    }
    fn gather(&self, _n: usize, output: &[u32], i: usize) -> u32 {
        output[i]
    }
}

fn cfg(max_batch: usize, max_delay: Duration, in_flight: usize) -> BatcherConfig {
    BatcherConfig { max_batch, max_delay, in_flight, ..BatcherConfig::default() }
}

fn rt(procs: usize) -> Runtime {
    Runtime::builder().procs(procs).build().expect("runtime")
}

const LONG: Duration = Duration::from_secs(3600);

/// A waker that records that it was woken.
#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A waker that can be waited for (an event, not a sleep).
#[derive(Default)]
struct Woken {
    woken: Mutex<bool>,
    cv: Condvar,
}

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        *self.woken.lock().unwrap() = true;
        self.cv.notify_all();
    }
}

impl Woken {
    /// Blocks until woken.
    fn wait(&self) {
        let mut w = self.woken.lock().unwrap();
        while !*w {
            w = self.cv.wait(w).unwrap();
        }
    }
}

fn poll_once<F: Future + Unpin>(f: &mut F, flag: &Arc<Flag>) -> Poll<F::Output> {
    let waker = Waker::from(flag.clone());
    Pin::new(f).poll(&mut Context::from_waker(&waker))
}

fn many_tasks(procs: usize) {
    let rt = rt(procs);
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(16, Duration::from_micros(300), 2)).unwrap();
    let (tasks, per_task) = (64u32, 50u32);
    let b2 = b.clone();
    rt.block_on(async move {
        let handles: Vec<_> = (0..tasks)
            .map(|t| {
                let b = b2.clone();
                gmprt_offload::runtime::spawn(async move {
                    if t % 2 == 0 {
                        // One at a time: each item waits for its own result.
                        for i in 0..per_task {
                            let x = t * 1000 + i;
                            assert_eq!(b.submit(x).await, Ok(mix(x)), "task {t} item {i}");
                        }
                    } else {
                        // All at once, then collect.
                        let futs: Vec<_> = (0..per_task).map(|i| b.submit(t * 1000 + i)).collect();
                        for (i, f) in futs.into_iter().enumerate() {
                            let x = t * 1000 + i as u32;
                            assert_eq!(f.await, Ok(mix(x)), "task {t} item {i}");
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.await.expect("task");
        }
    });
    let tl = b.timelines();
    assert!(tl.iter().all(|t| t.n >= 1 && t.n <= 16), "a batch exceeded max_batch");
    assert_eq!(tl.iter().map(|t| t.n).sum::<usize>(), (tasks * per_task) as usize);
    assert!(tl.iter().all(|t| t.ok && t.launched && t.device == DeviceKind::Host && t.slot < 2));
    assert!(tl.iter().all(|t| t.bytes_h2d == 4 * t.n as u64 && t.bytes_d2h == 4 * t.n as u64));
    let s = b.stats();
    assert_eq!(
        (s.items, s.failed_items, s.batches, s.launches),
        ((tasks * per_task) as u64, 0, tl.len() as u64, tl.len() as u64)
    );
}

#[test]
fn many_tasks_get_their_own_results_procs_2() {
    many_tasks(2);
}

#[test]
fn many_tasks_get_their_own_results_procs_1() {
    many_tasks(1);
}

#[test]
fn lone_item_closes_at_deadline() {
    let delay = Duration::from_millis(20);
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(1000, delay, 2)).unwrap();
    let rt = rt(1);
    let f = b.submit(7);
    assert_eq!(rt.block_on(f), Ok(mix(7)));
    let tl = b.timelines();
    assert_eq!(tl.len(), 1);
    assert_eq!((tl[0].n, tl[0].closed_by), (1, CloseReason::Deadline));
    assert!(tl[0].queue_wait >= delay, "queue_wait {:?} < max_delay {delay:?}", tl[0].queue_wait);
}

#[test]
fn zero_delay_closes_at_once() {
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(1000, Duration::ZERO, 1)).unwrap();
    assert_eq!(rt(1).block_on(b.submit(3)), Ok(mix(3)));
}

/// `max_delay = 0` on a runtime: the batch a task opens closes once the tasks already
/// runnable on its P have run (the `closer` module), not at the first item. With one P, a
/// root task spawns 100 submitters (all runnable before any runs): one launch of 100 items.
#[test]
fn zero_delay_batches_the_tasks_runnable_when_it_opened() {
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(1000, Duration::ZERO, 2)).unwrap();
    let rt = rt(1);
    let b2 = b.clone();
    let outs = rt.block_on(async move {
        gmprt_offload::runtime::spawn(async move {
            let hs: Vec<_> = (0..100u32)
                .map(|x| {
                    let b = b2.clone();
                    gmprt_offload::runtime::spawn(async move { b.submit(x).await })
                })
                .collect();
            let mut outs = Vec::new();
            for h in hs {
                outs.push(h.await.expect("task").expect("item"));
            }
            outs
        })
        .await
        .expect("root")
    });
    assert_eq!(outs, (0..100).map(mix).collect::<Vec<_>>());
    let tl = b.timelines();
    assert_eq!(
        tl.iter().map(|t| t.n).collect::<Vec<_>>(),
        vec![100],
        "one batch of every runnable task's item"
    );
    // Released by the closer (a `Deadline` close with `max_delay = 0`), or taken on the M that
    // found the runtime quiescent right after: the same batch either way.
    assert!(matches!(tl[0].closed_by, CloseReason::Deadline | CloseReason::Quiescent), "{:?}", tl[0]);
}

/// The closer lives on the runtime that first opened a batch; once that runtime is gone,
/// batches close at once (submits from a plain thread) and the next task on another runtime
/// starts a new closer. Nothing waits for the dead one.
#[test]
fn zero_delay_survives_the_closers_runtime() {
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(1000, Duration::ZERO, 1)).unwrap();
    let one = |rt: &Runtime, x: u32| {
        let b = b.clone();
        rt.block_on(async move { gmprt_offload::runtime::spawn(async move { b.submit(x).await }).await })
            .expect("task")
    };
    let rt1 = rt(1);
    assert_eq!(one(&rt1, 1), Ok(mix(1)));
    drop(rt1);
    let rt2 = rt(1);
    // `block_on` polls on this thread, not an M: no closer is started from here.
    assert_eq!(rt2.block_on(b.submit(2)), Ok(mix(2)));
    assert_eq!(one(&rt2, 3), Ok(mix(3)));
    assert_eq!(b.stats().items, 3);
}

#[test]
fn flush_closes_the_open_batch() {
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(1000, LONG, 2)).unwrap();
    let futs: Vec<_> = (0..3).map(|x| b.submit(x)).collect();
    assert!(futs.iter().all(|f| f.is_accepted()));
    b.flush();
    let rt = rt(2);
    for (x, f) in futs.into_iter().enumerate() {
        assert_eq!(rt.block_on(f), Ok(mix(x as u32)));
    }
    let tl = b.timelines();
    assert_eq!(tl.len(), 1);
    assert_eq!((tl[0].n, tl[0].closed_by), (3, CloseReason::Flush));
    // A flush with nothing open is a no-op.
    b.flush();
    assert_eq!(b.stats().batches, 1);
}

#[test]
fn full_batches_close_as_full() {
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(4, LONG, 2)).unwrap();
    let rt = rt(2);
    for g in 0..3u32 {
        // The previous group's batch was taken, so all 4 are accepted and fill one batch.
        let futs: Vec<_> = (0..4).map(|i| b.submit(g * 4 + i)).collect();
        for (i, f) in futs.into_iter().enumerate() {
            assert_eq!(rt.block_on(f), Ok(mix(g * 4 + i as u32)));
        }
    }
    let tl = b.timelines();
    assert_eq!(tl.len(), 3);
    assert!(tl.iter().all(|t| t.n == 4 && t.closed_by == CloseReason::Full));
}

#[test]
fn shutdown_flushes_and_loses_nothing() {
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(1000, LONG, 2)).unwrap();
    let n = 500u32;
    let futs: Vec<_> = (0..n).map(|x| b.submit(x)).collect();
    assert!(futs.iter().all(|f| f.is_accepted()));
    b.shutdown();
    assert!(b.is_closed());
    assert_eq!(rt(2).block_on(b.submit(1)), Err(OffloadError::Closed));
    let rt = rt(2);
    for (x, f) in futs.into_iter().enumerate() {
        assert_eq!(rt.block_on(f), Ok(mix(x as u32)));
    }
    let tl = b.timelines();
    assert_eq!(tl.iter().map(|t| t.n).sum::<usize>(), n as usize);
    assert_eq!(tl[0].closed_by, CloseReason::Shutdown);
    b.shutdown(); // idempotent
    assert_eq!(b.occupancy().open_items, 0);
    let s = b.stats();
    assert_eq!((s.items, s.rejected_closed, s.closed_shutdown), (n as u64, 1, 1), "every submit is counted");
}

#[test]
fn dropping_the_last_clone_flushes() {
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(1000, LONG, 2)).unwrap();
    let b2 = b.clone();
    let futs: Vec<_> = (0..100).map(|x| b.submit(x)).collect();
    drop(b);
    assert!(!b2.is_closed(), "a clone is still alive");
    drop(b2);
    let rt = rt(1);
    for (x, f) in futs.into_iter().enumerate() {
        assert_eq!(rt.block_on(f), Ok(mix(x as u32)));
    }
}

#[test]
fn a_failed_batch_fails_only_its_own_items() {
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(4, LONG, 2)).unwrap();
    let rt = rt(2);
    let groups = [[0, 1, 2, 3], [4, POISON, 6, 7], [8, 9, 10, 11]];
    for (g, items) in groups.iter().enumerate() {
        let futs: Vec<_> = items.iter().map(|&x| b.submit(x)).collect();
        for (f, &x) in futs.into_iter().zip(items) {
            let r = rt.block_on(f);
            if g == 1 {
                match r {
                    Err(OffloadError::Batch { batch, kernel, msg }) => {
                        assert_eq!((batch, kernel), (1, "mix"));
                        assert!(msg.contains("poison"), "{msg}");
                    }
                    other => panic!("item {x} of the poisoned batch: {other:?}"),
                }
            } else {
                assert_eq!(r, Ok(mix(x)), "item {x} of a healthy batch");
            }
        }
    }
    let s = b.stats();
    assert_eq!((s.batches, s.failed_batches, s.failed_items, s.items), (3, 1, 4, 12));
    let tl = b.timelines();
    assert_eq!(tl.iter().filter(|t| !t.ok).map(|t| t.batch).collect::<Vec<_>>(), vec![1]);
    // The batcher keeps going after a failure.
    let f = b.submit(12);
    b.flush();
    assert_eq!(rt.block_on(f), Ok(mix(12)));
}

#[test]
fn invalid_items_are_rejected_at_submit_naming_the_field() {
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(4, LONG, 1)).unwrap();
    let f = b.submit(INVALID);
    assert!(!f.is_accepted());
    let e = rt(1).block_on(f).unwrap_err();
    assert!(matches!(&e, OffloadError::Invalid(InvalidInput { field: "item", .. })), "{e:?}");
    assert_eq!(b.occupancy().open_items, 0, "a rejected item never enters a batch");
    assert_eq!((b.stats().rejected_invalid, b.stats().items), (1, 0));
    assert!(b.report().to_string().contains("1 invalid"));

    let s = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), BatcherConfig::default()).unwrap();
    let e = rt(1).block_on(s.submit((f32::NAN, 1.0))).unwrap_err();
    assert!(e.to_string().contains("x ="), "{e}");

    let g = Batcher::new(SmallSgemm { m: 2, n: 3, k: 4 }, &Device::host(), BatcherConfig::default()).unwrap();
    let e = rt(1).block_on(g.submit((vec![0.0; 8], vec![0.0; 11]))).unwrap_err();
    assert_eq!(e, OffloadError::Kernel(KernelError::Shape { what: "b", expected: 12, got: 11 }));
    let e = rt(1).block_on(g.submit((vec![0.0; 7], vec![0.0; 12]))).unwrap_err();
    assert!(matches!(e, OffloadError::Kernel(KernelError::Shape { what: "a", .. })), "{e:?}");
    let mut b = vec![0.0; 12];
    b[5] = f32::INFINITY;
    let e = rt(1).block_on(g.submit((vec![0.0; 8], b))).unwrap_err();
    assert!(matches!(&e, OffloadError::Invalid(InvalidInput { field: "b", .. })), "{e:?}");
    assert_eq!(g.stats().items, 0, "no rejected item entered a batch");
}

#[test]
fn black_scholes_rejects_a_negative_vol() {
    let b = Batcher::new(BlackScholes, &Device::host(), BatcherConfig::default()).unwrap();
    let c = Contract { spot: 100.0, strike: 100.0, t: 1.0, rate: 0.05, vol: -0.2, kind: OptionKind::Call };
    let e = rt(1).block_on(b.submit(c)).unwrap_err();
    assert!(matches!(&e, OffloadError::Invalid(InvalidInput { field: "vol", .. })), "{e:?}");
    assert!(e.to_string().contains("vol"), "{e}");
}

#[test]
fn backpressure_holds_submits_while_every_slot_is_busy() {
    let gate = Arc::new(Gate::default());
    let b = Batcher::new(Mix { gate: Some(gate.clone()) }, &Device::host(), cfg(2, LONG, 2)).unwrap();
    // Batch 0 fills and is taken by one slot, which blocks in the kernel.
    let s: Vec<_> = (0..2).map(|x| b.submit(x)).collect();
    gate.wait_entered(1);
    // Batch 1: the other slot.
    let mut s: Vec<_> = s.into_iter().chain((2..4).map(|x| b.submit(x))).collect();
    gate.wait_entered(2);
    // Batch 2 fills the open batch; no slot is free to take it.
    s.extend((4..6).map(|x| b.submit(x)));
    assert!(s.iter().all(|f| f.is_accepted()));
    let occ = b.occupancy();
    assert_eq!((occ.open_items, occ.busy_slots, occ.waiting), (2, 2, 0));

    // The 7th item finds no room: its future waits, registered as a waiter.
    let mut seventh = b.submit(6);
    assert!(!seventh.is_accepted());
    let flag = Arc::new(Flag::default());
    assert!(poll_once(&mut seventh, &flag).is_pending());
    assert!(poll_once(&mut seventh, &flag).is_pending(), "a second poll does not queue it twice");
    assert_eq!(b.occupancy().waiting, 1);
    for f in &mut s {
        assert!(poll_once(f, &Arc::new(Flag::default())).is_pending());
    }
    assert!(!flag.0.load(Ordering::SeqCst), "nothing can free room while the kernels are held");

    // Release one run: its slot takes batch 2 (waking the waiter, which now has room) and
    // blocks in the kernel again.
    gate.release(1);
    gate.wait_entered(3);
    assert!(flag.0.load(Ordering::SeqCst), "the waiter was woken when room appeared");
    assert!(poll_once(&mut seventh, &flag).is_pending());
    assert!(seventh.is_accepted());
    assert_eq!(b.occupancy().waiting, 0);

    gate.release(usize::MAX / 2);
    b.shutdown(); // closes the batch holding the 7th item
    let rt = rt(1);
    for (x, f) in s.into_iter().chain([seventh]).enumerate() {
        assert_eq!(rt.block_on(f), Ok(mix(x as u32)));
    }
    let tl = b.timelines();
    assert!(tl.iter().all(|t| t.n <= 2));
    assert_eq!(tl.iter().map(|t| t.n).sum::<usize>(), 7);
}

#[test]
fn waiters_are_served_and_a_dropped_waiter_passes_its_turn_on() {
    let gate = Arc::new(Gate::default());
    let b = Batcher::new(Mix { gate: Some(gate.clone()) }, &Device::host(), cfg(1, LONG, 1)).unwrap();
    let first = b.submit(0);
    gate.wait_entered(1); // the only slot is busy
    let second = b.submit(1); // fills the open batch
    assert!(second.is_accepted());
    let (mut w1, mut w2) = (b.submit(2), b.submit(3));
    let (f1, f2) = (Arc::new(Flag::default()), Arc::new(Flag::default()));
    assert!(poll_once(&mut w1, &f1).is_pending());
    assert!(poll_once(&mut w2, &f2).is_pending());
    assert_eq!(b.occupancy().waiting, 2);
    gate.release(1);
    gate.wait_entered(2); // the slot took batch 1 and gave its room to w1
    assert!(f1.0.load(Ordering::SeqCst) && !f2.0.load(Ordering::SeqCst), "FIFO: w1 first");
    assert_eq!(b.occupancy().reserved, 1);
    drop(w1); // leaves without using the room: w2 gets it
    assert!(f2.0.load(Ordering::SeqCst));
    assert!(poll_once(&mut w2, &f2).is_pending());
    assert!(w2.is_accepted());
    gate.release(usize::MAX / 2);
    let rt = rt(1);
    assert_eq!(rt.block_on(first), Ok(mix(0)));
    assert_eq!(rt.block_on(second), Ok(mix(1)));
    assert_eq!(rt.block_on(w2), Ok(mix(3)));
    assert_eq!(b.stats().items, 3);
}

#[test]
fn waiters_get_closed_at_shutdown() {
    let gate = Arc::new(Gate::default());
    let b = Batcher::new(Mix { gate: Some(gate.clone()) }, &Device::host(), cfg(1, LONG, 1)).unwrap();
    let first = b.submit(0);
    gate.wait_entered(1);
    let second = b.submit(1);
    let mut third = b.submit(2);
    let woken = Arc::new(Woken::default());
    let waker = Waker::from(woken.clone());
    assert!(Pin::new(&mut third).poll(&mut Context::from_waker(&waker)).is_pending());
    // Shutdown waits for the batch held at the gate (it joins the workers): call it on another
    // thread, and open the gate once it has closed the Batcher, which wakes the waiting submit.
    let closer = {
        let b = b.clone();
        std::thread::spawn(move || b.shutdown())
    };
    woken.wait();
    assert!(b.is_closed());
    gate.release(usize::MAX / 2);
    closer.join().expect("shutdown");
    let rt = rt(1);
    assert_eq!(rt.block_on(third), Err(OffloadError::Closed), "never accepted");
    assert_eq!(rt.block_on(first), Ok(mix(0)));
    assert_eq!(rt.block_on(second), Ok(mix(1)), "accepted before shutdown");
    assert_eq!(b.stats().rejected_closed, 1);
}

#[test]
fn bad_configs_are_refused() {
    let d = Device::host();
    for (c, what) in [
        (cfg(0, LONG, 2), "max_batch"),
        (cfg(1 << 30, LONG, 2), "max_batch"),
        (cfg(8, LONG, 0), "in_flight"),
        (cfg(8, LONG, 1000), "in_flight"),
        (cfg(8, Duration::from_secs(7200), 2), "max_delay"),
    ] {
        match Batcher::new(Mix::default(), &d, c.clone()) {
            Err(OffloadError::Config(m)) => assert!(m.contains(what), "{m}"),
            other => panic!("{c:?}: {other:?}"),
        }
    }
    match Batcher::new(SmallSgemm { m: 0, n: 4, k: 4 }, &d, BatcherConfig::default()) {
        Err(OffloadError::Config(m)) => assert!(m.contains("words per item"), "{m}"),
        other => panic!("{other:?}"),
    }
    match Batcher::new(SmallSgemm { m: 4096, n: 4096, k: 4096 }, &d, cfg(1 << 20, LONG, 2)) {
        Err(OffloadError::Config(m)) => assert!(m.contains("slot limit"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(BatcherConfig::default().validate(), Ok(()));
}

#[test]
fn report_and_timelines() {
    // Items that find the open batch full wait and join a later batch, which only its
    // deadline closes: keep it short.
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(8, Duration::from_millis(1), 2)).unwrap();
    let futs: Vec<_> = (0..20).map(|x| b.submit(x)).collect();
    let rt = rt(2);
    for f in futs {
        rt.block_on(f).unwrap();
    }
    let r = b.report();
    assert_eq!(r.stats.items, 20);
    assert_eq!(r.phases.len(), 6);
    let text = r.to_string();
    for w in [
        "kernel mix",
        "host (",
        "queue_wait",
        "staging",
        "h2d",
        "kernel",
        "d2h",
        "scatter",
        "median",
        "p99",
        "launches",
        "PCIe",
    ] {
        assert!(text.contains(w), "report lacks {w:?}:\n{text}");
    }
    let tl = b.timelines();
    let mut seqs: Vec<u64> = tl.iter().map(|t| t.batch).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (0..tl.len() as u64).collect::<Vec<_>>(), "batches numbered from 0 without gaps");
    assert!(tl.iter().all(|t| t.start >= t.queue_wait || t.start.is_zero()));
}

#[test]
fn host_slot_runs_each_phase() {
    let d = Device::host();
    let job = Mix::default();
    let mut slot = d.backend().new_slot(8, 8).unwrap();
    slot.staging_in()[..4].copy_from_slice(&[1, 2, 3, 4]);
    // Kernel without H2D reads the (zeroed) device buffer, not the staging one.
    slot.run(&job, 4, 4, 4, Phases { h2d: false, kernel: true, d2h: true }).unwrap();
    assert_eq!(&slot.staging_out()[..4], &[mix(0); 4]);
    slot.run(&job, 4, 4, 4, Phases::ALL).unwrap();
    assert_eq!(&slot.staging_out()[..4], &[mix(1), mix(2), mix(3), mix(4)]);
    assert!(slot.run(&job, 9, 9, 9, Phases::ALL).is_err(), "larger than the slot");
    // run_bulk: totals of words, resident or not.
    let input = [5u32, 6, 7];
    for resident in [false, true] {
        let (out, ph) = d.run_bulk(&job, 3, &input, 3, 3, resident).unwrap();
        assert_eq!(out, vec![mix(5), mix(6), mix(7)]);
        if resident {
            assert_eq!((ph.h2d, ph.d2h), (Duration::ZERO, Duration::ZERO));
        }
    }
    assert!(matches!(d.run_bulk(&job, 3, &input, 4, 3, false), Err(OffloadError::Kernel(_))));
    let e = d.run_bulk(&job, 2, &[POISON, 1], 2, 2, false).unwrap_err();
    assert!(e.to_string().contains("poison"), "{e}");
}

/// The crate's kernels through the Batcher, against their CPU entry points (many tasks, small
/// batches, so items land in batches of different sizes and positions).
#[test]
fn crate_kernels_through_the_batcher() {
    let rt = rt(2);
    let d = Device::host();
    let close = |x: f32, y: f32| (x - y).abs() <= 1e-5 * y.abs().max(1.0);

    let chain = gmprt_offload::kernels::black_scholes::synthetic_chain(300, 5);
    let bs = Batcher::new(BlackScholes, &d, cfg(64, Duration::from_micros(200), 2)).unwrap();
    let got: Vec<_> = rt.block_on({
        let (bs, chain) = (bs.clone(), chain.clone());
        async move {
            let hs: Vec<_> = chain
                .into_iter()
                .map(|c| {
                    let b = bs.clone();
                    gmprt_offload::runtime::spawn(async move { b.submit(c).await })
                })
                .collect();
            let mut out = Vec::new();
            for h in hs {
                out.push(h.await.unwrap().unwrap());
            }
            out
        }
    });
    for (c, g) in chain.iter().zip(&got) {
        let mut input = [0u32; 6];
        gmprt_offload::kernels::black_scholes::stage_words(std::slice::from_ref(c), &mut input);
        let mut out = [0u32; 6];
        gmprt_offload::kernels::black_scholes::price_greeks_words(1, &input, &mut out).unwrap();
        let r = gmprt_offload::kernels::black_scholes::gather_words(1, &out, 0);
        for (x, y) in [(g.price, r.price), (g.delta, r.delta), (g.gamma, r.gamma), (g.vega, r.vega)] {
            assert!(close(x, y), "{c:?}: {x} vs {y}");
        }
    }

    let sx = Batcher::new(Saxpy { a: 1.5 }, &d, cfg(16, Duration::from_micros(200), 2)).unwrap();
    let futs: Vec<_> = (0..100).map(|i| sx.submit((i as f32, 2.0 * i as f32))).collect();
    for (i, f) in futs.into_iter().enumerate() {
        let v = rt.block_on(f).unwrap();
        assert!(close(v, 1.5 * i as f32 + 2.0 * i as f32), "{i}: {v}");
    }

    let (m, n, k) = (3, 4, 5);
    let g = Batcher::new(SmallSgemm { m, n, k }, &d, cfg(8, Duration::from_micros(200), 2)).unwrap();
    let items: Vec<(Vec<f32>, Vec<f32>)> = (0..20)
        .map(|s| {
            let a = (0..m * k).map(|i| ((i + s) % 7) as f32 - 3.0).collect();
            let b = (0..k * n).map(|i| ((i * 3 + s) % 5) as f32 - 2.0).collect();
            (a, b)
        })
        .collect();
    let futs: Vec<_> = items.iter().map(|it| g.submit(it.clone())).collect();
    for ((a, b), f) in items.iter().zip(futs) {
        let c = rt.block_on(f).unwrap();
        let mut r = vec![0f32; m * n];
        gmprt_offload::kernels::sgemm::sgemm_naive(m, n, k, a, b, &mut r).unwrap();
        assert_eq!(c.len(), m * n);
        assert!(c.iter().zip(&r).all(|(&x, &y)| close(x, y)), "{c:?} vs {r:?}");
    }
}

#[test]
fn a_task_dump_says_what_each_submit_waits_on() {
    use gmprt_offload::runtime::dump::{TaskState, WaitReason};
    let gate = Arc::new(Gate::default());
    // Two Ps: batch 0 may run on the slot's worker thread or inline on the M that finds the
    // runtime quiescent (Host device); held in the kernel there, that M keeps its P, and the
    // other P runs the rest.
    let rt = rt(2);
    // One slot, one item per batch: the first item's batch runs and is held in the kernel, the
    // second fills the open batch, the third finds no room (backpressure).
    let b = Batcher::new(Mix { gate: Some(gate.clone()) }, &Device::host(), cfg(1, LONG, 1)).unwrap();
    let hs: Vec<_> = (0..3)
        .map(|x| {
            let b = b.clone();
            rt.spawn(async move { b.submit(x).await })
        })
        .collect();
    gate.wait_entered(1);
    // The slot took batch 0 (and woke any waiter it gave room) before entering the kernel, so
    // from here each task only moves towards its final wait. Wait for that state, observed
    // through the runtime's dump (an event, not a time).
    let dump = loop {
        let d = rt.dump();
        let parked = hs
            .iter()
            .filter(|h| d.tasks.iter().any(|t| t.id == Some(h.id()) && t.state == TaskState::Parked))
            .count();
        if parked == hs.len() {
            break d;
        }
        std::thread::yield_now();
    };
    let on = |name: &str| {
        dump.tasks
            .iter()
            .filter(|t| matches!(&t.wait, WaitReason::External { what, .. } if *what == name))
            .count()
    };
    assert_eq!((on("Batcher batch"), on("Batcher room")), (2, 1), "{dump}");
    assert!(dump.to_string().contains("Batcher batch #0"), "{dump}");
    gate.release(usize::MAX / 2);
    let mut outs: Vec<u32> = hs.into_iter().map(|h| rt.block_on(h).unwrap().unwrap()).collect();
    outs.sort_unstable();
    let mut want: Vec<u32> = (0..3).map(mix).collect();
    want.sort_unstable();
    assert_eq!(outs, want);
}
