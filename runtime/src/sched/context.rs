//! The thread-local "where am I" of the runtime.
//!
//! An M thread sets it to its [`Context`] for its whole life; `Runtime::block_on` sets one
//! without a P for the duration of the call, so `gmprt::spawn` works there too. `spawn` and
//! wakes read it to put tasks on the current P (`runnext`) instead of the global queue.

use super::processor::Processor;
use super::syscall::{P_IDLE, P_RUNNING};
use super::Shared;
use crate::loom::sync::atomic::Ordering::SeqCst;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// Per-thread runtime context.
pub(crate) struct Context {
    pub(crate) shared: Arc<Shared>,
    /// The P this M holds; `None` on `block_on` threads and on Ms between Ps. Borrowed only
    /// briefly (never across a poll), so a task's `spawn` can borrow it again.
    pub(crate) p: RefCell<Option<Box<Processor>>>,
    /// The held P's index (`usize::MAX` when none), readable without borrowing `p`.
    pub(crate) pid: Cell<usize>,
    /// M id, for traces (`usize::MAX` on non-M threads).
    pub(crate) mid: usize,
    /// Set while this M wakes a batch in order ([`wake_all_to_tail`]: fired timers, a poll's
    /// ready sockets): the tasks go to the queue tail instead of `runnext` (which would run the
    /// last one first and push every earlier one back).
    pub(crate) wake_to_tail: Cell<bool>,
    /// The clock as this M last read it, in runtime nanoseconds (0: not read this round): set
    /// at the start of each scheduling round by `check_timers` (Go's `checkTimers` returns
    /// its `now` for the same reuse; 0 when the coarse clock spared it the read), or by the
    /// round's first `Sleep` to need it. Never ahead
    /// of the clock, so a deadline at or before it has passed; `Sleep`'s first poll compares
    /// against it rather than reading the clock again (`time/mod.rs`). Only on Ms.
    pub(crate) round_now: Cell<u64>,
}

impl Context {
    pub(crate) fn new(shared: Arc<Shared>, mid: usize) -> Self {
        Context {
            shared,
            p: RefCell::new(None),
            pid: Cell::new(usize::MAX),
            mid,
            wake_to_tail: Cell::new(false),
            round_now: Cell::new(0),
        }
    }

    /// Installs (or removes) the held P and marks it `RUNNING` for sysmon.
    pub(crate) fn set_p(&self, p: Option<Box<Processor>>) {
        self.pid.set(p.as_ref().map_or(usize::MAX, |p| p.id));
        if let Some(p) = &p {
            self.shared.allp[p.id].status.store(P_RUNNING, SeqCst);
        }
        *self.p.borrow_mut() = p;
    }

    /// Takes the held P out (the caller puts it somewhere and sets its status).
    pub(crate) fn take_p(&self) -> Option<Box<Processor>> {
        self.pid.set(usize::MAX);
        let p = self.p.borrow_mut().take();
        if let Some(p) = &p {
            self.shared.allp[p.id].status.store(P_IDLE, SeqCst);
        }
        p
    }
}

crate::loom::thread_local! {
    static CURRENT: Cell<*const Context> = const { Cell::new(std::ptr::null()) };
}

/// Wakes `wakers` in order, each task to the tail of the current P's queue rather than its
/// `runnext`, so they run in that order (fired timers in deadline order, a poll's ready
/// sockets in event order). Any thread may call it; on one without a context (or a P) the
/// wakes take their ordinary path. The flag is restored after, so a nested batch leaves it as
/// it found it.
pub(crate) fn wake_all_to_tail(wakers: impl IntoIterator<Item = std::task::Waker>) {
    with_current(|cx| {
        let prev = cx.map(|cx| cx.wake_to_tail.replace(true));
        for w in wakers {
            w.wake();
        }
        if let (Some(cx), Some(prev)) = (cx, prev) {
            cx.wake_to_tail.set(prev);
        }
    });
}

/// Runs `f` with the current thread's context, if any.
#[inline]
pub(crate) fn with_current<R>(f: impl FnOnce(Option<&Context>) -> R) -> R {
    CURRENT.with(|c| {
        let p = c.get();
        // SAFETY: the pointer is set only by `enter`, whose guard clears it before the
        // context is dropped; it is only read on the thread that set it.
        f(if p.is_null() { None } else { Some(unsafe { &*p }) })
    })
}

/// Restores the previous context when dropped.
pub(crate) struct EnterGuard(*const Context);

/// Makes `cx` the current context until the guard drops. `cx` must outlive the guard.
pub(crate) fn enter(cx: &Context) -> EnterGuard {
    let prev = CURRENT.with(|c| c.replace(cx as *const Context));
    EnterGuard(prev)
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

/// The id (`0..procs`) of the P the calling thread holds, of whichever runtime; `None` off
/// an M, or on an M without a P (in a `syscall`). Go's `procPin` without the pinning: a task
/// is never preempted between two `.await`s, so the id stays right until the task's next
/// `.await` (it may run on another P after one). For per-P data that any thread may still
/// touch under a lock (per-P staging, `sync.Pool`-like caches).
///
/// ```
/// let rt = gmprt_runtime::Runtime::builder().procs(2).build().unwrap();
/// assert_eq!(gmprt_runtime::procid(), None); // a plain thread holds no P
/// let id = rt.block_on(async { gmprt_runtime::spawn(async { gmprt_runtime::procid() }).await.unwrap() });
/// assert!(matches!(id, Some(0 | 1)));
/// ```
pub fn procid() -> Option<usize> {
    with_current(|cx| cx.map(|cx| cx.pid.get()).filter(|&pid| pid != usize::MAX))
}
