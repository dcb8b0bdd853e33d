//! Per-item latency of a [`Batcher`](super::Batcher): what Triton reports per request.
//!
//! Every item that enters a batch has three durations, all on the host's monotonic clock
//! ([`Instant`]):
//!
//! * **queue wait**: `submit` called → its batch starts (is taken by a slot worker). It
//!   includes waiting for room (backpressure) and for the batch to close (full, deadline,
//!   flush, shutdown) and for a free slot;
//! * **batch time**: its batch starts → its result is delivered (every output, or the batch's
//!   failure, written and `done` about to be set): staging, H2D, kernel, D2H and scatter;
//! * **latency**: submit → result delivered, the sum of the two.
//!
//! Items of failed batches count too (they got their result, an error). Items refused at
//! `submit` (invalid, after shutdown) never entered a batch and are not counted; the
//! Batcher's stats count them separately.
//!
//! # Recording protocol (cheap, no lock per item on the submit path)
//!
//! `submit` reads the clock once and stores the instant in the item's result entry, which it
//! writes anyway (under the batch lock it already takes). The slot worker that scatters the
//! batch knows the batch's start and delivery instants once, so it records the batch time
//! once per batch (`record_n` with the batch's item count) and each item's queue wait and
//! latency while it walks the entries (already under the batch lock, for the scatter). It
//! records into its own slot's [`ItemLatency`], whose mutex only that worker takes on the
//! hot path (once per batch) and [`Batcher::report`](super::Batcher::report) takes to merge,
//! so workers never contend with each other. Like the timeline, a batch is recorded before
//! any of its futures resolves: once every submit has resolved, the counts include all of
//! them.
//!
//! Histograms auto-resize ([`gmprt_runtime::latency::histogram`]) and are recorded with
//! `record_n`, which grows the range for a larger value. (Not `saturating_record`: that one
//! clamps to the current range instead of growing it, and a fresh histogram's range is tiny.)
//! `record_n` fails only if growing needs more buckets than `usize` can count, impossible on
//! a 64-bit host; should it fail, the sample is still counted, clamped to the range, so no
//! item is ever missing from the counts.
//!
//! # Example
//!
//! ```
//! use gmprt_offload::runtime::{spawn, Runtime};
//! use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
//!
//! let rt = Runtime::builder().procs(2).build().unwrap();
//! let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), BatcherConfig::default()).unwrap();
//! let b2 = b.clone();
//! rt.block_on(async move {
//!     let hs: Vec<_> = (0..200)
//!         .map(|i| {
//!             let b = b2.clone();
//!             spawn(async move { b.submit((i as f32, 1.0)).await })
//!         })
//!         .collect();
//!     for h in hs {
//!         h.await.unwrap().unwrap();
//!     }
//! });
//! // An item refused at submit never entered a batch: not counted.
//! assert!(rt.block_on(b.submit((f32::NAN, 1.0))).is_err());
//! // Every submit has resolved, so every batched item is in all three summaries.
//! let r = b.report();
//! assert_eq!((r.latency.count, r.queue_wait.count, r.batch_time.count), (200, 200, 200));
//! ```
use gmprt_runtime::latency::{histogram, LatencySummary};
use hdrhistogram::Histogram;
use std::time::{Duration, Instant};

/// Nanoseconds of `d`, clamped to `u64` (584 years: never reached).
fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Records `count` samples of `value`: grows the range if needed; clamped if it cannot (see
/// the module docs), never dropped.
fn put(h: &mut Histogram<u64>, value: u64, count: u64) {
    if h.record_n(value, count).is_err() {
        h.saturating_record_n(value, count);
    }
}

/// One slot worker's per-item latency histograms (nanoseconds).
pub(super) struct ItemLatency {
    latency: Histogram<u64>,
    queue_wait: Histogram<u64>,
    batch_time: Histogram<u64>,
}

impl Default for ItemLatency {
    fn default() -> Self {
        ItemLatency { latency: histogram(), queue_wait: histogram(), batch_time: histogram() }
    }
}

impl ItemLatency {
    /// Records one batch of items submitted at `submitted`, started at `start` and delivered
    /// at `delivered`.
    pub(super) fn record_batch(
        &mut self,
        start: Instant,
        delivered: Instant,
        submitted: impl Iterator<Item = (Instant, usize)>,
    ) {
        let batch = ns(delivered.saturating_duration_since(start));
        let mut items = 0;
        for (s, n) in submitted {
            let (wait, n) = (ns(start.saturating_duration_since(s)), n as u64);
            put(&mut self.queue_wait, wait, n);
            put(&mut self.latency, wait.saturating_add(batch), n);
            items += n;
        }
        put(&mut self.batch_time, batch, items);
    }

    /// Adds `other`'s samples to `self`.
    pub(super) fn merge(&mut self, other: &ItemLatency) {
        // `add` grows `into` as needed; it fails only where `record_n` would (see the module
        // docs), and then each value is put one by one, clamped, so none is dropped.
        for (into, from) in [
            (&mut self.latency, &other.latency),
            (&mut self.queue_wait, &other.queue_wait),
            (&mut self.batch_time, &other.batch_time),
        ] {
            if into.add(from).is_err() {
                for v in from.iter_recorded() {
                    put(into, v.value_iterated_to(), v.count_at_value());
                }
            }
        }
    }

    /// (latency, queue wait, batch time).
    pub(super) fn summaries(&self) -> (LatencySummary, LatencySummary, LatencySummary) {
        (
            LatencySummary::from_histogram(&self.latency),
            LatencySummary::from_histogram(&self.queue_wait),
            LatencySummary::from_histogram(&self.batch_time),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_counts_and_sums() {
        let mut l = ItemLatency::default();
        let t0 = Instant::now();
        let start = t0 + Duration::from_micros(100);
        let delivered = start + Duration::from_micros(50);
        // Two items: waited 100 µs and 40 µs.
        l.record_batch(start, delivered, [(t0, 1), (t0 + Duration::from_micros(60), 1)].into_iter());
        let mut total = ItemLatency::default();
        total.merge(&l);
        total.merge(&l);
        let (lat, wait, batch) = total.summaries();
        assert_eq!((lat.count, wait.count, batch.count), (4, 4, 4));
        // Histogram values carry SIGFIG = 2 digits: ±1%.
        let near = |d: Duration, us: u64| {
            d.as_nanos().abs_diff(u128::from(us) * 1000) * 100 <= u128::from(us) * 1000
        };
        assert!(near(wait.max, 100) && near(wait.p50, 40), "{wait:?}");
        assert!(near(batch.p50, 50) && near(batch.max, 50), "{batch:?}");
        assert!(near(lat.max, 150) && near(lat.p50, 90), "{lat:?}");
    }
}
