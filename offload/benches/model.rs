//! The cost model's error table, and what a prediction costs.
//!
//! 1. A full calibration of the device at hand (`Device::detect`: `GMPRT_DEVICE`, else CUDA if
//!    present, else Host; what `explain
//!    --device host --save-profile` writes), on all host threads.
//! 2. At sizes the calibration did **not** sample (its grid is powers of two, and 3·2ᵏ sides
//!    for SGEMM; these are
//!    10k, 30k, 100k, 300k, 1M, 3M items, and N = 80, 160, 320, 640 for SGEMM), each
//!    prediction against a fresh measurement (median of [`REPS`] runs after a warm-up):
//!    * `kernel`: the device's kernel phase with the data resident;
//!    * `device e2e`: H2D + kernel + D2H with the inputs on the host (Black-Scholes and SAXPY,
//!      which go through a slot; the Host device's SGEMM and Monte Carlo move no data);
//!    * `CPU n Ps`: the kernel split over a fresh runtime's Ps, as calibration times it
//!      ([`CpuKernels`]), for every P count of the profile.
//!
//!    Then the worst error per column from n ≥ 10k: the target is ±25%.
//! 3. The pipeline (`CostModel::predict_pipeline`) for Black-Scholes and SAXPY at
//!    [`PIPE_ITEMS`]: [`PIPE_BATCHES`] batches through 1 and 2 slots, each slot on its own
//!    thread (as a Batcher's slot workers), each batch staged into the slot (host staging,
//!    which the model assumes free) and run H2D + kernel + D2H; measured wall time per batch
//!    against `latency` (1 slot) and `per_batch` (2 slots), with what bounds the latter.
//! 4. criterion times `CostModel::predict` and `CostModel::crossover` — the price of one
//!    `Placement::Auto` decision per batch.
//!
//! Run: `cargo bench -p gmprt-offload --bench model` (about a minute on the 2-core VM).
use criterion::{criterion_group, criterion_main, Criterion};
use gmprt_offload::calibrate::{calibrate, mc_contract, CalibrateOptions, CpuKernels};
use gmprt_offload::kernels::black_scholes;
use gmprt_offload::model::{CostModel, Residency};
use gmprt_offload::{BlackScholes, CudaJob, Device, Phases, Saxpy};
use gmprt_runtime::Runtime;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Runs per measured point (odd: the median is a sample).
const REPS: usize = 11;
/// Item sizes of the table: between the calibration's powers of two, from the 10k the model is
/// held to upwards.
const ITEMS: [usize; 6] = [10_000, 30_000, 100_000, 300_000, 1_000_000, 3_000_000];
/// SGEMM matrix sides of the table (between the calibration's sides).
const SIDES: [usize; 4] = [80, 160, 320, 640];

/// Item sizes of the pipeline table.
const PIPE_ITEMS: [usize; 3] = [30_000, 300_000, 3_000_000];
/// Batches per pipeline measurement.
const PIPE_BATCHES: usize = 16;

/// Wall seconds per batch of [`PIPE_BATCHES`] batches of `job` over `n` items through `slots`
/// slots of `dev`, one thread per slot (batches dealt round-robin), each batch staged from
/// `input` into the slot and run with every phase.
fn pipeline_per_batch<J: CudaJob>(
    dev: &Device,
    job: &J,
    n: usize,
    input: &[u32],
    ow: usize,
    slots: usize,
) -> f64 {
    let iw = input.len();
    let mut ss: Vec<_> = (0..slots).map(|_| dev.backend().new_slot(iw, ow).expect("slot")).collect();
    let batch = |s: &mut Box<dyn gmprt_offload::Slot>| {
        s.staging_in()[..iw].copy_from_slice(input);
        s.run(job, n, iw, ow, Phases::ALL).expect("run");
    };
    // Warm-up: each slot three times (first runs fault pages in and fill caches).
    (0..3).for_each(|_| ss.iter_mut().for_each(batch));
    let t = Instant::now();
    std::thread::scope(|sc| {
        for (i, s) in ss.iter_mut().enumerate() {
            let per = PIPE_BATCHES / slots + usize::from(i < PIPE_BATCHES % slots);
            sc.spawn(move || (0..per).for_each(|_| batch(s)));
        }
    });
    t.elapsed().as_secs_f64() / PIPE_BATCHES as f64
}

