//! The OS readiness API under the netpoller: Go's `netpoll_epoll.go` / `netpoll_kqueue.go`.
//!
//! Normally this is the [`polling`] crate (epoll on Linux, kqueue on the BSDs and macOS, IOCP
//! on Windows): descriptors are registered once, **edge-triggered**, for both directions (Go's
//! `EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET`), and [`Poller::notify`] is Go's `netpollBreak`
//! (an eventfd or pipe write that ends the current or the next wait).
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
}

#[cfg(not(loom))]
mod imp {
    use super::Ready;
    use parking_lot::Mutex;
    use std::io;
    use std::time::Duration;

    /// Events taken per wait: Go's `netpoll` reads 128 epoll events per call. More wait in
    /// the kernel for the next call, which comes at once when this one found work.
    const EVENTS_PER_WAIT: usize = 128;

    /// The real poller: [`polling::Poller`] and its event buffer.
    pub(crate) struct Poller {
        poller: polling::Poller,
        /// The event buffer of the one thread that waits. `try_lock`: a second thread that
        /// wants to poll while one waits gets no events instead of blocking (Go's `lastpoll`
        /// rule keeps Ms from trying; sysmon may).
        events: Mutex<polling::Events>,
    }

    impl Poller {
        pub(crate) fn new() -> io::Result<Poller> {
            let poller = polling::Poller::new()?;
            if !poller.supports_edge() {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "this platform's poller has no edge-triggered mode, which gmprt's netpoller needs",
                ));
            }
            let cap = std::num::NonZeroUsize::new(EVENTS_PER_WAIT).expect("non-zero");
            Ok(Poller { poller, events: Mutex::new(polling::Events::with_capacity(cap)) })
        }

        /// Registers `fd` under `key`, both directions, edge-triggered.
        ///
        /// # Safety
        /// `fd` must stay open until [`Poller::delete`] is called for it.
        pub(crate) unsafe fn add(&self, fd: std::os::fd::RawFd, key: usize) -> io::Result<()> {
            // SAFETY: the caller keeps `fd` open until `delete` (the `polling` contract).
            unsafe { self.poller.add_with_mode(fd, polling::Event::all(key), polling::PollMode::Edge) }
        }

        /// Removes `fd` (before it is closed).
        pub(crate) fn delete(&self, fd: std::os::fd::RawFd) -> io::Result<()> {
            // SAFETY: `fd` is open (the caller deletes before closing): borrowing it for the
            // duration of the call is sound.
            let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
            self.poller.delete(fd)
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
            let Some(mut events) = self.events.try_lock() else { return Ok(false) };
            if abort() {
                return Ok(true);
            }
            events.clear();
            self.poller.wait(&mut events, timeout)?;
            out.extend(events.iter().map(|e| Ready { key: e.key, read: e.readable, write: e.writable }));
            Ok(true)
        }

        /// Go's `netpollBreak`: ends the current wait, or the next one if none is under way.
        pub(crate) fn notify(&self) -> io::Result<()> {
            self.poller.notify()
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
