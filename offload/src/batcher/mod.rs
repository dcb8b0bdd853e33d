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
//!    launch, D2H). A batch placed on the CPU is staged into ordinary host memory instead
//!    (per chunk on the Ps, or the worker's own buffers) and never touches the slot (see
//!    [`Placement`]).
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
//! # Tracing
//!
//! When the runtime records a trace (`Builder::trace`, `GMPRT_TRACE`) at [`Batcher::new`],
//! each slot worker draws its batches on its own lane, beside the cost model's prediction,
//! with an arrow from the submit that opened each batch: see the `trace` module.
//!
//! # Memory
//!
//! Everything a Batcher holds per item is allocated in [`Batcher::new`], and is checked
//! before any of it is: `in_flight` slots of `max_batch` items, each item `in_words +
//! out_words` words of staging and as much again of device-side copies, plus `in_flight + 1`
//! item queues (the open batch's and each worker's spare, and the result entries of as many
//! batches) of `max_batch` items. [`MemoryNeed`] computes it, once for every device, and the
//! device's [`Backend::check_memory`](crate::Backend::check_memory) compares each part with
//! the memory it lives in (host memory, `MemAvailable`, for all of it on the Host and
//! simulated devices; on CUDA, pinned staging against host memory and the device copies
//! against `cuMemGetInfo`'s free memory). A configuration that does not fit is
//! `Err(Config)` naming the bytes — never an abort or the OOM killer after the pages were
//! touched. The allocations themselves are fallible too (`try_reserve_exact`), for memory
//! taken by someone else between the check and the allocation.
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
//! # Shutdown waits for the workers
//!
//! [`Batcher::shutdown`] (and the drop of the last clone) then *joins* every slot worker: when
//! it returns, each worker has run its last batch, dropped its [`Slot`] (pinned staging,
//! device buffers, stream, handles: `cuMemFreeHost` and friends on CUDA) and its thread has
//! exited — so one Batcher's teardown never overlaps whatever the caller does next (the next
//! timed run). The wait is bounded by the work already accepted: the batches in flight plus
//! the open batch, which shutdown closes at once; nothing new is accepted meanwhile.
//!
//! Where it is called from:
//! * **a plain thread or `block_on`**: it blocks until the workers are joined;
//! * **a task on an M**: the wait runs inside [`gmprt_runtime::syscall`], so the M hands its
//!   P off for the duration (Go's `entersyscall`) and the runtime's other tasks — including
//!   the chunks of a CPU-placed batch a worker is waiting for — keep running. Should the
//!   runtime's thread cap refuse that hand-off ([`gmprt_runtime::ThreadLimit`]), shutdown
//!   returns without waiting rather than risk blocking the P the workers may need (the
//!   workers still exit on their own);
//! * **a slot worker of any Batcher** (an item's `Drop`, a slot, a waker's task dropping the
//!   last clone there): it does not wait at all. A thread cannot join itself, and two workers
//!   waiting for each other's Batchers would deadlock; the workers exit on their own once
//!   drained, and a later shutdown from another thread joins them.
//!
//! Concurrent shutdowns from several threads all return after the join (the first joins;
//! the others wait for it).
//!
//! Known limit: a runtime being dropped drops its queued tasks one by one; if one of them
//! holds the last clone while a CPU-placed batch runs on that runtime's Ps, the join waits
//! for chunks whose helper tasks may still sit in a queue not yet drained. Shut a Batcher
//! down (or drop it) before the runtime that runs its CPU batches.
//!
//! # Why no deadlock
//!
//! Lock order is `central` → one batch lock → the timeline log (or a slot's per-item latency
//! histograms, a leaf lock too); workers never take
//! `central` while holding a batch lock, and submitters hold at most `central` → batch
//! lock (when accepting). Wakeups cannot be lost: every state change that an idle worker
//! waits for (first item, full batch, flush, shutdown) happens under `central` and is
//! followed by a notify; the worker re-checks its predicate under `central` before waiting.
//! Task wakeups likewise: a waker is stored under the lock that guards the condition it
//! waits for (`central` for room, the batch lock for `done`), and the party that changes the
//! condition takes the wakers under that same lock. Nothing a worker waits for depends on a
//! runtime thread making progress.
use crate::backend::{host_available, MemoryNeed, Slot};
use crate::device::Device;
use crate::error::OffloadError;
use crate::jobs::BatchKernel;
use crate::model::CostModel;
use crate::timeline::{BatchTimeline, BatcherStats, CloseReason, PlacementDecision, Report, TimelineLog};

