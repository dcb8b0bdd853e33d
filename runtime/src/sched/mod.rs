//! The scheduler: Go's G/M/P in Rust.
//!
//! | Go (`proc.go`)            | here                                           |
//! |---------------------------|------------------------------------------------|
//! | `schedt` (`sched`)        | [`Shared`]                                     |
//! | `p`, `allp`               | `processor::Processor` + `processor::PShared`  |
//! | `m`, `mstart`, `schedule` | `worker::m_main`                               |
//! | `findRunnable`            | `worker::find_runnable`                        |
//! | `runqput/runqget/runqsteal` | `Processor::{runqput, runqget, steal_work}`  |
//! | `globrunqget`, `sched.runq` | `Processor::globrunqget`, `Shared::injector` |
//! | `wakep/startm/stopm`      | `idle.rs`                                      |
//! | `pidleput/pidleget`       | `idle.rs`                                      |
//! | `ready`, `newproc`        | [`Shared::schedule`], [`Shared::spawn`]        |
//! | `injectglist`, `startIdle` | `injectglist.rs`, [`crate::injectglist`]; without `startIdle`: [`crate::wake_all`] |
//!
//! Files: `processor.rs` (P, run queues, stealing), `queue.rs` (crossbeam / loom queues),
//! `idle.rs` (the park/unpark protocol and its proof sketch), `injectglist.rs` (a list of wakes at once), `worker.rs` (the M loop),
//! `context.rs` (thread-local current M/P), `clock.rs` (the timer clock and its coarse gate), `stats.rs` (counters), `quiesce.rs` (hooks run
//! when nothing is runnable), `shutdown.rs` (stopping the Ms and cancelling what is left).

pub(crate) mod clock;
pub(crate) mod context;
pub(crate) mod idle;
pub(crate) mod injectglist;
pub(crate) mod processor;
pub(crate) mod queue;
pub(crate) mod quiesce;
pub(crate) mod shutdown;
pub(crate) mod stats;
pub(crate) mod syscall;
// sysmon does not run under loom (see runtime.rs), so most of it is dead code there.
#[cfg_attr(loom, allow(dead_code, unused_imports))]
pub(crate) mod sysmon;
pub(crate) mod taskrefs;
pub(crate) mod timers;
pub(crate) mod worker;

use self::context::with_current;
use self::idle::{Sched, WakeFrom};
use self::processor::{PShared, Processor, RandomOrder};
use self::queue::Injector;
use self::stats::{PStats, RuntimeStats};
use crate::loom::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use crate::loom::sync::{Condvar, Mutex};
use crate::task::owned::OwnedTasks;
use crate::task::{JoinHandle, Notified, TaskId};
use crate::trace::hooks::RtTrace;
use crossbeam_utils::CachePadded;
use std::future::Future;
use std::sync::Arc;

/// What `Builder` decided.
pub(crate) struct Config {
    pub(crate) procs: usize,
    pub(crate) thread_name: String,
    pub(crate) stack_size: Option<usize>,
    /// Tracing state, when tracing (`trace/hooks.rs`).
    pub(crate) trace: Option<RtTrace>,
    /// Per-P free lists of task cells (`task/cache.rs`).
    pub(crate) task_cache: bool,
    /// Cap on M threads (Go's `SetMaxThreads`).
    pub(crate) max_threads: usize,
    /// Whether `block_on` runs the deadlock check (`checkdead.rs`).
    pub(crate) detect_deadlock: bool,
}

