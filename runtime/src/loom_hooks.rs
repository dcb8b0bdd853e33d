//! Internal access for the loom models in `tests/loom_*.rs`. Compiled only under `--cfg loom`;
//! not part of the API.
//!
//! A [`Scheduler`] is a `Shared` with no M threads and no idle Ps: the model's own threads play
//! the Ms. Its Ps are handed to the model ([`P`]) instead of the idle list, so `npidle` stays 0
//! and every `wakep` (after an `inject` or a re-queue) returns at once without starting a thread.
//! Tasks woken from a model thread go to the global queue (no thread here has a runtime
//! context), where [`Scheduler::run_global`] finds them.

use crate::loom::sync::atomic::Ordering::SeqCst;
use crate::sched::context::{enter, Context};
use crate::sched::processor::Processor;
use crate::sched::queue::{Steal, Worker};
use crate::sched::{Config, Shared};
use crate::task::core::allocate;
use crate::task::{JoinHandle, Notified, TaskId};
use std::future::Future;
use std::sync::Arc;

/// A scheduler without Ms (see the module doc).
pub struct Scheduler {
    shared: Arc<Shared>,
}

/// `n` task references to a scheduler (`sched/taskrefs.rs`), for models of the counting
/// protocol itself. Dropping them without [`TaskRefs::release`] leaks them.
pub struct TaskRefs {
    sched: std::ptr::NonNull<Shared>,
    n: usize,
}

// SAFETY: task references may be released from any thread (the counter is atomic).
unsafe impl Send for TaskRefs {}

impl TaskRefs {
    /// `refs_release`: gives the references back, dropping the tasks' strong count of the
    /// scheduler if they were the last.
    pub fn release(self) {
        // SAFETY: acquired by `Scheduler::acquire_refs`, released once (this consumes them).
        unsafe { crate::sched::taskrefs::refs_release(self.sched, self.n) }
    }
}

/// One P, owned by the model thread that plays its M.
pub struct P {
    p: Box<Processor>,
    shared: Arc<Shared>,
}

/// A task's run-queue reference (`Notified`). Dropping it releases the reference.
pub struct Task(Notified);

impl Scheduler {
    /// A scheduler with `procs` Ps, all returned to the caller.
    pub fn new(procs: usize) -> (Scheduler, Vec<P>) {
        let (shared, ps) = Shared::new(Config {
            procs,
            thread_name: "loom-m".to_string(),
            stack_size: None,
            trace: None,
            task_cache: true,
            max_threads: crate::DEFAULT_MAX_THREADS,
            detect_deadlock: false,
        });
        let ps = ps.into_iter().map(|p| P { p, shared: shared.clone() }).collect();
        (Scheduler { shared }, ps)
    }

    /// Creates a task (state `NOTIFIED`, as after `spawn`) without queueing it: the returned
    /// [`Task`] is its run-queue reference.
    pub fn task<F>(&self, future: F) -> (Task, JoinHandle<F::Output>)
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let id = TaskId(self.shared.idgen.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let sched = self.shared.refs_acquire(1);
        let (task, raw) = allocate(future, id, sched, None, std::panic::Location::caller());
        (Task(task), JoinHandle::new(raw))
    }

    /// Creates a task and pushes it on the global queue, as a spawn from outside the runtime.
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (task, handle) = self.task(future);
        self.shared.inject(task.0);
        handle
    }

    /// Pops and runs global-queue tasks until the queue is empty; returns how many ran.
    pub fn run_global(&self) -> usize {
        let mut n = 0;
        while let Steal::Success(t) = self.shared.injector.steal() {
            t.run();
            n += 1;
        }
        n
    }

    /// `PShared::runnext_steal` on P `victim`, of whatever its slot holds now (no back-off).
    pub fn runnext_steal(&self, victim: usize) -> Option<Task> {
        let vp = &self.shared.allp[victim];
        vp.runnext_steal(vp.runnext.load(SeqCst)).map(Task)
    }

    /// Steals one task from P `victim`'s local queue (not its `runnext`).
    pub fn steal_queue(&self, victim: usize) -> Option<Task> {
        let dest = Worker::new_fifo();
        let t = self.shared.allp[victim].stealer.steal_batch_with_limit_and_pop(&dest, 1);
        debug_assert!(dest.pop().is_none());
        match t {
            Steal::Success(t) => Some(Task(t)),
            _ => None,
        }
    }

    /// Tasks not yet freed: each live task cell holds one task reference (`sched/taskrefs.rs`).
    /// Exact only once every [`P`] is dropped (a P's reserve holds references too).
    pub fn live_tasks(&self) -> usize {
        self.shared.task_refs()
    }

    /// `Shared::refs_acquire(n)`: `n` task references, as a P's reserve or a task takes them.
    pub fn acquire_refs(&self, n: usize) -> TaskRefs {
        TaskRefs { sched: self.shared.refs_acquire(n), n }
    }

    /// A probe that says whether the scheduler is still alive (its `Arc` not dropped).
    pub fn alive_probe(&self) -> impl Fn() -> bool + Clone + Send + Sync + 'static {
        let w = Arc::downgrade(&self.shared);
        move || w.strong_count() > 0
    }

    /// Runs `f` inside a runtime context for this scheduler that holds no P (as a `block_on`
    /// thread): a `Sleep` first polled there registers on P 0's heap.
    pub fn enter<R>(&self, f: impl FnOnce() -> R) -> R {
        let cx = Context::new(self.shared.clone(), usize::MAX);
        let _guard = enter(&cx);
        f()
    }

    /// The real `Shared::run_timers_at`: fires P `pid`'s timers due at `now` (runtime
    /// nanoseconds; `u64::MAX` fires every registered timer), so that "due" is deterministic in
    /// a model instead of depending on the real clock. True if any fired.
    pub fn run_timers_at(&self, pid: usize, now: u64) -> bool {
        self.shared.run_timers_at(pid, now)
    }

    /// Registered timers over all Ps (`stats().timers`: each heap's length, under its lock).
    pub fn timers(&self) -> usize {
        self.shared.stats().timers
    }

    /// P `pid`'s `timer0_when` (0: its heap is empty).
    pub fn timer0_when(&self, pid: usize) -> u64 {
        self.shared.allp[pid].timer0_when.load(SeqCst)
    }
}

