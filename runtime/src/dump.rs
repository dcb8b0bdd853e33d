//! What is every task waiting on? `Runtime::dump` (Go's goroutine dump) and the deadlock
//! check (Go's `checkdead`: "all goroutines are asleep - deadlock!").
//!
//! # The dump
//! A [`TaskDump`] lists every task that has parked at least once and not finished (the
//! owned-task list, walked under its shard locks), each `block_on` future, and how many
//! tasks wait in run queues without having parked yet. Each entry has the task's id, its
//! spawn site (`#[track_caller]` on `spawn`/`go`), its state and its [`WaitReason`], which
//! the gmprt primitive it parked in recorded (`task/wait.rs`). A dump taken while tasks run
//! is a snapshot: each line is one task's state at some moment during the walk (Go stops the
//! world for its dump; gmprt does not, so two lines need not be from the same instant).
//!
//! # The deadlock check
//! Nothing can ever wake the program when all of these hold at once:
//! 1. every P is idle (no M can poll), every run queue and the global queue are empty;
//! 2. no timer is pending (a sleep, even one that never fires, counts as a way out) and no
//!    task is in `syscall`;
//! 3. every parked task and every `block_on` future waits on a channel, `select` over
//!    channels, a `Mutex`, a `WaitGroup`, a `Once` or a `JoinHandle` — things only gmprt tasks
//!    complete — not on a timer, an external source ([`wait_external`]) or a future gmprt does
//!    not know (which anything may wake);
//! 4. every thread in `block_on` is parked.
//!
//! Who checks: a `block_on` thread, after registering itself as parked (SeqCst) and right
//! before parking, and again whenever it is woken. An M that goes idle (`pidleput` making
//! `npidle == procs`, and `stopm` after the M stopped spinning, before it parks) reads the
//! parked `block_on` count, `npidle` and `nmspinning` after its own SeqCst updates of them and,
//! when every P is idle and nobody spins, wakes those threads. Dekker's pattern on (`npidle`,
//! `nmspinning`, parked count) means that either the `block_on` thread sees the scheduler
//! quiet or the last M to go quiet sees it parked: the last transition to "all idle" is never
//! missed (a spinner the M sees will itself pass `stopm` later). The check reads the poll counters before and after its scan and
//! reports only if nothing was polled meanwhile and (1) still holds: nothing ran during the
//! scan, so the reasons it read were stable (no task runs, so no primitive writes them).
//!
//! # What it cannot see
//! Rust lets a plain OS thread hold a channel end, a `Handle` or a waker and use it later
//! (`try_send`, dropping a `Sender`, `Handle::spawn`). Once any thread outside every runtime
//! has used a gmprt primitive (`Mutex::lock_blocking`/`try_lock`, `WaitGroup::wait_blocking`,
//! a blocking `Once`, a channel's `try_send`/`try_recv`/`close`), the check stops reporting
//! for the rest of the process (`note_outside_use`): such a thread may hold a mutex or end a
//! wait while every task is parked. A thread that only holds an end (or a `Handle`, or a
//! waker) and uses it later is invisible until it does; if a program keeps one while every
//! task waits, the check would report a deadlock that is not one. Such programs turn the
//! check off with `Builder::detect_deadlock(false)`.
//! Likewise a task whose poll awaited a gmprt primitive and then a foreign future that
//! both returned `Pending` (a hand-written join) carries the primitive's reason.

use crate::task::wait::{self, WaitCell};
use crate::task::TaskId;
use std::fmt;
use std::panic::Location;
use std::sync::Mutex;
use std::time::Duration;

