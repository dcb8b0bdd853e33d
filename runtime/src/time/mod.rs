//! Timers: [`sleep`], [`sleep_until`], [`timeout`], [`interval`] / [`ticker`] — Go's
//! `time.Sleep`, `context.WithTimeout`, `time.Ticker` — and Go's channel and function timers,
//! [`Timer`], [`after`], [`after_func`] (`time.NewTimer`, `time.After`, `time.AfterFunc`, with
//! `Stop` and `Reset`: `timer.rs`).
//!
//! # Design (Go's per-P timers)
//! Each P has a 4-ary min-heap of timers (`heap.rs`). A sleeping task's timer node lives inside
//! its `Sleep` future (no allocation per timer) and is registered, on first poll, in the heap of
//! the P the task runs on (P 0 when polled outside an M, e.g. in `block_on`). Ms run expired
//! timers:
//! * every scheduling round, on their own P (one load of `timer0_when`; the precise clock is
//!   read only when that P's earliest deadline is not surely ahead by the coarse clock);
//! * before going idle, on every P (so a P whose M is stuck in a long poll still gets its timers
//!   fired by others, as Go's `stealWork` does);
//! * and an M that goes idle while timers are pending parks **until the earliest deadline**
//!   instead of spinning or sleeping forever (Go's `findRunnable` → `netpoll(delay)`).
//!
//! A registered node keeps its runtime alive with a task reference (`sched/taskrefs.rs`), taken
//! from and given back to the P's reserve on an M, not with an `Arc` count: arming and
//! cancelling a timer on an M (hyper does both for every request) writes no line that other
//! Ms share, and only changes the P's `timer0_when` when the earliest deadline moves.
//!
//! A timer never fires early: a `Sleep` completes only once the clock has reached its deadline.
//! It may fire late by however long the M that should run it is busy: futures cannot be
//! preempted (see the crate docs).
//!
//! Clock reads: an M checks its P's timers once per scheduling round, and reads the precise
//! clock only when the P's earliest deadline is not surely ahead by the coarse clock (~7 ns
//! against ~24 for a precise read; `sched/clock.rs`, which also proves the gate never lets a
//! timer fire early). It keeps a reading for the round (`Context::round_now`). A `Sleep`'s first
//! poll finds its deadline passed by that reading, or surely ahead by the coarse clock, and
//! reads the clock itself only for a deadline within two kernel ticks; a registered `Sleep` is
//! done when its M has fired it and reads no clock at all. So a far timer pending on a P costs
//! its rounds ~7 ns each, and arming one on an M (hyper does for every request) costs no precise
//! clock read of its own.
//!
//! A deadline past the end of time is "never", as in Go and tokio: `sleep(Duration::MAX)`,
//! `timeout(Duration::MAX, f)` or an `interval` whose next tick cannot be represented as an
//! `Instant` never fire, and never panic. Such a `Sleep` takes no heap slot: nothing will ever
//! fire it, so it costs nothing but its task, which parks until woken otherwise or cancelled.
//! A representable deadline beyond the runtime clock's 584-year range saturates there.
//!
//! Memory: a sleeping task costs its cell (72-byte header + the future, whose `Sleep` is 72
//! bytes) plus a 16-byte heap slot. Dropping a `Sleep` (cancellation, or a `timeout` whose
//! future finished first) removes its heap slot at once.

mod heap;
mod timer;

pub use timer::{after, after_func, Timer};

pub(crate) use heap::TimerHeap;
use heap::{TimerNode, NO_INDEX};

