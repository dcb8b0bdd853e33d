//! Task references to the scheduler, counted in per-P batches.
//!
//! A task cell must keep its scheduler alive: a waker fired from any thread, at any time,
//! reads the task's `Shared` to queue it (or to see the runtime shut down). One `Arc` count per
//! task did that, at the price of two atomic writes per task to the one line every M shares:
//! the spawner's increment and, on whichever M the task ends, the decrement. On 16 cores that
//! line is written by every M for every task (issue 25, point 5). Go needs nothing of the kind
//! (its Gs belong to a process-wide scheduler that never goes away).
//!
//! Here the tasks, as a population, hold **one** strong count of the `Arc<Shared>`, and a
//! separate counter, `Shared::task_refs`, says how many references the population holds:
//!
//! * **Acquire** (`Shared::refs_acquire(n)`), by a caller holding a live reference to
//!   `Shared`: `task_refs += n`; the caller that moves it from 0 takes the population's strong
//!   count (`Arc::increment_strong_count`).
//! * **Release** (`refs_release(sched, n)`), by anyone owning `n` acquired references:
//!   `task_refs -= n`; the caller that moves it to 0 drops the population's strong count.
//! * **Per P**, a [`RefReserve`] (owner only, no atomics) holds references acquired
//!   [`REF_BATCH`] at a time. A spawn on a P takes one from its P's reserve; a task freed on a
//!   P of its own runtime gives its reference back to that P's reserve, which returns a batch
//!   once it holds `2 · REF_BATCH`. Spawns and frees anywhere else acquire and release one at
//!   a time. A P's reserve is released when the P is dropped (`finish_shutdown` drops every
//!   P once the Ms have exited).
//!
//! **Why it is correct.** (1) `task_refs` is the number of references acquired and not yet
//! released, never negative: each release gives back references its caller acquired (a
//! reserve's, or a task's, which came from one). (2) While `task_refs > 0` the population
//! holds a strong count: every 0 → n transition is followed by one increment and every n → 0
//! transition by one decrement, in pairs, so the population's count is positive whenever
//! `task_refs` is. The increment and the decrement of two neighbouring transitions may run in
//! either order: the acquirer holds its own live reference while it increments, so the
//! strong count cannot reach 0 in between. (3) So a task, which owns one reference until its
//! cell is freed, keeps `Shared` alive, exactly as its own `Arc` count did. (4) Orderings:
//! releases are `AcqRel`, like `Arc`'s own decrement followed by its acquire fence on the
//! last one: every releaser's uses of `Shared` happen before the final `decrement_strong_count`,
//! and through it before the drop. Acquires are `Relaxed`, like `Arc::clone`: the acquirer's
//! live reference already keeps `Shared` alive. `tests/loom_taskrefs.rs` checks the protocol
//! in every interleaving: a spawner with a reserve, a task freed on another thread holding no
//! reference but its own, and the last releaser, in any order, drop `Shared` exactly once and
//! never use it after.
//!
//! **Registered timers hold one too.** A `Sleep` registered in a P's heap (`time/mod.rs`)
//! must keep that heap alive until its drop removes it, and it may outlive every handle of its
//! runtime (a future polled in `block_on` and kept). It holds a task reference while it is
//! registered, taken and given back like a task's ([`acquire_task_ref`], [`release_task_ref`]):
//! hyper arms and cancels a 30-s header timer for every request, and an `Arc` count there was
//! a write to the shared line per request on every M.
//!
//! **What it costs.** One shared write per [`REF_BATCH`] spawns on the spawner's P and one per
//! `REF_BATCH` frees on each freeing P, instead of one per task on each side. A P holds at
//! most `2 · REF_BATCH` references in reserve, which only delays `Shared`'s drop until the P
//! itself is dropped at shutdown.

use super::Shared;
use crate::loom::sync::atomic::Ordering::{AcqRel, Relaxed};
use std::ptr::NonNull;
use std::sync::Arc;

/// References a P's reserve takes from `Shared::task_refs` at a time: one shared write per 64
/// spawns instead of 64. Go's `p.goidcache` takes 16 ids at a time for the same reason (a
/// shared counter per spawn); references cost nothing to hold, so the batch is larger.
pub(crate) const REF_BATCH: usize = if crate::loom::LOOM { 2 } else { 64 };

impl Shared {
    /// Any holder of a live reference to `self`: acquires `n ≥ 1` task references, taking the
    /// population's strong count if there were none (see the module doc). Returns the pointer
    /// they are references to, for a task's header or a reserve (`refs_release` takes it back).
    pub(crate) fn refs_acquire(self: &Arc<Self>, n: usize) -> NonNull<Shared> {
        debug_assert!(n > 0);
        // Relaxed, as `Arc::clone`: the caller's own reference keeps `self` alive, so the
        // order against other acquires and releases does not matter (module doc, point 2).
        if self.task_refs.fetch_add(n, Relaxed) == 0 {
            // SAFETY: `self` is a live `Arc<Shared>`; the count is the population's, dropped
            // by the release that brings `task_refs` back to 0.
            unsafe { Arc::increment_strong_count(Arc::as_ptr(self)) };
        }
        NonNull::from(&**self)
    }

