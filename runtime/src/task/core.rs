//! The task cell, its vtable and the harness that polls, completes and cancels it.
//!
//! Contract of every function taking a `NonNull<Header>`: the pointer came from
//! [`allocate`] and the caller owns at least one reference to the task.

use super::cache::{alloc_cell, free_cell, CellCache};
use super::state::{
    Completed, State, ToIdle, ToRunning, CANCELLED, COMPLETE, JOIN_INTEREST, JOIN_WAKER, NOTIFIED, OWNED,
};
use super::JoinError;
use crate::loom::cell::UnsafeCell;
use crate::sched::context::with_current;
use crate::sched::Shared;
use std::alloc::Layout;
use std::any::Any;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

/// A task's id: unique within its runtime's first 2^48 tasks (then ids wrap: see `ID_BITS`),
/// handed out in per-P batches like Go's `goidcache`.
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
    /// Drop the future and, when the flag is set, store `Err(JoinError::Cancelled)`. Only by
    /// the holder of `RUNNING` of a task that has not completed.
    pub(crate) cancel: unsafe fn(NonNull<Header>, bool),
    /// Move the output into `*dst` (a `*mut Poll<Result<T, JoinError>>`). Only after `COMPLETE`
    /// by the holder of `JOIN_INTEREST`; the output is gone after.
    pub(crate) read_output: unsafe fn(NonNull<Header>, *mut ()),
    /// Drop the output in place. Only after `COMPLETE`, by its owner (the holder of
    /// `JOIN_INTEREST`, or the runtime once that is gone), once.
    pub(crate) drop_output: unsafe fn(NonNull<Header>),
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
    /// The task's id (low [`ID_BITS`]) and its spawn site's index in `site.rs`'s table (the
    /// top 16 bits; `#[track_caller]` on `spawn`/`go`), for dumps, traces and sysmon. One word
    /// for both: see `site.rs`. Immutable after allocation.
    pub(crate) ident: u64,
    /// The scheduler this task is queued on: one task reference (`sched/taskrefs.rs`),
    /// released at dealloc.
    pub(crate) sched: NonNull<Shared>,
    /// The joiner's waker; see the `JOIN_WAKER` rules in `state.rs`.
    pub(crate) join_waker: UnsafeCell<super::waker::JoinWaker>,
    /// What the task waits on while parked, or when it became runnable (see `wait.rs`).
    pub(crate) wait: super::wait::WaitCell,
}

/// The bytes every task takes before its future and output: its header (the state word, the
/// vtable, the owned-list links, the id and spawn site, the scheduler, the join waker, and the
/// wait reason or wake stamp; 72 on 64-bit targets, checked below). A floor for any
/// "how many tasks fit in memory" arithmetic: a task is never smaller.
pub const TASK_HEADER_BYTES: usize = std::mem::size_of::<Header>();

// SAFETY: the header is shared between threads by design; every field is either atomic,
// immutable after allocation, or an UnsafeCell whose access rules (state bits or a lock) are
// documented at the field.
unsafe impl Send for Header {}
// SAFETY: as above.
unsafe impl Sync for Header {}

/// Bits of [`Header::ident`] that hold the task id. 48: at 10 M spawns a second a runtime takes
/// 325 days to use them up, after which ids wrap (they name tasks in dumps and traces, where
/// two live tasks 2^48 spawns apart sharing one is harmless); the other 16 name the spawn site.
const ID_BITS: u32 = 48;
const ID_MASK: u64 = (1 << ID_BITS) - 1;

/// A [`Header::ident`] word's task id and spawn-site index (for `site::lookup`; 0: unknown).
#[inline]
pub(crate) fn split_ident(ident: u64) -> (TaskId, u16) {
    (TaskId(ident & ID_MASK), (ident >> ID_BITS) as u16)
}

impl Header {
    /// The task's id.
    #[inline]
    pub(crate) fn id(&self) -> TaskId {
        split_ident(self.ident).0
    }