use crate::loom::sync::atomic::Ordering::{Acquire, Relaxed};
use crate::sched::context::with_current;
use crate::sched::Shared;
use std::future::Future;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Waits until `duration` has elapsed. Must be polled inside a gmprt runtime (a task or
/// `Runtime::block_on`). A duration that reaches past the end of time (`Duration::MAX`) sleeps
/// forever: the future stays pending, as Go's `time.Sleep` and tokio's `sleep` do.
///
/// ```
/// use std::time::{Duration, Instant};
/// let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
/// let t0 = Instant::now();
/// rt.block_on(gmprt_runtime::time::sleep(Duration::from_millis(5)));
/// assert!(t0.elapsed() >= Duration::from_millis(5));
/// ```
pub fn sleep(duration: Duration) -> Sleep {
    Sleep::new(Instant::now().checked_add(duration))
}

/// Waits until `deadline`.
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep::new(Some(deadline))
}

/// Where a registered `Sleep`'s node lives.
struct Registration {
    /// The runtime whose P's heap holds the node, kept alive by a task reference that the
    /// registration owns (`sched/taskrefs.rs`): taken from the P's reserve on an M, so arming
    /// a timer writes no line other Ms share.
    sched: NonNull<Shared>,
    p: usize,
}

// SAFETY: a task reference is valid from any thread (its counter is atomic), and `Shared` is
// `Sync`; the registration is only an address plus the reference it owns.
unsafe impl Send for Registration {}
// SAFETY: as above; `&Registration` only reads the address.
unsafe impl Sync for Registration {}

impl Registration {
    fn shared(&self) -> &Shared {
        // SAFETY: the registration's task reference keeps `Shared` alive until `unregister`
        // releases it, after its last use of this borrow.
        unsafe { self.sched.as_ref() }
    }
}

/// Future returned by [`sleep`] and [`sleep_until`].
#[must_use = "a Sleep does nothing unless awaited"]
pub struct Sleep {
    /// `None`: never (the deadline is past what an `Instant` can hold).
    deadline: Option<Instant>,
    reg: Option<Registration>,
    node: TimerNode,
    _pin: PhantomPinned,
}

impl std::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .field("registered", &self.reg.is_some())
            .finish()
    }
}

impl Sleep {
    fn new(deadline: Option<Instant>) -> Sleep {
        Sleep { deadline, reg: None, node: TimerNode::new(1), _pin: PhantomPinned }
    }

    /// The instant this sleep completes at, or `None` when it never does (its duration reached
    /// past the end of time).
    ///
    /// ```
    /// use std::time::Duration;
    /// assert!(gmprt_runtime::time::sleep(Duration::MAX).deadline().is_none());
    /// assert!(gmprt_runtime::time::sleep(Duration::from_secs(1)).deadline().is_some());
    /// ```
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// True once the deadline has passed (never for a sleep without one).
    pub fn is_elapsed(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Moves the deadline (used by `Interval`). Unregisters first; the next poll registers again.
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        // SAFETY: we do not move the node; `unregister` only touches it under the heap lock.
        let this = unsafe { self.get_unchecked_mut() };
        this.unregister();
        this.deadline = Some(deadline);
    }

    fn unregister(&mut self) {
        let Some(reg) = self.reg.take() else { return };
        let waker = {
            let ps = &reg.shared().allp[reg.p];
            let mut heap = ps.timers.lock();
            self.unlink(ps, &mut heap)
        };
        Sleep::release(reg, waker);
    }

    /// Takes the node out of `ps`'s heap if it is still there, and resets it for a possible
    /// re-registration; returns its waker, to be dropped outside the lock. Only with `ps`'s
    /// heap lock held (`heap` is its guard).
    fn unlink(
        &self,
        ps: &crate::sched::processor::PShared,
        heap: &mut TimerHeap,
    ) -> Option<std::task::Waker> {
        // SAFETY: under the heap lock (module rules in heap.rs).
        let index = self.node.inner.with(|n| unsafe { (*n).index });
        if index != NO_INDEX {
            heap.remove(index);
            ps.set_timer0(heap.first_when());
        }
        // Reset for a possible re-registration (under the lock, as every write to the node).
        self.node.fired.store(false, Relaxed);
        // SAFETY: under the heap lock, by the owner: the slot's only writer.
        self.node.waker.with_mut(|w| unsafe { (*w).take() })
    }

