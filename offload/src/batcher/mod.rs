//! [`Batcher`]: many green tasks' `submit(item).await` coalesced into one launch per batch.
//!
//! ```
//! use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
//! use gmprt_offload::runtime::{spawn, Runtime};
//!
//! let rt = Runtime::builder().procs(2).build().unwrap();
//! let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), BatcherConfig::default()).unwrap();
//! let b2 = b.clone();
//! let ys: Vec<f32> = rt.block_on(async move {
//!     // 1000 tasks, one item each; the Batcher runs them as a few launches.
//!     let hs: Vec<_> = (0..1000)
//!         .map(|i| {
//!             let b = b2.clone();
//!             spawn(async move { b.submit((i as f32, 1.0)).await })
//!         })
//!         .collect();
//!     let mut ys = Vec::new();
//!     for h in hs {
//!         ys.push(h.await.unwrap().unwrap());
//!     }
//!     ys
//! });
//! assert_eq!(ys[10], 21.0);
//! assert_eq!(b.stats().items, 1000); // in b.stats().launches launches
//! println!("{}", b.report());
//! ```
//!
//! # Placement
//!
//! [`BatcherConfig::placement`] says where each closed batch runs: on the device
//! ([`Placement::Gpu`], the default), on the CPU ([`Placement::Cpu`]: chunks over the runtime's
//! Ps with `parallel_for`, the device untouched), or per batch where the
//! configured [`CostModel`] predicts it is faster ([`Placement::Auto`], opt-in). The runtime
//! itself never moves a task: see [`Placement`]'s module for why. Staging, scatter and every
//! guarantee below are the same whichever side runs a batch.
//!
//! # Thread model
//!
//! * **Submitters** are green tasks (or any thread). [`Batcher::submit`] and the [`Submit`]
//!   future never block their OS thread: they take the Batcher's `central` lock or one
//!   batch's lock for a bounded, short critical section (no waiting, no I/O inside), and
//!   otherwise return `Pending` with their waker registered. So a runtime with `procs = 1`
//!   cannot deadlock on a Batcher: its only M is never held by one.
//! * **Slot workers**: `in_flight` plain OS threads (not runtime threads), each owning one
//!   [`Slot`] (a stream plus staging and device buffers sized for `max_batch` items, created
//!   once in [`Batcher::new`]). A worker is idle or runs exactly one batch. There is no
//!   separate dispatcher: an *idle* worker is the one that watches the open batch's deadline
//!   (`Condvar::wait_until` the oldest item's deadline) and closes it.
//!
//! # Protocol
//!
//! State under `central` (a `parking_lot::Mutex`, so it cannot be poisoned):
//! the *open batch* (its items, in a `Vec` with capacity `max_batch`, and its
//! `BatchShared`, opened at the first item), the `closed` flag, and a FIFO queue of
//! submitters waiting for room (`waiters`, by ticket) with the count of room `reserved` for
//! woken waiters.
//!
//! 1. *Accept.* An item is validated ([`BatchKernel::validate`]) and then, under `central`,
//!    pushed into the open batch if there is unreserved room (`len + reserved < max_batch`),
//!    getting its index `i` and an `Arc` of the batch's `BatchShared`. The first item opens
//!    the batch (records its time: the deadline is `opened + max_delay`); the first and the
//!    `max_batch`-th item notify one idle worker. `submit` tries this at once; a submit that
//!    finds no room becomes a waiter (below).
//! 2. *Close.* An idle worker, under `central`, takes the open batch when it is full, or
//!    shutting down, or flushed, or its deadline has passed; otherwise it waits on the
//!    condvar (until the deadline when a batch is open). Taking swaps the items `Vec` with the
//!    worker's empty spare (no allocation), so a new, empty open batch exists at once, and
//!    hands `max_batch - reserved` of the room to the front waiters (popped, `reserved += 1`,
//!    woken after the lock is released).
//! 3. *Run.* Outside any lock, the worker stages the items into the slot's staging buffer
//!    ([`BatchKernel::stage`]), drops the items, and calls [`Slot::run`] once (H2D, one
//!    launch, D2H).
//! 4. *Scatter.* Under the batch's own lock the worker writes each item's output
//!    ([`BatchKernel::gather`]) or the batch's failure, records the timeline, sets `done`,
//!    takes the registered wakers, and wakes them after unlocking. A [`Submit`] in the
//!    accepted state locks its batch on poll: `done` → it takes its output (or clones the
//!    failure); not done → it stores its waker.
//!
//! Backpressure: a batch can only close into a free slot, so at most `in_flight` batches run
//! and one is open: memory is bounded by `(in_flight + 1) · max_batch` items (plus the
//! submitters' own futures). When the open batch is full and every slot is busy, a submit
//! waits (registers its waker in `waiters`) until a worker takes the batch. Waiters are
//! served in FIFO order, and a newcomer cannot overtake them: invariant (under `central`)
//! **(R)** `len + reserved ≤ max_batch`, and `waiters` non-empty ⇒ `len + reserved ==
//! max_batch`. A woken waiter holds a reservation, so it always finds room; a waiter that is
//! dropped gives its reservation to the next waiter.
//!
//! # Why no item is lost
//!
//! An accepted item is in the open batch (under `central`) or in a taken batch (owned by one
//! worker, which always completes step 4, even when staging, the run or a gather fails or
//! panics: panics are caught and fail the batch). A worker exits only when, under
//! `central`, the Batcher is closed *and* the open batch is empty; once closed, nothing is
//! accepted, so nothing can arrive after it looked. Every other worker still finishes the
//! batch it holds. Shutdown (explicit or the drop of the last [`Batcher`] clone) sets
//! `closed` and notifies every worker, so an open batch is taken (`CloseReason::Shutdown`)
//! and run. A submit after shutdown, or one still waiting for room at shutdown, gets
//! [`OffloadError::Closed`] — it was never accepted.
//!
//! # Why no deadlock
//!
//! Lock order is `central` → one batch lock → the timeline log; workers never take
//! `central` while holding a batch lock, and submitters hold at most `central` → batch
//! lock (when accepting). Wakeups cannot be lost: every state change that an idle worker
//! waits for (first item, full batch, flush, shutdown) happens under `central` and is
//! followed by a notify; the worker re-checks its predicate under `central` before waiting.
//! Task wakeups likewise: a waker is stored under the lock that guards the condition it
//! waits for (`central` for room, the batch lock for `done`), and the party that changes the
//! condition takes the wakers under that same lock. Nothing a worker waits for depends on a
//! runtime thread making progress.
use crate::backend::{Phases, Slot};
use crate::device::{panic_message, Device};
use crate::error::OffloadError;
use crate::jobs::BatchKernel;
use crate::model::CostModel;
use crate::timeline::{
    BatchTimeline, BatcherStats, CloseReason, PlacementDecision, Report, Side, TimelineLog,
};

