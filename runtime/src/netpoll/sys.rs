//! The OS readiness API under the netpoller: Go's `netpoll_epoll.go` / `netpoll_kqueue.go`.
//!
//! Normally this is [`mio`] (epoll on Linux, kqueue on the BSDs and macOS): descriptors are
//! registered once, **edge-triggered**, for both directions (Go's `EPOLLIN | EPOLLOUT |
//! EPOLLRDHUP | EPOLLET`), a wait is one `epoll_wait`, and `Poller::notify` is Go's
//! `netpollBreak` (an eventfd write that ends the current or the next wait).
//!
//! Why mio and not the `polling` crate (the first choice): `polling` arms a timerfd and re-arms
//! its notifier around every wait — five system calls per `epoll_wait`, even a non-blocking
//! one (measured with `strace -c` under wrk: 467 waits, 934 `epoll_ctl`, 467
//! `timerfd_settime`, 467 `read`). mio's wait is the one call, with Go's millisecond timeout.
//!
//! Under `cfg(loom)` a stand-in with the same contract replaces it: events are pushed by the
//! model (`FakeFd::make_ready` in `loom_hooks.rs`, playing the kernel), a wait blocks on a
//! loom `Condvar` until an event or a notify, and a notify that finds no waiter makes the next
//! wait return at once — the property of the real notify the scheduler relies on.
//!
//! Contract of both: one thread waits at a time (a second concurrent `wait` returns no events
//! at once, without blocking); `notify` is sticky until a wait returns. A wait that returns
//! (even a non-blocking one) may use up a notify meant for a later blocking wait, so a waiter
//! reads the condition a notify announces (shutdown) *after* it became the waiting thread and
//! before it blocks (`abort`): whoever used up the notify returned before that read, and the
//! notify's atomic and the wait lock order the announcement before it.

/// One readiness event: the registration's key and which directions became ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ready {
    pub(crate) key: usize,
    pub(crate) read: bool,
    pub(crate) write: bool,
    /// The peer closed its writing side (`EPOLLRDHUP`, or a hang-up): EOF from now on.
    pub(crate) read_closed: bool,
    /// The connection is gone (`EPOLLHUP`, an error): writes fail from now on.
    pub(crate) write_closed: bool,
}

#[cfg(not(loom))]
mod imp {
    use super::Ready;
    use mio::unix::SourceFd;
    use mio::{Interest, Token};
    use parking_lot::Mutex;
    use std::io;
    use std::time::Duration;

    /// Events taken per wait: Go's `netpoll` reads 128 epoll events per call. More wait in
    /// the kernel for the next call, which comes at once when this one found work.
    const EVENTS_PER_WAIT: usize = 128;
    /// The waker's token: outside the netpoller's keys (`Descs::key` never makes it: it would
    /// need generation and index both at their maximum).
    const WAKER: Token = Token(usize::MAX);

    /// The real poller: a [`mio::Poll`] (epoll on Linux, kqueue on the BSDs and macOS) and its
    /// event buffer, a [`mio::Registry`] for registrations from any thread, and a
    /// [`mio::Waker`] (an eventfd) for `netpollBreak`.
    pub(crate) struct Poller {
        /// Taken with `try_lock` by the one thread that waits: a second thread that wants to
        /// poll while one waits gets no events instead of blocking (Go's `lastpoll` rule keeps
        /// Ms from trying; sysmon and the 61-tick check may).
        poll: Mutex<(mio::Poll, mio::Events)>,
        registry: mio::Registry,
        waker: mio::Waker,
    }

    impl Poller {
        pub(crate) fn new() -> io::Result<Poller> {
            let poll = mio::Poll::new()?;
            let registry = poll.registry().try_clone()?;
            let waker = mio::Waker::new(&registry, WAKER)?;
            Ok(Poller {
                poll: Mutex::new((poll, mio::Events::with_capacity(EVENTS_PER_WAIT))),
                registry,
                waker,
            })
        }