/// Everything the Ms of one runtime share (Go's `sched` plus `allp`).
pub(crate) struct Shared {
    /// Ourselves, set by `Arc::new_cyclic` in `new` (see `arc`).
    me: std::sync::Weak<Shared>,
    /// Per-P shared halves, indexed by P id. Cache-padded: each is written by its own M.
    pub(crate) allp: Box<[CachePadded<PShared>]>,
    /// The global run queue.
    pub(crate) injector: Injector<Notified>,
    /// Idle Ps and Ms (Go's `sched.lock` and what it protects). Padded, like every field
    /// below that Ms write while the runtime runs, so that those writes never invalidate the
    /// line of a field every M reads on every spawn and steal (`allp`, `shutdown`, `order`,
    /// `trace`): the `shared_fields_that_ms_write_have_their_own_lines` test checks it.
    pub(crate) sched: CachePadded<Mutex<Sched>>,
    pub(crate) npidle: CachePadded<AtomicUsize>,
    pub(crate) nmspinning: CachePadded<AtomicUsize>,
    /// A `startm` for queued work left its P on the idle list to an M that holds none and is
    /// not parked (idle.rs, step 5), and since then no P has left the idle list and no M has
    /// parked: that M's look is still to come, so `wakep` for queued work returns at once
    /// (step 6). Set and cleared under `sched`; read by `wakep` only when it would otherwise
    /// take `sched` (an idle P and no spinner), so the spawn path reads its line only then.
    pub(crate) wake_deferred: CachePadded<AtomicBool>,
    /// Parked Ms (for schedtrace's `idlethreads`); written at every park and unpark.
    pub(crate) nmidle: CachePadded<AtomicUsize>,
    /// Live M threads.
    pub(crate) mcount: AtomicUsize,
    /// `sched.syscall_waiters.len()`, readable without the lock (checked every round).
    pub(crate) nsyscall_waiters: CachePadded<AtomicUsize>,
    shutdown: AtomicBool,
    /// Next task id (Ps take batches of 16, so every 16th spawn on each P writes it).
    pub(crate) idgen: CachePadded<AtomicU64>,
    /// Task references held by tasks and Ps' reserves; while it is above 0 the tasks hold
    /// one strong count of this `Arc` (protocol: `taskrefs.rs`). Its own line: Ps write it
    /// once per [`taskrefs::REF_BATCH`] spawns or frees.
    pub(crate) task_refs: CachePadded<AtomicUsize>,
    /// Tasks that have parked at least once and not yet completed.
    pub(crate) owned: OwnedTasks,
    /// Counters of events that happen off any P.
    pub(crate) external_stats: CachePadded<PStats>,
    /// Victim order for stealing.
    pub(crate) order: RandomOrder,
    /// Tracing state: `None` unless tracing; fixed at start-up, so every event point is one
    /// predictable branch on it (`trace/hooks.rs`).
    pub(crate) trace: Option<RtTrace>,
    pub(crate) thread_name: String,
    pub(crate) stack_size: Option<usize>,
    /// The runtime's timer clock and its coarse gate (`clock.rs`).
    pub(crate) clock: clock::Clock,
    /// sysmon's sleep state and wake-up (`sysmon.rs`).
    pub(crate) monitor: CachePadded<(Mutex<sysmon::SysmonCtl>, Condvar)>,
    /// The thread cap (Go's `SetMaxThreads`), see `syscall.rs`.
    pub(crate) max_threads: usize,
    /// Whether `block_on` runs the deadlock check, and its state (`checkdead.rs`).
    pub(crate) detect_deadlock: bool,
    pub(crate) dead: crate::checkdead::DeadState,
    /// The netpoller (`netpoll/`): created by the first socket, polled by the Ms.
    pub(crate) net: crate::netpoll::NetPollState,
    /// Hooks run when the runtime goes quiescent (`quiesce.rs`).
    pub(crate) quiesce: quiesce::Hooks,
}

/// The result of `Shared::spawn`: a handle, or the refusal with a handle already cancelled.
pub(crate) type SpawnResult<T> = Result<JoinHandle<T>, (Refused, JoinHandle<T>)>;

/// Where a spawn could not go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    Shutdown,
}

impl Shared {
    #[allow(clippy::vec_box)] // Ps are boxed: they move between Ms by pointer.
    /// Builds the scheduler inside its `Arc` (`Arc::new_cyclic`, so it can hand out counts of
    /// itself to new Ms: [`Shared::arc`]), with its `procs` Ps, which the caller puts idle.
    pub(crate) fn new(cfg: Config) -> (Arc<Shared>, Vec<Box<Processor>>) {
        let Config { procs, thread_name, stack_size, trace, task_cache, max_threads, detect_deadlock } = cfg;
        // One clock: the timers' epoch is the trace's.
        let epoch = trace.as_ref().map_or_else(std::time::Instant::now, |t| t.rec.epoch());
        let mut ps = Vec::with_capacity(procs);
        let mut allp = Vec::with_capacity(procs);
        for id in 0..procs {
            let (p, s) = Processor::new(id, task_cache);
            ps.push(Box::new(p));
            allp.push(CachePadded::new(s));
        }
        let shared = Arc::new_cyclic(|me| Shared {
            me: me.clone(),
            allp: allp.into_boxed_slice(),
            injector: Injector::new(),
            sched: CachePadded::new(Mutex::new(Sched {
                pidle: Vec::new(),
                midle: Vec::new(),
                syscall_waiters: Vec::new(),
                threads: Vec::new(),
                mnext: 0,
                newm_warned: false,
            })),
            npidle: CachePadded::new(AtomicUsize::new(0)),
            nmspinning: CachePadded::new(AtomicUsize::new(0)),
            wake_deferred: CachePadded::new(AtomicBool::new(false)),
            nmidle: CachePadded::new(AtomicUsize::new(0)),
            mcount: AtomicUsize::new(0),
            nsyscall_waiters: CachePadded::new(AtomicUsize::new(0)),
            shutdown: AtomicBool::new(false),
            idgen: CachePadded::new(AtomicU64::new(1)),
            task_refs: CachePadded::new(AtomicUsize::new(0)),
            owned: OwnedTasks::new(procs),
            external_stats: CachePadded::new(PStats::default()),
            order: RandomOrder::new(procs),
            trace,
            thread_name,
            stack_size,
            clock: clock::Clock::new(epoch),
            monitor: CachePadded::new((Mutex::new(sysmon::SysmonCtl::default()), Condvar::new())),
            max_threads,
            detect_deadlock,
            dead: Default::default(),
            net: crate::netpoll::NetPollState::new(),
            quiesce: quiesce::Hooks::new(),
        });
        crate::checkdead::register(&shared);
        (shared, ps)
    }

