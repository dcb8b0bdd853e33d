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
//! Every parked `block_on` runs Go's `checkdead` over every runtime of the process, with the
//! wait reasons recorded here: the rules, who checks and why no transition is missed, and what
//! the check cannot see are in `checkdead.rs`. [`WaitReason::only_tasks_can_end`] is its rule
//! 3; a [`Deadlock`] is its report.

use crate::task::wait::{self, WaitCell};
use crate::task::TaskId;
use std::fmt;
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
                due_in: (aux != wait::AUX_MAX).then(|| Duration::from_nanos(aux.saturating_sub(now_ns))),
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
                id: Some(h.id()),
                site: crate::task::site::describe(h.site()),
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
}
