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
//! configured [`CostModel`](crate::model::CostModel) predicts it is faster ([`Placement::Auto`], opt-in). The runtime
//! itself never moves a task: see [`Placement`]'s module for why. Staging, scatter and every
//! guarantee below are the same whichever side runs a batch.
//!
//! # Thread model
//!
//! * **Submitters** are green tasks (or any thread). [`Batcher::submit`],
//!   [`Batcher::submit_many`] and their futures never block their OS thread: they take their
//!   P's lane lock (uncontended: one P), a result block's lock, or — only on the slow path,
//!   when there is no room — `central`, each for a bounded, short critical section (no
//!   waiting, no I/O inside), and otherwise return `Pending` with their waker registered. So a
//!   runtime with `procs = 1` cannot deadlock on a Batcher: its only M is never held by one.
//! * **Slot workers**: `in_flight` plain OS threads (not runtime threads), each owning one
//!   [`Slot`] (a stream plus staging and device buffers sized for `max_batch` items, created
//!   once in [`Batcher::new`]). A worker is idle or runs exactly one batch. There is no
//!   separate dispatcher: an *idle* worker is the one that watches the open batch's deadline
//!   (`Condvar::wait_until` the oldest item's deadline) and closes it.
//!
//! # Protocol
//!
//! Accepting is the `stage` module's protocol: per-P **lanes** hold the items accepted on
//! their P since the last take, and one **admission word** (an atomic: items open, room
//! reserved for woken waiters, a waiters bit, a closed bit) admits each item with one CAS —
//! no lock shared by every submitter. `central` (a `parking_lot::Mutex`, so it cannot be
//! poisoned) holds only the slow path and the workers' sleep: the FIFO queue of submits
//! waiting for room (`waiters`, by ticket), the open batch's `opened` instant, `flush`.
//!
//! 1. *Accept.* An item is validated ([`BatchKernel::validate`]) and then, under its lane's
//!    lock, admitted on the word (room: `open + reserved < max_batch`, nobody queued, not
//!    closed) and pushed with its result entry into the lane's current result block. The
//!    admission that opens a batch stamps `opened` (the deadline is `opened + max_delay`)
//!    and the one that fills it notifies an idle worker, under `central`. `submit` tries this
//!    at once; a submit refused for room queues for it (below).
//! 2. *Close.* An idle worker, under `central`, takes the open items when they fill the batch,
//!    or at shutdown, or flush, or when the oldest item's deadline has passed — with
//!    `max_delay = 0` (Triton's default) whenever it is free and anything is open — on a
//!    runtime, once the batch's *closer* released it: a small task woken by the batch's
//!    first admission that yields once, so the tasks already runnable on that P submit into
//!    the batch first (see the `closer` module; without a runtime, at once); otherwise it
//!    waits on the condvar (until the deadline when a batch is open). A worker with nothing
//!    open polls the admission word for a few tens of µs before it parks (Go's spinning M),
//!    re-checking under `central` after. Room reserved for waiters does not make a batch
//!    full (they are about to enter it). Taking locks every
//!    lane, moves their items into the worker's spare `Vec` (capacity `max_batch`, no
//!    allocation) and their blocks into the batch, and hands the free room to the front
//!    waiters (reserved on the word, woken after the lock is released).
//! 3. *Run* (the execute step, `run` module). Outside any lock, the worker stages the items
//!    into the slot's staging buffer ([`BatchKernel::stage`]), drops the items, and calls
//!    [`Slot::run`] once (H2D, one launch, D2H). A batch placed on the CPU is staged into
//!    ordinary host memory instead (per chunk on the Ps, or the worker's own buffers) and
//!    never touches the slot (see [`Placement`]).
//! 4. *Scatter* (the scatter step). Under each block's lock the worker writes each entry's
//!    output(s) ([`BatchKernel::gather`]) or the batch's failure, records the timeline, sets
//!    `done` and takes the registered wakers, then wakes them all at once after unlocking
//!    with the runtime's [`injectglist`](gmprt_runtime::injectglist) (one global-queue round,
//!    as many Ps started as there are tasks). Each block's outputs are published first, one
//!    cell per entry (`Block::results`, set once), then `done` under the block's lock. A
//!    [`Submit`] in the accepted state takes its own cell (or clones the failure) once the
//!    results are published, without the block's lock; before that it locks the block and,
//!    not `done`, stores its waker.
//!
//! Backpressure: a batch can only close into a free slot, so at most `in_flight` batches run
//! and the lanes hold at most `max_batch` items: memory is bounded. When the open batch is
//! full and every slot is busy, a submit waits (registers its waker in `waiters`, sets the
//! word's waiters bit) until a worker takes the batch. Waiters are served in FIFO order, and
//! a newcomer cannot overtake them: its CAS fails while the bit is set, and the room given
//! to popped waiters is reserved on the word before the bit clears. A woken waiter holds a
//! reservation, so it always finds room; a waiter that is dropped gives its reservation to
//! the next waiter.
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
//! out_words` words of staging and as much again of device-side copies, plus `in_flight + lanes`
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
//! An accepted item is in a lane (admitted and pushed under the lane's lock) or in a taken
//! batch (owned by one worker, which always completes step 4, even when staging, the run or a gather fails or
//! panics: panics are caught and fail the batch). A worker exits only when, under
//! `central`, the Batcher is closed *and* the open batch is empty; once closed, nothing is
//! accepted, so nothing can arrive after it looked. Every other worker still finishes the
//! batch it holds; the first to exit wakes every worker still waiting, so each sees the same
//! state and exits too (a worker can start waiting after shutdown's notification, when the
//! batch left open was not stamped yet). Shutdown (explicit or the drop of the last [`Batcher`] clone) sets the
//! word's closed bit (no admission succeeds after it) and notifies every worker, so an open batch is taken (`CloseReason::Shutdown`)
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
//! Lock order is `central` → a lane → a block → the timeline log (or a slot's per-item
//! latency histograms, a leaf lock too). A worker takes lanes only under `central` (all of
//! them, in index order), blocks only without `central`; a submitter holds one lane → its
//! block on the fast path and releases both before it takes `central` to notify, and holds
//! `central` → its lane → its block on the slow path. Wakeups cannot be lost: every state
//! change that an idle worker waits for (first item, full batch, flush, shutdown) is
//! followed by a notify under `central`, where the worker re-checks the word and `opened`
//! before waiting. Task wakeups likewise: a waker is stored under the lock that guards the
//! condition it waits for (`central` for room, the block lock for `done`), and the party
//! that changes the condition takes the wakers under that same lock. One thing a worker
//! waits for depends on a runtime making progress: the closer's release (`max_delay = 0`,
//! batch not full). The closer is a task woken by the admission that arms it, and should its
//! runtime stop, the task's drop clears `started` under `central` and notifies: the workers
//! then take at once. Nothing else a worker waits for depends on a runtime thread.
//! A waiter popped by a worker learns it from `served` (an atomic: every ticket below it
//! was popped, as waiters leave in ticket order) and enters on its reservation without
//! `central`.
#[cfg(doc)]
use crate::backend::Slot;
use crate::backend::{host_available, MemoryNeed};
use crate::device::Device;
use crate::error::OffloadError;
use crate::jobs::BatchKernel;
use crate::timeline::{BatchTimeline, BatcherStats, CloseReason, PlacementDecision, Report, TimelineLog};

