//! Go's `checkdead`: "all goroutines are asleep - deadlock!", for every runtime of the process
//! at once.
//!
//! # The rule
//! Nothing can ever wake the program when all of these hold at once, in **every** runtime of
//! the process that has not finished shutting down (a task of one runtime may await a task of
//! another, or receive on a channel whose sender runs on another: Go has one runtime per
//! process, gmprt may have several, and only all of them together are the program):
//! 1. every P is idle (no M can poll), every run queue and the global queue are empty, and no
//!    runtime is shutting down (its cancelled tasks' drops may close channels or wake tasks);
//! 2. no timer is pending (a sleep, even one that never fires, counts as a way out) and no
//!    task is in `syscall`;
//! 3. every parked task and every `block_on` future waits on a channel, `select` over
//!    channels, a `Mutex`, a `WaitGroup`, a `Once` or a `JoinHandle` — things only gmprt tasks
//!    complete — not on a timer, a socket, an external source (`dump::wait_external`) or a
//!    future gmprt does not know (which anything may wake);
//! 4. every thread in `block_on` is parked.
//!
//! Only a runtime built with the check on reports (its `block_on` panics with the dump of its
//! own tasks; `Runtime::dump` of the others shows theirs), but every runtime counts in the
//! rule, with the check on or off.
//!
//! # Who checks, and why no transition to "all quiet" is missed
//! A `block_on` thread of a runtime with the check on checks after registering itself as
//! parked (its runtime's `dead.parked` and the process's [`CHECKERS_PARKED`], SeqCst) and
//! right before parking, and again whenever it is woken. The last transitions into the rule
//! are an M going idle (`pidleput` making `npidle == procs`, and `stopm` after the M stopped
//! spinning, before it parks), a `block_on` thread of a runtime with the check off parking,
//! and a runtime finishing its shutdown. Each of them, after its own SeqCst update, reads
//! `CHECKERS_PARKED` and, when its runtime reads quiet, wakes every parked checker of every
//! runtime ([`wake_checkers`]). Dekker's pattern on (`npidle`, `nmspinning`, `dead.parked`,
//! `CHECKERS_PARKED`) means that either the checker sees the transition or the thread making
//! it sees the checker parked (a spinner the M sees will itself pass `stopm` later).
//!
//! The check reads every runtime's poll counter before and after its scan and reports only if
//! nothing was polled meanwhile and (1) still holds: nothing ran during the scan, so the
//! reasons it read were stable (no task runs, so no primitive writes them). Per runtime: a
//! poll that starts after the first read changes the count; one that started before it holds
//! its P until it ends, and ends before the first `quiet` can be true, with its wakes queued
//! (which `quiet` sees) or already polled.
//!
//! # What it cannot see
//! Rust lets a plain OS thread hold a channel end, a `Handle` or a waker and use it later
//! (`try_send`, dropping a `Sender`, `Handle::spawn`). Once any thread outside every runtime
//! has used a gmprt primitive (`Mutex::lock_blocking`/`try_lock`, `WaitGroup::wait_blocking`,
//! a blocking `Once`, a channel's `try_send`/`try_recv`/`close`), the check stops reporting
//! for the rest of the process ([`note_outside_use`]): such a thread may hold a mutex or end a
//! wait while every task is parked. A thread that only holds an end (or a `Handle`, or a
//! waker) and uses it later is invisible until it does; if a program keeps one while every
//! task waits, the check would report a deadlock that is not one. Such programs turn the
//! check off with `Builder::detect_deadlock(false)`.
//! Likewise a task whose poll awaited a gmprt primitive and then a foreign future that
//! both returned `Pending` (a hand-written join) carries the primitive's reason.

use crate::dump::{TaskDump, WaitReason};
use crate::sched::Shared;
use crate::task::wait::WaitCell;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, Weak};

/// Set (for good) once a gmprt primitive is used from a plain thread outside every runtime
/// (`Mutex::lock_blocking`/`try_lock`, `WaitGroup::wait_blocking`, a blocking `Once`, a
/// channel's `try_send`/`try_recv`/`close`): such a thread can hold a mutex or end a wait
/// while every task is parked, so from then on the deadlock check never reports (a missed
/// report is better than a false one). Process-wide because primitives belong to no runtime.
static OUTSIDE_USE: AtomicBool = AtomicBool::new(false);

/// Every runtime of the process that has not finished shutting down (`Weak`: one dropped
/// without a shutdown, as loom hooks do, is skipped and pruned, never kept alive).
static LIVE: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// `block_on` threads parked with the check on, in every runtime (the module doc's Dekker
/// pattern: incremented before a checker reads the runtimes, read after a transition).
static CHECKERS_PARKED: AtomicUsize = AtomicUsize::new(0);

