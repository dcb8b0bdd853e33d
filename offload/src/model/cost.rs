//! [`CostModel`]: per-phase predictions, verdicts and crossovers from a [`DeviceProfile`].
//!
//! # One batch (latency)
//!
//! GPU end to end = queue wait + launch overhead + H2D (pinned fit, the pageable fit for
//! [`Residency::Pageable`], 0 when resident) + kernel (device fit at the work of n) + D2H
//! (likewise). CPU = the CPU fit of
//! each P count. The crossover comes from the same fits (one to four regimes each): the
//! asymptotes say whether the GPU can ever win, and one search — a geometric grid, then
//! bisection — finds n* for every kernel (see [`CostModel::crossover`]).
//!
//! **Launch latency is counted once.** Calibration times a kernel with the slot's own
//! kernel-phase clock (CUDA: events recorded on the stream around the launch; Host: the
//! slot's kernel-phase timer), and times `launch_enqueue` with the same clock on an empty
//! launch — so the device fit's intercept *already contains* `launch_enqueue` (the published
//! profiles say so too: "intercept = one launch"). `launch_sync` is the wall time of the whole
//! launch + synchronize call, which contains `launch_enqueue` as well. The launch term added
//! to the kernel is therefore only the part the kernel clock does not see:
//! [`DeviceProfile::launch_overhead`] = `launch_sync − launch_enqueue` (≥ 0).
//!
//! # A stream of batches (throughput)
//!
//! With `in_flight` slots, batches overlap: the copies of one batch run while another's
//! kernel runs. [`CostModel::predict_pipeline`] gives both figures: one batch's **latency**
//! (the sum above) and the **steady-state time per batch** — the larger of
//! * the slot cycle over the slots: (host staging + launch overhead + H2D + kernel + D2H +
//!   host scatter) / `in_flight` (each slot runs its batches' phases one after the other), and
//! * the busiest engine: H2D (one copy engine per direction), the kernel phase (launch
//!   overhead + kernel: kernels of different slots take turns on the device), D2H.
//!
//! With one slot that is the latency; with two or more, about the largest phase. The
//! [`Verdict`] and [`CostModel::crossover`] are for one batch (latency); [`CostModel::explain`]
//! also says which side wins a stream of batches, and the Batcher's `Placement::Auto` judges
//! the device by its time per batch with the Batcher's `in_flight`. Assumed:
//! each direction of copy and the kernels are each one engine that batches take turns on (a
//! GPU with a copy engine per direction; the simulated device paces its engines that way),
//! the launch overhead is counted on the kernel engine (an overestimate by at most
//! `launch_sync − launch_enqueue` per batch), and the host-side staging of items into the
//! slot and the scatter of results — not in any profile — cost nothing next to the phases
//! (they run on the slot's worker thread, so they lengthen the slot cycle only; a Batcher's
//! timelines record the staging it measured). On the Host device the "engines" are the same
//! CPU cores (and memory bandwidth) the slots share, so there the prediction is a GPU's
//! shape, not the Host's: the model bench's pipeline table shows the gap.
use super::fit::LinFit;
use super::profile::{DeviceProfile, KernelProfile};
use crate::error::OffloadError;

/// Where a batch's inputs and outputs live.
///
/// ```
/// use gmprt_offload::model::{CostModel, DeviceProfile, Residency};
/// let m = CostModel::new(DeviceProfile::published_h100());
/// let host = m.predict("black_scholes", 1e6, Residency::Host, 0.0).unwrap();
/// let dev = m.predict("black_scholes", 1e6, Residency::Device, 0.0).unwrap();
/// // 24 MB each way over PCIe is most of the GPU's time; resident, only the kernel is left.
/// assert!(host.gpu_total > 30.0 * dev.gpu_total);
/// assert_eq!(dev.gpu_total, dev.launch + dev.kernel_time);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Residency {
    /// On the host, staged in page-locked memory (a Batcher's or a slot's staging): the GPU
    /// path pays H2D and D2H at the pinned rate.
    Host,
    /// Already on the device (e.g. re-pricing a book under shocked vols): no transfers.
    Device,
    /// On the host in the caller's own pageable memory, copied from and to it directly (the
    /// one-shot `Device::sgemm` and `Device::option_paths_sum`): the GPU path pays H2D and D2H
    /// at the profile's pageable rate, which the driver stages through its own buffers.
    ///
    /// ```
    /// use gmprt_offload::model::{CostModel, DeviceProfile, Residency};
    /// let m = CostModel::new(DeviceProfile::published_h100());
    /// let pinned = m.predict("sgemm", 1024.0, Residency::Host, 0.0).unwrap();
    /// let pageable = m.predict("sgemm", 1024.0, Residency::Pageable, 0.0).unwrap();
    /// // The same kernel; the copies at half the bandwidth (the published pageable fit), the
    /// // same 10 µs per copy.
    /// assert_eq!(pageable.kernel_time, pinned.kernel_time);
    /// assert!(pageable.h2d > 1.8 * pinned.h2d && pageable.d2h > 1.8 * pinned.d2h);
    /// ```
    Pageable,
}

