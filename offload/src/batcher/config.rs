//! A Batcher's configuration ([`BatcherConfig`], checked by `validate`), its limits, and
//! the [`Occupancy`] snapshot.
#[cfg(doc)]
use super::Batcher;
use super::Placement;
use crate::error::OffloadError;
use crate::model::CostModel;
use std::sync::Arc;
use std::time::Duration;

/// Largest accepted `max_batch`.
///
/// # Examples
///
/// ```
/// use gmprt_offload::batcher::MAX_BATCH_LIMIT;
/// use gmprt_offload::BatcherConfig;
///
/// let at = BatcherConfig { max_batch: MAX_BATCH_LIMIT, ..BatcherConfig::default() };
/// assert!(at.validate().is_ok());
/// let over = BatcherConfig { max_batch: MAX_BATCH_LIMIT + 1, ..at };
/// let e = over.validate().unwrap_err().to_string();
/// assert!(e.contains("max_batch must be in 1..=16777216, got 16777217"), "{e}");
/// ```
pub const MAX_BATCH_LIMIT: usize = 1 << 24;
/// Largest accepted `in_flight`.
///
/// # Examples
///
/// ```
/// use gmprt_offload::batcher::IN_FLIGHT_LIMIT;
/// use gmprt_offload::BatcherConfig;
///
/// let at = BatcherConfig { in_flight: IN_FLIGHT_LIMIT, ..BatcherConfig::default() };
/// assert!(at.validate().is_ok());
/// let over = BatcherConfig { in_flight: IN_FLIGHT_LIMIT + 1, ..at };
/// let e = over.validate().unwrap_err().to_string();
/// assert!(e.contains("in_flight must be in 1..=64") && e.ends_with("got 65"), "{e}");
/// ```
pub const IN_FLIGHT_LIMIT: usize = 64;
/// Largest accepted `max_delay`.
///
/// # Examples
///
/// ```
/// use gmprt_offload::batcher::MAX_DELAY_LIMIT;
/// use gmprt_offload::BatcherConfig;
/// use std::time::Duration;
///
/// let at = BatcherConfig { max_delay: MAX_DELAY_LIMIT, ..BatcherConfig::default() };
/// assert!(at.validate().is_ok());
/// let over = BatcherConfig { max_delay: MAX_DELAY_LIMIT + Duration::from_millis(1), ..at };
/// let e = over.validate().unwrap_err().to_string();
/// assert!(e.contains("max_delay must be at most 3600s, got 3600.001s"), "{e}");
/// ```
pub const MAX_DELAY_LIMIT: Duration = Duration::from_secs(3600);
/// Largest staging buffer (words, input or output) one slot may need: 4 GiB.
///
/// Checked by [`Batcher::new`] (it depends on the kernel), before anything is allocated.
///
/// # Examples
///
/// ```
/// use gmprt_offload::batcher::MAX_BATCH_LIMIT;
/// use gmprt_offload::{Batcher, BatcherConfig, Device, SmallSgemm};
///
/// // 8×8 products take 128 input words per item: 2²⁴ items would need 2³¹ words per slot.
/// let cfg = BatcherConfig { max_batch: MAX_BATCH_LIMIT, ..BatcherConfig::default() };
/// let e = Batcher::new(SmallSgemm { m: 8, n: 8, k: 8 }, &Device::host(), cfg).unwrap_err();
/// assert!(e.to_string().contains("exceeds the 1073741824-word slot limit; lower max_batch"), "{e}");
/// ```
pub const SLOT_WORDS_LIMIT: usize = 1 << 30;

