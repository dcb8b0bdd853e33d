//! Quiescence hooks: work a library can do only once nothing in the runtime is runnable.
//!
//! # Quiescence
//! The runtime is *quiescent* when every P is idle (`npidle == procs`), no M is spinning
//! (`nmspinning == 0`) and the global queue is empty: no task is runnable and no P runs one.
//! From then on a task becomes runnable only through something outside the Ps — a timer, the
//! netpoller, a wake from a plain thread, a `block_on`, another runtime, a task coming back
//! from a blocking call. For a batching library this is the moment an open batch can stop
//! waiting: every task the runtime can see has either added its item or parked, so waiting
//! longer only delays the items already in it (issue 26: the Batcher waited out `max_delay`
//! with every submitter parked on the batch).
//!
//! # Protocol
//! * **Register.** [`Handle::on_quiescent`](crate::Handle::on_quiescent) adds a
//!   [`QuiescentHook`] to the runtime's list (under its lock) and counts it in `len`; the
//!   returned [`QuiescentRegistration`]'s drop removes it.
//! * **Check** ([`Shared::quiescent_hook`]), on the idle path of `find_runnable` (`idle.rs`,
//!   step 3), after the M gave its P back, stopped spinning, fenced, and its last look found no
//!   work. One load of `len` first: a runtime without hooks pays nothing else. Then
//!   `npidle == procs`, `nmspinning == 0` and an empty global queue; then, under the list's
//!   lock, each hook's [`QuiescentHook::pending`] (cheap: an atomic or two); the first pending
//!   hook is cloned out and the lock released.
//! * **Run.** The M takes an idle P back (`pidleget`, as a plain M; none left: another M took
//!   it, and runs the hooks itself) and calls [`QuiescentHook::run`] holding that P, outside
//!   every scheduler lock, like a task's poll. Then it starts `find_runnable` over: the tasks
//!   `run` made runnable (with `injectglist`, or any wake) are found there, and if it made
//!   none the M goes idle again the same way — where `pending` now reads false.
//!
//! Hook contract (on [`QuiescentHook`]): `pending` takes no lock that `run` holds while it
//! wakes tasks; `run` returns with `pending` false or with a task runnable (else the M would
//! loop between idle and the hook), and does not block its thread (it holds a P).
//!
//! # Why a quiescence is not missed
//! Take a hook made pending by a task T (T's writes happen while T runs on some P), and
//! suppose the runtime then goes quiescent. Each M reaches quiescence through step 3:
//! `npidle += 1` (SeqCst, under `sched`), `nmspinning -= 1` if it spun (SeqCst), a SeqCst fence,
//! then this check. In the single order of those SeqCst operations some M's idle transition
//! is the last one; its check, after its fence, reads `npidle == procs` and
//! `nmspinning == 0`. The P that ran T was given back by an `npidle` increment that comes
//! after T's writes on that M and before the reading M's load in the order, and the
//! increments form one release sequence, so T's writes happen before the read of `pending`:
//! the last M sees the hook pending. Two Ms may both see quiescence (each checked after its
//! own transition): both take a P back and call `run`; the hook's own lock decides which one
//! finds work (the Batcher takes a batch under `central`, so one batch closes once).
//!
//! What is not covered, by design: quiescence reached without an M going idle — sysmon
//! retaking a P from a blocking call with nothing queued — and a hook made pending from
//! outside the Ps while the runtime is already quiescent (a plain thread's submit). Nothing
//! runs the hook then; the library's own bound (the Batcher's `max_delay`) covers them.
//!
//! `tests/loom_quiesce.rs` checks the protocol on two Ps: a task that makes a hook pending and
//! parks on it is always woken by the hook (never left parked with every M asleep), the hook's
//! work is done once, and shutdown racing all of it loses nothing.

use super::Shared;
use crate::loom::sync::atomic::{AtomicUsize, Ordering::*};
use crate::loom::sync::Mutex;
use std::sync::{Arc, Weak};

