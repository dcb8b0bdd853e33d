//! Issue 11 item 5: every gmprt future that can complete without parking spends the cooperative
//! budget (`gmprt::runtime::coop`), so a task awaiting such futures in a loop still gives its P
//! back every `BUDGET` operations. Before, a loop joining 1M finished `JoinHandle`s was one
//! 48 ms poll and sysmon warned about it.
//!
//! Deterministic: each loop runs inside a future that counts its own polls. A loop of `N` ready
//! operations must take at least `N / BUDGET` polls (it yields each time the budget runs out);
//! without the budget it takes exactly one. No clock is read.

mod common;
use common::*;
use gmprt::runtime::coop::BUDGET;
use gmprt::runtime::sync::{Mutex, Once, WaitGroup};
use gmprt::runtime::time::sleep;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Ready operations per loop: enough for several budgets.
const N: usize = 10 * BUDGET as usize;

/// Wraps a future and counts how many times it was polled.
struct CountPolls<F> {
    inner: Pin<Box<F>>,
    polls: usize,
}

impl<F: Future> Future for CountPolls<F> {
    type Output = (F::Output, usize);
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.polls += 1;
        let polls = self.polls;
        self.inner.as_mut().poll(cx).map(|v| (v, polls))
    }
}

/// Runs `body` as a task on a 1-P runtime and returns its output and how many polls it took.
fn polls_of<F>(body: impl FnOnce() -> F + Send + 'static) -> (F::Output, usize)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let rt = rt(1);
    rt.block_on(async move {
        gmprt::spawn(async move { CountPolls { inner: Box::pin(body()), polls: 0 }.await }).await.unwrap()
    })
}

fn assert_yielded(what: &str, polls: usize) {
    let min = N / BUDGET as usize;
    assert!(
        polls >= min,
        "{what}: {N} ready awaits in {polls} poll(s); with a budget of {BUDGET} they take at least {min}"
    );
}

#[test]
fn joining_finished_handles_spends_budget() {
    // The handles are made (and finished) by another task, so this loop's polls count joins only.
    let rt = rt(1);
    let polls = rt.block_on(async {
        let hs: Vec<_> = (0..N as u64).map(|i| gmprt::spawn(async move { i })).collect();
        for h in &hs {
            while !h.is_finished() {
                gmprt::yield_now().await;
            }
        }
        let joiner = gmprt::spawn(CountPolls {
            inner: Box::pin(async move {
                let mut n = 0;
                for h in hs {
                    n += h.await.unwrap();
                }
                n
            }),
            polls: 0,
        });
        let (sum, polls) = joiner.await.unwrap();
        assert_eq!(sum, (0..N as u64).sum::<u64>());
        polls
    });
    assert_yielded("join of finished handles", polls);
}

#[test]
fn elapsed_sleeps_spend_budget() {
    let ((), polls) = polls_of(|| async {
        for _ in 0..N {
            sleep(Duration::ZERO).await;
        }
    });
    assert_yielded("sleep(0)", polls);
}

#[test]
fn uncontended_mutex_locks_spend_budget() {
    let (v, polls) = polls_of(|| async {
        let m = Mutex::new(0usize);
        for _ in 0..N {
            *m.lock().await += 1;
        }
        let v = *m.lock().await;
        v
    });
    assert_eq!(v, N);
    assert_yielded("Mutex::lock", polls);
}

#[test]
fn waits_on_a_zero_waitgroup_spend_budget() {
    let ((), polls) = polls_of(|| async {
        let wg = WaitGroup::new();
        for _ in 0..N {
            wg.wait().await;
        }
    });
    assert_yielded("WaitGroup::wait at zero", polls);
}

#[test]
fn calls_on_a_done_once_spend_budget() {
    let (runs, polls) = polls_of(|| async {
        let once = Once::new();
        let mut runs = 0;
        for _ in 0..N {
            once.call_once_async(|| async { runs += 1 }).await;
        }
        runs
    });
    assert_eq!(runs, 1);
    assert_yielded("Once::call_once_async when done", polls);
}
