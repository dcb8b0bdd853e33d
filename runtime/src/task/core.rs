//! The task cell, its vtable and the harness that polls, completes and cancels it.
//!
//! Contract of every function taking a `NonNull<Header>`: the pointer came from
//! [`allocate`] and the caller owns at least one reference to the task.

use super::cache::{alloc_cell, free_cell, CellCache};
use super::state::{State, ToIdle, ToRunning, CANCELLED, JOIN_INTEREST, JOIN_WAKER, NOTIFIED, OWNED};
use super::JoinError;
use crate::loom::cell::UnsafeCell;
use crate::sched::Shared;
use std::alloc::Layout;
use std::any::Any;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// A task's id: unique within its runtime, handed out in per-P batches like Go's `goidcache`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct TaskId(pub u64);

impl std::fmt::Display for TaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "task#{}", self.0)
    }
}

/// Type-erased operations on a `Cell<F>`, one static instance per future type.
pub(crate) struct Vtable {
    /// Run the task once: the caller gives up the queue's reference.
    pub(crate) run: unsafe fn(NonNull<Header>),
    /// Free the cell (refcount reached zero).
    pub(crate) dealloc: unsafe fn(NonNull<Header>),
    /// Move the output into `*dst` (a `*mut Poll<Result<T, JoinError>>`). Only after `COMPLETE`
    /// by the holder of `JOIN_INTEREST`.
    pub(crate) read_output: unsafe fn(NonNull<Header>, *mut ()),
    /// Drop whatever the stage holds. Only with exclusive access to the stage.
    pub(crate) drop_stage: unsafe fn(NonNull<Header>) -> Option<String>,
}

/// Links of the owned-task list; only touched under that shard's lock.
pub(crate) struct Links {
    pub(crate) prev: Option<NonNull<Header>>,
    pub(crate) next: Option<NonNull<Header>>,
}

/// The task header. `#[repr(C)]` and first in [`Cell`], so a `NonNull<Header>` is a pointer
/// to the whole cell.
#[repr(C)]
pub(crate) struct Header {
    pub(crate) state: State,
    pub(crate) vtable: &'static Vtable,
    /// Owned-list links (see `owned.rs`).
    pub(crate) links: UnsafeCell<Links>,
    pub(crate) id: TaskId,
    /// The scheduler this task is queued on (`Arc::into_raw`; released at dealloc).
    pub(crate) sched: NonNull<Shared>,
    /// The joiner's waker; see the `JOIN_WAKER` rules in `state.rs`.
    pub(crate) join_waker: UnsafeCell<Option<Waker>>,
    /// When the task last became runnable (trace-clock ns + 1), if that readiness is tracked
    /// (0: not tracked); read and cleared by the next poll. See `trace/hooks.rs` (sampling,
    /// and why `Relaxed` suffices). A plain std atomic under loom too: a statistic that no
    /// protocol decision reads.
    pub(crate) woken_at: std::sync::atomic::AtomicU64,
    /// Where the task was spawned (`#[track_caller]` on `spawn`/`go`), for dumps and sysmon.
    pub(crate) spawned_at: &'static std::panic::Location<'static>,
    /// What the task waits on while parked (see `wait.rs`).
    pub(crate) wait: super::wait::WaitCell,
}

/// The bytes every task takes before its future and output: its header (the state word, the
/// vtable, the owned-list links, the id, the scheduler, the join waker, the wake stamp, the
/// spawn site and the wait reason; 96 on 64-bit targets, checked below). A floor for any
/// "how many tasks fit in memory" arithmetic: a task is never smaller.
pub const TASK_HEADER_BYTES: usize = std::mem::size_of::<Header>();

// SAFETY: the header is shared between threads by design; every field is either atomic,
// immutable after allocation, or an UnsafeCell whose access rules (state bits or a lock) are
// documented at the field.
unsafe impl Send for Header {}
// SAFETY: as above.
unsafe impl Sync for Header {}

impl Header {
    /// The scheduler this task belongs to.
    pub(crate) fn shared(&self) -> &Shared {
        // SAFETY: `sched` came from `Arc::into_raw` and the task holds that count until dealloc.
        unsafe { self.sched.as_ref() }
    }
}

enum Stage<F: Future> {
    Running(F),
    Finished(Result<F::Output, JoinError>),
    Consumed,
}

#[repr(C)]
struct Cell<F: Future> {
    header: Header,
    stage: UnsafeCell<Stage<F>>,
}

