//! `Runtime` and `Handle`: `block_on`, spawning, stats, shutdown; the `Builder` that starts a
//! runtime is the `builder` module's.

use crate::park::ThreadParker;
use crate::sched::context::{enter, with_current, Context};
use crate::sched::stats::RuntimeStats;
use crate::sched::{Refused, Shared};
use crate::task::JoinHandle;
use crate::trace::Recorder;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

mod builder;
pub use builder::{BuildError, Builder, DEFAULT_MAX_THREADS};

/// Why a spawn was refused (see [`try_spawn`](crate::try_spawn)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpawnError {
    /// Not inside a gmprt runtime (no task, no `block_on` on this thread).
    NoRuntime,
    /// The runtime is shutting down or shut down. The future was dropped.
    Shutdown,
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::NoRuntime => f.write_str(
                "not inside a gmprt runtime: call spawn from a task or from Runtime::block_on, or use Runtime::spawn / Handle::spawn",
            ),
            SpawnError::Shutdown => f.write_str("the gmprt runtime has shut down; the task was not started"),
        }
    }
}

impl std::error::Error for SpawnError {}

/// A G/M/P runtime: `procs` Ps, M threads that run tasks while holding a P, and a global queue.
/// Dropping it shuts it down: Ms stop, unfinished futures are dropped exactly once, threads
/// are joined — by the dropping thread, or, when it is dropped inside a task (on an M, where
/// a join would block), by a detached helper thread while the drop returns at once.
pub struct Runtime {
    shared: Arc<Shared>,
    monitor: Option<std::thread::JoinHandle<()>>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime").field("procs", &self.shared.procs()).finish()
    }
}