    /// Ends a registration after `unlink`: drops the waker outside the lock, as the firing M
    /// wakes outside it, then gives back the registration's task reference.
    fn release(reg: Registration, waker: Option<std::task::Waker>) {
        drop(waker);
        // SAFETY: the registration owned this reference, and nothing above outlives it.
        unsafe { crate::sched::taskrefs::release_task_ref(reg.sched) };
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: the node is never moved out; its address is stable while pinned.
        let this = unsafe { self.get_unchecked_mut() };
        let Some(deadline) = this.deadline else {
            // Never: nothing will fire it, so it takes no heap slot (see the module doc).
            crate::task::wait::set(crate::task::wait::TIMER, 0, u64::MAX);
            return Poll::Pending;
        };
        if let Some(reg) = &this.reg {
            // Registered: done once fired, with no clock read (the firing M read it: fired
            // means the clock passed `when`, which is `deadline` rounded up, so not early). A
            // deadline that has passed but not yet fired fires at its P's next round.
            //
            // Not fired, and the waker in the node wakes this poller: `Pending` without the
            // heap lock (heap.rs, "One read happens without the lock"), so a task stolen to
            // another P does not write the registering P's lock line at every poll. `Acquire`
            // pairs with the firer's `Release`; a fire this load misses wakes the waker just
            // compared (the firer clones the slot, which only this owner writes).
            let current = this.node.waker.with(|w| {
                // SAFETY: the owner's read of a slot that only the owner writes (under the
                // lock); the firing M only reads it.
                let slot = unsafe { &*w };
                slot.as_ref().is_some_and(|w| w.will_wake(cx.waker()))
            });
            if current && !this.node.fired.load(Acquire) {
                crate::task::wait::set(crate::task::wait::TIMER, 0, this.node.when.load(Relaxed));
                return Poll::Pending;
            }
            let ps = &reg.shared().allp[reg.p];
            let mut heap = ps.timers.lock();
            let fired = this.node.fired.load(Acquire);
            if fired {
                // Done: end the registration under this same lock (the node is out of the
                // heap), so that the drop that follows the `Ready` takes no lock. It was
                // parked, so no budget is spent (it yielded already).
                let waker = this.unlink(ps, &mut heap);
                drop(heap);
                let reg = this.reg.take().expect("registered: checked above");
                Sleep::release(reg, waker);
                return Poll::Ready(());
            }
            // SAFETY: under the heap lock, by the owner (the slot's only writer).
            this.node.waker.with_mut(|w| unsafe {
                match &*w {
                    Some(old) if old.will_wake(cx.waker()) => {}
                    _ => *w = Some(cx.waker().clone()),
                }
            });
            drop(heap);
            crate::task::wait::set(crate::task::wait::TIMER, 0, this.node.when.load(Relaxed));
            return Poll::Pending;
        }
        // First poll: done already if the deadline has passed; else register in the current
        // P's heap (P 0 off an M).
        let first = with_current(|c| {
            let c = c.expect(
                "gmprt timers need a runtime: await this Sleep inside a gmprt task or Runtime::block_on",
            );
            let when = c.shared.nanos(deadline);
            if deadline_passed(c, when) {
                return None;
            }
            let pid = c.pid.get();
            let on_m = pid != usize::MAX;
            Some((crate::sched::taskrefs::acquire_task_ref(c), if on_m { pid } else { 0 }, on_m, when))
        });
        let Some((sched, p, on_m, when)) = first else {
            // Ready without parking: spend budget first (coop.rs), so a loop of elapsed
            // sleeps still yields.
            if crate::coop::poll_proceed(cx).is_pending() {
                return Poll::Pending;
            }
            return Poll::Ready(());
        };
        let reg = Registration { sched, p };
        let shared = reg.shared();
        {
            let ps = &shared.allp[p];
            let mut heap = ps.timers.lock();
            // Not yet registered: we are the only user; the lock orders these for firers.
            this.node.when.store(when, Relaxed);
            this.node.fired.store(false, Relaxed);
            // SAFETY: as above; the owner is the slot's only writer.
            this.node.waker.with_mut(|w| unsafe { *w = Some(cx.waker().clone()) });
            // SAFETY: the node is pinned in this future, which removes it in `drop`.
            unsafe { heap.push(NonNull::from(&this.node)) };
            ps.set_timer0(heap.first_when());
        }
        shared.timer_added(on_m);
        this.reg = Some(reg);
        crate::task::wait::set(crate::task::wait::TIMER, 0, when);
        Poll::Pending
    }
}