/// What a task waits on, as the primitive it parked in recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum WaitReason {
    /// Not waiting (running, or runnable and never parked).
    Nothing,
    /// A future gmprt does not know: anything may wake it.
    Unknown,
    /// `recv` on a channel.
    ChanRecv {
        /// The channel's id.
        chan: u64,
    },
    /// `send` on a channel.
    ChanSend {
        /// The channel's id.
        chan: u64,
    },
    /// `select!` over channels.
    Select {
        /// Number of cases.
        cases: u64,
    },
    /// `Mutex::lock` behind another holder.
    Mutex {
        /// The mutex's address (stable while anyone waits on it).
        addr: u64,
    },
    /// `WaitGroup::wait`.
    WaitGroup {
        /// The group's count when the task parked.
        count: u64,
    },
    /// `Once` while another task runs the initialiser.
    Once,
    /// A `JoinHandle`.
    Join {
        /// The task joined.
        task: TaskId,
    },
    /// A timer: `sleep`, `timeout`, `interval`.
    Timer {
        /// Time left when the dump was taken (zero if due); `None`: never fires.
        due_in: Option<Duration>,
    },
    /// A socket, through the netpoller (Go's "IO wait"): the peer or the kernel can end it.
    Net {
        /// The descriptor.
        fd: u64,
        /// Waiting to write (or connect); else to read (or accept).
        write: bool,
    },
    /// An event source outside the runtime ([`wait_external`]).
    External {
        /// What the source is ("Batcher batch").
        what: &'static str,
        /// The caller's id (a batch or item number).
        id: u64,
    },
}

impl WaitReason {
    /// True when only gmprt tasks can end this wait (the deadlock check's rule 3).
    pub fn only_tasks_can_end(&self) -> bool {
        matches!(
            self,
            WaitReason::ChanRecv { .. }
                | WaitReason::ChanSend { .. }
                | WaitReason::Select { .. }
                | WaitReason::Mutex { .. }
                | WaitReason::WaitGroup { .. }
                | WaitReason::Once
                | WaitReason::Join { .. }
        )
    }

    pub(crate) fn decode(cell: &WaitCell, now_ns: u64) -> Self {
        let (kind, id, aux) = cell.load();
        match kind {
            wait::UNKNOWN => WaitReason::Unknown,
            wait::CHAN_RECV => WaitReason::ChanRecv { chan: id },
            wait::CHAN_SEND => WaitReason::ChanSend { chan: id },
            wait::SELECT => WaitReason::Select { cases: id },
            wait::MUTEX => WaitReason::Mutex { addr: id },
            wait::WAITGROUP => WaitReason::WaitGroup { count: aux },
            wait::ONCE => WaitReason::Once,
            wait::JOIN => WaitReason::Join { task: TaskId(id) },
            wait::TIMER => WaitReason::Timer {
                due_in: (aux != u64::MAX).then(|| Duration::from_nanos(aux.saturating_sub(now_ns))),
            },
            wait::EXTERNAL => WaitReason::External { what: external_name(id), id: aux },
            wait::NET => WaitReason::Net { fd: id, write: aux == 1 },
            wait::NONE => WaitReason::Nothing,
            _ => unreachable!("wait.rs defines no kind {kind}"),
        }
    }
}

impl fmt::Display for WaitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitReason::Nothing => write!(f, "nothing"),
            WaitReason::Unknown => write!(f, "a future gmprt does not know"),
            WaitReason::ChanRecv { chan } => write!(f, "chan receive on chan #{chan}"),
            WaitReason::ChanSend { chan } => write!(f, "chan send on chan #{chan}"),
            WaitReason::Select { cases } => write!(f, "select over {cases} channel cases"),
            WaitReason::Mutex { addr } => write!(f, "Mutex at {addr:#x}, held by another task"),
            WaitReason::WaitGroup { count } => write!(f, "WaitGroup at {count}"),
            WaitReason::Once => write!(f, "Once, another task runs the initialiser"),
            WaitReason::Join { task } => write!(f, "JoinHandle of {task}"),
            WaitReason::Timer { due_in: Some(d) } => write!(f, "timer due in {d:.1?}"),
            WaitReason::Timer { due_in: None } => write!(f, "timer that never fires"),
            WaitReason::External { what, id } => write!(f, "{what} #{id} (outside the runtime)"),
            WaitReason::Net { fd, write } => {
                write!(f, "IO wait: {} on socket fd {fd} (netpoller)", if *write { "write" } else { "read" })
            }
        }
    }
}

