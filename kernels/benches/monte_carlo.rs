//! Monte Carlo option paths (`option_paths_sum`), single thread, one group member per ISA this
//! CPU has, against the textbook loop in the same run: one path at a time with the standard
//! library's `ln`, `sqrt`, `sin`, `cos` and `exp` (libm calls, which no compiler vectorises; the
//! kernel's formula before 2026-11-29). 16,384 blocks = 65,536 paths; throughput in paths per
//! second on one core. And π's hit count, the same Philox blocks with no floating point, per
//! ISA: the generator's share of a path's cost.
//!
//! Run: `cargo bench -p gmprt-kernels --bench monte_carlo`.
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use gmprt_kernels::black_scholes::{Contract, OptionKind};
use gmprt_kernels::monte_carlo::{option_paths_sum_isa, pi_hits_isa};
use gmprt_kernels::philox::{block, unit_f32, unit_open_f32, TAG_PATHS};
use gmprt_kernels::Isa;
use std::time::Duration;

/// The peer: Box-Muller and the terminal price with libm, one path at a time, every payoff
/// added into one sum (the kernel now keeps one per path slot of a chunk).
fn libm_paths_sum(seed: u64, c: &Contract, blocks: u64) -> (f64, f64) {
    let drift = (c.rate - 0.5 * c.vol * c.vol) * c.t;
    let diffusion = c.vol * c.t.sqrt();
    let disc = (-(c.rate as f64) * c.t as f64).exp();
    let (mut sum, mut sum_sq) = (0.0f64, 0.0f64);
    for b in 0..blocks {
        let w = block(seed, TAG_PATHS, b);
        let r1 = (-2.0 * unit_open_f32(w[0]).ln()).sqrt();
        let th1 = std::f32::consts::TAU * unit_f32(w[1]);
        let r2 = (-2.0 * unit_open_f32(w[2]).ln()).sqrt();
        let th2 = std::f32::consts::TAU * unit_f32(w[3]);
        for z in [r1 * th1.cos(), r1 * th1.sin(), r2 * th2.cos(), r2 * th2.sin()] {
            let st = (c.spot * (drift + diffusion * z).exp()) as f64;
            let p = (st - c.strike as f64).max(0.0) * disc;
            sum += p;
            sum_sq += p * p;
        }
    }
    (sum, sum_sq)
}

fn bench_paths(cr: &mut Criterion) {
    let c = Contract { spot: 100.0, strike: 105.0, t: 1.0, rate: 0.05, vol: 0.2, kind: OptionKind::Call };
    let blocks = 16_384u64;
    let mut group = cr.benchmark_group(format!("option_paths/paths={}", 4 * blocks));
    group.throughput(Throughput::Elements(4 * blocks));
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    group.bench_function("libm, one path at a time", |b| b.iter(|| black_box(libm_paths_sum(7, &c, blocks))));
    for isa in Isa::available() {
        group.bench_with_input(BenchmarkId::from_parameter(isa.name()), &isa, |b, &isa| {
            b.iter(|| black_box(option_paths_sum_isa(isa, 7, black_box(&c), 0, blocks)))
        });
    }
    group.finish();
}

/// π's hit count per ISA: Philox and an integer test, no floating point: how much of a path's
/// cost is the generator (throughput in blocks, 4 Philox words each, as a path block).
fn bench_pi(cr: &mut Criterion) {
    let blocks = 16_384u64;
    let mut group = cr.benchmark_group(format!("pi_hits/blocks={blocks}"));
    group.throughput(Throughput::Elements(blocks));
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    for isa in Isa::available() {
        group.bench_with_input(BenchmarkId::from_parameter(isa.name()), &isa, |b, &isa| {
            b.iter(|| black_box(pi_hits_isa(isa, 7, 0, black_box(blocks))))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_paths, bench_pi);
criterion_main!(benches);
