//! [`SimBackend`]: a GPU simulated from a [`DeviceProfile`] — the work is computed on the CPU
//! (as [`HostBackend`](crate::HostBackend) does), but each phase of a run takes as long as the
//! profile predicts for it, so that a Batcher, a placement decision or an example can be
//! exercised against "an H100" (or any profile) on a machine without one.
//!
//! # Pacing protocol
//!
//! A simulated slot is a Host slot (`HostSlot`, see [`crate::host`]) with the simulated
//! device as its pacer: the same buffers, the same over-capacity error, the same work, so its
//! outputs are the Host device's bit for bit; only the phases' durations differ.
//!
//! Each phase of [`Slot::run`] (and of the [`Device`](crate::Device) bulk helpers on a
//! simulated device) does its real work first — a `memcpy` for H2D and D2H,
//! [`Job::run_host`] on the calling thread for the kernel — and then waits until the phase's
//! *predicted* duration has elapsed since the phase began (sleep until ~100 µs before the
//! deadline, then spin). The reported [`PhaseTimes`] are the elapsed times, so they are never
//! less than the prediction and exceed it only by the wait's wake-up jitter — **or by the real
//! work itself when the CPU took longer than the profile predicts** (a slow host cannot be
//! sped up; the real time is reported then, never a made-up shorter one).
//!
//! Predictions per phase, for `in_words`/`out_words` words moved and `n` items:
//! * H2D: `profile.h2d.pinned.eval(4 · in_words)` seconds;
//! * kernel: `profile.launch_overhead() + kernel.device.eval(work)` (the launch latency the
//!   kernel fit already contains is not added again: see [`crate::model::cost`]), where `kernel` is the profile's
//!   [`KernelProfile`] named after the job ([`profile_kernel_name`]) and `work` is
//!   [`Size::work`] of the batch: `n` for item kernels; for a matrix kernel run through a slot
//!   (`sgemm_batched`), the flops of `n` square matrices whose side is derived from the output
//!   words (`2 · n · s³`, `s = √(out_words / n)`: exact for square items, an estimate
//!   otherwise). A job the profile does not know is not paced: its kernel time is the measured
//!   CPU time, and [`Backend::describe`] says so;
//! * D2H: `profile.d2h.pinned.eval(4 · out_words)` seconds;
//! * a run a CUDA slot would make with mapped I/O — all three phases, a job that
//!   [streams its I/O](crate::cuda::CudaJob::streams_io), a profile kernel with a
//!   [`MappedFit`](crate::model::MappedFit) and `4 · (in_words + out_words)` bytes within it —
//!   is paced as one kernel phase of `profile.launch_overhead() + mapped.fit.eval(work)` and
//!   no copies ([`SimBackend::mapped_time`]), as the cost model prices it (the copies' real
//!   `memcpy`s still run, unpaced, so their phases report their few nanoseconds).
//!
//! # Engines
//!
//! Like a GPU with one copy engine per direction and one compute engine, the slots of one
//! backend take turns per phase: a phase waits for its engine (H2D, kernel or D2H, shared by
//! every slot and clone of the backend) and is paced while holding it, so two slots overlap
//! one's copies with the other's kernel but never run two kernels at once. The wait for the
//! engine is not part of the phase's measured time. This is the pipeline
//! [`CostModel::predict_pipeline`](crate::model::CostModel::predict_pipeline) predicts.
//!
//! Every line [`SimBackend::describe`] produces contains `simulated from <profile label>`.
//!
//! # Pacing record
//!
//! Each [`Slot::run`] on a simulated slot that succeeds also appends a [`Pacing`] to its
//! backend's record ([`SimBackend::pacings`], shared by every clone and slot of the backend;
//! the last [`PACING_CAPACITY`] runs are kept): the duration each phase was paced *to* (the
//! prediction above) next to the duration measured. The targets are pure functions of the
//! profile and the run's sizes, so a test can compare them with the cost model exactly and
//! check a measured phase only against its own target (`measured ≥ target`: a wait never ends
//! early) — never against a wall-clock budget, which a loaded machine overruns at will. The
//! [`Device`](crate::Device) bulk helpers that pace without a slot (`sgemm`,
//! `option_paths_sum`, `pi_hits`) are not recorded.
use crate::backend::{host_available, Backend, MemoryNeed, MemoryParts, PhaseTimes, Phases, Slot};
use crate::cuda::CudaJob;
use crate::error::OffloadError;
use crate::host::{Engine, HostSlot, Pacer};
use crate::job::Job;
use crate::model::{duration, DeviceProfile, Size};
#[cfg(doc)]
use crate::model::{profile_kernel_name, KernelProfile};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How many [`Pacing`]s a [`SimBackend`] keeps (older ones are dropped): as many as a Batcher
/// keeps timelines (`timeline::TIMELINE_CAPACITY`), so the two windows pair run for batch.
/// Written out rather than taken from the timeline module, which would close the module
/// circle `device → sim → timeline → device` (issue 27); the doctest keeps them equal.
///
/// ```
/// use gmprt_offload::sim::PACING_CAPACITY;
/// assert_eq!(PACING_CAPACITY, gmprt_offload::timeline::TIMELINE_CAPACITY);
/// ```
pub const PACING_CAPACITY: usize = 4096;