mod placement;
mod submit;

use parking_lot::{Condvar, Mutex};
pub use placement::Placement;
use std::collections::VecDeque;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Waker;
use std::time::{Duration, Instant};
pub use submit::Submit;
use submit::SubmitState;

/// Largest accepted `max_batch`.
pub const MAX_BATCH_LIMIT: usize = 1 << 24;
/// Largest accepted `in_flight`.
pub const IN_FLIGHT_LIMIT: usize = 64;
/// Largest accepted `max_delay`.
pub const MAX_DELAY_LIMIT: Duration = Duration::from_secs(3600);
/// Largest staging buffer (words, input or output) one slot may need: 4 GiB.
pub const SLOT_WORDS_LIMIT: usize = 1 << 30;
/// Result entries reserved up front per batch (a larger batch grows its entries by doubling).
const ENTRIES_UP_FRONT: usize = 4096;

/// How a [`Batcher`] forms batches and where it runs them.
#[derive(Clone, Debug)]
pub struct BatcherConfig {
    /// A batch closes when it holds this many items (1 ..= 2²⁴).
    pub max_batch: usize,
    /// ... or when its oldest item has waited this long (≤ 1 h; zero = as soon as a slot is
    /// free).
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

/// Coalesces items submitted one at a time by many tasks into batches of kernel `K`, one
/// launch per batch, on a [`Device`]. Cheap to clone (an `Arc`); dropping the last clone shuts
/// it down (see [`Batcher::shutdown`]). See the module docs for the protocol.
pub struct Batcher<K: BatchKernel> {
    owner: Arc<Owner<K>>,
}

impl<K: BatchKernel> Clone for Batcher<K> {
    fn clone(&self) -> Self {
        Batcher { owner: self.owner.clone() }
    }
}

impl<K: BatchKernel> fmt::Debug for Batcher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batcher")
            .field("kernel", &self.shared().kernel.name())
            .field("config", &self.shared().config)
            .field("occupancy", &self.occupancy())
            .finish()
    }
}

