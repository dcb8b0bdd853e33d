//! The task state word: one `AtomicUsize` holding lifecycle bits and the reference count.
//!
//! ```text
//!  63 ............... 7    6         5            4            3          2         1        0
//! [  reference count  ][OWNED][JOIN_WAKER][JOIN_INTEREST][CANCELLED][COMPLETE][NOTIFIED][RUNNING]
//! ```
//!
//! * `RUNNING`: one M is polling the future (or dropping it). Whoever sets it has exclusive
//!   access to the stage (future / output) until it clears it.
//! * `NOTIFIED`: the task is owed a poll. Whoever sets `NOTIFIED` on an idle task owns one
//!   reference that becomes the run-queue entry (`Notified`); this is why a task is never in
//!   two queues at once: only the transition idle → notified enqueues, and only a dequeue-and-
//!   poll (`transition_to_running`) clears the bit.
//! * A wake while `RUNNING` only sets `NOTIFIED`; the poller sees it in `transition_to_idle`
//!   and re-queues the task, so it is polled exactly once more. A wake after `COMPLETE` does
//!   nothing.
//! * `COMPLETE`: the future is gone and the output (or `JoinError`) is stored. Set once.
//! * `CANCELLED`: `abort()` or shutdown asked for the task to be dropped at its next poll.
//! * `JOIN_INTEREST`: a `JoinHandle` exists. While it is set after `COMPLETE`, the output
//!   belongs to the handle; once it is cleared the runtime drops the output.
//! * `JOIN_WAKER`: the handle has stored a waker in the header. While clear the handle has
//!   exclusive access to that slot; while set, the runtime may read it (to wake the joiner).
//! * `OWNED`: the task is in the owned-task list (which then holds one reference). Set and
//!   cleared only under that list's shard lock (`owned.rs`); readable anywhere.
//!
//! Every transition is a single compare-and-swap loop over the whole word (`AcqRel`: the
//! acquire half sees the stage writes of the previous owner of `RUNNING`; the release half
//! publishes ours). Reference-count changes that need no decision use `fetch_add`/`fetch_sub`.
//!
//! Since the count and the bits share the word, a transition after which its caller has
//! nothing left to do with the cell releases the caller's references in the same RMW, so a
//! task's common life costs one locked RMW per step instead of two:
//! * `transition_to_complete` releases the poller's references with `COMPLETE` when a handle
//!   waits for nothing (it takes the output later) or nobody will join (the output already
//!   dropped);
//! * a `JoinHandle` dropped after `COMPLETE` (a finished join), or before it with no waker
//!   stored (a detached spawn), clears `JOIN_INTEREST` together with its reference.
//!
//! After such an RMW the caller touches the cell only to free it, when its references were the
//! last. `tests/loom_join.rs` races each of these against the others.

use crate::loom::sync::atomic::{AtomicUsize, Ordering::*};

pub(crate) const RUNNING: usize = 1 << 0;
pub(crate) const NOTIFIED: usize = 1 << 1;
pub(crate) const COMPLETE: usize = 1 << 2;
pub(crate) const CANCELLED: usize = 1 << 3;
pub(crate) const JOIN_INTEREST: usize = 1 << 4;
pub(crate) const JOIN_WAKER: usize = 1 << 5;
pub(crate) const OWNED: usize = 1 << 6;
const REF_SHIFT: usize = 7;
pub(crate) const REF_ONE: usize = 1 << REF_SHIFT;
const FLAGS: usize = REF_ONE - 1;

/// What `transition_to_complete` did with the caller's references.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Completed {
    /// They went with `COMPLETE`; `last`: they were the last (the caller frees the task).
    Released { last: bool },
    /// They are still the caller's; the snapshot before the transition says what is left to
    /// do (drop the output, wake the joiner) before releasing them.
    Kept(Snapshot),
}

/// A snapshot of the state word.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Snapshot(pub(crate) usize);

impl Snapshot {
    pub(crate) fn has(self, bit: usize) -> bool {
        self.0 & bit != 0
    }
    pub(crate) fn refs(self) -> usize {
        self.0 >> REF_SHIFT
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = ["RUNNING", "NOTIFIED", "COMPLETE", "CANCELLED", "JOIN_INTEREST", "JOIN_WAKER", "OWNED"];
        let mut l = f.debug_struct("State");
        for (i, n) in names.iter().enumerate() {
            if self.0 & FLAGS & (1 << i) != 0 {
                l.field(n, &true);
            }
        }
        l.field("refs", &self.refs()).finish()
    }
}

