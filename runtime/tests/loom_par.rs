//! loom model of `parallel_for`'s claim/complete protocol (`runtime/src/par.rs`). The model's
//! threads play the caller and the helper tasks. Checks, in every interleaving:
//! * each chunk runs exactly once (a per-chunk counter is 1 at the end);
//! * everything a chunk wrote happens-before the caller's return from `wait` (the chunk data
//!   are loom `UnsafeCell`s: a write not ordered before the caller's read is a causality
//!   violation), which is what makes borrowing the caller's data sound;
//! * a late claimer (a helper that starts after all chunks were claimed) never runs a chunk,
//!   and the caller's wait always ends (loom reports a deadlock otherwise).
//!
//! Run with
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p gmprt-runtime --release --test loom_par
//! ```
//! with no `LOOM_MAX_PREEMPTIONS`: every model here ends without a preemption bound (under a second each
//! on the 2-core VM), so loom explores every interleaving it can make, and CI runs them so
//! (`EXHAUSTIVE` in `.ci/run`).
#![cfg(loom)]

use gmprt_runtime::loom_hooks::ParLoop;
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

struct Cells(Vec<UnsafeCell<u32>>);
// SAFETY: loom's UnsafeCell checks every access for races; the protocol under test is what
// orders them.
unsafe impl Sync for Cells {}
// SAFETY: as above.
unsafe impl Send for Cells {}

fn looped(len: usize, grain: usize) -> (ParLoop, Arc<Cells>) {
    let cells = Arc::new(Cells((0..len).map(|_| UnsafeCell::new(0)).collect()));
    let c = cells.clone();
    let lp = ParLoop::new(
        len,
        grain,
        Box::new(move |r: std::ops::Range<usize>| {
            for i in r {
                // SAFETY: each index belongs to one chunk, claimed once; loom checks it.
                c.0[i].with_mut(|p| unsafe { *p += 1 });
            }
        }),
    );
    (lp, cells)
}

fn check(cells: &Cells) {
    for c in &cells.0 {
        // SAFETY: read after `wait`; loom reports a race if a chunk's write is not ordered
        // before this read.
        assert_eq!(c.with(|p| unsafe { *p }), 1, "a chunk ran twice or never");
    }
}

/// The caller runs on an M: it claims chunks alongside one helper, then waits.
#[test]
fn caller_and_helper_share_chunks() {
    loom::model(|| {
        let (lp, cells) = looped(3, 1);
        let h = lp.clone();
        let t = thread::spawn(move || while h.run_one() {});
        while lp.run_one() {}
        lp.wait();
        check(&cells);
        t.join().unwrap();
    });
}

/// The caller is outside the runtime: two helpers do all the work while it waits.
#[test]
fn helpers_only() {
    loom::model(|| {
        let (lp, cells) = looped(2, 1);
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let h = lp.clone();
                thread::spawn(move || while h.run_one() {})
            })
            .collect();
        lp.wait();
        check(&cells);
        for t in ts {
            t.join().unwrap();
        }
    });
}

/// A helper that starts after the caller has seen completion finds nothing to claim.
#[test]
fn late_helper_runs_nothing() {
    loom::model(|| {
        let (lp, cells) = looped(2, 2);
        let h = lp.clone();
        while lp.run_one() {}
        lp.wait();
        check(&cells);
        let t = thread::spawn(move || assert!(!h.run_one(), "a late claimer ran a chunk"));
        t.join().unwrap();
        check(&cells);
    });
}