mod latency;
mod placement;
mod run;
mod submit;
#[cfg(test)]
mod tests;
mod trace;

use parking_lot::{Condvar, Mutex};
pub use placement::Placement;
use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Waker;
use std::thread::JoinHandle;
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

thread_local! {
    /// True on the slot worker threads of every Batcher: a shutdown called there does not
    /// wait for workers (see "Shutdown waits for the workers" in the module docs).
    static ON_SLOT_WORKER: Cell<bool> = const { Cell::new(false) };
}

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
    /// Per-item latency, one per slot worker (see the `latency` module).
    item_latency: Box<[Mutex<latency::ItemLatency>]>,
    /// The runtime whose Ps run CPU-placed batches (see [`BatcherConfig::runtime`]).
    cpu_rt: Option<gmprt_runtime::Handle>,
    /// The runtime's trace recorder when it was tracing at [`Batcher::new`]: the Batcher
    /// then draws its lanes (see the `trace` module); `None`: nothing is recorded.
    trace: Option<gmprt_runtime::trace::Recorder>,
    /// The slot workers not joined yet. Held while joining, so a concurrent shutdown waits
    /// for the join in progress; never locked by a worker.
    workers: Mutex<Vec<JoinHandle<()>>>,
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
    /// The trace flow arrow from its first item's `submit` (tracing only).
    flow: Option<u64>,
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
    /// When `submit` was called for it (its queue wait starts here).
    submitted: Instant,
}

/// A batch a worker has taken out of `central`.
struct Taken<O> {
    shared: Arc<BatchShared<O>>,
    opened: Instant,
    closed_at: Instant,
    reason: CloseReason,
    /// The trace flow arrow from its first item's `submit` (tracing only).
    flow: Option<u64>,
}

/// An empty item `Vec` with room for `max_batch` items, or `Err(Config)` naming its bytes
/// and the memory available when the allocator refuses (never an abort).
fn item_queue<I>(max_batch: usize) -> Result<Vec<I>, OffloadError> {
    let mut v = Vec::new();
    v.try_reserve_exact(max_batch).map_err(|e| {
        OffloadError::Config(format!(
            "cannot allocate an item queue of {max_batch} items × {} B ({e}); {}; lower max_batch or in_flight",
            std::mem::size_of::<I>(),
            host_available()
        ))
    })?;
    Ok(v)
}

impl<K: BatchKernel> Batcher<K> {
    /// A Batcher of `kernel` on `device`: checks `config`, creates `in_flight` slots with room
    /// for `max_batch` items each, and starts one worker thread per slot.
    ///
    /// `Err(Config)` for an out-of-range config, a kernel with zero words per item, a slot
    /// too large, a configuration whose memory does not fit (checked before anything is
    /// allocated: the message names the bytes needed, how they are made up, and the bytes
    /// available; see "Memory" in the module docs), an allocation refused, or a thread that
    /// cannot start; the backend's error if a slot cannot be made.
    pub fn new(kernel: K, device: &Device, config: BatcherConfig) -> Result<Batcher<K>, OffloadError> {
        Self::with_backend(kernel, device, device.backend(), config)
    }