        /// Registers `fd` under `key`, both directions, edge-triggered (mio's only mode on
        /// epoll and kqueue).
        ///
        /// # Safety
        /// `fd` must stay open until [`Poller::delete`] is called for it.
        pub(crate) unsafe fn add(&self, fd: std::os::fd::RawFd, key: usize) -> io::Result<()> {
            debug_assert_ne!(key, WAKER.0, "a descriptor key collides with the waker's");
            self.registry.register(&mut SourceFd(&fd), Token(key), Interest::READABLE | Interest::WRITABLE)
        }

        /// Removes `fd` (before it is closed).
        pub(crate) fn delete(&self, fd: std::os::fd::RawFd) -> io::Result<()> {
            self.registry.deregister(&mut SourceFd(&fd))
        }

        /// Waits up to `timeout` (`None`: until an event or a notify; zero: do not block) and
        /// appends the events to `out`. Returns false without waiting if another thread waits.
        /// `abort` is read once the caller is the waiting thread, just before it blocks: true
        /// returns at once (see the module doc: a notify another poll consumed cannot strand a
        /// waiter whose reason to stop was published before that notify).
        pub(crate) fn wait(
            &self,
            out: &mut Vec<Ready>,
            timeout: Option<Duration>,
            abort: impl FnOnce() -> bool,
        ) -> io::Result<bool> {
            let Some(mut guard) = self.poll.try_lock() else { return Ok(false) };
            if abort() {
                return Ok(true);
            }
            let (poll, events) = &mut *guard;
            // One epoll_wait: mio rounds a sub-millisecond timeout up to 1 ms, as Go's
            // netpoll does; an interrupted wait (EINTR) returns no events.
            match poll.poll(events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(true),
                Err(e) => return Err(e),
            }
            out.extend(events.iter().filter(|e| e.token() != WAKER).map(|e| Ready {
                key: e.token().0,
                read: e.is_readable(),
                write: e.is_writable(),
                // Hang-up and error are final both ways: every operation then reports them.
                read_closed: e.is_read_closed() || e.is_error(),
                write_closed: e.is_write_closed() || e.is_error(),
            }));
            Ok(true)
        }

        /// Go's `netpollBreak`: ends the current wait, or the next one if none is under way
        /// (the eventfd's edge stays queued in the kernel until a wait takes it).
        pub(crate) fn notify(&self) -> io::Result<()> {
            self.waker.wake()
        }
    }
}

#[cfg(loom)]
mod imp {
    use super::Ready;
    use crate::loom::sync::{Condvar, Mutex};
    use std::io;
    use std::time::Duration;

    #[derive(Default)]
    struct State {
        /// Events the model's "kernel" raised and no wait has taken yet.
        events: Vec<Ready>,
        notified: bool,
        waiting: bool,
    }

    /// The loom stand-in (see the module doc).
    #[derive(Default)]
    pub(crate) struct Poller {
        state: Mutex<State>,
        cv: Condvar,
    }

    impl Poller {
        pub(crate) fn new() -> io::Result<Poller> {
            Ok(Poller::default())
        }

        /// # Safety
        /// None here; the signature matches the real poller's.
        pub(crate) unsafe fn add(&self, _fd: std::os::fd::RawFd, _key: usize) -> io::Result<()> {
            Ok(())
        }

        pub(crate) fn delete(&self, _fd: std::os::fd::RawFd) -> io::Result<()> {
            Ok(())
        }

        pub(crate) fn wait(
            &self,
            out: &mut Vec<Ready>,
            timeout: Option<Duration>,
            abort: impl FnOnce() -> bool,
        ) -> io::Result<bool> {
            let mut s = self.state.lock();
            if s.waiting {
                return Ok(false);
            }
            if abort() {
                return Ok(true);
            }
            // loom has no time: a timed wait (models use no timers) is a non-blocking one.
            let block = timeout.is_none();
            s.waiting = true;
            while block && s.events.is_empty() && !s.notified {
                self.cv.wait(&mut s);
            }
            s.waiting = false;
            s.notified = false;
            out.append(&mut s.events);
            Ok(true)
        }

        pub(crate) fn notify(&self) -> io::Result<()> {
            self.state.lock().notified = true;
            self.cv.notify_all();
            Ok(())
        }

        /// The model's kernel: `key` became ready.
        pub(crate) fn raise(&self, ev: Ready) {
            self.state.lock().events.push(ev);
            self.cv.notify_all();
        }
    }
}

pub(crate) use imp::Poller;