/// What the caller of `transition_to_running` must do.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ToRunning {
    /// Poll the future. `joined`: `JOIN_INTEREST` was set at this transition. When it was
    /// clear, nobody can ever take the output (the bit, once clear, stays clear), so the
    /// poller may drop the output at once instead of storing it (`core::complete`); when it
    /// was set, the handle may still go during the poll, and `complete` finds that out.
    Poll { joined: bool },
    /// `CANCELLED` is set: drop the future and complete with `JoinError::Cancelled`.
    /// `joined` as for `Poll`.
    Cancel { joined: bool },
    /// Already complete (cancelled by shutdown while queued): just drop the queue's reference.
    Done,
}

/// What the caller of `transition_to_idle` must do.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ToIdle {
    /// Parked; the queue's reference was released.
    Idle,
    /// Woken during the poll: re-queue it (the queue's reference is kept).
    Notified,
    /// Aborted during the poll: we still hold `RUNNING`; cancel now.
    Cancel,
}

/// What a wake must do.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum WakeAction {
    /// Nothing: already queued, running (now marked `NOTIFIED`) or complete.
    Nothing,
    /// Enqueue the task: the caller owns one reference for the queue.
    Submit,
    /// Nothing to run, and the reference just released was the last: free the task.
    Dealloc,
}

/// The atomic state word of one task.
pub(crate) struct State(AtomicUsize);

impl State {
    /// A freshly spawned task: `NOTIFIED` (it is about to be queued), `JOIN_INTEREST`, and two
    /// references: the run queue's and the `JoinHandle`'s. (The owned-task list takes its own
    /// when the task first parks.)
    pub(crate) fn new() -> State {
        State(AtomicUsize::new(NOTIFIED | JOIN_INTEREST | (2 * REF_ONE)))
    }

    pub(crate) fn load(&self) -> Snapshot {
        Snapshot(self.0.load(Acquire))
    }

    /// Runs a CAS loop: `f` maps the current snapshot to `Some(new)` (with a result) or `None`
    /// to stop without writing.
    #[inline]
    fn update<R>(&self, mut f: impl FnMut(Snapshot) -> (Option<usize>, R)) -> (Snapshot, R) {
        let mut cur = self.0.load(Acquire);
        loop {
            let (next, r) = f(Snapshot(cur));
            let Some(next) = next else { return (Snapshot(cur), r) };
            // AcqRel: acquire pairs with the release of the previous transition (stage writes of
            // the last poller / the output store); release publishes our own stage writes.
            match self.0.compare_exchange_weak(cur, next, AcqRel, Acquire) {
                Ok(_) => return (Snapshot(cur), r),
                Err(actual) => cur = actual,
            }
        }
    }

    /// Called by the M that dequeued the task (it owns the queue's reference).
    pub(crate) fn transition_to_running(&self) -> ToRunning {
        self.update(|s| {
            debug_assert!(s.has(NOTIFIED) || s.has(COMPLETE), "dequeued without NOTIFIED: {s:?}");
            if s.has(COMPLETE) {
                return (None, ToRunning::Done);
            }
            debug_assert!(!s.has(RUNNING), "task polled concurrently: {s:?}");
            let next = (s.0 | RUNNING) & !NOTIFIED;
            let joined = s.has(JOIN_INTEREST);
            let act =
                if s.has(CANCELLED) { ToRunning::Cancel { joined } } else { ToRunning::Poll { joined } };
            (Some(next), act)
        })
        .1
    }

    /// Called by the poller after `Poll::Pending`; it holds `RUNNING` and the queue reference.
    pub(crate) fn transition_to_idle(&self) -> ToIdle {
        let (_, act) = self.update(|s| {
            debug_assert!(s.has(RUNNING));
            if s.has(CANCELLED) {
                return (None, ToIdle::Cancel);
            }
            if s.has(NOTIFIED) {
                (Some(s.0 & !RUNNING), ToIdle::Notified)
            } else {
                // Release the queue's reference in the same CAS. It cannot be the last one:
                // the poller linked the task into the owned-task list (which holds a
                // reference until completion) before this transition.
                debug_assert!(s.refs() >= 2);
                (Some((s.0 & !RUNNING) - REF_ONE), ToIdle::Idle)
            }
        });
        act
    }