    /// Where the task was spawned: an index for `site::lookup` (0: unknown).
    #[inline]
    pub(crate) fn site(&self) -> u16 {
        split_ident(self.ident).1
    }

    /// The scheduler this task belongs to.
    pub(crate) fn shared(&self) -> &Shared {
        // SAFETY: the task holds a task reference to `sched` until dealloc, which keeps it
        // alive (`sched/taskrefs.rs`).
        unsafe { self.sched.as_ref() }
    }
}

/// The future while the task runs, then its output. Which one is live is read from the state
/// word, so the stage carries no discriminant of its own (an enum's took 8 bytes a task; issue
/// 25):
/// * before `COMPLETE`: the future, from `allocate` until the holder of `RUNNING` drops it
///   ([`drop_future`]), which it does only right before writing the output and completing;
/// * after `COMPLETE`: the output (`Err(JoinError::Cancelled)` for a cancelled task), until its
///   owner consumes it once: the `JoinHandle` reads it ([`read_output`]) or drops it when
///   dropped unread, or the runtime drops it in `complete` when the handle went during the
///   last poll ([`drop_output`]); after that, nothing. When no handle was left as the last
///   poll began, the output is dropped by the poller and never stored: nothing at all.
///
/// So when the last reference goes ([`dealloc`]), the stage holds the future if the task never
/// completed (its last reference dropped while queued, say) and nothing otherwise.
#[repr(C)]
union Stage<F: Future> {
    future: ManuallyDrop<F>,
    output: ManuallyDrop<Result<F::Output, JoinError>>,
}

#[repr(C)]
struct Cell<F: Future> {
    header: Header,
    stage: UnsafeCell<Stage<F>>,
}