impl Runtime {
    /// A runtime with default settings (see [`Builder::new`]). Panics with the reason if it
    /// cannot start (e.g. `GMPRT_MAXPROCS=0`); use [`Runtime::builder`] to handle that.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Runtime {
        Builder::new().build().unwrap_or_else(|e| panic!("gmprt: cannot start the runtime: {e}"))
    }

    /// A [`Builder`].
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// Number of Ps.
    pub fn procs(&self) -> usize {
        self.shared.procs()
    }

    /// A cloneable handle for spawning from other threads.
    pub fn handle(&self) -> Handle {
        Handle { shared: self.shared.clone() }
    }

    /// Spawns a task (from outside the runtime it goes to the global queue).
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle().spawn(future)
    }

    /// Runs `future` to completion on the calling thread (which is not an M: it holds no P)
    /// while the Ms run spawned tasks. `gmprt::spawn` works inside it.
    ///
    /// Panics if called from inside a task of any gmprt runtime: that would block an M.
    ///
    /// When nothing can ever wake the program (every task and `block_on` future waits on
    /// another, see [`crate::dump`]) it panics with Go's "all goroutines are asleep -
    /// deadlock!" and a task dump instead of hanging; [`Runtime::try_block_on`] returns that
    /// as an error, and `Builder::detect_deadlock(false)` turns the check off.
    #[track_caller]
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        match self.try_block_on(future) {
            Ok(v) => v,
            Err(d) => panic!("{d}"),
        }
    }

    /// `block_on` that returns the deadlock report as an error instead of panicking.
    ///
    /// ```
    /// use gmprt_runtime::{chan::chan, Runtime};
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let (_tx, rx) = chan::<u32>(0);
    /// // Nobody will ever send: Go would say "all goroutines are asleep - deadlock!".
    /// let err = rt.try_block_on(async move { rx.recv().await }).unwrap_err();
    /// assert!(err.to_string().starts_with("all goroutines are asleep - deadlock!"));
    /// ```
    #[track_caller]
    pub fn try_block_on<F: Future>(&self, future: F) -> Result<F::Output, crate::dump::Deadlock> {
        assert_not_on_m("Runtime::block_on");
        let cx = Context::new(self.shared.clone(), usize::MAX);
        let _g = enter(&cx);
        let (parker, waker) = ThreadParker::current_waker();
        let entry = Arc::new(crate::checkdead::BlockOn {
            wait: crate::task::wait::WaitCell::new(),
            site: std::panic::Location::caller(),
            parked: std::sync::atomic::AtomicBool::new(false),
            waker,
            parker: parker.clone(),
        });
        /// Takes the entry out of the registry however `block_on` ends (a panic included).
        struct Registered<'a>(&'a Shared, Arc<crate::checkdead::BlockOn>);
        impl Drop for Registered<'_> {
            fn drop(&mut self) {
                let mut list = self.0.dead.block_ons.lock().unwrap_or_else(|e| e.into_inner());
                list.retain(|b| !Arc::ptr_eq(b, &self.1));
            }
        }
        self.shared.dead.block_ons.lock().unwrap_or_else(|e| e.into_inner()).push(entry.clone());
        let _reg = Registered(&self.shared, entry.clone());
        let mut dead = None;
        match crate::park::block_on_checked(future, &parker, &entry, &self.shared, &mut dead) {
            Some(v) => Ok(v),
            None => Err(crate::dump::Deadlock { dump: dead.unwrap_or_default() }),
        }
    }

    /// What every task is doing and waiting on (Go's goroutine dump; see [`crate::dump`]).
    ///
    /// ```
    /// use gmprt_runtime::{chan::chan, dump::{TaskState, WaitReason}, Runtime};
    /// let rt = Runtime::builder().procs(1).build().unwrap();
    /// let (tx, rx) = chan::<u32>(0);
    /// let (ready_tx, ready_rx) = chan::<()>(1);
    /// let h = rt.spawn(async move {
    ///     ready_tx.send(()).await.unwrap();
    ///     rx.recv().await
    /// });
    /// rt.block_on(async { ready_rx.recv().await });
    /// // The task parks on `rx` right after its send; wait until the dump shows it.
    /// let d = loop {
    ///     let d = rt.dump();
    ///     if d.tasks.iter().any(|t| t.state == TaskState::Parked) { break d; }
    ///     std::thread::yield_now();
    /// };
    /// let t = d.tasks.iter().find(|t| t.id == Some(h.id())).unwrap();
    /// assert!(matches!(t.wait, WaitReason::ChanRecv { .. }));
    /// drop(tx);
    /// assert_eq!(rt.block_on(h).unwrap(), None);
    /// ```
    pub fn dump(&self) -> crate::dump::TaskDump {
        self.shared.dump()
    }

    /// A snapshot of the scheduler's counters.
    pub fn stats(&self) -> RuntimeStats {
        self.shared.stats()
    }
}

impl Drop for Runtime {
    /// Shuts the runtime down and joins its threads — except on an M (inside a task of any
    /// gmprt runtime, this one included), where joining would block that M: there the drop
    /// signals every thread to exit (`begin_shutdown`, which never blocks), hands the join
    /// and the rest of the shutdown to a detached helper thread, and returns at once. It
    /// never panics (tokio panics there; a panic in a drop that runs while a task unwinds
    /// would abort the process). `tests/runtime_drop_in_task.rs` checks both cases.
    fn drop(&mut self) {
        if !on_m() {
            self.shared.shutdown();
            finish(&self.shared, self.monitor.take());
            return;
        }
        if !self.shared.begin_shutdown() {
            return; // another drop or shutdown is finishing it
        }
        let (shared, monitor) = (self.shared.clone(), self.monitor.take());
        let helper =
            std::thread::Builder::new().name(format!("{}-drop", shared.thread_name)).spawn(move || {
                shared.finish_shutdown();
                finish(&shared, monitor);
            });
        // Without a thread (out of resources) the Ms were still told to exit and will; only
        // the tasks left over are not dropped (they leak, as a detached runtime's would).
        drop(helper);

        /// After every M has exited: join sysmon, then the trace is complete.
        fn finish(shared: &Shared, monitor: Option<std::thread::JoinHandle<()>>) {
            if let Some(m) = monitor {
                let _ = m.join();
            }
            if let Some(t) = &shared.trace {
                t.finish();
            }
        }
    }
}

