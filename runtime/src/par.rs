//! `parallel_for`: a blocking, scoped, chunked data-parallel loop over the runtime's Ps.
//!
//! This is how compute-bound work (pricing a million options, a GEMM row block per task) uses
//! every core: the index range is cut into chunks of `grain` items, and up to `procs` green
//! tasks claim chunks until none are left. It is the CPU side of gmprt's placement story — the
//! GPU is reached only through `gmprt-offload`, explicitly.
//!
//! # Protocol
//!
//! Shared state: `next` (the next chunk to claim), `remaining` (chunks not yet finished,
//! starting at `chunks`), the closure as a lifetime-erased pointer, a `done` flag under a
//! mutex with a condvar, and the first panic.
//!
//! 1. A claimer does `i = next.fetch_add(1)`. If `i >= chunks` it stops **without touching
//!    the closure**. Otherwise it runs the closure on chunk `i` (catching a panic), then does
//!    `remaining.fetch_sub(1)`; whoever takes `remaining` to zero sets `done` and notifies.
//! 2. The caller spawns helper tasks (one chunk per poll, then a yield, so a long loop never
//!    looks like a long poll to sysmon), claims chunks itself if it is running on an M (its P
//!    would otherwise sit blocked), then waits for `done`.
//!
//! # Why borrowing is sound
//!
//! The closure may borrow the caller's stack (`F: Sync`, not `'static`), and helper tasks may
//! outlive the call (a late helper holds the `Arc` after the caller returned). Every call of
//! the closure happens between a successful claim (`i < chunks`) and that claim's decrement of
//! `remaining`; the caller returns only after observing `remaining == 0` (through `done`),
//! i.e. after every successful claim's closure call has returned. A claim made later gets
//! `i >= chunks` and never dereferences the pointer. So no closure call can start or be
//! running after the caller returns. The loom model `runtime/tests/loom_par.rs` checks this
//! hand-off (a late claimer never runs a chunk after the caller has seen completion).
//!
//! # Costs and caveats
//!
//! One spawn per helper (at most `procs`), one atomic RMW per chunk, one lock at the end.
//! Called from inside a task, the call blocks that task's M until the loop ends (like any
//! long computation in a poll: futures cannot be preempted); the caller works through chunks
//! meanwhile, so the loop finishes even with `procs = 1`.
use crate::loom::sync::atomic::{AtomicUsize, Ordering::*};
use crate::loom::sync::{Condvar, Mutex};
use crate::runtime::Handle;
use std::future::Future;
use std::ops::Range;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The closure, lifetime-erased. Only dereferenced between a successful claim and its
/// decrement of `remaining` (see the module doc).
pub(crate) type ErasedFn = *const (dyn Fn(Range<usize>) + Sync + 'static);

pub(crate) struct Loop {
    next: AtomicUsize,
    remaining: AtomicUsize,
    chunks: usize,
    len: usize,
    grain: usize,
    f: ErasedFn,
    done: Mutex<bool>,
    cv: Condvar,
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

// SAFETY: `f` points at a `Sync` closure and is only called through a shared reference while
// the caller of `parallel_for` is blocked (module doc, "Why borrowing is sound"); every other
// field is thread-safe.
unsafe impl Send for Loop {}
// SAFETY: as above.
unsafe impl Sync for Loop {}

impl Loop {
    /// A loop over `0..len` in chunks of `grain` (> 0) calling `f`, which must stay alive
    /// until [`Loop::wait`] returns.
    pub(crate) fn new(len: usize, grain: usize, f: ErasedFn) -> Loop {
        Loop {
            next: AtomicUsize::new(0),
            remaining: AtomicUsize::new(len.div_ceil(grain)),
            chunks: len.div_ceil(grain),
            len,
            grain,
            f,
            done: Mutex::new(len == 0),
            cv: Condvar::new(),
            panic: Mutex::new(None),
        }
    }

    /// Claims and runs one chunk. Returns false when no chunk was left to claim.
    /// Any thread may call it, any number of times.
    pub(crate) fn run_one(&self) -> bool {
        // Relaxed: the claim only needs atomicity (each index handed out once); the data the
        // closure reads was published to this thread by the spawn (or is the caller's own).
        let i = self.next.fetch_add(1, Relaxed);
        if i >= self.chunks {
            return false;
        }
        let start = i * self.grain;
        let range = start..(start + self.grain).min(self.len);
        // SAFETY: `i < chunks` and `remaining` has not been decremented for claim `i`, so the
        // caller is still blocked in `parallel_for` and the closure is alive (module doc).
        let f = unsafe { &*self.f };
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| f(range))) {
            let mut slot = self.panic.lock();
            if slot.is_none() {
                *slot = Some(p);
            }
        }
        // AcqRel: Release publishes this chunk's writes to whoever takes `remaining` to zero;
        // Acquire (on the last decrement) collects every other chunk's Release before `done`
        // is set, so the caller, which reads `done` under the mutex, sees all chunk writes.
        if self.remaining.fetch_sub(1, AcqRel) == 1 {
            *self.done.lock() = true;
            self.cv.notify_all();
        }
        true
    }

    /// Blocks the calling thread until every chunk has finished.
    pub(crate) fn wait(&self) {
        let mut done = self.done.lock();
        while !*done {
            self.cv.wait(&mut done);
        }
    }
}

