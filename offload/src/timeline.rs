//! Per-batch timelines of a [`Batcher`](crate::Batcher): what each batch waited for and spent
//! in each phase, the last [`TIMELINE_CAPACITY`] of them kept in a ring, plus running
//! aggregates over all batches ([`BatcherStats`]) and a printable [`Report`].
//!
//! Clocks: `queue_wait`, `staging` and `scatter` are host phases measured with [`Instant`](std::time::Instant)
//! on the slot's worker thread; `h2d`, `kernel` and `d2h` are the device's own times
//! ([`PhaseTimes`](crate::PhaseTimes): CUDA events on a GPU, host clocks on Host). `start` is
//! the moment the batch closed, as an offset from the Batcher's creation; the batch opened
//! (its oldest item arrived) at `start - queue_wait`, and its phases follow `start` in the
//! order staging, h2d, kernel, d2h, scatter. All fields are public so that a trace exporter
//! can lay batches out on per-slot lanes.
//!
//! Placement: each timeline says which side ran the batch ([`Side`]: the device, or
//! [`Job::run_host`](crate::Job::run_host) on the slot's worker thread for
//! [`Placement::Cpu`](crate::Placement::Cpu)); a CPU-run batch has zero `h2d`/`d2h`, its
//! `kernel` is the CPU time, and `launched` is false. Under
//! [`Placement::Auto`](crate::Placement::Auto) each timeline also carries the cost model's
//! [`PlacementDecision`] (both predictions and the measured time of the chosen side), and the
//! [`Report`] summarises decisions per side and the model's relative error.
//!
//! Per item: the [`Report`] also gives each item's submit → result latency, split into queue
//! wait (submit → its batch starts) and batch time (batch start → result delivered), as
//! [`LatencySummary`]s (p50, p99, p99.9, max over every item ever batched; see the Batcher's
//! `latency` module for how they are recorded).
//!
//! # Serialisation
//!
//! Every type here is `serde::Serialize` (the `gmprt` command's `--json`), with serde's
//! defaults throughout so that they match the runtime's [`LatencySummary`] and `RuntimeStats`:
//! a [`Duration`] is `{"secs": u64, "nanos": u32}`, an `Option` is `null` or the value, enums
//! ([`CloseReason`], [`Side`], [`DeviceKind`]) are their lower-case names as strings.
use crate::device::DeviceKind;
use gmprt_runtime::latency::LatencySummary;
use serde::Serialize;
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

/// How many timelines a Batcher keeps (older ones are dropped; the aggregates keep counting).
///
/// # Examples
///
/// ```
/// use gmprt_offload::runtime::Runtime;
/// use gmprt_offload::timeline::TIMELINE_CAPACITY;
/// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
///
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// let cfg = BatcherConfig { max_batch: 8, ..BatcherConfig::default() };
/// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), cfg).unwrap();
/// rt.block_on(b.submit_many(vec![(1.0, 2.0); 64])).unwrap();
/// // The ring keeps at most TIMELINE_CAPACITY batches; the report's window is the ring.
/// let kept = b.timelines().len();
/// assert!(kept >= 8 && kept <= TIMELINE_CAPACITY);
/// assert_eq!(b.report().window, kept);
/// ```
pub const TIMELINE_CAPACITY: usize = 4096;

