//! Steps 1-2 of the protocol from the submitting side (see the parent module): an entry
//! goes into the caller's lane and result block under the lane's lock, is admitted on the
//! word, and the admission that opens or fills a batch is announced under `central` (to the
//! closer, or to an idle worker).
use super::{closer, stage, trace, Block, Central, EnterError, Entry, Out, Piece, Shared};
use crate::backend::host_available;
use crate::error::OffloadError;
use crate::jobs::BatchKernel;
use std::sync::atomic::Ordering;
use std::time::Instant;

impl<K: BatchKernel> Shared<K> {
    /// Steps 1-2 of the protocol for one item (`submit`): enters `item.take()` into the
    /// caller's lane as one entry. `reserved`: the caller is a waiter holding a reservation.
    /// On `Err` the item is still in `item`.
    pub(super) fn enter_one(
        &self,
        central: Option<&mut Central>,
        item: &mut Option<K::Item>,
        submitted: Instant,
        reserved: bool,
    ) -> Result<Piece<K::Output>, EnterError> {
        debug_assert!(item.is_some());
        self.enter(central, 1, reserved, submitted, Out::One, |items| {
            items.push(item.take().expect("checked"))
        })
    }

    /// Steps 1-2 for `n` items as one entry with output `out`: under the caller's lane lock,
    /// grows the lane and its block (fallibly), admits `n` on the admission word, and only
    /// then lets `push` move the items into the lane. Then stamps and notifies as the
    /// admission says (see the `stage` module), under `central`: the caller's guard when it
    /// holds it (the slow paths), else taken here.
    #[allow(clippy::too_many_arguments)] // one body for every way in
    pub(super) fn enter(
        &self,
        central: Option<&mut Central>,
        n: usize,
        reserved: bool,
        submitted: Instant,
        out: Out<K::Output>,
        push: impl FnOnce(&mut Vec<K::Item>),
    ) -> Result<Piece<K::Output>, EnterError> {
        let lane = self.stage.lane();
        let mut l = lane.lock();
        let memory = |what: &str, e: std::collections::TryReserveError| {
            EnterError::Memory(OffloadError::Config(format!(
                "cannot grow the {what} for {n} more item(s) of {} ({e}); {}",
                self.kernel.name(),
                host_available()
            )))
        };
        l.items.try_reserve(n).map_err(|e| memory("lane", e))?;
        let block =
            l.block.get_or_insert_with(|| Block::new(self.next_batch.load(Ordering::Relaxed))).clone();
        let mut b = block.state.lock();
        b.entries.try_reserve(1).map_err(|e| memory("result entries", e))?;
        let admitted = self.stage.admit(n, reserved).map_err(EnterError::Refused)?;
        push(&mut l.items);
        b.entries.push(Entry { waker: None, submitted, out });
        let index = b.entries.len() - 1;
        drop(b);
        drop(l);
        if admitted.first || admitted.full {
            match central {
                Some(c) => {
                    self.announce(c, admitted, false);
                }
                None => {
                    if self.announce(&mut self.central.lock(), admitted, true) == closer::Armed::Start {
                        self.start_closer();
                    }
                    if admitted.first {
                        self.register_quiescent_here();
                    }
                }
            }
        }
        Ok((block, index))
    }

    /// After an admission that opened (`first`) or filled the batch: stamps the open batch
    /// and notifies an idle worker, under `central` (held by the caller) — unless a worker
    /// already waits for an older batch's deadline (`Central::watching`) and the batch is not
    /// full: that worker wakes in time for this one's deadline, and a batch its runtime can
    /// close on quiescence then costs no thread wake at all.
    pub(super) fn announce(
        &self,
        c: &mut Central,
        admitted: stage::Admitted,
        may_start: bool,
    ) -> closer::Armed {
        let mut armed = closer::Armed::No;
        if admitted.first {
            // Tracing: one arrow per batch, from the submit that opens it (see `trace`); it
            // starts before the batch's `opened`, where the trace draws its queue wait.
            c.flow = self.trace.as_ref().map(trace::submit_flow);
            c.opened = Some(Instant::now());
            if self.config.max_delay.is_zero() {
                let on_runtime = may_start && gmprt_runtime::procid().is_some();
                armed = c.closer.arm(on_runtime);
                if armed != closer::Armed::No && !admitted.full {
                    // The closer tells a worker when the runnable tasks have had their turn.
                    return armed;
                }
            }
        }
        if (admitted.full || c.watching == 0) && self.work.notify_one() {
            c.submit_wakes += 1;
        }
        armed
    }
}
