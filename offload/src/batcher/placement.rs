//! [`Placement`]: where a [`Batcher`](super::Batcher) runs each closed batch — on its device,
//! on the CPU, or wherever a [`CostModel`] predicts it is faster.
//!
//! # Why the runtime never moves a task by itself
//!
//! A gmprt task is a future polled on a P; it has no representation a GPU could run. Moving
//! its *compute* to a GPU takes three things only the programmer can license: a kernel for
//! the work (a [`BatchKernel`](crate::BatchKernel)), batching (one launch must amortise its
//! fixed cost over many items, which means making items wait for each other), and a cost
//! decision (copies over PCIe and that wait may cost more than computing on the CPU). So
//! placement is a field the programmer sets on the Batcher they built, the default is the
//! device they gave it ([`Placement::Gpu`]), and [`Placement::Auto`] — letting a calibrated
//! model decide per batch — is opt-in, never a default.
//!
//! # What "CPU" means here
//!
//! A batch placed on the CPU runs on **the runtime's Ps** when the Batcher has a runtime
//! (`BatcherConfig::runtime`, else the runtime `Batcher::new` was called from): its items are
//! cut into chunks (about four per P, for balance), and `parallel_for` runs each chunk as a
//! small batch of its own — [`stage`](crate::BatchKernel::stage) into chunk-local words,
//! [`Job::run_host`](crate::Job::run_host), [`gather`](crate::BatchKernel::gather) — so any
//! kernel splits without knowing it (the word layout stays the kernel's business). Without a
//! runtime it runs `run_host` on the slot's worker thread (one core), over the batch staged
//! into that thread's own host buffers. Either way the slot is not used: its input staging is
//! write-combined pinned memory on CUDA, which the host must never read.
//! The model's CPU prediction is taken at that P count. Nothing is copied to or from the
//! device, and the device is not touched at all.
//!
//! The model's CPU times are calibrated the way a CPU-placed batch runs (`calibrate::CpuKernels`,
//! "as called"): from a thread outside the runtime once its Ps have parked, so the fit's fixed
//! cost holds the M wake-up a batch pays (5–100 µs on the dev VM when its vCPU had halted), on
//! operands evicted from the caches. Profiles measured before issue 27 timed the CPU from a
//! task with warm buffers (`DeviceProfile::cpu_timing` says which): with those, small CPU
//! batches take longer than predicted by about that wake-up, and the logged model error shows it.
use crate::error::OffloadError;
use crate::model::{duration as secs, profile_kernel_name};
use crate::model::{CostModel, Residency, Size};
use crate::timeline::Side;
use std::time::Duration;

/// Where a [`Batcher`](super::Batcher) runs each batch (see the module docs).
///
/// # Examples
///
/// ```
/// use gmprt_offload::model::{CostModel, DeviceProfile};
/// use gmprt_offload::{Batcher, BatcherConfig, Device, Placement, Saxpy};
/// use std::sync::Arc;
///
/// assert_eq!(Placement::default(), Placement::Gpu); // the device the programmer chose
/// // Auto is opt-in, and needs a model that can price the kernel.
/// let auto = BatcherConfig { placement: Placement::Auto, ..BatcherConfig::default() };
/// let e = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), auto.clone()).unwrap_err();
/// assert!(e.to_string().contains("placement Auto needs a cost model"), "{e}");
/// let mut profile = DeviceProfile::published_h100();
/// profile.kernels.retain(|k| k.name != "saxpy");
/// let cfg = BatcherConfig { model: Some(Arc::new(CostModel::new(profile))), ..auto };
/// let e = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), cfg).unwrap_err();
/// assert!(e.to_string().contains("profile has no kernel `saxpy`"), "{e}");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Placement {
    /// On the CPU: the runtime's Ps (or the slot's worker thread when the Batcher has no
    /// runtime); the device is never used.
    Cpu,
    /// The Batcher's device, every batch (the default: the device the programmer chose).
    #[default]
    Gpu,
    /// Per batch, the side the configured [`CostModel`] predicts faster (device end to end
    /// with inputs on the host, vs the CPU on the Ps a CPU batch would use); every decision is
    /// logged in the timelines. Requires `BatcherConfig::model`.
    Auto,
}