/// Why a batch closed.
///
/// # Examples
///
/// ```
/// use gmprt_offload::runtime::Runtime;
/// use gmprt_offload::{Batcher, BatcherConfig, CloseReason, Device, Saxpy};
/// use std::time::Duration;
///
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// let cfg = BatcherConfig { max_batch: 4, max_delay: Duration::from_secs(60), ..BatcherConfig::default() };
/// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), cfg).unwrap();
/// // Four items fill a batch: it closes as Full, long before its 60 s deadline.
/// let ys = rt.block_on(b.submit_many((0..4).map(|i| (i as f32, 0.0)).collect())).unwrap();
/// assert_eq!(ys, [0.0, 2.0, 4.0, 6.0]);
/// let t = &b.timelines()[0];
/// assert_eq!((t.n, t.closed_by), (4, CloseReason::Full));
/// assert_eq!(b.stats().closed_full, 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CloseReason {
    /// It held `max_batch` items.
    Full,
    /// Its oldest item had waited `max_delay`.
    Deadline,
    /// [`Batcher::flush`](crate::Batcher::flush) was called while it was open.
    Flush,
    /// The Batcher was shutting down.
    Shutdown,
    /// The runtime went quiescent while it was open: no task runnable and none running, so
    /// every task that could add an item had added it or parked (see
    /// [`BatcherConfig::max_delay`](crate::BatcherConfig::max_delay)).
    Quiescent,
}

impl CloseReason {
    /// Lower-case name (`"full"`, `"deadline"`, `"flush"`, `"shutdown"`, `"quiescent"`).
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::CloseReason;
    ///
    /// assert_eq!(CloseReason::Deadline.name(), "deadline");
    /// assert_eq!(CloseReason::Shutdown.to_string(), "shutdown"); // Display is the name
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            CloseReason::Full => "full",
            CloseReason::Deadline => "deadline",
            CloseReason::Flush => "flush",
            CloseReason::Shutdown => "shutdown",
            CloseReason::Quiescent => "quiescent",
        }
    }
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which side ran a batch.
///
/// # Examples
///
/// ```
/// use gmprt_offload::runtime::Runtime;
/// use gmprt_offload::{Batcher, BatcherConfig, Device, Placement, Saxpy, Side};
/// use std::time::Duration;
///
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// let cfg = BatcherConfig { placement: Placement::Cpu, ..BatcherConfig::default() };
/// let b = Batcher::new(Saxpy { a: 3.0 }, &Device::host(), cfg).unwrap();
/// assert_eq!(rt.block_on(b.submit((1.0, 1.0))).unwrap(), 4.0);
/// // A CPU-placed batch never reaches the device: no launch, no copies.
/// let t = &b.timelines()[0];
/// assert_eq!(t.placement, Side::Cpu);
/// assert!(!t.launched && t.ok);
/// assert_eq!((t.h2d, t.d2h, t.bytes_h2d), (Duration::ZERO, Duration::ZERO, 0));
/// assert_eq!(b.stats().cpu_batches, 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// [`Job::run_host`](crate::Job::run_host) on the CPU: in chunks over the runtime's Ps
    /// (`parallel_for`), or on the slot's worker thread (one core) when the Batcher has no
    /// runtime.
    Cpu,
    /// The Batcher's device (a GPU, the Host stand-in, or a simulated GPU).
    Gpu,
}