    /// Number of Ps (GOMAXPROCS).
    #[inline]
    pub(crate) fn procs(&self) -> usize {
        self.allp.len()
    }

    #[inline]
    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Acquire)
    }

    /// Go's `newm`: starts an M thread (holding `p`, or parking at once when `None`).
    /// Must hold `sched`.
    pub(crate) fn newm(
        self: &Shared,
        s: &mut crate::loom::sync::MutexGuard<'_, Sched>,
        p: Option<Box<Processor>>,
        spinning: bool,
    ) -> std::io::Result<()> {
        // On failure the P (if any) goes back to the idle list and a spinning count is undone,
        // so no P and no wakeup is lost: the work it was meant for stays queued for other Ms
        // (`stopm` looks once more under `sched` before parking).
        let give_back =
            |this: &Shared, s: &mut crate::loom::sync::MutexGuard<'_, Sched>, p: Option<Box<Processor>>| {
                if let Some(p) = p {
                    this.pidleput(s, p);
                }
                if spinning {
                    this.nmspinning.fetch_sub(1, SeqCst);
                }
            };
        // `threads` holds every M started (Ms exit only at shutdown): exact under `sched`.
        if s.threads.len() >= self.max_threads {
            give_back(self, s, p);
            return Err(std::io::Error::other(format!(
                "thread limit {} reached (Builder::max_threads, like Go's SetMaxThreads)",
                self.max_threads
            )));
        }
        let me = self.arc();
        let mid = s.mnext;
        let mut b = crate::loom::thread::Builder::new().name(format!("{}-{}", self.thread_name, mid));
        if let Some(sz) = self.stack_size {
            b = b.stack_size(sz);
        }
        // The P travels into the thread through a slot so that a spawn failure gives it back.
        let slot = std::sync::Arc::new(std::sync::Mutex::new(Some((p, spinning))));
        let slot2 = slot.clone();
        match b.spawn(move || {
            let (p, spinning) = slot2.lock().unwrap().take().unwrap();
            me.mcount.fetch_add(1, SeqCst);
            worker::m_main(me.clone(), mid, p, spinning);
            me.mcount.fetch_sub(1, SeqCst);
        }) {
            Ok(h) => {
                s.mnext += 1;
                s.threads.push(h);
                Ok(())
            }
            Err(e) => {
                if let Some((p, _)) = slot.lock().unwrap().take() {
                    give_back(self, s, p);
                }
                Err(e)
            }
        }
    }

    /// A count of ourselves, for a new M or a list wake. Any holder of `&self` may call it: a
    /// `&Shared` is only reachable through a live count (the `Runtime`'s, a task's, an M's), so
    /// the upgrade cannot fail.
    pub(crate) fn arc(&self) -> Arc<Shared> {
        self.me.upgrade().expect("a Shared is reachable only while a count of it is held")
    }

    /// Go's `newproc`: creates a task for `future` and queues it. From a task running on this
    /// runtime it goes to the current P's `runnext` (inheriting the time slice); from anywhere
    /// else to the global queue. After shutdown the task is cancelled at once (its handle
    /// yields `Cancelled`) and `Err(Refused::Shutdown)` says so.
    #[track_caller]
    pub(crate) fn spawn<F>(self: &Arc<Self>, future: F) -> SpawnResult<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.spawn_to(future, true)
    }

    /// `spawn`, choosing where a spawn from a task goes: `runnext` (`next`, Go's `newproc`) or
    /// the tail of the local queue with a `wakep` — for a task meant to run on *another* P
    /// while the spawner keeps computing (`parallel_for`'s helpers): in an empty `runnext` it
    /// would wait for the spawner's poll to end, since that placement wakes no M (see
    /// "runnext" in `processor.rs`).
    #[track_caller]
    pub(crate) fn spawn_to<F>(self: &Arc<Self>, future: F, next: bool) -> SpawnResult<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.spawn_at(future, next, std::panic::Location::caller())
    }

    /// `spawn_to` with the spawn site given: for a caller that reaches the scheduler through a
    /// closure (`with_current`), where `#[track_caller]` cannot follow.
    pub(crate) fn spawn_at<F>(
        self: &Arc<Self>,
        future: F,
        next: bool,
        site: &'static std::panic::Location<'static>,
    ) -> SpawnResult<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        if self.is_shutdown() {
            let (task, raw) = crate::task::core::allocate(
                future,
                TaskId(self.idgen.fetch_add(1, Relaxed)),
                self.refs_acquire(1),
                None,
                site,
            );
            self.external_stats.spawned.bump_shared();
            task.shutdown();
            return Err((Refused::Shutdown, JoinHandle::new(raw)));
        }
        let handle = with_current(|cx| {
            if let Some(cx) = cx.filter(|cx| std::ptr::eq(&*cx.shared, &**self)) {
                if let Ok(mut guard) = cx.p.try_borrow_mut() {
                    if let Some(p) = guard.as_mut() {
                        let id = p.next_goid(self);
                        let sched = p.refs.take(self);
                        let (task, raw) =
                            crate::task::core::allocate(future, id, sched, Some(&mut p.cache), site);
                        self.allp[p.id].stats.spawned.bump();
                        self.trace_ready(task.header());
                        let stealable = p.runqput(self, task, next);
                        drop(guard);
                        if stealable {
                            // On our own P: this M reaches it (idle.rs, step 1).
                            self.wakep_local();
                        }
                        return Ok(JoinHandle::new(raw));
                    }
                }
            }
            Err(future)
        });
        match handle {
            Ok(h) => Ok(h),
            Err(future) => {
                let id = TaskId(self.idgen.fetch_add(1, Relaxed));
                let (task, raw) = crate::task::core::allocate(future, id, self.refs_acquire(1), None, site);
                self.external_stats.spawned.bump_shared();
                self.trace_ready(task.header());
                self.inject(task);
                Ok(JoinHandle::new(raw))
            }
        }
    }

    /// Go's `ready`: queues a woken task. On an M of this runtime holding a P it goes to that
    /// P (`runnext`, or the queue tail when `is_yield`: a task that woke itself must let the
    /// others run); elsewhere to the global queue.
    pub(crate) fn schedule(&self, task: Notified, is_yield: bool) {
        self.trace_ready(task.header());
        let task = with_current(|cx| {
            if let Some(cx) = cx.filter(|cx| std::ptr::eq(&*cx.shared, self)) {
                if let Ok(mut guard) = cx.p.try_borrow_mut() {
                    if let Some(p) = guard.as_mut() {
                        let next = !is_yield && !cx.wake_to_tail.get();
                        // On this awake M's own P, so its wake is never needed for liveness,
                        // only for parallelism (idle.rs, step 1: `wakep_local`). A task its own
                        // poll re-queues (a yield, a spent budget) gets none when alone on the P:
                        // it is the M's next task, which a woken M could only take from the M
                        // about to run it.
                        let wake = !is_yield
                            || !p.runq.is_empty()
                            || !self.allp[p.id].runnext.load(Relaxed).is_null();
                        let stealable = p.runqput(self, task, next);
                        drop(guard);
                        if stealable && wake {
                            self.wakep_local();
                        }
                        return None;
                    }
                }
            }
            Some(task)
        });
        if let Some(task) = task {
            self.inject(task);
        }
    }

    /// Pushes onto the global queue and wakes an M. After shutdown the pusher drains the queue
    /// itself (see `shutdown`), so a wake racing shutdown never strands a task; a pusher that
    /// is already draining this runtime further up its own stack leaves the task to that loop
    /// (see `drain_injector`: bounded stack).
    pub(crate) fn inject(&self, task: Notified) {
        self.injector.push(task);
        // Pairs with the fence in `shutdown`: either we see the flag, or shutdown's drain sees
        // our push. (wakep has its own fence for the idle protocol.)
        fence(SeqCst);
        if self.shutdown.load(SeqCst) {
            self.drain_injector();
            return;
        }
        self.wakep(WakeFrom::Inject);
    }

    /// The id of the P of this runtime that the calling thread holds, or `None` (a plain
    /// thread, `block_on`, another runtime's M, an M between Ps or in a `syscall`).
    #[inline]
    pub(crate) fn current_pid(&self) -> Option<usize> {
        with_current(|cx| match cx {
            Some(cx) if std::ptr::eq(&*cx.shared, self) && cx.pid.get() != usize::MAX => Some(cx.pid.get()),
            _ => None,
        })
    }

    /// Bumps a counter in the calling M's P block, or in the shared block off-P.
    #[inline]
    fn bump_local(&self, which: impl Fn(&PStats) -> &stats::Counter) {
        match self.current_pid().map(|pid| &self.allp[pid]) {
            // We hold this P: single writer.
            Some(p) => which(&p.stats).bump(),
            None => which(&self.external_stats).bump_shared(),
        }
    }

    pub(crate) fn stats_completed(&self) {
        self.bump_local(|s| &s.completed);
    }

    pub(crate) fn stats_cancelled(&self) {
        self.bump_local(|s| &s.cancelled);
    }

    /// Every counter block: each P's, then the shared one (events off any P).
    pub(crate) fn stat_blocks(&self) -> impl Iterator<Item = &PStats> + Clone {
        self.allp.iter().map(|p| &*p.stats).chain([&*self.external_stats])
    }

    /// Builds a `RuntimeStats` snapshot.
    pub(crate) fn stats(&self) -> RuntimeStats {
        let mut st = RuntimeStats { procs: self.procs(), ..Default::default() };
        st.local_queue_lens = self.allp.iter().map(|p| p.queued()).collect();
        self.stat_blocks().for_each(|b| st.add(b));
        st.set_latencies(self.stat_blocks());
        st.threads = self.mcount.load(Relaxed);
        st.global_queue_len = self.injector.len();
        st.parked_tasks = self.owned.len();
        st.timers = self.allp.iter().map(|p| p.timers.lock().len()).sum();
        st.idle_procs = self.npidle.load(Relaxed);
        st.net_fds = self.net.poll.get().map_or(0, |np| np.live());
        st.net_waiters = self.net.nwaiters.load(Relaxed);
        st
    }
}

