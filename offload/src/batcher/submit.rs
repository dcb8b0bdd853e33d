//! [`Submit`]: the future of one [`Batcher::submit`](super::Batcher::submit) — refused,
//! waiting for room (FIFO tickets, step 4 of the `stage` module), accepted into a batch,
//! or done. Never blocks the polling thread: it takes `central`, its lane's or its block's
//! lock for a short critical section and otherwise registers its waker.
//!
//! Before each `Pending` it tells the runtime what the task waits on, for a task dump and the
//! deadlock check ([`ExternalWait`]: something outside the runtime, a slot worker, will wake
//! it): `Batcher batch` with the batch's number, or `Batcher room` with the waiter's ticket
//! while it waits for room (backpressure). Two relaxed stores into the task's header; the
//! names are interned once per process.
use super::{stage::Refused, Block, EnterError, Shared};
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
pub(super) fn external(room: bool) -> ExternalWait {
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
///
/// # Examples
///
/// ```
/// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
/// use std::time::Duration;
///
/// let cfg = BatcherConfig { max_delay: Duration::from_secs(60), ..BatcherConfig::default() };
/// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), cfg).unwrap();
/// let f = b.submit((1.0, 1.0));
/// assert!(f.is_accepted());
/// drop(f); // does not withdraw the item: it still runs, its output is dropped
/// b.shutdown(); // closes the open batch and waits for it
/// assert_eq!(b.stats().items, 1);
/// ```
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
    /// Entry `index` of `block`.
    Accepted { block: Arc<Block<K::Output>>, index: usize },
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
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    ///
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), BatcherConfig::default()).unwrap();
    /// assert!(b.submit((1.0, 1.0)).is_accepted()); // room in the open batch: in at once
    /// assert!(!b.submit((f32::NAN, 1.0)).is_accepted()); // refused by `validate`
    /// b.shutdown();
    /// assert!(!b.submit((1.0, 1.0)).is_accepted()); // refused: shut down
    /// ```
    pub fn is_accepted(&self) -> bool {
        matches!(self.state, SubmitState::Accepted { .. })
    }
}

