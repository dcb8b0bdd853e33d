//! Shutdown: stop every M, then cancel every task left, exactly once and on a bounded stack.
//!
//! `Runtime`'s drop (or `shutdown`) runs [`Shared::begin_shutdown`], which never blocks: it sets
//! the flag and wakes every M, the one blocked in `netpoll` and sysmon. Then
//! [`Shared::finish_shutdown`] joins the Ms and cancels what is left: the Ps' queues, the global
//! queue ([`Shared::drain_injector`]), the parked tasks of the owned list, and the sockets still
//! registered. The numbered protocol and why each task is dropped once is on
//! [`Shared::shutdown`].

use super::processor::Processor;
use super::queue::Steal;
use super::Shared;
use crate::loom::sync::atomic::{fence, Ordering::SeqCst};

crate::loom::thread_local! {
    /// The runtimes (their `Shared`'s address) whose global queue this thread is draining at
    /// shutdown; see `Shared::drain_injector`. Usually empty; one entry per runtime at most.
    static DRAINING: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Shared {
    /// Cancels every task in the global queue; only after shutdown set the flag.
    ///
    /// Bounded stack: cancelling a task drops its future, which can wake another task (its
    /// parent awaiting its `JoinHandle`, the next stage of a channel pipeline), whose wake
    /// comes back here through `inject`. Were that nested call to drain too, a chain of a
    /// million parked tasks would nest a million frames and overflow the stack. So a thread
    /// that is already draining this runtime only pushes (see `inject`) and returns: the loop
    /// below, further up the same stack, pops what it pushed, since it runs until the queue is
    /// empty. Nesting is thus at most one level per runtime (a wake into *another* shut-down
    /// runtime drains that one, whose own nested wakes only push).
    pub(crate) fn drain_injector(&self) {
        let me = self as *const Shared as usize;
        debug_assert!(self.is_shutdown(), "drain_injector before shutdown");
        if DRAINING.with(|d| d.borrow().contains(&me)) {
            return; // an outer frame of this thread is draining; it will pop what we pushed
        }
        DRAINING.with(|d| d.borrow_mut().push(me));
        // Popped on the way out, unwinding included, so a panicking destructor does not leave
        // this thread believing it drains (later wakes would then strand their tasks).
        struct Done(usize);
        impl Drop for Done {
            fn drop(&mut self) {
                DRAINING.with(|d| d.borrow_mut().retain(|&r| r != self.0));
            }
        }
        let _done = Done(me);
        loop {
            match self.injector.steal() {
                Steal::Success(t) => t.shutdown(),
                Steal::Empty => break,
                Steal::Retry => continue,
            }
        }
    }

    /// Shuts the scheduler down (Runtime's drop). The numbered protocol:
    /// 1. set the flag, fence (pairs with `inject`), wake every parked M and the monitor;
    /// 2. join every M thread (running polls finish first: futures are never preempted);
    /// 3. drain every P's `runnext` and queue and the global queue, cancelling those tasks;
    /// 4. close the owned-task list and cancel every parked task;
    /// 5. close every socket still registered (their polls fail; waiters off the runtime wake);
    /// 6. leave the process-wide deadlock check (`checkdead.rs`), waking its parked checkers.
    ///
    /// After 2 no M polls anything, so 3 and 4 own every unfinished future; each is dropped
    /// exactly once because cancelling goes through the state word (`transition_to_shutdown`).
    /// A cancelled future's drop may wake other tasks; those wakes land in the global queue and
    /// are cancelled by the drain loop already on the stack, never by a nested one, so the stack
    /// stays bounded whatever the shape of the task graph (`drain_injector`).
    pub(crate) fn shutdown(&self) {
        if self.begin_shutdown() {
            self.finish_shutdown();
        }
    }

    /// The first half of `shutdown`, which never blocks: marks the runtime shut down and wakes
    /// every M, the one in `netpoll` and sysmon, so each sees it and exits. Returns true for
    /// the one call that did it (it must then run `finish_shutdown`, or hand it to a thread
    /// that will: `Drop for Runtime` on an M).
    pub(crate) fn begin_shutdown(&self) -> bool {
        if self.shutdown.swap(true, SeqCst) {
            return false;
        }
        fence(SeqCst);
        self.wake_all_for_shutdown();
        // The M blocked in `netpoll` (if any) is in no idle list: break it (netpoll/mod.rs).
        self.netpoll_break();
        {
            let (m, cv) = &*self.monitor;
            m.lock().stop = true;
            cv.notify_all();
        }
        true
    }

    /// The second half of `shutdown`, after `begin_shutdown` returned true: joins every M
    /// (but the calling thread, if it is one), then drops the tasks left and closes the
    /// sockets. Blocks until the Ms have exited.
    pub(crate) fn finish_shutdown(&self) {
        debug_assert!(self.is_shutdown(), "finish_shutdown before begin_shutdown");
        let me = crate::loom::thread::current().id();
        loop {
            let hs = std::mem::take(&mut self.sched.lock().threads);
            if hs.is_empty() {
                break;
            }
            for h in hs {
                if h.thread().id() == me {
                    continue;
                }
                let _ = h.join();
            }
            // Ms that were between `stopm` checks may have parked after our wake-up round.
            self.wake_all_for_shutdown();
            self.netpoll_break();
        }
        let ps: Vec<Box<Processor>> = std::mem::take(&mut self.sched.lock().pidle);
        self.npidle.store(0, SeqCst);
        for mut p in ps {
            for t in p.drain(self) {
                t.shutdown();
            }
        }
        self.drain_injector();
        for t in self.owned.close_and_drain() {
            crate::task::core::shutdown_task(t);
        }
        // Last, sockets that outlive their tasks (moved out of `block_on`, polled by another
        // executor) fail from now on, and their waiters are woken to see it.
        self.netpoll_shutdown();
        // No task of ours is left to wake anyone: the deadlock check stops counting us.
        self.checkdead_forget();
    }
}