/// Allocates a new task (state: `NOTIFIED | JOIN_INTEREST`, two references: the returned
/// `Notified` for the run queue and the returned raw pointer for the `JoinHandle`). `sched` is
/// a task reference the caller acquired (`sched/taskrefs.rs`); the task owns it from here.
pub(crate) fn allocate<F>(
    future: F,
    id: TaskId,
    sched: NonNull<Shared>,
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
            ident: (super::site::intern(spawned_at) as u64) << ID_BITS | (id.0 & ID_MASK),
            sched,
            join_waker: UnsafeCell::new(super::waker::JoinWaker::none()),
            wait: super::wait::WaitCell::new(),
        },
        stage: UnsafeCell::new(Stage { future: ManuallyDrop::new(future) }),
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
        drop_output: drop_output::<F>,
        cancel: cancel::<F>,
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

    /// The task's id (as a number, for the trace's runnext events).
    pub(crate) fn id(&self) -> u64 {
        self.header().id().0
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
        // `joined: true` stores the output whether or not a handle is left: `complete` then
        // finds out, which is all the (rare) shutdown path needs.
        unsafe { cancel_and_complete(ptr, false, true) };
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

/// Whether `waker` is the waker of the task whose wait cell is `cell`: the task this thread is
/// polling (`wait::request_self_yield`). Compares addresses only; `cell` may be `block_on`'s,
/// which is no task's (its waker is not a task waker).
pub(crate) fn is_own_waker(cell: *const super::wait::WaitCell, waker: &std::task::Waker) -> bool {
    let header = (cell as *const u8).wrapping_sub(std::mem::offset_of!(Header, wait));
    std::ptr::eq(waker.vtable(), &super::waker::VTABLE) && std::ptr::eq(waker.data(), header as *const ())
}

unsafe fn run<F>(ptr: NonNull<Header>)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // SAFETY: caller gives us the queue reference; the cell is alive.
    let header = unsafe { ptr.as_ref() };
    let joined = match header.state.transition_to_running() {
        ToRunning::Done => return drop_reference(ptr),
        // SAFETY: we hold RUNNING.
        ToRunning::Cancel { joined } => return unsafe { cancel_and_complete(ptr, true, joined) },
        ToRunning::Poll { joined } => joined,
    };
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
            // SAFETY: not COMPLETE (transition_to_running said Poll), so the stage holds the
            // future; it lives inside the heap cell and is never moved until dropped.
            stage.with_mut(|s| unsafe { Pin::new_unchecked(&mut *(*s).future) }.poll(&mut cx))
        }))
    });
    let self_yield = wait_guard.finish();
    let out = match res {
        Ok(Poll::Pending) if self_yield => {
            shared.trace_poll_end(header, mark, false);
            // The future asked to be polled again at once (`yield_now` on our own waker, which
            // then did not wake): not parking, so not into the owned list; one transition
            // leaves the state a wake during the poll would have, and the task goes to the
            // tail of the queue as a woken one does.
            match header.state.transition_to_requeue() {
                ToIdle::Notified => shared.schedule(Notified(ptr), true),
                // SAFETY: we still hold RUNNING.
                ToIdle::Cancel => unsafe { cancel_and_complete(ptr, true, joined) },
                ToIdle::Idle => unreachable!("transition_to_requeue never parks a task"),
            }
            return;
        }
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
                return unsafe { cancel_and_complete(ptr, true, joined) };
            }
            match header.state.transition_to_idle() {
                ToIdle::Idle => {}
                ToIdle::Notified => shared.schedule(Notified(ptr), true),
                // SAFETY: we still hold RUNNING.
                ToIdle::Cancel => unsafe { cancel_and_complete(ptr, true, joined) },
            }
            return;
        }
        Ok(Poll::Ready(v)) => Ok(v),
        Err(p) => Err(JoinError::Panicked(panic_message(p))),
    };
    shared.trace_poll_end(header, mark, true);
    // Drop the future before publishing the output; a panicking destructor becomes the result.
    // SAFETY: still RUNNING, the future is live.
    let out = match unsafe { drop_future::<F>(ptr) } {
        Some(msg) if out.is_ok() => Err(JoinError::Panicked(msg)),
        _ => out,
    };
    if joined {
        // SAFETY: still RUNNING; the stage is empty since the future was dropped.
        stage.with_mut(|s| unsafe { s.write(Stage { output: ManuallyDrop::new(out) }) });
    } else {
        // No handle can ever read it: drop it here instead of storing it. A panicking
        // destructor is contained, as in `drop_output` (nobody to tell).
        let _ = catch_unwind(AssertUnwindSafe(move || drop(out)));
    }
    // SAFETY: RUNNING held; the output is stored exactly when `joined`.
    unsafe { complete(ptr, true, false, joined) };
}

/// Drops the future and completes the task as cancelled: the output is
/// `Err(JoinError::Cancelled)`, stored only when `joined` (see [`complete`]). A panic in the
/// future's destructor is contained and dropped: the task was cancelled either way. Caller
/// holds `RUNNING` of a task that has not completed. With `owns_queue_ref` the caller's queue
/// reference is released here; otherwise the caller keeps (and later releases) its own
/// reference.
unsafe fn cancel_and_complete(ptr: NonNull<Header>, owns_queue_ref: bool, joined: bool) {
    // SAFETY: caller holds RUNNING of an incomplete task: the future is live, and after it is
    // dropped the stage is empty for `cancel` to write; it writes exactly when `joined`.
    unsafe {
        (ptr.as_ref().vtable.cancel)(ptr, joined);
        complete(ptr, owns_queue_ref, true, joined);
    }
}

