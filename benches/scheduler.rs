//! Scheduler benches: gmprt's G/M/P runtime against tokio's multi-thread runtime, in the same
//! run, with the same number of workers (Ps for gmprt, worker threads for tokio).
//!
//! Like with like (see benches/README.md):
//!
//! * Each workload is written **once**, generic over [`Sched`], and monomorphised for both
//!   runtimes; only `spawn`, the join handle and `yield_now` differ.
//! * The root of every workload is itself a spawned task on both sides, so every inner spawn
//!   comes from a worker thread: gmprt `rt.block_on(async { rt.spawn(root).await })`, tokio
//!   `rt.block_on(async { tokio::spawn(root).await })`.
//! * Tasks that wait on each other use one hand-written primitive, [`Notify`] (a flag and a
//!   `Mutex<Option<Waker>>`), identical on both sides, so only the scheduler differs.
//! * Runtimes are built once per benchmark function, outside the timed loop.
//!
//! Workers: env `BENCH_PROCS` (default 2). Every benchmark id carries `procs=N`.
//!
//! Run: `cargo bench --bench scheduler`; summarise: `python3 benches/summarize.py`.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::cell::OnceCell;
use std::future::{poll_fn, Future};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};

/// Tasks per iteration of `spawn_many`.
const SPAWN_MANY: usize = 100_000;
/// Tasks (and OS threads) per iteration of `spawn_many_1k`, the group with `std::thread`.
const SPAWN_MANY_THREADS: usize = 1_000;
/// Length of the spawn chain in `chained_spawn` (tokio's own bench uses 1_000 too).
const CHAIN_DEPTH: usize = 1_000;
/// `yield_many`: this many tasks each yield this many times.
const YIELD_TASKS: usize = 200;
const YIELDS_PER_TASK: usize = 1_000;
/// How far off the deadline every `yield_many_deadline` task runs under: never reached.
const FAR_DEADLINE: std::time::Duration = std::time::Duration::from_secs(3600);
/// Round trips in `ping_pong`.
const PING_PONGS: usize = 10_000;
/// `fan_out_fan_in`: the root spawns this many parents, each spawns this many children.
const FAN_PARENTS: usize = 1_000;
const FAN_CHILDREN: usize = 10;

#[path = "common/mod.rs"]
mod common;
use common::{config, gmprt_rt, procs, run_gmprt, run_tokio, tokio_rt, tokio_rt_timers, Gmprt, Sched, Tokio};

// ---------------------------------------------------------------------------------------------
// The signalling primitive shared by both sides

/// An auto-reset event for one waiter: `notify` sets the flag and wakes the registered waker;
/// `wait` completes once it consumes a set flag. Deliberately minimal and runtime-agnostic.
///
/// No lost wakeup: the waiter registers its waker under the mutex and then re-checks the flag;
/// the notifier sets the flag and then takes the waker under the same mutex. Whichever critical
/// section comes second sees the other side's write (the waker, or — through the mutex's
/// release/acquire — the flag).
struct Notify {
    flag: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Notify {
    fn new() -> Self {
        Notify { flag: AtomicBool::new(false), waker: Mutex::new(None) }
    }

    fn notify(&self) {
        // Release: pairs with the waiter's acquiring swap.
        self.flag.store(true, Ordering::Release);
        let waker = self.waker.lock().unwrap().take();
        if let Some(w) = waker {
            w.wake();
        }
    }

    async fn wait(&self) {
        poll_fn(|cx| {
            if self.flag.swap(false, Ordering::Acquire) {
                return Poll::Ready(());
            }
            {
                let mut slot = self.waker.lock().unwrap();
                match &mut *slot {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    slot => *slot = Some(cx.waker().clone()),
                }
            }
            if self.flag.swap(false, Ordering::Acquire) {
                return Poll::Ready(());
            }
            Poll::Pending
        })
        .await
    }
}

// ---------------------------------------------------------------------------------------------
// Workloads, each written once

/// Spawns `n` trivial tasks, then awaits every handle.
async fn spawn_many<S: Sched>(n: usize) -> usize {
    let mut handles = Vec::with_capacity(n);
    for i in 0..n {
        handles.push(S::spawn(async move { black_box(i) }));
    }
    let mut sum = 0;
    for h in handles {
        sum += h.await.unwrap();
    }
    sum
}

/// Each task spawns the next (handles detached); the last one notifies the root.
fn chain<S: Sched>(done: Arc<Notify>, left: usize) {
    if left == 0 {
        done.notify();
    } else {
        drop(S::spawn(async move { chain::<S>(done, left - 1) }));
    }
}

async fn chained_spawn<S: Sched>(depth: usize) {
    let done = Arc::new(Notify::new());
    chain::<S>(done.clone(), depth);
    done.wait().await;
}

/// `tasks` tasks each yield `yields` times; the root awaits them all.
async fn yield_many<S: Sched>(tasks: usize, yields: usize) {
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            S::spawn(async move {
                for _ in 0..yields {
                    S::yield_now().await;
                }
            })
        })
        .collect();
    for h in handles {
        h.await.unwrap();
    }
}