impl Side {
    /// `"cpu"` or `"gpu"`.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::Side;
    ///
    /// assert_eq!(Side::Cpu.name(), "cpu");
    /// assert_eq!(Side::Gpu.to_string(), "gpu");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Side::Cpu => "cpu",
            Side::Gpu => "gpu",
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One [`Placement::Auto`](crate::Placement::Auto) decision: what the cost model predicted
/// for each side, which it chose, and what the chosen side measured. The choice compares the
/// CPU time with the device's steady-state time per batch (its pipeline with `in_flight`
/// slots), while `predicted_gpu` records one batch's latency; so under load the device can
/// be chosen with a `predicted_gpu` above `predicted_cpu`.
///
/// # Examples
///
/// ```
/// use gmprt_offload::model::{CostModel, DeviceProfile};
/// use gmprt_offload::runtime::Runtime;
/// use gmprt_offload::{Batcher, BatcherConfig, Device, Placement, Saxpy, Side};
/// use std::sync::Arc;
///
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// let model = Arc::new(CostModel::new(DeviceProfile::published_h100()));
/// let cfg = BatcherConfig { placement: Placement::Auto, model: Some(model), ..BatcherConfig::default() };
/// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), cfg).unwrap();
/// rt.block_on(b.submit_many(vec![(1.0, 1.0); 100])).unwrap();
/// // One decision per batch, covering every item; the stats count the same choices.
/// let ds = b.decisions();
/// let s = b.stats();
/// assert_eq!(ds.len() as u64, s.decisions);
/// assert_eq!(ds.iter().map(|d| d.n).sum::<usize>(), 100);
/// let on_cpu = ds.iter().filter(|d| d.chose == Side::Cpu).count() as u64;
/// assert_eq!((s.decisions_cpu, s.cpu_batches), (on_cpu, on_cpu));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PlacementDecision {
    /// The batch's sequence number.
    pub batch: u64,
    /// Items in the batch.
    pub n: usize,
    /// The side that ran it.
    pub chose: Side,
    /// Predicted device time end to end (launch + H2D + kernel + D2H, inputs on the host).
    pub predicted_gpu: Duration,
    /// Predicted CPU time (on the one core a CPU-placed batch runs on).
    pub predicted_cpu: Duration,
    /// Measured time of the chosen side: h2d + kernel + d2h on the device, or the CPU run.
    pub measured: Duration,
}

impl PlacementDecision {
    /// The chosen side's prediction.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::timeline::PlacementDecision;
    /// use gmprt_offload::Side;
    /// use std::time::Duration;
    ///
    /// let us = Duration::from_micros;
    /// let d = PlacementDecision {
    ///     batch: 0,
    ///     n: 1024,
    ///     chose: Side::Cpu,
    ///     predicted_gpu: us(40),
    ///     predicted_cpu: us(10),
    ///     measured: us(12),
    /// };
    /// assert_eq!(d.predicted(), us(10));
    /// ```
    pub fn predicted(&self) -> Duration {
        match self.chose {
            Side::Cpu => self.predicted_cpu,
            Side::Gpu => self.predicted_gpu,
        }
    }

    /// |predicted − measured| / measured for the chosen side (`None` if nothing was
    /// measured, e.g. the batch failed).
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::timeline::PlacementDecision;
    /// use gmprt_offload::Side;
    /// use std::time::Duration;
    ///
    /// let us = Duration::from_micros;
    /// let d = PlacementDecision {
    ///     batch: 3,
    ///     n: 4096,
    ///     chose: Side::Gpu,
    ///     predicted_gpu: us(30),
    ///     predicted_cpu: us(50),
    ///     measured: us(25),
    /// };
    /// // |30 − 25| / 25
    /// assert!((d.rel_error().unwrap() - 0.2).abs() < 1e-12);
    /// assert_eq!(PlacementDecision { measured: Duration::ZERO, ..d }.rel_error(), None);
    /// ```
    pub fn rel_error(&self) -> Option<f64> {
        let m = self.measured.as_secs_f64();
        (m > 0.0).then(|| (self.predicted().as_secs_f64() - m).abs() / m)
    }
}

