//! The slot workers' side of the protocol (see the parent module): an idle worker spins,
//! then waits on `work` for `max_delay` (*watching*: a batch that opens meanwhile needs no
//! notify, `Central::watching`), then parks on it untimed, until a batch may close (full,
//! released by the closer or its deadline passed, flush, shutdown, the runtime quiescent)
//! and a [`Kit`] is free, takes it (step 2), runs it (`run` module) and wakes its tasks as
//! one list; the inline close on a quiescent runtime's M (Host device); and shutdown, which
//! closes the word and joins the workers.
//!
//! # Kits
//! A [`Kit`] is what running one batch needs besides the batch: a slot and the buffers that go
//! with it. `in_flight` of them exist, kept in `Shared::kits` while free. A batch closes only
//! together with a free kit (both under `central`; `kits` is a leaf lock taken only under
//! it), so at most `in_flight` batches run at once, wherever they run: on a worker thread, or
//! inline on the M that found the runtime quiescent (`close_inline`, Host device only: a
//! CUDA slot's stream wait and a simulated slot's pacing would block the M). A kit goes back
//! under `central`; whoever returns it from an inline run notifies the workers, one of which
//! may be waiting for it with a batch ready to close.
use super::run::Kit;
use super::Central;
use super::{trace, Shared, Taken};
use crate::jobs::BatchKernel;
use crate::timeline::CloseReason;
use parking_lot::MutexGuard;
use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::task::Waker;
use std::time::Instant;

/// How long an idle worker polls for a batch before it parks on the condvar: 64 rounds, the
/// first 8 busy (`spin_loop`, ~0.1 µs in all) and the rest `sched_yield`s (~0.3-1 µs each,
/// more when other threads run): tens of µs, about one Host batch cycle. Parking right away
/// cost a futex sleep and a wake per batch, as much again as the batch (perf,
/// `offload_submitters`).
const SPIN_ROUNDS: usize = 64;
/// Of [`SPIN_ROUNDS`], how many only `spin_loop` (see there).
const SPIN_BUSY_ROUNDS: usize = 8;

thread_local! {
    /// True on the slot worker threads of every Batcher, and on an M while it runs a batch
    /// inline: a shutdown called there does not wait for workers (see "Shutdown waits for the
    /// workers" in the module docs).
    static ON_SLOT_WORKER: Cell<bool> = const { Cell::new(false) };
}

impl<K: BatchKernel> Shared<K> {
    /// Closes the Batcher (first call only), then joins the workers.
    pub(super) fn shutdown(&self) {
        if self.stage.close() {
            // Unregistered first: the runtime stops asking a closed Batcher.
            drop(self.quiescence.lock().take());
            let (waiters, closer) = {
                let mut c = self.central.lock();
                let waiters: Vec<Waker> = c.waiters.drain(..).map(|(_, w)| w).collect();
                (waiters, c.closer.waker.take())
            };
            // The closer sees the closed bit and exits.
            if let Some(w) = closer {
                w.wake();
            }
            self.work.notify_all();
            for w in waiters {
                w.wake();
            }
        }
        self.join_workers();
    }

    /// Waits until every slot worker thread has exited (see "Shutdown waits for the workers"
    /// in the module docs): not on a worker thread; on an M inside `syscall`, and not at all
    /// if the runtime refuses that hand-off.
    pub(super) fn join_workers(&self) {
        if ON_SLOT_WORKER.with(Cell::get) {
            return;
        }
        let join = || {
            // Held across the joins: a concurrent shutdown returns only after them too.
            let mut workers = self.workers.lock();
            for handle in workers.drain(..) {
                // A worker catches the panics of kernels and items; one escaping anyway has
                // already been reported by the panic hook, and shutdown must not re-raise it.
                let _ = handle.join();
            }
        };
        // Off an M `syscall` just runs `join`; the refusal hands `join` back unrun.
        let _refused = gmprt_runtime::syscall(join);
    }

    /// Slot worker `index`: takes batches until the Batcher is closed and drained.
    pub(super) fn worker(&self, index: usize) {
        ON_SLOT_WORKER.with(|w| w.set(true));
        let mut wake: Vec<Waker> = Vec::new();
        let mut lanes = self.trace.as_ref().map(|r| trace::SlotTrace::new(r, index, self.kernel.name()));
        while let Some((taken, mut kit)) = self.take(&mut wake) {
            // The waiters given room: they may enter the next batch while this one runs.
            gmprt_runtime::wake_all(wake.drain(..));
            self.run_kit(&mut kit, taken, &mut wake, lanes.as_mut());
            self.give_back(kit, false);
        }
    }