/// A task's scheduling state in a dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum TaskState {
    /// Being polled by an M.
    Running,
    /// Woken, waiting in a run queue.
    Runnable,
    /// Parked until something wakes it.
    Parked,
}

/// One line of a dump.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TaskInfo {
    /// The task's id; `None` for a `block_on` future.
    pub id: Option<TaskId>,
    /// Where it was spawned (`file:line:col`), or where `block_on` was called.
    pub site: String,
    /// Its state.
    pub state: TaskState,
    /// What it waits on (meaningful when parked).
    pub wait: WaitReason,
}

impl fmt::Display for TaskInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.id {
            Some(id) => write!(f, "{id}")?,
            None => write!(f, "block_on")?,
        }
        let state = match self.state {
            TaskState::Running => "running",
            TaskState::Runnable => "runnable",
            TaskState::Parked => "parked",
        };
        write!(f, " [{state}]: spawned at {}", self.site)?;
        if self.state == TaskState::Parked {
            write!(f, "\n    waiting on {}", self.wait)?;
        }
        Ok(())
    }
}

/// Every task a dump can see (see the module doc for what "see" means).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TaskDump {
    /// Tasks that have parked at least once and not finished, then `block_on` futures.
    pub tasks: Vec<TaskInfo>,
    /// Tasks in run queues that have never parked (listed by count only).
    pub queued_unlisted: usize,
}

impl fmt::Display for TaskDump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for t in &self.tasks {
            writeln!(f, "{t}\n")?;
        }
        if self.queued_unlisted > 0 {
            writeln!(f, "{} more tasks runnable in run queues (never parked)", self.queued_unlisted)?;
        }
        Ok(())
    }
}

/// `block_on` found that nothing can ever wake the program (Go's `checkdead`).
#[derive(Debug, Clone)]
pub struct Deadlock {
    /// Every task and `block_on` future, as the check saw them.
    pub dump: TaskDump,
}

impl fmt::Display for Deadlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "all goroutines are asleep - deadlock!\n")?;
        write!(f, "{}", self.dump)?;
        write!(
            f,
            "(gmprt cannot see plain OS threads: if one holds a channel end or a Handle it will use \
             later, turn this check off with Builder::detect_deadlock(false))"
        )
    }
}

impl std::error::Error for Deadlock {}

/// Set (for good) once a gmprt primitive is used from a plain thread outside every runtime
/// (`Mutex::lock_blocking`/`try_lock`, `WaitGroup::wait_blocking`, a blocking `Once`, a
/// channel's `try_send`/`try_recv`/`close`): such a thread can hold a mutex or end a wait
/// while every task is parked, so from then on the deadlock check never reports (a missed
/// report is better than a false one). Process-wide because primitives belong to no runtime.
static OUTSIDE_USE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

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

#[cfg(all(unix, not(loom)))]
pub use crate::sigquit::sigquit_dumps;

/// Names of external wait sources; a [`WaitReason::External`] stores an index into it.
static EXTERNAL_NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

fn external_name(index: u64) -> &'static str {
    let names = EXTERNAL_NAMES.lock().unwrap_or_else(|e| e.into_inner());
    names.get(index as usize).copied().unwrap_or("an external source")
}

/// An event source outside the runtime, named once ([`ExternalWait::named`]) and then
/// recorded with two stores per park ([`ExternalWait::waiting`]).
///
/// ```
/// use gmprt_runtime::dump::ExternalWait;
/// let batch = ExternalWait::named("Batcher batch");
/// assert_eq!(batch, ExternalWait::named("Batcher batch")); // same name, same source
/// batch.waiting(7); // outside a task: does nothing
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExternalWait(u32);

impl ExternalWait {
    /// The source called `what` (interned under a lock: call once and keep the value).
    pub fn named(what: &'static str) -> Self {
        let mut names = EXTERNAL_NAMES.lock().unwrap_or_else(|e| e.into_inner());
        let i = match names.iter().position(|n| *n == what) {
            Some(i) => i,
            None => {
                names.push(what);
                names.len() - 1
            }
        };
        ExternalWait(i as u32)
    }

