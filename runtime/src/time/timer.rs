//! Go's `time.Timer`: [`Timer`] (`time.NewTimer`), [`after`] (`time.After`) and [`after_func`]
//! (`time.AfterFunc`) — timers that fire whether or not anyone is waiting, into a channel or by
//! running a function, and that can be stopped and reset with Go's return values.
//!
//! # Protocol
//! A timer's state is one mutex-guarded record: a *generation*, whether it is *active*, and the
//! `stop` sender of the task that waits for the current deadline. Arming (creation, `reset`)
//! bumps the generation, marks it active and spawns a task that waits for the deadline or for
//! its `stop` channel to close. The task that reaches its deadline fires only if, under the
//! lock, its generation is still the current one and the timer is still active — and then
//! marks it inactive in the same critical section. `stop` and `reset` take the lock, report
//! whether the timer was active (Go's return value), bump the generation and close the old
//! task's `stop` channel, so that task ends at once instead of sleeping out its deadline.
//!
//! Why the return values are Go's: `active` is true exactly from an arming to the first of
//! (the current task's firing, a `stop`, the next `reset`), and each of those reads and writes
//! it under the one lock. So `stop` returns true iff it stopped a timer that had not fired, and
//! then the timer never fires (the task's check under the lock sees the new generation);
//! `reset` returns true iff the timer was active, as Go's.
//!
//! The channel is Go's (≤ 1.22) `C`: capacity 1, the fire is a non-blocking send of the
//! firing instant (a value nobody took makes the next fire drop its own, as Go's `sendTime`).
//! Go 1.23 also drains `C` in `Stop` and `Reset`; here, as in Go 1.22, a value sent before
//! `stop` stays in the channel — drain it with `try_recv` when that matters.
//!
//! Dropping a `Timer` does not stop it (as Go ≤ 1.22, whose runtime keeps a timer until it
//! fires): its task waits out the deadline and fires into the channel, which a clone of `c()`
//! may still read. Stop a timer you no longer need.

use super::sleep_until;
use crate::chan::{chan, Receiver, Sender};
use crate::runtime::Handle;
use crate::select;
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a timer does when it fires.
enum Action {
    /// `NewTimer` / `After`: a non-blocking send of the instant (capacity 1).
    Send(Sender<Instant>),
    /// `AfterFunc`: run the function in the timer's own task (Go: its own goroutine). Each
    /// firing runs it again (a `reset` after it fired re-arms it).
    Func(Arc<dyn Fn() + Send + Sync>),
}

struct State {
    gen: u64,
    active: bool,
    /// Closed to end the task waiting for the current deadline.
    stop: Option<Sender<()>>,
}

struct Inner {
    state: Mutex<State>,
    action: Action,
    handle: Handle,
}

/// Go's `time.Timer`: fires once, `d` after it was made (or last reset), by sending the instant
/// on [`c`](Timer::c) or — made by [`after_func`] — by running a function. See the module doc
/// for the protocol.
///
/// ```
/// use gmprt_runtime::time::Timer;
/// use std::time::Duration;
///
/// let rt = gmprt_runtime::Runtime::builder().procs(2).build().unwrap();
/// rt.block_on(async {
///     let t = Timer::new(Duration::from_millis(5));
///     let fired_at = t.c().recv().await.unwrap(); // Go's <-t.C
///     assert!(!t.stop(), "it fired already: Stop returns false, as Go's");
///
///     let t = Timer::new(Duration::from_secs(3600));
///     assert!(t.stop(), "stopped before it fired");
///     assert!(!t.reset(Duration::from_millis(1)), "it was not active");
///     assert!(t.c().recv().await.unwrap() > fired_at);
/// });
/// ```
pub struct Timer {
    inner: Arc<Inner>,
    /// `None` for an `after_func` timer (Go's `C` is nil there).
    c: Option<Receiver<Instant>>,
}

impl std::fmt::Debug for Timer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.inner.state.lock();
        f.debug_struct("Timer").field("active", &st.active).field("func", &self.c.is_none()).finish()
    }
}

impl Timer {
    /// Go's `time.NewTimer(d)`: a timer that sends the instant it fires on [`c`](Self::c) once
    /// `d` has elapsed. `Duration::MAX` (past the end of time) never fires.
    ///
    /// # Panics
    /// Outside a gmprt runtime (a task or `Runtime::block_on`): its firing runs as a task.
    pub fn new(d: Duration) -> Timer {
        let (tx, rx) = chan(1);
        let timer = Timer { inner: Inner::new(Action::Send(tx), "Timer::new"), c: Some(rx) };
        timer.inner.arm(d);
        timer
    }

    /// Go's `t.C`: where the firing instant is sent (capacity 1).
    ///
    /// # Panics
    /// For a timer made by [`after_func`], which has no channel (Go's is nil).
    pub fn c(&self) -> &Receiver<Instant> {
        self.c.as_ref().expect("an after_func timer has no channel (Go's t.C is nil there)")
    }

