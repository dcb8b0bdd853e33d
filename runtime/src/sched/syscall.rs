//! Blocking calls: Go's `entersyscall` / `exitsyscall` / `handoffp`, as [`syscall`].
//!
//! # Protocol
//! 1. **Enter** (the M running a task, holding P): if a hand-off might need a new thread and
//!    the thread cap is reached, refuse with [`ThreadLimit`] (the closure comes back, nothing
//!    runs). Otherwise park the P in its `syscall_slot`, mark it `SYSCALL`, note the time, and
//!    run the blocking closure **without a P**.
//! 2. **Retake** (sysmon, `sysmon.rs`): a P that has sat in `SYSCALL` for a sysmon tick
//!    (≥ 20 µs) while it has queued work, or while no other P is idle or spinning, or for more
//!    than 10 ms in any case, is taken out of its slot and handed off (`handoffp`): to a new or
//!    idle M if it has work or timers, else to the idle list.
//! 3. **Exit**: take the P back from the slot if it is still there (the fast path: short calls
//!    never cost a hand-off); else take any idle P; else wait, as a *syscall waiter*, until an M
//!    releases a P (`pidleput` hands it to the first waiter before the idle list). Ms that are
//!    busy check `nsyscall_waiters` at every scheduling round and hand their P to a waiter
//!    (then park themselves), so a waiter is served within one poll even when no P ever goes
//!    idle — the analogue of Go putting the returning goroutine on the global queue.
//!
//! The slot's mutex decides races between exit and retake: exactly one of them takes the P.
//!
//! Difference from Go: Go's `exitsyscall` slow path puts the goroutine on the global queue and
//! parks the M, because a goroutine's stack can move to another M. A future being polled is on
//! this M's stack, so the M itself waits for a P and then resumes the poll.

use super::context::with_current;
use super::idle::MPark;
use super::Shared;
use crate::loom::sync::atomic::Ordering::SeqCst;
use std::fmt;
use std::sync::Arc;

/// P status values (`PShared::status`).
pub(crate) const P_IDLE: u8 = 0;
pub(crate) const P_RUNNING: u8 = 1;
pub(crate) const P_SYSCALL: u8 = 2;

/// The thread cap (Go's `SetMaxThreads`, default 10,000) would be exceeded by the hand-off a
/// blocking call may need. The closure was not run; it is returned in `f`.
pub struct ThreadLimit<F> {
    /// The cap in force (`Builder::max_threads`).
    pub limit: usize,
    /// The closure, not run.
    pub f: F,
}

impl<F> fmt::Debug for ThreadLimit<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadLimit").field("limit", &self.limit).finish_non_exhaustive()
    }
}

impl<F> fmt::Display for ThreadLimit<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "gmprt: {} OS threads in use (the limit, like Go's SetMaxThreads); a blocking call now could \
             strand its P. Raise Builder::max_threads or bound the number of concurrent blocking calls",
            self.limit
        )
    }
}

impl<F> std::error::Error for ThreadLimit<F> {}