    /// Records that the task being polled waits on this source (`id`: the caller's number,
    /// e.g. a batch). Call right before returning `Pending`; a no-op outside a gmprt poll.
    pub fn waiting(self, id: u64) {
        wait::set(wait::EXTERNAL, self.0 as u64, id);
    }
}

/// Records that the task being polled waits on `what` outside the runtime (a Batcher batch,
/// a device): a dump names it and the deadlock check knows that something outside can wake
/// the task. Interns `what` under a lock; hot paths keep an [`ExternalWait`].
pub fn wait_external(what: &'static str, id: u64) {
    ExternalWait::named(what).waiting(id);
}

/// A `block_on` call's entry in its runtime's registry (see `DeadState`).
pub(crate) struct BlockOn {
    pub(crate) wait: WaitCell,
    pub(crate) site: &'static Location<'static>,
    /// Set (SeqCst) before the thread parks, cleared when it wakes.
    pub(crate) parked: std::sync::atomic::AtomicBool,
    pub(crate) waker: std::task::Waker,
    /// The thread's parker (the check asks whether a wake-up is pending).
    pub(crate) parker: std::sync::Arc<crate::park::ThreadParker>,
}

/// Per-runtime state of the deadlock check and the dump.
#[derive(Default)]
pub(crate) struct DeadState {
    /// Live `block_on` calls.
    pub(crate) block_ons: Mutex<Vec<std::sync::Arc<BlockOn>>>,
    /// How many of them are parked (pairs with `npidle`; see the module doc).
    pub(crate) parked: std::sync::atomic::AtomicUsize,
    /// Tasks inside `syscall` now.
    pub(crate) in_syscall: std::sync::atomic::AtomicUsize,
}

