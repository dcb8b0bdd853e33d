//! Channels and `select!`: unbuffered rendezvous, close, drop-to-close, select's fairness,
//! `default` and timeouts, cancellation safety, and ping-pong across tasks.
//!
//! Deterministic on any number of cores: where a test needs an operation to be *waiting*, it
//! polls the future by hand (a counting waker also proves the wake came); across tasks it
//! synchronises on the channels themselves. Nothing sleeps to wait for another thread.

mod common;
use common::*;
use gmprt::runtime::chan::{chan, Receiver, SendError, Sender, TryRecvError, TrySendError};
use gmprt::runtime::select;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// A waker that counts its wakes.
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

fn counting_waker() -> (Waker, Arc<Counter>) {
    let c = Arc::new(Counter(AtomicUsize::new(0)));
    (Waker::from(c.clone()), c)
}

fn wakes(c: &Counter) -> usize {
    c.0.load(SeqCst)
}

fn poll<F: Future + Unpin>(f: &mut F, w: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(w))
}

// ---------------------------------------------------------------------------------------------
// Unbuffered rendezvous

#[test]
fn unbuffered_send_completes_only_when_a_receiver_takes_the_value() {
    let (tx, rx) = chan::<u32>(0);
    assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)), "no receiver waiting");
    let (w, c) = counting_waker();
    let mut send = tx.send(7);
    assert!(poll(&mut send, &w).is_pending());
    assert!(poll(&mut send, &w).is_pending(), "still no receiver");
    assert_eq!(rx.len(), 0, "an unbuffered channel buffers nothing");
    assert_eq!(wakes(&c), 0);
    assert_eq!(rx.try_recv(), Ok(7));
    assert_eq!(wakes(&c), 1, "the receiver wakes the sender");
    assert_eq!(poll(&mut send, &w), Poll::Ready(Ok(())));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));

    // A waiting receiver makes try_send succeed, and is woken with the value.
    let mut recv = rx.recv();
    assert!(poll(&mut recv, &w).is_pending());
    assert_eq!(tx.try_send(8), Ok(()));
    assert_eq!(wakes(&c), 2);
    assert_eq!(poll(&mut recv, &w), Poll::Ready(Some(8)));
}

#[test]
fn unbuffered_sender_is_never_more_than_one_value_ahead() {
    for procs in [1, 2, 4] {
        let rt = rt(procs);
        rt.block_on(async {
            let (tx, rx) = chan::<usize>(0);
            let done = Arc::new(AtomicUsize::new(0));
            let sender = {
                let done = done.clone();
                gmprt::spawn(async move {
                    for i in 0..2000 {
                        tx.send(i).await.unwrap();
                        done.store(i + 1, SeqCst);
                    }
                })
            };
            for i in 0..2000 {
                assert_eq!(rx.recv().await, Some(i));
                // Send i+1 cannot have completed before this task receives it.
                let d = done.load(SeqCst);
                assert!(d <= i + 1, "procs={procs}: {d} sends completed after only {} receives", i + 1);
            }
            sender.await.unwrap();
            assert_eq!(rx.recv().await, None, "the sender's drop closed the channel");
        });
    }
}

#[test]
fn ping_pong_across_tasks() {
    for procs in [1, 2, 4] {
        let rt = rt(procs);
        let n = rt.block_on(async {
            let (ping_tx, ping_rx) = chan::<u64>(0);
            let (pong_tx, pong_rx) = chan::<u64>(0);
            let ponger = gmprt::spawn(async move {
                let mut n = 0;
                while let Some(v) = ping_rx.recv().await {
                    pong_tx.send(v + 1).await.unwrap();
                    n += 1;
                }
                n
            });
            let mut v = 0;
            for _ in 0..10_000 {
                ping_tx.send(v).await.unwrap();
                v = pong_rx.recv().await.unwrap();
            }
            assert_eq!(v, 10_000);
            drop(ping_tx);
            ponger.await.unwrap()
        });
        assert_eq!(n, 10_000, "procs={procs}");
        assert_balanced(&rt.stats());
    }
}