mod accept;
mod closer;
mod config;
mod latency;
mod many;
mod placement;
mod quiesce;
mod run;
mod stage;
mod submit;
#[cfg(test)]
mod tests;
mod trace;
mod worker;

pub use config::{
    BatcherConfig, Occupancy, IN_FLIGHT_LIMIT, MAX_BATCH_LIMIT, MAX_DELAY_LIMIT, SLOT_WORDS_LIMIT,
};
pub use many::SubmitMany;
use parking_lot::{Condvar, Mutex};
pub use placement::Placement;
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::Waker;
use std::thread::JoinHandle;
use std::time::Instant;
pub use submit::Submit;
use submit::SubmitState;

/// Coalesces items submitted one at a time by many tasks into batches of kernel `K`, one
/// launch per batch, on a [`Device`]. Cheap to clone (an `Arc`); dropping the last clone shuts
/// it down (see [`Batcher::shutdown`]). See the module docs for the protocol.
///
/// # Examples
///
/// ```
/// use gmprt_offload::runtime::Runtime;
/// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
///
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), BatcherConfig::default()).unwrap();
/// let b2 = b.clone(); // the same Batcher
/// assert_eq!(rt.block_on(b2.submit((2.0, 1.0))).unwrap(), 5.0);
/// assert_eq!(b.stats().items, 1);
/// drop(b2); // not the last clone: still open
/// assert!(!b.is_closed());
/// assert!(format!("{b:?}").starts_with("Batcher { kernel: \"saxpy\""));
/// ```
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
    /// This `Shared`'s own `Arc`, weakly (`Arc::new_cyclic`): for the closer task it starts.
    me: std::sync::Weak<Shared<K>>,
    kernel: K,
    device: Device,
    config: BatcherConfig,
    created: Instant,
    /// The lanes and the admission word: steps 1-2 without a shared lock (`stage` module).
    stage: stage::Stage<K::Item, K::Output>,
    /// The slow path and the workers' sleep: waiters for room, the open batch's stamp, flush.
    central: Mutex<Central>,
    /// Idle workers wait here for something to close (or for shutdown).
    work: Condvar,
    /// Sequence number of the next batch taken (workers only, under `central`).
    next_batch: AtomicU64,
    /// Every waiter ticket below this was popped and holds a reservation (waiters leave the
    /// queue in ticket order; stored under `central` by `pop_waiters`, read without it).
    served: AtomicU64,
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
    /// The runtime went quiescent while the open batch was open (the `quiesce` module): set
    /// by the hook under `central`, cleared by the take under `central`.
    quiet: std::sync::atomic::AtomicBool,
    /// The backend's slots compute on the caller and never wait (`Backend::runs_on_caller`):
    /// batches closed on quiescence then run inline on the M (the `worker` module).
    slots_run_on_caller: bool,
    /// The free kits (slot + buffers; the `worker` module): a leaf lock, taken only under
    /// `central`.
    kits: Mutex<Vec<worker::Kit<K>>>,
    /// The hook's registration (the `quiesce` module), dropped at shutdown.
    quiescence: Mutex<Option<gmprt_runtime::QuiescentRegistration>>,
    /// A registration was made or refused: the submit path's one load (`Relaxed`: a flag
    /// read twice at worst; the registration itself is decided under `quiescence`).
    quiescence_tried: std::sync::atomic::AtomicBool,
}

