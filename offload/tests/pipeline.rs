//! The cost model's pipeline prediction (`CostModel::predict_pipeline`) against its own
//! definition, the published profiles, and a Batcher on the simulated device.
//!
//! Deterministic on a loaded machine: the simulated device records what it paced each phase
//! *to* (`SimBackend::pacings`), and those targets must equal the model's phases exactly; the
//! only check on a measured time is that a paced phase never ends before its own target. How
//! long a run of batches takes against the predicted time per batch is a figure, not a test:
//! `GMPRT_DEVICE=simulated cargo bench -p gmprt-offload --bench model` (its pipeline table).
mod common;
use common::{saxpy_profile, transfer};
use gmprt_offload::model::{Bound, CostModel, CpuFit, DeviceProfile, LinFit, Residency};
use gmprt_offload::runtime::{spawn, Runtime};
use gmprt_offload::sim::Pacing;
use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
use std::time::Duration;

/// H2D 0.5 ms + 1 ns/B, D2H 0.3 ms + 1 ns/B, launch 20 µs on the kernel clock and 100 µs
/// launch + sync, SAXPY 20 µs + 4 µs per element: a batch of 256 has H2D 0.50 ms, kernel
/// phase 1.12 ms (0.08 ms launch overhead + 1.04 ms), D2H 0.30 ms — the kernel dominates.
fn profile() -> DeviceProfile {
    saxpy_profile(
        (2e-5, 1e-4),
        transfer(5e-4, 1e-9, 2e-9),
        transfer(3e-4, 1e-9, 2e-9),
        LinFit::known(2e-5, 4e-6),
        1e-9,
    )
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 + 1e-12 * b.abs()
}

#[test]
fn launch_latency_is_counted_once() {
    let m = CostModel::new(profile());
    let b = m.predict("saxpy", 256.0, Residency::Host, 0.0).unwrap();
    // The kernel fit's intercept (20 µs) is the launch on the kernel clock: only the rest of
    // launch + sync (100 − 20 = 80 µs) is added.
    assert!(close(b.launch, 8e-5), "{b:?}");
    assert!(close(b.kernel_time, 2e-5 + 4e-6 * 256.0), "{b:?}");
    assert!(close(b.gpu_total, b.launch + b.h2d + b.kernel_time + b.d2h), "{b:?}");
    // Published figures: 4 µs enqueue inside the kernel intercept, 8 µs launch + sync, so a
    // launch costs 8 µs in all, not 12.
    let h100 = CostModel::new(DeviceProfile::published_h100());
    let b = h100.predict("saxpy", 1.0, Residency::Device, 0.0).unwrap();
    assert!((b.launch + b.kernel_time - 8e-6).abs() < 1e-9, "{b:?}");
    // A profile whose enqueue exceeds launch + sync adds no negative launch.
    let mut p = profile();
    p.launch_enqueue = 1e-3;
    assert_eq!(p.launch_overhead(), 0.0);
}

#[test]
fn pipeline_is_latency_with_one_slot_and_the_largest_phase_with_many() {
    let m = CostModel::new(profile());
    for n in [1.0, 16.0, 256.0, 4096.0, 1e6] {
        for res in [Residency::Host, Residency::Device] {
            let b = m.predict("saxpy", n, res, 0.0).unwrap();
            let one = m.predict_pipeline("saxpy", n, 1, res).unwrap();
            assert!(close(one.latency, b.gpu_total), "{one:?} vs {b:?}");
            assert!(close(one.per_batch, one.latency), "one slot overlaps nothing: {one:?}");
            assert_eq!(one.bound_by, Bound::Slots);
            assert_eq!(one.host, 0.0, "staging/scatter are assumed free (not in the profile)");
            let mut last = one.per_batch;
            for k in [2, 3, 4, 8, 64] {
                let p = m.predict_pipeline("saxpy", n, k, res).unwrap();
                assert!(close(p.latency, one.latency), "latency does not depend on the slots: {p:?}");
                let engines = [p.h2d, p.launch + p.kernel_time, p.d2h];
                let want = engines.iter().copied().fold(p.latency / k as f64, f64::max);
                assert!(close(p.per_batch, want), "{p:?}");
                assert!(p.per_batch <= last * (1.0 + 1e-12), "more slots never slower: {p:?}");
                assert!(p.per_batch >= engines.iter().copied().fold(0.0, f64::max));
                let term = match p.bound_by {
                    Bound::Slots => p.latency / k as f64,
                    Bound::H2d => p.h2d,
                    Bound::Kernel => p.launch + p.kernel_time,
                    Bound::D2h => p.d2h,
                };
                assert!(close(term, p.per_batch), "bound_by names the largest term: {p:?}");
                assert!(close(p.throughput(), n / p.per_batch));
                last = p.per_batch;
            }
        }
    }
    // At 256 elements: one slot 1.92 ms; two slots are bound by the kernel (1.12 ms > 0.96).
    let two = m.predict_pipeline("saxpy", 256.0, 2, Residency::Host).unwrap();
    assert_eq!(two.bound_by, Bound::Kernel, "{two:?}");
    assert!(close(two.per_batch, 8e-5 + 2e-5 + 4e-6 * 256.0), "{two:?}");
    assert!(m.predict_pipeline("saxpy", 256.0, 0, Residency::Host).is_err(), "in_flight 0 is refused");
    assert!(m.predict_pipeline("nope", 256.0, 2, Residency::Host).is_err());
}

