//! A descriptor's registration with its runtime's netpoller: Go's `pollDesc` methods as the
//! `net` types use them (`netpollopen`, `waitRead`/`waitWrite`, deadlines, `netpollclose`).
//!
//! # Contract
//! * [`Registration::new`] needs a current gmprt runtime (a task or `block_on`) and a
//!   descriptor already in non-blocking mode; it registers it with the kernel (edge-triggered,
//!   both directions) and the runtime's table.
//! * [`Registration::poll_io`] runs an operation that fails with `WouldBlock` when it would
//!   block, parking the task on the descriptor until the netpoller sees it ready again
//!   (`desc.rs`'s protocol), and counts the task in `nwaiters` while it is parked. Each try
//!   of the operation spends one unit of the task's cooperative budget (`coop.rs`), so a
//!   descriptor that reads "ready" while the operation keeps saying `WouldBlock` costs a
//!   yield every `coop::BUDGET` tries, never a core.
//! * Deadlines (Go's `SetReadDeadline` / `SetWriteDeadline`): while a direction's deadline is
//!   set and past, its operations fail with `TimedOut` at once; the operations parked when the
//!   deadline passes wake (a runtime timer, armed by the first to park, wakes every waiter of
//!   the direction: `DeadlineWake`) and fail. Moving a deadline wakes the parked operations so
//!   they apply the new one (a later deadline: they park again under a new timer). A
//!   direction with no deadline (`has_deadline` clear) is polled, and parked on, without the
//!   deadline's lock: a ready direction's operation is ordered before a deadline set
//!   meanwhile, as one already past its check would be; a task that parks reads the flag
//!   again after storing its waker, and `set_deadline` stores the flag before it takes the
//!   waiters, both under the waiters' lock, so the task either sees the new deadline or is
//!   woken to see it (`poll_ready`; modelled in `tests/loom_netpoll.rs`).
//! * Drop deletes the kernel registration, removes the table entry and marks the descriptor
//!   closed, **before** the owner closes the descriptor (the owner's field order): a closed
//!   descriptor's number can be reused at once by another socket.

use super::desc::{Dir, PollDesc, ReadyEvent};
use crate::loom::sync::atomic::AtomicBool;
use crate::loom::sync::atomic::Ordering::{Acquire, Release, SeqCst};
use crate::sched::context::with_current;
use crate::sched::Shared;
use crate::time::Sleep;
use parking_lot::Mutex;
use std::future::Future;
use std::io;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll, Wake, Waker};
use std::time::Instant;

/// A direction's deadline and the timer that wakes the parked operations at it.
#[derive(Default)]
struct Deadline {
    at: Option<Instant>,
    timer: Option<Pin<Box<Sleep>>>,
    /// The timer's waker (a `DeadlineWake`), made when a deadline first arms a timer.
    wake: Option<Waker>,
}

/// What a deadline's timer wakes: every task parked on the direction (they poll again and
/// fail with `TimedOut`). The timer is armed by whichever task parked first, which may stop
/// waiting (a dropped future) while others still wait: waking that task alone would leave
/// them parked past the deadline.
struct DeadlineWake {
    shared: Arc<Shared>,
    desc: Arc<PollDesc>,
    dir: Dir,
}

impl Wake for DeadlineWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        wake_waiters(&self.shared, &self.desc, self.dir);
    }
}

/// Wakes every task parked on `desc`'s `dir`, taking them out of the waiter count.
fn wake_waiters(shared: &Shared, desc: &PollDesc, dir: Dir) {
    let mut wakers = Vec::new();
    desc.take_waiters(dir, &mut wakers);
    shared.netpoll_wake(wakers);
}

/// See the module doc.
pub(crate) struct Registration {
    shared: Arc<Shared>,
    desc: Arc<PollDesc>,
    key: usize,
    fd: RawFd,
    /// Read and write deadlines (index: `di(dir)`).
    deadlines: [Mutex<Deadline>; 2],
    /// Whether each direction has a deadline (`deadlines[i].at.is_some()`, stored under that
    /// lock): without one, `poll_ready` answers or parks without the lock — two locked RMWs
    /// fewer per read or write, and per park, of a connection that never sets a deadline.
    has_deadline: [AtomicBool; 2],
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration").field("fd", &self.fd).finish_non_exhaustive()
    }
}

fn di(dir: Dir) -> usize {
    match dir {
        Dir::Read => 0,
        Dir::Write => 1,
    }
}

