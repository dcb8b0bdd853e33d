//! `select!`: uniform choice among ready arms, nothing taken from arms not chosen, `default`,
//! both directions and both ends of one channel, closed channels, wakes, cancellation, the
//! timeout arm, and bodies that `break` and `return`.

use super::*;

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