#[test]
fn published_black_scholes_streams_at_the_pcie_rate() {
    // 24 B up and 24 B down per option at 55 GB/s each way, against HBM-speed pricing: with
    // two slots a large batch is bound by a copy engine, and costs about half its latency.
    let m = CostModel::new(DeviceProfile::published_h100());
    let n = 4e6;
    let p = m.predict_pipeline("black_scholes", n, 2, Residency::Host).unwrap();
    assert!(matches!(p.bound_by, Bound::H2d | Bound::D2h | Bound::Slots), "{p:?}");
    assert!(p.per_batch < 0.6 * p.latency, "{p:?}");
    let text = m.explain(&m.predict("black_scholes", n, Residency::Host, 0.0).unwrap());
    assert!(text.contains("Pipeline, 1 in flight"), "{text}");
    assert!(text.contains("Pipeline, 2 in flight"), "{text}");
    assert!(text.contains("steady state"), "{text}");
}

/// Runs `items` SAXPY items through a Batcher of `in_flight` slots (batches of up to 256) on a
/// simulated device; returns the pacing record and the wall time of the whole run.
fn run(in_flight: usize, items: usize) -> Vec<Pacing> {
    let rt = Runtime::builder().procs(2).build().unwrap();
    let d = Device::simulated(profile());
    let cfg = BatcherConfig {
        max_batch: 256,
        max_delay: Duration::from_millis(2),
        in_flight,
        ..BatcherConfig::default()
    };
    let b = Batcher::new(Saxpy { a: 2.0 }, &d, cfg).unwrap();
    let b2 = b.clone();
    let ys: Vec<f32> = rt.block_on(async move {
        let hs: Vec<_> = (0..items)
            .map(|i| {
                let b = b2.clone();
                spawn(async move { b.submit((i as f32, 1.0)).await })
            })
            .collect();
        let mut ys = Vec::with_capacity(items);
        for h in hs {
            ys.push(h.await.unwrap().unwrap());
        }
        ys
    });
    for (i, y) in ys.iter().enumerate() {
        assert_eq!(*y, 2.0 * i as f32 + 1.0);
    }
    let runs = d.sim_backend().unwrap().pacings();
    assert_eq!(runs.iter().map(|p| p.n).sum::<usize>(), items, "every item in one paced run");
    runs
}