/// Runs a blocking call (file I/O, `std::thread::sleep`, a C library) from a task without
/// stopping other tasks: the M gives up its P for the duration, and if the call lasts longer
/// than a sysmon tick another M takes the P over (Go's `entersyscall`/`exitsyscall`). Off an M
/// (a plain thread, `block_on`) it just runs `f`.
///
/// ```
/// use gmprt_runtime::{syscall, Runtime};
/// let rt = Runtime::builder().procs(1).build().unwrap();
/// let n = rt.block_on(rt.spawn(async {
///     syscall(|| std::fs::read_to_string("/proc/self/status").map(|s| s.len())).unwrap()
/// }));
/// assert!(n.unwrap().unwrap() > 0);
/// ```
///
/// # Errors
/// [`ThreadLimit`] when the thread cap is reached and no idle M could take the P over; the
/// closure is handed back unrun.
pub fn syscall<F, T>(f: F) -> Result<T, ThreadLimit<F>>
where
    F: FnOnce() -> T,
{
    let entered = with_current(|cx| {
        let cx = cx?;
        let shared = &cx.shared;
        let pid = cx.pid.get();
        if pid == usize::MAX {
            return None; // block_on thread: no P to give up
        }
        // A hand-off may need a thread: refuse if none is idle and the cap is reached.
        if shared.nmidle.load(SeqCst) == 0 && shared.mcount.load(SeqCst) >= shared.max_threads {
            return Some(Err(shared.max_threads));
        }
        // Counted before the P can be handed off (SeqCst: the deadlock check reads it with the
        // idle counters, checkdead.rs): a task in a syscall is in no queue, so the check must see
        // the count whenever its P is idle.
        shared.dead.in_syscall.fetch_add(1, SeqCst);
        shared.trace_syscall_enter(pid, cx.mid);
        let p = cx.take_p().expect("an M with a pid holds its P");
        let ps = &shared.allp[pid];
        ps.syscall_when.store(shared.now_nanos(), SeqCst);
        *ps.syscall_slot.lock() = Some(p);
        ps.status.store(P_SYSCALL, SeqCst);
        shared.external_stats.syscalls.bump_shared();
        shared.sysmon_wake();
        Some(Ok((shared.clone(), pid)))
    });
    match entered {
        None => Ok(f()),
        Some(Err(limit)) => Err(ThreadLimit { limit, f }),
        Some(Ok((shared, pid))) => {
            // Run the call without a P; a panic still gives the P back.
            struct Exit(Arc<Shared>, usize);
            impl Drop for Exit {
                fn drop(&mut self) {
                    self.0.exitsyscall(self.1);
                    self.0.dead.in_syscall.fetch_sub(1, SeqCst);
                }
            }
            let _exit = Exit(shared, pid);
            Ok(f())
        }
    }
}

impl Shared {
    /// Go's `exitsyscall`: the M that entered a syscall on P `pid` gets a P back (see the
    /// module doc, step 3). At shutdown it may return without one.
    fn exitsyscall(&self, pid: usize) {
        let ps = &self.allp[pid];
        let mine = ps.syscall_slot.lock().take();
        let p = match mine {
            Some(p) => Some(p),
            None => self.acquirep_after_syscall(),
        };
        with_current(|cx| {
            let cx = cx.expect("exitsyscall on an M");
            if let Some(p) = p {
                self.allp[p.id].status.store(P_RUNNING, SeqCst);
                cx.set_p(Some(p));
            }
        });
        self.trace_syscall_exit();
    }

    /// Slow path of `exitsyscall`: an idle P, or wait for one as a syscall waiter.
    fn acquirep_after_syscall(&self) -> Option<Box<super::processor::Processor>> {
        let park = {
            let mut s = self.sched.lock();
            if let Some(p) = self.pidleget(&mut s) {
                return Some(p);
            }
            if self.is_shutdown() {
                return None;
            }
            let park = Arc::new(MPark::default());
            s.syscall_waiters.push(park.clone());
            self.nsyscall_waiters.fetch_add(1, SeqCst);
            park
        };
        let mut slot = park.slot.lock();
        loop {
            if let Some(p) = slot.p.take() {
                return Some(p);
            }
            if slot.shutdown {
                return None;
            }
            park.cv.wait(&mut slot);
        }
    }

    /// Go's `handoffp`: a P retaken from a syscall goes to an M if it has something to do
    /// (queued work, the global queue, timers, or the network to poll as the last P), else to
    /// the idle list. Must hold `sched`.
    #[cfg_attr(loom, allow(dead_code))] // only sysmon, which loom builds do not run, calls it
    pub(crate) fn handoffp(
        &self,
        s: crate::loom::sync::MutexGuard<'_, super::idle::Sched>,
        p: Box<super::processor::Processor>,
    ) {
        let ps = &self.allp[p.id];
        ps.status.store(P_IDLE, SeqCst);
        // Go's last case: if this would be the last P to go idle while tasks wait on sockets
        // and no M is blocked in netpoll, an M must take it and reach the idle path, where it
        // polls (netpoll/mod.rs).
        let last_for_net = self.npidle.load(SeqCst) + 1 == self.procs()
            && self.netpoll_any_waiters()
            && self.net.lastpoll.load(SeqCst) != 0;
        let busy =
            ps.has_work() || !self.injector.is_empty() || ps.timer0_when.load(SeqCst) != 0 || last_for_net;
        if busy && !self.is_shutdown() {
            self.startm(s, p, false, super::idle::WakeFrom::Other);
        } else {
            let mut s = s;
            self.pidleput(&mut s, p);
        }
    }
}