/// Allocates a new task (state: `NOTIFIED | JOIN_INTEREST`, two references: the returned
/// `Notified` for the run queue and the returned raw pointer for the `JoinHandle`).
pub(crate) fn allocate<F>(
    future: F,
    id: TaskId,
    sched: Arc<Shared>,
    cache: Option<&mut CellCache>,
    spawned_at: &'static std::panic::Location<'static>,
) -> (Notified, NonNull<Header>)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let mem = alloc_cell(Layout::new::<Cell<F>>(), cache).cast::<Cell<F>>();
    let cell = Cell {
        header: Header {
            state: State::new(),
            vtable: vtable::<F>(),
            links: UnsafeCell::new(Links { prev: None, next: None }),
            id,
            // SAFETY: Arc::into_raw never returns null.
            sched: unsafe { NonNull::new_unchecked(Arc::into_raw(sched) as *mut Shared) },
            join_waker: UnsafeCell::new(None),
            woken_at: std::sync::atomic::AtomicU64::new(0),
            spawned_at,
            wait: super::wait::WaitCell::new(),
        },
        stage: UnsafeCell::new(Stage::Running(future)),
    };
    // SAFETY: `mem` is fresh memory of Cell<F>'s size and alignment (or larger).
    unsafe { mem.as_ptr().write(cell) };
    let ptr = mem.cast::<Header>();
    (Notified(ptr), ptr)
}

fn vtable<F>() -> &'static Vtable
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    &Vtable {
        run: run::<F>,
        dealloc: dealloc::<F>,
        read_output: read_output::<F>,
        drop_stage: drop_stage::<F>,
    }
}

/// A task in a run queue: owns the queue's reference and the right to poll it.
#[derive(Debug)]
pub(crate) struct Notified(pub(crate) NonNull<Header>);

// SAFETY: a task is Send (its future and output are Send); the queue reference may move
// between threads.
unsafe impl Send for Notified {}

impl Notified {
    /// Polls the task once, consuming the queue reference. Called only by an M holding a P
    /// (or by shutdown via [`Notified::shutdown`]).
    pub(crate) fn run(self) {
        let ptr = ManuallyDrop::new(self).0;
        // SAFETY: we own the queue reference, which `run` takes over.
        unsafe { (ptr.as_ref().vtable.run)(ptr) }
    }

    /// Shutdown: drops the future (if unfinished) and this reference.
    pub(crate) fn shutdown(self) {
        shutdown_task(self.into_raw());
    }

    /// The task's header (its id, its readiness stamp).
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: we own a reference, so the cell is alive.
        unsafe { self.0.as_ref() }
    }

    /// The task's id (as a number, for sysmon's report).
    pub(crate) fn id(&self) -> u64 {
        // SAFETY: we own a reference, so the cell is alive; `id` is immutable.
        unsafe { self.0.as_ref() }.id.0
    }

    pub(crate) fn into_raw(self) -> NonNull<Header> {
        ManuallyDrop::new(self).0
    }

    /// # Safety
    /// `ptr` must carry a queue reference (from [`Notified::into_raw`]).
    pub(crate) unsafe fn from_raw(ptr: NonNull<Header>) -> Notified {
        Notified(ptr)
    }
}

impl Drop for Notified {
    fn drop(&mut self) {
        drop_reference(self.0);
    }
}

/// Releases one reference, freeing the task if it was the last.
pub(crate) fn drop_reference(ptr: NonNull<Header>) {
    // SAFETY: the caller owns this reference (module contract).
    unsafe {
        if ptr.as_ref().state.ref_dec() {
            (ptr.as_ref().vtable.dealloc)(ptr);
        }
    }
}

/// Cancels a task found at shutdown (in a queue or the owned list) and releases the caller's
/// reference. Drops the future here unless the task already completed.
pub(crate) fn shutdown_task(ptr: NonNull<Header>) {
    // SAFETY: the caller owns a reference (module contract).
    let header = unsafe { ptr.as_ref() };
    if header.state.transition_to_shutdown() {
        // SAFETY: transition_to_shutdown gave us RUNNING: exclusive access to the stage.
        unsafe { cancel_and_complete(ptr, false) };
    }
    drop_reference(ptr);
}

fn panic_message(p: Box<dyn Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&'static str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "task panicked with a non-string payload".to_string()
    }
}

unsafe fn stage<'a, F: Future>(ptr: NonNull<Header>) -> &'a UnsafeCell<Stage<F>> {
    // SAFETY: ptr points to a Cell<F> (the vtable is monomorphised for F).
    unsafe { &ptr.cast::<Cell<F>>().as_ref().stage }
}