/// Which side the model picks, and by how much.
///
/// ```
/// use gmprt_offload::model::{CostModel, DeviceProfile, Residency, Verdict};
/// let m = CostModel::new(DeviceProfile::published_h100());
/// // A million options priced from host memory: the copies cost more than 8 cores take.
/// match m.predict("black_scholes", 1e6, Residency::Host, 0.0).unwrap().verdict {
///     Verdict::Cpu { procs, speedup } => assert!(procs == 8 && (1.4..1.6).contains(&speedup)),
///     v => panic!("{v:?}"),
/// }
/// // The same options already on the device: the GPU wins by far.
/// match m.predict("black_scholes", 1e6, Residency::Device, 0.0).unwrap().verdict {
///     Verdict::Gpu { speedup } => assert!(speedup > 20.0, "{speedup}"),
///     v => panic!("{v:?}"),
/// }
/// ```
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
///
/// ```
/// use gmprt_offload::model::{CostModel, DeviceProfile, Residency};
/// let m = CostModel::new(DeviceProfile::published_h100());
/// let b = m.predict("saxpy", 1e6, Residency::Host, 50e-6).unwrap();
/// assert_eq!(b.gpu_total, b.queue_wait + b.launch + b.h2d + b.kernel_time + b.d2h);
/// assert!(b.h2d > b.d2h); // 8 B up, 4 B down per element
/// let procs: Vec<usize> = b.cpu.iter().map(|&(p, _)| p).collect();
/// assert_eq!(procs, [1, 2, 4, 8, 16]); // one CPU time per P count
/// ```
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
    /// Launch overhead: [`DeviceProfile::launch_overhead`] (`launch_sync − launch_enqueue`;
    /// the device-side launch latency is in `kernel_time` already, see the module docs).
    pub launch: f64,
    /// Host → device copy (0 if resident).
    pub h2d: f64,
    /// Kernel time on the device (with mapped I/O, the whole mapped run).
    pub kernel_time: f64,
    /// Device → host copy (0 if resident).
    pub d2h: f64,
    /// Whether the batch is priced with mapped I/O ([`MappedFit`](super::MappedFit)): inputs
    /// on the host, a kernel the profile has a mapped fit for, and few enough bytes; then
    /// `h2d` and `d2h` are 0 and `kernel_time` includes the crossings.
    pub mapped_io: bool,
    /// Sum of the GPU phases: one batch's latency (for the steady state of a stream of
    /// batches see [`CostModel::predict_pipeline`]).
    pub gpu_total: f64,
    /// CPU time per P count in the profile.
    pub cpu: Vec<(usize, f64)>,
    /// The verdict.
    pub verdict: Verdict,
}

/// What bounds a pipeline's steady-state time per batch ([`Pipeline::bound_by`]).
///
/// ```
/// use gmprt_offload::model::{Bound, CostModel, DeviceProfile, Residency};
/// let m = CostModel::new(DeviceProfile::published_h100());
/// // One slot runs its phases in turn: its time per batch is its latency.
/// assert_eq!(m.predict_pipeline("saxpy", 1e6, 1, Residency::Host).unwrap().bound_by, Bound::Slots);
/// // With two, the largest phase bounds it: 8 MB of x and y up per batch.
/// let two = m.predict_pipeline("saxpy", 1e6, 2, Residency::Host).unwrap();
/// assert_eq!(two.bound_by, Bound::H2d);
/// assert_eq!(two.bound_by.to_string(), "H2D");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bound {
    /// Too few slots to hide the phases: each slot's cycle (the latency) over `in_flight`.
    Slots,
    /// The host → device copy engine.
    H2d,
    /// The device's compute (launch overhead + kernel).
    Kernel,
    /// The device → host copy engine.
    D2h,
}