/// Publishes completion. Caller holds `RUNNING`; releases the queue reference when
/// `owns_queue_ref`, and the owned list's if the task was linked.
///
/// `joined` says where the output is (for a `cancelled` task, `Err(JoinError::Cancelled)`):
/// * true: stored in the stage. A handle held `JOIN_INTEREST` when the poll began; if it went
///   meanwhile, the output is dropped here, after `COMPLETE`.
/// * false: already dropped, or never stored, by the caller. `JOIN_INTEREST` was clear when
///   the poll began ([`ToRunning`]) and, once clear, stays clear, so no handle can want it.
///
/// When nothing is left to do after `COMPLETE` (a handle will take the output later and waits
/// for nothing, or nobody will), our references go in the same RMW and the cell is not touched
/// again unless they were the last.
unsafe fn complete(ptr: NonNull<Header>, owns_queue_ref: bool, cancelled: bool, joined: bool) {
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
    let refs = owns_queue_ref as usize + linked_ref as usize;
    let last = match header.state.transition_to_complete(refs, !joined) {
        Completed::Released { last } => last,
        Completed::Kept(prev) => {
            if !prev.has(JOIN_INTEREST) {
                if joined {
                    // The handle went away during the poll: the output it left is ours to
                    // drop (we own the stage after COMPLETE without JOIN_INTEREST).
                    // SAFETY: see above; the output is stored (`joined`) and this is its one
                    // consumer.
                    unsafe { (header.vtable.drop_output)(ptr) };
                }
            } else if prev.has(JOIN_WAKER) {
                // JOIN_WAKER set: we may read the waker slot until we clear the bit.
                // SAFETY: shared read access under JOIN_WAKER.
                header.join_waker.with(|w| unsafe { &*w }.wake_by_ref());
                let after = header.state.unset_join_waker_after_complete();
                if !after.has(JOIN_INTEREST) {
                    // The handle went away meanwhile; it left the slot to us.
                    // SAFETY: JOIN_WAKER is clear and the handle is gone: exclusive access.
                    header.join_waker.with_mut(|w| unsafe { *w = super::waker::JoinWaker::none() });
                }
            }
            header.state.ref_dec_by(refs)
        }
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
        if !cell.as_ref().header.state.load().has(COMPLETE) {
            // Never completed: the stage still holds the future (see `Stage`). Dropped in
            // place, like every future here.
            let _ = drop_future::<F>(ptr);
        }
        std::ptr::drop_in_place(cell.as_ptr());
        let layout = Layout::new::<Cell<F>>();
        // One look at the current P for both the memory and the reference: onto its cell
        // cache and its reserve when this thread is an M holding a P (of this task's runtime,
        // for the reference), else to the global lists and the counter.
        let ref_kept = with_current(|cx| {
            let cx = cx?;
            let mut guard = cx.p.try_borrow_mut().ok()?;
            let p = guard.as_mut()?;
            free_cell(cell.cast(), layout, Some(&mut p.cache));
            Some(crate::sched::taskrefs::give_back_here(p, &cx.shared, sched))
        });
        match ref_kept {
            Some(true) => {}
            Some(false) => crate::sched::taskrefs::refs_release(sched, 1),
            None => {
                free_cell(cell.cast(), layout, None);
                crate::sched::taskrefs::refs_release(sched, 1);
            }
        }
    }
}

/// Drops the future **in place**, leaving the stage empty; returns the panic message if its
/// destructor panicked. In place matters: the future is pinned, and a pinned value must be
/// dropped where it lives (a `Sleep` inside it has its address registered in a timer heap
/// until its destructor removes it). Moving it out to drop it broke exactly that.
///
/// # Safety
/// Exclusive access to a stage that holds the future (`RUNNING` before `COMPLETE`, or the last
/// reference of a task that never completed).
unsafe fn drop_future<F: Future>(ptr: NonNull<Header>) -> Option<String> {
    // SAFETY: caller has exclusive access to the stage.
    let stage = unsafe { stage::<F>(ptr) };
    stage.with_mut(|s| {
        // SAFETY: the stage holds the future (contract). If its destructor panics, the value
        // counts as dropped (Rust's drop-glue rule).
        catch_unwind(AssertUnwindSafe(|| unsafe { ManuallyDrop::drop(&mut (*s).future) }))
            .err()
            .map(panic_message)
    })
}