#[test]
fn simulated_batcher_paces_the_pipeline_the_model_predicts() {
    let m = CostModel::new(profile());
    let items = 4096;
    for in_flight in [1, 2] {
        let runs = run(in_flight, items);
        for p in &runs {
            // Each run was paced to exactly the model's phases for its size.
            let pl = m.predict_pipeline("saxpy", p.n as f64, in_flight, Residency::Host).unwrap();
            let s = Duration::from_secs_f64;
            assert_eq!(p.target.h2d, s(pl.h2d), "{p:?} vs {pl:?}");
            assert_eq!(p.target.kernel, s(pl.launch + pl.kernel_time), "{p:?} vs {pl:?}");
            assert_eq!(p.target.d2h, s(pl.d2h), "{p:?} vs {pl:?}");
            // ... and the model's per-batch figure is the pipeline of those targets.
            let t = [p.target.h2d, p.target.kernel, p.target.d2h].map(|d| d.as_secs_f64());
            let cycle: f64 = t.iter().sum();
            assert!((cycle - pl.latency).abs() < 3e-9, "{p:?} vs {pl:?}");
            let structural = t.iter().copied().fold(cycle / in_flight as f64, f64::max);
            assert!((structural - pl.per_batch).abs() < 3e-9, "{p:?} vs {pl:?}");
            for (got, target) in [(p.measured.h2d, p.target.h2d), (p.measured.kernel, p.target.kernel)] {
                assert!(got >= target, "a paced phase ended early: {p:?}");
            }
        }
        // Full batches of 256: the model's prediction for the run is (batches) × per_batch.
        let full = runs.iter().filter(|p| p.n == 256).count();
        let pl = m.predict_pipeline("saxpy", 256.0, in_flight, Residency::Host).unwrap();
        let want = if in_flight == 1 { Bound::Slots } else { Bound::Kernel };
        assert_eq!(pl.bound_by, want, "{pl:?}");
        eprintln!(
            "in_flight {in_flight}: {} runs ({full} full), model {:.3} ms per full batch ({}), latency {:.3} ms",
            runs.len(),
            pl.per_batch * 1e3,
            pl.bound_by,
            pl.latency * 1e3
        );
    }
}

#[test]
fn auto_placement_judges_the_device_by_its_pipeline() {
    // CPU 5.9 µs per item on 1 P: a batch of 256 takes 1.5 ms on the CPU, between the device's
    // latency (1.93 ms) and its time per batch with two slots (1.12 ms). One slot: the CPU is
    // faster; two: the device, whose copies then overlap the other slot's kernel.
    let mut p = profile();
    p.kernels[0].cpu = vec![CpuFit { procs: 1, fit: LinFit::known(0.0, 1.5e-3 / 256.0), samples: vec![] }];
    let model = std::sync::Arc::new(CostModel::new(p.clone()));
    let cpu = model.cpu_time("saxpy", 256.0, 1).unwrap();
    let one = model.predict_pipeline("saxpy", 256.0, 1, Residency::Host).unwrap();
    let two = model.predict_pipeline("saxpy", 256.0, 2, Residency::Host).unwrap();
    assert!(two.per_batch < cpu && cpu < one.latency, "{cpu} {one:?} {two:?}");
    let rt = Runtime::builder().procs(2).build().unwrap();
    for in_flight in [1, 2] {
        let d = Device::simulated(p.clone());
        let cfg = BatcherConfig {
            max_batch: 256,
            max_delay: Duration::from_millis(2),
            in_flight,
            placement: gmprt_offload::Placement::Auto,
            model: Some(model.clone()),
            ..BatcherConfig::default()
        };
        let b = Batcher::new(Saxpy { a: 2.0 }, &d, cfg).unwrap();
        let b2 = b.clone();
        let ys: Vec<f32> = rt.block_on(async move {
            let hs: Vec<_> = (0..1024)
                .map(|i| {
                    let b = b2.clone();
                    spawn(async move { b.submit((i as f32, 1.0)).await })
                })
                .collect();
            let mut ys = vec![];
            for h in hs {
                ys.push(h.await.unwrap().unwrap());
            }
            ys
        });
        assert!(ys.iter().enumerate().all(|(i, y)| *y == 2.0 * i as f32 + 1.0));
        let decisions = b.decisions();
        assert!(!decisions.is_empty());
        for dec in &decisions {
            let pl = model.predict_pipeline("saxpy", dec.n as f64, in_flight, Residency::Host).unwrap();
            let cpu = model.cpu_time("saxpy", dec.n as f64, 1).unwrap();
            let want = if cpu < pl.per_batch { gmprt_offload::Side::Cpu } else { gmprt_offload::Side::Gpu };
            assert_eq!(dec.chose, want, "in_flight {in_flight}: {dec:?} vs {pl:?}, CPU {cpu}");
            // What is logged for the device is the batch's latency (what its phases measure).
            assert_eq!(dec.predicted_gpu, Duration::from_secs_f64(pl.latency), "{dec:?}");
        }
        let full: Vec<_> = decisions.iter().filter(|d| d.n == 256).map(|d| d.chose).collect();
        eprintln!("in_flight {in_flight}: full batches placed {full:?}");
    }
}
