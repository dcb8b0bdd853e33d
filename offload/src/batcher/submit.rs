//! [`Submit`]: the future of one [`Batcher::submit`](super::Batcher::submit) — refused,
//! waiting for room (FIFO tickets, invariant R of the parent module), accepted into a batch,
//! or done. Never blocks the polling thread: it takes `central` or its batch's lock for a
//! short critical section and otherwise registers its waker.
//!
//! Before each `Pending` it tells the runtime what the task waits on, for a task dump and the
//! deadlock check ([`ExternalWait`]: something outside the runtime, a slot worker, will wake
//! it): `Batcher batch` with the batch's number, or `Batcher room` with the waiter's ticket
//! while it waits for room (backpressure). Two relaxed stores into the task's header; the
//! names are interned once per process.
use super::{BatchShared, Shared};
use crate::error::OffloadError;
use crate::jobs::BatchKernel;
use gmprt_runtime::dump::ExternalWait;
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// What a pending `Submit` waits on: its batch to run (`Batcher batch #seq`), or room in the
/// open batch (`Batcher room`, with its ticket). Interned at the first use.
fn external(room: bool) -> ExternalWait {
    static BATCH: OnceLock<ExternalWait> = OnceLock::new();
    static ROOM: OnceLock<ExternalWait> = OnceLock::new();
    if room {
        *ROOM.get_or_init(|| ExternalWait::named("Batcher room"))
    } else {
        *BATCH.get_or_init(|| ExternalWait::named("Batcher batch"))
    }
}

/// The future of one [`Batcher::submit`](super::Batcher::submit): resolves to the item's output, or to the error
/// that refused it (`Invalid`/`Kernel` at submit, `Closed`) or failed its batch (`Batch`).
/// Owned (`'static`) and `Send`; never blocks the polling thread.
#[must_use = "the item's result arrives through this future"]
pub struct Submit<K: BatchKernel> {
    pub(super) state: SubmitState<K>,
}

pub(super) enum SubmitState<K: BatchKernel> {
    /// Refused without entering a batch.
    Failed(Option<OffloadError>),
    /// Waiting for room. `ticket`: `None` before it first queued; `Some(t)` after — then it
    /// is either still in `waiters` or was popped and holds a reservation.
    /// `submitted`: when `submit` was called (the item's queue wait starts there).
    Waiting { shared: Arc<Shared<K>>, item: Option<K::Item>, ticket: Option<u64>, submitted: Instant },
    /// In batch `batch` at `index`.
    Accepted { batch: Arc<BatchShared<K::Output>>, index: usize },
    /// The result was returned.
    Done,
}

// `Submit` never pins its fields (the item is only ever moved by value), so it is `Unpin`
// whatever `K::Item` is.
impl<K: BatchKernel> Unpin for Submit<K> {}

impl<K: BatchKernel> fmt::Debug for Submit<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            SubmitState::Failed(_) => "failed",
            SubmitState::Waiting { .. } => "waiting for room",
            SubmitState::Accepted { .. } => "accepted",
            SubmitState::Done => "done",
        };
        f.debug_struct("Submit").field("state", &state).finish()
    }
}

impl<K: BatchKernel> Submit<K> {
    /// Whether the item is in a batch (it will get its result even if this future is
    /// dropped or the Batcher shuts down).
    pub fn is_accepted(&self) -> bool {
        matches!(self.state, SubmitState::Accepted { .. })
    }
}

/// Ticket `t`'s position in `waiters`, if it is still queued.
fn queued(waiters: &VecDeque<(u64, Waker)>, t: u64) -> Option<usize> {
    waiters.binary_search_by_key(&t, |(k, _)| *k).ok()
}

impl<K: BatchKernel> Future for Submit<K> {
    type Output = Result<K::Output, OffloadError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            match &mut this.state {
                SubmitState::Failed(e) => {
                    let e = e.take().unwrap_or(OffloadError::Closed);
                    this.state = SubmitState::Done;
                    return Poll::Ready(Err(e));
                }
                SubmitState::Accepted { batch, index } => {
                    let mut st = batch.state.lock();
                    if !st.done {
                        let slot = &mut st.entries[*index].waker;
                        match slot {
                            Some(w) if w.will_wake(cx.waker()) => {}
                            _ => *slot = Some(cx.waker().clone()),
                        }
                        external(false).waiting(batch.seq);
                        return Poll::Pending;
                    }
                    let out = match &st.failure {
                        Some(e) => Err(e.clone()),
                        None => st.entries[*index].output.take().ok_or_else(|| OffloadError::Batch {
                            batch: batch.seq,
                            kernel: "?",
                            msg: "internal: result already taken".into(),
                        }),
                    };
                    drop(st);
                    this.state = SubmitState::Done;
                    return Poll::Ready(out);
                }
                SubmitState::Waiting { shared, item, ticket, submitted } => {
                    let mut c = shared.central.lock();
                    if c.closed {
                        drop(c);
                        shared.rejected_closed.fetch_add(1, Ordering::Relaxed);
                        this.state = SubmitState::Done;
                        return Poll::Ready(Err(OffloadError::Closed));
                    }
                    let may_enter = match *ticket {
                        // Not queued yet: enters only if nobody waits and there is free room.
                        None => c.waiters.is_empty() && c.items.len() + c.reserved < shared.config.max_batch,
                        Some(t) => match queued(&c.waiters, t) {
                            Some(pos) => {
                                let w = &mut c.waiters[pos].1;
                                if !w.will_wake(cx.waker()) {
                                    *w = cx.waker().clone();
                                }
                                external(true).waiting(t);
                                return Poll::Pending;
                            }
                            // Popped by a worker: room is reserved for it (invariant R).
                            None => {
                                c.reserved -= 1;
                                true
                            }
                        },
                    };
                    if !may_enter {
                        let t = c.next_ticket;
                        c.next_ticket += 1;
                        c.waiters.push_back((t, cx.waker().clone()));
                        *ticket = Some(t);
                        external(true).waiting(t);
                        return Poll::Pending;
                    }
                    let Some(it) = item.take() else {
                        drop(c);
                        this.state = SubmitState::Done;
                        return Poll::Ready(Err(OffloadError::Closed));
                    };
                    let (batch, index, notify) = shared.accept(&mut c, it, *submitted);
                    drop(c);
                    if notify {
                        shared.work.notify_one();
                    }
                    // Poll the accepted state at once to register the waker.
                    this.state = SubmitState::Accepted { batch, index };
                }
                SubmitState::Done => {
                    return Poll::Ready(Err(OffloadError::Config("Submit polled after it completed".into())));
                }
            }
        }
    }
}

impl<K: BatchKernel> Drop for Submit<K> {
    fn drop(&mut self) {
        let SubmitState::Waiting { shared, ticket: Some(t), .. } = &self.state else { return };
        let mut c = shared.central.lock();
        if c.closed {
            return;
        }
        if let Some(pos) = queued(&c.waiters, *t) {
            c.waiters.remove(pos);
            return;
        }
        // It was given room and leaves without using it: pass the reservation on.
        c.reserved -= 1;
        let next = c.waiters.pop_front().map(|(_, w)| w);
        if next.is_some() {
            c.reserved += 1;
        }
        drop(c);
        if let Some(w) = next {
            w.wake();
        }
    }
}
