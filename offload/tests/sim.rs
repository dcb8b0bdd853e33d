//! The simulated device: CPU compute, every phase paced to a hand-made profile's prediction.
//!
//! No assertion here depends on how busy the machine is: each phase's pacing *target* (what
//! the simulated device recorded it paced the phase to, `SimBackend::pacings`) must equal the
//! cost model's prediction exactly, and each measured phase is checked only against its own
//! target (`measured ≥ target`: a sleep or spin never ends early). There is no upper bound on
//! a measured phase — a loaded machine can stretch any of them (a D2H paced to 3.00 ms was
//! measured at 3.80 ms under load) — and the only waits are the device's own pacing.
mod common;
use common::{saxpy_profile, transfer};
use gmprt_offload::model::{CostModel, DeviceProfile, LinFit, Residency};
use gmprt_offload::runtime::{spawn, Runtime};
use gmprt_offload::sim::Pacing;
use gmprt_offload::{Batcher, BatcherConfig, Device, DeviceKind, PhaseTimes, Phases, Saxpy, Side};
use std::time::Duration;

/// H2D: 4 ms + 1 ns/B; D2H: 3 ms + 1 ns/B; launch 1 ms; saxpy kernel 4 µs/item.
fn profile() -> DeviceProfile {
    saxpy_profile(
        (1e-4, 1e-3),
        transfer(4e-3, 1e-9, 2e-9),
        transfer(3e-3, 1e-9, 2e-9),
        LinFit::known(0.0, 4e-6),
        1e-9,
    )
}

/// The cost model's (h2d, launch + kernel, d2h) for saxpy over `n` items with inputs on the
/// host: what the simulated device must pace each phase to.
fn predicted(n: usize) -> PhaseTimes {
    let b = CostModel::new(profile()).predict("saxpy", n as f64, Residency::Host, 0.0).unwrap();
    let s = Duration::from_secs_f64;
    let p = PhaseTimes { h2d: s(b.h2d), kernel: s(b.launch + b.kernel_time), d2h: s(b.d2h) };
    // The same numbers by hand from the profile above (to the nanosecond Duration keeps), so
    // that the model and the device cannot agree on a wrong figure.
    // Launch: launch_sync − launch_enqueue (the kernel fit contains the enqueue part).
    let by_hand = [4e-3 + 8e-9 * n as f64, (1e-3 - 1e-4) + 4e-6 * n as f64, 3e-3 + 4e-9 * n as f64];
    for (got, want) in [p.h2d, p.kernel, p.d2h].into_iter().zip(by_hand) {
        assert!((got.as_secs_f64() - want).abs() < 2e-9, "model {got:?}, by hand {want} s");
    }
    p
}