/// A helper task: one chunk per poll, then yields, until no chunk is left.
struct Helper(Arc<Loop>);

impl Drop for Helper {
    /// A helper dropped before it finished (its runtime shut down and cancelled it) runs the
    /// chunks still unclaimed, so the caller's wait always ends; after a normal finish there is
    /// nothing left to claim and this returns at once.
    fn drop(&mut self) {
        while self.0.run_one() {}
    }
}

impl Future for Helper {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.run_one() {
            cx.waker().wake_by_ref();
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }
}

/// Runs `f` over `0..len` cut into chunks of `grain` items (the last may be shorter), on up to
/// all of the current runtime's Ps, and returns when every chunk has run. Must be called
/// inside a gmprt runtime (a task, `go`, or `block_on`); see [`Handle::parallel_for`] to call
/// it from any thread.
///
/// Each chunk runs once. A panic in a chunk is re-raised here after all chunks finished.
///
/// # Panics
/// Outside a runtime (a programmer error, like `spawn`), or if `grain == 0`.
pub fn parallel_for<F>(len: usize, grain: usize, f: F)
where
    F: Fn(Range<usize>) + Sync,
{
    let handle = Handle::try_current().expect("gmprt::parallel_for called outside a gmprt runtime");
    handle.parallel_for(len, grain, f)
}

impl Handle {
    /// Runs `f` over `0..len` in chunks of `grain` on this runtime's Ps; blocks the calling
    /// thread until all chunks ran (see [`crate::par::parallel_for`]). Callable
    /// from any thread; on an M the caller also runs chunks.
    ///
    /// # Panics
    /// If `grain == 0`; re-raises the first panic of a chunk.
    pub fn parallel_for<F>(&self, len: usize, grain: usize, f: F)
    where
        F: Fn(Range<usize>) + Sync,
    {
        assert!(grain > 0, "parallel_for: grain must be at least 1 item");
        let chunks = len.div_ceil(grain);
        if chunks == 0 {
            return;
        }
        let on_m = crate::sched::context::with_current(|cx| cx.is_some_and(|c| c.mid != usize::MAX));
        let f: &(dyn Fn(Range<usize>) + Sync) = &f;
        // SAFETY: only the lifetime is erased; the pointer is dereferenced solely while this
        // call is blocked (module doc, "Why borrowing is sound").
        let f: ErasedFn = unsafe { std::mem::transmute::<*const (dyn Fn(Range<usize>) + Sync), ErasedFn>(f) };
        let lp = Arc::new(Loop::new(len, grain, f));
        // One helper per P that is not the caller's, never more than there are chunks.
        let want = self.procs().saturating_sub(on_m as usize).min(chunks - on_m as usize);
        // Queued stealable with a wakep, not in `runnext`: the caller keeps its P busy with
        // chunks, so a helper in its `runnext` would wait for the whole loop (no M is woken
        // for a `runnext` task) and a 2-P loop would run on one P.
        let spawned = (0..want).filter(|_| self.try_spawn_elsewhere(Helper(lp.clone())).is_ok()).count();
        // Outside an M the caller only waits (the Ps do the work), unless no helper could be
        // spawned (the runtime is shutting down): then nobody else would run the chunks.
        if on_m || spawned == 0 {
            while lp.run_one() {}
        }
        lp.wait();
        let panic = lp.panic.lock().take();
        if let Some(p) = panic {
            resume_unwind(p);
        }
    }
}