impl crate::sched::Shared {
    /// A dump of every task the runtime can see (see the module doc). Any thread may call it.
    pub(crate) fn dump(&self) -> TaskDump {
        use crate::task::state::{NOTIFIED, RUNNING};
        let now = self.now_nanos();
        let mut tasks = Vec::new();
        self.owned.for_each(|h| {
            let st = h.state.load();
            let state = if st.has(RUNNING) {
                TaskState::Running
            } else if st.has(NOTIFIED) {
                TaskState::Runnable
            } else {
                TaskState::Parked
            };
            tasks.push(TaskInfo {
                id: Some(h.id),
                site: h.spawned_at.to_string(),
                state,
                wait: WaitReason::decode(&h.wait, now),
            });
        });
        tasks.sort_by_key(|t| t.id);
        for b in self.dead.block_ons.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            // Acquire: pairs with the Release store of `parked` in `block_on`.
            let parked = b.parked.load(std::sync::atomic::Ordering::Acquire);
            tasks.push(TaskInfo {
                id: None,
                site: b.site.to_string(),
                state: if parked { TaskState::Parked } else { TaskState::Running },
                wait: WaitReason::decode(&b.wait, now),
            });
        }
        let queued_unlisted = self.allp.iter().map(|p| p.queued()).sum::<usize>() + self.injector.len();
        // Owned tasks that are runnable sit in those queues too; count only the others.
        let listed_runnable =
            tasks.iter().filter(|t| t.id.is_some() && t.state == TaskState::Runnable).count();
        TaskDump { tasks, queued_unlisted: queued_unlisted.saturating_sub(listed_runnable) }
    }

    /// True while nothing runs: every P idle, no queued task, no syscall, no timer. Spinning
    /// Ms are not asked about: an M polls only while it holds a P, and one that let its P go
    /// takes a P back only for work it finds, which this also rules out. (`pidleput` runs
    /// before the M stops spinning, so waiting for `nmspinning == 0` would miss the wake-up.)
    fn quiet(&self, parked_block_ons: usize) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        // SeqCst: the same order as `pidleput`'s increment of `npidle` and the parked count
        // (the module doc's Dekker pattern).
        self.npidle.load(SeqCst) == self.procs()
            && self.dead.in_syscall.load(SeqCst) == 0
            && self.dead.parked.load(SeqCst) == parked_block_ons
            && self.injector.is_empty()
            && self.allp.iter().all(|p| !p.has_work() && p.timer0_when.load(SeqCst) == 0)
    }

    fn polls(&self) -> u64 {
        self.allp.iter().map(|p| p.stats.polls.get()).sum::<u64>() + self.external_stats.polls.get()
    }

    /// Go's `checkdead`, run by a `block_on` thread that has marked itself parked: the dump
    /// of a program nothing can wake, or `None` (see the module doc for the rules and why a
    /// stable reading is a true one).
    pub(crate) fn checkdead(&self) -> Option<TaskDump> {
        if !self.detect_deadlock
            || self.is_shutdown()
            || OUTSIDE_USE.load(std::sync::atomic::Ordering::Relaxed)
        {
            return None;
        }
        let n_block_ons = self.dead.block_ons.lock().unwrap_or_else(|e| e.into_inner()).len();
        // A poll that starts after this read changes the count; one that started before it
        // holds its P until it ends, and ends before the first `quiet` can be true, with its
        // wakes queued (which `quiet` sees) or already polled.
        let before = self.polls();
        if !self.quiet(n_block_ons) {
            return None;
        }
        // A cheap necessary condition first: one task that runs, or waits on something outside
        // the runtime (a timer, a Batcher, a device), ends the check without building a dump.
        // (Without it a Batcher's steady state, every P idle while a thousand tasks wait for
        // a batch, spent 16% of the CPU formatting and sorting dumps nobody read.)
        let now = self.now_nanos();
        let some_task_can_go = self.owned.any(|h| {
            use crate::task::state::{NOTIFIED, RUNNING};
            let st = h.state.load();
            st.has(RUNNING) || st.has(NOTIFIED) || !WaitReason::decode(&h.wait, now).only_tasks_can_end()
        });
        if some_task_can_go {
            return None;
        }
        let dump = self.dump();
        let stuck = dump.tasks.iter().all(|t| t.state == TaskState::Parked && t.wait.only_tasks_can_end());
        let stable = self.quiet(n_block_ons) && self.polls() == before && dump.queued_unlisted == 0;
        // A wake that reached a `block_on` thread (a task's completion waking its JoinHandle
        // just before the scan) is progress the scan cannot see in the reasons.
        let woken = self
            .dead
            .block_ons
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|b| b.parker.is_notified());
        (stuck && stable && !woken && self.timers_len() == 0).then_some(dump)
    }

    fn timers_len(&self) -> usize {
        self.allp.iter().map(|p| p.timers.lock().len()).sum()
    }

    /// Called by `pidleput` after it made `npidle == procs` and by `stopm` before an M parks
    /// (after it stopped spinning): wakes the parked `block_on` threads so they run the check,
    /// only when the check is on, one is parked and the scheduler reads quiet (every P idle,
    /// no spinner), so busy programs do not re-poll `block_on` futures for nothing.
    pub(crate) fn wake_block_ons_if_dead(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        // SeqCst: after this M's SeqCst increment of `npidle` / decrement of `nmspinning`
        // (Dekker against `block_on`'s increment of `parked` and its reads, module doc). A
        // spinner seen here reaches `stopm` later and calls this again.
        // A task parked on a socket can be woken by the peer: not a deadlock, whatever else
        // holds. Checked here, not only in `checkdead`: a server's Ps all go idle between
        // requests (their Ms block in netpoll), and waking the parked `block_on` each time to
        // run the check was a futex wake and a task scan per request.
        if !self.detect_deadlock
            || self.dead.parked.load(SeqCst) == 0
            || self.npidle.load(SeqCst) != self.procs()
            || self.nmspinning.load(SeqCst) != 0
            || self.netpoll_any_waiters()
        {
            return;
        }
        for b in self.dead.block_ons.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            b.waker.wake_by_ref();
        }
    }
}
