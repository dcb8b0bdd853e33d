//! Sends and receives: the unbuffered rendezvous, buffered FIFO order and bounds, ping-pong
//! across tasks, close and drop-to-close, and cancellation (dropped or aborted operations lose
//! nothing).

use super::*;

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
