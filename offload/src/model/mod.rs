//! The cost model: placement is a cost decision, not a default.
//!
//! A leaf: fits, profiles and predictions only — nothing here runs a device or the runtime.
//! Measuring a profile is [`crate::calibrate`]'s job.
//!
//! * [`fit`] — least-squares `t = intercept + slope · x` fits, one per regime (up to four),
//!   with their raw samples;
//! * [`profile`] — a [`DeviceProfile`]: what [`calibrate`](crate::calibrate::calibrate())
//!   measured (or published figures, labelled so), saved to and loaded from JSON; which
//!   profile kernel prices a job ([`profile_kernel_name`], [`DeviceProfile::job_kernel`]);
//! * [`cost`] — [`CostModel::predict`] (a per-phase breakdown and the verdict: one batch's
//!   latency), [`CostModel::predict_pipeline`] (that latency and the steady-state time per
//!   batch with `in_flight` slots overlapping copies and kernels) and
//!   [`CostModel::crossover`] (in [`crossover`]: the batch size n* from which the GPU wins, or
//!   `Never` with the reason in numbers), and [`CostModel::explain`] (in `explain.rs`: all of
//!   it in plain words);
//! * [`network`] — a [`NetworkLink`] between two ranks (latency + bandwidth, measured by a
//!   ping-pong or published) and [`NetworkLink::scatter_crossover`], the batch size from which
//!   scattering a batch to other ranks pays: the network's crossover beside the PCIe one.
pub mod cost;
pub mod crossover;
mod explain;
pub mod fit;
pub mod network;
pub mod profile;
pub(crate) mod units;

pub use cost::{Bound, Breakdown, CostModel, Pipeline, Residency, Verdict};
pub use crossover::Crossover;
pub use fit::{LinFit, Regime, Sample};
pub use network::{ItemBytes, LinkSource, NetworkLink, PingPong, Scatter};
pub(crate) use profile::duration;
pub use profile::{
    profile_kernel_name, sgemm_kernel_name, CpuFit, CpuTiming, DeviceProfile, KernelProfile, LaunchRoundTrip,
    MappedFit, ProfileSource, Size, TransferProfile, DEVICE_COPY,
};