/// Median of `REPS` calls of `f` (seconds), after one warm-up call.
fn median(mut f: impl FnMut() -> f64) -> f64 {
    f();
    let mut v: Vec<f64> = (0..REPS).map(|_| f()).collect();
    v.sort_by(f64::total_cmp);
    v[REPS / 2]
}

/// (kernel resident, end to end) seconds of an item kernel through one slot of `dev`.
fn slot_times(dev: &Device, job: &dyn CudaJob, n: usize, input: &[u32], ow: usize) -> (f64, f64) {
    let iw = input.len();
    let mut slot = dev.backend().new_slot(iw, ow).expect("slot");
    slot.staging_in()[..iw].copy_from_slice(input);
    let only = |h2d, kernel, d2h| Phases { h2d, kernel, d2h };
    slot.run(job, n, iw, ow, only(true, false, false)).expect("upload");
    let kernel =
        median(|| slot.run(job, n, iw, ow, only(false, true, false)).expect("kernel").kernel.as_secs_f64());
    let e2e = median(|| {
        let t = slot.run(job, n, iw, ow, Phases::ALL).expect("run");
        (t.h2d + t.kernel + t.d2h).as_secs_f64()
    });
    (kernel, e2e)
}

/// Measured (kernel, e2e if the device moves data for it) seconds of `kernel` at `n` on `dev`.
fn device_times(dev: &Device, kernel: &str, n: usize) -> (f64, Option<f64>) {
    match kernel {
        "black_scholes" => {
            let mut words = vec![0u32; 6 * n];
            black_scholes::stage_words(&black_scholes::synthetic_chain(n, 3), &mut words);
            let (k, e) = slot_times(dev, &BlackScholes, n, &words, 6 * n);
            (k, Some(e))
        }
        "saxpy" => {
            let words: Vec<u32> = (0..2 * n).map(|i| (i as f32 * 1e-3).to_bits()).collect();
            let (k, e) = slot_times(dev, &Saxpy { a: 2.0 }, n, &words, n);
            (k, Some(e))
        }
        "sgemm" => {
            let a: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 * 0.25).collect();
            let mut c = vec![0f32; n * n];
            (median(|| dev.sgemm(n, n, n, &a, &a, &mut c).expect("sgemm").kernel.as_secs_f64()), None)
        }
        _ => {
            let c = mc_contract();
            let blocks = (n / 4) as u64;
            (median(|| dev.option_paths_sum(7, &c, blocks).expect("paths").1.kernel.as_secs_f64()), None)
        }
    }
}

/// Signed error of `predicted` against `measured`, in percent.
fn err(predicted: f64, measured: f64) -> f64 {
    100.0 * (predicted - measured) / measured
}