/// `p` was a saxpy run of `n` items, paced to exactly the model's predictions of the phases in
/// `ran` (the others zero), and no measured phase ended before its target.
#[track_caller]
fn paced_to_the_model(p: &Pacing, n: usize, ran: [bool; 3]) {
    assert_eq!((p.job, p.n), ("saxpy", n), "{p:?}");
    let want = predicted(n);
    let pick = |on: bool, d: Duration| if on { d } else { Duration::ZERO };
    let want = PhaseTimes {
        h2d: pick(ran[0], want.h2d),
        kernel: pick(ran[1], want.kernel),
        d2h: pick(ran[2], want.d2h),
    };
    assert_eq!(p.target, want, "pacing targets differ from the cost model's predictions: {p:?}");
    let m = &p.measured;
    for (what, got, target) in
        [("h2d", m.h2d, want.h2d), ("kernel", m.kernel, want.kernel), ("d2h", m.d2h, want.d2h)]
    {
        assert!(got >= target, "{what}: measured {got:?} is shorter than its pacing target {target:?}");
    }
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
    let sim = d.sim_backend().expect("a simulated device has a SimBackend");
    assert!(sim.pacings().is_empty());
    let n = 1000;
    let (out, t) = d.run_bulk(&Saxpy { a: 2.0 }, n, &saxpy_input(n), 2 * n, n, false).unwrap();
    assert_eq!(f32::from_bits(out[10]), 21.0);
    let log = sim.pacings();
    assert_eq!(log.len(), 1, "one slot run: {log:?}");
    assert_eq!((log[0].in_words, log[0].out_words), (2 * n, n));
    paced_to_the_model(&log[0], n, [true, true, true]);
    assert_eq!(log[0].measured, t, "run_bulk returns what the slot measured");
    // Resident: H2D, the kernel and D2H as three runs; run_bulk reports the kernel alone.
    let (_, r) = d.run_bulk(&Saxpy { a: 2.0 }, n, &saxpy_input(n), 2 * n, n, true).unwrap();
    assert_eq!((r.h2d, r.d2h), (Duration::ZERO, Duration::ZERO));
    let log = sim.pacings();
    assert_eq!(log.len(), 4, "{log:?}");
    paced_to_the_model(&log[1], n, [true, false, false]);
    paced_to_the_model(&log[2], n, [false, true, false]);
    paced_to_the_model(&log[3], n, [false, false, true]);
    assert_eq!(r.kernel, log[2].measured.kernel);
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
    // One slot run per batch, each paced to the model's prediction for its size, and each
    // batch's timeline carries exactly what its run measured.
    let mut runs = d.sim_backend().unwrap().pacings();
    assert_eq!(runs.len(), tl.len(), "{runs:?}");
    for p in &runs {
        assert_eq!((p.in_words, p.out_words), (2 * p.n, p.n), "{p:?}");
        paced_to_the_model(p, p.n, [true, true, true]);
    }
    for t in &tl {
        assert_eq!(t.device, DeviceKind::Simulated);
        assert_eq!(t.placement, Side::Gpu);
        assert!(t.launched && t.ok);
        let phases = PhaseTimes { h2d: t.h2d, kernel: t.kernel, d2h: t.d2h };
        let i = runs
            .iter()
            .position(|p| p.n == t.n && p.measured == phases)
            .unwrap_or_else(|| panic!("batch {} ({} items, {phases:?}) matches no paced run", t.batch, t.n));
        runs.swap_remove(i);
    }
    assert!(b.report().to_string().contains("simulated from"));
}

/// `from_choice` reads GMPRT_PROFILE. The test runs itself again as a child process with the
/// variable set in the child's environment: setting it here would change the environment while
/// this binary's other tests (and the libraries they load) may be reading it.
#[test]
fn simulated_choice_with_a_bad_profile_path_names_the_path() {
    const NAME: &str = "simulated_choice_with_a_bad_profile_path_names_the_path";
    const CHILD: &str = "GMPRT_TEST_SIM_CHILD";
    if std::env::var_os(CHILD).is_some() {
        match Device::from_choice(Some("simulated")) {
            Err(e) => assert!(e.to_string().contains("/nonexistent/gmprt-profile.json"), "{e}"),
            Ok(d) => panic!("loaded a missing profile: {d:?}"),
        }
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--exact", NAME, "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .env(gmprt_offload::PROFILE_ENV, "/nonexistent/gmprt-profile.json")
        .output()
        .expect("run this test binary as a child");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("1 passed"), "the child failed ({}):\n{text}", out.status);
}

#[test]
fn a_simulated_slot_computes_what_a_host_slot_computes_and_fails_alike() {
    let (host, sim) = (Device::host(), Device::simulated(profile()));
    let n = 257;
    let input: Vec<u32> = (0..2 * n).map(|i| ((i as f32).sin() * 1e3).to_bits()).collect();
    let job = Saxpy { a: -1.7 };
    let mut outs = Vec::new();
    let mut errors = Vec::new();
    for d in [&host, &sim] {
        let mut slot = d.backend().new_slot(2 * n, n).unwrap();
        slot.staging_in().copy_from_slice(&input);
        slot.run(&job, n, 2 * n, n, Phases::ALL).unwrap();
        outs.push(slot.staging_out().to_vec());
        // One word past the input capacity, then past the output capacity.
        for (items, i, o) in [(n, 2 * n + 1, n), (n + 1, 2 * n, n + 1)] {
            errors.push(slot.run(&job, items, i, o, Phases::ALL).unwrap_err().to_string());
        }
    }
    assert_eq!(outs[0], outs[1], "host and simulated slots differ");
    assert_eq!(f32::from_bits(outs[0][3]), -1.7 * f32::from_bits(input[3]) + f32::from_bits(input[n + 3]));
    assert_eq!(errors[..2], errors[2..], "over-capacity errors read differently");
    assert!(errors[0].contains("input words") && errors[1].contains("output words"), "{errors:?}");
    // The failed runs were not recorded as paced.
    assert_eq!(sim.sim_backend().unwrap().pacings().len(), 1);
}