    /// Puts `kit` back (under `central`). Notifies every worker when one may be waiting for
    /// it: at shutdown (they retire the kits once all are home), and after an inline run
    /// while items are open (a worker may hold a batch ready to close). A worker's own return
    /// needs no notify otherwise: it takes again right away.
    fn give_back(&self, mut kit: Kit<K>, inline: bool) {
        let mut c = self.central.lock();
        if let (Some(spread), Some(late)) = (c.spread.as_mut(), kit.late.take()) {
            spread.ran_late(kit.device, late);
        }
        self.kits.lock().push(kit);
        let w = self.stage.word();
        if w.closed() || (inline && w.open() > 0) {
            self.work.notify_all();
        }
    }

    /// Runs a taken batch with `kit` and wakes its tasks: the worker threads' and the inline
    /// path's one body.
    fn run_kit(
        &self,
        kit: &mut Kit<K>,
        taken: Taken<K::Output>,
        wake: &mut Vec<Waker>,
        lanes: Option<&mut trace::SlotTrace>,
    ) {
        self.busy.fetch_add(1, Ordering::Relaxed);
        let marks = self.run(kit, taken, wake);
        self.busy.fetch_sub(1, Ordering::Relaxed);
        // Every item's task at once: one global-queue round, one `wakep` (mod.rs, scatter).
        gmprt_runtime::wake_all(wake.drain(..));
        // Tracing only (one branch per batch otherwise): after the wakes, so the `wake`
        // slice holds the runtime's wake arrows.
        if let (Some(lanes), Some(marks)) = (lanes, marks) {
            let procs = self.cpu_rt.as_ref().map_or(1, |rt| rt.procs());
            // The model twin is priced by the model of the device that ran the batch.
            let model = kit.model.as_deref().or(self.config.model.as_deref());
            lanes.batch(&marks, Instant::now(), model, self.kernel.name(), procs);
        }
    }

    /// Whether a batch may run inline on the M that closes it: its slots compute on the
    /// calling thread and never wait ([`Backend::runs_on_caller`](crate::Backend::runs_on_caller):
    /// the Host device; a CUDA slot waits on its stream, a simulated one sleeps out its
    /// pacing), and it is placed on the slot (a batch placed on the Ps waits for their chunks).
    pub(super) fn runs_inline(&self) -> bool {
        self.slots_run_on_caller && self.config.placement == super::Placement::Gpu
    }

    /// The quiescence hook's close (the `quiesce` module), on an M holding a P: takes the
    /// open batch with a free kit and runs it right here — no worker thread, no hand-off —
    /// or, with no kit free, sets `quiet` for the next worker. Returns whether a batch ran.
    pub(super) fn close_inline(&self) -> bool {
        debug_assert!(self.runs_inline() && self.devices.len() == 1, "inline runs: one Host device");
        let mut wake: Vec<Waker> = Vec::new();
        let (taken, mut kit) = {
            let c = self.central.lock();
            let w = self.stage.word();
            // Closed: shutdown's workers take it. Not stamped: its opener is still in `enter`.
            let Some(opened) = c.opened.filter(|_| w.open() > 0 && !w.closed()) else {
                return false;
            };
            let Some(kit) = self.kits.lock().pop() else {
                // Every kit runs a batch: the first worker back takes this one (`quiet`).
                self.quiet.store(true, Ordering::Release);
                self.work.notify_one();
                return false;
            };
            self.close(c, kit, opened, Instant::now(), CloseReason::Quiescent, &mut wake)
        };
        gmprt_runtime::wake_all(wake.drain(..));
        // As on a worker thread: a shutdown from inside this run (an item's drop, the last
        // clone in a woken task's waker) must not wait for the workers, which wait for this
        // kit ("Shutdown waits for the workers" in the module docs).
        let was = ON_SLOT_WORKER.with(|w| w.replace(true));
        let mut lanes = self.trace.as_ref().map(|r| {
            let mut t = kit
                .inline_trace
                .take()
                .unwrap_or_else(|| trace::SlotTrace::inline(r, kit.index, self.kernel.name()));
            t.move_here();
            t
        });
        self.run_kit(&mut kit, taken, &mut wake, lanes.as_mut());
        kit.inline_trace = lanes;
        ON_SLOT_WORKER.with(|w| w.set(was));
        self.give_back(kit, true);
        true
    }

