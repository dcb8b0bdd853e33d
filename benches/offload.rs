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
use gmprt::offload::jobs::BlackScholes;
use gmprt::offload::{Batcher, BatcherConfig, Device, DeviceKind};
use std::time::{Duration, Instant};

mod common;

const MAX_N: usize = 1 << 20;

fn devices() -> Vec<Device> {
    let mut v = vec![Device::host()];
    match Device::cuda(0) {
        Ok(d) => v.push(d),
        Err(e) => println!("offload bench: CUDA skipped: {e}"),
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

criterion_group!(benches, offload);
criterion_main!(benches);