    /// Called by the poller after `Poll::Pending` from a future that asked to be polled again
    /// at once (`yield_now` on the task's own waker, `wait::request_self_yield`); it holds
    /// `RUNNING` and the queue reference, which it keeps for the re-queue. Clears `RUNNING` and
    /// sets `NOTIFIED`: the state a self-wake during the poll followed by `transition_to_idle`
    /// leaves, in one RMW instead of two. `Cancel` when aborted meanwhile.
    pub(crate) fn transition_to_requeue(&self) -> ToIdle {
        self.update(|s| {
            debug_assert!(s.has(RUNNING));
            if s.has(CANCELLED) {
                return (None, ToIdle::Cancel);
            }
            (Some((s.0 & !RUNNING) | NOTIFIED), ToIdle::Notified)
        })
        .1
    }

    /// Called by the poller when the future is gone and the output is stored: clears
    /// `RUNNING`, sets `COMPLETE`. It also releases the caller's `refs` references (the queue's,
    /// the owned list's) in the same RMW when that leaves the caller nothing more to do with
    /// the cell:
    /// * a `JoinHandle` holds `JOIN_INTEREST` (the output is its to take or drop, and its
    ///   reference means ours cannot be the last) and has stored no waker (`JOIN_WAKER` clear:
    ///   nobody to wake, and it can no longer store one once `COMPLETE` is set); or
    /// * nobody will join the task and the caller has already dropped the output
    ///   (`output_dropped`, allowed only when it saw `JOIN_INTEREST` clear, which then stays
    ///   clear): then ours may be the last references.
    ///
    /// When they went, the caller must not touch the task again (another holder may free it at
    /// once), except to free it itself when [`Completed::Released`] says they were the last.
    pub(crate) fn transition_to_complete(&self, refs: usize, output_dropped: bool) -> Completed {
        // AcqRel (in `update`): release publishes the output to the JoinHandle (which acquires
        // COMPLETE), and our uses of the cell to whoever frees it, as in `ref_dec`; acquire
        // sees every other holder's uses before we free it, as in `ref_dec`.
        let (prev, released) = self.update(|s| {
            debug_assert!(s.has(RUNNING) && !s.has(COMPLETE), "{s:?}");
            debug_assert!(!(output_dropped && s.has(JOIN_INTEREST)), "output dropped under a handle: {s:?}");
            let next = s.0 ^ (RUNNING | COMPLETE);
            let nothing_left = if s.has(JOIN_INTEREST) { !s.has(JOIN_WAKER) } else { output_dropped };
            if refs > 0 && nothing_left {
                debug_assert!(s.refs() >= refs, "{s:?}");
                (Some(next - refs * REF_ONE), true)
            } else {
                (Some(next), false)
            }
        });
        if released {
            Completed::Released { last: prev.refs() == refs }
        } else {
            Completed::Kept(prev)
        }
    }

    /// A wake that consumes one reference (`Waker::wake`).
    pub(crate) fn wake_by_val(&self) -> WakeAction {
        self.update(|s| {
            if s.has(RUNNING) {
                // The poller re-queues it; our reference goes (it cannot be the last: the
                // poller holds the queue's).
                (Some((s.0 | NOTIFIED) - REF_ONE), WakeAction::Nothing)
            } else if s.has(COMPLETE) || s.has(NOTIFIED) {
                let act = if s.refs() == 1 { WakeAction::Dealloc } else { WakeAction::Nothing };
                (Some(s.0 - REF_ONE), act)
            } else {
                // Our reference becomes the queue's.
                (Some(s.0 | NOTIFIED), WakeAction::Submit)
            }
        })
        .1
    }

    /// A wake that keeps the caller's reference (`Waker::wake_by_ref`).
    pub(crate) fn wake_by_ref(&self) -> WakeAction {
        self.update(|s| {
            if s.has(RUNNING) {
                if s.has(NOTIFIED) {
                    return (None, WakeAction::Nothing);
                }
                (Some(s.0 | NOTIFIED), WakeAction::Nothing)
            } else if s.has(COMPLETE) || s.has(NOTIFIED) {
                (None, WakeAction::Nothing)
            } else {
                (Some((s.0 | NOTIFIED) + REF_ONE), WakeAction::Submit)
            }
        })
        .1
    }