impl Registration {
    /// Registers `fd` (non-blocking) with the current runtime's netpoller.
    ///
    /// # Errors
    /// Outside a gmprt runtime; after its shutdown; when the poller cannot be created or the
    /// kernel refuses the registration (the OS error).
    ///
    /// The caller must keep `fd` open until this registration is dropped.
    pub(crate) fn new(fd: RawFd) -> io::Result<Registration> {
        let shared = with_current(|cx| cx.map(|cx| cx.shared.clone())).ok_or_else(|| {
            io::Error::other(
                "not inside a gmprt runtime: create sockets from a task or Runtime::block_on \
                 (they are registered with that runtime's netpoller)",
            )
        })?;
        Registration::with_shared(shared, fd)
    }

    /// `new` with the runtime given.
    pub(crate) fn with_shared(shared: Arc<Shared>, fd: RawFd) -> io::Result<Registration> {
        if shared.is_shutdown() {
            return Err(io::Error::other("the gmprt runtime has shut down; no socket can be registered"));
        }
        let np = shared.netpoll_init()?;
        let desc = Arc::new(PollDesc::new());
        let key = np.insert(desc.clone());
        // SAFETY: the caller keeps `fd` open until this registration is dropped, and `Drop`
        // deletes it from the poller first.
        if let Err(e) = unsafe { np.poller.add(fd, key) } {
            np.remove(key);
            return Err(e);
        }
        Ok(Registration {
            shared,
            desc,
            key,
            fd,
            deadlines: Default::default(),
            has_deadline: [AtomicBool::new(false), AtomicBool::new(false)],
        })
    }

    /// Its key in the netpoller's table (the loom models raise events by it).
    #[cfg(loom)]
    pub(crate) fn key(&self) -> usize {
        self.key
    }

    /// Its runtime.
    #[cfg(loom)]
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Polls until `dir` is (believed) ready; see `desc.rs`. Applies the direction's deadline.
    pub(crate) fn poll_ready(&self, cx: &mut Context<'_>, dir: Dir) -> Poll<io::Result<ReadyEvent>> {
        // No deadline on this direction (a connection that never sets one): no look at the
        // deadline, so no lock, ready or not (module doc, "Deadlines"). Acquire: pairs with
        // `set_deadline`'s store.
        let mut parked_unlocked = false;
        if !self.has_deadline[di(dir)].load(Acquire) {
            let r = self.park_on_desc(cx, dir);
            // A deadline set while this task parked: `set_deadline` stores the flag, *then*
            // takes the waiters under the waiters' lock, and `park_on_desc` stored this task's
            // waker under the same lock before this load. If the setter's take came first, its
            // store happens before this load, which sees the flag; if this task's store came
            // first, the setter takes its waker and wakes it, and the next poll sees the flag.
            // Either way no parked task misses a deadline (`loom_netpoll.rs`,
            // `deadline_set_while_a_reader_parks_procs1`). Acquire: as above.
            if r.is_ready() {
                return r;
            }
            if !self.has_deadline[di(dir)].load(Acquire) {
                crate::task::wait::set(crate::task::wait::NET, self.fd as u64, di(dir) as u64);
                return Poll::Pending;
            }
            // Seen: apply it under the lock below. This task's waker, already stored, is
            // recognised there (`Waker::will_wake`) and not counted twice.
            parked_unlocked = true;
        }
        let mut d = self.deadlines[di(dir)].lock();
        if d.at.is_some_and(|at| Instant::now() >= at) {
            // A task that parked above before it saw the deadline stops waiting.
            if parked_unlocked && self.desc.forget_waiter(dir, cx.waker()) {
                self.shared.net.nwaiters.fetch_sub(1, SeqCst);
            }
            return Poll::Ready(Err(timed_out(dir)));
        }
        let r = self.park_on_desc(cx, dir);
        if r.is_ready() {
            return r;
        }
        if let Some(at) = d.at {
            let d = &mut *d;
            // The timer wakes every waiter of the direction (`DeadlineWake`), not the task that
            // armed it: that one may have stopped waiting while others still wait.
            let wake = d.wake.get_or_insert_with(|| {
                Waker::from(Arc::new(DeadlineWake {
                    shared: self.shared.clone(),
                    desc: self.desc.clone(),
                    dir,
                }))
            });
            let timer = d.timer.get_or_insert_with(|| Box::pin(crate::time::sleep_until(at)));
            if timer.as_mut().poll(&mut Context::from_waker(wake)).is_ready() {
                d.timer = None;
                if self.desc.forget_waiter(dir, cx.waker()) {
                    self.shared.net.nwaiters.fetch_sub(1, SeqCst);
                }
                wake.wake_by_ref(); // the others see the deadline passed
                return Poll::Ready(Err(timed_out(dir)));
            }
        }
        // After the timer's poll, which records its own reason: this task waits on the socket.
        crate::task::wait::set(crate::task::wait::NET, self.fd as u64, di(dir) as u64);
        Poll::Pending
    }