/// One batch, from its oldest item's arrival to the wake-up of its tasks.
///
/// # Examples
///
/// ```
/// use gmprt_offload::runtime::Runtime;
/// use gmprt_offload::{Batcher, BatcherConfig, Device, DeviceKind, Saxpy, Side};
///
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// let cfg = BatcherConfig { max_batch: 16, ..BatcherConfig::default() };
/// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), cfg).unwrap();
/// rt.block_on(b.submit_many(vec![(1.0, 1.0); 16])).unwrap();
/// let t = &b.timelines()[0];
/// assert_eq!((t.batch, t.n, t.device, t.placement), (0, 16, DeviceKind::Host, Side::Gpu));
/// assert!(t.ok && t.launched && t.predicted.is_none());
/// // SAXPY moves 2 words (x, y) in and 1 out per item.
/// assert_eq!((t.bytes_h2d, t.bytes_d2h), (16 * 8, 16 * 4));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BatchTimeline {
    /// Sequence number (batches are numbered in the order they opened, from 0).
    pub batch: u64,
    /// Items in the batch (1 ..= `max_batch`).
    pub n: usize,
    /// Why it closed.
    pub closed_by: CloseReason,
    /// When it closed (was taken by a slot), as an offset from the Batcher's creation.
    pub start: Duration,
    /// How long its oldest item waited until the batch closed (includes waiting for a free
    /// slot when all were busy).
    pub queue_wait: Duration,
    /// Writing the items into the slot's staging buffer (host).
    pub staging: Duration,
    /// Host → device copy (device clock).
    pub h2d: Duration,
    /// The one kernel launch (device clock).
    pub kernel: Duration,
    /// Device → host copy (device clock).
    pub d2h: Duration,
    /// Reading each item's result out of the staging buffer into its task's slot (host).
    pub scatter: Duration,
    /// Bytes copied host → device (0 if the run failed).
    pub bytes_h2d: u64,
    /// Bytes copied device → host (0 if the run failed).
    pub bytes_d2h: u64,
    /// Which kind of device ran it.
    pub device: DeviceKind,
    /// Which of the Batcher's devices ran it: 0 for [`Batcher::new`], its index in the
    /// slice given to [`Batcher::spread`] otherwise.
    ///
    /// [`Batcher::new`]: crate::Batcher::new
    /// [`Batcher::spread`]: crate::Batcher::spread
    pub device_index: usize,
    /// Which slot (stream) of the Batcher ran it (0 .. `in_flight` × devices).
    pub slot: usize,
    /// Whether the batch reached the device (its run was attempted: one launch).
    pub launched: bool,
    /// False when the batch failed (every item got `OffloadError::Batch`).
    pub ok: bool,
    /// Which side ran it (`Gpu` = the device, also for `Placement::Gpu`).
    pub placement: Side,
    /// The cost model's decision, under `Placement::Auto` only.
    pub predicted: Option<PlacementDecision>,
}

impl BatchTimeline {
    /// The device phases: h2d + kernel + d2h.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::runtime::Runtime;
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), BatcherConfig::default()).unwrap();
    /// rt.block_on(b.submit((1.0, 1.0))).unwrap();
    /// let t = &b.timelines()[0];
    /// assert_eq!(t.device_time(), t.h2d + t.kernel + t.d2h);
    /// ```
    pub fn device_time(&self) -> Duration {
        self.h2d + self.kernel + self.d2h
    }
}