    /// `abort()` from anywhere. Returns `Submit` when the caller must queue the task (with a
    /// new reference) so an M drops its future.
    pub(crate) fn transition_to_cancelled(&self) -> WakeAction {
        self.update(|s| {
            if s.has(COMPLETE) || s.has(CANCELLED) {
                (None, WakeAction::Nothing)
            } else if s.has(RUNNING) {
                // The poller sees CANCELLED in transition_to_idle.
                (Some(s.0 | CANCELLED | NOTIFIED), WakeAction::Nothing)
            } else if s.has(NOTIFIED) {
                // Already queued: the M that dequeues it sees CANCELLED.
                (Some(s.0 | CANCELLED), WakeAction::Nothing)
            } else {
                (Some((s.0 | CANCELLED | NOTIFIED) + REF_ONE), WakeAction::Submit)
            }
        })
        .1
    }

    /// Shutdown: take `RUNNING` to drop the future here, unless it is complete (or running,
    /// which cannot happen once every M has stopped). Returns true when the caller now holds
    /// `RUNNING` and must cancel.
    pub(crate) fn transition_to_shutdown(&self) -> bool {
        self.update(|s| {
            if s.has(COMPLETE) || s.has(RUNNING) {
                (Some(s.0 | CANCELLED), false)
            } else {
                (Some(s.0 | CANCELLED | RUNNING), true)
            }
        })
        .1
    }

    /// The owned list links the task: sets `OWNED` and takes the list's reference in one RMW.
    /// Must hold the shard lock.
    pub(crate) fn set_owned(&self) {
        // AcqRel: a reader that sees OWNED also sees the reference count it implies.
        let prev = Snapshot(self.0.fetch_add(OWNED + REF_ONE, AcqRel));
        debug_assert!(!prev.has(OWNED), "{prev:?}");
    }

    /// The owned list unlinks the task: clears `OWNED` (the list's reference passes to the
    /// caller). Must hold the shard lock.
    pub(crate) fn clear_owned(&self) {
        let prev = Snapshot(self.0.fetch_and(!OWNED, AcqRel));
        debug_assert!(prev.has(OWNED), "{prev:?}");
    }

    pub(crate) fn ref_inc(&self) {
        // Relaxed: a new reference is made from an existing one, which already keeps the task
        // alive (as Arc::clone).
        let prev = self.0.fetch_add(REF_ONE, Relaxed);
        assert!(prev <= isize::MAX as usize, "task reference count overflow");
    }

    /// Releases one reference; true when it was the last (the caller frees the task).
    #[inline]
    pub(crate) fn ref_dec(&self) -> bool {
        self.ref_dec_by(1)
    }

    /// Releases the caller's `n` references in one RMW (at completion: the queue's and the
    /// owned list's); true when they were the last. `n == 0` changes nothing and is false.
    #[inline]
    pub(crate) fn ref_dec_by(&self, n: usize) -> bool {
        if n == 0 {
            return false;
        }
        // AcqRel as in Arc::drop: release our uses, acquire everyone else's before freeing.
        let prev = Snapshot(self.0.fetch_sub(n * REF_ONE, AcqRel));
        debug_assert!(prev.refs() >= n, "{prev:?}");
        prev.refs() == n
    }

    /// The `JoinHandle` stores its waker: set `JOIN_WAKER` unless the task completed. `Err`
    /// returns the snapshot showing `COMPLETE`.
    pub(crate) fn set_join_waker(&self) -> Result<(), Snapshot> {
        let (prev, ok) = self.update(|s| {
            debug_assert!(s.has(JOIN_INTEREST) && !s.has(JOIN_WAKER));
            if s.has(COMPLETE) {
                (None, false)
            } else {
                (Some(s.0 | JOIN_WAKER), true)
            }
        });
        if ok {
            Ok(())
        } else {
            Err(prev)
        }
    }

    /// The `JoinHandle` wants to replace its waker: clear `JOIN_WAKER` unless complete.
    pub(crate) fn unset_join_waker(&self) -> Result<(), Snapshot> {
        let (prev, ok) = self.update(|s| {
            debug_assert!(s.has(JOIN_INTEREST) && s.has(JOIN_WAKER));
            if s.has(COMPLETE) {
                (None, false)
            } else {
                (Some(s.0 & !JOIN_WAKER), true)
            }
        });
        if ok {
            Ok(())
        } else {
            Err(prev)
        }
    }

