//! [`SubmitMany`]: a task's whole slice of items (a book of contracts) in one future, with one
//! entry — and so one wake — per piece of the slice that enters a batch.
//!
//! A slice enters in as few pieces as room allows: each piece is as many of the remaining
//! items as the open batch has room for (`max_batch - open - reserved`), entered under the
//! caller's lane lock as one entry (`Out::Many`), so it is staged contiguously and scattered
//! into one `Vec`. With `max_batch` ≥ the slice and an idle Batcher that is one piece, one
//! wake. When there is no room the future queues for room as a single submit does (a ticket
//! in `waiters`, step 4 of the `stage` module); given room it enters one item with its
//! reservation, then goes on with the fast path. Items are validated all at once before any
//! enters; items that had not entered when the future is dropped or the Batcher shuts down
//! are never accepted (the pieces already in still run; their outputs are dropped).
use super::{stage::Refused, Block, EnterError, Out, Shared};
use crate::error::OffloadError;
use crate::jobs::BatchKernel;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

/// The future of [`Batcher::submit_many`](super::Batcher::submit_many): resolves to every
/// item's output in order, or to the first error (an invalid item, `Closed`, a failed batch).
///
/// # Examples
///
/// ```
/// use gmprt_offload::runtime::Runtime;
/// use gmprt_offload::{Batcher, BatcherConfig, Device, OffloadError, Saxpy};
///
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// let cfg = BatcherConfig { max_batch: 256, ..BatcherConfig::default() };
/// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), cfg).unwrap();
/// // 1000 items through batches of at most 256: several pieces, outputs in order.
/// let ys = rt.block_on(b.submit_many((0..1000).map(|i| (i as f32, 1.0)).collect())).unwrap();
/// assert!(ys.iter().enumerate().all(|(i, &y)| y == i as f32 + 1.0));
/// assert!(b.stats().batches >= 4);
/// // One invalid item fails the whole call, naming its index, before any item enters.
/// let mut book = vec![(1.0, 1.0); 100];
/// book[42].1 = f32::INFINITY;
/// match rt.block_on(b.submit_many(book)) {
///     Err(OffloadError::Invalid(e)) => assert_eq!((e.field, e.index), ("y", 42)),
///     other => panic!("{other:?}"),
/// }
/// assert_eq!(b.stats().items, 1000);
/// ```
#[must_use = "the items' results arrive through this future"]
pub struct SubmitMany<K: BatchKernel> {
    pub(super) state: ManyState<K>,
}

pub(super) enum ManyState<K: BatchKernel> {
    Failed(Option<OffloadError>),
    Running {
        shared: Arc<Shared<K>>,
        /// Items not entered yet.
        rest: std::vec::IntoIter<K::Item>,
        /// The entered pieces, in slice order: a block and the entry in it.
        pieces: Vec<(Arc<Block<K::Output>>, usize)>,
        /// Queued for room (`Some`), as `Submit`'s ticket.
        ticket: Option<u64>,
        submitted: Instant,
    },
    Done,
}

impl<K: BatchKernel> Unpin for SubmitMany<K> {}

impl<K: BatchKernel> std::fmt::Debug for SubmitMany<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (rest, pieces) = match &self.state {
            ManyState::Running { rest, pieces, .. } => (rest.len(), pieces.len()),
            _ => (0, 0),
        };
        f.debug_struct("SubmitMany").field("not_entered", &rest).field("pieces", &pieces).finish()
    }
}

impl<K: BatchKernel> SubmitMany<K> {
    pub(super) fn new(shared: &Arc<Shared<K>>, items: Vec<K::Item>) -> Self {
        let submitted = Instant::now();
        for (i, it) in items.iter().enumerate() {
            if let Err(e) = shared.kernel.validate(it, i) {
                shared.rejected_invalid.fetch_add(1, Ordering::Relaxed);
                return SubmitMany { state: ManyState::Failed(Some(e)) };
            }
        }
        let mut f = SubmitMany {
            state: ManyState::Running {
                shared: shared.clone(),
                rest: items.into_iter(),
                pieces: Vec::new(),
                ticket: None,
                submitted,
            },
        };
        // Enter what fits now (so items are batched in call order, as `submit`'s).
        if let ManyState::Running { shared, rest, pieces, ticket: None, submitted } = &mut f.state
            && let Err(e) = enter_fast(shared, None, rest, pieces, *submitted)
        {
            f.state = ManyState::Failed(Some(e));
        }
        f
    }
}

