//! The simulated device: CPU compute, every phase paced to a hand-made profile's prediction.
//! Deterministic: the only waits are the simulated device's own pacing.
use gmprt_offload::model::{
    CpuFit, DeviceProfile, KernelProfile, LinFit, ProfileSource, Size, TransferProfile,
};
use gmprt_offload::runtime::{spawn, Runtime};
use gmprt_offload::{Batcher, BatcherConfig, Device, DeviceKind, Saxpy, Side};
use std::time::Duration;

/// H2D: 4 ms + 1 ns/B; D2H: 3 ms + 1 ns/B; launch 1 ms; saxpy kernel 4 µs/item.
fn profile() -> DeviceProfile {
    let transfer = |lat: f64| TransferProfile {
        pinned: LinFit::known(lat, 1e-9),
        pageable: LinFit::known(lat, 2e-9),
        pinned_samples: vec![],
        pageable_samples: vec![],
    };
    DeviceProfile {
        device: "test GPU".into(),
        kind: "published".into(),
        driver: "-".into(),
        date: "2025-01-01".into(),
        cpu: "test CPU".into(),
        procs: 1,
        source: ProfileSource::Published { citation: "made up for the test".into() },
        launch_enqueue: 1e-4,
        launch_sync: 1e-3,
        h2d: transfer(4e-3),
        d2h: transfer(3e-3),
        kernels: vec![KernelProfile {
            name: "saxpy".into(),
            unit: "elements".into(),
            size: Size::Items { in_bytes: 8.0, out_bytes: 4.0, out_fixed: 0.0 },
            device: LinFit::known(0.0, 4e-6),
            device_samples: vec![],
            cpu: vec![CpuFit { procs: 1, fit: LinFit::known(0.0, 1e-9), samples: vec![] }],
        }],
    }
}

/// Predicted (h2d, kernel, d2h) for saxpy over `n` items.
fn predicted(n: usize) -> (Duration, Duration, Duration) {
    let s = |x: f64| Duration::from_secs_f64(x);
    (s(4e-3 + 8.0 * n as f64 * 1e-9), s(1e-3 + 4e-6 * n as f64), s(3e-3 + 4.0 * n as f64 * 1e-9))
}

/// `got` is at least `want` (1 µs rounding allowed) and within 5 % + 300 µs above it.
fn paced(what: &str, got: Duration, want: Duration) {
    let (g, w) = (got.as_secs_f64(), want.as_secs_f64());
    assert!(g >= w - 1e-6, "{what}: {got:?} shorter than predicted {want:?}");
    assert!(g <= w * 1.05 + 3e-4, "{what}: {got:?} much longer than predicted {want:?}");
}

fn saxpy_input(n: usize) -> Vec<u32> {
    let mut w = vec![0u32; 2 * n];
    for i in 0..n {
        w[i] = (i as f32).to_bits();
        w[n + i] = 1.0f32.to_bits();
    }
    w
}

#[test]
fn run_bulk_is_paced_to_the_profile_and_computes() {
    let d = Device::simulated(profile());
    assert_eq!(d.kind(), DeviceKind::Simulated);
    assert_eq!(d.kind_name(), "simulated");
    let n = 1000;
    let (out, t) = d.run_bulk(&Saxpy { a: 2.0 }, n, &saxpy_input(n), 2 * n, n, false).unwrap();
    assert_eq!(f32::from_bits(out[10]), 21.0);
    let (h2d, kernel, d2h) = predicted(n);
    paced("h2d", t.h2d, h2d);
    paced("kernel", t.kernel, kernel);
    paced("d2h", t.d2h, d2h);
    // Resident: the kernel alone.
    let (_, r) = d.run_bulk(&Saxpy { a: 2.0 }, n, &saxpy_input(n), 2 * n, n, true).unwrap();
    assert_eq!((r.h2d, r.d2h), (Duration::ZERO, Duration::ZERO));
    paced("resident kernel", r.kernel, kernel);
}

#[test]
fn describe_says_simulated_from_the_profile() {
    let d = Device::simulated(profile());
    let text = d.describe();
    assert!(text.contains("simulated from"), "{text}");
    assert!(text.contains("saxpy"), "{text}");
    assert!(text.lines().all(|l| l.contains("simulated from")), "{text}");
}

#[test]
fn batcher_on_a_simulated_device_carries_paced_times() {
    let rt = Runtime::builder().procs(2).build().unwrap();
    let d = Device::simulated(profile());
    let cfg =
        BatcherConfig { max_batch: 64, max_delay: Duration::from_millis(1), ..BatcherConfig::default() };
    let b = Batcher::new(Saxpy { a: 2.0 }, &d, cfg).unwrap();
    let b2 = b.clone();
    let ys: Vec<f32> = rt.block_on(async move {
        let hs: Vec<_> = (0..200)
            .map(|i| {
                let b = b2.clone();
                spawn(async move { b.submit((i as f32, 1.0)).await })
            })
            .collect();
        let mut ys = Vec::new();
        for h in hs {
            ys.push(h.await.unwrap().unwrap());
        }
        ys
    });
    for (i, y) in ys.iter().enumerate() {
        assert_eq!(*y, 2.0 * i as f32 + 1.0);
    }
    let tl = b.timelines();
    assert_eq!(tl.iter().map(|t| t.n).sum::<usize>(), 200);
    for t in &tl {
        assert_eq!(t.device, DeviceKind::Simulated);
        assert_eq!(t.placement, Side::Gpu);
        assert!(t.launched && t.ok);
        let (h2d, kernel, d2h) = predicted(t.n);
        paced("batch h2d", t.h2d, h2d);
        paced("batch kernel", t.kernel, kernel);
        paced("batch d2h", t.d2h, d2h);
    }
    assert!(b.report().to_string().contains("simulated from"));
}

#[test]
fn simulated_choice_with_a_bad_profile_path_names_the_path() {
    // `from_choice` reads GMPRT_PROFILE; this is the only test in this binary that sets it.
    std::env::set_var(gmprt_offload::PROFILE_ENV, "/nonexistent/gmprt-profile.json");
    let r = Device::from_choice(Some("simulated"));
    std::env::remove_var(gmprt_offload::PROFILE_ENV);
    match r {
        Err(e) => assert!(e.to_string().contains("/nonexistent/gmprt-profile.json"), "{e}"),
        Ok(d) => panic!("loaded a missing profile: {d:?}"),
    }
}