impl P {
    /// This P's id.
    pub fn id(&self) -> usize {
        self.p.id
    }

    /// `Processor::runqput`; true when stealable work was added and another P could take it.
    pub fn runqput(&mut self, task: Task, next: bool) -> bool {
        self.p.runqput(&self.shared, task.0, next)
    }

    /// `Processor::runqget`: `(task, taken from runnext)`.
    pub fn runqget(&mut self) -> Option<(Task, bool)> {
        self.p.runqget(&self.shared).map(|(t, inherit)| (Task(t), inherit))
    }

    /// Marks this P as held by a running M (`PShared::status`, as `Context::set_p` does), so
    /// thieves back off before taking its `runnext`.
    pub fn set_running(&self) {
        self.shared.allp[self.p.id].status.store(crate::sched::syscall::P_RUNNING, SeqCst);
    }

    /// `Processor::steal_work`: one whole steal pass from this P (its back-off is a yield).
    pub fn steal_work(&mut self) -> Option<Task> {
        self.p.steal_work(&self.shared).map(Task)
    }
}

impl Scheduler {
    /// `(runnext_steals, runnext_backoffs, runnext_steals_early)` from the counters.
    pub fn runnext_counters(&self) -> (u64, u64, u64) {
        let st = self.shared.stats();
        (st.runnext_steals, st.runnext_backoffs, st.runnext_steals_early)
    }
}

impl Task {
    /// The task's address: identifies it without touching it (so a model can tell a task taken
    /// twice before running, and freeing, it twice).
    pub fn addr(&self) -> usize {
        self.0 .0.as_ptr() as usize
    }

    /// Polls the task once (`Notified::run`), consuming the queue reference.
    pub fn run(self) {
        self.0.run()
    }
}

/// A `parallel_for` loop without a runtime, for `tests/loom_par.rs`: the model's threads play
/// the caller and the helper tasks.
#[derive(Clone)]
pub struct ParLoop(Arc<OwnedLoop>);

/// The loop and the closure it points into (dropped together, the loop first).
struct OwnedLoop {
    lp: crate::par::Loop,
    _f: Box<dyn Fn(std::ops::Range<usize>) + Sync + Send>,
}

impl ParLoop {
    /// A loop over `0..len` in chunks of `grain` calling `f`.
    pub fn new(len: usize, grain: usize, f: Box<dyn Fn(std::ops::Range<usize>) + Sync + Send>) -> ParLoop {
        let p: *const (dyn Fn(std::ops::Range<usize>) + Sync + Send) = &*f;
        // SAFETY: only the lifetime is erased; the box lives (at a stable heap address) as long
        // as the loop that points into it.
        let p: crate::par::ErasedFn =
            unsafe { std::mem::transmute(p as *const (dyn Fn(std::ops::Range<usize>) + Sync)) };
        ParLoop(Arc::new(OwnedLoop { lp: crate::par::Loop::new(len, grain, p), _f: f }))
    }
    /// Claims and runs one chunk (as a helper or the caller does); false when none was left.
    pub fn run_one(&self) -> bool {
        self.0.lp.run_one()
    }
    /// The caller's wait for every chunk to finish.
    pub fn wait(&self) {
        self.0.lp.wait()
    }
}

/// A socket stand-in registered with the current runtime's netpoller (`netpoll/sys.rs`'s loom
/// poller): the model plays the kernel with [`FakeFd::make_ready`].
pub struct FakeFd {
    reg: crate::netpoll::registration::Registration,
    /// Bytes "in the socket" (under a lock, as the kernel's socket buffer): the read succeeds
    /// once per `make_ready`.
    data: Arc<crate::loom::sync::Mutex<bool>>,
}

impl FakeFd {
    /// Registers a new stand-in; inside a runtime (a task or `block_on`), like a socket.
    pub fn new() -> std::io::Result<FakeFd> {
        Ok(FakeFd {
            reg: crate::netpoll::registration::Registration::new(-1)?,
            data: Arc::new(crate::loom::sync::Mutex::new(false)),
        })
    }

    /// Reads: completes once data arrived (`make_ready`), parking on the netpoller until then.
    pub async fn read(&self) -> std::io::Result<()> {
        self.reg
            .io(crate::netpoll::desc::Dir::Read, || {
                if std::mem::take(&mut *self.data.lock()) {
                    Ok(())
                } else {
                    Err(std::io::ErrorKind::WouldBlock.into())
                }
            })
            .await
    }

    /// Sets (`Some`) or clears the read deadline, as `TcpStream::set_read_deadline` does: a
    /// read parked on the descriptor wakes and applies it.
    pub fn set_read_deadline(&self, at: Option<std::time::Instant>) {
        self.reg.set_deadline(crate::netpoll::desc::Dir::Read, at);
    }

    /// The kernel's part: data arrives, and the poller reports the edge.
    pub fn make_ready(&self) {
        *self.data.lock() = true;
        let np = self.reg.shared().net.poll.get().expect("registered, so initialised");
        np.poller.raise(crate::netpoll::sys::Ready {
            key: self.reg.key(),
            read: true,
            write: false,
            read_closed: false,
            write_closed: false,
        });
    }
}