/// Running aggregates over every batch a Batcher has finished (not only the retained ring).
/// Durations are sums.
///
/// # Examples
///
/// ```
/// use gmprt_offload::runtime::Runtime;
/// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
///
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// let cfg = BatcherConfig { max_batch: 10, ..BatcherConfig::default() };
/// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), cfg).unwrap();
/// rt.block_on(b.submit_many(vec![(1.0, 1.0); 25])).unwrap();
/// // An invalid item is refused at submit and never enters a batch.
/// assert!(rt.block_on(b.submit((f32::NAN, 1.0))).is_err());
/// let s = b.stats();
/// assert_eq!((s.items, s.failed_items, s.rejected_invalid), (25, 0, 1));
/// assert!(s.batches >= 3 && s.max_n <= 10);
/// assert_eq!(s.closed_full + s.closed_deadline + s.closed_flush + s.closed_shutdown + s.closed_quiescent, s.batches);
/// assert_eq!(s.bytes_h2d, 25 * 8);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BatcherStats {
    /// Batches finished (successful or failed).
    pub batches: u64,
    /// Batches that failed.
    pub failed_batches: u64,
    /// Items in finished batches.
    pub items: u64,
    /// Items that got an error because their batch failed.
    pub failed_items: u64,
    /// Device runs attempted (one launch per batch that got to the device).
    pub launches: u64,
    /// Bytes copied host → device.
    pub bytes_h2d: u64,
    /// Bytes copied device → host.
    pub bytes_d2h: u64,
    /// Batches closed because they were full.
    pub closed_full: u64,
    /// Batches closed by their deadline.
    pub closed_deadline: u64,
    /// Batches closed by a flush.
    pub closed_flush: u64,
    /// Batches closed by shutdown.
    pub closed_shutdown: u64,
    /// Batches closed because the runtime went quiescent (every submitter it runs parked).
    pub closed_quiescent: u64,
    /// The largest batch so far.
    pub max_n: usize,
    /// Submits refused by `validate` (never entered a batch).
    pub rejected_invalid: u64,
    /// Submits refused because the Batcher was shut down (never entered a batch).
    pub rejected_closed: u64,
    /// Sum of oldest-item waits.
    pub queue_wait: Duration,
    /// Sum of staging times.
    pub staging: Duration,
    /// Sum of H2D times.
    pub h2d: Duration,
    /// Sum of kernel times.
    pub kernel: Duration,
    /// Sum of D2H times.
    pub d2h: Duration,
    /// Sum of scatter times.
    pub scatter: Duration,
    /// Batches run on the CPU (`Placement::Cpu`, or `Auto` choosing the CPU).
    pub cpu_batches: u64,
    /// Batches placed by the cost model (`Placement::Auto`).
    pub decisions: u64,
    /// Of those, the ones it sent to the CPU.
    pub decisions_cpu: u64,
}

impl BatcherStats {
    /// Mean items per batch (0 with no batch).
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::BatcherStats;
    ///
    /// assert_eq!(BatcherStats::default().items_per_batch(), 0.0);
    /// let s = BatcherStats { batches: 4, items: 10, ..BatcherStats::default() };
    /// assert_eq!(s.items_per_batch(), 2.5);
    /// ```
    pub fn items_per_batch(&self) -> f64 {
        if self.batches == 0 {
            0.0
        } else {
            self.items as f64 / self.batches as f64
        }
    }

    fn add(&mut self, t: &BatchTimeline) {
        self.batches += 1;
        self.items += t.n as u64;
        if !t.ok {
            self.failed_batches += 1;
            self.failed_items += t.n as u64;
        }
        self.launches += u64::from(t.launched);
        self.bytes_h2d += t.bytes_h2d;
        self.bytes_d2h += t.bytes_d2h;
        match t.closed_by {
            CloseReason::Full => self.closed_full += 1,
            CloseReason::Deadline => self.closed_deadline += 1,
            CloseReason::Flush => self.closed_flush += 1,
            CloseReason::Shutdown => self.closed_shutdown += 1,
            CloseReason::Quiescent => self.closed_quiescent += 1,
        }
        self.max_n = self.max_n.max(t.n);
        self.queue_wait += t.queue_wait;
        self.staging += t.staging;
        self.h2d += t.h2d;
        self.kernel += t.kernel;
        self.d2h += t.d2h;
        self.scatter += t.scatter;
        self.cpu_batches += u64::from(t.placement == Side::Cpu);
        if let Some(d) = &t.predicted {
            self.decisions += 1;
            self.decisions_cpu += u64::from(d.chose == Side::Cpu);
        }
    }
}

/// The ring of recent timelines plus the aggregates (behind the Batcher's log lock).
#[derive(Debug, Default)]
pub(crate) struct TimelineLog {
    ring: VecDeque<BatchTimeline>,
    stats: BatcherStats,
}

impl TimelineLog {
    /// Adds a finished batch.
    pub(crate) fn record(&mut self, t: BatchTimeline) {
        self.stats.add(&t);
        if self.ring.len() == TIMELINE_CAPACITY {
            self.ring.pop_front();
        }
        self.ring.push_back(t);
    }

    pub(crate) fn stats(&self) -> BatcherStats {
        self.stats
    }

