//! How Ms run timers (the scheduler side of `time/`): Go's `checkTimers` and the timer part of
//! `findRunnable`.
//!
//! * [`Shared::check_timers`] — on a P's heap: fire every due timer (one load of `timer0_when`
//!   when nothing is due; the clock is read only when the P has timers).
//! * [`Shared::run_all_timers`] — the same over every P, by an M about to go idle (a P whose M
//!   is busy in a long poll still gets its timers fired).
//! * [`Shared::next_timer_when`] — the earliest deadline over all Ps: an idle M parks until then
//!   (`stopm`), so sleeping tasks wake on time without any M spinning.
//! * [`Shared::timer_added`] — a timer registered off an M (e.g. in `block_on`) wakes an M
//!   (`wakep`) so that some M computes the new earliest deadline; one registered on an M needs
//!   nothing: that M checks its own P every round and before it parks.
//!
//! Clock: runtime nanoseconds since `Shared::epoch`, never 0 (0 means "no timer").

use super::context::with_current;
use super::Shared;
use crate::loom::sync::atomic::Ordering::SeqCst;
use std::time::Instant;

impl Shared {
    /// `t` in runtime nanoseconds (at least 1; instants before the epoch map to 1, instants
    /// more than 584 years after it to `u64::MAX`: saturating, never wrapping to an early time).
    pub(crate) fn nanos(&self, t: Instant) -> u64 {
        // Round up so a timer never fires before its deadline.
        let d = t.saturating_duration_since(self.epoch);
        u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).saturating_add(1)
    }

    /// Now, in runtime nanoseconds.
    pub(crate) fn now_nanos(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Go's `checkTimers`: fires P `pid`'s due timers (the woken tasks go to the calling M's P,
    /// or the global queue off an M) and returns the clock it read (runtime nanoseconds; 0 when
    /// the P has no timer, and then the clock is not read) and whether any fired. The M at the
    /// start of a scheduling round keeps the clock as its `round_now`.
    pub(crate) fn check_timers(&self, pid: usize) -> (u64, bool) {
        if self.allp[pid].timer0_when.load(SeqCst) == 0 {
            return (0, false);
        }
        let now = self.now_nanos();
        (now, self.run_timers_at(pid, now))
    }

    /// `check_timers` with the clock given (`now`, runtime nanoseconds): fires P `pid`'s timers
    /// due at `now`. The loom models call it with a fixed `now`.
    pub(crate) fn run_timers_at(&self, pid: usize, now: u64) -> bool {
        let ps = &self.allp[pid];
        let first = ps.timer0_when.load(SeqCst);
        if first == 0 || first > now {
            return false;
        }
        let mut wakers = Vec::new();
        {
            let mut heap = ps.timers.lock();
            heap.run_expired(now, &mut wakers);
            ps.set_timer0(heap.first_when());
        }
        // Woken outside the lock (a wake may run arbitrary scheduler code), to the tail of our
        // queue in deadline order: timers fire in order, and the tasks run in that order.
        let fired = !wakers.is_empty();
        let (t0, n) = (self.trace_timers_begin(), wakers.len());
        with_current(|cx| {
            let prev = cx.map(|cx| cx.wake_to_tail.replace(true));
            for w in wakers {
                w.wake();
            }
            if let (Some(cx), Some(prev)) = (cx, prev) {
                cx.wake_to_tail.set(prev);
            }
        });
        if fired {
            // A `timers` slice on this M's lane; the woken tasks' wake flows leave it.
            self.trace_timers_end(t0, n);
        }
        fired
    }

    /// Fires due timers on every P. Returns true if any fired.
    pub(crate) fn run_all_timers(&self) -> bool {
        let mut fired = false;
        for pid in 0..self.procs() {
            fired |= self.check_timers(pid).1;
        }
        fired
    }

    /// The earliest pending deadline over all Ps, or 0 if there is none.
    pub(crate) fn next_timer_when(&self) -> u64 {
        self.allp.iter().map(|p| p.timer0_when.load(SeqCst)).filter(|&w| w != 0).min().unwrap_or(0)
    }

    /// A timer was registered. `on_m`: by an M holding a P (which will see it itself).
    pub(crate) fn timer_added(&self, on_m: bool) {
        if !on_m {
            // Some M must fold the new deadline into its parking time: start a spinner if none
            // is looking (it checks every P's timers, then parks until the earliest one).
            self.wakep(super::idle::WakeFrom::Other);
        }
    }
}