#[test]
fn buffered_channel_is_fifo_and_bounded() {
    let (tx, rx) = chan::<u32>(3);
    assert_eq!((tx.len(), tx.capacity(), tx.is_empty()), (0, 3, true));
    for i in 0..3 {
        tx.try_send(i).unwrap();
    }
    assert_eq!(tx.try_send(3), Err(TrySendError::Full(3)));
    assert_eq!(rx.len(), 3);
    // A blocked sender moves into the buffer as a receive frees a place (Go's recv).
    let (w, c) = counting_waker();
    let mut send = tx.send(3);
    assert!(poll(&mut send, &w).is_pending());
    assert_eq!(rx.try_recv(), Ok(0));
    assert_eq!(wakes(&c), 1);
    assert_eq!(rx.len(), 3, "the waiting sender's value took the freed place");
    assert_eq!(poll(&mut send, &w), Poll::Ready(Ok(())));
    let got: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    assert_eq!(got, [1, 2, 3]);
}

// ---------------------------------------------------------------------------------------------
// Close

#[test]
fn close_wakes_every_waiting_receiver() {
    let (tx, rx) = chan::<u32>(0);
    let (w, c) = counting_waker();
    let mut recvs: Vec<_> = (0..8).map(|_| rx.recv()).collect();
    for r in &mut recvs {
        assert!(poll(r, &w).is_pending());
    }
    assert!(tx.close());
    assert!(!rx.close(), "closing twice is a no-op");
    assert!(tx.is_closed() && rx.is_closed());
    assert_eq!(wakes(&c), 8);
    for r in &mut recvs {
        assert_eq!(poll(r, &w), Poll::Ready(None));
    }
    assert_eq!(tx.try_send(1), Err(TrySendError::Closed(1)));
}

#[test]
fn close_returns_the_values_of_blocked_senders() {
    let (tx, rx) = chan::<String>(1);
    tx.try_send("buffered".into()).unwrap();
    let (w, c) = counting_waker();
    let mut sends: Vec<_> = (0..5).map(|i| tx.send(format!("v{i}"))).collect();
    for s in &mut sends {
        assert!(poll(s, &w).is_pending());
    }
    rx.close();
    assert_eq!(wakes(&c), 5);
    for (i, s) in sends.iter_mut().enumerate() {
        assert_eq!(poll(s, &w), Poll::Ready(Err(SendError(format!("v{i}")))));
    }
    // What was buffered before the close is still delivered, then the end.
    assert_eq!(rx.try_recv().as_deref(), Ok("buffered"));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
}

#[test]
fn close_releases_blocked_tasks_and_loses_nothing() {
    for procs in [1, 2, 4] {
        let rt = rt(procs);
        rt.block_on(async {
            let (tx, rx) = chan::<u64>(2);
            let senders: Vec<_> = (0..8u64)
                .map(|t| {
                    let tx = tx.clone();
                    gmprt::spawn(async move {
                        let mut returned = 0u64;
                        for i in 0..200 {
                            if let Err(SendError(v)) = tx.send(t * 1000 + i).await {
                                returned += v;
                            }
                        }
                        returned
                    })
                })
                .collect();
            let mut received = 0u64;
            for _ in 0..500 {
                received += rx.recv().await.unwrap();
            }
            tx.close();
            while let Some(v) = rx.recv().await {
                received += v;
            }
            let mut returned = 0;
            for s in senders {
                returned += s.await.unwrap();
            }
            let sent: u64 = (0..8u64).map(|t| (0..200).map(|i| t * 1000 + i).sum::<u64>()).sum();
            assert_eq!(received + returned, sent, "procs={procs}: a value was lost or duplicated");
        });
    }
}