    pub(crate) fn timelines(&self) -> Vec<BatchTimeline> {
        self.ring.iter().cloned().collect()
    }

    /// A report over the retained window (medians, p99s) and all batches (totals).
    pub(crate) fn report(&self, kernel: &'static str, device: String) -> Report {
        let s = &self.stats;
        let phase = |name: &'static str, total: Duration, get: fn(&BatchTimeline) -> Duration| {
            let mut v: Vec<Duration> = self.ring.iter().map(get).collect();
            v.sort_unstable();
            PhaseSummary {
                phase: name,
                count: v.len(),
                median: percentile(&v, 0.5),
                p99: percentile(&v, 0.99),
                total,
            }
        };
        let phases = vec![
            phase("queue_wait", s.queue_wait, |t| t.queue_wait),
            phase("staging", s.staging, |t| t.staging),
            phase("h2d", s.h2d, |t| t.h2d),
            phase("kernel", s.kernel, |t| t.kernel),
            phase("d2h", s.d2h, |t| t.d2h),
            phase("scatter", s.scatter, |t| t.scatter),
        ];
        let mut errors: Vec<f64> = self.ring.iter().filter_map(|t| t.predicted?.rel_error()).collect();
        errors.sort_unstable_by(f64::total_cmp);
        let model_error = (!errors.is_empty()).then(|| ModelError {
            count: errors.len(),
            median: errors[(errors.len() - 1) / 2],
            max: errors[errors.len() - 1],
        });
        Report {
            kernel,
            device,
            stats: *s,
            phases,
            window: self.ring.len(),
            model_error,
            latency: LatencySummary::default(),
            queue_wait: LatencySummary::default(),
            batch_time: LatencySummary::default(),
        }
    }
}

/// Nearest-rank percentile of sorted `v` (zero when empty).
fn percentile(v: &[Duration], p: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// One phase's line in a [`Report`].
///
/// # Examples
///
/// ```
/// use gmprt_offload::runtime::Runtime;
/// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
///
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// let cfg = BatcherConfig { max_batch: 4, ..BatcherConfig::default() };
/// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), cfg).unwrap();
/// rt.block_on(b.submit_many(vec![(1.0, 1.0); 12])).unwrap();
/// let r = b.report();
/// let names: Vec<&str> = r.phases.iter().map(|p| p.phase).collect();
/// assert_eq!(names, ["queue_wait", "staging", "h2d", "kernel", "d2h", "scatter"]);
/// for p in &r.phases {
///     assert_eq!(p.count, r.window);
///     assert!(p.median <= p.p99 && p.p99 <= p.total);
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PhaseSummary {
    /// `queue_wait`, `staging`, `h2d`, `kernel`, `d2h` or `scatter`.
    pub phase: &'static str,
    /// Batches in the window the median and p99 are taken over.
    pub count: usize,
    /// Median over the window.
    pub median: Duration,
    /// 99th percentile (nearest rank) over the window.
    pub p99: Duration,
    /// Sum over all batches ever finished.
    pub total: Duration,
}

/// How far the cost model's predictions were from the measured times of the side it chose,
/// over the decisions in the retained window: |predicted − measured| / measured.
///
/// # Examples
///
/// ```
/// use gmprt_offload::model::{CostModel, DeviceProfile};
/// use gmprt_offload::runtime::Runtime;
/// use gmprt_offload::{Batcher, BatcherConfig, Device, Placement, Saxpy};
/// use std::sync::Arc;
///
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// let model = Arc::new(CostModel::new(DeviceProfile::published_h100()));
/// let cfg = BatcherConfig { placement: Placement::Auto, model: Some(model), ..BatcherConfig::default() };
/// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), cfg).unwrap();
/// rt.block_on(b.submit_many(vec![(1.0, 1.0); 100])).unwrap();
/// // Every Auto decision with a measured time is counted.
/// let e = b.report().model_error.expect("Auto decisions were made");
/// let measured = b.decisions().iter().filter(|d| d.rel_error().is_some()).count();
/// assert_eq!(e.count, measured);
/// assert!(0.0 <= e.median && e.median <= e.max);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ModelError {
    /// Decisions with a measured time in the window.
    pub count: usize,
    /// Median relative error (lower median).
    pub median: f64,
    /// Largest relative error.
    pub max: f64,
}