/// One [`Slot::run`] on a simulated slot: what each phase was paced to, and what it took
/// (see "Pacing record" in the module docs).
///
/// ```
/// use gmprt_offload::model::DeviceProfile;
/// use gmprt_offload::{Backend, Phases, Saxpy, SimBackend};
///
/// let sim = SimBackend::new(DeviceProfile::published_h100());
/// let mut slot = sim.new_slot(8, 4).unwrap();
/// slot.staging_in().copy_from_slice(&[1.0f32.to_bits(); 8]);
/// let measured = slot.run(&Saxpy { a: 1.0 }, 4, 8, 4, Phases::ALL).unwrap();
/// let p = sim.pacings()[0];
/// assert_eq!((p.job, p.n, p.in_words, p.out_words), ("saxpy", 4, 8, 4));
/// assert_eq!(p.measured, measured);
/// // The targets are the profile's predictions for these sizes (4 bytes a word).
/// assert_eq!((p.target.h2d, p.target.d2h), (sim.h2d_time(32.0), sim.d2h_time(16.0)));
/// assert_eq!(Some(p.target.kernel), sim.kernel_time("saxpy", 4.0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pacing {
    /// The job's [`Job::name`].
    pub job: &'static str,
    /// Items in the run.
    pub n: usize,
    /// Words uploaded by H2D (when it ran).
    pub in_words: usize,
    /// Words downloaded by D2H (when it ran).
    pub out_words: usize,
    /// The duration each phase was paced to: the profile's prediction; zero for a phase not
    /// run, and for the kernel of a job the profile does not know (not paced).
    pub target: PhaseTimes,
    /// The duration each phase took, as [`Slot::run`] returned it: never less than `target`.
    pub measured: PhaseTimes,
}

/// Runs `work`, then waits until `predicted` has elapsed since the call began; returns the
/// work's result and the elapsed time (≥ `predicted`; larger if the work took longer).
pub(crate) fn paced<T>(predicted: Duration, work: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = work();
    let deadline = start + predicted;
    loop {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        let left = deadline - now;
        if left > Duration::from_micros(200) {
            std::thread::sleep(left - Duration::from_micros(100));
        } else {
            std::hint::spin_loop();
        }
    }
    (out, start.elapsed())
}

