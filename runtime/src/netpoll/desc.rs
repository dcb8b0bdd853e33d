//! One registered descriptor's readiness and waiters: Go's `pollDesc` (`netpoll.go`).
//!
//! # State
//! * `ready`: one word. Bit 0: readable, bit 1: writable (as far as the netpoller knows),
//!   bit 2: closed (deregistered, or its runtime shut down), bits 3 and 4: the peer closed
//!   the read side (EOF: `EPOLLRDHUP`) / the connection is gone (`EPOLLHUP`, an error) —
//!   *final* states that no clear removes, so an operation after them is always tried and
//!   reports the EOF or the error (the event that brought them is the last one the kernel
//!   sends); the bits above are a *tick*, a count of the events the netpoller delivered,
//!   which lets a task clear readiness only if no event came since it looked.
//! * `waiters`: under a mutex, the wakers of the tasks that wait to read and of those that
//!   wait to write (Go's `rg` / `wg`). Go keeps one waiter per direction because its `fd`
//!   serialises the operations of a direction (`fdMutex`, `fd.readLock`) with a lock held
//!   across the wait; a future cannot hold such a lock across an abandoned poll, so here every
//!   task that waits on a direction is kept (once: a task polling again is recognised by
//!   `Waker::will_wake`) and an event wakes them all: they retry, one gets the data, the others
//!   see `WouldBlock` and park again (step 2) — tokio's readiness does the same. (A single slot
//!   would let a second reader's park replace the first's waker, and the first would never
//!   run again: `tests/net_concurrent.rs`, `two_readers_one_socket`.) A waker whose future
//!   was dropped while parked (a `timeout` around a read) stays until the direction's next
//!   event, a deadline change or the close: one spurious wake-up, and `nwaiters` counts it
//!   until then (so an idle M may block in `netpoll` rather than park). Removing it on drop
//!   would need a count per entry: two futures of one task share its waker.
//!
//! # Protocol (edge-triggered: the netpoller reports *changes*)
//! 1. **Netpoller** (`set_ready`, an M in `netpoll`): set the bits and bump the tick in one
//!    atomic RMW; *then* lock `waiters` and take the wakers of the ready directions.
//! 2. **Task** (`poll_ready`): if the bit is set, try the operation. On `WouldBlock`,
//!    `clear_ready` with the tick it saw: a compare-exchange that fails if the tick moved (an
//!    event came since: keep the bit and try again). With the bit clear: lock `waiters`, **load
//!    `ready` again under the lock**, and store the waker only if the bit is still clear.
//!    A `WouldBlock` clears the direction's final bit with it: the kernel just said the
//!    direction is not at its end (see `clear_ready`; a hang-up read off a socket before its
//!    `connect` would otherwise keep every later poll trying, never parking: issue 23).
//!    A short stream read or write clears the readiness bit alone (`clear_drained`,
//!    `Registration::poll_stream_io`: the kernel's buffer was drained or filled). That is why
//!    EOF and hang-up are *final* bits:
//!    data and a FIN can arrive as one event, the read that drains the data clears the
//!    readiness, and no event follows for the FIN — without a bit that no clear removes, the
//!    next read would park forever (`tests/net_errors.rs`, `eof_after_a_short_read_is_seen`,
//!    fails in its first rounds without it).
//! 3. A descriptor starts ready in both directions: the first operation is tried before any
//!    wait, as Go's `fd.Read` tries the syscall before `pd.waitRead`.
//!
//! # Why no readiness is lost
//! Take an event E (step 1) and a task T that polls after the data E announces arrived.
//! If T's load in step 2 sees E's bits, it retries the operation, which sees the data. If T's
//! clear fails, the tick moved: it retries. Otherwise T takes `waiters` and loads `ready`
//! under it. The netpoller's RMW comes before its own acquisition of `waiters`; the two
//! critical sections are ordered by the mutex. If the netpoller's came first, T's load under
//! the lock happens after the RMW and sees the bit (T does not park). If T's came first, the
//! netpoller finds T's waker and wakes it. Either way T runs the operation again after E.
//! `tests/loom_netpoll.rs` checks this through the whole scheduler
//! (`block_on_reader_races_readiness_procs1` and the models after it).
//!
//! `waiters` is a mutex, not Go's lock-free `rg` word: it is taken once per park, which costs a
//! syscall-sized round anyway, and it keeps the wakers without unsafe code.