    /// After completion the runtime returns the waker slot to the handle by clearing
    /// `JOIN_WAKER`. Returns the snapshot before.
    pub(crate) fn unset_join_waker_after_complete(&self) -> Snapshot {
        Snapshot(self.0.fetch_and(!JOIN_WAKER, AcqRel))
    }

    /// The `JoinHandle` is dropped: clear `JOIN_INTEREST` (and `JOIN_WAKER` when not
    /// complete). Returns the snapshot before.
    pub(crate) fn drop_join_interest(&self) -> Snapshot {
        self.update(|s| {
            debug_assert!(s.has(JOIN_INTEREST));
            let next =
                if s.has(COMPLETE) { s.0 & !JOIN_INTEREST } else { s.0 & !(JOIN_INTEREST | JOIN_WAKER) };
            (Some(next), ())
        })
        .0
    }

    /// The `JoinHandle` of a complete task is dropped: clears `JOIN_INTEREST` and releases the
    /// handle's reference in one RMW. Only when the handle saw `COMPLETE` without `JOIN_WAKER`
    /// (so the runtime no longer reads the waker slot, and the output is the handle's), and has
    /// dealt with both. True when it was the last reference (the caller frees the task).
    pub(crate) fn drop_complete_join_handle(&self) -> bool {
        // AcqRel as in `ref_dec`. A subtraction clears the bit: the handle owns JOIN_INTEREST,
        // so it is set, and nobody else changes it.
        let prev = Snapshot(self.0.fetch_sub(JOIN_INTEREST + REF_ONE, AcqRel));
        debug_assert!(prev.has(COMPLETE) && prev.has(JOIN_INTEREST) && !prev.has(JOIN_WAKER), "{prev:?}");
        debug_assert!(prev.refs() >= 1);
        prev.refs() == 1
    }

    /// The `JoinHandle` of a task not yet complete, with no waker stored, is dropped (a
    /// detached spawn: `drop(spawn(..))`): clears `JOIN_INTEREST` and releases the handle's
    /// reference in one RMW. The task then drops its own output when it completes. `None`, and
    /// nothing changed, once the task is complete or a waker is stored: the caller takes the
    /// general path. `Some(true)` when that was the last reference (the caller frees the task).
    pub(crate) fn drop_join_handle_early(&self) -> Option<bool> {
        // AcqRel (in `update`) as in `ref_dec`.
        let (prev, dropped) = self.update(|s| {
            debug_assert!(s.has(JOIN_INTEREST), "{s:?}");
            if s.has(COMPLETE) || s.has(JOIN_WAKER) {
                (None, false)
            } else {
                debug_assert!(s.refs() >= 1, "{s:?}");
                (Some(s.0 - JOIN_INTEREST - REF_ONE), true)
            }
        });
        dropped.then(|| prev.refs() == 1)
    }

