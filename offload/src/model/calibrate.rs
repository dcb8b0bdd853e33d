//! [`calibrate`]: measure a [`DeviceProfile`] on the device at hand. SKELETON.
use super::profile::DeviceProfile;
use crate::device::Device;
use crate::error::OffloadError;

/// How much to measure.
#[derive(Clone, Debug)]
pub struct CalibrateOptions {
    /// Largest P count for the CPU fits (default: available parallelism).
    pub max_procs: usize,
    /// Repeats per point (the median is kept).
    pub repeats: usize,
    /// A quick pass (smaller sizes, fewer repeats) for tests.
    pub quick: bool,
}

/// Measures launch overhead, H2D/D2H (pinned and pageable), each kernel's device time and its
/// CPU time on 1 … `max_procs` Ps, and fits them. Under a minute on a GPU, under 30 s on Host.
pub fn calibrate(device: &Device, opts: &CalibrateOptions) -> Result<DeviceProfile, OffloadError> {
    let _ = (device, opts);
    todo!()
}