/// Held only by [`Batcher`] clones; its drop (the last clone's) shuts the Batcher down.
/// Workers and futures hold the `Shared` directly, so they do not keep it open.
struct Owner<K: BatchKernel> {
    shared: Arc<Shared<K>>,
}

impl<K: BatchKernel> Drop for Owner<K> {
    fn drop(&mut self) {
        self.shared.shutdown();
    }
}

struct Shared<K: BatchKernel> {
    kernel: K,
    device: Device,
    config: BatcherConfig,
    created: Instant,
    central: Mutex<Central<K::Item, K::Output>>,
    /// Idle workers wait here for something to close (or for shutdown).
    work: Condvar,
    /// Slots running a batch: a gauge for [`Batcher::occupancy`] only, synchronises nothing,
    /// hence `Relaxed` everywhere.
    busy: AtomicUsize,
    /// Submits refused by `validate` / after shutdown: counters only, read as a snapshot by
    /// `stats()`; they order nothing, hence `Relaxed`.
    rejected_invalid: AtomicU64,
    rejected_closed: AtomicU64,
    log: Mutex<TimelineLog>,
    /// The runtime whose Ps run CPU-placed batches (see [`BatcherConfig::runtime`]).
    cpu_rt: Option<gmprt_runtime::Handle>,
}

struct Central<I, O> {
    closed: bool,
    /// Items of the open batch; non-empty iff `open` is `Some`.
    items: Vec<I>,
    open: Option<OpenBatch<O>>,
    /// Sequence number of the next batch to open.
    next_batch: u64,
    /// Submits waiting for room, in ticket order (tickets only grow, so `push_back` keeps
    /// the queue sorted and it can be binary-searched).
    waiters: VecDeque<(u64, Waker)>,
    next_ticket: u64,
    /// Room promised to waiters popped from `waiters` and woken, who have not entered yet.
    reserved: usize,
}

struct OpenBatch<O> {
    shared: Arc<BatchShared<O>>,
    /// When its first (oldest) item arrived.
    opened: Instant,
    /// `flush()` was called while it was open.
    flush: bool,
}

/// One batch's results: the single per-batch allocation shared by its worker and its
/// items' futures.
struct BatchShared<O> {
    seq: u64,
    state: Mutex<BatchState<O>>,
}

struct BatchState<O> {
    /// Set (with every output or the failure written) by the worker, under this lock.
    done: bool,
    /// The error every item of a failed batch gets.
    failure: Option<OffloadError>,
    /// One per item, in index order.
    entries: Vec<Entry<O>>,
}

struct Entry<O> {
    waker: Option<Waker>,
    output: Option<O>,
}

/// A batch a worker has taken out of `central`.
struct Taken<O> {
    shared: Arc<BatchShared<O>>,
    opened: Instant,
    closed_at: Instant,
    reason: CloseReason,
}