/// A Batcher's summary: aggregates, per-phase distribution, and which device ran it.
/// `Display` prints it as a table.
///
/// # Examples
///
/// ```
/// use gmprt_offload::runtime::Runtime;
/// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
///
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), BatcherConfig::default()).unwrap();
/// rt.block_on(b.submit_many(vec![(1.0, 1.0); 100])).unwrap();
/// let r = b.report();
/// assert_eq!((r.kernel, r.stats.items), ("saxpy", 100));
/// // Every item's latency is counted, once per item.
/// assert_eq!((r.latency.count, r.queue_wait.count, r.batch_time.count), (100, 100, 100));
/// assert!(r.model_error.is_none()); // no Placement::Auto
/// let text = r.to_string();
/// assert!(text.starts_with("batcher report: kernel saxpy on "));
/// assert!(text.contains("items 100 (0 failed)"));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// Kernel name.
    pub kernel: &'static str,
    /// The device's describe line.
    pub device: String,
    /// Aggregates over all batches.
    pub stats: BatcherStats,
    /// One line per phase, in pipeline order.
    pub phases: Vec<PhaseSummary>,
    /// Timelines in the window (≤ [`TIMELINE_CAPACITY`]).
    pub window: usize,
    /// The cost model's error over the window's `Auto` decisions (`None` without any).
    pub model_error: Option<ModelError>,
    /// Per item, over every item ever batched: `submit` called → result delivered.
    pub latency: LatencySummary,
    /// Per item: `submit` called → its batch started (taken by a slot).
    pub queue_wait: LatencySummary,
    /// Per item: its batch started → result delivered (staging, run, scatter).
    pub batch_time: LatencySummary,
}

impl Report {
    /// Share of the device time (h2d + kernel + d2h, all batches) spent in transfers, in
    /// 0..=1; `None` before any device time was measured.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::timeline::Report;
    /// use gmprt_offload::{Batcher, BatcherConfig, BatcherStats, Device, Saxpy};
    /// use std::time::Duration;
    ///
    /// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), BatcherConfig::default()).unwrap();
    /// let fresh: Report = b.report();
    /// assert_eq!(fresh.transfer_share(), None); // nothing measured yet
    /// let ms = Duration::from_millis;
    /// let stats = BatcherStats { h2d: ms(2), kernel: ms(6), d2h: ms(2), ..BatcherStats::default() };
    /// let r = Report { stats, ..fresh };
    /// assert!((r.transfer_share().unwrap() - 0.4).abs() < 1e-12);
    /// ```
    pub fn transfer_share(&self) -> Option<f64> {
        let s = &self.stats;
        let transfers = (s.h2d + s.d2h).as_secs_f64();
        let total = transfers + s.kernel.as_secs_f64();
        (total > 0.0).then(|| transfers / total)
    }
}

/// `850 ns`, `12.3 µs`, `4.56 ms`, `1.23 s`.
///
/// # Examples
///
/// ```
/// use gmprt_offload::timeline::fmt_duration;
/// use std::time::Duration;
///
/// assert_eq!(fmt_duration(Duration::from_nanos(850)), "850 ns");
/// assert_eq!(fmt_duration(Duration::from_nanos(12_345)), "12.3 µs");
/// assert_eq!(fmt_duration(Duration::from_micros(4_560)), "4.56 ms");
/// assert_eq!(fmt_duration(Duration::from_millis(1_234)), "1.234 s");
/// ```
pub fn fmt_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", ns as f64 / 1e6)
    } else {
        format!("{:.3} s", ns as f64 / 1e9)
    }
}