/// `yield_many` with each task's loop under a deadline an hour off, as a server runs each
/// request under a timeout: every worker that runs these tasks holds a pending timer while it
/// does, which is what a timer costs the rounds of the work beside it.
async fn yield_many_deadline<S: Sched>(tasks: usize, yields: usize) {
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            S::spawn(async move {
                let mut work = std::pin::pin!(async {
                    for _ in 0..yields {
                        S::yield_now().await;
                    }
                });
                let mut deadline = std::pin::pin!(S::sleep(FAR_DEADLINE));
                poll_fn(|cx| {
                    if work.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(());
                    }
                    assert!(deadline.as_mut().poll(cx).is_pending(), "an hour-off deadline passed");
                    Poll::Pending
                })
                .await
            })
        })
        .collect();
    for h in handles {
        h.await.unwrap();
    }
}

/// The root (ping) and one spawned task (pong) wake each other `n` times each way.
async fn ping_pong<S: Sched>(n: usize) {
    let ping = Arc::new(Notify::new());
    let pong = Arc::new(Notify::new());
    let other = {
        let (ping, pong) = (ping.clone(), pong.clone());
        S::spawn(async move {
            for _ in 0..n {
                pong.wait().await;
                ping.notify();
            }
        })
    };
    for _ in 0..n {
        pong.notify();
        ping.wait().await;
    }
    other.await.unwrap();
}

/// The root spawns `parents` tasks; each spawns `children` tasks and awaits them; the root
/// awaits the parents.
async fn fan_out_fan_in<S: Sched>(parents: usize, children: usize) -> usize {
    let handles: Vec<_> = (0..parents)
        .map(|_| {
            S::spawn(async move {
                let kids: Vec<_> = (0..children).map(|j| S::spawn(async move { black_box(j) })).collect();
                let mut sum = 0;
                for k in kids {
                    sum += k.await.unwrap();
                }
                sum
            })
        })
        .collect();
    let mut sum = 0;
    for h in handles {
        sum += h.await.unwrap();
    }
    sum
}

// ---------------------------------------------------------------------------------------------
// Benchmark plumbing

