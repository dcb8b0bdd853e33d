//! The scheduler's structural counters (issue 25): what they count, and the three that read 0
//! by design whatever the timing — a running P's `runnext` is never stolen before a back-off,
//! no M turns spinner again for a running P's `runnext` alone, and the spinning count never
//! passes the cap. Nothing here measures time: every assertion holds on any machine, however
//! loaded, because each counter checks a rule where the scheduler applies it.

use gmprt::runtime::{Runtime, RuntimeStats};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One root task spawns `n` children into its own P, then joins them (`million_tasks`' shape:
/// the spawner's `runnext` is never empty while it spawns).
fn spawn_storm(procs: usize, n: u64) -> RuntimeStats {
    let rt = Runtime::builder().procs(procs).build().unwrap();
    let sum = rt.block_on(async move {
        gmprt::spawn(async move {
            let hs: Vec<_> = (0..n).map(|i| gmprt::spawn(async move { i })).collect();
            let mut sum = 0;
            for h in hs {
                sum += h.await.unwrap();
            }
            sum
        })
        .await
        .unwrap()
    });
    assert_eq!(sum, n * (n - 1) / 2);
    rt.stats()
}

/// The rules checked where they apply, and the counters consistent with each other.
fn assert_structural(st: &RuntimeStats) {
    assert_eq!(st.runnext_steals_early, 0, "a running P's runnext taken without a back-off: {st:?}");
    assert_eq!(st.rearms_runnext_only, 0, "an M re-armed for a running P's runnext alone: {st:?}");
    assert_eq!(st.spin_over_cap, 0, "an M started spinning past busy/2: {st:?}");
    assert!(st.steals <= st.steal_attempts + st.runnext_steals, "{st:?}");
    assert!(st.stolen >= st.steals, "a successful steal takes at least one task: {st:?}");
    assert!(st.runnext_steals <= st.steals, "{st:?}");
    assert!(st.unparks <= st.startms(), "every unpark is a startm: {st:?}");
    assert!(st.rearms_runnext_only <= st.rearms, "{st:?}");
}

#[test]
fn zero_by_design_counters_read_zero_under_a_spawn_storm() {
    for procs in [2, 4, 16] {
        let st = spawn_storm(procs, 100_000);
        assert_structural(&st);
        assert_eq!(st.spawned, 100_001, "{st:?}");
        // The ratios are what `million_tasks` prints; they only need to be well defined here.
        assert!(st.steal_attempts_per_task().is_finite() && st.tasks_per_steal() >= 1.0 || st.steals == 0);
    }
}

#[test]
fn one_p_never_steals() {
    let st = spawn_storm(1, 10_000);
    assert_structural(&st);
    assert_eq!((st.steal_attempts, st.steals, st.stolen, st.runnext_backoffs), (0, 0, 0, 0), "{st:?}");
    assert_eq!(st.tasks_per_steal(), 0.0);
}

/// A parent spawns exactly one child (into its `runnext`, which wakes nobody) and then blocks
/// its M until the child has run. The child cannot run on the parent's P, so it must be
/// stolen from a *running* P's `runnext`: sysmon sees the poll hold queued work and wakes a
/// spinner, which takes the task after one back-off. Without that path the test hangs (the
/// deadline only bounds the hang).
#[test]
fn a_running_ps_runnext_is_stolen_after_a_back_off() {
    let rt = Runtime::builder().procs(2).build().unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let r2 = ran.clone();
    let ok = rt.block_on(async move {
        gmprt::spawn(async move {
            let r3 = r2.clone();
            let child = gmprt::spawn(async move { r3.store(true, SeqCst) });
            // Blocks this M (never do this in real code): only another M can run the child.
            let deadline = Instant::now() + Duration::from_secs(60);
            while !r2.load(SeqCst) && Instant::now() < deadline {
                std::hint::spin_loop();
            }
            let ok = r2.load(SeqCst);
            child.await.unwrap();
            ok
        })
        .await
        .unwrap()
    });
    assert!(ok, "the child in a blocked P's runnext was never stolen");
    assert!(ran.load(SeqCst));
    let st = rt.stats();
    assert_structural(&st);
    assert_eq!(st.runnext_steals, 1, "{st:?}");
    assert!(st.runnext_backoffs >= 1, "{st:?}");
}

/// A task that yields with nothing else queued on its P is that M's next task: re-queueing it
/// wakes no other M (idle.rs, step 1), however many times it yields and whatever the other Ms
/// are doing. Before this rule each yield paid a `wakep`, and with the other P idle a
/// `startm`: a futex wake for an M that found nothing, or took the task from the M about to
/// run it. (A spent coop budget re-queues through the same path: `yield_now::requeue_self`.)
#[test]
fn a_task_yielding_alone_wakes_no_m() {
    let rt = Runtime::builder().procs(2).build().unwrap();
    let before = rt.stats();
    let yields = rt.block_on(async {
        gmprt::spawn(async {
            let mut x = 1u64;
            for _ in 0..2_000 {
                // Some work between yields (tens of µs), so that an M woken by a yield has
                // time to look, find nothing and park again before the next one: each yield
                // then meets a parked M, which the old path woke every time.
                for _ in 0..20_000 {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
                gmprt::yield_now().await;
            }
            std::hint::black_box(x);
            2_000
        })
        .await
        .unwrap()
    });
    assert_eq!(yields, 2_000);
    let st = rt.stats();
    // No task was spawned on an M, so nothing but the yields could have submitted work.
    assert_eq!(st.startm_submit, before.startm_submit, "a yield with nothing queued woke an M: {st:?}");
}
