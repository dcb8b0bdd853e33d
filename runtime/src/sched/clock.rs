//! The runtime's clock: runtime nanoseconds since its epoch, and a cheap test of whether a
//! deadline is surely still ahead that reads no precise clock.
//!
//! # Why
//! An M checks its P's timers at the start of every scheduling round (`timers.rs`, Go's
//! `checkTimers`). Go reads `nanotime()` there whenever the P has a timer; so did gmprt, and on
//! the development VMs a precise read (`clock_gettime(CLOCK_MONOTONIC)` in the vDSO) costs
//! ~24 ns, measured. One pending timer anywhere on the P, however far off (hyper's 30-s
//! header timer, a `timeout` around a long job, a metrics ticker), then made every round of
//! every task on that P pay it: a yield went from ~33 to ~59 ns. tokio reads its clock only
//! when a worker parks or every 61 ticks, and so does not pay it.
//!
//! # The coarse gate
//! Linux keeps a second reading of the same clock, `CLOCK_MONOTONIC_COARSE`: the monotonic
//! time of the last kernel tick, read from the vDSO page without the TSC (~7 ns, measured) and
//! behind the precise clock by less than one tick (its resolution, `clock_getres`: 1-10 ms).
//! [`Clock::surely_ahead`] answers "has `when` surely not come yet?" from it:
//!
//! > `when > coarse − epoch_raw_lo + 2 · resolution` ⇒ `when > precise now`.
//!
//! Proof: `precise now (runtime ns) = raw now − epoch_raw ≤ raw now − epoch_raw_lo`, because
//! `epoch_raw_lo ≤ epoch_raw` (below); and `raw now < coarse + resolution` while the kernel
//! ticks. The second resolution is slack for a tick the kernel is late to account (a vCPU
//! descheduled by its host). So a "yes" is never wrong, and a timer never fires early because
//! of it: the gate only skips reading the clock for a deadline that has not come. A "no" says
//! nothing: the caller reads the precise clock, as before. Deadlines closer than two ticks
//! are always read precisely, so they fire no later than before either.
//!
//! `epoch_raw_lo` is the epoch in raw `CLOCK_MONOTONIC` nanoseconds, from below: the raw clock
//! read first, then the epoch's `elapsed()` (an `Instant` is `CLOCK_MONOTONIC` on Linux, as
//! std documents), so `raw read − elapsed ≤ epoch_raw`. A slow pair of reads only lowers it,
//! which makes the gate answer "no" more often, never wrongly "yes".
//!
//! Users: the per-round `Shared::check_timers` and a `Sleep`'s first poll (`time/mod.rs`).
//! An M about to go idle fires every P's due timers against the precise clock instead
//! (`Shared::run_all_timers`), the backstop: were the kernel's coarse clock ever more than two
//! ticks behind, a deadline would fire late by no more than the time until some M runs out of
//! work, and never early.
//!
//! Elsewhere (other systems, loom models) there is no gate: `surely_ahead` is always false and
//! every check reads the precise clock, Go's rule.

use std::time::Instant;

/// The runtime's clock (immutable after start-up; read by every M, written by none).
pub(crate) struct Clock {
    /// Origin of runtime nanoseconds (the trace's epoch when tracing: one clock for both).
    epoch: Instant,
    /// The coarse gate, where the system has one (see the module docs).
    coarse: Option<Coarse>,
}

/// The coarse gate's constants.
// Only Linux outside loom builds one.
#[cfg_attr(not(all(target_os = "linux", not(loom))), allow(dead_code))]
struct Coarse {
    /// The epoch in raw `CLOCK_MONOTONIC` nanoseconds, at or below the true value.
    epoch_raw_lo: u64,
    /// Two resolutions of the coarse clock, in nanoseconds.
    slack: u64,
}

impl Clock {
    /// A clock whose runtime nanosecond 0 is `epoch` (not after now).
    pub(crate) fn new(epoch: Instant) -> Clock {
        Clock { epoch, coarse: Coarse::new(epoch) }
    }

    /// `t` in runtime nanoseconds (at least 1; instants before the epoch map to 1, instants
    /// more than 584 years after it to `u64::MAX`: saturating, never wrapping to an early time).
    pub(crate) fn nanos(&self, t: Instant) -> u64 {
        // Round up so a timer never fires before its deadline.
        let d = t.saturating_duration_since(self.epoch);
        u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).saturating_add(1)
    }

    /// Now, in runtime nanoseconds: the precise clock (~24 ns on the development VMs).
    pub(crate) fn now_nanos(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Whether the deadline `when` (runtime nanoseconds) has surely not come, from the coarse
    /// clock alone (~7 ns). True only when [`Clock::now_nanos`] read now would be below `when`;
    /// false when it cannot say (the deadline is within two kernel ticks, or the system has no
    /// coarse clock): then read the precise clock.
    #[inline]
    pub(crate) fn surely_ahead(&self, when: u64) -> bool {
        match &self.coarse {
            Some(c) => when > coarse_raw_nanos().saturating_sub(c.epoch_raw_lo).saturating_add(c.slack),
            None => false,
        }
    }
}

