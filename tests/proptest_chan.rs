//! Property tests of channels.
//!
//! 1. **Model-based.** Random sequences of `try_send`, `try_recv`, `close`, `len`, and
//!    pending `send`/`recv` futures that are started, polled and dropped by hand, on buffered
//!    and unbuffered channels, run against a sequential model (a `VecDeque` and two FIFOs of
//!    waiters, written from the documented semantics). After every step the results, `len()`,
//!    and *which futures were woken* must match the model exactly: a wake the model expects
//!    but that did not come is a lost wakeup.
//! 2. **Many producers, many consumers** on the gmprt runtime (1..=4 Ps), with plain or
//!    `select!` operations, closed by the last producer or early by a consumer: every value is
//!    received exactly once or returned by its failed send — none lost, none duplicated — and
//!    each consumer sees each producer's values in order.

mod common;
use common::rt;
use gmprt::runtime::chan::{chan, RecvFuture, SendError, SendFuture, TryRecvError, TrySendError};
use gmprt::runtime::select;
use proptest::prelude::*;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

// ---------------------------------------------------------------------------------------------
// 1. The sequential model
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    TrySend,
    TryRecv,
    Close,
    Len,
    StartSend,
    StartRecv,
    /// Poll the live future at this index (modulo how many are live).
    Poll(usize),
    /// Drop the live future at this index.
    Drop(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::TrySend),
        3 => Just(Op::TryRecv),
        1 => Just(Op::Close),
        1 => Just(Op::Len),
        3 => Just(Op::StartSend),
        3 => Just(Op::StartRecv),
        4 => any::<usize>().prop_map(Op::Poll),
        2 => any::<usize>().prop_map(Op::Drop),
    ]
}

/// Where a model future stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MState {
    /// Queued; not yet completable.
    Waiting,
    /// A receiver a sender completed: it will take the oldest value.
    Promised,
    /// A sender whose value a receiver took.
    Taken,
    /// Released by `close`: retries and finds the channel closed.
    Released,
}

struct MFut {
    id: usize,
    /// `Some(v)` for a send future.
    value: Option<u32>,
    state: MState,
    /// The model says it has been woken since its last poll.
    woken: bool,
}

/// The channel as documented: values in order (`q`; the first `reserved` of them by count are
/// promised), FIFOs of waiting receivers and senders.
struct Model {
    cap: usize,
    q: VecDeque<u32>,
    reserved: usize,
    closed: bool,
    recvq: VecDeque<usize>,
    sendq: VecDeque<usize>,
    futs: Vec<MFut>,
}

impl Model {
    fn free(&self) -> usize {
        self.q.len() - self.reserved
    }
    fn fut(&mut self, id: usize) -> &mut MFut {
        self.futs.iter_mut().find(|f| f.id == id).unwrap()
    }
    fn wake(&mut self, id: usize, state: MState) {
        let f = self.fut(id);
        f.state = state;
        f.woken = true;
    }

    fn send(&mut self, v: u32) -> Result<(), TrySendError<u32>> {
        if self.closed {
            return Err(TrySendError::Closed(v));
        }
        if let Some(r) = self.recvq.pop_front() {
            self.q.push_back(v);
            self.reserved += 1;
            self.wake(r, MState::Promised);
            return Ok(());
        }
        if self.free() < self.cap {
            self.q.push_back(v);
            return Ok(());
        }
        Err(TrySendError::Full(v))
    }

    /// Go's `chanrecv` without blocking; `nonblocking` (`try_recv`): a closed channel with
    /// nothing free is `Closed` even while a value is promised to another receiver.
    fn recv(&mut self, nonblocking: bool) -> Result<u32, TryRecvError> {
        if self.free() > 0 {
            let v = self.q.pop_front().unwrap();
            if self.free() < self.cap {
                if let Some(s) = self.sendq.pop_front() {
                    let sv = self.fut(s).value.take().unwrap();
                    self.q.push_back(sv);
                    self.wake(s, MState::Taken);
                }
            }
            return Ok(v);
        }
        if let Some(s) = self.sendq.pop_front() {
            let v = self.fut(s).value.take().unwrap();
            self.wake(s, MState::Taken);
            // Promised values are older: the oldest leaves, the sender's value queues.
            return Ok(match self.q.pop_front() {
                Some(oldest) => {
                    self.q.push_back(v);
                    oldest
                }
                None => v,
            });
        }
        // A receiver that will wait: closed and no promise outstanding (a promise may still be
        // given back). A non-blocking one: closed, and nothing free for it.
        let closed = if nonblocking { self.closed } else { self.drained() };
        Err(if closed { TryRecvError::Closed } else { TryRecvError::Empty })
    }