unsafe fn run<F>(ptr: NonNull<Header>)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // SAFETY: caller gives us the queue reference; the cell is alive.
    let header = unsafe { ptr.as_ref() };
    match header.state.transition_to_running() {
        ToRunning::Done => return drop_reference(ptr),
        // SAFETY: we hold RUNNING.
        ToRunning::Cancel => return unsafe { cancel_and_complete(ptr, true) },
        ToRunning::Poll => {}
    }
    let shared = header.shared();
    let mark = shared.trace_poll_begin(header);
    // The waker borrows our queue reference: no count change.
    let waker = ManuallyDrop::new(super::waker::waker_ref(ptr));
    let mut cx = Context::from_waker(&waker);
    // SAFETY: RUNNING gives exclusive access to the stage.
    let stage = unsafe { stage::<F>(ptr) };
    // The poll's wait reason goes to this task's header (a primitive that returns Pending
    // records it; anything else leaves "unknown").
    let wait_guard = super::wait::enter(&header.wait);
    let res = crate::coop::with_budget(|| {
        catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: RUNNING gives exclusive access to the stage.
            stage.with_mut(|s| match unsafe { &mut *s } {
                // SAFETY: the future lives inside the heap cell and is never moved until dropped.
                Stage::Running(f) => unsafe { Pin::new_unchecked(f) }.poll(&mut cx),
                _ => unreachable!("polled a task whose future is gone"),
            })
        }))
    });
    drop(wait_guard);
    let out = match res {
        Ok(Poll::Pending) => {
            shared.trace_poll_end(header, mark, false);
            // About to park (not woken during the poll): make the task findable by shutdown.
            // We still hold RUNNING, which `owned.insert` requires.
            // One load decides: woken or aborted during the poll (not parking), or already
            // in the list (OWNED).
            if !header.state.load().has(NOTIFIED | CANCELLED | OWNED) && shared.owned.insert(header).is_err()
            {
                // Shutdown closed the list: drop the future now instead of parking it.
                // SAFETY: we hold RUNNING.
                return unsafe { cancel_and_complete(ptr, true) };
            }
            match header.state.transition_to_idle() {
                ToIdle::Idle => {}
                ToIdle::Notified => shared.schedule(Notified(ptr), true),
                // SAFETY: we still hold RUNNING.
                ToIdle::Cancel => unsafe { cancel_and_complete(ptr, true) },
            }
            return;
        }
        Ok(Poll::Ready(v)) => Ok(v),
        Err(p) => Err(JoinError::Panicked(panic_message(p))),
    };
    shared.trace_poll_end(header, mark, true);
    // Drop the future before publishing the output; a panicking destructor becomes the result.
    // SAFETY: still RUNNING.
    let out = match unsafe { drop_stage::<F>(ptr) } {
        Some(msg) if out.is_ok() => Err(JoinError::Panicked(msg)),
        _ => out,
    };
    // SAFETY: still RUNNING.
    stage.with_mut(|s| unsafe { s.write(Stage::Finished(out)) });
    // SAFETY: RUNNING held, output stored.
    unsafe { complete(ptr, true, false) };
}

/// Drops the future and completes the task as cancelled: the stage is left `Consumed`, which
/// `read_output` reports as `JoinError::Cancelled` (this function does not know `F`). A panic
/// in the future's destructor is contained and dropped: the task was cancelled either way.
/// Caller holds `RUNNING`. With `owns_queue_ref` the caller's queue reference is released
/// here; otherwise the caller keeps (and later releases) its own reference.
unsafe fn cancel_and_complete(ptr: NonNull<Header>, owns_queue_ref: bool) {
    // SAFETY: caller holds RUNNING.
    unsafe {
        let _ = (ptr.as_ref().vtable.drop_stage)(ptr);
        complete(ptr, owns_queue_ref, true);
    }
}

