//! The [`Report`] of a Batcher's timelines: per-phase medians and p99s over the retained
//! window, totals over every batch, the cost model's error, the items' latencies, and how it
//! prints. Built from the parent module's ring ([`TimelineLog`]); the per-item latencies are
//! filled in by the Batcher (its `latency` module).

use super::{BatchTimeline, BatcherStats, TimelineLog};
use gmprt_runtime::latency::LatencySummary;
use serde::Serialize;
use std::fmt;
use std::time::Duration;

impl TimelineLog {
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
    /// Timelines in the window (≤ [`TIMELINE_CAPACITY`](super::TIMELINE_CAPACITY)).
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
