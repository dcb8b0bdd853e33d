//! The cost model: fits, profile JSON, published profiles, the fit quality of Host data,
//! verdicts derived from the profiles' own numbers, and a live Host calibration's shape.
//!
//! Fit quality is asserted on *recorded* Host data — `offload/profiles/host-2core-vm.json`, a
//! full Host calibration of the 2-core dev VM saved by `explain --device host --save-profile
//! …`, raw samples included — so the assertion is
//! deterministic: timed assertions on a shared, noisy machine would fail at random (this
//! project checks speed in benchmarks, never in timed unit tests). The live comparison of
//! predictions with fresh measurements is the error table of `cargo bench -p gmprt-offload
//! --bench model`. The live calibration below is checked for its shape only — every kernel,
//! P count and size present, and fits of the shape `LinFit::fit` gives for *any* samples
//! (`fits_have_their_shape_whatever_the_samples` checks that shape on arbitrary ones), so no
//! amount of load on the machine can break it.
//!
//! One test binary, one file per concern, with the shared items below: `fits.rs` (`LinFit`:
//! coefficients, cache regimes, noise, arbitrary samples), `profiles.rs` (JSON, published and
//! committed profiles, the recorded Host fits), `verdicts.rs` (crossovers and verdicts from the
//! profiles' numbers), `live.rs` (a live quick Host calibration, `CpuKernels`, `verify`).

use gmprt_offload::calibrate::{calibrate, CalibrateOptions, CpuKernels};
use gmprt_offload::model::fit::MAX_REGIMES;
use gmprt_offload::model::{
    CostModel, Crossover, DeviceProfile, LinFit, MappedFit, ProfileSource, Residency, Sample, Size, Verdict,
};
use gmprt_offload::Device;
use proptest::prelude::*;
use std::sync::OnceLock;

/// The recorded quick Host calibration (see the module doc).
const RECORDED_HOST: &str = include_str!("../../profiles/host-2core-vm.json");

/// Samples of `t = a + b·x` below `brk` and `a2 + b2·x` from it on, at x = 2^i.
fn two_speed(brk: f64, (a, b): (f64, f64), (a2, b2): (f64, f64)) -> Vec<Sample> {
    (10..24)
        .map(|i| {
            let x = f64::from(1u32 << i);
            Sample { x, secs: if x < brk { a + b * x } else { a2 + b2 * x } }
        })
        .collect()
}

/// The shape `LinFit::fit` gives `samples`, whatever they measured: finite, non-negative
/// coefficients (a slope of 0 included: the fitter clamps a run whose time falls with size to
/// a constant, and on a loaded machine a larger size can be measured faster than a smaller
/// one), at most `MAX_REGIMES` regimes whose breaks rise strictly and lie between the smallest
/// and largest size, a finite worst error that is the worst error over the samples — and the
/// fit is exactly what fitting `samples` gives (so nothing was fitted to other data).
#[track_caller]
fn assert_fit_shape(what: &str, fit: &LinFit, samples: &[Sample]) {
    let ok = |c: f64| c.is_finite() && c >= 0.0;
    assert!(ok(fit.intercept) && ok(fit.slope) && ok(fit.max_rel_err), "{what}: {fit:?}");
    assert!(fit.below.len() < MAX_REGIMES, "{what}: {} regimes: {fit:?}", fit.below.len() + 1);
    let (lo, hi) =
        samples.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), s| (l.min(s.x), h.max(s.x)));
    let mut prev = lo;
    for r in &fit.below {
        assert!(ok(r.intercept) && ok(r.slope), "{what}: regime {r:?}");
        assert!(r.upto > prev && r.upto < hi, "{what}: break {} not in ({prev}, {hi}): {fit:?}", r.upto);
        prev = r.upto;
    }
    let worst = samples
        .iter()
        .filter(|s| s.secs > 0.0)
        .map(|s| (fit.eval(s.x) - s.secs).abs() / s.secs)
        .fold(0.0, f64::max);
    assert!(
        (fit.max_rel_err - worst).abs() <= 1e-9 * worst.max(1.0),
        "{what}: max_rel_err {fit:?} vs {worst}"
    );
    assert_eq!(*fit, LinFit::fit(samples), "{what}: the fit is not the fit of its samples");
}

mod fits;
mod live;
mod profiles;
mod verdicts;