/// Publishes completion. Caller holds `RUNNING` and the stage is `Finished` (or `Consumed` when
/// `cancelled`, in which case the joiner reads `Cancelled`). Releases the queue reference when
/// `owns_queue_ref`, and the owned list's if the task was linked.
unsafe fn complete(ptr: NonNull<Header>, owns_queue_ref: bool, cancelled: bool) {
    // SAFETY: module contract.
    let header = unsafe { ptr.as_ref() };
    let shared = header.shared();
    // Counters and the owned list are settled before COMPLETE is published, so a snapshot
    // taken after every JoinHandle returned is exact.
    if cancelled {
        shared.stats_cancelled();
    } else {
        shared.stats_completed();
    }
    // Unlink from the owned list if the task parked at some point (we hold RUNNING).
    let linked_ref = shared.owned.remove(header);
    let prev = header.state.transition_to_complete();
    if !prev.has(JOIN_INTEREST) {
        // No one will read the output: drop it here (we own the stage after COMPLETE without
        // JOIN_INTEREST).
        // SAFETY: see above.
        let _ = unsafe { (header.vtable.drop_stage)(ptr) };
    } else if prev.has(JOIN_WAKER) {
        // JOIN_WAKER set: we may read the waker slot until we clear the bit.
        header.join_waker.with(|w| {
            // SAFETY: shared read access under JOIN_WAKER.
            if let Some(w) = unsafe { &*w } {
                w.wake_by_ref();
            }
        });
        let after = header.state.unset_join_waker_after_complete();
        if !after.has(JOIN_INTEREST) {
            // The handle went away meanwhile; it left the slot to us.
            // SAFETY: JOIN_WAKER is clear and the handle is gone: exclusive access.
            header.join_waker.with_mut(|w| unsafe { *w = None });
        }
    }
    let last = match (owns_queue_ref, linked_ref) {
        (true, true) => header.state.ref_dec_twice(),
        (true, false) | (false, true) => header.state.ref_dec(),
        (false, false) => false,
    };
    if last {
        // SAFETY: no references remain.
        unsafe { (header.vtable.dealloc)(ptr) };
    }
}

unsafe fn dealloc<F: Future>(ptr: NonNull<Header>) {
    // SAFETY: refcount reached zero: nobody else can touch the cell; it came from
    // `allocate`, i.e. `alloc_cell` with Cell<F>'s layout.
    unsafe {
        let cell = ptr.cast::<Cell<F>>();
        let sched = cell.as_ref().header.sched;
        std::ptr::drop_in_place(cell.as_ptr());
        free_cell(cell.cast(), Layout::new::<Cell<F>>());
        drop(Arc::from_raw(sched.as_ptr() as *const Shared));
    }
}

/// Drops whatever the stage holds **in place** and leaves it `Consumed`; returns the panic
/// message if a destructor panicked. In place matters: the future is pinned, and a pinned value
/// must be dropped where it lives (a `Sleep` inside it has its address registered in a timer
/// heap until its destructor removes it). Moving it out to drop it broke exactly that.
unsafe fn drop_stage<F: Future>(ptr: NonNull<Header>) -> Option<String> {
    // SAFETY: caller has exclusive access to the stage.
    let stage = unsafe { stage::<F>(ptr) };
    stage.with_mut(|s| {
        // SAFETY: exclusive access; the stage is initialised. If a destructor panics, the
        // value counts as dropped (Rust's drop-glue rule) and we overwrite it without dropping.
        let panicked = catch_unwind(AssertUnwindSafe(|| unsafe { std::ptr::drop_in_place(s) })).err();
        // SAFETY: `s` is valid for writes; its old value has been dropped.
        unsafe { std::ptr::write(s, Stage::Consumed) };
        panicked.map(panic_message)
    })
}

unsafe fn read_output<F: Future>(ptr: NonNull<Header>, dst: *mut ()) {
    // SAFETY: caller holds JOIN_INTEREST after COMPLETE: the output is the handle's.
    let stage = unsafe { stage::<F>(ptr) };
    let dst = dst as *mut Poll<Result<F::Output, JoinError>>;
    // SAFETY: exclusive access (see the function contract).
    let old = stage.with_mut(|s| unsafe { std::ptr::replace(s, Stage::Consumed) });
    let out = match old {
        Stage::Finished(r) => r,
        // Cancelled tasks complete with the stage Consumed.
        Stage::Consumed => Err(JoinError::Cancelled),
        Stage::Running(_) => unreachable!("read_output before completion"),
    };
    // SAFETY: dst is a valid, initialised Poll the caller gave us.
    unsafe { *dst = Poll::Ready(out) };
}

#[cfg(all(test, not(loom), target_pointer_width = "64"))]
mod tests {
    use super::*;

    /// The per-task overhead the docs quote (and `million_tasks --park` measures): a 96-byte
    /// header — state 8, vtable 8, owned-list links 16, id 8, scheduler 8, join waker 16 —
    /// plus the readiness stamp (8) that scheduling latency and trace flows read, the spawn
    /// site (8) and the wait reason (16) that `Runtime::dump` prints.
    #[test]
    fn header_is_96_bytes() {
        assert_eq!(std::mem::size_of::<Header>(), 96);
    }

    /// A cell is the header followed by the stage: no hidden per-task allocation.
    #[test]
    fn cell_is_header_plus_stage() {
        type F = std::future::Ready<u64>;
        let cell = std::mem::size_of::<Cell<F>>();
        let stage = std::mem::size_of::<Stage<F>>();
        assert_eq!(cell, std::mem::size_of::<Header>() + stage);
    }
}