/// True if the current thread is an M (it holds a P context with an M id).
fn on_m() -> bool {
    with_current(|cx| cx.is_some_and(|cx| cx.mid != usize::MAX))
}

/// Panics if the current thread is an M (it holds a P context with an M id).
pub(crate) fn assert_not_on_m(what: &str) {
    assert!(
        !on_m(),
        "{what} was called from inside a gmprt task; it would block an M. Use `.await` inside tasks \
         (or run the blocking work on a plain thread)"
    );
}

/// A cloneable reference to a runtime, for spawning from any thread. It does not keep the
/// runtime running: after the `Runtime` is dropped, spawns are refused.
#[derive(Clone)]
pub struct Handle {
    shared: Arc<Shared>,
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle").field("procs", &self.shared.procs()).finish()
    }
}

impl Handle {
    /// The handle of the runtime this thread is in (a task or `block_on`), if any.
    pub fn try_current() -> Option<Handle> {
        with_current(|cx| cx.map(|cx| Handle { shared: cx.shared.clone() }))
    }

    /// Registers `hook` to run when this runtime goes *quiescent*: nothing queued and no M
    /// running on a P (each P idle, or handed to an M whose thread has not run yet) — no task
    /// runnable and none running. The M that finds it so on its way to sleep, while
    /// [`QuiescentHook::pending`](crate::QuiescentHook::pending) says there is work, takes a
    /// P back and calls [`QuiescentHook::run`](crate::QuiescentHook::run) there (protocol
    /// and proof: the `sched::quiesce` module). The Batcher uses it to close a batch the
    /// moment every task that could add an item is parked on it. Dropping the returned
    /// registration unregisters the hook.
    pub fn on_quiescent(&self, hook: Arc<dyn crate::QuiescentHook>) -> crate::QuiescentRegistration {
        self.shared.register_quiescent(hook)
    }