/// A GPU simulated from a [`DeviceProfile`]: CPU compute, profile-paced phases (see the
/// module docs). Holds no threads; slots compute on the thread that runs them.
///
/// ```
/// use gmprt_offload::model::DeviceProfile;
/// use gmprt_offload::{Backend, Phases, Saxpy, SimBackend};
/// let sim = SimBackend::new(DeviceProfile::published_h100());
/// assert!(sim.describe().contains("simulated from"));
/// let mut slot = sim.new_slot(2, 1).unwrap();
/// slot.staging_in().copy_from_slice(&[3.0f32.to_bits(), 1.0f32.to_bits()]);
/// slot.run(&Saxpy { a: 2.0 }, 1, 2, 1, Phases::ALL).unwrap();
/// assert_eq!(f32::from_bits(slot.staging_out()[0]), 7.0); // what the Host device computes
/// let paced = sim.pacings();
/// assert_eq!((paced.len(), paced[0].job, paced[0].n), (1, "saxpy", 1));
/// ```
#[derive(Clone, Debug)]
pub struct SimBackend {
    profile: DeviceProfile,
    /// The pacing record, shared by clones and slots (see the module docs).
    pacings: Arc<Mutex<VecDeque<Pacing>>>,
    /// The H2D, kernel and D2H engines, shared by clones and slots (see "Engines").
    engines: Arc<[Mutex<()>; 3]>,
}

impl SimBackend {
    /// A simulated device pacing every phase by `profile`.
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// use gmprt_offload::SimBackend;
    ///
    /// let sim = SimBackend::new(DeviceProfile::published_h200());
    /// assert_eq!(sim.profile(), &DeviceProfile::published_h200());
    /// assert!(sim.pacings().is_empty()); // nothing run yet
    /// ```
    pub fn new(profile: DeviceProfile) -> SimBackend {
        SimBackend { profile, pacings: Arc::default(), engines: Arc::default() }
    }

    /// The last [`PACING_CAPACITY`] slot runs of this backend (and its clones), oldest
    /// first: each phase's pacing target and measured time (see the module docs).
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// use gmprt_offload::{Backend, Phases, Saxpy, SimBackend};
    ///
    /// let sim = SimBackend::new(DeviceProfile::published_h100());
    /// let clone = sim.clone();
    /// let mut slot = clone.new_slot(4, 2).unwrap();
    /// slot.run(&Saxpy { a: 1.0 }, 1, 2, 1, Phases::ALL).unwrap();
    /// slot.run(&Saxpy { a: 1.0 }, 2, 4, 2, Phases::ALL).unwrap();
    /// // Over capacity: an error, and not recorded.
    /// assert!(slot.run(&Saxpy { a: 1.0 }, 3, 6, 3, Phases::ALL).is_err());
    /// // Shared by clones, oldest first.
    /// let ns: Vec<usize> = sim.pacings().iter().map(|p| p.n).collect();
    /// assert_eq!(ns, [1, 2]);
    /// ```
    pub fn pacings(&self) -> Vec<Pacing> {
        self.pacings.lock().iter().copied().collect()
    }

    /// Appends `p` to the pacing record, dropping the oldest beyond [`PACING_CAPACITY`].
    fn push_pacing(&self, p: Pacing) {
        let mut log = self.pacings.lock();
        if log.len() == PACING_CAPACITY {
            log.pop_front();
        }
        log.push_back(p);
    }

    /// The profile the phases are paced by.
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// use gmprt_offload::SimBackend;
    ///
    /// let sim = SimBackend::new(DeviceProfile::published_h100());
    /// assert_eq!(sim.profile().device, "NVIDIA H100 SXM (published)");
    /// ```
    pub fn profile(&self) -> &DeviceProfile {
        &self.profile
    }

    /// Predicted H2D time of `bytes` (pinned).
    ///
    /// ```
    /// use gmprt_offload::model::{DeviceProfile, LinFit};
    /// use gmprt_offload::SimBackend;
    ///
    /// // A link of 10 µs latency and 50 GB/s: 1 MB takes 10 + 20 µs.
    /// let mut profile = DeviceProfile::published_h100();
    /// profile.h2d.pinned = LinFit::known(10e-6, 1.0 / 50e9);
    /// let t = SimBackend::new(profile).h2d_time(1e6);
    /// assert!((t.as_secs_f64() - 30e-6).abs() < 1e-9, "{t:?}");
    /// ```
    pub fn h2d_time(&self, bytes: f64) -> Duration {
        duration(self.profile.h2d.pinned.eval(bytes))
    }