/// Work to do when the runtime goes quiescent (every P idle, no spinning M, the global queue
/// empty). Registered with [`Handle::on_quiescent`](crate::Handle::on_quiescent).
///
/// ```
/// use gmprt_runtime::{QuiescentHook, Runtime};
/// use std::sync::atomic::{AtomicBool, Ordering::*};
/// use std::sync::{mpsc, Arc};
///
/// /// Reports each quiescence that found it armed.
/// struct Armed { armed: AtomicBool, ran: mpsc::Sender<()> }
/// impl QuiescentHook for Armed {
///     fn pending(&self) -> bool { self.armed.load(Acquire) }
///     fn run(&self) {
///         // Leaves `pending` false, as the contract asks.
///         if self.armed.swap(false, AcqRel) { let _ = self.ran.send(()); }
///     }
/// }
///
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// let (tx, ran) = mpsc::channel();
/// let hook = Arc::new(Armed { armed: AtomicBool::new(false), ran: tx });
/// let reg = rt.handle().on_quiescent(hook.clone());
/// let h = hook.clone();
/// // Armed from a task: once it and every other task are done, the M going idle last runs it.
/// rt.block_on(async move { gmprt_runtime::spawn(async move { h.armed.store(true, Release) }).await.unwrap() });
/// ran.recv().unwrap();
/// assert!(!hook.pending());
/// drop(reg); // unregistered
/// ```
pub trait QuiescentHook: Send + Sync + 'static {
    /// Whether [`run`](QuiescentHook::run) has something to do. Called by an M on its idle
    /// path, without a P, under the runtime's hook-list lock: cheap, and takes no lock that
    /// `run` holds while it makes tasks runnable.
    fn pending(&self) -> bool;

    /// Does the work, on an M holding a P, outside every scheduler lock, after `pending`
    /// returned true while the runtime was quiescent. Must not block its thread; must return
    /// with `pending` false or with a task made runnable. Two Ms may call it for the same
    /// quiescence: the hook decides, under its own lock, which one finds the work.
    fn run(&self);
}

/// The registered hooks of one runtime (`Shared::quiesce`).
pub(crate) struct Hooks {
    /// Number of hooks in `list`: the idle path's one load when there are none. Written under
    /// `list`'s lock; `Relaxed` is enough for the gate: a hook registered concurrently with a
    /// quiescence may miss that one (the library's own bound covers it, module doc), and one
    /// seen is then read under the lock.
    len: AtomicUsize,
    list: Mutex<HookList>,
}

#[derive(Default)]
struct HookList {
    next_id: u64,
    hooks: Vec<(u64, Arc<dyn QuiescentHook>)>,
}

impl Hooks {
    pub(crate) fn new() -> Hooks {
        Hooks { len: AtomicUsize::new(0), list: Mutex::new(HookList::default()) }
    }
}

/// A registered [`QuiescentHook`]; dropping it unregisters the hook (an M that already
/// cloned it out may still call `run` once).
#[must_use = "dropping the registration unregisters the hook"]
pub struct QuiescentRegistration {
    shared: Weak<Shared>,
    id: u64,
}

impl std::fmt::Debug for QuiescentRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuiescentRegistration").field("id", &self.id).finish()
    }
}

impl Drop for QuiescentRegistration {
    fn drop(&mut self) {
        let Some(shared) = self.shared.upgrade() else { return };
        let hooks = &shared.quiesce;
        let mut l = hooks.list.lock();
        l.hooks.retain(|(id, _)| *id != self.id);
        hooks.len.store(l.hooks.len(), Relaxed);
    }
}

impl Shared {
    /// Registers `hook` (see [`Handle::on_quiescent`](crate::Handle::on_quiescent)).
    pub(crate) fn register_quiescent(
        self: &Arc<Self>,
        hook: Arc<dyn QuiescentHook>,
    ) -> QuiescentRegistration {
        let hooks = &self.quiesce;
        let mut l = hooks.list.lock();
        let id = l.next_id;
        l.next_id += 1;
        l.hooks.push((id, hook));
        hooks.len.store(l.hooks.len(), Relaxed);
        QuiescentRegistration { shared: Arc::downgrade(self), id }
    }

    /// The idle path's check (module doc): a pending hook if the runtime is quiescent. Called
    /// by an M without a P, after step 3's fence and a last look that found nothing.
    #[inline]
    pub(crate) fn quiescent_hook(&self) -> Option<Arc<dyn QuiescentHook>> {
        if self.quiesce.len.load(Relaxed) == 0 {
            return None;
        }
        self.quiescent_hook_slow()
    }

    #[cold]
    fn quiescent_hook_slow(&self) -> Option<Arc<dyn QuiescentHook>> {
        // SeqCst: the loads of step 3's store-buffering pattern (module doc, idle.rs).
        if self.npidle.load(SeqCst) != self.procs()
            || self.nmspinning.load(SeqCst) != 0
            || !self.injector.is_empty()
            || self.is_shutdown()
        {
            return None;
        }
        let l = self.quiesce.list.lock();
        l.hooks.iter().find(|(_, h)| h.pending()).map(|(_, h)| h.clone())
    }
}
