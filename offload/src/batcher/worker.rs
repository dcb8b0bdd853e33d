//! The slot workers' side of the protocol (see the parent module): an idle worker spins,
//! then parks on `work`, until a batch may close (full, released by the closer or its
//! deadline passed, flush, shutdown), takes it (step 2), runs it (`run` module) and wakes
//! its tasks as one list; and shutdown, which closes the word and joins the workers.
use super::{run, trace, Shared, Taken};
use crate::backend::Slot;
use crate::jobs::BatchKernel;
use crate::timeline::CloseReason;
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
    /// True on the slot worker threads of every Batcher: a shutdown called there does not
    /// wait for workers (see "Shutdown waits for the workers" in the module docs).
    static ON_SLOT_WORKER: Cell<bool> = const { Cell::new(false) };
}

impl<K: BatchKernel> Shared<K> {
    /// Closes the Batcher (first call only), then joins the workers.
    pub(super) fn shutdown(&self) {
        if self.stage.close() {
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

    /// Slot worker: takes batches until the Batcher is closed and drained. `spare` is the
    /// empty item `Vec` (capacity `max_batch`) the lanes' items are moved into.
    pub(super) fn worker(&self, slot_index: usize, mut slot: Box<dyn Slot>, mut spare: Vec<K::Item>) {
        ON_SLOT_WORKER.with(|w| w.set(true));
        let mut wake: Vec<Waker> = Vec::new();
        // Host buffers of CPU-placed batches run on this thread (allocated at the first one).
        let mut cpu = run::CpuBuffers::default();
        let mut lanes = self.trace.as_ref().map(|r| trace::SlotTrace::new(r, slot_index, self.kernel.name()));
        while let Some(taken) = self.take(&mut spare, &mut wake) {
            // The waiters given room: they may enter the next batch while this one runs.
            gmprt_runtime::injectglist(wake.drain(..));
            self.busy.fetch_add(1, Ordering::Relaxed);
            let marks = self.run(slot_index, &mut *slot, &mut spare, &mut cpu, taken, &mut wake);
            self.busy.fetch_sub(1, Ordering::Relaxed);
            // Every item's task at once: one global-queue round, as many Ps started as needed.
            gmprt_runtime::injectglist(wake.drain(..));
            // Tracing only (one branch per batch otherwise): after the wakes, so the `wake`
            // slice holds the runtime's wake arrows.
            if let (Some(lanes), Some(marks)) = (&mut lanes, marks) {
                let procs = self.cpu_rt.as_ref().map_or(1, |rt| rt.procs());
                lanes.batch(&marks, Instant::now(), self.config.model.as_deref(), self.kernel.name(), procs);
            }
        }
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

    /// Waits until a batch may close, then takes it (step 2): the lanes' items are moved into
    /// `items` (empty on entry) and the wakers of the waiters given room are pushed to
    /// `wake`. `None` once the Batcher is closed and nothing is open.
    pub(super) fn take(&self, items: &mut Vec<K::Item>, wake: &mut Vec<Waker>) -> Option<Taken<K::Output>> {
        debug_assert!(items.is_empty());
        let max_batch = self.config.max_batch;
        let mut c = self.central.lock();
        let mut spun = false;
        loop {
            let w = self.stage.word();
            if w.open() == 0 {
                if w.closed() {
                    // Closed and empty for good (no admission succeeds once closed): wake the
                    // other workers so each sees it too. Shutdown's `notify_all` reaches only
                    // those waiting then; one that found the closed batch not yet stamped
                    // waits after it, and the stamp's `notify_one` may go to another worker,
                    // which takes the batch — leaving this one waiting with nothing left to
                    // wake it, and shutdown joining it forever.
                    self.work.notify_all();
                    return None;
                }
                if !spun {
                    // Spin before parking (as Go's spinning Ms do): a batch cycle is a few µs
                    // on the Host device, and a futex sleep + wake per batch costs as much.
                    spun = true;
                    parking_lot::MutexGuard::unlocked(&mut c, || self.spin_for_work());
                    continue;
                }
                self.work.wait(&mut c);
                continue;
            }
            // The submit that opened the batch stamps it (and starts its trace arrow) under
            // `central` right after its admission, and then notifies: wait for that, so the
            // batch's `opened` and arrow are its own.
            let Some(opened) = c.opened else {
                self.work.wait(&mut c);
                continue;
            };
            let now = Instant::now();
            let reason = if w.open() >= max_batch {
                CloseReason::Full
            } else if w.closed() {
                CloseReason::Shutdown
            } else if c.flush {
                CloseReason::Flush
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
                        self.work.wait_until(&mut c, deadline);
                        continue;
                    }
                    Some(_) => CloseReason::Deadline,
                    None => {
                        self.work.wait(&mut c);
                        continue;
                    }
                }
            };
            let mut blocks = Vec::new();
            let moved = self.stage.take(items, &mut blocks);
            debug_assert!(moved > 0, "open > 0 under central, and only workers take (under central)");
            c.opened = None;
            c.flush = false;
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
            return Some(Taken { seq, blocks, opened, closed_at: now, reason, flow });
        }
    }
}