#[test]
fn dropping_every_sender_closes_the_channel() {
    let rt = rt(2);
    rt.block_on(async {
        let (tx, rx) = chan::<u32>(4);
        let tx2 = tx.clone();
        let waiter = {
            let rx = rx.clone();
            gmprt::spawn(async move {
                let mut got = Vec::new();
                while let Some(v) = rx.recv().await {
                    got.push(v);
                }
                got
            })
        };
        tx.send(1).await.unwrap();
        drop(tx);
        assert!(!rx.is_closed(), "one sender is left");
        tx2.send(2).await.unwrap();
        drop(tx2);
        assert!(rx.is_closed());
        assert_eq!(waiter.await.unwrap(), [1, 2]);
        assert_eq!(rx.recv().await, None);
    });
}

#[test]
fn dropping_every_receiver_fails_sends_with_the_value_back() {
    let drops = Counters::new(1);
    let (tx, rx) = chan::<DropGuard>(1);
    let rx2 = rx.clone();
    tx.try_send(DropGuard::new(&drops, 0)).unwrap();
    let (w, c) = counting_waker();
    let mut send = tx.send(DropGuard::new(&drops, 0));
    assert!(poll(&mut send, &w).is_pending());
    drop(rx);
    assert_eq!(wakes(&c), 0, "a receiver is left");
    drop(rx2);
    assert_eq!(drops.get(0), 1, "the buffered value is dropped with the last receiver");
    assert_eq!(wakes(&c), 1);
    match poll(&mut send, &w) {
        Poll::Ready(Err(SendError(v))) => drop(v),
        other => panic!("expected the value back, got {:?}", other.map(|r| r.is_ok())),
    }
    assert_eq!(drops.get(0), 2);
    assert!(matches!(tx.try_send(DropGuard::new(&drops, 0)), Err(TrySendError::Closed(_))));
    assert_eq!(drops.get(0), 3);
}

// ---------------------------------------------------------------------------------------------
// Cancellation safety

#[test]
fn dropped_recv_that_was_handed_a_value_gives_it_back() {
    let (tx, rx) = chan::<u32>(0);
    let (w, c) = counting_waker();
    let mut a = rx.recv();
    assert!(poll(&mut a, &w).is_pending());
    tx.try_send(1).unwrap(); // promised to `a`
    assert_eq!(wakes(&c), 1);
    drop(a);
    // Nobody else was waiting: the value stays in the channel.
    assert_eq!(rx.len(), 1);
    assert_eq!(rx.try_recv(), Ok(1));

    // With another receiver waiting, the promise passes to it.
    let (mut a, mut b) = (rx.recv(), rx.recv());
    assert!(poll(&mut a, &w).is_pending());
    assert!(poll(&mut b, &w).is_pending());
    tx.try_send(2).unwrap();
    assert_eq!(wakes(&c), 2);
    drop(a);
    assert_eq!(wakes(&c), 3, "b is woken for the value a gave back");
    assert_eq!(poll(&mut b, &w), Poll::Ready(Some(2)));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn dropped_pending_send_withdraws_its_value() {
    let drops = Counters::new(1);
    let (tx, rx) = chan::<DropGuard>(0);
    let (w, _) = counting_waker();
    let mut send = tx.send(DropGuard::new(&drops, 0));
    assert!(poll(&mut send, &w).is_pending());
    drop(send);
    assert_eq!(drops.get(0), 1, "the withdrawn value is dropped with its future");
    assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));

    // Taken by a receiver before the drop: the send happened; the receiver has the value.
    let mut send = tx.send(DropGuard::new(&drops, 0));
    assert!(poll(&mut send, &w).is_pending());
    let got = rx.try_recv().expect("the waiting sender's value");
    drop(send);
    assert_eq!(drops.get(0), 1, "the delivered value is not dropped by the send future");
    drop(got);
    assert_eq!(drops.get(0), 2);
}

