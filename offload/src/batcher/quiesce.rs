//! Closing on quiescence: a batch that is not full closes the moment its runtime has nothing
//! runnable, instead of waiting out `max_delay` with every submitter parked on it.
//!
//! The runtime's signal is a [`QuiescentHook`] (`gmprt_runtime`'s `sched::quiesce` module: the
//! M that finds nothing queued and no M running on a P runs it on a P it takes back).
//! The Batcher registers one on the runtime it was built for ([`BatcherConfig::runtime`], else
//! the one current at [`Batcher::new`], else the runtime of the first task that opens a
//! batch) and drops the registration at shutdown. One runtime: submitters on another are
//! bounded by `max_delay`.
//!
//! # Protocol
//! * `quiet` (an `AtomicBool` beside `central`): a quiescence was seen while a batch was
//!   open and it has not been taken since. Set only by the hook's `run`, under `central`;
//!   cleared only by a take, under `central`.
//! * `pending` (no lock): items are open and `quiet` is not set yet. Both reads are of
//!   atomics, so the runtime may call it under its hook-list lock.
//! * `run` (on the M, holding a P): under `central`, if items are open, set `quiet` and notify
//!   one idle worker. Afterwards `pending` is false (the hook contract: the M does not loop).
//! * A worker's take (`worker.rs`) closes a batch that is not full with
//!   [`CloseReason::Quiescent`] once `quiet` is set, before any deadline or closer.
//!
//! Why no item waits for nothing: when every task the runtime runs is parked (each submitter
//! waiting for its result), the last M to go idle sees `pending` (the runtime's proof: the
//! admissions happen before that M's check) and runs the hook, whose notify reaches a worker
//! waiting under `central` (the worker re-checks `quiet` under `central` before it waits, so
//! the notify is not lost). A batch with every slot busy keeps `quiet` and is taken by the
//! first worker that comes back. Submitters the runtime cannot see — plain threads, a
//! `block_on`, another runtime — do not hold a quiescence back, and are bounded by
//! `max_delay` as before.
//!
//! Why no batch closes twice and nothing is lost: the hook only sets a flag; taking stays the
//! workers' (under `central`, as every other close), and a take clears the flag with the
//! batch. A `quiet` left from a batch taken meanwhile is cleared by that take, so it never
//! closes a later batch on a stale signal. `tests/loom_quiesce.rs` (gmprt-runtime) checks the
//! runtime's side of the protocol; `offload/tests/batcher/` the Batcher's.
//!
//! [`QuiescentHook`]: gmprt_runtime::QuiescentHook
//! [`BatcherConfig::runtime`]: super::BatcherConfig::runtime
//! [`Batcher::new`]: super::Batcher::new
//! [`CloseReason::Quiescent`]: crate::CloseReason::Quiescent
use super::Shared;
use crate::jobs::BatchKernel;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::{Arc, Weak};

/// The hook the Batcher registers: a weak reference, so a runtime holding it never keeps a
/// Batcher alive.
pub(super) struct QuiescentClose<K: BatchKernel>(pub(super) Weak<Shared<K>>);

impl<K: BatchKernel> gmprt_runtime::QuiescentHook for QuiescentClose<K> {
    fn pending(&self) -> bool {
        let Some(s) = self.0.upgrade() else { return false };
        let w = s.stage.word();
        // Acquire: pairs with `run`'s release store (a flag seen set means its notify was sent).
        w.open() > 0 && !w.closed() && !s.quiet.load(Acquire)
    }

    fn run(&self) {
        let Some(s) = self.0.upgrade() else { return };
        if s.runs_inline() {
            // Host: the batch runs right here, on this M's P (`worker::close_inline`).
            s.close_inline();
            return;
        }
        let _c = s.central.lock();
        if s.stage.word().open() > 0 && !s.quiet.load(Acquire) {
            s.quiet.store(true, Release);
            s.work.notify_one();
        }
    }
}

impl<K: BatchKernel> Shared<K> {
    /// Registers the quiescence hook on `rt` (at `new` for the Batcher's runtime; else at the
    /// first batch a task opens, for that task's runtime). Once: later calls do nothing.
    fn register_quiescent_on(self: &Arc<Self>, rt: &gmprt_runtime::Handle) {
        let mut reg = self.quiescence.lock();
        if self.quiescence_tried.swap(true, Relaxed) || self.stage.word().closed() {
            return;
        }
        *reg = Some(rt.on_quiescent(Arc::new(QuiescentClose(Arc::downgrade(self)))));
    }

    /// At `new`: registers on the Batcher's runtime
    /// ([`BatcherConfig::runtime`](super::BatcherConfig::runtime), else the caller's), if it has
    /// one.
    pub(super) fn register_quiescent(self: &Arc<Self>) {
        if let Some(rt) = &self.cpu_rt {
            self.register_quiescent_on(rt);
        }
    }

    /// After an admission that opened a batch: a Batcher built off any runtime registers on
    /// the runtime of the first task that opens a batch (one relaxed load otherwise).
    pub(super) fn register_quiescent_here(&self) {
        if self.quiescence_tried.load(Relaxed) || gmprt_runtime::procid().is_none() {
            return;
        }
        if let (Some(me), Some(rt)) = (self.me.upgrade(), gmprt_runtime::Handle::try_current()) {
            me.register_quiescent_on(&rt);
        }
    }
}
