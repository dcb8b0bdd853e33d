//! Per-task launch vs the Batcher (batch sizes 1 … 1M) vs one bulk launch, Black-Scholes with
//! Greeks. Runs on the Host device always and on CUDA when `Device::detect` finds one (a
//! printed line says which ran, and why CUDA did not). Throughput is in options/s
//! (criterion's elements/s); launches per second are printed beside each Batcher config.
//!
//! ```text
//! cargo bench --bench offload            # BENCH_PROCS sets the runtime's procs (default 2)
//! ```
//!
//! Each Batcher iteration is the full story: `items` green tasks each `submit(...).await` one
//! contract, from inside the runtime, until the last result arrives. Items per iteration are
//! `min(1M, 1000 × max_batch)` so that the small-batch configs (one launch per item) still
//! finish an iteration in well under a second on the Host device.
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use gmprt::kernels::black_scholes::{stage_words, synthetic_chain, Contract, IN_WORDS, OUT_WORDS};
use gmprt::offload::jobs::{BlackScholes, Saxpy};
use gmprt::offload::{BatchKernel, Job};
use gmprt::offload::{Batcher, BatcherConfig, BatcherStats, Device, DeviceKind};
use std::time::{Duration, Instant};

mod common;

const MAX_N: usize = 1 << 20;

fn devices() -> Vec<Device> {
    let mut v = vec![Device::host()];
    match Device::cuda(0) {
        Ok(d) => v.push(d),
        Err(e) => println!("offload bench: CUDA skipped: {e}"),
    }
    // First-use costs (CUDA modules, the Host pool's threads) outside every timed run.
    for d in &v {
        d.warm_up().expect("device warm-up");
    }
    v
}

fn run_batcher(rt: &gmprt::Runtime, b: &Batcher<BlackScholes>, chain: &'static [Contract]) {
    let b = b.clone();
    rt.block_on(async move {
        gmprt::spawn(async move {
            let mut hs = Vec::with_capacity(chain.len());
            for (i, c) in chain.iter().enumerate() {
                let b = b.clone();
                hs.push(gmprt::spawn(async move { b.submit(*c).await }));
                // The root spawns in slices of 1024 so its own poll stays short (sysmon would
                // report a 1M-spawn poll as blocking its P; Go would preempt it).
                if i % 1024 == 1023 {
                    gmprt::yield_now().await;
                }
            }
            for h in hs {
                h.await.expect("task").expect("offload");
            }
        })
        .await
        .expect("root task")
    });
}

fn offload(c: &mut Criterion) {
    let procs = common::procs();
    let rt = common::gmprt_rt(procs);
    let chain: &'static [Contract] = Vec::leak(synthetic_chain(MAX_N, 7));
    for dev in devices() {
        let tag = if dev.kind() == DeviceKind::Cuda { "cuda" } else { "host" };
        println!("offload bench: device {} ; runtime procs {procs}", dev.describe());
        let mut g = c.benchmark_group(format!("offload_{tag}"));
        g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
        for max_batch in [1usize, 64, 4096, 65_536, MAX_N] {
            let items = MAX_N.min(1000 * max_batch);
            let cfg = BatcherConfig {
                max_batch,
                max_delay: Duration::from_micros(200),
                ..BatcherConfig::default()
            };
            let b = Batcher::new(BlackScholes, &dev, cfg).expect("batcher");
            g.throughput(Throughput::Elements(items as u64));
            g.bench_function(BenchmarkId::new("batcher", format!("max_batch={max_batch}")), |bn| {
                bn.iter(|| run_batcher(&rt, &b, &chain[..items]))
            });
            // Launches per second of one more timed pass, outside criterion's statistics.
            let before = b.stats().launches;
            let t = Instant::now();
            run_batcher(&rt, &b, &chain[..items]);
            let secs = t.elapsed().as_secs_f64();
            println!(
                "offload_{tag}/batcher/max_batch={max_batch}: {items} items, {:.0} launches/s, {:.3e} options/s",
                (b.stats().launches - before) as f64 / secs,
                items as f64 / secs
            );
            b.shutdown();
        }
        let mut input = vec![0u32; MAX_N * IN_WORDS];
        stage_words(chain, &mut input);
        g.throughput(Throughput::Elements(MAX_N as u64));
        for resident in [false, true] {
            let name = if resident { "bulk_resident_kernel" } else { "bulk_with_transfers" };
            g.bench_function(BenchmarkId::new(name, MAX_N), |bn| {
                bn.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let (_, ph) = dev
                            .run_bulk(
                                &BlackScholes,
                                MAX_N,
                                &input,
                                MAX_N * IN_WORDS,
                                MAX_N * OUT_WORDS,
                                resident,
                            )
                            .expect("bulk run");
                        total += if resident { ph.kernel } else { ph.h2d + ph.kernel + ph.d2h };
                    }
                    total
                })
            });
        }
        g.finish();
    }
}