/// Benches one workload on both runtimes in one group. `root` builds the root future for a
/// given runtime; `check` validates one untimed run's output; the tokio runtime comes from
/// `tokio_rt` unless a constructor is given last (`tokio_rt_timers` for workloads that sleep). Each runtime is built once per
/// benchmark function, lazily on its first sample (criterion calls the closure once per
/// sample), so a benchmark excluded by a command-line filter starts no threads.
macro_rules! both {
    ($c:expr, $group:expr, $elements:expr, |$s:ident| $root:expr, $check:expr) => {
        both!($c, $group, $elements, |$s| $root, $check, tokio_rt)
    };
    ($c:expr, $group:expr, $elements:expr, |$s:ident| $root:expr, $check:expr, $tokio_rt:expr) => {{
        let procs = procs();
        let id = format!("procs={procs}");
        let mut g = $c.benchmark_group($group);
        g.throughput(Throughput::Elements($elements as u64));
        {
            type $s = Gmprt;
            let cell = OnceCell::new();
            g.bench_function(BenchmarkId::new("gmprt", &id), |b| {
                let (rt, _) = cell.get_or_init(|| {
                    let rt = gmprt_rt(procs);
                    ($check)(&run_gmprt(&rt, $root));
                    let before = rt.stats();
                    (rt, before)
                });
                b.iter(|| black_box(run_gmprt(rt, $root)))
            });
            if let Some((rt, before)) = cell.get() {
                report_gmprt_stats($group, before, &rt.stats());
            }
        }
        {
            type $s = Tokio;
            let cell = OnceCell::new();
            g.bench_function(BenchmarkId::new("tokio", &id), |b| {
                let rt = cell.get_or_init(|| {
                    let rt = ($tokio_rt)(procs);
                    ($check)(&run_tokio(&rt, $root));
                    rt
                });
                b.iter(|| black_box(run_tokio(rt, $root)))
            });
        }
        g.finish();
    }};
}

/// One stderr line of gmprt scheduler counters accumulated while a benchmark ran, so a reader
/// can see how much stealing and parking the timing includes.
fn report_gmprt_stats(
    group: &str,
    before: &gmprt::runtime::RuntimeStats,
    after: &gmprt::runtime::RuntimeStats,
) {
    let d = |a: u64, b: u64| a - b;
    eprintln!(
        "  gmprt counters for {group} (procs={}): spawned={} polls={} steals={}/{} global_takes={} parks={} unparks={} threads={}",
        after.procs,
        d(after.spawned, before.spawned),
        d(after.polls, before.polls),
        d(after.steals, before.steals),
        d(after.steal_attempts, before.steal_attempts),
        d(after.global_takes, before.global_takes),
        d(after.parks, before.parks),
        d(after.unparks, before.unparks),
        after.threads,
    );
}

fn bench_spawn_many(c: &mut Criterion) {
    let n = SPAWN_MANY;
    let expect = n * (n - 1) / 2;
    both!(c, "spawn_many", n, |S| spawn_many::<S>(n), |&sum: &usize| assert_eq!(sum, expect));
}

/// `spawn_many` at a size OS threads can do too: gmprt, tokio and `std::thread` side by side.
fn bench_spawn_many_threads(c: &mut Criterion) {
    let n = SPAWN_MANY_THREADS;
    let expect = n * (n - 1) / 2;
    both!(c, "spawn_many_1k", n, |S| spawn_many::<S>(n), |&sum: &usize| assert_eq!(sum, expect));
    let mut g = c.benchmark_group("spawn_many_1k");
    g.throughput(Throughput::Elements(n as u64));
    // Spawned from the bench thread and joined there: there is no scheduler to spawn from.
    g.bench_function("std_thread", |b| {
        b.iter(|| {
            let handles: Vec<_> = (0..n).map(|i| std::thread::spawn(move || black_box(i))).collect();
            let sum: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
            assert_eq!(sum, expect);
        })
    });
    g.finish();
}

fn bench_chained_spawn(c: &mut Criterion) {
    let depth = CHAIN_DEPTH;
    both!(c, "chained_spawn", depth, |S| chained_spawn::<S>(depth), |_: &()| ());
}

fn bench_yield_many(c: &mut Criterion) {
    let (tasks, yields) = (YIELD_TASKS, YIELDS_PER_TASK);
    both!(c, "yield_many", tasks * yields, |S| yield_many::<S>(tasks, yields), |_: &()| ());
}