    /// A worker about to park: polls the admission word for up to [`SPIN_ROUNDS`] rounds
    /// (a few busy ones, then `sched_yield`s) and returns early once anything is open or the
    /// Batcher is closed. Without `central`: the caller re-checks under it before it parks,
    /// so a notification sent meanwhile is not lost (see "Why no deadlock").
    pub(super) fn spin_for_work(&self) {
        for round in 0..SPIN_ROUNDS {
            let w = self.stage.word();
            if w.open() > 0 || w.closed() {
                return;
            }
            if round < SPIN_BUSY_ROUNDS {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Waits until a batch may close and a kit is free, then takes both (step 2): the lanes'
    /// items are moved into the kit's spare `Vec` and the wakers of the waiters given room
    /// are pushed to `wake`. `None` once the Batcher is closed and nothing is open.
    pub(super) fn take(&self, wake: &mut Vec<Waker>) -> Option<(Taken<K::Output>, Kit<K>)> {
        let max_batch = self.config.max_batch;
        let mut c = self.central.lock();
        let mut spun = false;
        // Whether this worker has watched an empty Batcher for `max_delay` since it last saw a
        // batch open (below): then it parks untimed.
        let mut lingered = false;
        loop {
            let w = self.stage.word();
            if w.open() == 0 {
                if w.closed() {
                    // Closed and empty for good (no admission succeeds once closed). The slots
                    // go with the workers (shutdown's join returns with every slot dropped):
                    // the first worker to find every kit home retires them all; until then a
                    // batch still runs (another worker's, or inline) and its kit's return
                    // notifies.
                    let mut kits = self.kits.lock();
                    let retired = if c.kits_retired {
                        Vec::new()
                    } else if kits.len() < self.kit_count {
                        drop(kits);
                        self.work.wait(&mut c);
                        continue;
                    } else {
                        c.kits_retired = true;
                        std::mem::take(&mut *kits)
                    };
                    drop(kits);
                    // Wake the other workers so each sees it too. Shutdown's `notify_all`
                    // reaches only those waiting then; one that found the closed batch not yet
                    // stamped waits after it, and the stamp's `notify_one` may go to another
                    // worker, which takes the batch — leaving this one waiting with nothing
                    // left to wake it, and shutdown joining it forever.
                    self.work.notify_all();
                    drop(c);
                    drop(retired);
                    return None;
                }
                if !spun {
                    // Spin before parking (as Go's spinning Ms do): a batch cycle is a few µs
                    // on the Host device, and a futex sleep + wake per batch costs as much.
                    spun = true;
                    parking_lot::MutexGuard::unlocked(&mut c, || self.spin_for_work());
                    continue;
                }
                // Once per idle spell, with a deadline to watch for.
                let watch = if lingered { None } else { self.watch_end() };
                if let Some(until) = watch {
                    // Watch for `max_delay` before parking untimed: a batch that opens
                    // meanwhile has its deadline after this wait ends, so its admission need
                    // not wake anyone (`Central::watching`). Batches that close on quiescence
                    // before a woken worker could even run (10 submitters on 2 Ps: every
                    // one) then cost one timed wake per `max_delay`, not a futex wake each.
                    lingered = true;
                    self.watch_until(&mut c, until);
                    continue;
                }
                c.parked += 1;
                self.work.wait(&mut c);
                c.parked -= 1;
                continue;
            }
            // A batch is open: watching it counts as watching (linger again after it).
            lingered = false;
            // The submit that opened the batch stamps it (and starts its trace arrow) under
            // `central` right after its admission, and then notifies: wait for that, so the
            // batch's `opened` and arrow are its own. It skips the notify while a worker
            // watches, so this wait is a watch too (its deadline, `opened + max_delay`, is
            // later than `max_delay` from now): untimed, it could outlast every batch to come.
            let Some(opened) = c.opened else {
                match self.watch_end() {
                    Some(until) => self.watch_until(&mut c, until),
                    None => self.work.wait(&mut c),
                }
                continue;
            };
            let now = Instant::now();
            let reason = if w.open() >= max_batch {
                CloseReason::Full
            } else if w.closed() {
                CloseReason::Shutdown
            } else if c.flush {
                CloseReason::Flush
            } else if self.quiet.load(Ordering::Acquire) {
                // The runtime went quiescent with this batch open (the `quiesce` module).
                CloseReason::Quiescent
            } else if self.config.max_delay.is_zero() {
                if c.closer.holds() {
                    // Not before the tasks runnable when it opened have run (`closer`).
                    self.work.wait(&mut c);
                    continue;
                }
                // Triton's default: a free slot takes whatever is queued.
                CloseReason::Deadline
            } else {
                // `max_delay ≤ 1 h` (validated), so this cannot overflow in practice; if it
                // did, the batch would wait for full/flush/shutdown.
                match opened.checked_add(self.config.max_delay) {
                    Some(deadline) if now < deadline => {
                        self.watch_until(&mut c, deadline);
                        continue;
                    }
                    Some(_) => CloseReason::Deadline,
                    None => {
                        self.work.wait(&mut c);
                        continue;
                    }
                }
            };
            let Some(kit) = self.free_kit(&mut c, w.open(), now) else {
                // Every kit (of the device chosen) runs a batch: its worker takes again as
                // soon as it is home, and an inline run's return notifies.
                self.work.wait(&mut c);
                continue;
            };
            return Some(self.close(c, kit, opened, now, reason, wake));
        }
    }

    /// When a watch that starts now ends: `max_delay` from now, or `None` (wait untimed) with
    /// `max_delay = 0` — nothing to watch for — or past `Instant`'s range (`max_delay ≤ 1 h`
    /// is validated, so never in practice). The clock is read only when there is a watch.
    fn watch_end(&self) -> Option<Instant> {
        if self.config.max_delay.is_zero() {
            return None;
        }
        Instant::now().checked_add(self.config.max_delay)
    }

    /// An idle worker's timed wait on `work` until `until`, counted in `Central::watching`
    /// meanwhile: the batch that opens during it need not notify (see there). `until` must be
    /// at most `max_delay` after the wait begins, or after an open batch's `opened`.
    fn watch_until(&self, c: &mut MutexGuard<'_, Central>, until: Instant) {
        c.watching += 1;
        self.work.wait_until(c, until);
        c.watching -= 1;
    }

    /// Under `central`: a free kit for the batch of `open` items about to close at `now` —
    /// any, with one device; with several, one of the device the spread chooses (the `spread`
    /// module), its price recorded in the kit — or `None` when there is none (wait). The batch
    /// is *saturated* when work waits behind it: it is full, or submits wait for room.
    fn free_kit(&self, c: &mut Central, open: usize, now: Instant) -> Option<Kit<K>> {
        let mut kits = self.kits.lock();
        let saturated = open >= self.config.max_batch || !c.waiters.is_empty();
        let Some(spread) = c.spread.as_mut() else {
            return kits.pop();
        };
        let at = now.saturating_duration_since(self.created);
        let sizes = (open.min(self.config.max_batch), self.kernel.out_words(), self.config.in_flight);
        let d = spread.choose(self.kernel.name(), sizes, at, kits.iter().map(|k| k.device), saturated)?;
        let i = kits.iter().position(|k| k.device == d)?;
        let mut kit = kits.swap_remove(i);
        kit.price = Some(spread.commit(d, at));
        Some(kit)
    }

    /// Takes the open batch into `kit` (step 2's common part, under `central`, which it
    /// releases): moves the lanes' items into the kit's spare `Vec`, resets the open batch's
    /// state, hands the free room to the front waiters (their wakers to `wake`) and numbers
    /// the batch.
    fn close(
        &self,
        mut c: MutexGuard<'_, Central>,
        mut kit: Kit<K>,
        opened: Instant,
        now: Instant,
        reason: CloseReason,
        wake: &mut Vec<Waker>,
    ) -> (Taken<K::Output>, Kit<K>) {
        debug_assert!(kit.spare.is_empty());
        let mut blocks = Vec::new();
        let moved = self.stage.take(&mut kit.spare, &mut blocks);
        debug_assert!(moved > 0, "open > 0 under central, and only closes take (under central)");
        c.opened = None;
        c.flush = false;
        // Under `central`, with the batch: a later batch never closes on this signal.
        self.quiet.store(false, Ordering::Release);
        c.closer.taken();
        let flow = c.flow.take();
        // Room goes to the front waiters first (step 4 of the `stage` module).
        if !c.waiters.is_empty() {
            let k = c.waiters.len();
            let got = self.stage.reserve(k, true);
            wake.extend(self.pop_waiters(&mut c, got));
        }
        drop(c);
        let seq = self.next_batch.fetch_add(1, Ordering::Relaxed);
        for (b, _) in &blocks {
            b.state.lock().seq = Some(seq);
        }
        (Taken { seq, blocks, opened, closed_at: now, reason, flow }, kit)
    }
}
