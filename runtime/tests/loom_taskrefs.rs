//! loom model of the task references (`sched/taskrefs.rs`): the tasks, as a population, hold
//! one strong count of the scheduler while `task_refs > 0`, taken by the acquire that leaves 0
//! and dropped by the release that returns to 0. Checks, in every interleaving of a release
//! to 0 on a thread that holds nothing else, an acquire from 0 by a holder of the scheduler,
//! and the holder's own drop:
//! * the scheduler is alive whenever a reference is held (a probe on its `Weak`);
//! * it is dropped once the last reference and the last handle are gone (no leak).
//!
//! It fails if an acquire from 0 does not take the strong count (the scheduler is dropped
//! under the later reference) or a release to 0 does not drop it (it leaks). Run with
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p gmprt-runtime --release --test loom_taskrefs
//! ```
//! with no `LOOM_MAX_PREEMPTIONS`: every model here ends without a preemption bound (under a second each
//! on the 2-core VM), so loom explores every interleaving it can make, and CI runs them so
//! (`EXHAUSTIVE` in `.ci/run`).
#![cfg(loom)]

use gmprt_runtime::loom_hooks::Scheduler;
use loom::thread;

/// A task freed on another thread releases the last reference while the spawner acquires
/// from 0 again (a P refilling its reserve), then the spawner drops its handle first.
#[test]
fn release_to_zero_races_acquire_from_zero() {
    loom::model(|| {
        let (s, ps) = Scheduler::new(1);
        drop(ps);
        let alive = s.alive_probe();
        let task = s.acquire_refs(1); // a task's reference, handed to the thread that frees it
        let t = thread::spawn(move || task.release());
        let reserve = s.acquire_refs(2); // 0 -> 2 or 1 -> 3, racing the release
        drop(s);
        assert!(alive(), "a held reference keeps the scheduler alive");
        t.join().unwrap();
        assert!(alive(), "the reserve still holds references");
        reserve.release();
        assert!(!alive(), "the last reference and handle gone, the scheduler is dropped");
    });
}

/// Two threads each own references and release them concurrently after the only handle is
/// gone: exactly one of them drops the scheduler, after both have used it.
#[test]
fn two_releasers_after_the_handle_is_gone() {
    loom::model(|| {
        let (s, ps) = Scheduler::new(1);
        drop(ps);
        let alive = s.alive_probe();
        let (a, b) = (s.acquire_refs(1), s.acquire_refs(3));
        drop(s);
        let alive2 = alive.clone();
        let t = thread::spawn(move || {
            assert!(alive2(), "b is held");
            b.release();
        });
        assert!(alive(), "a is held");
        a.release();
        t.join().unwrap();
        assert!(!alive(), "no reference left: dropped");
    });
}