impl std::fmt::Display for Bound {
    /// `the slots (each runs its batches' phases in turn)`, `H2D`, `the kernel`, `D2H`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Bound::Slots => "the slots (each runs its batches' phases in turn)",
            Bound::H2d => "H2D",
            Bound::Kernel => "the kernel",
            Bound::D2h => "D2H",
        })
    }
}

/// A batch size's cost through a pipeline of `in_flight` slots (see the module docs): one
/// batch's latency and the steady-state time per batch, in seconds.
///
/// ```
/// use gmprt_offload::model::{CostModel, DeviceProfile, Residency};
/// let m = CostModel::new(DeviceProfile::published_h100());
/// let p = m.predict_pipeline("saxpy", 1e6, 2, Residency::Host).unwrap();
/// assert_eq!(p.latency, p.host + p.launch + p.h2d + p.kernel_time + p.d2h);
/// assert_eq!(p.per_batch, p.h2d); // H2D-bound with 2 slots
/// assert!(p.per_batch < p.latency); // overlap: a batch costs the stream less than its latency
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    /// Kernel name.
    pub kernel: String,
    /// Size of each batch.
    pub n: f64,
    /// Residency assumed.
    pub residency: Residency,
    /// Slots in flight.
    pub in_flight: usize,
    /// Launch overhead ([`DeviceProfile::launch_overhead`]).
    pub launch: f64,
    /// Host → device copy (0 if resident).
    pub h2d: f64,
    /// Kernel time on the device (its fit; contains the device-side launch latency).
    pub kernel_time: f64,
    /// Device → host copy (0 if resident).
    pub d2h: f64,
    /// Host-side staging + scatter per batch: not in the profile, assumed 0 (module docs).
    pub host: f64,
    /// One batch alone: host + launch + H2D + kernel + D2H.
    pub latency: f64,
    /// Steady-state seconds per batch with `in_flight` slots busy.
    pub per_batch: f64,
    /// Which term `per_batch` is.
    pub bound_by: Bound,
}

impl Pipeline {
    /// Items (work units of n) per second in steady state: `n / per_batch`.
    ///
    /// ```
    /// use gmprt_offload::model::{CostModel, DeviceProfile, Residency};
    /// let m = CostModel::new(DeviceProfile::published_h100());
    /// let p = m.predict_pipeline("saxpy", 1e6, 2, Residency::Host).unwrap();
    /// assert_eq!(p.throughput(), 1e6 / p.per_batch);
    /// assert!((6.4e9..6.5e9).contains(&p.throughput())); // 1e6 elements per 155 µs
    /// ```
    pub fn throughput(&self) -> f64 {
        if self.per_batch > 0.0 {
            self.n / self.per_batch
        } else {
            f64::INFINITY
        }
    }
}

/// Predictions from one profile.
///
/// ```
/// use gmprt_offload::model::{CostModel, DeviceProfile, Residency};
/// let m = CostModel::new(DeviceProfile::published_h100());
/// let b = m.predict("sgemm", 1024.0, Residency::Host, 0.0).unwrap();
/// let words = m.explain(&b);
/// assert!(words.starts_with("sgemm n = 1024 (inputs on the host): GPU "), "{words}");
/// ```
#[derive(Clone, Debug)]
pub struct CostModel {
    /// The profile predictions come from.
    pub profile: DeviceProfile,
}