/// Checks that `model` can price `kernel` (by [`profile_kernel_name`]); `Err(Config)` naming
/// the profile's kernels otherwise.
pub(super) fn check_model(model: &CostModel, kernel: &str) -> Result<(), OffloadError> {
    if model.profile.job_kernel(kernel).is_some() {
        return Ok(());
    }
    let known: Vec<&str> = model.profile.kernels.iter().map(|k| k.name.as_str()).collect();
    Err(OffloadError::Config(format!(
        "Placement::Auto: the cost model's profile has no kernel `{}` (for job `{kernel}`); it has: {}",
        profile_kernel_name(kernel),
        known.join(", ")
    )))
}

/// The size the model prices a batch of `n` items of `kernel` (`out_words` output words per
/// item) at: `n` for a kernel of independent items; for one the profile sizes as a square
/// matrix (`Size::MatrixN`: a batch of small SGEMMs priced by the profile's `sgemm`), the `N`
/// of one N×N×N product with the batch's flops, `∛(n · per^{3/2})` with `per = out_words`
/// (each item's C has `per = m²` elements and costs `2m³` flops, as the simulated device
/// paces it). Passing `n` itself priced 1,000 8×8 products as one 1000³ SGEMM.
pub(super) fn model_size(model: &CostModel, kernel: &str, n: usize, out_words: usize) -> f64 {
    match model.profile.job_kernel(kernel).map(|k| k.size) {
        Some(Size::MatrixN) => (n as f64 * (out_words as f64).powf(1.5)).cbrt(),
        _ => n as f64,
    }
}

/// The model's decision for a batch of `n` of `kernel` when a CPU batch would run on `procs`
/// Ps and the device has `in_flight` slots: the faster side (ties go to the device) with the
/// predicted device latency and CPU time.
///
/// The device side is judged by its steady-state time per batch with `in_flight` slots
/// ([`CostModel::predict_pipeline`]): a Batcher under load keeps its slots busy, so one
/// batch's copies overlap another's kernel, and what a batch costs the stream is the
/// pipeline's time per batch, not its latency (the same with one slot). The device time
/// returned (and logged) is still the batch's latency, which is what its measured phases
/// (H2D + kernel + D2H) are compared with.
pub(super) fn decide(
    model: &CostModel,
    kernel: &str,
    n: usize,
    out_words: usize,
    procs: usize,
    in_flight: usize,
) -> Result<(Side, Duration, Duration), OffloadError> {
    let name = profile_kernel_name(kernel);
    let size = model_size(model, kernel, n, out_words);
    let pipe = model.predict_pipeline(name, size, in_flight.max(1), Residency::Host)?;
    let cpu = model.cpu_time(name, size, procs)?;
    let side = if cpu < pipe.per_batch { Side::Cpu } else { Side::Gpu };
    Ok((side, secs(pipe.latency), secs(cpu)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DeviceProfile;

    /// A batch of 1,000 8×8 products is priced as one SGEMM of the same flops (N = 80), not
    /// as a 1000³ one; item kernels are priced at their item count.
    #[test]
    fn batched_sgemm_is_priced_by_its_flops() {
        let model = CostModel::new(DeviceProfile::published_h100());
        let n_eq = model_size(&model, "sgemm_batched", 1000, 64);
        assert!((n_eq - 80.0).abs() < 1e-9, "{n_eq}");
        assert_eq!(model_size(&model, "saxpy", 1000, 1), 1000.0);
        let (_, gpu, cpu) = decide(&model, "sgemm_batched", 1000, 64, 2, 2).unwrap();
        let direct = model.cpu_time("sgemm", 80.0, 2).unwrap();
        assert_eq!(cpu, secs(direct));
        assert!(gpu > Duration::ZERO);
    }
}
