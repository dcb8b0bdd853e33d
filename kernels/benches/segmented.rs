//! Segmented Greek sums (`sum_by_segment`), single thread, on a desk-shaped book: 1,048,576
//! priced contracts in 512 segments of 2,048 (one underlying's contracts each), against the
//! textbook loop in the same run (per segment, one f64 sum per output in index order: the
//! kernel's order before 2026-11-29), and Black-Scholes pricing of the same contracts for
//! scale. Throughput in contracts per second on one core.
//!
//! Run: `cargo bench -p gmprt-kernels --bench segmented`.
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use gmprt_kernels::black_scholes::{price_batch, synthetic_chain, BsBatch, BsResults};
use gmprt_kernels::segmented::{sum_by_segment, BsCols, GreekSums};
use std::time::Duration;

/// The peer: one running sum per output and segment, in index order.
fn index_order(r: &BsResults, qty: &[f32], offsets: &[u32], sums: &mut [[f64; 6]]) {
    let cols = [&r.price, &r.delta, &r.gamma, &r.vega, &r.theta, &r.rho];
    for (s, out) in sums.iter_mut().enumerate() {
        let mut acc = [0.0f64; 6];
        for i in offsets[s] as usize..offsets[s + 1] as usize {
            let q = f64::from(qty[i]);
            for (a, col) in acc.iter_mut().zip(cols) {
                *a += q * f64::from(col[i]);
            }
        }
        *out = acc;
    }
}

fn bench_segmented(c: &mut Criterion) {
    let (n, seg) = (1usize << 20, 2048usize);
    let chain = synthetic_chain(n, 42);
    let batch = BsBatch::from_contracts(&chain);
    let results = price_batch(&batch).unwrap();
    let qty: Vec<f32> = (0..n).map(|i| (i % 201) as f32 - 100.0).collect();
    let offsets: Vec<u32> = (0..=n / seg).map(|s| (s * seg) as u32).collect();
    let mut sums = vec![GreekSums::default(); n / seg];
    let mut peer = vec![[0.0f64; 6]; n / seg];
    let mut group = c.benchmark_group(format!("segmented/n={n}, segments={}", n / seg));
    group.throughput(Throughput::Elements(n as u64));
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(3));
    group.sample_size(30);
    group.bench_function("index order, one sum per output", |b| {
        b.iter(|| index_order(black_box(&results), &qty, &offsets, &mut peer))
    });
    group.bench_function("sum_by_segment", |b| {
        b.iter(|| sum_by_segment(&BsCols::from(black_box(&results)), &qty, &offsets, &mut sums).unwrap())
    });
    group.bench_function("price_batch (Black-Scholes + Greeks, for scale)", |b| {
        b.iter(|| black_box(price_batch(black_box(&batch)).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, bench_segmented);
criterion_main!(benches);
