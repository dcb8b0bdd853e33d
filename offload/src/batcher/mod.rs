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
//! * **Slot workers**: `in_flight` plain OS threads per device (not runtime threads). `in_flight`
//!   *kits* — one [`Slot`] each (a stream plus staging and device buffers sized for
//!   `max_batch` items, created once in [`Batcher::new`]) with the buffers that go with it —
//!   wait in a pool; a batch closes only together with a free kit (the `worker` module), so at
//!   most `in_flight` batches run. A worker is idle or runs exactly one batch. There is no
//!   separate dispatcher: an *idle* worker is the one that watches the open batch's deadline
//!   (`Condvar::wait_until` the oldest item's deadline) and closes it.
//! * **The quiescent M** (the `quiesce` module): when the Batcher's runtime goes quiescent
//!   with items open, the M that finds it so runs the Batcher's hook on a P. On the Host
//!   device ([`Backend::runs_on_caller`](crate::Backend::runs_on_caller)) it takes the batch
//!   with a free kit and runs it right there — no worker thread, no hand-off; on a CUDA or
//!   simulated device it tells a worker to close it.
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
//!    or at shutdown, or flush, or once the runtime went quiescent while they were open
//!    (`quiet`, set by the quiescence hook; on the Host device the hook's M takes them itself,
//!    the same way), or when the oldest item's deadline has passed — with
//!    `max_delay = 0` (Triton's default) whenever it is free and anything is open — on a
//!    runtime, once the batch's *closer* released it: a small task woken by the batch's
//!    first admission that yields once, so the tasks already runnable on that P submit into
//!    the batch first (see the `closer` module; without a runtime, at once); otherwise it
//!    waits on the condvar (until the deadline when a batch is open). A worker with nothing
//!    open polls the admission word for a few tens of µs (Go's spinning M), then waits
//!    `max_delay` more on the condvar, and only then parks untimed; while it waits on a
//!    deadline or that `max_delay`, the admission that opens a batch does not notify (its
//!    wait ends before the new deadline). Room reserved for waiters does not make a batch
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
//!    with the runtime's [`wake_all`](gmprt_runtime::wake_all) (one global-queue round and
//!    one `wakep`: Ms come up as the woken submitters keep them busy, not one per task, which
//!    at 16 Ps woke 15 Ms a round that the next quiescence then waited to see park). Each
//!    block's outputs are published first, one cell per entry (`Block::results`, set once),
//!    then `done` under the block's lock. A
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
//! # Several devices
//!
//! [`Batcher::spread`] builds one Batcher over several devices, each with the cost model of its
//! own profile ([`PricedDevice`]): `in_flight` kits per device, all in the one free list, and
//! each close takes a kit of the device predicted to finish the batch first, counting the work
//! each already has (the `spread` module). Everything else here — admission, the one run per
//! batch, scatter, backpressure (now `in_flight` batches per device), shutdown retiring every
//! device's kits — is the same protocol; inline runs on a quiescent M are for one Host device
//! only. [`Batcher::shares`] says what each device ran.
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
//! before waiting — except a first item while a worker *watches* (`Central::watching`, counted
//! under `central`): that worker is in a timed wait that began before the item's admission
//! and ends by `max_delay` after its start, so by the new batch's deadline, and then re-reads
//! `opened`. Task wakeups likewise: a waker is stored under the lock that guards the
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
use crate::timeline::{BatchTimeline, BatcherStats, PlacementDecision, Report, TimelineLog};

mod accept;
mod api;
mod block;
mod closer;
mod config;
mod create;
mod latency;
mod many;
mod placement;
mod quiesce;
mod run;
mod spread;
mod stage;
mod submit;
#[cfg(test)]
mod tests;
mod trace;
mod worker;

use block::{Block, Entry, Out, Piece, Results, Taken};
pub use config::{
    BatcherConfig, Occupancy, IN_FLIGHT_LIMIT, MAX_BATCH_LIMIT, MAX_DELAY_LIMIT, SLOT_WORDS_LIMIT,
};
pub use many::SubmitMany;
use parking_lot::{Condvar, Mutex};
pub use placement::Placement;
pub use spread::{DeviceShare, PricedDevice};
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
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
    /// The devices its kits run on: one for [`Batcher::new`], several for
    /// [`Batcher::spread`] (each kit knows its device's index here).
    devices: Box<[Device]>,
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
    kits: Mutex<Vec<run::Kit<K>>>,
    /// Per device, what it ran (`Batcher::shares`).
    shares: Box<[spread::ShareCounters]>,
    /// How many kits there are: `in_flight` per device (shutdown retires them once all are
    /// home).
    kit_count: usize,
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
    /// Which device each batch closes into, when there are several (the `spread` module).
    spread: Option<spread::Spread>,
    /// Idle workers in a timed wait for an open batch's deadline. While one is, the admission
    /// that opens the next batch does not notify (`announce`): that worker's wait ends no
    /// later than the new batch's deadline (it is an older batch's), and it re-reads `opened`
    /// when it wakes. Incremented and decremented only by the waiting worker, around its wait.
    watching: usize,
    /// Idle workers parked untimed with nothing open (their watch over): the admission that
    /// opens the next batch must wake one. Counted like `watching`; read by
    /// [`Batcher::parked_workers`].
    parked: usize,
    /// Idle workers woken by an admission's notify (`announce`), for
    /// [`Batcher::submit_wakes`].
    submit_wakes: u64,
}

/// Why `enter` did not accept.
enum EnterError {
    Refused(stage::Refused),
    /// A lane or block could not grow (the allocator refused): the submit fails with it.
    Memory(OffloadError),
}