#[cfg(all(test, not(loom)))]
mod layout_tests {
    use super::Shared;
    use std::mem::offset_of;

    /// The 128-byte block a field starts in: `CachePadded`'s unit on x86-64 (a line and the
    /// neighbour the adjacent-line prefetcher pulls with it).
    fn block(offset: usize) -> usize {
        offset / 128
    }

    /// Issue 25, point 5: fields that Ms write while the runtime runs never share a 128-byte
    /// block with a field every M reads on every spawn, steal or idle round, so no such write
    /// invalidates a line the other Ms keep reading. Field order in `Shared` is the compiler's;
    /// this holds whatever order it picks, because each written field is `CachePadded`.
    #[test]
    fn shared_fields_that_ms_write_have_their_own_lines() {
        let read_by_every_m = [
            ("allp", offset_of!(Shared, allp)),
            ("shutdown", offset_of!(Shared, shutdown)),
            ("order", offset_of!(Shared, order)),
            ("trace", offset_of!(Shared, trace)),
            ("owned", offset_of!(Shared, owned)),
            ("clock", offset_of!(Shared, clock)),
            ("net.poll", offset_of!(Shared, net.poll)),
        ];
        let written_while_running = [
            ("sched (its lock)", offset_of!(Shared, sched)),
            ("npidle", offset_of!(Shared, npidle)),
            ("nmspinning", offset_of!(Shared, nmspinning)),
            ("wake_deferred", offset_of!(Shared, wake_deferred)),
            ("nmidle", offset_of!(Shared, nmidle)),
            ("nsyscall_waiters", offset_of!(Shared, nsyscall_waiters)),
            ("idgen", offset_of!(Shared, idgen)),
            ("task_refs", offset_of!(Shared, task_refs)),
            ("external_stats", offset_of!(Shared, external_stats)),
            ("monitor", offset_of!(Shared, monitor)),
            ("net.nwaiters", offset_of!(Shared, net.nwaiters)),
            ("net.lastpoll", offset_of!(Shared, net.lastpoll)),
        ];
        for (w, wo) in written_while_running {
            for (r, ro) in read_by_every_m {
                assert_ne!(
                    block(wo),
                    block(ro),
                    "`{w}` (offset {wo}) shares a 128-byte block with `{r}` (offset {ro})"
                );
            }
            for (w2, wo2) in written_while_running {
                if w2 != w {
                    assert_ne!(block(wo), block(wo2), "`{w}` and `{w2}` share a 128-byte block");
                }
            }
        }
    }
}