fn bench(c: &mut Criterion) {
    let dev = Device::detect().unwrap_or_else(|e| panic!("GMPRT_DEVICE: {e}"));
    let opts = CalibrateOptions::default();
    let t = std::time::Instant::now();
    let profile = calibrate(&dev, &opts).expect("calibration");
    println!("\ncalibrated {} in {:.1} s", profile.label(), t.elapsed().as_secs_f64());
    // Kept for reading the fits behind the table (`explain --device <this file>` replays them).
    let saved = std::env::temp_dir().join("gmprt-model-bench-profile.json");
    match profile.save(&saved) {
        Ok(()) => println!("profile: {}", saved.display()),
        Err(e) => println!("profile not saved: {e}"),
    }
    let model = CostModel::new(profile);
    let procs: Vec<usize> = model.profile.kernel("saxpy").unwrap().cpu.iter().map(|c| c.procs).collect();
    let kernels = ["black_scholes", "saxpy", "sgemm", "monte_carlo"];
    let sizes = |k: &str| -> &[usize] {
        if k == "sgemm" {
            &SIDES
        } else {
            &ITEMS
        }
    };
    // Device runs first, with no runtime alive (idle Ms and sysmon would share the cores);
    // then the CPU runs on one runtime at a time, as calibration does.
    let mut device = vec![];
    for k in kernels {
        for &n in sizes(k) {
            device.push(device_times(&dev, k, n));
        }
    }
    let cpu = CpuKernels::new(*ITEMS.iter().max().unwrap(), *ITEMS.iter().max().unwrap());
    let mut on_cpu = vec![vec![]; procs.len()];
    for (i, &p) in procs.iter().enumerate() {
        let rt = Runtime::builder().procs(p).build().expect("runtime");
        for k in kernels {
            for &n in sizes(k) {
                on_cpu[i].push(cpu.time(&rt.handle(), k, n, REPS).expect("cpu"));
            }
        }
    }

    let mut head = format!("{:<14} {:>9}  {:>22}  {:>22}", "kernel", "n", "kernel (resident)", "device e2e");
    for p in &procs {
        head += &format!("  {:>22}", format!("CPU {p} P"));
    }
    println!("{head}\n{:<26}{}", "", "  predicted measured err".repeat(2 + procs.len()));
    let mut worst = vec![0f64; 2 + procs.len()];
    let cell = |p: f64, m: f64, w: &mut f64| {
        let e = err(p, m);
        *w = w.max(e.abs());
        format!("  {:>8.1}µs {:>8.1}µs {:>+4.0}%", p * 1e6, m * 1e6, e)
    };
    let mut row = 0;
    for k in kernels {
        for &n in sizes(k) {
            let host = model.predict(k, n as f64, Residency::Host, 0.0).unwrap();
            let resident = model.predict(k, n as f64, Residency::Device, 0.0).unwrap();
            let (kt, e2e) = device[row];
            let mut line = format!("{k:<14} {n:>9}");
            line += &cell(resident.kernel_time, kt, &mut worst[0]);
            line += &match e2e {
                Some(m) => cell(host.gpu_total, m, &mut worst[1]),
                None => format!("  {:>22}", "-"),
            };
            for (i, &p) in procs.iter().enumerate() {
                line += &cell(model.cpu_time(k, n as f64, p).unwrap(), on_cpu[i][row], &mut worst[2 + i]);
            }
            println!("{line}");
            row += 1;
        }
    }
    let mut summary = format!("{:<24}", "worst |error|, n >= 10k");
    for w in &worst {
        summary += &format!("  {:>21.1}%", w);
    }
    println!("{summary}\n");

    // The pipeline: one batch's latency (1 slot) and the steady state with 2 slots.
    println!(
        "{:<14} {:>9}  {:>22}  {:>22}  bound by (2 slots)\n{:<26}{}",
        "pipeline",
        "n",
        "1 slot: latency",
        "2 slots: per batch",
        "",
        "  predicted measured err".repeat(2)
    );
    let mut pipe_worst = [0f64; 2];
    for k in ["black_scholes", "saxpy"] {
        for &n in &PIPE_ITEMS {
            let (words, ow) = if k == "saxpy" {
                ((0..2 * n).map(|i| (i as f32 * 1e-3).to_bits()).collect::<Vec<u32>>(), n)
            } else {
                let mut w = vec![0u32; 6 * n];
                black_scholes::stage_words(&black_scholes::synthetic_chain(n, 3), &mut w);
                (w, 6 * n)
            };
            let measure = |slots| {
                if k == "saxpy" {
                    pipeline_per_batch(&dev, &Saxpy { a: 2.0 }, n, &words, ow, slots)
                } else {
                    pipeline_per_batch(&dev, &BlackScholes, n, &words, ow, slots)
                }
            };
            let one = model.predict_pipeline(k, n as f64, 1, Residency::Host).unwrap();
            let two = model.predict_pipeline(k, n as f64, 2, Residency::Host).unwrap();
            let mut line = format!("{k:<14} {n:>9}");
            line += &cell(one.latency, measure(1), &mut pipe_worst[0]);
            line += &cell(two.per_batch, measure(2), &mut pipe_worst[1]);
            println!("{line}  {}", two.bound_by);
        }
    }
    println!(
        "{:<24}  {:>21.1}%  {:>21.1}%   (host staging in the measurement, not in the model)\n",
        "worst |error|", pipe_worst[0], pipe_worst[1]
    );

    let mut group = c.benchmark_group("model");
    group.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(300));
    group.bench_function("predict/black_scholes/65536", |b| {
        b.iter(|| model.predict("black_scholes", black_box(65536.0), Residency::Host, 0.0).unwrap())
    });
    group.bench_function("predict_pipeline/black_scholes/65536/2", |b| {
        b.iter(|| model.predict_pipeline("black_scholes", black_box(65536.0), 2, Residency::Host).unwrap())
    });
    group.bench_function("crossover/black_scholes/device", |b| {
        b.iter(|| model.crossover(black_box("black_scholes"), Residency::Device).unwrap())
    });
    group.bench_function("crossover/sgemm/host", |b| {
        b.iter(|| model.crossover(black_box("sgemm"), Residency::Host).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
