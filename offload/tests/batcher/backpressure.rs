//! Backpressure: submits wait while every slot is busy, waiters are served in order, a dropped
//! waiter passes its turn on, and waiters get `Closed` at shutdown.

use super::*;

#[test]
fn backpressure_holds_submits_while_every_slot_is_busy() {
    let gate = Arc::new(Gate::default());
    let b = Batcher::new(Mix { gate: Some(gate.clone()) }, &Device::host(), cfg(2, LONG, 2)).unwrap();
    // Batch 0 fills and is taken by one slot, which blocks in the kernel.
    let s: Vec<_> = (0..2).map(|x| b.submit(x)).collect();
    gate.wait_entered(1);
    // Batch 1: the other slot.
    let mut s: Vec<_> = s.into_iter().chain((2..4).map(|x| b.submit(x))).collect();
    gate.wait_entered(2);
    // Batch 2 fills the open batch; no slot is free to take it.
    s.extend((4..6).map(|x| b.submit(x)));
    assert!(s.iter().all(|f| f.is_accepted()));
    let occ = b.occupancy();
    assert_eq!((occ.open_items, occ.busy_slots, occ.waiting), (2, 2, 0));

    // The 7th item finds no room: its future waits, registered as a waiter.
    let mut seventh = b.submit(6);
    assert!(!seventh.is_accepted());
    let flag = Arc::new(Flag::default());
    assert!(poll_once(&mut seventh, &flag).is_pending());
    assert!(poll_once(&mut seventh, &flag).is_pending(), "a second poll does not queue it twice");
    assert_eq!(b.occupancy().waiting, 1);
    for f in &mut s {
        assert!(poll_once(f, &Arc::new(Flag::default())).is_pending());
    }
    assert!(!flag.0.load(Ordering::SeqCst), "nothing can free room while the kernels are held");

    // Release one run: its slot takes batch 2 (waking the waiter, which now has room) and
    // blocks in the kernel again.
    gate.release(1);
    gate.wait_entered(3);
    assert!(flag.0.load(Ordering::SeqCst), "the waiter was woken when room appeared");
    assert!(poll_once(&mut seventh, &flag).is_pending());
    assert!(seventh.is_accepted());
    assert_eq!(b.occupancy().waiting, 0);

    gate.release(usize::MAX / 2);
    b.shutdown(); // closes the batch holding the 7th item
    let rt = rt(1);
    for (x, f) in s.into_iter().chain([seventh]).enumerate() {
        assert_eq!(rt.block_on(f), Ok(mix(x as u32)));
    }
    let tl = b.timelines();
    assert!(tl.iter().all(|t| t.n <= 2));
    assert_eq!(tl.iter().map(|t| t.n).sum::<usize>(), 7);
}

#[test]
fn waiters_are_served_and_a_dropped_waiter_passes_its_turn_on() {
    let gate = Arc::new(Gate::default());
    let b = Batcher::new(Mix { gate: Some(gate.clone()) }, &Device::host(), cfg(1, LONG, 1)).unwrap();
    let first = b.submit(0);
    gate.wait_entered(1); // the only slot is busy
    let second = b.submit(1); // fills the open batch
    assert!(second.is_accepted());
    let (mut w1, mut w2) = (b.submit(2), b.submit(3));
    let (f1, f2) = (Arc::new(Flag::default()), Arc::new(Flag::default()));
    assert!(poll_once(&mut w1, &f1).is_pending());
    assert!(poll_once(&mut w2, &f2).is_pending());
    assert_eq!(b.occupancy().waiting, 2);
    gate.release(1);
    gate.wait_entered(2); // the slot took batch 1 and gave its room to w1
    assert!(f1.0.load(Ordering::SeqCst) && !f2.0.load(Ordering::SeqCst), "FIFO: w1 first");
    assert_eq!(b.occupancy().reserved, 1);
    drop(w1); // leaves without using the room: w2 gets it
    assert!(f2.0.load(Ordering::SeqCst));
    assert!(poll_once(&mut w2, &f2).is_pending());
    assert!(w2.is_accepted());
    gate.release(usize::MAX / 2);
    let rt = rt(1);
    assert_eq!(rt.block_on(first), Ok(mix(0)));
    assert_eq!(rt.block_on(second), Ok(mix(1)));
    assert_eq!(rt.block_on(w2), Ok(mix(3)));
    assert_eq!(b.stats().items, 3);
}

#[test]
fn waiters_get_closed_at_shutdown() {
    let gate = Arc::new(Gate::default());
    let b = Batcher::new(Mix { gate: Some(gate.clone()) }, &Device::host(), cfg(1, LONG, 1)).unwrap();
    let first = b.submit(0);
    gate.wait_entered(1);
    let second = b.submit(1);
    let mut third = b.submit(2);
    let woken = Arc::new(Woken::default());
    let waker = Waker::from(woken.clone());
    assert!(Pin::new(&mut third).poll(&mut Context::from_waker(&waker)).is_pending());
    // Shutdown waits for the batch held at the gate (it joins the workers): call it on another
    // thread, and open the gate once it has closed the Batcher, which wakes the waiting submit.
    let closer = {
        let b = b.clone();
        std::thread::spawn(move || b.shutdown())
    };
    woken.wait();
    assert!(b.is_closed());
    gate.release(usize::MAX / 2);
    closer.join().expect("shutdown");
    let rt = rt(1);
    assert_eq!(rt.block_on(third), Err(OffloadError::Closed), "never accepted");
    assert_eq!(rt.block_on(first), Ok(mix(0)));
    assert_eq!(rt.block_on(second), Ok(mix(1)), "accepted before shutdown");
    assert_eq!(b.stats().rejected_closed, 1);
}