/// What `central` guards.
struct Central {
    /// Submits waiting for room, in ticket order (tickets only grow, so `push_back` keeps
    /// the queue sorted and it can be binary-searched).
    waiters: VecDeque<(u64, Waker)>,
    next_ticket: u64,
    /// When the open batch's first item arrived; `None` while nothing is open (or until the
    /// submit that opened it stamps it, which it does before notifying).
    opened: Option<Instant>,
    /// `flush()` was called while a batch was open.
    flush: bool,
    /// The trace flow arrow from the open batch's first `submit` (tracing only).
    flow: Option<u64>,
    /// When a batch may close with `max_delay = 0` on a runtime (the `closer` module).
    closer: closer::Closer,
    /// Shutdown: a worker found every kit home and dropped them (the `worker` module).
    kits_retired: bool,
}

/// The result entries of the items one lane accepted for one batch: shared by the worker
/// that runs the batch and those items' futures. Its lock is taken by the lane's submitters
/// (one P: uncontended), their futures' polls, and once by the worker's scatter.
struct Block<O> {
    state: Mutex<BlockState<O>>,
    /// Set once by the worker's scatter *before* it marks the block `done` under the lock:
    /// each `submit`'s output in a cell of its own, or the batch's failure. A woken future
    /// takes its output here without the block's lock, which every future of the block would
    /// otherwise take in turn from both Ms (perf: 64% of `Submit::poll`'s time).
    results: OnceLock<Results<O>>,
}

/// What a finished block hands its futures (see [`Block::results`]).
struct Results<O> {
    /// The batch the block ran in (for an internal error's message).
    seq: u64,
    /// The error every item of a failed batch gets.
    failure: Option<OffloadError>,
    /// Per entry, its output while not taken: `submit` entries only (a `submit_many` piece's
    /// outputs stay in its entry); empty for a failed batch. Each cell is locked by its own
    /// future only, so the lock is never contended.
    outs: Box<[Mutex<Option<O>>]>,
}

