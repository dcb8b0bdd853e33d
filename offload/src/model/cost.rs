//! [`CostModel`]: per-phase predictions, verdicts and crossovers from a [`DeviceProfile`].
//! SKELETON.
use super::profile::DeviceProfile;
use crate::error::OffloadError;

/// Where a batch's inputs and outputs live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Residency {
    /// On the host: the GPU path pays H2D and D2H.
    Host,
    /// Already on the device (e.g. re-pricing a book under shocked vols): no transfers.
    Device,
}

/// Which side the model picks, and by how much.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// The GPU end to end is faster than the best CPU P count, by `speedup` ×.
    Gpu {
        /// CPU best time / GPU total.
        speedup: f64,
    },
    /// The CPU on `procs` Ps is faster, by `speedup` ×.
    Cpu {
        /// Ps of the best CPU time.
        procs: usize,
        /// GPU total / CPU best time.
        speedup: f64,
    },
}

/// The predicted cost of one batch of size n, in seconds per phase.
#[derive(Clone, Debug, PartialEq)]
pub struct Breakdown {
    /// Kernel name.
    pub kernel: String,
    /// Size.
    pub n: f64,
    /// Residency assumed.
    pub residency: Residency,
    /// Queue wait before the batch closes (the Batcher's max_delay share; 0 for a bulk call).
    pub queue_wait: f64,
    /// Launch overhead (launch + sync of an empty kernel).
    pub launch: f64,
    /// Host → device copy (0 if resident).
    pub h2d: f64,
    /// Kernel time on the device.
    pub kernel_time: f64,
    /// Device → host copy (0 if resident).
    pub d2h: f64,
    /// Sum of the GPU phases.
    pub gpu_total: f64,
    /// CPU time per P count in the profile.
    pub cpu: Vec<(usize, f64)>,
    /// The verdict.
    pub verdict: Verdict,
}

/// Where the GPU starts to win.
#[derive(Clone, Debug, PartialEq)]
pub enum Crossover {
    /// From size `n` on (and for every larger size) the GPU is faster end to end.
    At {
        /// n*.
        n: f64,
    },
    /// The GPU wins at every size (even n = 1).
    Always,
    /// The GPU never wins; the reason in numbers.
    Never {
        /// E.g. "PCIe-bound: 48 B per option at 55 GB/s costs 0.87 ns, more than pricing it on
        /// 16 cores at 2.4 G options/s (0.41 ns)".
        reason: String,
    },
}

/// Predictions from one profile.
#[derive(Clone, Debug)]
pub struct CostModel {
    /// The profile predictions come from.
    pub profile: DeviceProfile,
}

impl CostModel {
    /// A model over `profile`.
    pub fn new(profile: DeviceProfile) -> CostModel {
        CostModel { profile }
    }
    /// The breakdown of one batch of `n` of `kernel` (queue wait `queue_wait` seconds).
    pub fn predict(
        &self,
        kernel: &str,
        n: f64,
        residency: Residency,
        queue_wait: f64,
    ) -> Result<Breakdown, OffloadError> {
        let _ = (kernel, n, residency, queue_wait);
        todo!()
    }
    /// The CPU time of `n` of `kernel` on `procs` Ps (nearest P count in the profile, scaled).
    pub fn cpu_time(&self, kernel: &str, n: f64, procs: usize) -> Result<f64, OffloadError> {
        let _ = (kernel, n, procs);
        todo!()
    }
    /// n* for `kernel` with `residency`, against the best CPU P count, or why never.
    pub fn crossover(&self, kernel: &str, residency: Residency) -> Result<Crossover, OffloadError> {
        let _ = (kernel, residency);
        todo!()
    }
    /// The breakdown and verdict in plain words (a few lines).
    pub fn explain(&self, b: &Breakdown) -> String {
        let _ = b;
        todo!()
    }
}