    #[cfg(all(test, not(loom)))]
    pub(crate) fn raw(&self) -> usize {
        self.0.load(Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn wake_during_poll_requeues_exactly_once() {
        let s = State::new();
        assert_eq!(s.transition_to_running(), ToRunning::Poll { joined: true });
        // Two wakes while running: only the first marks NOTIFIED, neither submits.
        assert_eq!(s.wake_by_ref(), WakeAction::Nothing);
        assert_eq!(s.wake_by_ref(), WakeAction::Nothing);
        assert_eq!(s.transition_to_idle(), ToIdle::Notified);
        assert_eq!(s.load().0 & FLAGS, NOTIFIED | JOIN_INTEREST);
        // Queued: further wakes do nothing.
        assert_eq!(s.wake_by_ref(), WakeAction::Nothing);
        assert_eq!(s.transition_to_running(), ToRunning::Poll { joined: true });
        assert_eq!(s.transition_to_idle(), ToIdle::Idle);
        // Parked: a wake submits with a fresh reference.
        let before = s.load().refs();
        assert_eq!(s.wake_by_ref(), WakeAction::Submit);
        assert_eq!(s.load().refs(), before + 1);
    }

    #[test]
    fn wake_after_complete_is_noop() {
        let s = State::new();
        assert_eq!(s.transition_to_running(), ToRunning::Poll { joined: true });
        let Completed::Kept(prev) = s.transition_to_complete(0, false) else {
            panic!("no references to release")
        };
        assert!(prev.has(RUNNING) && !prev.has(COMPLETE));
        assert_eq!(s.wake_by_ref(), WakeAction::Nothing);
        assert_eq!(s.transition_to_cancelled(), WakeAction::Nothing);
        assert!(!s.transition_to_shutdown());
        assert_eq!(s.raw() & (RUNNING | COMPLETE), COMPLETE);
    }

    #[test]
    fn completing_releases_the_pollers_references_only_when_nothing_is_left_to_do() {
        // Handle holds JOIN_INTEREST, no waker: the queue's reference goes with COMPLETE.
        let s = State::new();
        assert_eq!(s.transition_to_running(), ToRunning::Poll { joined: true });
        assert_eq!(s.transition_to_complete(1, false), Completed::Released { last: false });
        assert_eq!(s.raw() & (RUNNING | COMPLETE), COMPLETE);
        assert_eq!(s.load().refs(), 1, "only the handle's reference is left");
        // The handle's drop clears JOIN_INTEREST and frees in one RMW.
        assert!(s.drop_complete_join_handle(), "the handle's was the last reference");
        assert_eq!(s.raw() & (JOIN_INTEREST | COMPLETE), COMPLETE);

        // A stored waker must be woken: the references stay with the caller.
        let s = State::new();
        assert_eq!(s.transition_to_running(), ToRunning::Poll { joined: true });
        assert!(s.set_join_waker().is_ok());
        let Completed::Kept(prev) = s.transition_to_complete(1, false) else { panic!("released") };
        assert!(prev.has(JOIN_WAKER));
        assert_eq!(s.load().refs(), 2);

        // The handle went during the poll (it was there when the poll began, so the output was
        // stored): the caller drops the output after COMPLETE, so it keeps its references.
        let s = State::new();
        assert_eq!(s.transition_to_running(), ToRunning::Poll { joined: true });
        let _ = s.drop_join_interest();
        let Completed::Kept(prev) = s.transition_to_complete(1, false) else { panic!("released") };
        assert!(!prev.has(JOIN_INTEREST));
        assert_eq!(s.load().refs(), 2);
        assert!(!s.ref_dec() && s.ref_dec(), "two references were left to release");

        // No handle when the poll began, so the output was dropped, never stored: the
        // references go, and here they were the last.
        let s = State::new();
        let _ = s.drop_join_interest();
        assert!(!s.ref_dec(), "the handle's reference");
        assert_eq!(s.transition_to_running(), ToRunning::Poll { joined: false });
        assert_eq!(s.transition_to_complete(1, true), Completed::Released { last: true });
        assert_eq!(s.load().refs(), 0);
    }

    #[test]
    fn an_early_handle_drop_clears_interest_and_its_reference_in_one_step() {
        let s = State::new();
        assert_eq!(s.drop_join_handle_early(), Some(false), "the queue's reference is left");
        assert_eq!(s.raw() & JOIN_INTEREST, 0);
        assert_eq!(s.load().refs(), 1);
        // The task then completes unjoined: it drops its output and frees itself.
        assert_eq!(s.transition_to_running(), ToRunning::Poll { joined: false });
        assert_eq!(s.transition_to_complete(1, true), Completed::Released { last: true });

        // Complete, or a waker stored: nothing changes, the general path applies.
        let s = State::new();
        assert!(s.set_join_waker().is_ok());
        assert_eq!(s.drop_join_handle_early(), None);
        assert_eq!(s.load().refs(), 2);
        let s = State::new();
        assert_eq!(s.transition_to_running(), ToRunning::Poll { joined: true });
        let _ = s.transition_to_complete(0, false);
        assert_eq!(s.drop_join_handle_early(), None);
        assert!(s.load().has(JOIN_INTEREST));
    }

    #[test]
    fn abort_of_parked_task_submits_it() {
        let s = State::new();
        assert_eq!(s.transition_to_running(), ToRunning::Poll { joined: true });
        assert_eq!(s.transition_to_idle(), ToIdle::Idle);
        assert_eq!(s.transition_to_cancelled(), WakeAction::Submit);
        assert_eq!(s.transition_to_running(), ToRunning::Cancel { joined: true });
    }

    #[test]
    fn last_wake_by_val_deallocates() {
        let s = State::new();
        assert_eq!(s.transition_to_running(), ToRunning::Poll { joined: true });
        let _ = s.transition_to_complete(0, false);
        s.ref_inc(); // a waker clone
                     // Drop the JoinHandle's and queue's references; the waker's remains.
        assert!(!s.ref_dec_by(2));
        assert_eq!(s.wake_by_val(), WakeAction::Dealloc);
    }
}