impl<O> Results<O> {
    /// Entry `index`'s output (taken: a second call is an internal error), or the failure.
    fn take(&self, index: usize) -> Result<O, OffloadError> {
        if let Some(e) = &self.failure {
            return Err(e.clone());
        }
        self.outs.get(index).and_then(|c| c.lock().take()).ok_or_else(|| OffloadError::Batch {
            batch: self.seq,
            kernel: "?",
            msg: "internal: result already taken".into(),
        })
    }
}

struct BlockState<O> {
    /// The batch it was taken into (`None` while its lane is still open).
    seq: Option<u64>,
    /// Until then, the batch it is expected in (the next to be taken when it was created):
    /// what a task dump shows while the batch is still open.
    expect: u64,
    /// Set (with every output or the failure written) by the worker, under this lock.
    done: bool,
    /// The error every item of a failed batch gets.
    failure: Option<OffloadError>,
    /// One per submit (an item, or a slice of `submit_many`), in the lane's item order.
    entries: Vec<Entry<O>>,
}

impl<O> Block<O> {
    fn new(expect: u64) -> Arc<Block<O>> {
        Arc::new(Block {
            state: Mutex::new(BlockState {
                seq: None,
                expect,
                done: false,
                failure: None,
                entries: Vec::new(),
            }),
            results: OnceLock::new(),
        })
    }
}

impl<O> BlockState<O> {
    /// The batch number to show: its own once taken, else the expected one.
    fn batch(&self) -> u64 {
        self.seq.unwrap_or(self.expect)
    }
}

struct Entry<O> {
    waker: Option<Waker>,
    /// When `submit` was called for it (its queue wait starts here).
    submitted: Instant,
    out: Out<O>,
}

/// An entry's output(s).
enum Out<O> {
    /// One item's (`submit`): delivered in the block's [`Results`].
    One,
    /// `len` consecutive items' (a piece of `submit_many`), in order.
    Many { len: usize, outs: Vec<O> },
}

impl<O> Out<O> {
    fn len(&self) -> usize {
        match self {
            Out::One => 1,
            Out::Many { len, .. } => *len,
        }
    }
}

/// A batch a worker has taken.
struct Taken<O> {
    seq: u64,
    /// The blocks of its items' entries, each with the index of its first item.
    blocks: Vec<(Arc<Block<O>>, usize)>,
    opened: Instant,
    closed_at: Instant,
    reason: CloseReason,
    /// The trace flow arrow from its first item's `submit` (tracing only).
    flow: Option<u64>,
}

/// An accepted entry: its block and its index there.
type Piece<O> = (Arc<Block<O>>, usize);

