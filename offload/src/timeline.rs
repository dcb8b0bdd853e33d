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
use crate::device::DeviceKind;
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

/// How many timelines a Batcher keeps (older ones are dropped; the aggregates keep counting).
pub const TIMELINE_CAPACITY: usize = 4096;

/// Why a batch closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CloseReason {
    /// It held `max_batch` items.
    Full,
    /// Its oldest item had waited `max_delay`.
    Deadline,
    /// [`Batcher::flush`](crate::Batcher::flush) was called while it was open.
    Flush,
    /// The Batcher was shutting down.
    Shutdown,
}

impl CloseReason {
    /// Lower-case name (`"full"`, `"deadline"`, `"flush"`, `"shutdown"`).
    pub fn name(self) -> &'static str {
        match self {
            CloseReason::Full => "full",
            CloseReason::Deadline => "deadline",
            CloseReason::Flush => "flush",
            CloseReason::Shutdown => "shutdown",
        }
    }
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One batch, from its oldest item's arrival to the wake-up of its tasks.
#[derive(Clone, Debug, PartialEq)]
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
    /// Which slot (stream) of the Batcher ran it (0 .. `in_flight`).
    pub slot: usize,
    /// Whether the batch reached the device (its run was attempted: one launch).
    pub launched: bool,
    /// False when the batch failed (every item got `OffloadError::Batch`).
    pub ok: bool,
}

impl BatchTimeline {
    /// The device phases: h2d + kernel + d2h.
    pub fn device_time(&self) -> Duration {
        self.h2d + self.kernel + self.d2h
    }
}

/// Running aggregates over every batch a Batcher has finished (not only the retained ring).
/// Durations are sums.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
}

impl BatcherStats {
    /// Mean items per batch (0 with no batch).
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
        }
        self.max_n = self.max_n.max(t.n);
        self.queue_wait += t.queue_wait;
        self.staging += t.staging;
        self.h2d += t.h2d;
        self.kernel += t.kernel;
        self.d2h += t.d2h;
        self.scatter += t.scatter;
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
        Report { kernel, device, stats: *s, phases, window: self.ring.len() }
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
#[derive(Clone, Debug, PartialEq, Eq)]
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

/// A Batcher's summary: aggregates, per-phase distribution, and which device ran it.
/// `Display` prints it as a table.
#[derive(Clone, Debug, PartialEq)]
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
}

impl Report {
    /// Share of the device time (h2d + kernel + d2h, all batches) spent in transfers, in
    /// 0..=1; `None` before any device time was measured.
    pub fn transfer_share(&self) -> Option<f64> {
        let s = &self.stats;
        let transfers = (s.h2d + s.d2h).as_secs_f64();
        let total = transfers + s.kernel.as_secs_f64();
        (total > 0.0).then(|| transfers / total)
    }
}

/// `850 ns`, `12.3 µs`, `4.56 ms`, `1.23 s`.
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
            "  batches {} ({} failed; closed by: {} full, {} deadline, {} flush, {} shutdown), launches {}",
            s.batches,
            s.failed_batches,
            s.closed_full,
            s.closed_deadline,
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
        match self.transfer_share() {
            Some(t) => writeln!(
                f,
                "  device time: {:.1}% in transfers (h2d + d2h), {:.1}% in the kernel",
                t * 100.0,
                (1.0 - t) * 100.0
            )?,
            None => writeln!(f, "  device time: none measured yet")?,
        }
        write!(f, "  (count, median and p99 over the last {} batches; totals over all batches)", self.window)
    }
}