    /// As [`Batcher::new`], with the slots (and the memory check) from `backend` instead of
    /// `device`'s own; `device` still names the device in reports and timelines. For tests
    /// that watch what the Batcher does with its slots.
    pub(crate) fn with_backend(
        kernel: K,
        device: &Device,
        backend: &dyn crate::Backend,
        config: BatcherConfig,
    ) -> Result<Batcher<K>, OffloadError> {
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
        // Memory, all of it, before any of it is allocated (see "Memory" in the module docs).
        let need = MemoryNeed {
            slots: config.in_flight,
            items: config.max_batch,
            in_words: iw,
            out_words: ow,
            queues: config.in_flight + 1,
            item_bytes: std::mem::size_of::<K::Item>() + std::mem::size_of::<Entry<K::Output>>(),
        };
        let who = format!(
            "Batcher of {} (max_batch {}, in_flight {}) on {}",
            kernel.name(),
            config.max_batch,
            config.in_flight,
            device.describe()
        );
        let context = |e: OffloadError| match e {
            OffloadError::Config(m) => OffloadError::Config(format!("{who}: {m}")),
            e => e,
        };
        backend.check_memory(&need).map_err(context)?;
        let open_items = item_queue(config.max_batch).map_err(context)?;
        let mut spares = Vec::with_capacity(config.in_flight);
        for _ in 0..config.in_flight {
            spares.push(item_queue(config.max_batch).map_err(context)?);
        }
        let mut slots = Vec::with_capacity(config.in_flight);
        for index in 0..config.in_flight {
            let slot = backend.new_slot(in_words, out_words).map_err(|e| match e {
                OffloadError::Config(m) => {
                    OffloadError::Config(format!("{who}: slot {index} of {}: {m}", config.in_flight))
                }
                e => e,
            })?;
            slots.push(slot);
        }
        let cpu_rt = config.runtime.clone().or_else(gmprt_runtime::Handle::try_current);
        let trace = gmprt_runtime::trace::current().or_else(|| cpu_rt.as_ref()?.trace_recorder());
        let shared = Arc::new(Shared {
            cpu_rt,
            kernel,
            device: device.clone(),
            config: config.clone(),
            created: Instant::now(),
            central: Mutex::new(Central {
                closed: false,
                items: open_items,
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
            item_latency: (0..config.in_flight).map(|_| Mutex::default()).collect(),
            workers: Mutex::new(Vec::with_capacity(config.in_flight)),
            trace,
        });
        let owner = Arc::new(Owner { shared: shared.clone() });
        for (index, (slot, spare)) in slots.into_iter().zip(spares).enumerate() {
            let s = shared.clone();
            let spawned = std::thread::Builder::new().name(trace::worker_name(index, s.kernel.name())).spawn(
                move || {
                    ON_SLOT_WORKER.with(|w| w.set(true));
                    s.worker(index, slot, spare);
                },
            );
            match spawned {
                Ok(handle) => shared.workers.lock().push(handle),
                Err(e) => {
                    // Dropping `owner` shuts the already started workers down and joins them.
                    return Err(OffloadError::Config(format!(
                        "cannot start batcher worker thread {index}: {e}"
                    )));
                }
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
        let submitted = Instant::now();
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
            let (batch, index, notify) = shared.accept(&mut c, item, submitted);
            drop(c);
            if notify {
                shared.work.notify_one();
            }
            Submit { state: SubmitState::Accepted { batch, index } }
        } else {
            drop(c);
            Submit {
                state: SubmitState::Waiting {
                    shared: shared.clone(),
                    item: Some(item),
                    ticket: None,
                    submitted,
                },
            }
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
    /// closed at once). Then waits for the slot workers: on return every worker thread has
    /// exited and every slot (with its buffers) is dropped — a wait bounded by the batches
    /// already accepted. On a runtime M the wait hands the P off (`syscall`); on a slot
    /// worker thread it does not wait (see "Shutdown waits for the workers" in the module
    /// docs). Idempotent. Dropping the last clone does the same.
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
    /// bytes moved, transfer vs kernel share, the device, and each item's submit → result
    /// latency split into queue wait and batch time (p50 / p99 / p99.9 / max over every item
    /// batched so far). Serialisable (`serde`) for machine-readable output.
    pub fn report(&self) -> Report {
        let s = self.shared();
        let mut r = s.log.lock().report(s.kernel.name(), s.device.describe());
        r.stats = s.with_rejections(r.stats);
        (r.latency, r.queue_wait, r.batch_time) = s.item_latency().summaries();
        r
    }
}

impl<K: BatchKernel> Shared<K> {
    /// Every slot's per-item latency merged.
    fn item_latency(&self) -> latency::ItemLatency {
        let mut all = latency::ItemLatency::default();
        for slot in self.item_latency.iter() {
            all.merge(&slot.lock());
        }
        all
    }

    /// `stats` with the refusal counters filled in.
    fn with_rejections(&self, mut stats: BatcherStats) -> BatcherStats {
        stats.rejected_invalid = self.rejected_invalid.load(Ordering::Relaxed);
        stats.rejected_closed = self.rejected_closed.load(Ordering::Relaxed);
        stats
    }

    /// Pushes `item`, submitted at `submitted`, into the open batch (opening it if empty).
    /// Caller holds `central`, has checked that the Batcher is open and that there is room
    /// for this item. Returns the
    /// batch, the item's index, and whether an idle worker must be notified (first item: a
    /// new deadline; last item: the batch is full).
    fn accept(
        &self,
        c: &mut Central<K::Item, K::Output>,
        item: K::Item,
        submitted: Instant,
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
                // Tracing: one arrow per batch, from the submit that opens it (see `trace`).
                let flow = self.trace.as_ref().map(trace::submit_flow);
                c.open =
                    Some(OpenBatch { shared: batch.clone(), opened: Instant::now(), flush: false, flow });
                batch
            }
        };
        batch.state.lock().entries.push(Entry { waker: None, output: None, submitted });
        c.items.push(item);
        let full = c.items.len() >= self.config.max_batch;
        (batch, index, first || full)
    }

    /// Closes the Batcher (first call only), then joins the workers.
    fn shutdown(&self) {
        let waiters: Option<Vec<Waker>> = {
            let mut c = self.central.lock();
            if c.closed {
                None
            } else {
                c.closed = true;
                c.reserved = 0;
                Some(c.waiters.drain(..).map(|(_, w)| w).collect())
            }
        };
        if let Some(waiters) = waiters {
            self.work.notify_all();
            for w in waiters {
                w.wake();
            }
        }
        self.join_workers();
    }

    /// Waits until every slot worker thread has exited (see "Shutdown waits for the workers"
    /// in the module docs): not on a worker thread; on an M inside `syscall`, and not at all
    /// if the runtime refuses that hand-off.
    fn join_workers(&self) {
        if ON_SLOT_WORKER.with(Cell::get) {
            return;
        }
        let join = || {
            // Held across the joins: a concurrent shutdown returns only after them too.
            let mut workers = self.workers.lock();
            for handle in workers.drain(..) {
                // A worker catches the panics of kernels and items; one escaping anyway has
                // already been reported by the panic hook, and shutdown must not re-raise it.
                let _ = handle.join();
            }
        };
        // Off an M `syscall` just runs `join`; the refusal hands `join` back unrun.
        let _refused = gmprt_runtime::syscall(join);
    }

    /// Slot worker: takes batches until the Batcher is closed and drained. `spare` is the
    /// empty item `Vec` (capacity `max_batch`) it swaps with the open batch's.
    fn worker(&self, slot_index: usize, mut slot: Box<dyn Slot>, mut spare: Vec<K::Item>) {
        let mut wake: Vec<Waker> = Vec::new();
        // Host buffers of CPU-placed batches run on this thread (allocated at the first one).
        let mut cpu = run::CpuBuffers::default();
        let mut lanes = self.trace.as_ref().map(|r| trace::SlotTrace::new(r, slot_index, self.kernel.name()));
        while let Some(taken) = self.take(&mut spare, &mut wake) {
            for w in wake.drain(..) {
                w.wake();
            }
            self.busy.fetch_add(1, Ordering::Relaxed);
            let marks = self.run(slot_index, &mut *slot, &mut spare, &mut cpu, taken, &mut wake);
            self.busy.fetch_sub(1, Ordering::Relaxed);
            for w in wake.drain(..) {
                w.wake();
            }
            // Tracing only (one branch per batch otherwise): after the wakes, so the `wake`
            // slice holds the runtime's wake arrows.
            if let (Some(lanes), Some(marks)) = (&mut lanes, marks) {
                let procs = self.cpu_rt.as_ref().map_or(1, |rt| rt.procs());
                lanes.batch(&marks, Instant::now(), self.config.model.as_deref(), self.kernel.name(), procs);
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
                return Some(Taken {
                    shared: open.shared,
                    opened: open.opened,
                    closed_at: now,
                    reason,
                    flow: open.flow,
                });
            }
            if c.closed {
                return None;
            }
            self.work.wait(&mut c);
        }
    }
}