#[cfg(all(target_os = "linux", not(loom)))]
impl Coarse {
    fn new(epoch: Instant) -> Option<Coarse> {
        let mut res = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `res` is a valid, writable timespec for the call's duration.
        if unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut res) } != 0 {
            return None;
        }
        let res = ts_nanos(&res);
        // A tick of 0 or over 100 ms is no kernel's (HZ is 100-1000): no gate rather than a
        // slack that may not cover the coarse clock's lag.
        if res == 0 || res > 100_000_000 {
            return None;
        }
        // Read the raw clock before the epoch's elapsed time (see the module docs for why this
        // order bounds the epoch from below).
        let raw = raw_nanos(libc::CLOCK_MONOTONIC)?;
        let since = u64::try_from(epoch.elapsed().as_nanos()).ok()?;
        Some(Coarse { epoch_raw_lo: raw.checked_sub(since)?, slack: res.checked_mul(2)? })
    }
}

#[cfg(not(all(target_os = "linux", not(loom))))]
impl Coarse {
    fn new(_epoch: Instant) -> Option<Coarse> {
        None
    }
}

/// `CLOCK_MONOTONIC_COARSE` now, in nanoseconds (only called where `Coarse::new` succeeded).
/// Should the call ever fail, `u64::MAX`: no deadline is then "surely ahead".
#[cfg(all(target_os = "linux", not(loom)))]
#[inline]
fn coarse_raw_nanos() -> u64 {
    raw_nanos(libc::CLOCK_MONOTONIC_COARSE).unwrap_or(u64::MAX)
}

#[cfg(not(all(target_os = "linux", not(loom))))]
fn coarse_raw_nanos() -> u64 {
    u64::MAX
}

/// Clock `id` now, in nanoseconds; `None` if the system refuses it.
#[cfg(all(target_os = "linux", not(loom)))]
#[inline]
fn raw_nanos(id: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    (unsafe { libc::clock_gettime(id, &mut ts) } == 0).then(|| ts_nanos(&ts))
}

#[cfg(all(target_os = "linux", not(loom)))]
fn ts_nanos(ts: &libc::timespec) -> u64 {
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The gate never says "ahead" for a deadline the precise clock has reached (checked
    /// against a fresh precise reading, many times, including across kernel ticks), and on
    /// Linux it does say so for a deadline a minute off, with no precise read needed.
    #[test]
    fn surely_ahead_is_never_wrong_and_answers_far_deadlines() {
        // An epoch in the past, as the runtime's is by the time it runs tasks.
        let clock = Clock::new(Instant::now() - Duration::from_millis(5));
        let until = Instant::now() + Duration::from_millis(30);
        let mut reads = 0u64;
        while Instant::now() < until || reads < 100_000 {
            let now = clock.now_nanos();
            assert!(!clock.surely_ahead(now), "said {now} ns is ahead when the clock read {now}");
            assert!(!clock.surely_ahead(now.saturating_sub(1_000)));
            reads += 1;
        }
        let far = clock.now_nanos() + 60_000_000_000;
        if cfg!(target_os = "linux") {
            assert!(clock.coarse.is_some(), "Linux has CLOCK_MONOTONIC_COARSE");
            assert!(clock.surely_ahead(far), "a deadline a minute off is surely ahead");
        } else {
            assert!(!clock.surely_ahead(far), "no gate: always read the clock");
        }
        assert!(!clock.surely_ahead(0) && !clock.surely_ahead(1));
    }

    /// The gate's epoch bound holds whatever the epoch: one taken now (the common case) and
    /// one far in the past (a trace recorder started long before the runtime).
    #[cfg(target_os = "linux")]
    #[test]
    fn the_epoch_bound_is_from_below() {
        for back in [Duration::ZERO, Duration::from_secs(3)] {
            let Some(epoch) = Instant::now().checked_sub(back) else { continue };
            let clock = Clock::new(epoch);
            if let Some(c) = &clock.coarse {
                // The elapsed time read first, then the raw clock: raw − since is at or above
                // the true epoch; the bound must be at or below it.
                let since = clock.now_nanos();
                let raw = raw_nanos(libc::CLOCK_MONOTONIC).unwrap();
                assert!(
                    c.epoch_raw_lo <= raw - since,
                    "epoch bound {} above {}",
                    c.epoch_raw_lo,
                    raw - since
                );
            }
        }
    }
}