/// Why `enter` did not accept.
enum EnterError {
    Refused(stage::Refused),
    /// A lane or block could not grow (the allocator refused): the submit fails with it.
    Memory(OffloadError),
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
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy, SmallSgemm};
    ///
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), BatcherConfig::default()).unwrap();
    /// assert_eq!(b.device().kind_name(), "host");
    /// // Refused before anything is allocated: a config out of range...
    /// let cfg = BatcherConfig { in_flight: 0, ..BatcherConfig::default() };
    /// let e = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), cfg).unwrap_err();
    /// assert!(e.to_string().contains("in_flight must be in 1..=64"), "{e}");
    /// // ...or a kernel with no words per item.
    /// let e = Batcher::new(SmallSgemm { m: 0, n: 0, k: 0 }, &Device::host(), BatcherConfig::default());
    /// let e = e.unwrap_err().to_string();
    /// assert!(e.contains("kernel sgemm_batched has 0 input and 0 output words per item"), "{e}");
    /// ```
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
        // One lane per P of the runtime that will submit (the configured one, else the
        // caller's, else one per CPU), plus one for everyone else (see the `stage` module).
        let procs = config
            .runtime
            .as_ref()
            .map(|h| h.procs())
            .or_else(|| gmprt_runtime::Handle::try_current().map(|h| h.procs()))
            .unwrap_or_else(crate::pool::host_threads);
        let lanes = procs + 1;
        // Memory, all of it, before any of it is allocated (see "Memory" in the module docs).
        let need = MemoryNeed {
            slots: config.in_flight,
            items: config.max_batch,
            in_words: iw,
            out_words: ow,
            queues: config.in_flight + lanes,
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
        let shared = Arc::new_cyclic(|me| Shared {
            me: me.clone(),
            stage: stage::Stage::new(lanes, config.max_batch),
            cpu_rt,
            kernel,
            device: device.clone(),
            config: config.clone(),
            created: Instant::now(),
            central: Mutex::new(Central {
                waiters: VecDeque::new(),
                next_ticket: 0,
                opened: None,
                flush: false,
                flow: None,
                closer: closer::Closer::default(),
                kits_retired: false,
            }),
            work: Condvar::new(),
            next_batch: AtomicU64::new(0),
            served: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
            rejected_invalid: AtomicU64::new(0),
            rejected_closed: AtomicU64::new(0),
            log: Mutex::new(TimelineLog::default()),
            item_latency: (0..config.in_flight).map(|_| Mutex::default()).collect(),
            workers: Mutex::new(Vec::with_capacity(config.in_flight)),
            trace,
            quiet: std::sync::atomic::AtomicBool::new(false),
            quiescence: Mutex::new(None),
            slots_run_on_caller: backend.runs_on_caller(),
            kits: Mutex::new(
                slots
                    .into_iter()
                    .zip(spares)
                    .enumerate()
                    .map(|(index, (slot, spare))| worker::Kit { index, slot, spare, cpu: Default::default() })
                    .collect(),
            ),
            quiescence_tried: std::sync::atomic::AtomicBool::new(false),
        });
        shared.register_quiescent();
        let owner = Arc::new(Owner { shared: shared.clone() });
        for index in 0..config.in_flight {
            let s = shared.clone();
            let spawned = std::thread::Builder::new()
                .name(trace::worker_name(index, s.kernel.name()))
                .spawn(move || s.worker(index));
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
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::runtime::Runtime;
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, OffloadError, Saxpy};
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), BatcherConfig::default()).unwrap();
    /// let (ok, bad) = rt.block_on(async { (b.submit((1.0, 2.0)).await, b.submit((f32::NAN, 2.0)).await) });
    /// assert_eq!(ok.unwrap(), 4.0);
    /// match bad {
    ///     Err(OffloadError::Invalid(e)) => assert_eq!(e.field, "x"), // never entered a batch
    ///     other => panic!("{other:?}"),
    /// }
    /// assert_eq!((b.stats().items, b.stats().rejected_invalid), (1, 1));
    /// ```
    pub fn submit(&self, item: K::Item) -> Submit<K> {
        let submitted = Instant::now();
        let shared = self.shared();
        if let Err(e) = shared.kernel.validate(&item, 0) {
            shared.rejected_invalid.fetch_add(1, Ordering::Relaxed);
            return Submit { state: SubmitState::Failed(Some(e)) };
        }
        let mut item = Some(item);
        let w = shared.stage.word();
        if !w.closed() && !w.has_room(1, shared.config.max_batch) {
            // No room now (the admission would refuse it): queue at the first poll without
            // touching the lane.
            return Submit {
                state: SubmitState::Waiting { shared: shared.clone(), item, ticket: None, submitted },
            };
        }
        match shared.enter_one(None, &mut item, submitted, false) {
            Ok((block, index)) => Submit { state: SubmitState::Accepted { block, index } },
            Err(EnterError::Refused(stage::Refused::Closed)) => {
                shared.rejected_closed.fetch_add(1, Ordering::Relaxed);
                Submit { state: SubmitState::Failed(Some(OffloadError::Closed)) }
            }
            Err(EnterError::Memory(e)) => Submit { state: SubmitState::Failed(Some(e)) },
            // Backpressure: the future queues for room on its first poll.
            Err(EnterError::Refused(stage::Refused::NoRoom)) => Submit {
                state: SubmitState::Waiting { shared: shared.clone(), item, ticket: None, submitted },
            },
        }
    }

    /// Submits a whole slice of items (a book of contracts) as one future: it resolves to
    /// every output in order once the last piece has run, or to the first error. The slice
    /// enters in as few pieces as room allows, each one entry with one wake (see
    /// [`SubmitMany`]); with `max_batch` at least the slice's length and a free Batcher, it is
    /// one piece in one batch. Every item is validated first (an invalid one fails the whole
    /// call, naming its index, before any enters).
    ///
    /// ```
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    ///
    /// let rt = gmprt_offload::runtime::Runtime::builder().procs(2).build().unwrap();
    /// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), BatcherConfig::default()).unwrap();
    /// let book: Vec<(f32, f32)> = (0..3000).map(|i| (i as f32, 1.0)).collect();
    /// let ys = rt.block_on(b.submit_many(book)).unwrap();
    /// assert_eq!(ys.len(), 3000);
    /// assert_eq!(ys[2999], 2.0 * 2999.0 + 1.0);
    /// ```
    pub fn submit_many(&self, items: Vec<K::Item>) -> SubmitMany<K> {
        SubmitMany::new(self.shared(), items)
    }

    /// Closes the open batch now (if it holds any item) instead of at its deadline. It runs
    /// as soon as a slot is free. Does not wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::runtime::Runtime;
    /// use gmprt_offload::{Batcher, BatcherConfig, CloseReason, Device, Saxpy};
    /// use std::time::Duration;
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let cfg = BatcherConfig { max_delay: Duration::from_secs(60), ..BatcherConfig::default() };
    /// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), cfg).unwrap();
    /// let y = b.submit((3.0, 1.0)); // in the open batch, which would wait 60 s for more
    /// b.flush();
    /// assert_eq!(rt.block_on(y).unwrap(), 7.0);
    /// assert_eq!(b.timelines()[0].closed_by, CloseReason::Flush);
    /// ```
    pub fn flush(&self) {
        let shared = self.shared();
        let mut c = shared.central.lock();
        if shared.stage.word().open() > 0 {
            c.flush = true;
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
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::runtime::Runtime;
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, OffloadError, Saxpy};
    /// use std::time::Duration;
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let cfg = BatcherConfig { max_delay: Duration::from_secs(60), ..BatcherConfig::default() };
    /// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), cfg).unwrap();
    /// let accepted = b.submit((1.0, 1.0));
    /// b.shutdown(); // closes the open batch at once, runs it, joins the workers
    /// assert_eq!(b.stats().closed_shutdown, 1);
    /// assert_eq!(rt.block_on(accepted).unwrap(), 3.0); // accepted items still get their result
    /// assert_eq!(rt.block_on(b.submit((1.0, 1.0))), Err(OffloadError::Closed));
    /// b.shutdown(); // idempotent
    /// ```
    pub fn shutdown(&self) {
        self.shared().shutdown();
    }

    /// Whether [`shutdown`](Batcher::shutdown) has happened.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    ///
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), BatcherConfig::default()).unwrap();
    /// let b2 = b.clone();
    /// assert!(!b2.is_closed());
    /// b.shutdown(); // one clone shuts down them all
    /// assert!(b2.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.shared().stage.word().closed()
    }

    /// The kernel.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    ///
    /// let b = Batcher::new(Saxpy { a: 2.5 }, &Device::host(), BatcherConfig::default()).unwrap();
    /// assert_eq!(b.kernel(), &Saxpy { a: 2.5 });
    /// ```
    pub fn kernel(&self) -> &K {
        &self.shared().kernel
    }

    /// The device.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, DeviceKind, Saxpy};
    ///
    /// let sim = Device::simulated(DeviceProfile::published_h100());
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &sim, BatcherConfig::default()).unwrap();
    /// assert_eq!(b.device().kind(), DeviceKind::Simulated);
    /// assert_eq!(b.report().device, sim.describe());
    /// ```
    pub fn device(&self) -> &Device {
        &self.shared().device
    }

    /// The configuration as it was given to [`Batcher::new`] (a `runtime: None` stays `None`
    /// even when the Batcher picked up the caller's runtime for its CPU batches).
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    ///
    /// let cfg = BatcherConfig { max_batch: 64, in_flight: 1, ..BatcherConfig::default() };
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), cfg.clone()).unwrap();
    /// assert_eq!(b.config(), cfg);
    /// ```
    pub fn config(&self) -> BatcherConfig {
        self.shared().config.clone()
    }

    /// The cost model's decisions still in the timeline ring (`Placement::Auto` only), oldest
    /// first: both predictions, the side chosen and its measured time.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::model::{CostModel, DeviceProfile};
    /// use gmprt_offload::runtime::Runtime;
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Placement, Saxpy, Side};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let model = Arc::new(CostModel::new(DeviceProfile::published_h100()));
    /// let cfg = BatcherConfig {
    ///     placement: Placement::Auto,
    ///     model: Some(model),
    ///     max_delay: Duration::from_secs(60),
    ///     ..BatcherConfig::default()
    /// };
    /// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), cfg).unwrap();
    /// let y = b.submit((1.0, 1.0));
    /// b.flush();
    /// assert_eq!(rt.block_on(y).unwrap(), 3.0);
    /// // One item: tens of µs through PCIe and back against about 1 µs on one core.
    /// let d = b.decisions();
    /// assert_eq!(d.len(), 1);
    /// assert_eq!((d[0].n, d[0].chose), (1, Side::Cpu));
    /// assert!(d[0].predicted_cpu < d[0].predicted_gpu);
    /// ```
    pub fn decisions(&self) -> Vec<PlacementDecision> {
        self.shared().log.lock().timelines().iter().filter_map(|t| t.predicted).collect()
    }

    /// The current load.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    /// use std::time::Duration;
    ///
    /// let cfg = BatcherConfig { max_delay: Duration::from_secs(60), ..BatcherConfig::default() };
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), cfg).unwrap();
    /// let _y = b.submit((1.0, 1.0));
    /// let _z = b.submit((2.0, 1.0));
    /// let o = b.occupancy();
    /// assert_eq!((o.open_items, o.waiting, o.closed), (2, 0, false));
    /// b.shutdown(); // the open batch is taken and run
    /// let o = b.occupancy();
    /// assert_eq!((o.open_items, o.busy_slots, o.closed), (0, 0, true));
    /// ```
    pub fn occupancy(&self) -> Occupancy {
        let s = self.shared();
        let c = s.central.lock();
        let w = s.stage.word();
        Occupancy {
            open_items: w.open(),
            waiting: c.waiters.len(),
            reserved: w.reserved(),
            busy_slots: s.busy.load(Ordering::Relaxed),
            closed: w.closed(),
        }
    }

    /// Aggregates over every finished batch. A batch is counted before any of its futures
    /// resolves, so once every submit has resolved the stats include all of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::runtime::Runtime;
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let cfg = BatcherConfig { max_batch: 4, ..BatcherConfig::default() };
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), cfg).unwrap();
    /// rt.block_on(b.submit_many(vec![(1.0, 1.0); 10])).unwrap();
    /// let s = b.stats();
    /// assert_eq!((s.items, s.failed_items, s.failed_batches), (10, 0, 0));
    /// assert!(s.batches >= 3 && s.max_n <= 4);
    /// assert_eq!(s.launches, s.batches); // one launch per batch
    /// ```
    pub fn stats(&self) -> BatcherStats {
        self.shared().with_rejections(self.shared().log.lock().stats())
    }

    /// The last (up to [`TIMELINE_CAPACITY`](crate::timeline::TIMELINE_CAPACITY)) batches'
    /// timelines, oldest first (in completion order).
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::runtime::Runtime;
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, DeviceKind, Saxpy};
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let cfg = BatcherConfig { max_batch: 4, ..BatcherConfig::default() };
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), cfg).unwrap();
    /// rt.block_on(b.submit_many(vec![(1.0, 1.0); 10])).unwrap();
    /// let ts = b.timelines();
    /// assert_eq!(ts.iter().map(|t| t.n).sum::<usize>(), 10);
    /// assert!(ts.iter().all(|t| t.ok && t.launched && t.n <= 4 && t.device == DeviceKind::Host));
    /// ```
    pub fn timelines(&self) -> Vec<BatchTimeline> {
        self.shared().log.lock().timelines()
    }

    /// A printable summary: per-phase median, p99 and totals, items per batch, launches,
    /// bytes moved, transfer vs kernel share, the device, and each item's submit → result
    /// latency split into queue wait and batch time (p50 / p99 / p99.9 / max over every item
    /// batched so far). Serialisable (`serde`) for machine-readable output.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::runtime::Runtime;
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), BatcherConfig::default()).unwrap();
    /// rt.block_on(b.submit_many(vec![(1.0, 1.0); 100])).unwrap();
    /// let r = b.report();
    /// assert_eq!((r.kernel, r.stats.items), ("saxpy", 100));
    /// assert_eq!(r.device, Device::host().describe());
    /// assert!(r.to_string().starts_with("batcher report: kernel saxpy on host ("));
    /// ```
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
}