// ---------------------------------------------------------------------------------------------
// Long-lived submitters (a service's tasks): `tasks` green tasks each submit `per_task` SAXPY
// items one after another, awaiting each result before the next submit. gmprt's Batcher
// against the peer a good tokio user writes by hand instead (below), same items, same
// max_batch, in the same run.

/// The peer: what a tokio user writes instead of a Batcher. A bounded mpsc of
/// `(item, oneshot)` feeds one collector task, which takes whatever is queued up to
/// `max_batch` (`recv_many`) and runs it at once: it waits only while nothing is queued, never
/// on a timer (so no item waits `max_delay`: the rule issue 26 holds the Batcher to), computes
/// the batch with the same CPU kernel the Host device runs, and answers each oneshot.
#[derive(Clone)]
struct TokioBatcher {
    tx: tokio::sync::mpsc::Sender<((f32, f32), tokio::sync::oneshot::Sender<f32>)>,
}

impl TokioBatcher {
    /// Starts the collector on the current tokio runtime. The channel holds `max_batch` items
    /// (backpressure, as the Batcher's bounded open batch).
    fn start(kernel: Saxpy, max_batch: usize) -> TokioBatcher {
        let (tx, mut rx) = tokio::sync::mpsc::channel(max_batch);
        tokio::spawn(async move {
            let mut batch: Vec<((f32, f32), tokio::sync::oneshot::Sender<f32>)> =
                Vec::with_capacity(max_batch);
            let mut input = vec![0u32; 2 * max_batch];
            let mut output = vec![0u32; max_batch];
            let mut items: Vec<(f32, f32)> = Vec::with_capacity(max_batch);
            loop {
                // Everything queued, up to max_batch; waits only when the queue is empty.
                if rx.recv_many(&mut batch, max_batch).await == 0 {
                    return; // every sender dropped
                }
                let n = batch.len();
                items.clear();
                items.extend(batch.iter().map(|(it, _)| *it));
                kernel.stage(&items, &mut input[..2 * n]);
                kernel.run_host(n, &input[..2 * n], &mut output[..n]).expect("saxpy");
                for (i, (_, reply)) in batch.drain(..).enumerate() {
                    let _ = reply.send(kernel.gather(n, &output[..n], i));
                }
            }
        });
        TokioBatcher { tx }
    }

    async fn submit(&self, item: (f32, f32)) -> f32 {
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.tx.send((item, reply)).await.expect("collector alive");
        rx.await.expect("collector answers")
    }
}

/// What one submitters pass returns: the checksum of every result, and (when sampling) every
/// item's submit → result latency in nanoseconds, measured in the submitting task.
struct Pass {
    sum: f64,
    latencies: Vec<u64>,
}

/// Item `j` of task `t`: `x` and `y` small integers, so every SAXPY result and the checksum
/// are exact in f32/f64 and a lost or misrouted result changes the sum.
fn submitter_item(t: usize, j: usize) -> (f32, f32) {
    ((t % 7) as f32, (j % 5) as f32)
}

/// The checksum the results of `tasks × per_task` items must add up to with `a`.
fn expected_sum(a: f32, tasks: usize, per_task: usize) -> f64 {
    let mut s = 0.0;
    for t in 0..tasks {
        for j in 0..per_task {
            let (x, y) = submitter_item(t, j);
            s += f64::from(a * x + y);
        }
    }
    s
}

/// One task's loop, generic over the submit (the Batcher's or the peer's).
async fn submitter<F, Fut>(t: usize, per_task: usize, sample: bool, submit: F) -> Pass
where
    F: Fn((f32, f32)) -> Fut,
    Fut: std::future::Future<Output = f32>,
{
    let mut pass = Pass { sum: 0.0, latencies: Vec::with_capacity(if sample { per_task } else { 0 }) };
    for j in 0..per_task {
        let item = submitter_item(t, j);
        if sample {
            let t0 = Instant::now();
            pass.sum += f64::from(submit(item).await);
            pass.latencies.push(t0.elapsed().as_nanos() as u64);
        } else {
            pass.sum += f64::from(submit(item).await);
        }
    }
    pass
}

/// Merges the passes of every task: the checksum and the latencies.
fn merge(passes: impl IntoIterator<Item = Pass>) -> Pass {
    let mut all = Pass { sum: 0.0, latencies: Vec::new() };
    for p in passes {
        all.sum += p.sum;
        all.latencies.extend(p.latencies);
    }
    all
}