#[test]
fn tasks_aborted_while_waiting_lose_nothing() {
    let rt = rt(2);
    rt.block_on(async {
        let (tx, rx) = chan::<u32>(0);
        // Receivers that are aborted while waiting (or after being promised a value).
        let doomed: Vec<_> = (0..16)
            .map(|_| {
                let rx = rx.clone();
                gmprt::spawn(async move { rx.recv().await })
            })
            .collect();
        let (done_tx, done_rx) = chan::<Option<u32>>(64);
        let keeper = {
            let rx = rx.clone();
            gmprt::spawn(async move {
                while let Some(v) = rx.recv().await {
                    done_tx.send(Some(v)).await.unwrap();
                }
            })
        };
        drop(rx);
        for i in 0..32 {
            tx.send(i).await.unwrap();
            if i == 8 {
                for h in &doomed {
                    h.abort();
                }
            }
        }
        drop(tx);
        let mut seen = Vec::new();
        for h in doomed {
            if let Ok(Some(v)) = h.await {
                seen.push(v);
            }
        }
        keeper.await.unwrap();
        while let Ok(Some(v)) = done_rx.try_recv() {
            seen.push(v);
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..32).collect::<Vec<_>>(), "every sent value received exactly once");
    });
}

// ---------------------------------------------------------------------------------------------
// select!

#[test]
fn select_chooses_uniformly_among_ready_arms() {
    const TRIALS: usize = 30_000;
    let rt = rt(1);
    let counts = rt.block_on(async {
        let (a_tx, a_rx) = chan::<()>(1);
        let (b_tx, b_rx) = chan::<()>(1);
        let (c_tx, c_rx) = chan::<()>(1);
        let mut counts = [0usize; 4];
        for _ in 0..TRIALS {
            for tx in [&a_tx, &b_tx, &c_tx] {
                let _ = tx.try_send(()); // refill whichever was taken
            }
            select! {
                _ = recv(a_rx) => counts[0] += 1,
                _ = recv(b_rx) => counts[1] += 1,
                _ = recv(c_rx) => counts[2] += 1,
                _ = std::future::ready(()) => counts[3] += 1,
            }
        }
        counts
    });
    assert_eq!(counts.iter().sum::<usize>(), TRIALS);
    // Expected 7,500 each; 25% ± 4% is more than 9 standard deviations (75).
    for (arm, &n) in counts.iter().enumerate() {
        assert!((6_300..=8_700).contains(&n), "arm {arm} chosen {n} times of {TRIALS}: {counts:?}");
    }
}

#[test]
fn select_takes_nothing_from_arms_it_does_not_choose() {
    let rt = rt(1);
    rt.block_on(async {
        let (a_tx, a_rx) = chan::<u32>(4);
        let (b_tx, b_rx) = chan::<u32>(4);
        let (c_tx, c_rx) = chan::<u32>(1);
        for i in 0..4 {
            a_tx.try_send(i).unwrap();
            b_tx.try_send(10 + i).unwrap();
        }
        let mut got = Vec::new();
        for _ in 0..8 {
            select! {
                v = recv(a_rx) => got.push(v.unwrap()),
                v = recv(b_rx) => got.push(v.unwrap()),
            }
            assert_eq!(a_rx.len() + b_rx.len(), 8 - got.len(), "exactly one value per select");
        }
        got.sort_unstable();
        assert_eq!(got, [0, 1, 2, 3, 10, 11, 12, 13]);

        // A send arm that is not chosen sends nothing.
        c_tx.try_send(99).unwrap(); // c is full
        let (d_tx, d_rx) = chan::<u32>(1);
        for _ in 0..50 {
            select! {
                r = send(c_tx, 1) => panic!("c is full, yet the send arm won: {r:?}"),
                r = send(d_tx, 2) => r.unwrap(),
            }
            assert_eq!(d_rx.try_recv(), Ok(2));
            assert_eq!(c_rx.len(), 1);
        }
        assert_eq!(c_rx.try_recv(), Ok(99));
    });
}