impl CostModel {
    /// A model over `profile`.
    ///
    /// ```
    /// use gmprt_offload::model::{CostModel, DeviceProfile};
    /// let m = CostModel::new(DeviceProfile::published_h200());
    /// assert_eq!(m.profile.device, "NVIDIA H200 (published)");
    /// ```
    pub fn new(profile: DeviceProfile) -> CostModel {
        CostModel { profile }
    }
    /// The breakdown of one batch of `n` of `kernel` (queue wait `queue_wait` seconds).
    ///
    /// ```
    /// use gmprt_offload::model::{CostModel, DeviceProfile, Residency};
    /// let m = CostModel::new(DeviceProfile::published_h100());
    /// let b = m.predict("black_scholes", 1e6, Residency::Host, 0.0).unwrap();
    /// assert!(b.h2d > 0.0 && b.d2h > 0.0); // inputs on the host pay both copies
    /// let r = m.predict("black_scholes", 1e6, Residency::Device, 0.0).unwrap();
    /// assert_eq!((r.h2d, r.d2h), (0.0, 0.0));
    /// assert!(m.predict("no_such_kernel", 1.0, Residency::Host, 0.0).is_err());
    /// ```
    pub fn predict(
        &self,
        kernel: &str,
        n: f64,
        residency: Residency,
        queue_wait: f64,
    ) -> Result<Breakdown, OffloadError> {
        let k = self.profile.kernel(kernel)?;
        let (launch, h2d, kernel_time, d2h) = self.gpu_phases(k, n, residency);
        let mapped_io = self.maps_io(k, n, residency);
        let gpu_total = queue_wait + launch + h2d + kernel_time + d2h;
        let cpu: Vec<(usize, f64)> = k.cpu.iter().map(|c| (c.procs, c.fit.eval(k.size.work(n)))).collect();
        let best = cpu.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1));
        let verdict = match best {
            Some((procs, t)) if t <= gpu_total => Verdict::Cpu { procs, speedup: gpu_total / t.max(1e-15) },
            Some((_, t)) => Verdict::Gpu { speedup: t / gpu_total.max(1e-15) },
            None => Verdict::Gpu { speedup: f64::INFINITY },
        };
        Ok(Breakdown {
            kernel: k.name.clone(),
            n,
            residency,
            queue_wait,
            launch,
            h2d,
            kernel_time,
            d2h,
            mapped_io,
            gpu_total,
            cpu,
            verdict,
        })
    }
    /// One batch's latency and the steady-state time per batch of `n` of `kernel` through
    /// `in_flight` slots (see the module docs for the model and what it assumes).
    /// `Err(Config)` for an unknown kernel or `in_flight` 0.
    ///
    /// ```
    /// use gmprt_offload::model::{Bound, CostModel, DeviceProfile, Residency};
    /// let m = CostModel::new(DeviceProfile::published_h100());
    /// let p = m.predict_pipeline("black_scholes", 1e6, 2, Residency::Device).unwrap();
    /// // Resident data: no copies, so the kernel engine bounds the stream.
    /// assert_eq!((p.h2d, p.d2h, p.bound_by), (0.0, 0.0, Bound::Kernel));
    /// assert_eq!(p.per_batch, p.launch + p.kernel_time);
    /// let e = m.predict_pipeline("saxpy", 1e6, 0, Residency::Host).unwrap_err();
    /// assert!(e.to_string().contains("in_flight must be at least 1"), "{e}");
    /// assert!(m.predict_pipeline("no_such_kernel", 1.0, 1, Residency::Host).is_err());
    /// ```
    pub fn predict_pipeline(
        &self,
        kernel: &str,
        n: f64,
        in_flight: usize,
        residency: Residency,
    ) -> Result<Pipeline, OffloadError> {
        if in_flight == 0 {
            return Err(OffloadError::Config("predict_pipeline: in_flight must be at least 1".into()));
        }
        let k = self.profile.kernel(kernel)?;
        let (launch, h2d, kernel_time, d2h) = self.gpu_phases(k, n, residency);
        let host = 0.0;
        let latency = host + launch + h2d + kernel_time + d2h;
        let (bound_by, per_batch) = [
            (Bound::Slots, latency / in_flight as f64),
            (Bound::H2d, h2d),
            (Bound::Kernel, launch + kernel_time),
            (Bound::D2h, d2h),
        ]
        .into_iter()
        .fold((Bound::Slots, f64::NEG_INFINITY), |a, b| if b.1 > a.1 { b } else { a });
        Ok(Pipeline {
            kernel: k.name.clone(),
            n,
            residency,
            in_flight,
            launch,
            h2d,
            kernel_time,
            d2h,
            host,
            latency,
            per_batch,
            bound_by,
        })
    }
    /// The CPU time of `n` of `kernel` on `procs` Ps (nearest P count in the profile, scaled).
    ///
    /// ```
    /// use gmprt_offload::model::{CostModel, DeviceProfile};
    /// let m = CostModel::new(DeviceProfile::published_h100());
    /// // 3 Ps: the 2-P fit (10 µs + 0.6 ns per element).
    /// assert!((m.cpu_time("saxpy", 1e6, 3).unwrap() - 610e-6).abs() < 1e-12);
    /// // Fewer Ps than any fit: the smallest P count (1 µs + 1.2 ns per element).
    /// assert!((m.cpu_time("saxpy", 1e6, 0).unwrap() - 1201e-6).abs() < 1e-12);
    /// assert!(m.cpu_time("no_such_kernel", 1.0, 1).is_err());
    /// ```
    pub fn cpu_time(&self, kernel: &str, n: f64, procs: usize) -> Result<f64, OffloadError> {
        let k = self.profile.kernel(kernel)?;
        let fit = k
            .cpu
            .iter()
            .filter(|c| c.procs <= procs)
            .max_by_key(|c| c.procs)
            .or_else(|| k.cpu.iter().min_by_key(|c| c.procs))
            .ok_or_else(|| OffloadError::Config(format!("kernel `{kernel}` has no CPU fits")))?;
        Ok(fit.fit.eval(k.size.work(n)))
    }
    /// The mapped fit a batch of `n` with `residency` is priced by, if any: inputs on the host
    /// (pinned staging: `Residency::Host`), a kernel with a measured mapped fit, and at most
    /// its `max_bytes` in and out.
    fn mapped_fit<'k>(&self, k: &'k KernelProfile, n: f64, residency: Residency) -> Option<&'k LinFit> {
        let m = k.mapped.as_ref()?;
        let bytes = k.size.in_bytes(n) + k.size.out_bytes(n);
        (residency == Residency::Host && m.maps(bytes)).then_some(&m.fit)
    }

    /// Whether a batch of `n` of `k` is priced with mapped I/O.
    fn maps_io(&self, k: &KernelProfile, n: f64, residency: Residency) -> bool {
        self.mapped_fit(k, n, residency).is_some()
    }

    /// (launch, h2d, kernel, d2h) seconds of one batch of `n`. A mapped batch
    /// ([`Breakdown::mapped_io`]) has no copies and its mapped fit as the kernel time.
    fn gpu_phases(&self, k: &KernelProfile, n: f64, residency: Residency) -> (f64, f64, f64, f64) {
        if let Some(fit) = self.mapped_fit(k, n, residency) {
            return (self.profile.launch_overhead(), 0.0, fit.eval(k.size.work(n)), 0.0);
        }
        let (h2d, d2h) = match residency {
            Residency::Device => (0.0, 0.0),
            Residency::Host => (
                copy(&self.profile.h2d.pinned, k.size.in_bytes(n)),
                copy(&self.profile.d2h.pinned, k.size.out_bytes(n)),
            ),
            Residency::Pageable => (
                copy(&self.profile.h2d.pageable, k.size.in_bytes(n)),
                copy(&self.profile.d2h.pageable, k.size.out_bytes(n)),
            ),
        };
        (self.profile.launch_overhead(), h2d, k.device.eval(k.size.work(n)), d2h)
    }

    /// GPU total at n (no queue wait).
    pub(super) fn gpu_total(&self, k: &KernelProfile, n: f64, residency: Residency) -> f64 {
        let (l, h, kt, d) = self.gpu_phases(k, n, residency);
        l + h + kt + d
    }

    /// The best CPU time at n.
    pub(super) fn best_cpu(k: &KernelProfile, n: f64) -> f64 {
        k.cpu.iter().map(|c| c.fit.eval(k.size.work(n))).fold(f64::INFINITY, f64::min)
    }
}

/// A copy's time: 0 bytes cost nothing (no copy is issued).
fn copy(fit: &super::fit::LinFit, bytes: f64) -> f64 {
    if bytes > 0.0 {
        fit.eval(bytes)
    } else {
        0.0
    }
}