impl<K: BatchKernel> Batcher<K> {
    /// A Batcher of `kernel` on `device`: checks `config`, creates `in_flight` slots with room
    /// for `max_batch` items each, and starts one worker thread per slot.
    ///
    /// `Err(Config)` for an out-of-range config, a kernel with zero words per item, a slot
    /// too large, or a thread that cannot start; the backend's error if a slot cannot be
    /// made.
    pub fn new(kernel: K, device: &Device, config: BatcherConfig) -> Result<Batcher<K>, OffloadError> {
        config.validate()?;
        let (iw, ow) = (kernel.in_words(), kernel.out_words());
        if iw == 0 || ow == 0 {
            return Err(OffloadError::Config(format!(
                "kernel {} has {iw} input and {ow} output words per item; both must be > 0",
                kernel.name()
            )));
        }
        if let (Placement::Auto, Some(model)) = (config.placement, &config.model) {
            placement::check_model(model, kernel.name())?;
        }
        let slot_words = |per: usize, what: &str| {
            match config.max_batch.checked_mul(per) {
            Some(w) if w <= SLOT_WORDS_LIMIT => Ok(w),
            _ => Err(OffloadError::Config(format!(
                "max_batch {} x {per} {what} words per item of {} exceeds the {SLOT_WORDS_LIMIT}-word slot limit; \
                 lower max_batch",
                config.max_batch,
                kernel.name()
            ))),
        }
        };
        let (in_words, out_words) = (slot_words(iw, "input")?, slot_words(ow, "output")?);
        let mut slots = Vec::with_capacity(config.in_flight);
        for _ in 0..config.in_flight {
            slots.push(device.backend().new_slot(in_words, out_words)?);
        }
        let cpu_rt = config.runtime.clone().or_else(gmprt_runtime::Handle::try_current);
        let shared = Arc::new(Shared {
            cpu_rt,
            kernel,
            device: device.clone(),
            config: config.clone(),
            created: Instant::now(),
            central: Mutex::new(Central {
                closed: false,
                items: Vec::with_capacity(config.max_batch),
                open: None,
                next_batch: 0,
                waiters: VecDeque::new(),
                next_ticket: 0,
                reserved: 0,
            }),
            work: Condvar::new(),
            busy: AtomicUsize::new(0),
            rejected_invalid: AtomicU64::new(0),
            rejected_closed: AtomicU64::new(0),
            log: Mutex::new(TimelineLog::default()),
        });
        let owner = Arc::new(Owner { shared: shared.clone() });
        for (index, slot) in slots.into_iter().enumerate() {
            let s = shared.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("gmprt-batcher-{}-{index}", s.kernel.name()))
                .spawn(move || s.worker(index, slot));
            if let Err(e) = spawned {
                // Dropping `owner` shuts the already started workers down.
                return Err(OffloadError::Config(format!("cannot start batcher worker thread {index}: {e}")));
            }
        }
        Ok(Batcher { owner })
    }

    fn shared(&self) -> &Arc<Shared<K>> {
        &self.owner.shared
    }

    /// Submits one item; the future resolves to its output once its batch has run.
    ///
    /// The item is validated now (an invalid one resolves at once to `Err(Invalid)` or
    /// `Err(Kernel)` naming the field, and never enters a batch), and is accepted now if the
    /// open batch has room — so items are batched in the order `submit` was called. Otherwise
    /// (backpressure: the open batch is full and every slot busy) the future holds the item
    /// and waits its turn, without blocking the thread. After shutdown: `Err(Closed)`.
    /// Dropping the future after acceptance does not withdraw the item; its output is
    /// dropped.
    pub fn submit(&self, item: K::Item) -> Submit<K> {
        let shared = self.shared();
        if let Err(e) = shared.kernel.validate(&item, 0) {
            shared.rejected_invalid.fetch_add(1, Ordering::Relaxed);
            return Submit { state: SubmitState::Failed(Some(e)) };
        }
        let mut c = shared.central.lock();
        if c.closed {
            drop(c);
            shared.rejected_closed.fetch_add(1, Ordering::Relaxed);
            return Submit { state: SubmitState::Failed(Some(OffloadError::Closed)) };
        }
        if c.waiters.is_empty() && c.items.len() + c.reserved < shared.config.max_batch {
            let (batch, index, notify) = shared.accept(&mut c, item);
            drop(c);
            if notify {
                shared.work.notify_one();
            }
            Submit { state: SubmitState::Accepted { batch, index } }
        } else {
            drop(c);
            Submit { state: SubmitState::Waiting { shared: shared.clone(), item: Some(item), ticket: None } }
        }
    }

    /// Closes the open batch now (if it holds any item) instead of at its deadline. It runs
    /// as soon as a slot is free. Does not wait.
    pub fn flush(&self) {
        let shared = self.shared();
        let mut c = shared.central.lock();
        if let Some(open) = &mut c.open {
            open.flush = true;
            drop(c);
            shared.work.notify_one();
        }
    }

    /// Stops accepting items: later submits (and submits still waiting for room) get
    /// `Err(Closed)`; every accepted item still runs and gets its result (the open batch is
    /// closed at once). Does not wait; idempotent. Dropping the last clone does the same.
    pub fn shutdown(&self) {
        self.shared().shutdown();
    }

    /// Whether [`shutdown`](Batcher::shutdown) has happened.
    pub fn is_closed(&self) -> bool {
        self.shared().central.lock().closed
    }

    /// The kernel.
    pub fn kernel(&self) -> &K {
        &self.shared().kernel
    }

    /// The device.
    pub fn device(&self) -> &Device {
        &self.shared().device
    }

    /// The configuration.
    pub fn config(&self) -> BatcherConfig {
        self.shared().config.clone()
    }

    /// The cost model's decisions still in the timeline ring (`Placement::Auto` only), oldest
    /// first: both predictions, the side chosen and its measured time.
    pub fn decisions(&self) -> Vec<PlacementDecision> {
        self.shared().log.lock().timelines().iter().filter_map(|t| t.predicted).collect()
    }

    /// The current load.
    pub fn occupancy(&self) -> Occupancy {
        let s = self.shared();
        let c = s.central.lock();
        Occupancy {
            open_items: c.items.len(),
            waiting: c.waiters.len(),
            reserved: c.reserved,
            busy_slots: s.busy.load(Ordering::Relaxed),
            closed: c.closed,
        }
    }

    /// Aggregates over every finished batch. A batch is counted before any of its futures
    /// resolves, so once every submit has resolved the stats include all of them.
    pub fn stats(&self) -> BatcherStats {
        self.shared().with_rejections(self.shared().log.lock().stats())
    }

    /// The last (up to [`TIMELINE_CAPACITY`](crate::timeline::TIMELINE_CAPACITY)) batches'
    /// timelines, oldest first (in completion order).
    pub fn timelines(&self) -> Vec<BatchTimeline> {
        self.shared().log.lock().timelines()
    }

    /// A printable summary: per-phase median, p99 and totals, items per batch, launches,
    /// bytes moved, transfer vs kernel share, and the device.
    pub fn report(&self) -> Report {
        let s = self.shared();
        let mut r = s.log.lock().report(s.kernel.name(), s.device.describe());
        r.stats = s.with_rejections(r.stats);
        r
    }
}