#[test]
fn select_default_runs_only_when_nothing_is_ready() {
    let rt = rt(1);
    rt.block_on(async {
        let (tx, rx) = chan::<u32>(1);
        let r = select! {
            v = recv(rx) => v,
            default => Some(0),
        };
        assert_eq!(r, Some(0));
        tx.try_send(5).unwrap();
        let r = select! {
            v = recv(rx) => v,
            default => Some(0),
        };
        assert_eq!(r, Some(5));
        // A future arm that is not ready at once does not block a select with `default`.
        let r = select! {
            _ = std::future::pending::<()>() => 1,
            default => 2,
        };
        assert_eq!(r, 2);
        // Degenerate shapes: only `default`; only a future.
        let r = select! { default => 3 };
        assert_eq!(r, 3);
        let r = select! { v = async { 4 } => v };
        assert_eq!(r, 4);
    });
}

#[test]
fn select_with_both_directions_on_one_channel() {
    // Go allows `select { case c <- v: case x := <-c: }`; a select never pairs with itself.
    let rt = rt(2);
    rt.block_on(async {
        let (tx, rx) = chan::<u32>(1);
        // Buffer empty: only the send arm is ready.
        select! {
            r = send(tx, 1) => r.unwrap(),
            _ = recv(rx) => unreachable!("nothing buffered"),
        }
        // Buffer full: only the recv arm is ready.
        select! {
            _ = send(tx, 2) => unreachable!("buffer full"),
            v = recv(rx) => assert_eq!(v, Some(1)),
        }
        // Unbuffered: both arms wait until another task meets one of them.
        let (tx, rx) = chan::<u32>(0);
        let (tx2, rx2) = (tx.clone(), rx.clone());
        let other = gmprt::spawn(async move { rx2.recv().await });
        let r = select! {
            r = send(tx, 5) => r.map(|()| None),
            v = recv(rx) => Ok(v),
        };
        assert_eq!(r, Ok(None), "the other task received, so the send arm won");
        assert_eq!(other.await.unwrap(), Some(5));
        drop(tx2);
    });
}

#[test]
fn select_reports_closed_channels() {
    let rt = rt(1);
    rt.block_on(async {
        let (tx, rx) = chan::<u32>(1);
        tx.try_send(1).unwrap();
        tx.close();
        let r = select! { v = recv(rx) => v };
        assert_eq!(r, Some(1), "buffered values are still delivered after close");
        let r = select! { v = recv(rx) => v };
        assert_eq!(r, None);
        let r = select! { r = send(tx, 2) => r };
        assert_eq!(r, Err(SendError(2)));
    });
}

#[test]
fn select_on_both_ends_of_an_unbuffered_channel_rendezvous() {
    // Go's common shape: a producer selects on `out <- v` or quit; a consumer selects on
    // `<-out` or another channel. Both sides are selects on one unbuffered channel.
    for procs in [1, 2, 4] {
        let rt = rt(procs);
        rt.block_on(async {
            let (tx, rx) = chan::<u32>(0);
            let (quit_tx, quit_rx) = chan::<()>(0);
            let (_never_tx, never_rx) = chan::<()>(0);
            let producer = gmprt::spawn(async move {
                let mut sent = 0;
                loop {
                    select! {
                        r = send(tx, sent) => { r.unwrap(); sent += 1; }
                        _ = recv(quit_rx) => return sent,
                    }
                }
            });
            let mut expect = 0;
            while expect < 5_000 {
                select! {
                    v = recv(rx) => { assert_eq!(v, Some(expect)); expect += 1; }
                    _ = recv(never_rx) => unreachable!(),
                }
            }
            quit_tx.send(()).await.unwrap();
            assert_eq!(producer.await.unwrap(), 5_000, "procs={procs}: a send arm took effect unchosen");
        });
    }
}

