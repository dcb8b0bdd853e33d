//! Unit tests of the channel internals: the waiter slab (reuse, shrink, nothing left behind by
//! cancellation or select) and `pollorder`. Behaviour is tested in `tests/chan/`,
//! `tests/proptest_chan.rs` and `runtime/tests/loom_chan.rs`.

use super::select::poll_order;
use super::{chan, TryRecvError};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn blocking_reuses_one_slot() {
    let (tx, rx) = chan::<u32>(0);
    for i in 0..1000 {
        let mut r = rx.recv();
        assert!(poll_once(&mut r).is_pending());
        tx.try_send(i).unwrap();
        assert_eq!(poll_once(&mut r), Poll::Ready(Some(i)));
        let mut s = tx.send(i);
        assert!(poll_once(&mut s).is_pending());
        assert_eq!(rx.try_recv(), Ok(i));
        assert_eq!(poll_once(&mut s), Poll::Ready(Ok(())));
    }
    assert_eq!(rx.slab(), (0, 1, true), "one slot, reused every time");
}

#[test]
fn slab_is_freed_after_a_burst() {
    let (_tx, rx) = chan::<u32>(0);
    let mut recvs: Vec<_> = (0..3000).map(|_| rx.recv()).collect();
    for r in &mut recvs {
        assert!(poll_once(r).is_pending());
    }
    assert_eq!(rx.slab(), (3000, 3000, false));
    drop(recvs);
    assert_eq!(rx.slab(), (0, 0, true), "a slab past SHRINK_ABOVE is freed when idle");
}

#[test]
fn cancelled_operations_leave_no_waiter() {
    let (tx, rx) = chan::<String>(1);
    tx.try_send("full".into()).unwrap();
    let mut sends: Vec<_> = (0..10).map(|i| tx.send(i.to_string())).collect();
    for s in &mut sends {
        assert!(poll_once(s).is_pending());
    }
    sends.truncate(3); // drops 7 waiting senders
    assert_eq!(rx.slab().0, 3);
    drop(sends);
    assert_eq!(rx.slab().0, 0);
    assert_eq!(rx.try_recv().as_deref(), Ok("full"));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "withdrawn sends delivered nothing");
    assert!(rx.slab().2);
}

#[test]
fn select_leaves_no_waiter_behind() {
    let (a_tx, a_rx) = chan::<u32>(0);
    let (_b_tx, b_rx) = chan::<u32>(0);
    let mut sel = Box::pin(async {
        crate::select! {
            v = recv(a_rx) => v,
            v = recv(b_rx) => v,
        }
    });
    assert!(sel.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
    assert_eq!((a_rx.slab().0, b_rx.slab().0), (1, 1));
    a_tx.try_send(1).unwrap();
    assert_eq!(b_rx.slab().0, 1, "the losing arm's waiter stays until the select runs");
    assert_eq!(sel.as_mut().poll(&mut Context::from_waker(Waker::noop())), Poll::Ready(Some(1)));
    assert_eq!((a_rx.slab().0, b_rx.slab().0), (0, 0));
    assert!(a_rx.slab().2 && b_rx.slab().2);
}

#[test]
fn poll_order_is_a_uniform_permutation() {
    let mut first = [0usize; 5];
    for _ in 0..50_000 {
        let order = poll_order::<5>();
        let mut seen = order;
        seen.sort_unstable();
        assert_eq!(seen, [0, 1, 2, 3, 4]);
        first[order[0]] += 1;
    }
    // 10,000 expected each; ± 1,000 is about 11 standard deviations.
    assert!(first.iter().all(|&n| (9_000..=11_000).contains(&n)), "{first:?}");
}