fn submitters_gmprt(
    rt: &gmprt::Runtime,
    b: &Batcher<Saxpy>,
    tasks: usize,
    per_task: usize,
    sample: bool,
) -> Pass {
    let b = b.clone();
    common::run_gmprt(rt, async move {
        let hs: Vec<_> = (0..tasks)
            .map(|t| {
                let b = b.clone();
                gmprt::spawn(async move {
                    submitter(t, per_task, sample, |it| {
                        let s = b.submit(it);
                        async move { s.await.expect("offload") }
                    })
                    .await
                })
            })
            .collect();
        let mut passes = Vec::with_capacity(tasks);
        for h in hs {
            passes.push(h.await.expect("task"));
        }
        merge(passes)
    })
}

fn submitters_tokio(
    rt: &tokio::runtime::Runtime,
    b: &TokioBatcher,
    tasks: usize,
    per_task: usize,
    sample: bool,
) -> Pass {
    let b = b.clone();
    common::run_tokio(rt, async move {
        let hs: Vec<_> = (0..tasks)
            .map(|t| {
                let b = b.clone();
                tokio::spawn(async move { submitter(t, per_task, sample, |it| b.submit(it)).await })
            })
            .collect();
        let mut passes = Vec::with_capacity(tasks);
        for h in hs {
            passes.push(h.await.expect("task"));
        }
        merge(passes)
    })
}

/// p50, p99 and p99.9 of `ns`, in microseconds.
fn quantiles(ns: &mut [u64]) -> [f64; 3] {
    ns.sort_unstable();
    let at = |q: f64| ns[((ns.len() - 1) as f64 * q) as usize] as f64 / 1e3;
    [at(0.50), at(0.99), at(0.999)]
}

/// `latency p50/p99/p99.9 gmprt …, tokio …` for the two sides' latencies (ns), in µs.
fn latencies(gmprt: &mut [u64], tokio: &mut [u64]) -> String {
    let (g, t) = (quantiles(gmprt), quantiles(tokio));
    format!(
        "latency p50/p99/p99.9 gmprt {:.1}/{:.1}/{:.1} µs, tokio {:.1}/{:.1}/{:.1} µs",
        g[0], g[1], g[2], t[0], t[1], t[2]
    )
}

/// `closed by: …` — the Batcher's batches closed between two snapshots of its stats, by reason.
fn closes(before: &BatcherStats, after: &BatcherStats) -> String {
    format!(
        "closed by: {} quiescent, {} deadline, {} full",
        after.closed_quiescent - before.closed_quiescent,
        after.closed_deadline - before.closed_deadline,
        after.closed_full - before.closed_full,
    )
}

/// `offload_submitters`: long-lived tasks each submitting SAXPY items one after another —
/// 1,000 × 1,000, 100 × 100 and 10,000 × 100 (9,000 wait for room) — the Batcher (Host
/// device) against the tokio peer, `max_batch` 1024, the Batcher's `max_delay` 200 µs (the
/// peer never waits on a timer). After each pair, one more pass of each with every item's
/// submit → result latency taken in its task prints p50/p99/p99.9 beside the throughput.
/// Then `offload_submitters/10x1`: 2,000 rounds of 10 tasks submitting one item each and
/// waiting, latency only (no item may wait on a deadline when nothing else can arrive).
fn submitters(c: &mut Criterion) {
    let procs = common::procs();
    let grt = common::gmprt_rt(procs);
    let trt = common::tokio_rt(procs);
    let kernel = Saxpy { a: 3.0 };
    let (max_batch, max_delay) = (1024, Duration::from_micros(200));
    let cfg = BatcherConfig { max_batch, max_delay, runtime: Some(grt.handle()), ..BatcherConfig::default() };
    let b = Batcher::new(kernel, &Device::host(), cfg).expect("batcher");
    let peer = {
        let _g = trt.enter();
        TokioBatcher::start(kernel, max_batch)
    };
    let mut g = c.benchmark_group("offload_submitters");
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    for (tasks, per_task) in [(1000usize, 1000usize), (100, 100), (10_000, 100)] {
        let items = tasks * per_task;
        let want = expected_sum(kernel.a, tasks, per_task);
        // Checked once, untimed: every result arrives, right.
        assert_eq!(submitters_gmprt(&grt, &b, tasks, per_task, false).sum, want);
        assert_eq!(submitters_tokio(&trt, &peer, tasks, per_task, false).sum, want);
        let id = format!("{tasks}x{per_task}/procs={procs}");
        g.throughput(Throughput::Elements(items as u64));
        g.bench_function(BenchmarkId::new("gmprt", &id), |bn| {
            bn.iter(|| submitters_gmprt(&grt, &b, tasks, per_task, false))
        });
        g.bench_function(BenchmarkId::new("tokio", &id), |bn| {
            bn.iter(|| submitters_tokio(&trt, &peer, tasks, per_task, false))
        });
        let (before, wakes0) = (b.stats(), b.submit_wakes());
        let mut gl = submitters_gmprt(&grt, &b, tasks, per_task, true).latencies;
        let (after, wakes) = (b.stats(), b.submit_wakes() - wakes0);
        let mut tl = submitters_tokio(&trt, &peer, tasks, per_task, true).latencies;
        println!(
            "offload_submitters/{id}: {}; gmprt {:.0} items per launch, {}, {:.2} worker wakes by submits per batch",
            latencies(&mut gl, &mut tl),
            (after.items - before.items) as f64 / (after.launches - before.launches).max(1) as f64,
            closes(&before, &after),
            wakes as f64 / (after.batches - before.batches).max(1) as f64,
        );
    }
    g.finish();
    ten_submitters(&grt, &b, &trt, &peer, procs);
    b.shutdown();
}