impl<K: BatchKernel> Shared<K> {
    /// `stats` with the refusal counters filled in.
    fn with_rejections(&self, mut stats: BatcherStats) -> BatcherStats {
        stats.rejected_invalid = self.rejected_invalid.load(Ordering::Relaxed);
        stats.rejected_closed = self.rejected_closed.load(Ordering::Relaxed);
        stats
    }

    /// Pushes `item` into the open batch (opening it if empty). Caller holds `central`, has
    /// checked that the Batcher is open and that there is room for this item. Returns the
    /// batch, the item's index, and whether an idle worker must be notified (first item: a
    /// new deadline; last item: the batch is full).
    fn accept(
        &self,
        c: &mut Central<K::Item, K::Output>,
        item: K::Item,
    ) -> (Arc<BatchShared<K::Output>>, usize, bool) {
        let index = c.items.len();
        let first = c.open.is_none();
        let batch = match &c.open {
            Some(open) => open.shared.clone(),
            None => {
                let seq = c.next_batch;
                c.next_batch += 1;
                let batch = Arc::new(BatchShared {
                    seq,
                    state: Mutex::new(BatchState {
                        done: false,
                        failure: None,
                        entries: Vec::with_capacity(self.config.max_batch.min(ENTRIES_UP_FRONT)),
                    }),
                });
                c.open = Some(OpenBatch { shared: batch.clone(), opened: Instant::now(), flush: false });
                batch
            }
        };
        batch.state.lock().entries.push(Entry { waker: None, output: None });
        c.items.push(item);
        let full = c.items.len() >= self.config.max_batch;
        (batch, index, first || full)
    }

    fn shutdown(&self) {
        let waiters: Vec<Waker> = {
            let mut c = self.central.lock();
            if c.closed {
                return;
            }
            c.closed = true;
            c.reserved = 0;
            c.waiters.drain(..).map(|(_, w)| w).collect()
        };
        self.work.notify_all();
        for w in waiters {
            w.wake();
        }
    }

