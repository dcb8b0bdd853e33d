//! What a parked task waits on: the wait reason a gmprt primitive records when it returns
//! `Pending`, read by `Runtime::dump` and by the deadlock check (`crate::dump`).
//!
//! Protocol:
//! * The poll harness (`core::run`, and `block_on` for its own future) makes a [`WaitCell`]
//!   current on its thread ([`enter`]) and marks it [`UNKNOWN`] before each poll: a future
//!   that is not a gmprt primitive leaves it so ("a foreign future", which the deadlock check
//!   must assume anything may wake).
//! * A primitive that is about to return `Pending` calls [`set`] with its kind, an object id
//!   and one auxiliary word (a count, a deadline, a task id). Two relaxed stores into the
//!   current cell; nothing when no cell is current (a primitive polled by another executor).
//! * Readers (a dump, the deadlock check) load both words relaxed. A reason read while its
//!   task runs may pair a kind with another park's auxiliary word: the words are plain
//!   numbers, never pointers, so a torn read prints a stale figure and is never unsound. The
//!   deadlock check reads them only when every P is idle and no task runs, when no writer
//!   exists (`crate::dump`'s module doc).
//!
//! Why relaxed suffices: the reason is a diagnostic; no protocol decision orders other
//! memory through it. The deadlock check's stability comes from the scheduler's own SeqCst
//! counters (idle Ps, spinning Ms, the progress counter), which it re-reads after the scan.
//!
//! Plain std atomics under loom too: a statistic no protocol decision reads.
//!
//! # The auxiliary word also holds the wake stamp
//!
//! A task's wait reason matters only while it is parked; its wake stamp (when it became
//! runnable, for the scheduling-latency histogram and the trace's flow arrows; see
//! `trace/hooks.rs`) only while it is runnable. The two never overlap, so they share the
//! auxiliary word and a task's header is 8 bytes smaller (issue 25):
//! * a stamp is [`READY`] | trace-clock ns, written by whoever makes the task runnable, after
//!   the task has left `RUNNING` (an idle → notified transition, or the poller's own re-queue
//!   after its poll), so never while the poller may [`set`] a reason;
//! * the next poll reads it ([`WaitCell::ready_stamp`]) before [`enter`] overwrites the word;
//! * a reason's auxiliary value is kept below [`READY`] (saturating: a timer that never fires
//!   stores [`AUX_MAX`]), so an unstamped wake leaves a word that reads as "not tracked";
//! * a dump that loads a stamp where it expected a reason (a wake racing the dump) reads 0.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Not parked, or parked before any poll (a fresh task).
pub(crate) const NONE: u8 = 0;
/// Parked in a future that is not a gmprt primitive.
pub(crate) const UNKNOWN: u8 = 1;
/// `recv` on a channel (`id`: the channel's id).
pub(crate) const CHAN_RECV: u8 = 2;
/// `send` on a channel.
pub(crate) const CHAN_SEND: u8 = 3;
/// `select!` (`id`: the number of cases).
pub(crate) const SELECT: u8 = 4;
/// `Mutex::lock` (`id`: the mutex's address).
pub(crate) const MUTEX: u8 = 5;
/// `WaitGroup::wait` (`aux`: the count when it parked).
pub(crate) const WAITGROUP: u8 = 6;
/// `Once::call_once` while another task runs the initialiser.
pub(crate) const ONCE: u8 = 7;
/// A `JoinHandle` (`id`: the joined task's id).
pub(crate) const JOIN: u8 = 8;
/// A timer (`aux`: the deadline in runtime-clock ns).
pub(crate) const TIMER: u8 = 9;
/// An event source outside the runtime (`id`: index of its name, `aux`: the caller's id).
pub(crate) const EXTERNAL: u8 = 10;
/// A socket, through the netpoller (Go's "IO wait"); `id`: the descriptor, `aux`: 0 read, 1 write.
pub(crate) const NET: u8 = 11;

/// Bits of the first word that hold the id (the top 8 hold the kind).
const ID_BITS: u32 = 56;
const ID_MASK: u64 = (1 << ID_BITS) - 1;

/// The auxiliary word's top bit: set, the word is a wake stamp (see the module doc).
pub(crate) const READY: u64 = 1 << 63;
/// The largest auxiliary value a reason can record; larger ones are stored as this (a timer
/// that never fires records `u64::MAX`, and reads back as `AUX_MAX`).
pub(crate) const AUX_MAX: u64 = READY - 1;

/// One task's (or one `block_on` future's) wait reason, `what` = kind << 56 | id, `aux`;
/// while the task is runnable, `aux` may hold its wake stamp instead (see the module doc).
#[derive(Default)]
pub(crate) struct WaitCell {
    what: AtomicU64,
    aux: AtomicU64,
}

impl WaitCell {
    /// A cell that reads `NONE`.
    pub(crate) const fn new() -> Self {
        Self { what: AtomicU64::new(0), aux: AtomicU64::new(0) }
    }

    /// Records a reason (relaxed; see the module doc). `aux` saturates at [`AUX_MAX`].
    #[inline]
    pub(crate) fn store(&self, kind: u8, id: u64, aux: u64) {
        self.aux.store(aux.min(AUX_MAX), Relaxed);
        self.what.store((kind as u64) << ID_BITS | (id & ID_MASK), Relaxed);
    }

    /// (kind, id, aux) as last recorded; aux reads 0 if a wake stamp has replaced it.
    pub(crate) fn load(&self) -> (u8, u64, u64) {
        let w = self.what.load(Relaxed);
        let aux = self.aux.load(Relaxed);
        ((w >> ID_BITS) as u8, w & ID_MASK, if aux & READY != 0 { 0 } else { aux })
    }

