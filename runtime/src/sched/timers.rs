//! How Ms run timers (the scheduler side of `time/`): Go's `checkTimers` and the timer part of
//! `findRunnable`.
//!
//! * [`Shared::check_timers`] — on a P's heap: fire every due timer (one load of `timer0_when`
//!   when the P has no timer; the precise clock is read only when its earliest deadline is not
//!   surely ahead by the coarse clock, `clock.rs`).
//! * [`Shared::run_all_timers`] — the same over every P, by an M about to go idle (a P whose M
//!   is busy in a long poll still gets its timers fired), against one precise reading: the
//!   backstop of the gated per-round check.
//! * [`Shared::next_timer_when`] — the earliest deadline over all Ps: an idle M parks until then
//!   (`stopm`), so sleeping tasks wake on time without any M spinning.
//! * [`Shared::timer_added`] — a timer registered off an M (e.g. in `block_on`) wakes an M
//!   (`wakep`) so that some M computes the new earliest deadline; one registered on an M needs
//!   nothing: that M checks its own P every round and before it parks.
//!
//! Clock: runtime nanoseconds since the epoch of `Shared::clock`, never 0 (0 means "no timer").

use super::context::wake_all_to_tail;
use super::Shared;
use crate::loom::sync::atomic::Ordering::SeqCst;
use std::time::Instant;

impl Shared {
    /// `t` in runtime nanoseconds (`Clock::nanos`: at least 1, saturating, rounded up).
    pub(crate) fn nanos(&self, t: Instant) -> u64 {
        self.clock.nanos(t)
    }

    /// Now, in runtime nanoseconds: the precise clock.
    pub(crate) fn now_nanos(&self) -> u64 {
        self.clock.now_nanos()
    }

    /// Go's `checkTimers`: fires P `pid`'s due timers (the woken tasks go to the calling M's P,
    /// or the global queue off an M) and returns the clock it read (runtime nanoseconds; 0 when
    /// it read none) and whether any fired. The M at the start of a scheduling round keeps the
    /// clock as its `round_now`. The precise clock is read only when the P's earliest deadline
    /// is not surely ahead by the coarse clock (`clock.rs`): a P whose timers are all far off
    /// pays ~7 ns a round for them, not ~24.
    pub(crate) fn check_timers(&self, pid: usize) -> (u64, bool) {
        let first = self.allp[pid].timer0_when.load(SeqCst);
        if first == 0 || self.clock.surely_ahead(first) {
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
        wake_all_to_tail(wakers);
        if fired {
            // A `timers` slice on this M's lane; the woken tasks' wake flows leave it.
            self.trace_timers_end(t0, n);
        }
        fired
    }

    /// Fires due timers on every P, by an M about to go idle. Returns true if any fired.
    ///
    /// Against the precise clock, read once for all Ps (and only if one has a timer), not
    /// through the coarse gate: the idle path is the backstop of the per-round check, so a
    /// deadline the gate misjudged (it cannot, by `clock.rs`'s proof, but the proof rests on
    /// the kernel keeping its coarse clock within a tick) still fires once an M runs out of
    /// work, and this agrees with the idle path's own precise "is a timer due" test, which
    /// would otherwise send the M round again.
    pub(crate) fn run_all_timers(&self) -> bool {
        let mut fired = false;
        let mut now = 0;
        for pid in 0..self.procs() {
            if self.allp[pid].timer0_when.load(SeqCst) != 0 {
                if now == 0 {
                    now = self.now_nanos();
                }
                fired |= self.run_timers_at(pid, now);
            }
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

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::sched::context::with_current;
    use std::future::Future;
    use std::pin::pin;
    use std::task::Poll;
    use std::time::Duration;

    /// A P whose only timer is an hour off: `check_timers` fires nothing and, on Linux, reads no
    /// precise clock (returns 0). Once a registered deadline has come, the clock is read and
    /// that timer fires.
    #[test]
    fn a_far_timer_costs_no_precise_read_and_a_due_one_still_fires() {
        let rt = crate::Runtime::builder().procs(1).build().unwrap();
        let (far_read, near) = rt.block_on(async {
            crate::spawn(async {
                let mut far = pin!(crate::time::sleep(Duration::from_secs(3600)));
                std::future::poll_fn(|cx| Poll::Ready(far.as_mut().poll(cx).is_pending())).await;
                let check = || with_current(|c| c.map(|c| c.shared.check_timers(c.pid.get())).unwrap());
                let far_read = check();
                // A near timer, registered (its first poll finds it ahead), then let its
                // deadline pass (spinning on the clock, not sleeping: no timer involved).
                let deadline = std::time::Instant::now() + Duration::from_millis(1);
                let mut due = pin!(crate::time::sleep_until(deadline));
                let first = std::future::poll_fn(|cx| Poll::Ready(due.as_mut().poll(cx).is_ready())).await;
                while std::time::Instant::now() < deadline {
                    std::hint::spin_loop();
                }
                let near = if first { None } else { Some(check()) };
                (far_read, near)
            })
            .await
            .unwrap()
        });
        assert!(!far_read.1, "an hour-off timer fired");
        if cfg!(target_os = "linux") {
            assert_eq!(far_read.0, 0, "an hour-off timer made the round read the precise clock");
        }
        if let Some((read, fired)) = near {
            assert!(read > 0 && fired, "a due timer: the clock is read ({read}) and it fires ({fired})");
        }
    }
}