    /// Slot worker: takes batches until the Batcher is closed and drained.
    fn worker(&self, slot_index: usize, mut slot: Box<dyn Slot>) {
        let mut spare: Vec<K::Item> = Vec::with_capacity(self.config.max_batch);
        let mut wake: Vec<Waker> = Vec::new();
        // Output buffer of CPU-placed batches (allocated at the first one).
        let mut cpu_out: Vec<u32> = Vec::new();
        while let Some(taken) = self.take(&mut spare, &mut wake) {
            for w in wake.drain(..) {
                w.wake();
            }
            self.busy.fetch_add(1, Ordering::Relaxed);
            self.run(slot_index, &mut *slot, &mut spare, &mut cpu_out, taken, &mut wake);
            self.busy.fetch_sub(1, Ordering::Relaxed);
            for w in wake.drain(..) {
                w.wake();
            }
        }
    }

    /// Waits until the open batch may close, then takes it: its items are swapped into
    /// `items` (empty on entry) and the wakers of the waiters given room are pushed to
    /// `wake`. `None` once the Batcher is closed and the open batch is empty.
    fn take(&self, items: &mut Vec<K::Item>, wake: &mut Vec<Waker>) -> Option<Taken<K::Output>> {
        let max_batch = self.config.max_batch;
        let mut c = self.central.lock();
        loop {
            if let Some(open) = &c.open {
                let now = Instant::now();
                let reason = if c.items.len() >= max_batch {
                    CloseReason::Full
                } else if c.closed {
                    CloseReason::Shutdown
                } else if open.flush {
                    CloseReason::Flush
                } else {
                    // `max_delay ≤ 1 h` (validated), so this cannot overflow in practice;
                    // if it did, the batch would wait for full/flush/shutdown.
                    match open.opened.checked_add(self.config.max_delay) {
                        Some(deadline) if now < deadline => {
                            self.work.wait_until(&mut c, deadline);
                            continue;
                        }
                        Some(_) => CloseReason::Deadline,
                        None => {
                            self.work.wait(&mut c);
                            continue;
                        }
                    }
                };
                let Some(open) = c.open.take() else { continue };
                std::mem::swap(&mut c.items, items);
                // Room of the new open batch goes to the front waiters first (invariant R).
                let room = max_batch.saturating_sub(c.reserved);
                for _ in 0..room {
                    let Some((_, w)) = c.waiters.pop_front() else { break };
                    c.reserved += 1;
                    wake.push(w);
                }
                return Some(Taken { shared: open.shared, opened: open.opened, closed_at: now, reason });
            }
            if c.closed {
                return None;
            }
            self.work.wait(&mut c);
        }
    }