/// `512 B`, `1.5 kB`, `24.0 MB`, `1.20 GB` (decimal units).
///
/// # Examples
///
/// ```
/// use gmprt_offload::timeline::fmt_bytes;
///
/// assert_eq!(fmt_bytes(512), "512 B");
/// assert_eq!(fmt_bytes(1_500), "1.5 kB");
/// assert_eq!(fmt_bytes(24_000_000), "24.0 MB");
/// assert_eq!(fmt_bytes(1_200_000_000), "1.20 GB");
/// ```
pub fn fmt_bytes(b: u64) -> String {
    let f = b as f64;
    if b < 1_000 {
        format!("{b} B")
    } else if b < 1_000_000 {
        format!("{:.1} kB", f / 1e3)
    } else if b < 1_000_000_000 {
        format!("{:.1} MB", f / 1e6)
    } else {
        format!("{:.2} GB", f / 1e9)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.stats;
        writeln!(f, "batcher report: kernel {} on {}", self.kernel, self.device)?;
        writeln!(
            f,
            "  batches {} ({} failed; closed by: {} full, {} deadline, {} quiescent, {} flush, {} shutdown), launches {}",
            s.batches,
            s.failed_batches,
            s.closed_full,
            s.closed_deadline,
            s.closed_quiescent,
            s.closed_flush,
            s.closed_shutdown,
            s.launches
        )?;
        writeln!(
            f,
            "  items {} ({} failed), items/batch {:.1} mean, {} max",
            s.items,
            s.failed_items,
            s.items_per_batch(),
            s.max_n
        )?;
        if s.rejected_invalid + s.rejected_closed > 0 {
            writeln!(
                f,
                "  refused at submit: {} invalid, {} after shutdown",
                s.rejected_invalid, s.rejected_closed
            )?;
        }
        writeln!(
            f,
            "  bytes over PCIe: {} host→device, {} device→host",
            fmt_bytes(s.bytes_h2d),
            fmt_bytes(s.bytes_d2h)
        )?;
        writeln!(f, "  {:<11} {:>7} {:>11} {:>11} {:>11}", "phase", "count", "median", "p99", "total")?;
        for p in &self.phases {
            writeln!(
                f,
                "  {:<11} {:>7} {:>11} {:>11} {:>11}",
                p.phase,
                p.count,
                fmt_duration(p.median),
                fmt_duration(p.p99),
                fmt_duration(p.total)
            )?;
        }
        writeln!(f, "  per item    submit → result: {}", self.latency)?;
        writeln!(f, "              queue wait:      {}", self.queue_wait)?;
        writeln!(f, "              batch time:      {}", self.batch_time)?;
        match self.transfer_share() {
            Some(t) => writeln!(
                f,
                "  device time: {:.1}% in transfers (h2d + d2h), {:.1}% in the kernel",
                t * 100.0,
                (1.0 - t) * 100.0
            )?,
            None => writeln!(f, "  device time: none measured yet")?,
        }
        if s.cpu_batches > 0 || s.decisions > 0 {
            writeln!(
                f,
                "  placement: {} batches on the CPU (worker thread), {} on the device",
                s.cpu_batches,
                s.batches - s.cpu_batches
            )?;
        }
        if s.decisions > 0 {
            writeln!(
                f,
                "  cost-model decisions: {} (cpu {}, gpu {})",
                s.decisions,
                s.decisions_cpu,
                s.decisions - s.decisions_cpu
            )?;
        }
        if let Some(e) = &self.model_error {
            writeln!(
                f,
                "  model error |predicted - measured| / measured over {} decisions: median {:.1}%, max {:.1}%",
                e.count,
                e.median * 100.0,
                e.max * 100.0
            )?;
        }
        write!(f, "  (count, median and p99 over the last {} batches; totals over all batches)", self.window)
    }
}
