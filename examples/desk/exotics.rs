//! The path-dependent share, off the fast path: a task that values it by Monte Carlo after the
//! risk updates, conflating the way the feed handler does.
//!
//! Monte Carlo costs far more per contract than Black-Scholes (1,024 paths against one closed
//! form), so a desk does not hold its vanilla risk for it. The risk task hands each moved
//! underlying here with its new spot ([`Exotics::moved`]); this task takes every pending
//! underlying at once, values their path-dependent contracts where the placement says
//! (`Pricer::reprice_paths`) and records tick → exotics valued. An underlying that moves again
//! before its valuation starts is valued once, at its latest spot, with the age of its oldest
//! move: the state is bounded by the underlyings, as the market's is.

use super::book::{Book, McValue, Pricer};
use gmprt::runtime::chan::{Receiver, Sender};
use hdrhistogram::Histogram;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Underlyings waiting for a valuation.
#[derive(Default)]
pub struct Pending {
    /// Latest spot and oldest unvalued move per underlying.
    moved: Vec<Option<(f32, Instant)>>,
    /// Underlyings with a pending move, oldest first.
    dirty: Vec<u32>,
    /// Set once the risk task has handed over its last move.
    done: bool,
}

/// The risk task's end of the hand-over.
#[derive(Clone)]
pub struct Exotics {
    state: Arc<Mutex<Pending>>,
    wake: Sender<()>,
}

impl Exotics {
    /// A hand-over for `underlyings`, and the receiver the valuation task waits on.
    pub fn new(underlyings: usize) -> (Exotics, Receiver<()>) {
        let (wake, rx) = gmprt::runtime::chan::chan(1);
        let state = Pending { moved: vec![None; underlyings], ..Pending::default() };
        (Exotics { state: Arc::new(Mutex::new(state)), wake }, rx)
    }

    /// Underlying `u` moved to `spot`; its oldest unvalued move arrived at `at`.
    pub fn moved(&self, u: u32, spot: f32, at: Instant) {
        let mut p = self.state.lock().unwrap();
        match &mut p.moved[u as usize] {
            Some(m) => m.0 = spot,
            slot => {
                *slot = Some((spot, at));
                p.dirty.push(u);
            }
        }
        drop(p);
        // Full means a wake-up is already pending: the task takes every dirty underlying.
        let _ = self.wake.try_send(());
    }

    /// No more moves: the task values what is pending, then ends.
    pub fn finish(&self) {
        self.state.lock().unwrap().done = true;
        let _ = self.wake.try_send(());
    }

    fn take(&self) -> (Vec<(u32, f32, Instant)>, bool) {
        let mut p = self.state.lock().unwrap();
        let dirty = std::mem::take(&mut p.dirty);
        let taken = dirty
            .into_iter()
            .map(|u| {
                let (spot, at) = p.moved[u as usize].take().expect("a dirty underlying has a move");
                (u, spot, at)
            })
            .collect();
        (taken, p.done)
    }
}

/// What the valuation task hands back at the end.
pub struct Valued {
    /// The path-dependent book at its final spots.
    pub book: Book,
    /// Its value per underlying.
    pub values: Vec<McValue>,
    /// The pricer (its batches, decisions and device time).
    pub pricer: Pricer,
    /// Tick → exotics valued, µs.
    pub latency: Histogram<u64>,
}

/// The valuation task: values the whole share once, then every hand-over until `finish`.
pub async fn run(
    mut book: Book,
    mut pricer: Pricer,
    hand: Exotics,
    wake: Receiver<()>,
) -> Result<Valued, String> {
    let all: Vec<u32> = (0..book.underlyings() as u32).collect();
    let mut values = pricer.reprice_paths(&book, &all)?;
    let mut latency = Histogram::<u64>::new(3).expect("3 significant figures");
    loop {
        let (taken, done) = hand.take();
        if taken.is_empty() {
            if done {
                break;
            }
            // No wake-up is lost: every hand-over after this `take` either puts a token in the
            // channel or finds one there that this task has not consumed yet.
            let _ = wake.recv().await;
            continue;
        }
        let unds: Vec<u32> = taken.iter().map(|t| t.0).collect();
        for &(u, spot, _) in &taken {
            book.set_spot(u, spot);
        }
        let v = pricer.reprice_paths(&book, &unds)?;
        let now = Instant::now();
        for ((u, _, at), v) in taken.iter().zip(v) {
            values[*u as usize] = v;
            let _ = latency.record(now.duration_since(*at).as_micros().max(1) as u64);
        }
        gmprt::yield_now().await;
    }
    Ok(Valued { book, values, pricer, latency })
}