use crate::loom::sync::atomic::{AtomicUsize, Ordering::AcqRel, Ordering::Acquire, Ordering::SeqCst};
use crate::loom::sync::Mutex;
use std::io;
use std::task::{Context, Poll, Waker};

/// Readable (Go's `rg` ready).
pub(crate) const READ: usize = 1;
/// Writable (Go's `wg` ready).
pub(crate) const WRITE: usize = 2;
/// Deregistered or shut down: every poll fails.
pub(crate) const CLOSED: usize = 4;
/// The peer closed its writing side: reads see EOF from now on (final).
pub(crate) const READ_CLOSED: usize = 8;
/// The connection is gone (hang-up or error): writes fail from now on (final).
pub(crate) const WRITE_CLOSED: usize = 16;
/// One event's step of the tick (the bits above the flags).
const TICK: usize = 32;

/// Which direction an operation waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    /// Read, accept, recv.
    Read,
    /// Write, connect, send.
    Write,
}

impl Dir {
    fn bit(self) -> usize {
        match self {
            Dir::Read => READ,
            Dir::Write => WRITE,
        }
    }

    /// The direction's final state (see the module doc).
    fn closed_bit(self) -> usize {
        match self {
            Dir::Read => READ_CLOSED,
            Dir::Write => WRITE_CLOSED,
        }
    }
}

/// What `poll_ready` saw: the tick, for `clear_ready`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadyEvent {
    tick: usize,
    dir: Dir,
}

#[derive(Default)]
struct Waiters {
    reader: Vec<Waker>,
    writer: Vec<Waker>,
}

impl Waiters {
    fn slot(&mut self, dir: Dir) -> &mut Vec<Waker> {
        match dir {
            Dir::Read => &mut self.reader,
            Dir::Write => &mut self.writer,
        }
    }
}

/// Go's `pollDesc`. See the module doc.
pub(crate) struct PollDesc {
    ready: AtomicUsize,
    waiters: Mutex<Waiters>,
    /// What a closed descriptor's polls report.
    closed_why: &'static str,
}

impl PollDesc {
    /// A new descriptor, ready both ways (protocol step 3).
    pub(crate) fn new() -> PollDesc {
        PollDesc {
            ready: AtomicUsize::new(READ | WRITE),
            waiters: Mutex::new(Waiters::default()),
            closed_why: "the socket's gmprt runtime has shut down",
        }
    }

    /// Step 1, for the netpoller: marks the directions ready and moves their wakers to `out`
    /// (each was counted in `nwaiters` when its task parked: `Shared::netpoll_uncount`).
    pub(crate) fn set_ready(&self, ev: super::sys::Ready, out: &mut Vec<Waker>) {
        let read = ev.read || ev.read_closed;
        let write = ev.write || ev.write_closed;
        let bits = if read { READ } else { 0 }
            | if write { WRITE } else { 0 }
            | if ev.read_closed { READ_CLOSED } else { 0 }
            | if ev.write_closed { WRITE_CLOSED } else { 0 };
        if bits == 0 {
            return;
        }
        // AcqRel: releases to the task's Acquire load (it then tries the operation); the
        // `waiters` lock below orders this RMW before the netpoller's critical section.
        let _ = self.ready.fetch_update(AcqRel, Acquire, |r| Some((r | bits).wrapping_add(TICK)));
        let mut w = self.waiters.lock();
        for (on, dir) in [(read, Dir::Read), (write, Dir::Write)] {
            if on {
                out.append(w.slot(dir));
            }
        }
    }