/// Ticket `t`'s position in `waiters`, if it is still queued.
pub(super) fn queued(waiters: &VecDeque<(u64, Waker)>, t: u64) -> Option<usize> {
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
                SubmitState::Accepted { block, index } => {
                    // Published before `done`: no block lock once the batch has run.
                    if let Some(r) = block.results.get() {
                        let out = r.take(*index);
                        this.state = SubmitState::Done;
                        return Poll::Ready(out);
                    }
                    let mut st = block.state.lock();
                    if st.done {
                        // The results were set before `done`: take them above.
                        continue;
                    }
                    let seq = st.batch();
                    let slot = &mut st.entries[*index].waker;
                    match slot {
                        Some(w) if w.will_wake(cx.waker()) => {}
                        _ => *slot = Some(cx.waker().clone()),
                    }
                    external(false).waiting(seq);
                    return Poll::Pending;
                }
                SubmitState::Waiting { shared, item, ticket, submitted } => {
                    // Popped by a worker (waiters leave in ticket order, so every ticket below
                    // `served` was popped): it holds a reservation, and enters without
                    // `central`.
                    if let (Some(t), Some(_)) = (*ticket, item.as_ref())
                        && t < shared.served.load(Ordering::Acquire)
                    {
                        match shared.enter_one(None, item, *submitted, true) {
                            Ok((block, index)) => {
                                this.state = SubmitState::Accepted { block, index };
                                continue;
                            }
                            Err(EnterError::Refused(_)) => {
                                // A reservation is refused only once closed.
                                shared.rejected_closed.fetch_add(1, Ordering::Relaxed);
                                this.state = SubmitState::Done;
                                return Poll::Ready(Err(OffloadError::Closed));
                            }
                            Err(EnterError::Memory(e)) => {
                                shared.pass_reservation();
                                this.state = SubmitState::Done;
                                return Poll::Ready(Err(e));
                            }
                        }
                    }
                    let mut c = shared.central.lock();
                    let reserved = match *ticket {
                        None => false,
                        Some(t) => match queued(&c.waiters, t) {
                            Some(pos) => {
                                let w = &mut c.waiters[pos].1;
                                if !w.will_wake(cx.waker()) {
                                    *w = cx.waker().clone();
                                }
                                external(true).waiting(t);
                                return Poll::Pending;
                            }
                            // Popped by a worker: room is reserved for it (`stage`, step 4).
                            None => true,
                        },
                    };
                    if item.is_none() {
                        drop(c);
                        this.state = SubmitState::Done;
                        return Poll::Ready(Err(OffloadError::Closed));
                    }
                    match shared.enter_one(Some(&mut c), item, *submitted, reserved) {
                        Ok((block, index)) => {
                            drop(c);
                            // Poll the accepted state at once to register the waker.
                            this.state = SubmitState::Accepted { block, index };
                        }
                        Err(EnterError::Refused(Refused::NoRoom)) => {
                            debug_assert!(!reserved, "a reservation always finds room");
                            let t = c.next_ticket;
                            c.next_ticket += 1;
                            c.waiters.push_back((t, cx.waker().clone()));
                            shared.stage.set_waiters();
                            *ticket = Some(t);
                            external(true).waiting(t);
                            return Poll::Pending;
                        }
                        Err(EnterError::Refused(Refused::Closed)) => {
                            drop(c);
                            shared.rejected_closed.fetch_add(1, Ordering::Relaxed);
                            this.state = SubmitState::Done;
                            return Poll::Ready(Err(OffloadError::Closed));
                        }
                        Err(EnterError::Memory(e)) => {
                            drop(c);
                            if reserved {
                                shared.pass_reservation();
                            }
                            this.state = SubmitState::Done;
                            return Poll::Ready(Err(e));
                        }
                    }
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
        shared.leave_queue(*t);
    }
}

impl<K: BatchKernel> Shared<K> {
    /// Pops the `n` front waiters (under `central`, each given a reservation by the caller)
    /// and publishes `served` past the last one's ticket, so each finds out without
    /// `central` that it was popped. Returns their wakers.
    pub(super) fn pop_waiters<'c>(
        &self,
        c: &'c mut super::Central,
        n: usize,
    ) -> impl Iterator<Item = Waker> + use<'c, K> {
        debug_assert!(n <= c.waiters.len());
        if let Some(&(t, _)) = n.checked_sub(1).and_then(|last| c.waiters.get(last)) {
            // Release: pairs with the Acquire loads in `poll` and `leave_queue`; the
            // reservation (on the word, before this) is visible to a waiter that sees it.
            self.served.store(t + 1, Ordering::Release);
        }
        c.waiters.drain(..n).map(|(_, w)| w)
    }

    /// A waiting submit with ticket `t` goes away: out of the queue if still in it, else it
    /// holds a reservation, which passes to the next waiter (or back to the room).
    pub(super) fn leave_queue(&self, t: u64) {
        if t < self.served.load(Ordering::Acquire) {
            // Popped: it holds a reservation.
            self.pass_reservation();
            return;
        }
        let mut c = self.central.lock();
        if let Some(pos) = queued(&c.waiters, t) {
            c.waiters.remove(pos);
            if c.waiters.is_empty() {
                self.stage.clear_waiters();
            }
            return;
        }
        drop(c);
        self.pass_reservation();
    }

    /// A reservation its holder will not use goes to the front waiter (woken), or back to the
    /// room when nobody waits.
    pub(super) fn pass_reservation(&self) {
        let mut c = self.central.lock();
        if self.stage.word().closed() {
            return;
        }
        let next = self.pop_waiters(&mut c, 1).next();
        match &next {
            Some(_) if c.waiters.is_empty() => self.stage.clear_waiters(),
            Some(_) => {}
            None => self.stage.unreserve(),
        }
        drop(c);
        if let Some(w) = next {
            w.wake();
        }
    }
}