/// Whether a deadline at `when` (runtime nanoseconds) has passed, read by the task on `c`'s
/// thread. At or before the clock its M read this round (`Context::round_now`, never ahead of
/// the clock): passed, with no read. Surely ahead by the coarse clock (`sched/clock.rs`): not
/// passed, with no precise read (hyper's 30-s header timer, armed for every request). Otherwise
/// the clock is read, and on an M kept as the round's.
fn deadline_passed(c: &crate::sched::context::Context, when: u64) -> bool {
    let on_m = c.pid.get() != usize::MAX;
    let seen = if on_m { c.round_now.get() } else { 0 };
    if seen != 0 && when <= seen {
        return true;
    }
    if c.shared.clock.surely_ahead(when) {
        return false;
    }
    let now = c.shared.now_nanos();
    if on_m {
        c.round_now.set(now);
    }
    when <= now
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.unregister();
    }
}

/// The error of [`timeout`]: the deadline passed first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed(());

impl std::fmt::Display for Elapsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

/// Runs `future` with a time limit: `Ok(output)` if it finishes first, else `Err(Elapsed)` (the
/// future is dropped). A future that is ready on its first poll wins even with a zero limit; a
/// limit past the end of time (`Duration::MAX`) is no limit.
pub fn timeout<F: Future>(duration: Duration, future: F) -> Timeout<F> {
    Timeout { future, sleep: sleep(duration) }
}

/// Future returned by [`timeout`].
#[must_use = "a Timeout does nothing unless awaited"]
#[derive(Debug)]
pub struct Timeout<F> {
    future: F,
    sleep: Sleep,
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: structural pinning of both fields; neither is moved.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above.
        if let Poll::Ready(v) = unsafe { Pin::new_unchecked(&mut this.future) }.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        // SAFETY: as above.
        match unsafe { Pin::new_unchecked(&mut this.sleep) }.poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed(()))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A ticker: [`Interval::tick`] completes at `start + k·period`. The first tick is immediate
/// (`k = 0`, tokio's `interval`); [`ticker`] is Go's `time.NewTicker`, whose first tick comes
/// one period after the start. Ticks missed by a slow consumer are skipped, not bunched (Go's
/// `time.Ticker` drops them).
///
/// A period so long that the next tick would fall past the end of time (`Duration::MAX`) ticks
/// once, then never again.
///
/// # Panics
/// If `period` is zero (a ticker that fires continuously is a programmer error, as in Go).
pub fn interval(period: Duration) -> Interval {
    assert!(!period.is_zero(), "interval period must be non-zero");
    let now = Instant::now();
    Interval { period, next: Some(now), sleep: Box::pin(sleep_until(now)) }
}