    /// `desc.rs`'s step 2 for the task polling `dir`: `Ready` when the direction reads ready (or
    /// closed), else parks it on the descriptor (counted in `nwaiters` the first time, with an
    /// M woken for a waiter off any M). The caller records what the task waits on.
    fn park_on_desc(&self, cx: &mut Context<'_>, dir: Dir) -> Poll<io::Result<ReadyEvent>> {
        let mut parked = false;
        let r = self.desc.poll_ready(cx, dir, &self.shared.net.nwaiters, &mut parked);
        if r.is_ready() {
            return r;
        }
        if parked && self.shared.current_pid().is_none() {
            self.shared.netpoll_waiter_off_m();
        }
        Poll::Pending
    }

    /// Runs `op` until it does not say `WouldBlock`, parking between tries (module contract).
    pub(crate) fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        dir: Dir,
        op: impl FnMut() -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        self.poll_io_draining(cx, dir, op, |_| false)
    }

    /// `poll_io` for a stream read or write of `want` bytes: a short transfer (`0 < n < want`)
    /// means the kernel's buffer was drained (read) or filled (write) at that moment, so the
    /// direction's readiness is cleared at once (with the tick seen, so an event that came
    /// since keeps it) and the next call parks without first trying the system call that
    /// would say `WouldBlock` — one `recv` fewer per request for a server (tokio does the
    /// same). Not for datagrams: a short datagram says nothing about the next.
    pub(crate) fn poll_stream_io(
        &self,
        cx: &mut Context<'_>,
        dir: Dir,
        want: usize,
        op: impl FnMut() -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        self.poll_io_draining(cx, dir, op, |&n| n > 0 && n < want)
    }

    /// The one loop behind `poll_io` and `poll_stream_io`: `drained(r)` says that a success
    /// `r` also left the direction not ready, so its readiness is cleared before returning.
    fn poll_io_draining<R>(
        &self,
        cx: &mut Context<'_>,
        dir: Dir,
        mut op: impl FnMut() -> io::Result<R>,
        drained: impl Fn(&R) -> bool,
    ) -> Poll<io::Result<R>> {
        loop {
            // A socket that is always ready (a fast peer, a full backlog) must not keep the P:
            // one unit of the task's cooperative budget per try, as every gmprt resource. Per
            // try, not per call: readiness that keeps saying "ready" while the operation says
            // `WouldBlock` (an event per try, or a bit that no clear removes) then costs a
            // yield every `coop::BUDGET` tries, not a core forever inside one poll (issue 23).
            ready!(crate::coop::poll_proceed(cx));
            let ev = ready!(self.poll_ready(cx, dir))?;
            match op() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.desc.clear_ready(ev),
                r => {
                    if matches!(&r, Ok(v) if drained(v)) {
                        self.desc.clear_drained(ev);
                    }
                    return Poll::Ready(r);
                }
            }
        }
    }

    /// `poll_io` as a future, for an `async fn` body.
    pub(crate) async fn io<R>(&self, dir: Dir, mut op: impl FnMut() -> io::Result<R>) -> io::Result<R> {
        std::future::poll_fn(|cx| self.poll_io(cx, dir, &mut op)).await
    }

    /// Sets (or, with `None`, clears) `dir`'s deadline, waking a parked operation so it
    /// applies the new one (Go's `poll_runtime_pollSetDeadline`).
    pub(crate) fn set_deadline(&self, dir: Dir, at: Option<Instant>) {
        {
            let mut d = self.deadlines[di(dir)].lock();
            d.at = at;
            d.timer = None;
            // Release: pairs with `poll_ready`'s Acquire loads; under the lock, so it always
            // says whether `d.at` is set.
            self.has_deadline[di(dir)].store(at.is_some(), Release);
        }
        // After the store, and under the waiters' lock: a task that parked without the
        // deadline's lock is either taken here or sees the flag (`poll_ready`).
        wake_waiters(&self.shared, &self.desc, dir);
    }

    /// `dir`'s deadline.
    pub(crate) fn deadline(&self, dir: Dir) -> Option<Instant> {
        self.deadlines[di(dir)].lock().at
    }
}

fn timed_out(dir: Dir) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        match dir {
            Dir::Read => "read deadline exceeded (set_read_deadline)",
            Dir::Write => "write deadline exceeded (set_write_deadline)",
        },
    )
}

impl Drop for Registration {
    fn drop(&mut self) {
        let Some(np) = self.shared.net.poll.get() else { return };
        // Failure here means the descriptor is already gone from the kernel's set (closed by
        // someone else): nothing is left to undo there.
        let _ = np.poller.delete(self.fd);
        np.remove(self.key);
        let mut wakers = Vec::new();
        self.desc.close(&mut wakers);
        self.shared.netpoll_wake(wakers);
    }
}
