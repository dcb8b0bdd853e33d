//! Black-Scholes price + 5 Greeks, single thread, one group per ISA this CPU has, at
//! n = 4096 (inputs and outputs, 48 KiB, stay in L1/L2) and n = 1 Mi (48 MiB: streams from
//! memory). Throughput is in elements, i.e. options per second on one core.
//!
//! Run: `cargo bench -p gmprt-kernels --bench black_scholes` (add `-- avx512` to filter).
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use gmprt_kernels::black_scholes::{price_greeks_isa, synthetic_chain, BsBatch, BsResults};
use gmprt_kernels::Isa;
use std::time::Duration;

fn bench_black_scholes(c: &mut Criterion) {
    for &n in &[4096usize, 1 << 20] {
        let batch = BsBatch::from_contracts(&synthetic_chain(n, 42));
        let mut out = BsResults::zeroed(n);
        let mut group = c.benchmark_group(format!("black_scholes/n={n}"));
        group.throughput(Throughput::Elements(n as u64));
        group.warm_up_time(Duration::from_millis(500));
        group.measurement_time(Duration::from_secs(if n > 4096 { 4 } else { 2 }));
        if n > 4096 {
            group.sample_size(20);
        }
        for isa in Isa::available() {
            group.bench_with_input(BenchmarkId::from_parameter(isa.name()), &isa, |b, &isa| {
                b.iter(|| {
                    price_greeks_isa(isa, black_box(&batch.as_in()), &mut out.as_out()).unwrap();
                    black_box(&out.price);
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench_black_scholes);
criterion_main!(benches);