/// How a [`Batcher`] forms batches and where it runs them.
///
/// # Examples
///
/// ```
/// use gmprt_offload::{BatcherConfig, Placement};
/// use std::time::Duration;
///
/// let c = BatcherConfig::default();
/// assert_eq!((c.max_batch, c.max_delay, c.in_flight), (1024, Duration::from_micros(200), 2));
/// assert_eq!(c.placement, Placement::Gpu);
/// assert!(c.model.is_none() && c.runtime.is_none());
/// // Latency first: close a batch as soon as a slot is free.
/// let eager = BatcherConfig { max_delay: Duration::ZERO, ..c.clone() };
/// assert!(eager.validate().is_ok());
/// assert_ne!(eager, c);
/// ```
#[derive(Clone, Debug)]
pub struct BatcherConfig {
    /// A batch closes when it holds this many items (1 ..= 2²⁴).
    pub max_batch: usize,
    /// ... or when its oldest item has waited this long (≤ 1 h; zero = as soon as a slot is
    /// free) — whichever comes first with *quiescence*: a batch that is not full also closes
    /// the moment the Batcher's runtime has nothing runnable (nothing queued, no M running on
    /// a P), since every task that could add an item has added it or parked, and
    /// waiting longer only delays the items already in it (`CloseReason::Quiescent`). So with
    /// green-task submitters `max_delay` is only an upper bound, reached when the runtime stays
    /// busy with other work; for submitters the runtime cannot see — plain threads, a
    /// `block_on`, tasks of another runtime — it is the bound, as before. On the Host device a
    /// batch closed on quiescence runs right there, on the P of the M that found the runtime
    /// idle (no worker thread in between): a Host kernel must compute, not block. The runtime
    /// watched is [`runtime`](Self::runtime)'s (else the one `Batcher::new` is called from,
    /// else that of the first task that opens a batch).
    ///
    /// The adaptive rule (close once the batch holds as many items as the last batch woke
    /// tasks) was measured beside it and not kept: no consistent gain, twice the batches
    /// (`benches/results/batcher-adaptive-rule-issue26.txt`).
    pub max_delay: Duration,
    /// Batches in flight at once = slots = streams = worker threads (1 ..= 64). Two let the
    /// copies of one batch overlap the kernel of another on a GPU.
    pub in_flight: usize,
    /// Where each batch runs (default [`Placement::Gpu`]: the Batcher's device).
    pub placement: Placement,
    /// The cost model [`Placement::Auto`] asks (required by `Auto`, ignored otherwise).
    pub model: Option<Arc<CostModel>>,
    /// The runtime whose Ps run CPU-placed batches. `None`: the runtime [`Batcher::new`] is
    /// called from, if any; with no runtime at all, CPU batches run on the slot's worker
    /// thread (one core).
    pub runtime: Option<gmprt_runtime::Handle>,
}

impl PartialEq for BatcherConfig {
    /// Field by field; two models are equal when they are the same `Arc`; runtimes compare by
    /// presence only (a `Handle` has no identity to compare).
    fn eq(&self, other: &Self) -> bool {
        self.runtime.is_some() == other.runtime.is_some()
            && self.max_batch == other.max_batch
            && self.max_delay == other.max_delay
            && self.in_flight == other.in_flight
            && self.placement == other.placement
            && match (&self.model, &other.model) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            }
    }
}

impl Default for BatcherConfig {
    /// `max_batch` 1024, `max_delay` 200 µs, `in_flight` 2, placement `Gpu`, no model.
    fn default() -> Self {
        BatcherConfig {
            max_batch: 1024,
            max_delay: Duration::from_micros(200),
            in_flight: 2,
            placement: Placement::Gpu,
            model: None,
            runtime: None,
        }
    }
}

impl BatcherConfig {
    /// Checks the ranges; `Err(Config)` says which value is wrong and what is accepted.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::{BatcherConfig, Placement};
    ///
    /// let c = BatcherConfig { in_flight: 0, ..BatcherConfig::default() };
    /// assert_eq!(
    ///     c.validate().unwrap_err().to_string(),
    ///     "invalid configuration: in_flight must be in 1..=64 (2 or more to overlap copies and kernels), got 0"
    /// );
    /// let auto = BatcherConfig { placement: Placement::Auto, ..BatcherConfig::default() };
    /// assert!(auto.validate().unwrap_err().to_string().contains("placement Auto needs a cost model"));
    /// assert!(BatcherConfig::default().validate().is_ok());
    /// ```
    pub fn validate(&self) -> Result<(), OffloadError> {
        let err = |m: String| Err(OffloadError::Config(m));
        if self.max_batch == 0 || self.max_batch > MAX_BATCH_LIMIT {
            return err(format!("max_batch must be in 1..={MAX_BATCH_LIMIT}, got {}", self.max_batch));
        }
        if self.in_flight == 0 || self.in_flight > IN_FLIGHT_LIMIT {
            return err(format!(
                "in_flight must be in 1..={IN_FLIGHT_LIMIT} (2 or more to overlap copies and kernels), got {}",
                self.in_flight
            ));
        }
        if self.max_delay > MAX_DELAY_LIMIT {
            return err(format!("max_delay must be at most {MAX_DELAY_LIMIT:?}, got {:?}", self.max_delay));
        }
        if self.placement == Placement::Auto && self.model.is_none() {
            return err("placement Auto needs a cost model (BatcherConfig::model); none was given".into());
        }
        Ok(())
    }
}

/// A snapshot of a Batcher's load.
///
/// # Examples
///
/// ```
/// use gmprt_offload::{Batcher, BatcherConfig, Device, Occupancy, Saxpy};
///
/// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), BatcherConfig::default()).unwrap();
/// assert_eq!(b.occupancy(), Occupancy::default()); // idle: nothing open, waiting or running
/// b.shutdown();
/// assert_eq!(b.occupancy(), Occupancy { closed: true, ..Occupancy::default() });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Occupancy {
    /// Items in the open batch.
    pub open_items: usize,
    /// Submits waiting for room (backpressure), not counting woken ones.
    pub waiting: usize,
    /// Room in the open batch reserved for woken waiters.
    pub reserved: usize,
    /// Slots running a batch.
    pub busy_slots: usize,
    /// Whether the Batcher is shut down.
    pub closed: bool,
}