    /// References tasks, registered timers and Ps' reserves hold (for tests: with every P
    /// dropped and no timer registered, the number of live task cells).
    #[cfg(any(loom, test))]
    pub(crate) fn task_refs(&self) -> usize {
        self.task_refs.load(Relaxed)
    }
}

/// Releases `n ≥ 1` task references of `sched`, dropping the population's strong count if
/// they were the last (see the module doc).
///
/// # Safety
/// The caller owns `n` references acquired from `sched` and not released, and does not use
/// `sched` after this call unless it holds another reference.
pub(crate) unsafe fn refs_release(sched: NonNull<Shared>, n: usize) {
    debug_assert!(n > 0);
    // SAFETY: the references the caller owns keep `sched` alive until the `fetch_sub`.
    let refs = unsafe { &sched.as_ref().task_refs };
    // AcqRel, as `Arc`'s drop (Release, then an Acquire fence on the last): every releaser's
    // uses happen before the last release, and so before the strong count's drop below.
    let before = refs.fetch_sub(n, AcqRel);
    debug_assert!(before >= n, "task_refs underflow: {before} - {n}");
    if before == n {
        // SAFETY: the population's strong count, taken when `task_refs` left 0 (point 2).
        unsafe { Arc::decrement_strong_count(sched.as_ptr()) };
    }
}

/// A P's reserve of task references (owner only: it moves with its P, like the cell cache).
pub(crate) struct RefReserve {
    held: usize,
    /// The runtime the references are to (set at the first refill or return).
    sched: Option<NonNull<Shared>>,
}

// SAFETY: the reserve owns its references, which are valid from any thread (the counter is
// atomic); it moves with its P between Ms and is used by one thread at a time.
unsafe impl Send for RefReserve {}

impl RefReserve {
    pub(crate) const fn new() -> Self {
        RefReserve { held: 0, sched: None }
    }

    /// Owner only. One reference to `shared` for a task spawned on this P.
    #[inline]
    pub(crate) fn take(&mut self, shared: &Arc<Shared>) -> NonNull<Shared> {
        let ptr = NonNull::from(&**shared);
        debug_assert!(self.sched.is_none_or(|s| s == ptr), "a P's reserve is for its own runtime");
        if self.held == 0 {
            self.sched = Some(shared.refs_acquire(REF_BATCH));
            self.held = REF_BATCH;
        }
        self.held -= 1;
        ptr
    }

    /// Owner only. Takes back the reference of a task of this P's runtime freed on this P.
    #[inline]
    pub(crate) fn give_back(&mut self, sched: NonNull<Shared>) {
        debug_assert!(self.sched.is_none_or(|s| s == sched), "a P's reserve is for its own runtime");
        self.sched = Some(sched);
        self.held += 1;
        if self.held >= 2 * REF_BATCH {
            self.held -= REF_BATCH;
            // SAFETY: the reserve owned these REF_BATCH references; it keeps `held` more.
            unsafe { refs_release(sched, REF_BATCH) };
        }
    }
}

impl Drop for RefReserve {
    /// A dropped P releases what its reserve holds (`finish_shutdown`).
    fn drop(&mut self) {
        if let (Some(sched), held @ 1..) = (self.sched, self.held) {
            self.held = 0;
            // SAFETY: the reserve owned `held` references and is going away.
            unsafe { refs_release(sched, held) };
        }
    }
}

/// Any thread inside a runtime context: one task reference to `cx.shared`, from the current
/// P's reserve when this thread is an M holding a P (no shared write), else from the counter.
/// Released with [`release_task_ref`].
#[inline]
pub(crate) fn acquire_task_ref(cx: &super::context::Context) -> NonNull<Shared> {
    if let Ok(mut guard) = cx.p.try_borrow_mut() {
        if let Some(p) = guard.as_mut() {
            return p.refs.take(&cx.shared);
        }
    }
    cx.shared.refs_acquire(1)
}

/// Releases the reference of a freed task of `sched`: onto the current P's reserve when this
/// thread is an M holding a P of that runtime, else straight to the counter.
///
/// # Safety
/// The caller owns the task's reference and does not use `sched` afterwards.
pub(crate) unsafe fn release_task_ref(sched: NonNull<Shared>) {
    let kept = super::context::with_current(|cx| {
        let Some(cx) = cx else { return false };
        let Ok(mut guard) = cx.p.try_borrow_mut() else { return false };
        guard.as_mut().is_some_and(|p| give_back_here(p, &cx.shared, sched))
    });
    if !kept {
        // SAFETY: the caller's reference (this function's contract).
        unsafe { refs_release(sched, 1) };
    }
}

/// The M holding `p`, whose context's runtime is `here`: gives a freed task's reference to
/// `sched` back to `p`'s reserve if `sched` is that runtime. False when it is not: the caller
/// still owns the reference and releases it (`refs_release`), outside its borrow of `p`.
#[inline]
pub(crate) fn give_back_here(p: &mut super::Processor, here: &Arc<Shared>, sched: NonNull<Shared>) -> bool {
    if !std::ptr::eq(&**here, sched.as_ptr()) {
        return false;
    }
    p.refs.give_back(sched);
    true
}