    /// Spawns a task. After shutdown the task is not run: its handle yields
    /// `Err(JoinError::Cancelled)` (use [`Handle::try_spawn`] to be told instead).
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self.shared.spawn(future) {
            Ok(h) | Err((_, h)) => h,
        }
    }

    /// Spawns a task, or says why it could not.
    #[track_caller]
    pub fn try_spawn<F>(&self, future: F) -> Result<JoinHandle<F::Output>, SpawnError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.shared.spawn(future).map_err(|(Refused::Shutdown, _)| SpawnError::Shutdown)
    }

    /// `try_spawn` for a task meant to run on another P while the caller keeps its own busy:
    /// queued stealable (not in `runnext`) and an idle M woken (`Shared::spawn_to`).
    #[track_caller]
    pub(crate) fn try_spawn_elsewhere<F>(&self, future: F) -> Result<JoinHandle<F::Output>, SpawnError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.shared.spawn_to(future, false).map_err(|(Refused::Shutdown, _)| SpawnError::Shutdown)
    }

    /// What every task is doing and waiting on (see [`Runtime::dump`]); from any thread.
    pub fn dump(&self) -> crate::dump::TaskDump {
        self.shared.dump()
    }

    /// What a parked `block_on` would report now: the dump of this runtime's tasks when nothing
    /// in the process can wake them (Go's `checkdead`, over every runtime; see [`crate::dump`]),
    /// or `None` while anything can still run. For
    /// watchdogs and tests; `block_on` runs the same check by itself.
    pub fn deadlocked(&self) -> Option<crate::dump::TaskDump> {
        self.shared.checkdead()
    }

    /// A snapshot of the scheduler's counters.
    pub fn stats(&self) -> RuntimeStats {
        self.shared.stats()
    }

    /// The number of Ps (gomaxprocs) of this runtime.
    pub fn procs(&self) -> usize {
        self.shared.procs()
    }

    /// The runtime's trace recorder, if it is tracing (for other crates' lanes and events).
    ///
    /// ```
    /// let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
    /// assert!(rt.handle().trace_recorder().is_none());
    /// ```
    pub fn trace_recorder(&self) -> Option<Recorder> {
        self.shared.trace.as_ref().map(|t| t.rec.clone())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::task::{Poll, Waker};

    /// Every task cell holds a strong count on `Shared` until it is freed, so after shutdown
    /// the count tells whether any task leaked (or was freed twice: that would crash first).
    #[test]
    fn shutdown_frees_every_task() {
        let rt = Runtime::builder().procs(2).build().unwrap();
        let shared = rt.shared.clone();
        let parked: Arc<Mutex<Vec<Waker>>> = Arc::default();
        rt.block_on(async {
            let mut hs = Vec::new();
            for i in 0..2000u64 {
                let parked = parked.clone();
                hs.push(crate::spawn(async move {
                    if i % 3 == 0 {
                        // Park forever: shutdown must drop this future and free the task.
                        std::future::poll_fn(|cx| {
                            parked.lock().unwrap().push(cx.waker().clone());
                            Poll::<()>::Pending
                        })
                        .await;
                    }
                    crate::yield_now().await;
                    i
                }));
            }
            // Await the finishing ones; detach the rest.
            for (i, h) in hs.into_iter().enumerate() {
                if i % 3 != 0 {
                    assert_eq!(h.await.unwrap(), i as u64);
                }
            }
        });
        // Wakers held outside keep their tasks' cells alive until dropped.
        drop(rt);
        let st = shared.stats();
        assert_eq!(st.spawned, st.completed + st.cancelled, "{st:?}");
        assert_eq!(st.cancelled, 667);
        parked.lock().unwrap().clear();
        // Shutdown dropped the Ps, and their reserves of task references with them.
        assert_eq!(shared.task_refs(), 0, "a task reference leaked");
        assert_eq!(Arc::strong_count(&shared), 1, "a task cell leaked");
    }

    /// A registered `Sleep` holds a task reference, from its P's reserve on an M or from the
    /// counter off one: the runtime outlives its handle until the last such `Sleep` is dropped,
    /// and not longer. Timers armed and cancelled on the Ms leave no reference behind.
    #[test]
    fn registered_sleeps_keep_the_runtime_alive() {
        use crate::time::{sleep, Sleep};
        use std::pin::Pin;
        use std::time::Duration;
        let rt = Runtime::builder().procs(2).build().unwrap();
        let weak = Arc::downgrade(&rt.shared);
        let kept: Arc<Mutex<Vec<Pin<Box<Sleep>>>>> = Arc::default();
        rt.block_on(async {
            let mut hs = Vec::new();
            for i in 0..200 {
                let kept = kept.clone();
                hs.push(crate::spawn(async move {
                    // Armed on an M, then cancelled there (dropped registered), or kept.
                    let mut s = Box::pin(sleep(Duration::from_secs(3600)));
                    let pending =
                        std::future::poll_fn(|cx| Poll::Ready(s.as_mut().poll(cx).is_pending())).await;
                    assert!(pending, "an hour's sleep was ready");
                    if i % 10 == 0 {
                        kept.lock().unwrap().push(s);
                    }
                }));
            }
            for h in hs {
                h.await.unwrap();
            }
        });
        // One more, armed off an M (in `block_on`, on P 0's heap).
        let mut outside = Box::pin(sleep(Duration::from_secs(3600)));
        let pending =
            rt.block_on(std::future::poll_fn(|cx| Poll::Ready(outside.as_mut().poll(cx).is_pending())));
        assert!(pending, "an hour's sleep was ready");
        kept.lock().unwrap().push(outside);
        drop(rt);
        let shared = weak.upgrade().expect("21 registered sleeps keep the runtime alive");
        // One reference per registered sleep, and one per task cell that the 20 kept sleeps'
        // wakers keep alive; none left by the 180 cancelled on the Ms.
        assert_eq!(shared.task_refs(), 21 + 20, "registered sleeps and their tasks' cells");
        drop(shared);
        let mut kept = std::mem::take(&mut *kept.lock().unwrap());
        while kept.len() > 1 {
            kept.pop();
            assert!(weak.upgrade().is_some(), "freed with {} sleeps still registered", kept.len());
        }
        kept.pop();
        assert!(weak.upgrade().is_none(), "the last registered sleep did not let the runtime go");
    }
}