    /// Predicted D2H time of `bytes` (pinned).
    ///
    /// ```
    /// use gmprt_offload::model::{DeviceProfile, LinFit};
    /// use gmprt_offload::SimBackend;
    ///
    /// let mut profile = DeviceProfile::published_h100();
    /// profile.d2h.pinned = LinFit::known(10e-6, 1.0 / 25e9); // 10 µs + 25 GB/s
    /// let t = SimBackend::new(profile).d2h_time(1e6);
    /// assert!((t.as_secs_f64() - 50e-6).abs() < 1e-9, "{t:?}");
    /// ```
    pub fn d2h_time(&self, bytes: f64) -> Duration {
        duration(self.profile.d2h.pinned.eval(bytes))
    }

    /// Predicted kernel time (the launch overhead included) of `work` units of the profile kernel
    /// for `job_name`; `None` when the profile has no such kernel.
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// use gmprt_offload::SimBackend;
    ///
    /// let h100 = DeviceProfile::published_h100();
    /// let sgemm = h100.kernel("sgemm").unwrap().device.eval(1e9);
    /// let want = h100.launch_overhead() + sgemm;
    /// let sim = SimBackend::new(h100);
    /// // `sgemm_batched` (SmallSgemm's job name) is paced by the profile's `sgemm`.
    /// let t = sim.kernel_time("sgemm_batched", 1e9).unwrap();
    /// assert!((t.as_secs_f64() - want).abs() < 1e-9, "{t:?}"); // to the nanosecond
    /// assert_eq!(sim.kernel_time("no_such_kernel", 1e9), None);
    /// ```
    pub fn kernel_time(&self, job_name: &str, work: f64) -> Option<Duration> {
        self.profile
            .job_kernel(job_name)
            .map(|k| duration(self.profile.launch_overhead() + k.device.eval(work)))
    }

    /// Predicted time (the launch overhead included) of a whole run of `n` items of `job_name`
    /// moving `bytes` in and out with mapped I/O: the profile kernel's
    /// [`MappedFit`](crate::model::MappedFit), when it has one and `bytes` is within it;
    /// `None` otherwise (the run is paced as copies and a kernel).
    ///
    /// ```
    /// use gmprt_offload::model::{DeviceProfile, LinFit, MappedFit};
    /// use gmprt_offload::SimBackend;
    ///
    /// let mut h100 = DeviceProfile::published_h100();
    /// assert_eq!(SimBackend::new(h100.clone()).mapped_time("saxpy", 10, 120.0), None);
    /// let fit = LinFit::known(7e-6, 1e-9);
    /// let k = h100.kernels.iter_mut().find(|k| k.name == "saxpy").unwrap();
    /// k.mapped = Some(MappedFit { max_bytes: 65536.0, fit, samples: vec![] });
    /// let sim = SimBackend::new(h100.clone());
    /// let t = sim.mapped_time("saxpy", 10, 120.0).unwrap();
    /// assert!((t.as_secs_f64() - (h100.launch_overhead() + 7e-6 + 10e-9)).abs() < 1e-9, "{t:?}");
    /// assert_eq!(sim.mapped_time("saxpy", 10_000, 120_000.0), None); // past 64 KiB: copies
    /// ```
    pub fn mapped_time(&self, job_name: &str, n: usize, bytes: f64) -> Option<Duration> {
        let k = self.profile.job_kernel(job_name)?;
        let m = k.mapped.as_ref().filter(|m| m.maps(bytes))?;
        Some(duration(self.profile.launch_overhead() + m.fit.eval(k.size.work(n as f64))))
    }