    fn drained(&self) -> bool {
        self.closed && self.reserved == 0
    }

    fn release(&mut self, q: VecDeque<usize>) {
        for id in q {
            self.wake(id, MState::Released);
        }
    }

    fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        let senders = std::mem::take(&mut self.sendq);
        self.release(senders);
        if self.drained() {
            let receivers = std::mem::take(&mut self.recvq);
            self.release(receivers);
        }
    }

    /// Polls future `id`: `Some(result)` if it completes (then it is removed).
    fn poll(&mut self, id: usize) -> Option<Result<Option<u32>, u32>> {
        let pos = self.futs.iter().position(|f| f.id == id).unwrap();
        self.futs[pos].woken = false;
        let is_send = self.futs[pos].value.is_some() || self.futs[pos].state == MState::Taken;
        let r = match (is_send, self.futs[pos].state) {
            (_, MState::Waiting) => return None,
            (false, MState::Promised) => {
                self.reserved -= 1;
                let v = self.q.pop_front();
                if self.drained() {
                    // The last promise on a closed channel: waiting receivers find it drained.
                    let receivers = std::mem::take(&mut self.recvq);
                    self.release(receivers);
                }
                Some(Ok(v))
            }
            (true, MState::Taken) => Some(Ok(None)),
            (false, MState::Released) => Some(Ok(self.recv(false).ok())),
            (true, MState::Released) => Some(Err(self.futs[pos].value.take().unwrap())),
            other => unreachable!("{other:?}"),
        };
        self.futs.remove(pos);
        r
    }

    /// Drops future `id`: returns the value it drops (a withdrawn send).
    fn drop_fut(&mut self, id: usize) -> Option<u32> {
        let pos = self.futs.iter().position(|f| f.id == id).unwrap();
        let f = self.futs.remove(pos);
        self.recvq.retain(|&r| r != id);
        self.sendq.retain(|&s| s != id);
        if f.value.is_none() && f.state == MState::Promised {
            // The promise passes on, or the value stays.
            self.reserved -= 1;
            if let Some(r) = self.recvq.pop_front() {
                self.reserved += 1;
                self.wake(r, MState::Promised);
            }
        }
        f.value
    }
}

struct Counter(AtomicUsize);
impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

enum Fut<'a> {
    Send(SendFuture<'a, u32>),
    Recv(RecvFuture<'a, u32>),
}

struct Live<'a> {
    id: usize,
    fut: Fut<'a>,
    wakes: Arc<Counter>,
    waker: Waker,
}