/// Enters as many pieces of `rest` as room allows without queueing. `Err` when closed (or an
/// allocation failed); `Ok` with `rest` non-empty when there is no room.
fn enter_fast<K: BatchKernel>(
    shared: &Shared<K>,
    mut central: Option<&mut super::Central>,
    rest: &mut std::vec::IntoIter<K::Item>,
    pieces: &mut Vec<(Arc<Block<K::Output>>, usize)>,
    submitted: Instant,
) -> Result<(), OffloadError> {
    while rest.len() > 0 {
        let w = shared.stage.word();
        let room = shared.config.max_batch.saturating_sub(w.open() + w.reserved()).min(rest.len());
        if room == 0 || w.waiters() {
            if w.closed() {
                shared.rejected_closed.fetch_add(1, Ordering::Relaxed);
                return Err(OffloadError::Closed);
            }
            return Ok(());
        }
        let out = Out::Many { len: room, outs: Vec::new() };
        match shared.enter(central.as_deref_mut(), room, false, submitted, out, |v| {
            v.extend(rest.by_ref().take(room))
        }) {
            Ok(p) => pieces.push(p),
            Err(EnterError::Refused(Refused::NoRoom)) => continue, // the room changed: look again
            Err(EnterError::Refused(Refused::Closed)) => {
                shared.rejected_closed.fetch_add(1, Ordering::Relaxed);
                return Err(OffloadError::Closed);
            }
            Err(EnterError::Memory(e)) => return Err(e),
        }
    }
    Ok(())
}

impl<K: BatchKernel> Future for SubmitMany<K> {
    type Output = Result<Vec<K::Output>, OffloadError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let ManyState::Running { shared, rest, pieces, ticket, submitted } = &mut this.state else {
            let out = match &mut this.state {
                ManyState::Failed(e) => Err(e.take().unwrap_or(OffloadError::Closed)),
                _ => Err(OffloadError::Config("SubmitMany polled after it completed".into())),
            };
            this.state = ManyState::Done;
            return Poll::Ready(out);
        };
        // Enter what is left: a reservation first, then the fast path, else queue for room.
        while rest.len() > 0 {
            let mut c = shared.central.lock();
            if let Some(t) = *ticket {
                if let Some(pos) = super::submit::queued(&c.waiters, t) {
                    let w = &mut c.waiters[pos].1;
                    if !w.will_wake(cx.waker()) {
                        *w = cx.waker().clone();
                    }
                    return Poll::Pending;
                }
                *ticket = None;
                let out = Out::Many { len: 1, outs: Vec::new() };
                let entered =
                    shared.enter(Some(&mut c), 1, true, *submitted, out, |v| v.extend(rest.by_ref().take(1)));
                drop(c);
                match entered {
                    Ok(p) => pieces.push(p),
                    Err(e) => {
                        if matches!(e, EnterError::Memory(_)) {
                            shared.pass_reservation();
                        }
                        return this.fail(e);
                    }
                }
                continue;
            }
            if let Err(e) = enter_fast(shared, Some(&mut c), rest, pieces, *submitted) {
                drop(c);
                this.state = ManyState::Done;
                return Poll::Ready(Err(e));
            }
            if rest.len() > 0 {
                let t = c.next_ticket;
                c.next_ticket += 1;
                c.waiters.push_back((t, cx.waker().clone()));
                shared.stage.set_waiters();
                *ticket = Some(t);
                return Poll::Pending;
            }
        }
        // Every piece entered: wait for the first one not done, then collect them all.
        for (block, index) in pieces.iter() {
            let mut st = block.state.lock();
            if !st.done {
                let slot = &mut st.entries[*index].waker;
                match slot {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => *slot = Some(cx.waker().clone()),
                }
                super::submit::external(false).waiting(st.batch());
                return Poll::Pending;
            }
        }
        let mut all = Vec::new();
        let pieces = std::mem::take(pieces);
        for (block, index) in pieces {
            let mut st = block.state.lock();
            if let Some(e) = &st.failure {
                let e = e.clone();
                drop(st);
                this.state = ManyState::Done;
                return Poll::Ready(Err(e));
            }
            if let Out::Many { outs, .. } = &mut st.entries[index].out {
                if all.is_empty() {
                    all = std::mem::take(outs);
                } else {
                    all.append(outs);
                }
            }
        }
        this.state = ManyState::Done;
        Poll::Ready(Ok(all))
    }
}

impl<K: BatchKernel> SubmitMany<K> {
    fn fail(&mut self, e: EnterError) -> Poll<Result<Vec<K::Output>, OffloadError>> {
        let e = match e {
            EnterError::Refused(_) => OffloadError::Closed,
            EnterError::Memory(e) => e,
        };
        self.state = ManyState::Done;
        Poll::Ready(Err(e))
    }
}

impl<K: BatchKernel> Drop for SubmitMany<K> {
    fn drop(&mut self) {
        if let ManyState::Running { shared, ticket: Some(t), .. } = &self.state {
            shared.leave_queue(*t);
        }
    }
}
