//! loom model of a P's `runnext` slot (`sched/processor.rs`): a thief's `runnext_steal` (and a
//! queue steal) racing the owner's `runqput(next = true)` / `runqget`. Checks that every task is
//! taken by exactly one side, and so polled exactly once, and (through loom's `UnsafeCell`
//! tracking of the task's stage) that whoever takes it sees the stage as written by the thread
//! that created it.
//!
//! Uses `gmprt_runtime::loom_hooks` (built only under `--cfg loom`). Run with
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p gmprt-runtime --release --test loom_runnext
//! ```
//! with no `LOOM_MAX_PREEMPTIONS`: every model here ends without a preemption bound (under a second each
//! on the 2-core VM), so loom explores every interleaving it can make, and CI runs them so
//! (`EXHAUSTIVE` in `.ci/run`).
#![cfg(loom)]

use gmprt_runtime::loom_hooks::{Scheduler, Task};
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;
use std::sync::Arc;

/// A task together with what the model knows about it.
struct Tracked {
    addr: usize,
    /// Times some side took the task.
    takes: AtomicUsize,
    /// Times its future was polled.
    polls: Arc<AtomicUsize>,
}

/// A detached task whose future counts its polls and completes at once.
fn tracked(s: &Scheduler) -> (Task, Arc<Tracked>) {
    let polls = Arc::new(AtomicUsize::new(0));
    let (task, handle) = {
        let polls = polls.clone();
        s.task(async move {
            polls.fetch_add(1, SeqCst);
        })
    };
    drop(handle); // detached: the task frees itself once run
    let t = Arc::new(Tracked { addr: task.addr(), takes: AtomicUsize::new(0), polls });
    (task, t)
}

/// Records that one side took `task`, then runs it. A second take fails the model before the
/// task is run (and freed) twice.
fn take_and_run(task: Task, known: &[Arc<Tracked>]) {
    let t = known.iter().find(|t| t.addr == task.addr()).expect("unknown task");
    if t.takes.fetch_add(1, SeqCst) != 0 {
        std::mem::forget(task); // its reference was already consumed by the other taker
        panic!("task taken twice");
    }
    task.run();
}

/// Every task was taken by exactly one side and polled exactly once.
fn assert_each_ran_once(known: &[Arc<Tracked>]) {
    for t in known {
        assert_eq!(t.takes.load(SeqCst), 1);
        assert_eq!(t.polls.load(SeqCst), 1);
    }
}

/// The owner installs a task in an empty `runnext` and takes it back while a thief (started
/// before the install) tries `runnext_steal`. Exactly one of them gets it.
#[test]
fn runnext_take_races_steal() {
    loom::model(|| {
        let (s, mut ps) = Scheduler::new(1);
        let s = Arc::new(s);
        let mut p = ps.pop().unwrap();
        let (task, a) = tracked(&s);
        let known = vec![a.clone()];

        let thief = {
            let (s, known) = (s.clone(), known.clone());
            thread::spawn(move || {
                if let Some(t) = s.runnext_steal(0) {
                    take_and_run(t, &known);
                }
            })
        };

        // An empty runnext: nothing stealable was added, so the caller would not wakep.
        assert!(!p.runqput(task, true));
        if let Some((t, from_runnext)) = p.runqget() {
            assert!(from_runnext);
            take_and_run(t, &known);
        }
        thief.join().unwrap();

        assert_each_ran_once(&known);
        assert!(p.runqget().is_none());
        drop(p);
        assert_eq!(s.live_tasks(), 0, "a task leaked");
    });
}

/// The owner installs A in `runnext`, then B, which displaces A to the local queue, then drains
/// its queue; a thief tries `runnext_steal` and a queue steal meanwhile. Each task is taken and
/// polled exactly once.
#[test]
fn runnext_displace_races_steal() {
    loom::model(|| {
        let (s, mut ps) = Scheduler::new(1);
        let s = Arc::new(s);
        let mut p = ps.pop().unwrap();
        let (task_a, a) = tracked(&s);
        let (task_b, b) = tracked(&s);
        let known = vec![a.clone(), b.clone()];

        let thief = {
            let (s, known) = (s.clone(), known.clone());
            thread::spawn(move || {
                if let Some(t) = s.runnext_steal(0) {
                    take_and_run(t, &known);
                }
                if let Some(t) = s.steal_queue(0) {
                    take_and_run(t, &known);
                }
            })
        };

        // A goes into the empty slot; B displaces A into the queue (stealable: the caller
        // would wakep) unless the thief took A from runnext first.
        assert!(!p.runqput(task_a, true));
        let _ = p.runqput(task_b, true);
        while let Some((t, _)) = p.runqget() {
            take_and_run(t, &known);
        }
        thief.join().unwrap();

        assert_each_ran_once(&known);
        drop(p);
        assert_eq!(s.live_tasks(), 0, "a task leaked");
    });
}

/// A whole steal pass against a *running* owner (`processor.rs`, "Stealing runnext"): the owner
/// installs A in `runnext`, then either runs it at once or first displaces it into its queue
/// with B; the thief's `steal_work` must not take a running P's `runnext` before its back-off
/// (a yield under loom, where the owner may run it). Every task is taken and polled exactly
/// once, no steal is early, and a `runnext` steal always follows a back-off.
fn steal_pass_against_running_owner(displace: bool) {
    loom::model(move || {
        let (s, mut ps) = Scheduler::new(2);
        let s = Arc::new(s);
        let mut thief_p = ps.pop().unwrap();
        let mut p = ps.pop().unwrap();
        assert_eq!(p.id(), 0);
        p.set_running();
        let (task_a, a) = tracked(&s);
        let (task_b, b) = tracked(&s);
        let known = vec![a.clone(), b.clone()];

        let thief = {
            let known = known.clone();
            thread::spawn(move || {
                if let Some(t) = thief_p.steal_work() {
                    take_and_run(t, &known);
                }
                drop(thief_p);
            })
        };

        assert!(!p.runqput(task_a, true));
        if displace {
            let _ = p.runqput(task_b, true);
        } else {
            take_and_run(task_b, &known); // B runs elsewhere; only A passes through runnext
        }
        while let Some((t, _)) = p.runqget() {
            take_and_run(t, &known);
        }
        thief.join().unwrap();

        assert_each_ran_once(&known);
        let (rn_steals, backoffs, early) = s.runnext_counters();
        assert_eq!(early, 0, "a running P's runnext was taken without a back-off");
        assert!(rn_steals <= backoffs, "{rn_steals} runnext steals after {backoffs} back-offs");
        drop(p);
        assert_eq!(s.live_tasks(), 0, "a task leaked");
    });
}

#[test]
fn steal_pass_backs_off_before_a_running_ps_runnext() {
    steal_pass_against_running_owner(false);
}

#[test]
fn steal_pass_backs_off_then_takes_the_displaced_task() {
    steal_pass_against_running_owner(true);
}