/// Records that the calling thread, if it is outside every runtime, uses a gmprt primitive
/// (see [`OUTSIDE_USE`]). One thread-local read; the store happens once.
#[inline]
pub(crate) fn note_outside_use() {
    use std::sync::atomic::Ordering::Relaxed;
    // Relaxed: the flag is sticky and read by the check after the scan; a use racing the very
    // scan that reports is the documented blind spot (a thread gmprt cannot see).
    if !OUTSIDE_USE.load(Relaxed) && crate::sched::context::with_current(|cx| cx.is_none()) {
        OUTSIDE_USE.store(true, Relaxed);
    }
}

/// Adds a new runtime to the ones the check covers. Called once, by `Shared::new`.
pub(crate) fn register(shared: &Arc<Shared>) {
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    live.retain(|w| w.strong_count() > 0);
    live.push(Arc::downgrade(shared));
}

/// The runtimes the check covers now.
fn live() -> Vec<Arc<Shared>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner()).iter().filter_map(Weak::upgrade).collect()
}

/// Wakes every parked `block_on` of every runtime with the check on, so each runs the check
/// again (a spurious wake costs one poll of its future).
fn wake_checkers() {
    for rt in live() {
        if rt.detect_deadlock {
            for b in rt.dead.block_ons.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                b.waker.wake_by_ref();
            }
        }
    }
}

/// A `block_on` call's entry in its runtime's registry (see `DeadState`).
pub(crate) struct BlockOn {
    pub(crate) wait: WaitCell,
    pub(crate) site: &'static Location<'static>,
    /// Set (SeqCst) before the thread parks, cleared when it wakes.
    pub(crate) parked: AtomicBool,
    pub(crate) waker: std::task::Waker,
    /// The thread's parker (the check asks whether a wake-up is pending).
    pub(crate) parker: Arc<crate::park::ThreadParker>,
}

/// Per-runtime state of the deadlock check and the dump.
#[derive(Default)]
pub(crate) struct DeadState {
    /// Live `block_on` calls.
    pub(crate) block_ons: Mutex<Vec<Arc<BlockOn>>>,
    /// How many of them are parked, the check on or off (pairs with `npidle`; module doc).
    pub(crate) parked: AtomicUsize,
    /// Tasks inside `syscall` now.
    pub(crate) in_syscall: AtomicUsize,
}

/// A `block_on` thread's park, between its poll returning `Pending` and its parker: counts it
/// parked, runs the check (check on) or tells the checkers (check off), parks, uncounts it.
/// `Some`: the check found a deadlock, and the thread did not park.
pub(crate) fn park_block_on(shared: &Shared, parker: &crate::park::ThreadParker) -> Option<TaskDump> {
    // SeqCst: pairs with `pidleput`'s increment of `npidle` and the checkers' reads (module doc).
    shared.dead.parked.fetch_add(1, SeqCst);
    let mut dead = None;
    if shared.detect_deadlock {
        CHECKERS_PARKED.fetch_add(1, SeqCst);
        dead = shared.checkdead();
        if dead.is_none() {
            parker.park();
        }
        CHECKERS_PARKED.fetch_sub(1, SeqCst);
    } else {
        // This runtime's last `block_on` parking may complete another runtime's deadlock.
        shared.wake_block_ons_if_dead();
        parker.park();
    }
    shared.dead.parked.fetch_sub(1, SeqCst);
    dead
}