#[test]
fn select_wakes_on_close_and_on_send() {
    let (tx, rx) = chan::<u32>(0);
    let (tx2, rx2) = chan::<u32>(0);
    let (w, c) = counting_waker();
    let mut sel = Box::pin(async {
        select! {
            v = recv(rx) => (1, v),
            v = recv(rx2) => (2, v),
        }
    });
    assert!(sel.as_mut().poll(&mut Context::from_waker(&w)).is_pending());
    assert_eq!(tx2.try_send(9), Ok(()), "a waiting select counts as a waiting receiver");
    assert_eq!(wakes(&c), 1);
    assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)), "only one arm may take effect");
    assert_eq!(sel.as_mut().poll(&mut Context::from_waker(&w)), Poll::Ready((2, Some(9))));

    let mut sel = Box::pin(async {
        select! {
            v = recv(rx) => (1, v),
            v = recv(rx2) => (2, v),
        }
    });
    assert!(sel.as_mut().poll(&mut Context::from_waker(&w)).is_pending());
    tx.close();
    assert_eq!(wakes(&c), 2);
    assert_eq!(sel.as_mut().poll(&mut Context::from_waker(&w)), Poll::Ready((1, None)));
}

#[test]
fn dropped_select_loses_nothing() {
    let (tx, rx) = chan::<u32>(0);
    let (tx2, rx2) = chan::<u32>(0);
    let (w, _) = counting_waker();
    // A waiting select that a sender picked is dropped before it runs: the value stays.
    let mut sel = Box::pin(async {
        select! {
            v = recv(rx) => v,
            v = recv(rx2) => v,
        }
    });
    assert!(sel.as_mut().poll(&mut Context::from_waker(&w)).is_pending());
    tx.try_send(5).unwrap();
    drop(sel);
    assert_eq!(rx.try_recv(), Ok(5));
    assert_eq!(rx2.try_recv(), Err(TryRecvError::Empty));

    // A waiting select's send arm is withdrawn when it is dropped.
    let mut sel = Box::pin(async {
        select! {
            r = send(tx, 6) => r,
            r = send(tx2, 7) => r,
        }
    });
    assert!(sel.as_mut().poll(&mut Context::from_waker(&w)).is_pending());
    drop(sel);
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    assert_eq!(rx2.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn select_timeout_arm() {
    let rt = rt(2);
    rt.block_on(async {
        let (tx, rx) = chan::<u32>(0);
        let r = select! {
            v = recv(rx) => v,
            _ = gmprt::runtime::time::sleep(Duration::from_millis(2)) => None,
        };
        assert_eq!(r, None, "nothing was sent: the timeout fires");
        let h = gmprt::spawn(async move { tx.send(3).await });
        let r = select! {
            v = recv(rx) => v,
            _ = gmprt::runtime::time::sleep(Duration::from_secs(3600)) => unreachable!(),
        };
        assert_eq!(r, Some(3));
        h.await.unwrap().unwrap();
    });
}

#[test]
fn select_bodies_can_break_and_return() {
    async fn first_even(rx: &Receiver<u32>) -> Option<u32> {
        loop {
            select! {
                v = recv(rx) => match v {
                    Some(v) if v % 2 == 0 => return Some(v),
                    Some(_) => continue,
                    None => break,
                },
            }
        }
        None
    }
    let rt = rt(1);
    rt.block_on(async {
        let (tx, rx): (Sender<u32>, Receiver<u32>) = chan(8);
        for v in [1, 3, 4, 5] {
            tx.try_send(v).unwrap();
        }
        assert_eq!(first_even(&rx).await, Some(4));
        drop(tx);
        assert_eq!(first_even(&rx).await, None);
        // The body may move the channel end the arm borrowed.
        let (tx, rx) = chan::<u32>(1);
        tx.try_send(1).unwrap();
        select! {
            v = recv(rx) => { assert_eq!(v, Some(1)); drop(rx); }
        }
    });
}