    /// Work units of a slot run of `job_name` over `n` items writing `out_words` words (see
    /// the module docs); `None` when the profile has no such kernel.
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// use gmprt_offload::SimBackend;
    ///
    /// let sim = SimBackend::new(DeviceProfile::published_h100());
    /// assert_eq!(sim.slot_work("saxpy", 1000, 1000), Some(1000.0)); // items
    /// // 4 products of 16×16 matrices (4 · 256 output words): 2 · 4 · 16³ flops.
    /// assert_eq!(sim.slot_work("sgemm_batched", 4, 4 * 256), Some(32768.0));
    /// assert_eq!(sim.slot_work("no_such_kernel", 4, 4), None);
    /// ```
    pub fn slot_work(&self, job_name: &str, n: usize, out_words: usize) -> Option<f64> {
        let k = self.profile.job_kernel(job_name)?;
        Some(match k.size {
            Size::Items { .. } => k.size.work(n as f64),
            Size::MatrixN => {
                let per = out_words as f64 / (n.max(1) as f64);
                2.0 * n as f64 * per.sqrt().powi(3)
            }
        })
    }
}

impl Backend for SimBackend {
    fn describe(&self) -> String {
        let known: Vec<&str> = self.profile.kernels.iter().map(|k| k.name.as_str()).collect();
        format!(
            "simulated from {} (CPU compute paced by the profile; kernels paced: {}; any other kernel: \
             its measured CPU time)",
            self.profile.label(),
            if known.is_empty() { "none".to_string() } else { known.join(", ") }
        )
    }

    fn new_slot(&self, in_words: usize, out_words: usize) -> Result<Box<dyn Slot>, OffloadError> {
        Ok(Box::new(HostSlot::new(in_words, out_words, self.clone())?))
    }

    fn check_memory(&self, need: &MemoryNeed) -> Result<(), OffloadError> {
        // Simulated "device" buffers are host memory, as on the Host device.
        need.check("host memory", MemoryParts::ALL, &host_available())
    }
}

/// The simulated device's [`Pacer`]: each phase waits for its engine and is paced to the
/// profile's prediction; every successful run is recorded (see the module docs).
impl Pacer for SimBackend {
    fn targets(
        &self,
        job: &dyn CudaJob,
        n: usize,
        in_words: usize,
        out_words: usize,
        phases: Phases,
    ) -> PhaseTimes {
        if phases == Phases::ALL
            && job.streams_io()
            && let Some(kernel) = self.mapped_time(job.name(), n, 4.0 * (in_words + out_words) as f64)
        {
            return PhaseTimes { kernel, ..PhaseTimes::default() };
        }
        let mut target = PhaseTimes::default();
        if phases.h2d {
            target.h2d = self.h2d_time(4.0 * in_words as f64);
        }
        if phases.kernel {
            target.kernel = self
                .slot_work(job.name(), n, out_words)
                .and_then(|w| self.kernel_time(job.name(), w))
                .unwrap_or(Duration::ZERO);
        }
        if phases.d2h {
            target.d2h = self.d2h_time(4.0 * out_words as f64);
        }
        target
    }

    fn upload_target(&self, ranges: &[std::ops::Range<usize>]) -> Duration {
        // One copy per range of the upload plan (`upload::upload_plan`, which merged the
        // touching ones), each with the profile's fixed cost: what separate
        // cudaMemcpyAsync calls cost on the device.
        ranges.iter().map(|r| self.h2d_time(4.0 * r.len() as f64)).sum()
    }

    fn phase<T>(&self, engine: Engine, target: Duration, work: impl FnOnce() -> T) -> (T, Duration) {
        let _engine = self.engines[engine as usize].lock();
        paced(target, work)
    }

    fn record(
        &self,
        job: &dyn Job,
        n: usize,
        in_words: usize,
        out_words: usize,
        target: PhaseTimes,
        measured: PhaseTimes,
    ) {
        self.push_pacing(Pacing { job: job.name(), n, in_words, out_words, target, measured });
    }
}