fn run_model(cap: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let (tx, rx) = chan::<u32>(cap);
    let mut m = Model {
        cap,
        q: VecDeque::new(),
        reserved: 0,
        closed: false,
        recvq: VecDeque::new(),
        sendq: VecDeque::new(),
        futs: Vec::new(),
    };
    let mut live: Vec<Live<'_>> = Vec::new();
    let mut next_value = 0u32;
    let mut next_id = 0usize;

    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::TrySend => {
                let v = next_value;
                next_value += 1;
                prop_assert_eq!(tx.try_send(v), m.send(v), "step {}: try_send", step);
            }
            Op::TryRecv => prop_assert_eq!(rx.try_recv(), m.recv(true), "step {}: try_recv", step),
            Op::Close => {
                if step % 2 == 0 {
                    tx.close();
                } else {
                    rx.close();
                }
                m.close();
            }
            Op::Len => prop_assert_eq!(rx.len(), m.free(), "step {}: len", step),
            Op::StartSend | Op::StartRecv => {
                let id = next_id;
                next_id += 1;
                let wakes = Arc::new(Counter(AtomicUsize::new(0)));
                let waker = Waker::from(wakes.clone());
                let mut cx = Context::from_waker(&waker);
                if matches!(op, Op::StartSend) {
                    let v = next_value;
                    next_value += 1;
                    let mut fut = tx.send(v);
                    let got = Pin::new(&mut fut).poll(&mut cx);
                    let want = match m.send(v) {
                        Ok(()) => Poll::Ready(Ok(())),
                        Err(TrySendError::Closed(v)) => Poll::Ready(Err(SendError(v))),
                        Err(TrySendError::Full(v)) => {
                            m.sendq.push_back(id);
                            m.futs.push(MFut { id, value: Some(v), state: MState::Waiting, woken: false });
                            Poll::Pending
                        }
                    };
                    prop_assert_eq!(&got, &want, "step {}: first poll of send {}", step, id);
                    if got.is_pending() {
                        live.push(Live { id, fut: Fut::Send(fut), wakes, waker });
                    }
                } else {
                    let mut fut = rx.recv();
                    let got = Pin::new(&mut fut).poll(&mut cx);
                    let want = match m.recv(false) {
                        Ok(v) => Poll::Ready(Some(v)),
                        Err(TryRecvError::Closed) => Poll::Ready(None),
                        Err(TryRecvError::Empty) => {
                            m.recvq.push_back(id);
                            m.futs.push(MFut { id, value: None, state: MState::Waiting, woken: false });
                            Poll::Pending
                        }
                    };
                    prop_assert_eq!(&got, &want, "step {}: first poll of recv {}", step, id);
                    if got.is_pending() {
                        live.push(Live { id, fut: Fut::Recv(fut), wakes, waker });
                    }
                }
            }
            Op::Poll(i) if !live.is_empty() => {
                let k = i % live.len();
                let l = &mut live[k];
                l.wakes.0.store(0, SeqCst);
                let mut cx = Context::from_waker(&l.waker);
                let want = m.poll(l.id);
                let done = match &mut l.fut {
                    Fut::Send(f) => {
                        let got = Pin::new(f).poll(&mut cx);
                        let want = match want {
                            None => Poll::Pending,
                            Some(Ok(None)) => Poll::Ready(Ok(())),
                            Some(Err(v)) => Poll::Ready(Err(SendError(v))),
                            Some(Ok(Some(_))) => unreachable!(),
                        };
                        prop_assert_eq!(&got, &want, "step {}: poll of send {}", step, l.id);
                        got.is_ready()
                    }
                    Fut::Recv(f) => {
                        let got = Pin::new(f).poll(&mut cx);
                        let want = match want {
                            None => Poll::Pending,
                            Some(Ok(v)) => Poll::Ready(v),
                            Some(Err(_)) => unreachable!(),
                        };
                        prop_assert_eq!(&got, &want, "step {}: poll of recv {}", step, l.id);
                        got.is_ready()
                    }
                };
                if done {
                    live.remove(k);
                }
            }
            Op::Drop(i) if !live.is_empty() => {
                let l = live.remove(i % live.len());
                m.drop_fut(l.id);
            }
            Op::Poll(_) | Op::Drop(_) => {}
        }
        // Wakes: exactly the futures the model completed or released since their last poll.
        for l in &live {
            let woken = l.wakes.0.load(SeqCst) > 0;
            let want = m.futs.iter().find(|f| f.id == l.id).unwrap().woken;
            prop_assert_eq!(
                woken,
                want,
                "step {}: future {} woken={} but the model says {}",
                step,
                l.id,
                woken,
                want
            );
        }
        prop_assert_eq!(rx.len(), m.free(), "step {}: len after {:?}", step, op);
        prop_assert_eq!(rx.is_closed(), m.closed);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn channel_matches_the_sequential_model(cap in 0usize..4, ops in prop::collection::vec(op(), 1..80)) {
        run_model(cap, &ops)?;
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Many producers, many consumers, on the runtime
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Mpmc {
    procs: usize,
    cap: usize,
    producers: usize,
    consumers: usize,
    per_producer: u32,
    /// Close (from a consumer) after this many values were received, instead of when the
    /// last producer finishes.
    close_after: Option<u32>,
    select: bool,
}

fn mpmc() -> impl Strategy<Value = Mpmc> {
    (1usize..=4, prop_oneof![Just(0usize), Just(1), Just(3), Just(64)], 1usize..=4, 1usize..=4, 0u32..300)
        .prop_flat_map(|(procs, cap, producers, consumers, per_producer)| {
            let total = producers as u32 * per_producer;
            (prop::option::of(0..=total), any::<bool>()).prop_map(move |(close_after, select)| Mpmc {
                procs,
                cap,
                producers,
                consumers,
                per_producer,
                close_after,
                select,
            })
        })
}

fn run_mpmc(c: &Mpmc) -> Result<(), TestCaseError> {
    let rt = rt(c.procs);
    let (received, returned) = rt.block_on({
        let c = c.clone();
        async move {
            let (tx, rx) = chan::<u32>(c.cap);
            // A channel nobody sends on, so select has a second arm that never fires.
            let (_idle_tx, idle_rx) = chan::<()>(0);
            let count = Arc::new(AtomicUsize::new(0));
            let producers: Vec<_> = (0..c.producers as u32)
                .map(|p| {
                    let (tx, idle_rx) = (tx.clone(), idle_rx.clone());
                    gmprt::spawn(async move {
                        let mut returned = Vec::new();
                        for i in 0..c.per_producer {
                            let v = p << 16 | i;
                            let r = if c.select {
                                select! {
                                    r = send(tx, v) => r,
                                    _ = recv(idle_rx) => unreachable!("nobody sends on idle"),
                                }
                            } else {
                                tx.send(v).await
                            };
                            if let Err(SendError(v)) = r {
                                returned.push(v);
                            }
                        }
                        returned
                    })
                })
                .collect();
            drop(tx);
            let consumers: Vec<_> = (0..c.consumers)
                .map(|_| {
                    let (rx, idle_rx, count) = (rx.clone(), idle_rx.clone(), count.clone());
                    gmprt::spawn(async move {
                        let mut got = Vec::new();
                        loop {
                            let v = if c.select {
                                select! {
                                    v = recv(rx) => v,
                                    _ = recv(idle_rx) => unreachable!("nobody sends on idle"),
                                }
                            } else {
                                rx.recv().await
                            };
                            let Some(v) = v else { break };
                            got.push(v);
                            let n = count.fetch_add(1, SeqCst) as u32 + 1;
                            if Some(n) == c.close_after {
                                rx.close();
                            }
                        }
                        got
                    })
                })
                .collect();
            if c.close_after == Some(0) {
                rx.close();
            }
            drop(rx);
            let mut received = Vec::new();
            for h in consumers {
                received.push(h.await.unwrap());
            }
            let mut returned = Vec::new();
            for h in producers {
                returned.extend(h.await.unwrap());
            }
            (received, returned)
        }
    });
    // Each consumer saw each producer's values in order.
    for got in &received {
        let mut last = vec![None; c.producers];
        for &v in got {
            let (p, i) = ((v >> 16) as usize, v & 0xffff);
            prop_assert!(last[p].is_none_or(|l| l < i), "{:?}: producer {}'s values out of order", c, p);
            last[p] = Some(i);
        }
    }
    let mut all: Vec<u32> = received.iter().flatten().copied().chain(returned.iter().copied()).collect();
    all.sort_unstable();
    let mut sent: Vec<u32> =
        (0..c.producers as u32).flat_map(|p| (0..c.per_producer).map(move |i| p << 16 | i)).collect();
    sent.sort_unstable();
    prop_assert_eq!(all.len(), sent.len(), "{:?}: received + returned != sent", c);
    prop_assert_eq!(all, sent, "{:?}: a value was lost or duplicated", c);
    let n_received: usize = received.iter().map(Vec::len).sum();
    match c.close_after {
        None => prop_assert!(returned.is_empty(), "{:?}: a send failed on an open channel", c),
        Some(k) => prop_assert!(n_received >= k as usize, "{:?}: closed before {} values", c, k),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn many_producers_many_consumers_lose_nothing(c in mpmc()) {
        run_mpmc(&c)?;
    }
}

/// The same, with the largest shapes and `select!`, a fixed number of times.
#[test]
fn mpmc_large_with_select() {
    for procs in [1, 2, 4] {
        for cap in [0, 1, 64] {
            for close_after in [None, Some(500)] {
                let c = Mpmc {
                    procs,
                    cap,
                    producers: 4,
                    consumers: 4,
                    per_producer: 500,
                    close_after,
                    select: true,
                };
                run_mpmc(&c).unwrap();
            }
        }
    }
}
