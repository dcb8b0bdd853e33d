//! Quiescence hooks: work a library can do only once nothing in the runtime is runnable.
//!
//! # Quiescence
//! The runtime is *quiescent* when no task is runnable and no M runs on a P: the global queue,
//! every P's run queue and every `runnext` are empty, and every P is idle — in the idle list,
//! or handed by `startm` to a parked M whose thread has not run yet. From then on a task
//! becomes runnable only through something outside the Ps — a timer, the netpoller, a wake
//! from a plain thread, a `block_on`, another runtime, a task coming back from a blocking
//! call. For a batching library this is the moment an open batch can stop waiting: every task
//! the runtime can see has either added its item or parked, so waiting longer only delays the
//! items already in it (issue 26: the Batcher waited out `max_delay` with every submitter
//! parked on the batch).
//!
//! A P handed to an M not yet running counts as idle because waiting for that M cost more
//! than the batches. A spawn or a wake from a running task starts a spinning M (`wakep`); on a
//! busy machine its thread may take tens of µs to be scheduled, and only then can it find
//! nothing and give its P back. The first version asked for every P in the idle list and no
//! spinner, and each batch waited for that thread: 10 tasks submitting one item each on 2 Ps
//! waited 26 µs at the median for a batch whose work is 1 µs (`offload_submitters/10x1`).
//! Such an M holds no task, and once it runs it installs its P (`set_p`: `RUNNING`) before
//! it looks at a queue. An M that does run, searching or polling, still holds quiescence
//! back: it may have just taken a task that is in no queue yet.
//!
//! # Protocol
//! * **Register.** [`Handle::on_quiescent`](crate::Handle::on_quiescent) adds a
//!   [`QuiescentHook`] to the runtime's list (under its lock) and counts it in `len`; the
//!   returned [`QuiescentRegistration`]'s drop removes it.
//! * **Check** ([`Shared::quiescent_hook`]), on the idle path of `find_runnable` (`idle.rs`,
//!   step 3), after the M gave its P back, stopped spinning, fenced, and its last look found no
//!   work. One load of `len` first: a runtime without hooks pays nothing else. Then
//!   `npidle + nmspinning ≥ procs` (a cheap filter on lines every idle look reads: a P out of
//!   the idle list and not given to a spinner is held by an M that runs, or will find work on
//!   it) and an empty global queue; then every P's queue and `runnext`, and only after all of
//!   them every P's status (`P_IDLE`); then, under the list's lock, each hook's
//!   [`QuiescentHook::pending`] (cheap: an atomic or two); the first pending hook is cloned out
//!   and the lock released.
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
//! suppose the runtime then goes quiescent. Every M that ran on a P and will not run again
//! before that passes step 3 last: `take_p` (status `IDLE`, SeqCst), `npidle += 1` (SeqCst,
//! under `sched`), `nmspinning -= 1` if it spun (SeqCst), a SeqCst fence, then this check.
//! Take the M whose fence is last in the single order of SeqCst operations among these last
//! passes. Each other M's writes before its own fence — its P's status, the counters, the
//! queue slots it emptied, and (for T's M) T's writes — come before that fence, so the last
//! M's loads after its fence read them or later values: every queue reads empty, every status
//! `IDLE`, the counters add up, and the hook reads pending. (A P given to an M not yet running
//! counts in the filter through that M's spinner; one given for its timers does not, and its M
//! passes step 3 itself later: it is then the last.) So at least the last M runs the hook; an
//! earlier one may too. Two Ms may both see quiescence (each checked after its own
//! transition): both take a P back and call `run`; the hook's own lock decides which one finds
//! work (the Batcher takes a batch under `central`, so one batch closes once).
//!
//! Why it is not seen *early*, with a task of the Ps about to run: such a task is in a queue or
//! in the hands of an M that took it out of one, and that M had installed its P (a SeqCst store
//! of `RUNNING`) before it took it. The check reads the queues first and the statuses after: if
//! it saw a queue emptied by that take, the taker's status store came before the take in its
//! thread, and the take is ordered after it (the deque's and the injector's SeqCst CAS, the
//! `runnext` CAS after the SeqCst store), so the later status load sees `RUNNING`.
//!
//! What is not covered, by design: quiescence reached without an M going idle — sysmon
//! retaking a P from a blocking call with nothing queued — and a hook made pending from
//! outside the Ps while the runtime is already quiescent (a plain thread's submit). Nothing
//! runs the hook then; the library's own bound (the Batcher's `max_delay`) covers them. A
//! task coming back from a blocking call is outside the Ps too: the P handed to it keeps
//! `IDLE` until its M runs, and if `wakep` has just counted a spinner that found no P, the
//! filter may pass and the hook run before that task resumes its poll.
//!
//! `tests/loom_quiesce.rs` checks the protocol on two Ps: a task that makes a hook pending and
//! parks on it is always woken by the hook (never left parked with every M asleep); the hook
//! never runs while one of the two submitting tasks is still runnable; its work is done once;
//! and shutdown racing all of it loses nothing.

use super::syscall::P_IDLE;
use super::Shared;
use crate::loom::sync::atomic::{AtomicUsize, Ordering::*};
use crate::loom::sync::Mutex;
use std::sync::{Arc, Weak};

/// Work to do when the runtime goes quiescent (no task queued anywhere, no M running on a P:
/// the module doc). Registered with [`Handle::on_quiescent`](crate::Handle::on_quiescent).
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
        // SeqCst: the loads of step 3's store-buffering pattern (module doc, idle.rs). The
        // shared counters first (a P neither idle nor given to a spinner has an M); then every
        // queue, and only then every P's status: an M that took a task out of a queue had
        // installed its P first (`set_p`), so a queue seen emptied by its take means its
        // `RUNNING` is seen below (module doc).
        if self.npidle.load(SeqCst) + self.nmspinning.load(SeqCst) < self.procs()
            || !self.injector.is_empty()
            || self.is_shutdown()
            || self.allp.iter().any(|p| p.has_work())
            || self.allp.iter().any(|p| p.status.load(SeqCst) != P_IDLE)
        {
            return None;
        }
        let l = self.quiesce.list.lock();
        l.hooks.iter().find(|(_, h)| h.pending()).map(|(_, h)| h.clone())
    }
}