impl Shared {
    /// Takes this runtime out of the check once its shutdown has cancelled every task: a
    /// runtime gone may complete another's deadlock, so the parked checkers look again.
    /// Called at the end of `Shared::shutdown`.
    pub(crate) fn checkdead_forget(&self) {
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|w| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), self));
        // SeqCst: after the shutdown's own SeqCst stores (module doc).
        if !crate::loom::LOOM && CHECKERS_PARKED.load(SeqCst) > 0 {
            wake_checkers();
        }
    }

    /// True while nothing of this runtime runs: every P idle, no queued task, no syscall, no
    /// timer, every `block_on` parked, not shutting down. Spinning Ms are not asked about: an
    /// M polls only while it holds a P, and one that let its P go takes a P back only for
    /// work it finds, which this also rules out. (`pidleput` runs before the M stops
    /// spinning, so waiting for `nmspinning == 0` would miss the wake-up.)
    fn quiet(&self) -> bool {
        let block_ons = self.dead.block_ons.lock().unwrap_or_else(|e| e.into_inner()).len();
        // SeqCst: the same order as `pidleput`'s increment of `npidle` and the parked count
        // (the module doc's Dekker pattern).
        !self.is_shutdown()
            && self.npidle.load(SeqCst) == self.procs()
            && self.dead.in_syscall.load(SeqCst) == 0
            && self.dead.parked.load(SeqCst) == block_ons
            && self.injector.is_empty()
            && self.allp.iter().all(|p| !p.has_work() && p.timer0_when.load(SeqCst) == 0)
    }

    fn polls(&self) -> u64 {
        self.allp.iter().map(|p| p.stats.polls.get()).sum::<u64>() + self.external_stats.polls.get()
    }

    /// Rule 3 for this runtime: every task parked (none running or woken) and every task and
    /// `block_on` future waiting on something only tasks can end. Cheap, without a dump.
    /// (Without it a Batcher's steady state, every P idle while a thousand tasks wait for a
    /// batch, spent 16% of the CPU formatting and sorting dumps nobody read.)
    fn stuck(&self) -> bool {
        use crate::task::state::{NOTIFIED, RUNNING};
        let now = self.now_nanos();
        let some_task_can_go = self.owned.any(|h| {
            let st = h.state.load();
            st.has(RUNNING) || st.has(NOTIFIED) || !WaitReason::decode(&h.wait, now).only_tasks_can_end()
        });
        !some_task_can_go
            && self
                .dead
                .block_ons
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .all(|b| WaitReason::decode(&b.wait, now).only_tasks_can_end())
    }

    /// A wake that reached a `block_on` thread (a task's completion waking its JoinHandle just
    /// before the scan) is progress the scan cannot see in the reasons.
    fn block_on_woken(&self) -> bool {
        self.dead.block_ons.lock().unwrap_or_else(|e| e.into_inner()).iter().any(|b| b.parker.is_notified())
    }

    fn timers_len(&self) -> usize {
        self.allp.iter().map(|p| p.timers.lock().len()).sum()
    }

    /// Go's `checkdead`, run by a `block_on` thread that has marked itself parked (or by
    /// `Handle::deadlocked`): the dump of this runtime's tasks when nothing in the process can
    /// wake them, or `None` (see the module doc for the rules and why a stable reading is a
    /// true one).
    pub(crate) fn checkdead(&self) -> Option<TaskDump> {
        if !self.detect_deadlock || OUTSIDE_USE.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        // This runtime first: a busy program ends here without touching the registry.
        if !self.quiet() {
            return None;
        }
        let rts = live();
        if !rts.iter().any(|r| std::ptr::eq(&**r, self)) {
            return None; // shut down since `quiet` read it
        }
        let before: u64 = rts.iter().map(|r| r.polls()).sum();
        if !rts.iter().all(|r| r.quiet() && r.stuck()) {
            return None;
        }
        let dump = self.dump();
        let stable = rts.iter().all(|r| r.quiet()) && rts.iter().map(|r| r.polls()).sum::<u64>() == before;
        let woken = rts.iter().any(|r| r.block_on_woken());
        let timers = rts.iter().map(|r| r.timers_len()).sum::<usize>();
        (stable && dump.queued_unlisted == 0 && !woken && timers == 0).then_some(dump)
    }

    /// Called after a transition that may complete a deadlock (`pidleput` making `npidle ==
    /// procs`, `stopm` before an M parks after it stopped spinning, a check-off `block_on`
    /// parking): wakes every parked checker of every runtime, only when one is parked and
    /// this runtime reads quiet (every P idle, no spinner), so busy programs do not re-poll
    /// `block_on` futures for nothing.
    pub(crate) fn wake_block_ons_if_dead(&self) {
        // Not under loom: checkers are off there, and the process-wide count may be moved by
        // another test's runtime, which would make a model's execution non-deterministic.
        if crate::loom::LOOM {
            return;
        }
        // SeqCst: after this thread's SeqCst increment of `npidle` / decrement of
        // `nmspinning` / increment of `dead.parked` (Dekker against a checker's increment of
        // `CHECKERS_PARKED` and its reads, module doc). A spinner seen here reaches `stopm`
        // later and calls this again.
        // A task parked on a socket can be woken by the peer: not a deadlock, whatever else
        // holds. Checked here, not only in `checkdead`: a server's Ps all go idle between
        // requests (their Ms block in netpoll), and waking the parked `block_on` each time to
        // run the check was a futex wake and a task scan per request.
        if CHECKERS_PARKED.load(SeqCst) == 0
            || self.npidle.load(SeqCst) != self.procs()
            || self.nmspinning.load(SeqCst) != 0
            || self.netpoll_any_waiters()
        {
            return;
        }
        wake_checkers();
    }
}
