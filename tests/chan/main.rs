//! Channels and `select!`: unbuffered rendezvous, close, drop-to-close, select's fairness,
//! `default` and timeouts, cancellation safety, and ping-pong across tasks.
//!
//! Deterministic on any number of cores: where a test needs an operation to be *waiting*, it
//! polls the future by hand (a counting waker also proves the wake came); across tasks it
//! synchronises on the channels themselves. Nothing sleeps to wait for another thread.
//!
//! One test binary, two files with the helpers below: `send_recv.rs` (rendezvous, buffering,
//! close, drop-to-close, cancellation), `select.rs` (`select!`).

#[path = "../common/mod.rs"]
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

mod select;
mod send_recv;