/// 10 tasks submit one item each and wait, 2,000 rounds per side: p50/p99/p99.9 of the
/// items' submit → result, and the batches' own work (staging + run + scatter, from the
/// Batcher's timelines) beside it: the target is p99 ≤ max(the batch's work, 20 µs).
fn ten_submitters(
    grt: &gmprt::Runtime,
    b: &Batcher<Saxpy>,
    trt: &tokio::runtime::Runtime,
    peer: &TokioBatcher,
    procs: usize,
) {
    const ROUNDS: usize = 2000;
    let (mut gl, mut tl) = (Vec::with_capacity(10 * ROUNDS), Vec::with_capacity(10 * ROUNDS));
    let (before, wakes0) = (b.stats(), b.submit_wakes());
    let rs0 = grt.stats();
    for _ in 0..ROUNDS {
        gl.extend(submitters_gmprt(grt, b, 10, 1, true).latencies);
        tl.extend(submitters_tokio(trt, peer, 10, 1, true).latencies);
    }
    let (after, wakes) = (b.stats(), b.submit_wakes() - wakes0);
    let rs = grt.stats();
    // The ring keeps the last TIMELINE_CAPACITY batches: these rounds' are its tail.
    let tls = b.timelines();
    let ran = ((after.batches - before.batches) as usize).min(tls.len());
    let mut work: Vec<u64> = tls[tls.len() - ran..]
        .iter()
        .map(|t| (t.staging + t.h2d + t.kernel + t.d2h + t.scatter).as_nanos() as u64)
        .collect();
    let wq = if work.is_empty() { [0.0; 3] } else { quantiles(&mut work) };
    println!(
        "offload_submitters/10x1/procs={procs}: {ROUNDS} rounds, {}; gmprt batch work p50/p99 {:.1}/{:.1} µs; {}; \
         gmprt per round: {:.2} worker wakes by submits, {:.2} M parks, {:.2} runnext back-offs",
        latencies(&mut gl, &mut tl),
        wq[0],
        wq[1],
        closes(&before, &after),
        wakes as f64 / ROUNDS as f64,
        (rs.parks - rs0.parks) as f64 / ROUNDS as f64,
        (rs.runnext_backoffs - rs0.runnext_backoffs) as f64 / ROUNDS as f64,
    );
}

/// `offload_book`: one task owns a book of 1M Black-Scholes contracts and prices it through the
/// Batcher with one `submit_many` (max_batch 1M: one piece, one wake), against the bulk launch
/// of the same contracts including its copies (staging the words, H2D, kernel, D2H: what a
/// caller without a Batcher does), Host device, same run.
fn book(c: &mut Criterion) {
    let procs = common::procs();
    let rt = common::gmprt_rt(procs);
    let chain: Vec<Contract> = synthetic_chain(MAX_N, 11);
    let dev = Device::host();
    dev.warm_up().expect("host warm-up"); // the pool the bulk side runs on starts here, untimed
    let cfg = BatcherConfig {
        max_batch: MAX_N,
        max_delay: Duration::ZERO,
        in_flight: 1,
        ..BatcherConfig::default()
    };
    let b = Batcher::new(BlackScholes, &dev, cfg).expect("batcher");
    let mut g = c.benchmark_group("offload_book");
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(MAX_N as u64));
    let id = format!("{MAX_N}/procs={procs}");
    g.bench_function(BenchmarkId::new("submit_many", &id), |bn| {
        bn.iter(|| {
            let (b, book) = (b.clone(), chain.clone());
            let out = common::run_gmprt(&rt, async move { b.submit_many(book).await.expect("book") });
            assert_eq!(out.len(), MAX_N);
        })
    });
    let mut input = vec![0u32; MAX_N * IN_WORDS];
    g.bench_function(BenchmarkId::new("bulk_with_copies", &id), |bn| {
        bn.iter(|| {
            stage_words(&chain, &mut input);
            dev.run_bulk(&BlackScholes, MAX_N, &input, MAX_N * IN_WORDS, MAX_N * OUT_WORDS, false)
                .expect("bulk run")
        })
    });
    g.finish();
    b.shutdown();
}

criterion_group!(benches, submitters, book, offload);
criterion_main!(benches);