    /// Stages, runs and scatters one taken batch (protocol steps 3 and 4); pushes the item
    /// futures' wakers to `wake`. Leaves `items` empty.
    fn run(
        &self,
        slot_index: usize,
        slot: &mut dyn Slot,
        items: &mut Vec<K::Item>,
        cpu_out: &mut Vec<u32>,
        taken: Taken<K::Output>,
        wake: &mut Vec<Waker>,
    ) {
        let kernel = &self.kernel;
        let seq = taken.shared.seq;
        let n = items.len();
        let (in_words, out_words) = (n * kernel.in_words(), n * kernel.out_words());
        let fail = |msg: String| OffloadError::Batch { batch: seq, kernel: kernel.name(), msg };

        // Where the batch runs is decided first: a batch for the Ps is staged chunk by chunk
        // (inside `run_on_ps`), one for the device (or the worker thread) into the slot.
        let placed = self.place(n);
        let mut launched = false;
        let mut side = Side::Gpu;
        let mut decision: Option<PlacementDecision> = None;
        let mut staging = Duration::ZERO;
        // Outputs already gathered (the Ps path); otherwise they are gathered from the words.
        let mut gathered: Option<Vec<K::Output>> = None;
        let result = match placed {
            Err(msg) => {
                let _ = catch_unwind(AssertUnwindSafe(|| items.clear()));
                Err(fail(msg))
            }
            Ok((chose, predicted)) => {
                side = chose;
                decision = predicted.map(|(predicted_gpu, predicted_cpu)| PlacementDecision {
                    batch: seq,
                    n,
                    chose,
                    predicted_gpu,
                    predicted_cpu,
                    measured: Duration::ZERO,
                });
                launched = chose == Side::Gpu;
                match (chose, &self.cpu_rt) {
                    (Side::Cpu, Some(rt)) => {
                        let ran = catch_unwind(AssertUnwindSafe(|| run_on_ps(kernel, rt, items)));
                        let _ = catch_unwind(AssertUnwindSafe(|| items.clear()));
                        match ran {
                            Ok(Ok((outs, times))) => {
                                gathered = Some(outs);
                                Ok(times)
                            }
                            Ok(Err(msg)) => Err(fail(msg)),
                            Err(p) => Err(fail(format!("the CPU run panicked: {}", panic_message(&*p)))),
                        }
                    }
                    _ => {
                        let t_stage = Instant::now();
                        let staged = catch_unwind(AssertUnwindSafe(|| {
                            kernel.stage(items, &mut slot.staging_in()[..in_words])
                        }));
                        // The items are not needed any more; dropping them here keeps the spare
                        // Vec's capacity for the next batch. A panicking Drop of an item is
                        // contained too (`clear` sets the length to 0 before dropping).
                        let _ = catch_unwind(AssertUnwindSafe(|| items.clear()));
                        staging = t_stage.elapsed();
                        match staged {
                            Err(p) => Err(fail(format!("staging panicked: {}", panic_message(&*p)))),
                            Ok(()) => {
                                let ran = catch_unwind(AssertUnwindSafe(|| match chose {
                                    Side::Gpu => slot.run(kernel, n, in_words, out_words, Phases::ALL),
                                    Side::Cpu => {
                                        run_cpu(kernel, n, &slot.staging_in()[..in_words], cpu_out, out_words)
                                    }
                                }));
                                match ran {
                                    Ok(Ok(times)) => Ok(times),
                                    Ok(Err(OffloadError::Batch { msg, .. })) => Err(fail(msg)),
                                    Ok(Err(e)) => Err(fail(e.to_string())),
                                    Err(p) => Err(fail(format!("the run panicked: {}", panic_message(&*p)))),
                                }
                            }
                        }
                    }
                }
            }
        };

        let t_scatter = Instant::now();
        let mut st = taken.shared.state.lock();
        let times = match result {
            Ok(times) => {
                let entries = &mut st.entries;
                let gathered = catch_unwind(AssertUnwindSafe(|| match gathered {
                    Some(outs) => {
                        for (e, o) in entries.iter_mut().zip(outs) {
                            e.output = Some(o);
                        }
                    }
                    None => {
                        let out = match side {
                            Side::Gpu => &slot.staging_out()[..out_words],
                            Side::Cpu => &cpu_out[..out_words],
                        };
                        for (i, e) in entries.iter_mut().enumerate() {
                            e.output = Some(kernel.gather(n, out, i));
                        }
                    }
                }));
                if let Err(p) = gathered {
                    st.failure = Some(fail(format!("gather panicked: {}", panic_message(&*p))));
                }
                Some(times)
            }
            Err(e) => {
                st.failure = Some(e);
                None
            }
        };
        let ok = st.failure.is_none();
        let scatter = t_scatter.elapsed();
        let times = times.unwrap_or_default();
        if let Some(d) = &mut decision {
            d.measured = times.h2d + times.kernel + times.d2h;
        }
        let on_device = side == Side::Gpu && ok;
        // Record before `done`: once any future of this batch resolves, its timeline is
        // visible in `stats()`/`timelines()`.
        self.log.lock().record(BatchTimeline {
            batch: seq,
            n,
            closed_by: taken.reason,
            start: taken.closed_at.saturating_duration_since(self.created),
            queue_wait: taken.closed_at.saturating_duration_since(taken.opened),
            staging,
            h2d: times.h2d,
            kernel: times.kernel,
            d2h: times.d2h,
            scatter,
            bytes_h2d: if on_device { (in_words * 4) as u64 } else { 0 },
            bytes_d2h: if on_device { (out_words * 4) as u64 } else { 0 },
            device: self.device.kind(),
            slot: slot_index,
            launched,
            ok,
            placement: side,
            predicted: decision,
        });
        st.done = true;
        wake.extend(st.entries.iter_mut().filter_map(|e| e.waker.take()));
    }
}

