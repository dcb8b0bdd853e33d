//! The cost model's error table: a quick Host calibration, then for each kernel and size the
//! predicted device time against a fresh measurement (median of 5), printed as a table;
//! criterion times the measured runs.
//!
//! Sizes: n ∈ {10k, 100k, 1M} items for Black-Scholes, SAXPY and Monte Carlo (paths); SGEMM's n
//! is the matrix side, so it uses N ∈ {64, 128, 256} instead (a 10k-side matrix would take
//! seconds per run on the Host device).
use criterion::{criterion_group, criterion_main, Criterion};
use gmprt_offload::kernels::black_scholes::{self, Contract, OptionKind};
use gmprt_offload::model::{calibrate, CalibrateOptions, CostModel, Residency};
use gmprt_offload::{BlackScholes, Device, PhaseTimes, Saxpy};
use std::time::Duration;

/// One run of `kernel` at size `n` on `dev` (kernel phase only; data resident).
fn run(dev: &Device, kernel: &str, n: usize, bs_input: &[u32], sx_input: &[u32], mm: &[f32]) -> Duration {
    let t: PhaseTimes = match kernel {
        "black_scholes" => dev.run_bulk(&BlackScholes, n, &bs_input[..6 * n], 6 * n, 6 * n, true).unwrap().1,
        "saxpy" => dev.run_bulk(&Saxpy { a: 2.0 }, n, &sx_input[..2 * n], 2 * n, n, true).unwrap().1,
        "sgemm" => {
            let mut c = vec![0f32; n * n];
            dev.sgemm(n, n, n, &mm[..n * n], &mm[..n * n], &mut c).unwrap()
        }
        _ => {
            let c =
                Contract { spot: 100.0, strike: 100.0, t: 1.0, rate: 0.03, vol: 0.2, kind: OptionKind::Call };
            dev.option_paths_sum(1, &c, (n / 4) as u64).unwrap().1
        }
    };
    t.kernel
}

fn bench(c: &mut Criterion) {
    let dev = Device::host();
    let profile = calibrate(&dev, &CalibrateOptions::quick()).expect("host calibration");
    let model = CostModel::new(profile);
    let nmax = 1_000_000;
    let mut bs_input = vec![0u32; 6 * nmax];
    black_scholes::stage_words(&black_scholes::synthetic_chain(nmax, 3), &mut bs_input);
    let sx_input: Vec<u32> = (0..2 * nmax).map(|i| (i as f32 * 1e-3).to_bits()).collect();
    let mm: Vec<f32> = (0..256 * 256).map(|i| (i % 7) as f32).collect();
    println!("\n{}", model.profile.label());
    println!("{:<14} {:>9} {:>13} {:>13} {:>9}", "kernel", "n", "predicted", "measured", "error");
    let mut group = c.benchmark_group("model");
    group.sample_size(10).measurement_time(Duration::from_secs(1)).warm_up_time(Duration::from_millis(200));
    for kernel in ["black_scholes", "saxpy", "sgemm", "monte_carlo"] {
        let sizes: &[usize] = if kernel == "sgemm" { &[64, 128, 256] } else { &[10_000, 100_000, 1_000_000] };
        for &n in sizes {
            let predicted = model.predict(kernel, n as f64, Residency::Device, 0.0).unwrap().kernel_time;
            let mut t: Vec<f64> =
                (0..5).map(|_| run(&dev, kernel, n, &bs_input, &sx_input, &mm).as_secs_f64()).collect();
            t.sort_by(f64::total_cmp);
            let measured = t[2];
            let err = 100.0 * (predicted - measured) / measured;
            println!(
                "{kernel:<14} {n:>9} {:>11.1}µs {:>11.1}µs {err:>+8.1}%",
                predicted * 1e6,
                measured * 1e6
            );
            group.bench_function(format!("{kernel}/{n}"), |b| {
                b.iter(|| run(&dev, kernel, n, &bs_input, &sx_input, &mm))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