    /// Stamps the task runnable at `ns` (trace clock). Only the thread that made the task
    /// runnable, before it queues it: the task is not running, so no reason is being set.
    #[inline]
    pub(crate) fn stamp_ready(&self, ns: u64) {
        debug_assert!(ns < READY, "a trace-clock reading past 2^63 ns (292 years)");
        // Relaxed: the run queue's push/pop orders it before the poll's read (trace/hooks.rs).
        self.aux.store(READY | ns, Relaxed);
    }

    /// The wake stamp, if this readiness was stamped. Only the M about to poll the task,
    /// before [`enter`] (which overwrites it).
    #[inline]
    pub(crate) fn ready_stamp(&self) -> Option<u64> {
        let aux = self.aux.load(Relaxed);
        (aux & READY != 0).then_some(aux & !READY)
    }
}

/// The poll in progress on this thread: its wait cell, and whether the future asked to be
/// polled again at once (`yield_now` on the task's own waker: [`request_self_yield`]).
struct PollCx {
    cell: Cell<*const WaitCell>,
    self_yield: Cell<bool>,
}

crate::loom::thread_local! {
    static CURRENT: PollCx = const { PollCx { cell: Cell::new(std::ptr::null()), self_yield: Cell::new(false) } };
}

/// Restores the previously current cell (and its poll's yield request) when dropped or
/// [`finished`](WaitGuard::finish).
pub(crate) struct WaitGuard {
    prev: *const WaitCell,
    prev_yield: bool,
}

impl WaitGuard {
    /// Ends the poll: restores the previous cell and returns whether this poll's future asked
    /// to be polled again at once ([`request_self_yield`]) — the harness then re-queues the
    /// task itself, with no wake (`core::run`).
    #[inline]
    pub(crate) fn finish(self) -> bool {
        std::mem::ManuallyDrop::new(self).restore()
    }

    /// Puts back the previous cell and yield flag; returns this poll's flag (false when the
    /// thread's locals are gone: a task polled from a thread-local destructor at thread exit).
    #[inline]
    fn restore(&self) -> bool {
        CURRENT
            .try_with(|c| {
                c.cell.set(self.prev);
                c.self_yield.replace(self.prev_yield)
            })
            .unwrap_or(false)
    }
}

impl Drop for WaitGuard {
    /// A poll that unwound past its harness (it never does: `core::run` catches panics) still
    /// restores the previous cell.
    fn drop(&mut self) {
        self.restore();
    }
}

/// Makes `cell` the current wait cell and marks it [`UNKNOWN`] until the guard drops. The
/// cell must outlive the guard (the task's header, or `block_on`'s frame).
#[inline]
pub(crate) fn enter(cell: &WaitCell) -> WaitGuard {
    cell.store(UNKNOWN, 0, 0);
    CURRENT
        .try_with(|c| WaitGuard {
            prev: c.cell.replace(cell as *const WaitCell),
            prev_yield: c.self_yield.replace(false),
        })
        // Lazily: a fallback guard built and dropped unused would reset the cell.
        .unwrap_or_else(|_| WaitGuard { prev: std::ptr::null(), prev_yield: false })
}

/// For `yield_now`: if `is_own(cell)` says the poll in progress is that of the task whose wait
/// cell is current (the waker it was given is the task's own), records that the future asks to
/// be polled again at once and returns true; the caller then returns `Pending` **without
/// waking**, and the harness re-queues the task when the poll ends. False (the caller wakes as
/// usual) outside a gmprt task's poll, or for another waker (a future polled by another
/// executor inside the task).
#[inline]
pub(crate) fn request_self_yield(is_own: impl FnOnce(*const WaitCell) -> bool) -> bool {
    CURRENT
        .try_with(|c| {
            let cell = c.cell.get();
            let own = !cell.is_null() && is_own(cell);
            if own {
                c.self_yield.set(true);
            }
            own
        })
        .unwrap_or(false)
}

/// Records what the task being polled on this thread waits on; a no-op outside a gmprt poll.
/// Called by a primitive right before it returns `Pending`.
#[inline]
pub(crate) fn set(kind: u8, id: u64, aux: u64) {
    let _ = CURRENT.try_with(|c| {
        let p = c.cell.get();
        if !p.is_null() {
            // SAFETY: `enter`'s guard clears the pointer before the cell can be freed (the
            // harness holds the task's reference, or `block_on` its frame, across the poll),
            // and the pointer is only read on the thread that set it.
            unsafe { &*p }.store(kind, id, aux);
        }
    });
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The wake stamp and a reason's auxiliary value share one word without being mistaken
    /// for each other (the module doc's rules).
    #[test]
    fn a_stamp_and_a_reason_share_the_word() {
        let c = WaitCell::new();
        assert_eq!(c.ready_stamp(), None, "a fresh cell is not stamped");
        c.stamp_ready(0);
        assert_eq!(c.ready_stamp(), Some(0), "a stamp at ns 0 is still a stamp");
        // A parked timer that never fires: its u64::MAX saturates below the stamp bit.
        c.store(TIMER, 0, u64::MAX);
        assert_eq!(c.ready_stamp(), None, "a reason's value never reads as a stamp");
        assert_eq!(c.load(), (TIMER, 0, AUX_MAX));
        // Woken and stamped: the reason's figure reads 0, the kind stays.
        c.stamp_ready(12_345);
        assert_eq!(c.load(), (TIMER, 0, 0));
        assert_eq!(c.ready_stamp(), Some(12_345));
        // The next poll's `enter` overwrites the stamp.
        drop(enter(&c));
        assert_eq!(c.ready_stamp(), None);
        assert_eq!(c.load(), (UNKNOWN, 0, 0));
    }
}