    /// Marks the descriptor closed and moves both directions' wakers to `out`
    /// (deregistration, shutdown).
    pub(crate) fn close(&self, out: &mut Vec<Waker>) {
        self.ready.fetch_or(CLOSED, AcqRel);
        let mut w = self.waiters.lock();
        out.append(&mut w.reader);
        out.append(&mut w.writer);
    }

    /// Step 2, for a task: `Ready(Ok)` when `dir` is (believed) ready — try the operation and
    /// `clear_ready` on `WouldBlock`; `Pending` after storing the waker beside those of the
    /// other tasks waiting on `dir` (`parked` is then told whether a new waiter was counted:
    /// false when this task's waker was there already); `Ready(Err)` once closed.
    ///
    /// A new waiter is counted in `nwaiters` (the runtime's `netpollWaiters`) here, under the
    /// `waiters` lock: whoever takes the waker later (an event, a deadline, a close) takes it
    /// under the same lock and subtracts after, so the count never goes below zero between
    /// the two (incremented after the unlock, it could: the netpoller's subtraction came first).
    pub(crate) fn poll_ready(
        &self,
        cx: &mut Context<'_>,
        dir: Dir,
        nwaiters: &AtomicUsize,
        parked: &mut bool,
    ) -> Poll<io::Result<ReadyEvent>> {
        if let Some(r) = self.ready_now(dir) {
            return Poll::Ready(r);
        }
        let mut w = self.waiters.lock();
        // Under the lock (the module doc's argument): sees any event whose netpoller took the
        // lock before us.
        if let Some(r) = self.ready_now(dir) {
            return Poll::Ready(r);
        }
        let list = w.slot(dir);
        *parked = !list.iter().any(|old| old.will_wake(cx.waker()));
        if *parked {
            // SeqCst: before the idle path's or `wakep`'s read of it (netpoll/mod.rs, (a)).
            nwaiters.fetch_add(1, SeqCst);
            list.push(cx.waker().clone());
        }
        Poll::Pending
    }

    /// Step 2's first look, for a task: `Some(Ok)` when `dir` is (believed) ready — try the
    /// operation and `clear_ready` on `WouldBlock` —, `Some(Err)` once closed, `None` when the
    /// task would park (`poll_ready` parks it).
    pub(crate) fn ready_now(&self, dir: Dir) -> Option<io::Result<ReadyEvent>> {
        // Acquire: pairs with the netpoller's RMW (step 1).
        let r = self.ready.load(Acquire);
        if r & CLOSED != 0 {
            return Some(Err(io::Error::other(self.closed_why)));
        }
        (r & (dir.bit() | dir.closed_bit()) != 0).then_some(Ok(ReadyEvent { tick: r & !(TICK - 1), dir }))
    }

    /// Step 2: the operation said `WouldBlock` after `ev`; clear its direction unless an event
    /// came since (the tick moved). The direction's final bit goes too: the kernel has just
    /// said that the direction is neither at its end nor in error (a read after a FIN returns
    /// 0, a write after a hang-up fails: neither says `WouldBlock`), so the bit was not final
    /// after all — an `EPOLLHUP` read off a socket before its `connect` (`TCP_CLOSE` reports
    /// it), or a UDP socket's `EPOLLERR` for an ICMP error that the `recv` just returned. Kept,
    /// it would make every later poll try the operation again, and never park.
    pub(crate) fn clear_ready(&self, ev: ReadyEvent) {
        self.clear(ev, ev.dir.bit() | ev.dir.closed_bit());
    }

    /// Step 2 for a short stream transfer after `ev` (`Registration::poll_stream_io`): clear the
    /// direction's readiness unless an event came since, and keep its final bit — a short read
    /// drained the data, and a FIN that came with it still has to be read.
    pub(crate) fn clear_drained(&self, ev: ReadyEvent) {
        self.clear(ev, ev.dir.bit());
    }

