//! Latency distributions: the one summary shape every gmprt report uses.
//!
//! The runtime (`RuntimeStats::sched_latency`, `poll_time`) and the offload layer (the
//! Batcher's per-item queue wait and batch time) record into [`hdrhistogram`] histograms of
//! nanoseconds and report them as a [`LatencySummary`]: count, p50, p99, p99.9 and max, the
//! figures Go's `/sched/latencies`, tokio's poll-time histogram and Triton's per-request
//! report give.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::fmt;
use std::time::Duration;

/// Significant figures kept by every latency histogram: 2 gives ≤ 1% relative error on each
/// percentile with a few KiB per histogram (3 would be 10× the memory for a digit nobody
/// reads off a noisy machine).
pub const SIGFIG: u8 = 2;

/// A new histogram of nanoseconds, auto-resizing (a value past the current range grows it
/// rather than being dropped), with [`SIGFIG`] significant figures.
pub fn histogram() -> Histogram<u64> {
    // `new(sigfig)` auto-resizes; it only fails for sigfig > 5.
    Histogram::new(SIGFIG).expect("SIGFIG is a valid precision")
}

/// count, p50, p99, p99.9 and max of one latency distribution.
///
/// ```
/// use gmprt_runtime::latency::{histogram, LatencySummary};
/// let mut h = histogram();
/// for ns in 1..=1000u64 {
///     h.record(ns * 1000).unwrap(); // 1 µs .. 1 ms
/// }
/// let s = LatencySummary::from_histogram(&h);
/// assert_eq!(s.count, 1000);
/// assert!(s.p50 <= s.p99 && s.p99 <= s.p999 && s.p999 <= s.max);
/// assert!(s.max >= std::time::Duration::from_micros(990));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LatencySummary {
    /// Samples recorded.
    pub count: u64,
    /// Median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// 99.9th percentile.
    pub p999: Duration,
    /// Largest sample.
    pub max: Duration,
}

impl LatencySummary {
    /// Summarises a histogram of nanoseconds (all zero when it is empty).
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        let q = |q: f64| Duration::from_nanos(h.value_at_quantile(q));
        Self {
            count: h.len(),
            p50: q(0.50),
            p99: q(0.99),
            p999: q(0.999),
            max: Duration::from_nanos(h.max()),
        }
    }
}

impl fmt::Display for LatencySummary {
    /// `p50 1.2µs  p99 8.0µs  p99.9 20µs  max 1.1ms  (n=123456)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "p50 {:.1?}  p99 {:.1?}  p99.9 {:.1?}  max {:.1?}  (n={})",
            self.p50, self.p99, self.p999, self.max, self.count
        )
    }
}
