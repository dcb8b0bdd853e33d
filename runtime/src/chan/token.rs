//! [`SelToken`]: the one word all of a select's waiters share (Go's `g.selectDone`), and its
//! states: `POLLING` while the select's owner polls or rearranges its waiters (counterparts
//! skip its slots), `WAITING` once its waiters are queued (a counterpart may claim it), and
//! `CLAIMED + k` once arm `k` was completed. A counterpart completes a select's slot only
//! after winning `WAITING → CLAIMED + k` under that channel's lock, so exactly one arm takes
//! effect. The protocol around it is in `select` ("How a select waits"); the waiters that
//! carry a token are `waitq`'s, and `hchan` claims them.
use crate::loom::sync::atomic::{AtomicUsize, Ordering};

// Token states. `CLAIMED + k`: arm `k` was completed by a counterpart (or by `close`).
const POLLING: usize = 0;
const WAITING: usize = 1;
const CLAIMED: usize = 2;

/// Shared by all the waiters of one select (Go's `g.selectDone`).
pub(crate) struct SelToken {
    state: AtomicUsize,
}

/// What a counterpart found when it tried to take a select's waiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// Won: complete this slot; the select will report its arm.
    Won,
    /// The select is polling: leave the slot alone and queued.
    Busy,
    /// Another arm already won: the slot is dead.
    Gone,
}

impl SelToken {
    pub(super) fn new() -> Self {
        SelToken { state: AtomicUsize::new(POLLING) }
    }

    /// Called by a counterpart holding the lock of the channel where the slot of `arm` is
    /// queued. AcqRel: pairs with the owner's `set_waiting` (release) and `begin_poll`
    /// (acquire); the data itself (slot, buffer) is ordered by the channel lock.
    pub(crate) fn try_claim(&self, arm: usize) -> Claim {
        match self.state.compare_exchange(WAITING, CLAIMED + arm, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => Claim::Won,
            Err(POLLING) => Claim::Busy,
            Err(_) => Claim::Gone,
        }
    }

    /// The owner takes the token back before touching its waiters: `Err(k)` if arm `k` was
    /// claimed meanwhile.
    pub(super) fn begin_poll(&self) -> Result<(), usize> {
        match self.state.compare_exchange(WAITING, POLLING, Ordering::Acquire, Ordering::Acquire) {
            // POLLING: a poll of ours unwound (a future arm panicked); it is ours anyway.
            Ok(_) | Err(POLLING) => Ok(()),
            Err(s) => Err(s - CLAIMED),
        }
    }

    /// The owner, holding every lock its waiters are queued under, lets counterparts in.
    pub(super) fn set_waiting(&self) {
        self.state.store(WAITING, Ordering::Release);
    }

    /// A recycled token starts its next select polling. Relaxed: the token is unshared here
    /// (`select` recycles only a token no slot refers to, checked with `Arc::get_mut`).
    pub(super) fn reset(&self) {
        self.state.store(POLLING, Ordering::Relaxed);
    }
}
