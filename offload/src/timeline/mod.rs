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
//! `latency` module for how they are recorded). The report and its printing are the `report`
//! module's; this one holds the per-batch records and the ring they are kept in.
//!
//! # Serialisation
//!
//! Every type here is `serde::Serialize` (the `gmprt` command's `--json`), with serde's
//! defaults throughout so that they match the runtime's [`LatencySummary`] and `RuntimeStats`:
//! a [`Duration`] is `{"secs": u64, "nanos": u32}`, an `Option` is `null` or the value, enums
//! ([`CloseReason`], [`Side`], [`DeviceKind`]) are their lower-case names as strings.
//!
//! [`LatencySummary`]: gmprt_runtime::latency::LatencySummary
use crate::device::DeviceKind;
use serde::Serialize;
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

mod report;
pub use report::{fmt_bytes, fmt_duration, ModelError, PhaseSummary, Report};

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
}