impl<K: BatchKernel> Shared<K> {
    /// Where a batch of `n` runs, with the model's (GPU, CPU) predictions under `Auto`.
    /// `Err` (failing the batch) if the model cannot price it or panics.
    fn place(&self, n: usize) -> Result<(Side, Option<(Duration, Duration)>), String> {
        match (self.config.placement, &self.config.model) {
            (Placement::Cpu, _) => Ok((Side::Cpu, None)),
            (Placement::Gpu, _) => Ok((Side::Gpu, None)),
            (Placement::Auto, None) => Err("placement Auto without a cost model".into()),
            (Placement::Auto, Some(model)) => {
                let procs = self.cpu_rt.as_ref().map_or(1, |rt| rt.procs());
                match catch_unwind(AssertUnwindSafe(|| {
                    placement::decide(model, self.kernel.name(), n, procs)
                })) {
                    Ok(Ok((side, gpu, cpu))) => Ok((side, Some((gpu, cpu)))),
                    Ok(Err(e)) => Err(format!("the cost model could not place the batch: {e}")),
                    Err(p) => Err(format!("the cost model panicked: {}", panic_message(&*p))),
                }
            }
        }
    }
}

/// One chunk of a CPU-placed batch: its first item's index and its outputs (or why it failed).
type ChunkResult<O> = (usize, Result<Vec<O>, String>);

/// Runs a CPU-placed batch on `rt`'s Ps: `items` cut into about four chunks per P (enough to
/// balance uneven Ps, few enough that each chunk's fixed cost is small), each chunk staged into
/// its own words, run with [`Job::run_host`](crate::Job::run_host) and gathered — a small
/// batch of its own, so any kernel splits without a chunking API. Allocates per chunk, not
/// per item. Returns the outputs in item order and the wall time as the kernel phase.
fn run_on_ps<K: BatchKernel>(
    kernel: &K,
    rt: &gmprt_runtime::Handle,
    items: &[K::Item],
) -> Result<(Vec<K::Output>, crate::PhaseTimes), String> {
    let n = items.len();
    let grain = n.div_ceil(4 * rt.procs()).max(1);
    let done: Mutex<Vec<ChunkResult<K::Output>>> = Mutex::new(Vec::new());
    let t = Instant::now();
    rt.parallel_for(n, grain, |r| {
        let chunk = &items[r.clone()];
        let m = chunk.len();
        let mut input = vec![0u32; m * kernel.in_words()];
        let mut output = vec![0u32; m * kernel.out_words()];
        kernel.stage(chunk, &mut input);
        let res = kernel
            .run_host(m, &input, &mut output)
            .map(|()| (0..m).map(|i| kernel.gather(m, &output, i)).collect());
        done.lock().push((r.start, res));
    });
    let kernel_time = t.elapsed();
    let mut chunks = done.into_inner();
    chunks.sort_unstable_by_key(|(start, _)| *start);
    let mut outs = Vec::with_capacity(n);
    for (_, res) in chunks {
        outs.extend(res?);
    }
    Ok((outs, crate::PhaseTimes { kernel: kernel_time, ..Default::default() }))
}

/// Runs a CPU-placed batch: [`Job::run_host`](crate::Job::run_host) over the staged `input`
/// on this (the worker's) thread into `out` (grown to `out_words` on first use), timed as
/// the kernel phase.
fn run_cpu<K: BatchKernel>(
    kernel: &K,
    n: usize,
    input: &[u32],
    out: &mut Vec<u32>,
    out_words: usize,
) -> Result<crate::PhaseTimes, OffloadError> {
    if out.len() < out_words {
        out.resize(out_words, 0);
    }
    let t = Instant::now();
    kernel.run_host(n, input, &mut out[..out_words]).map_err(|msg| OffloadError::Batch {
        batch: 0,
        kernel: kernel.name(),
        msg,
    })?;
    Ok(crate::PhaseTimes { kernel: t.elapsed(), ..Default::default() })
}
