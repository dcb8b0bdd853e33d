//! SGEMM rungs at N = 512 (and 1024 for the fast ones), throughput in flops (2·N³ elements per
//! iteration, so criterion's "elem/s" reads as flop/s): `sgemm_rows` per ISA (one thread) and
//! `sgemm_crate` on 1 and 2 threads. `sgemm_naive` at N = 256 only (it is ~100× slower).
//!
//! Run: `cargo bench -p gmprt-kernels --bench sgemm`.
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use gmprt_kernels::sgemm::{sgemm_crate, sgemm_naive, sgemm_rows_isa};
use gmprt_kernels::Isa;
use std::time::Duration;

fn bench_sgemm(c: &mut Criterion) {
    for &n in &[256usize, 512, 1024] {
        let a: Vec<f32> = (0..n * n).map(|i| ((i * 7919) % 1000) as f32 * 1e-3).collect();
        let b: Vec<f32> = (0..n * n).map(|i| ((i * 104_729) % 1000) as f32 * 1e-3).collect();
        let mut out = vec![0.0f32; n * n];
        let mut group = c.benchmark_group(format!("sgemm/n={n}"));
        group.throughput(Throughput::Elements(2 * (n as u64).pow(3)));
        group.warm_up_time(Duration::from_millis(300));
        group.measurement_time(Duration::from_secs(2));
        group.sample_size(10);
        if n == 256 {
            group.bench_function("naive", |bch| {
                bch.iter(|| sgemm_naive(n, n, n, black_box(&a), &b, &mut out).unwrap())
            });
        }
        for isa in Isa::available() {
            group.bench_with_input(BenchmarkId::new("rows", isa.name()), &isa, |bch, &isa| {
                bch.iter(|| sgemm_rows_isa(isa, n, n, n, black_box(&a), &b, 0..n, &mut out).unwrap())
            });
        }
        for threads in [1usize, 2] {
            group.bench_with_input(BenchmarkId::new("crate", threads), &threads, |bch, &t| {
                bch.iter(|| sgemm_crate(n, n, n, black_box(&a), &b, &mut out, t).unwrap())
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench_sgemm);
criterion_main!(benches);