/// `Vtable::cancel`: drops the future and, when `store`, stores `Err(JoinError::Cancelled)` as
/// the output.
///
/// # Safety
/// Caller holds `RUNNING` of a task that has not completed.
unsafe fn cancel<F: Future>(ptr: NonNull<Header>, store: bool) {
    // SAFETY: contract: the future is live and ours.
    let _ = unsafe { drop_future::<F>(ptr) };
    if !store {
        return;
    }
    // SAFETY: the stage is empty now, and still ours.
    unsafe { stage::<F>(ptr) }.with_mut(|s| {
        // SAFETY: as above: writing into an empty stage drops nothing.
        unsafe { s.write(Stage { output: ManuallyDrop::new(Err(JoinError::Cancelled)) }) }
    });
}

/// # Safety
/// After `COMPLETE`, by the output's owner, once (see `Vtable::drop_output`).
unsafe fn drop_output<F: Future>(ptr: NonNull<Header>) {
    // SAFETY: contract: the stage is ours.
    unsafe { stage::<F>(ptr) }.with_mut(|s| {
        // SAFETY: contract: the stage holds the output, dropped once, here. A panicking
        // destructor of the output is contained (its result was never read: nobody to tell).
        let _ = catch_unwind(AssertUnwindSafe(|| unsafe { ManuallyDrop::drop(&mut (*s).output) }));
    });
}

unsafe fn read_output<F: Future>(ptr: NonNull<Header>, dst: *mut ()) {
    // SAFETY: caller holds JOIN_INTEREST after COMPLETE: the output is the handle's.
    let stage = unsafe { stage::<F>(ptr) };
    let dst = dst as *mut Poll<Result<F::Output, JoinError>>;
    // SAFETY: the stage holds the output (COMPLETE) and the handle, its owner, takes it once:
    // after this the stage is empty and nothing reads or drops it again (`Stage`).
    let out = stage.with_mut(|s| unsafe { ManuallyDrop::take(&mut (*s).output) });
    // SAFETY: dst is a valid, initialised Poll the caller gave us.
    unsafe { *dst = Poll::Ready(out) };
}

#[cfg(all(test, not(loom), target_pointer_width = "64"))]
mod tests {
    use super::*;

    /// The per-task overhead the docs quote (and `million_tasks --park` measures): a 72-byte
    /// header — state 8, vtable 8, owned-list links 16, id and spawn site 8, scheduler 8, join
    /// waker 8, wait reason or wake stamp 16. It was 96 bytes; issue 25 (a parked task in at
    /// most 176 bytes) took out 32, four cuts of 8 that each keep what the field gave:
    /// * the wake stamp shares the wait reason's auxiliary word (`wait.rs`);
    /// * the spawn site is a 16-bit index packed with a 48-bit id (`site.rs`);
    /// * the joiner's waker is one word, a task pointer or a boxed foreign waker (`waker.rs`);
    /// * the stage has no discriminant: the state word says what it holds (`Stage`, below).
    #[test]
    fn header_is_72_bytes() {
        assert_eq!(std::mem::size_of::<Header>(), 72);
        assert_eq!(TASK_HEADER_BYTES, 72);
    }

    /// A cell is the header followed by the stage, and the stage is the larger of the future
    /// and the output, nothing more: no discriminant, no hidden per-task allocation.
    #[test]
    fn cell_is_header_plus_the_larger_of_future_and_output() {
        type F = std::future::Ready<u64>;
        let cell = std::mem::size_of::<Cell<F>>();
        let stage = std::mem::size_of::<Stage<F>>();
        assert_eq!(cell, std::mem::size_of::<Header>() + stage);
        // The output (Result<u64, JoinError>) is the larger here.
        assert_eq!(stage, std::mem::size_of::<Result<u64, JoinError>>());
        // A 64-byte future with a unit output: the stage is the future's 64 bytes.
        type Big = std::future::Ready<[u64; 8]>;
        assert_eq!(std::mem::size_of::<Stage<Big>>(), std::mem::size_of::<Big>().max(24));
    }
}
