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
//! A batch placed on the CPU runs [`Job::run_host`](crate::Job::run_host) over the staged
//! batch **on the slot's worker thread, i.e. on one core**, outside the runtime's Ps: the
//! word layout of a batch is the kernel's business, so the Batcher cannot cut a batch into
//! chunks for `parallel_for` without a chunking API on the kernel (not provided yet). The
//! model's CPU prediction is therefore taken at one P (`cpu_time(kernel, n, 1)`). Nothing is
//! copied to or from the device, and the device is not touched at all.
use crate::error::OffloadError;
use crate::model::{CostModel, Residency};
use crate::sim::{find_kernel, profile_kernel_name, secs};
use crate::timeline::Side;
use std::time::Duration;

/// P count a CPU-placed batch runs on (the slot's worker thread).
pub(super) const CPU_PROCS: usize = 1;

/// Where a [`Batcher`](super::Batcher) runs each batch (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Placement {
    /// [`Job::run_host`](crate::Job::run_host) on the slot's worker thread (one core); the
    /// device is never used.
    Cpu,
    /// The Batcher's device, every batch (the default: the device the programmer chose).
    #[default]
    Gpu,
    /// Per batch, the side the configured [`CostModel`] predicts faster (device end to end
    /// with inputs on the host, vs the CPU on one core); every decision is logged in the
    /// timelines. Requires `BatcherConfig::model`.
    Auto,
}

/// Checks that `model` can price `kernel` (by [`profile_kernel_name`]); `Err(Config)` naming
/// the profile's kernels otherwise.
pub(super) fn check_model(model: &CostModel, kernel: &str) -> Result<(), OffloadError> {
    if find_kernel(&model.profile, kernel).is_some() {
        return Ok(());
    }
    let known: Vec<&str> = model.profile.kernels.iter().map(|k| k.name.as_str()).collect();
    Err(OffloadError::Config(format!(
        "Placement::Auto: the cost model's profile has no kernel `{}` (for job `{kernel}`); it has: {}",
        profile_kernel_name(kernel),
        known.join(", ")
    )))
}

/// The model's decision for a batch of `n` of `kernel`: the faster side (ties go to the
/// device) with the predicted device and CPU times.
pub(super) fn decide(
    model: &CostModel,
    kernel: &str,
    n: usize,
) -> Result<(Side, Duration, Duration), OffloadError> {
    let name = profile_kernel_name(kernel);
    let gpu = model.predict(name, n as f64, Residency::Host, 0.0)?.gpu_total;
    let cpu = model.cpu_time(name, n as f64, CPU_PROCS)?;
    let side = if cpu < gpu { Side::Cpu } else { Side::Gpu };
    Ok((side, secs(gpu), secs(cpu)))
}