/// Go's `time.NewTicker(period)`: a ticker whose first tick comes one period after the start
/// (`start + k·period`, `k ≥ 1`); otherwise as [`interval`] (missed ticks dropped,
/// [`Interval::reset`] is Go's `Ticker.Reset`).
///
/// ```
/// use std::time::{Duration, Instant};
/// let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(async {
///     let start = Instant::now();
///     let mut t = gmprt_runtime::time::ticker(Duration::from_millis(5));
///     assert!(t.tick().await >= start + Duration::from_millis(5), "no tick at the start");
///     let reset_at = Instant::now();
///     t.reset(Duration::from_millis(2)); // Go's Reset: the next tick one new period from now
///     assert!(t.tick().await >= reset_at + Duration::from_millis(2));
/// });
/// ```
///
/// # Panics
/// If `period` is zero (Go panics on a non-positive period).
pub fn ticker(period: Duration) -> Interval {
    assert!(!period.is_zero(), "ticker period must be non-zero (Go's NewTicker panics too)");
    let first = Instant::now().checked_add(period);
    Interval { period, next: first, sleep: Box::pin(Sleep::new(first)) }
}

/// Returned by [`interval`] and [`ticker`].
#[derive(Debug)]
pub struct Interval {
    period: Duration,
    /// The next tick; `None` once it would fall past the end of time.
    next: Option<Instant>,
    sleep: Pin<Box<Sleep>>,
}

impl Interval {
    /// Waits for the next tick and returns its scheduled instant. Pending forever once the
    /// next tick would fall past the end of time.
    pub async fn tick(&mut self) -> Instant {
        let Some(at) = self.next else {
            return std::future::pending().await;
        };
        self.sleep.as_mut().reset(at);
        self.sleep.as_mut().await;
        let now = Instant::now();
        self.next = at.checked_add(self.period);
        if self.next.is_some_and(|next| next <= now) {
            // Missed ticks are dropped: the next one is a whole period from now.
            self.next = now.checked_add(self.period);
        }
        at
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Go's `Ticker.Reset(period)`: changes the period; the next tick comes one new period
    /// from now (ticks that were due are dropped).
    ///
    /// # Panics
    /// If `period` is zero, as Go's.
    pub fn reset(&mut self, period: Duration) {
        assert!(!period.is_zero(), "ticker period must be non-zero (Go's Ticker.Reset panics too)");
        self.period = period;
        self.next = Instant::now().checked_add(period);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sched::context::Context as SchedContext;

    /// `deadline_passed` answers from the round's reading (at or before it: passed) or the
    /// coarse gate (a minute off: not yet) when it can, reads the clock otherwise, and keeps
    /// that reading as the round's only on an M.
    #[test]
    fn first_poll_reads_the_clock_only_when_neither_reading_nor_gate_answers() {
        let rt = crate::Runtime::builder().procs(1).build().unwrap();
        let shared = rt.block_on(async { with_current(|c| c.expect("in block_on").shared.clone()) });
        let minute = 60_000_000_000;

        let m = SchedContext::new(shared.clone(), 0);
        m.pid.set(0); // as the M holding P 0, whose round read the clock at 1 ns
        m.round_now.set(1);
        assert!(deadline_passed(&m, 1), "at the reading: passed");
        assert_eq!(m.round_now.get(), 1, "answered from the reading");
        let far = shared.now_nanos() + minute;
        assert!(!deadline_passed(&m, far), "a minute off: not yet");
        if cfg!(target_os = "linux") {
            assert_eq!(m.round_now.get(), 1, "the coarse gate answered: no precise read");
        }
        assert!(deadline_passed(&m, 2), "near the reading: the clock, read, has passed 2 ns");
        let read = m.round_now.get();
        assert!(read > 1, "the reading is kept as the round's");
        assert!(deadline_passed(&m, read), "at the kept reading: passed");
        assert_eq!(m.round_now.get(), read, "answered from the kept reading");

        let off_m = SchedContext::new(shared, usize::MAX); // `block_on`'s thread: no rounds
        off_m.round_now.set(1);
        assert!(!deadline_passed(&off_m, u64::MAX), "the end of time: not yet");
        assert!(deadline_passed(&off_m, 2), "read the clock");
        assert_eq!(off_m.round_now.get(), 1, "off an M nothing is kept");
    }
}