    fn clear(&self, ev: ReadyEvent, bits: usize) {
        // AcqRel/Acquire: a failed exchange's load must see the newer event to retry on it.
        let _ = self.ready.fetch_update(AcqRel, Acquire, |r| {
            (r & !(TICK - 1) == ev.tick && r & CLOSED == 0).then_some(r & !bits)
        });
    }

    /// Moves `dir`'s wakers to `out` (a deadline moved: the waiters must look again).
    pub(crate) fn take_waiters(&self, dir: Dir, out: &mut Vec<Waker>) {
        out.append(self.waiters.lock().slot(dir));
    }

    /// Drops the waker of a task that stopped waiting (its future was dropped, or a deadline
    /// ended the wait). Returns true if one was there (the waiter count goes down).
    pub(crate) fn forget_waiter(&self, dir: Dir, waker: &Waker) -> bool {
        let mut w = self.waiters.lock();
        let list = w.slot(dir);
        match list.iter().position(|w| w.will_wake(waker)) {
            Some(i) => {
                list.swap_remove(i);
                true
            }
            None => false,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::netpoll::sys::Ready;

    fn event(read: bool, write: bool, read_closed: bool, write_closed: bool) -> Ready {
        Ready { key: 0, read, write, read_closed, write_closed }
    }

    /// Polls `dir` once with a no-op waker: `Some(ev)` when it reads ready, `None` when it parks.
    fn poll(d: &PollDesc, dir: Dir, nwaiters: &AtomicUsize) -> Option<ReadyEvent> {
        let mut cx = Context::from_waker(Waker::noop());
        let mut parked = false;
        match d.poll_ready(&mut cx, dir, nwaiters, &mut parked) {
            Poll::Ready(r) => Some(r.unwrap()),
            Poll::Pending => None,
        }
    }

    /// The readiness word receives the hang-up of a socket that has not finished connecting
    /// (`TCP_CLOSE` reads as `EPOLLOUT | EPOLLHUP`, which mio reports as both directions
    /// closed), and the operations then say `WouldBlock` (the connection came up): each clear
    /// must leave the direction parked, not ready for ever (issue 23).
    #[test]
    fn hang_up_before_connect_then_would_block_parks() {
        let d = PollDesc::new();
        let n = AtomicUsize::new(0);
        d.set_ready(event(false, true, true, true), &mut Vec::new());
        for dir in [Dir::Read, Dir::Write] {
            let ev = poll(&d, dir, &n).expect("ready after the event");
            d.clear_ready(ev); // the operation said WouldBlock
            assert!(poll(&d, dir, &n).is_none(), "{dir:?} still reads ready after WouldBlock");
        }
        assert_eq!(n.load(SeqCst), 2, "one waiter parked per direction");
    }

    /// A real EOF: data and the FIN in one event; the short read that drains the data clears
    /// readiness but keeps the final bit, so the next read is tried and sees the end.
    #[test]
    fn a_short_read_keeps_the_eof() {
        let d = PollDesc::new();
        let n = AtomicUsize::new(0);
        let ev = poll(&d, Dir::Read, &n).unwrap(); // new: ready both ways
        d.clear_ready(ev);
        assert!(poll(&d, Dir::Read, &n).is_none());
        d.set_ready(event(true, false, true, false), &mut Vec::new());
        let ev = poll(&d, Dir::Read, &n).unwrap();
        d.clear_drained(ev); // a short read
        assert!(poll(&d, Dir::Read, &n).is_some(), "the EOF must still be read");
    }

    /// An event that comes between the poll and the clear keeps the direction ready (the tick).
    #[test]
    fn an_event_since_the_poll_keeps_readiness() {
        let d = PollDesc::new();
        let n = AtomicUsize::new(0);
        let ev = poll(&d, Dir::Read, &n).unwrap();
        d.set_ready(event(true, false, false, false), &mut Vec::new());
        d.clear_ready(ev);
        assert!(poll(&d, Dir::Read, &n).is_some());
    }
}