/// `yield_many` under far deadlines (tokio with its timer driver on).
fn bench_yield_many_deadline(c: &mut Criterion) {
    let (tasks, yields) = (YIELD_TASKS, YIELDS_PER_TASK);
    both!(
        c,
        "yield_many_deadline",
        tasks * yields,
        |S| yield_many_deadline::<S>(tasks, yields),
        |_: &()| (),
        tokio_rt_timers
    );
}

fn bench_ping_pong(c: &mut Criterion) {
    let n = PING_PONGS;
    both!(c, "ping_pong", n, |S| ping_pong::<S>(n), |_: &()| ());
}

fn bench_fan_out_fan_in(c: &mut Criterion) {
    let (parents, children) = (FAN_PARENTS, FAN_CHILDREN);
    let expect = parents * children * (children - 1) / 2;
    // Elements: every task spawned (parents and children).
    both!(
        c,
        "fan_out_fan_in",
        parents * (children + 1),
        |S| fan_out_fan_in::<S>(parents, children),
        |&sum: &usize| assert_eq!(sum, expect)
    );
}

/// Task-memory recycling (Go's per-P `gFree`, `runtime/src/task/cache.rs`) on and off, on
/// gmprt only: the measurement behind keeping `Builder::task_cache` on by default.
fn bench_task_cache(c: &mut Criterion) {
    let procs = procs();
    let (parents, children) = (FAN_PARENTS, FAN_CHILDREN);
    let expect = parents * children * (children - 1) / 2;
    let mut g = c.benchmark_group("task_cache_fan_out");
    g.throughput(Throughput::Elements((parents * (children + 1)) as u64));
    for on in [true, false] {
        let cell = OnceCell::new();
        let name = if on { "cache_on" } else { "cache_off" };
        g.bench_function(BenchmarkId::new(name, format!("procs={procs}")), |b| {
            let rt = cell.get_or_init(|| {
                gmprt::Runtime::builder().procs(procs).task_cache(on).build().expect("start gmprt runtime")
            });
            b.iter(|| {
                let sum = run_gmprt(rt, fan_out_fan_in::<Gmprt>(parents, children));
                assert_eq!(sum, expect);
            })
        });
    }
    g.finish();
}

/// Tracing's cost: `spawn_many` (100k tasks) with tracing off and on. Each iteration builds a
/// fresh runtime (with a trace, a fresh recorder: the event cap is never reached, so every
/// event is recorded) and times only the run, not start-up or the trace's write at shutdown
/// (to `/dev/null`). The events one traced run records are printed once, so
/// (on − off) / events is the cost per recorded event.
fn bench_tracing(c: &mut Criterion) {
    let (n, procs) = (SPAWN_MANY, procs());
    let mut g = c.benchmark_group("tracing_spawn_many");
    g.throughput(Throughput::Elements(n as u64));
    for on in [false, true] {
        let id = BenchmarkId::new(if on { "on" } else { "off" }, format!("procs={procs}"));
        let mut told = false;
        g.bench_function(id, |b| {
            b.iter_custom(|iters| {
                let mut total = std::time::Duration::ZERO;
                for _ in 0..iters {
                    let mut builder = gmprt::Runtime::builder().procs(procs);
                    if on {
                        builder = builder.trace("/dev/null");
                    }
                    let rt = builder.build().expect("start gmprt runtime");
                    let t0 = std::time::Instant::now();
                    black_box(run_gmprt(&rt, spawn_many::<Gmprt>(n)));
                    total += t0.elapsed();
                    if let Some(rec) = rt.handle().trace_recorder().filter(|_| !told) {
                        told = true;
                        eprintln!(
                            "  tracing on: {} events per run ({} dropped)",
                            rec.events(),
                            rec.dropped()
                        );
                    }
                }
                total
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_spawn_many, bench_spawn_many_threads, bench_chained_spawn, bench_yield_many,
        bench_yield_many_deadline, bench_ping_pong, bench_fan_out_fan_in, bench_task_cache, bench_tracing
}
criterion_main!(benches);
