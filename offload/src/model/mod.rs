//! The cost model: placement is a cost decision, not a default.
//!
//! * [`fit`] — least-squares `t = intercept + slope · x` fits, one per regime (up to four),
//!   with their raw samples;
//! * [`profile`] — a [`DeviceProfile`]: what [`calibrate()`] measured (or published figures,
//!   labelled so), saved to and loaded from JSON;
//! * [`cost`] — [`CostModel::predict`] (a per-phase breakdown and the verdict: one batch's
//!   latency), [`CostModel::predict_pipeline`] (that latency and the steady-state time per
//!   batch with `in_flight` slots overlapping copies and kernels) and
//!   [`CostModel::crossover`] (the batch size n* from which the GPU wins, or `Never` with the
//!   reason in numbers);
//! * [`calibrate`](mod@calibrate) — measures a profile on the device at hand.
pub mod calibrate;
pub mod cost;
pub mod fit;
pub mod profile;

pub use calibrate::{calibrate, mc_contract, CalibrateOptions, CpuKernels};
pub use cost::{Bound, Breakdown, CostModel, Crossover, Pipeline, Residency, Verdict};
pub use fit::{LinFit, Regime, Sample};
pub use profile::{CpuFit, DeviceProfile, KernelProfile, ProfileSource, Size, TransferProfile};