    /// Go's `Stop`: prevents the timer from firing. True if this call stopped it; false if it
    /// had fired already or was stopped. A value it sent before stays in [`c`](Self::c).
    pub fn stop(&self) -> bool {
        self.inner.disarm()
    }

    /// Go's `Reset`: the timer fires `d` from now (again, if it fired). True if it was active
    /// (had neither fired nor been stopped), false otherwise — Go's return value.
    pub fn reset(&self, d: Duration) -> bool {
        let was = self.inner.disarm();
        self.inner.arm(d);
        was
    }
}

impl Inner {
    fn new(action: Action, what: &str) -> Arc<Inner> {
        let handle = Handle::try_current().unwrap_or_else(|| {
            panic!("{what} outside a gmprt runtime: a timer fires from a task (call it in a task or Runtime::block_on)")
        });
        Arc::new(Inner { state: Mutex::new(State { gen: 0, active: false, stop: None }), action, handle })
    }

    /// Marks the timer inactive and ends its waiting task; returns whether it was active.
    fn disarm(&self) -> bool {
        let mut st = self.state.lock();
        let was = st.active;
        st.active = false;
        st.gen += 1;
        // Dropping the only sender closes the channel: the task's `recv` ends.
        st.stop = None;
        was
    }

    /// Arms a new generation firing `d` from now: one task waits for it.
    fn arm(self: &Arc<Self>, d: Duration) {
        let deadline = Instant::now().checked_add(d);
        let (stop_tx, stop_rx) = chan::<()>(0);
        let gen = {
            let mut st = self.state.lock();
            st.gen += 1;
            st.active = true;
            st.stop = Some(stop_tx);
            st.gen
        };
        let inner = self.clone();
        // The task holds the timer only through `inner`; a `Timer` dropped (and stopped) ends it.
        drop(self.handle.spawn(async move {
            match deadline {
                Some(at) => select! {
                    _ = sleep_until(at) => {},
                    _ = recv(stop_rx) => return,
                },
                None => {
                    // Never fires: wait only for the stop.
                    let _ = stop_rx.recv().await;
                    return;
                }
            }
            let fire = {
                let mut st = inner.state.lock();
                let current = st.gen == gen && st.active;
                if current {
                    st.active = false;
                    st.stop = None;
                }
                current
            };
            if fire {
                match &inner.action {
                    // Go's `sendTime`: non-blocking; a value nobody took makes this one drop.
                    Action::Send(tx) => {
                        let _ = tx.try_send(Instant::now());
                    }
                    Action::Func(f) => f(),
                }
            }
        }));
    }
}

/// Go's `time.After(d)`: a channel that receives the instant once `d` has elapsed (the
/// channel of a [`Timer`] nobody can stop).
///
/// ```
/// use gmprt_runtime::{select, time::after};
/// use std::time::Duration;
///
/// let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(async {
///     let (_tx, never) = gmprt_runtime::chan::chan::<u32>(0);
///     let timeout = after(Duration::from_millis(5));
///     let r = select! {
///         v = recv(never) => v,
///         _ = recv(timeout) => None, // Go's case <-time.After(d):
///     };
///     assert_eq!(r, None);
/// });
/// ```
///
/// # Panics
/// Outside a gmprt runtime.
pub fn after(d: Duration) -> Receiver<Instant> {
    let t = Timer::new(d);
    // Dropping the `Timer` does not stop it (module doc): only the channel is kept.
    t.c.expect("Timer::new has a channel")
}

/// Go's `time.AfterFunc(d, f)`: runs `f` in its own task once `d` has elapsed. The returned
/// [`Timer`] stops it (`stop` returns true if `f` will not run) or resets it (`f` runs again
/// after a reset that follows a firing). Dropping the `Timer` does not stop it.
///
/// ```
/// use gmprt_runtime::time::after_func;
/// use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let rt = gmprt_runtime::Runtime::builder().procs(2).build().unwrap();
/// rt.block_on(async {
///     let (tx, rx) = gmprt_runtime::chan::chan::<()>(1);
///     let t = after_func(Duration::from_millis(1), move || {
///         let _ = tx.try_send(());
///     });
///     rx.recv().await.unwrap(); // f ran
///     assert!(!t.stop(), "it fired already");
///
///     let ran = Arc::new(AtomicUsize::new(0));
///     let r = ran.clone();
///     let t = after_func(Duration::from_secs(3600), move || drop(r.fetch_add(1, SeqCst)));
///     assert!(t.stop(), "stopped before it fired: f never runs");
/// });
/// ```
///
/// # Panics
/// Outside a gmprt runtime.
pub fn after_func(d: Duration, f: impl Fn() + Send + Sync + 'static) -> Timer {
    let timer = Timer { inner: Inner::new(Action::Func(Arc::new(f)), "after_func"), c: None };
    timer.inner.arm(d);
    timer
}
