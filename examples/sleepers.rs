//! A million concurrent sleepers: time and memory, gmprt against tokio.
//!
//! ```text
//! cargo run --release --example sleepers -- [--tasks N=1000000] [--sleep-ms S=1000] [--procs P] [--runtime gmprt|tokio]
//! ```
//!
//! From inside a root task, spawn N detached tasks (Go's `go func() { time.Sleep(S) }()`) that
//! each sleep S ms. Once every one has registered its timer and parked, measure the resident
//! memory above the pre-spawn baseline (bytes per sleeping task: the task, its future with the
//! timer inside, and the timer structure's slot); then wait for all of them to wake. Every task
//! checks on waking that its deadline has passed (a timer must never fire early: the count of
//! early wakes must be 0, else the example exits 1) and records how late it woke.
//!
//! `--runtime tokio` runs the same program on tokio's multi-thread runtime (time driver on, the
//! same worker count); run the two in separate processes so that each RSS delta is clean.
//!
//! The last line is machine-readable:
//! `sleepers runtime=gmprt tasks=1000000 procs=2 sleep_ms=1000 elapsed_ms=… bytes_per_task=… early=0 spawn_ms=… last_late_ms=… max_late_ms=…`
//!
//! Target (issue 3): ≤ 256 bytes per sleeping task, and ≤ 0.7× tokio's memory.

#[path = "common/mod.rs"]
mod common;
use clap::Parser;
use common::{check_tasks, count_in, fail, positive, rss, Cli, Procs, Rt, Which};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

/// Keeps `Instant + Duration` from overflowing.
const MAX_SLEEP_MS: usize = 86_400_000; // one day

const NAME: &str = "sleepers";

/// A million concurrent sleepers: bytes per sleeping task, lateness, early wakes (must be 0).
#[derive(Parser, Debug)]
#[command(name = NAME)]
struct Args {
    /// Sleeping tasks, written 1000000, 1_000_000 or 1e6
    #[arg(long, value_name = "N", default_value_t = 1_000_000, value_parser = positive)]
    tasks: usize,
    /// How long each task sleeps, in ms (at most one day)
    #[arg(long, value_name = "S", default_value_t = 1000, value_parser = count_in(1, MAX_SLEEP_MS))]
    sleep_ms: usize,
    #[command(flatten)]
    procs: Procs,
    /// The runtime that runs the program
    #[arg(long, value_enum, value_name = "RUNTIME", default_value_t = Which::Gmprt)]
    runtime: Which,
}

impl Cli for Args {}

/// Counts events and wakes one waiter when the count reaches zero.
struct Latch {
    left: AtomicUsize,
    waker: Mutex<Option<Waker>>,
}

impl Latch {
    fn new(n: usize) -> Self {
        Latch { left: AtomicUsize::new(n), waker: Mutex::new(None) }
    }
    fn count_down(&self) {
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            if let Some(w) = self.waker.lock().unwrap().take() {
                w.wake();
            }
        }
    }
    async fn wait(&self) {
        std::future::poll_fn(|cx| {
            let mut slot = self.waker.lock().unwrap();
            if self.left.load(Ordering::Acquire) == 0 {
                return Poll::Ready(());
            }
            *slot = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

/// What every sleeper reports to. One block for the whole run, leaked, so that each task holds
/// a plain `&'static` (8 bytes in its future, no reference count to bump).
struct Board {
    t0: Instant,
    sleep: Duration,
    asleep: Latch,
    done: Latch,
    early: AtomicUsize,
    /// Latest deadline, latest wake, and largest lateness, in ns (deadlines and wakes from t0).
    last_deadline_ns: AtomicU64,
    last_wake_ns: AtomicU64,
    max_late_ns: AtomicU64,
}

/// One sleeper: take a deadline S from now, register the timer and report "asleep", sleep,
/// then check the clock against the deadline.
async fn sleeper<R: Rt>(b: &'static Board) {
    let deadline = Instant::now() + b.sleep;
    let mut sleep = pin!(R::sleep_until(deadline));
    // The first poll registers the timer and parks; only then does this task count as asleep.
    let first = std::future::poll_fn(|cx| Poll::Ready(sleep.as_mut().poll(cx))).await;
    b.last_deadline_ns.fetch_max((deadline - b.t0).as_nanos() as u64, Ordering::Relaxed);
    b.asleep.count_down();
    if first.is_pending() {
        sleep.await;
    }
    let woke = Instant::now();
    if woke < deadline {
        b.early.fetch_add(1, Ordering::Relaxed);
    }
    let late = woke.saturating_duration_since(deadline).as_nanos() as u64;
    b.max_late_ns.fetch_max(late, Ordering::Relaxed);
    b.last_wake_ns.fetch_max((woke - b.t0).as_nanos() as u64, Ordering::Relaxed);
    b.done.count_down();
}

// In the `gmprt` command, which includes this file as a module, `main_from` is called instead.
#[allow(dead_code)]
fn main() {
    main_from(std::env::args_os().collect());
}

/// Parses `args` (the program's name first) and runs the story: what `main` and the `gmprt`
/// command call. `--help` prints and exits 0; a bad command line prints why and exits 2.
pub fn main_from(args: Vec<std::ffi::OsString>) {
    let a: Args = common::parse_from(args);
    // Every sleeper is at least its task's header: refuse a count that cannot fit up front.
    check_tasks("--tasks", a.tasks).unwrap_or_else(|e| fail(NAME, e));
    match a.runtime {
        Which::Tokio => run(a.procs.tokio().unwrap_or_else(|e| fail("sleepers: tokio", e)), &a),
        Which::Gmprt => run(a.procs.gmprt().unwrap_or_else(|e| fail(NAME, e)), &a),
    }
}

fn run<R: Rt>(rt: R, a: &Args) {
    let (procs, n) = (rt.procs(), a.tasks);
    let sleep = Duration::from_millis(a.sleep_ms as u64);
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let ms = |ns: u64| ns as f64 / 1e6;

    let (rss_before, _) = rss();
    let t0 = Instant::now();
    let board: &'static Board = Box::leak(Box::new(Board {
        t0,
        sleep,
        asleep: Latch::new(n),
        done: Latch::new(n),
        early: AtomicUsize::new(0),
        last_deadline_ns: AtomicU64::new(0),
        last_wake_ns: AtomicU64::new(0),
        max_late_ns: AtomicU64::new(0),
    }));
    // The root is itself a task, so every spawn comes from inside the runtime on both peers.
    rt.block_on(async move {
        R::spawn(async move {
            for i in 0..n {
                R::go(sleeper::<R>(board));
                if i % 1024 == 1023 {
                    // Futures cannot be preempted: let this P poll the new sleepers now and
                    // then instead of holding it for the whole spawn loop.
                    R::yield_now().await;
                }
            }
            board.asleep.wait().await;
        })
        .await
    });
    let spawned = t0.elapsed();
    let (rss_asleep, _) = rss();
    let timers = rt.timers();
    let asleep_bytes = rss_asleep.saturating_sub(rss_before);
    let bytes_per_task = asleep_bytes as f64 / n as f64;

    rt.block_on(board.done.wait());
    let elapsed = t0.elapsed();
    let (_, peak) = rss();
    let counters = rt.stats_line();
    drop(rt);

    let early = board.early.load(Ordering::Relaxed);
    let last_late_ns = board.last_wake_ns.load(Ordering::Relaxed) as i128
        - board.last_deadline_ns.load(Ordering::Relaxed) as i128;
    let last_late_ms = last_late_ns as f64 / 1e6;
    let max_late_ms = ms(board.max_late_ns.load(Ordering::Relaxed));
    let spawn_ms = spawned.as_secs_f64() * 1e3;
    let elapsed_ms = elapsed.as_secs_f64() * 1e3;

    println!(
        "{} on {procs} procs: spawned {n} sleepers of {} ms, all asleep after {spawn_ms:.1} ms{}",
        R::NAME,
        a.sleep_ms,
        timers.map_or(String::new(), |t| format!(" (the runtime counts {t} pending timers)"))
    );
    if spawned >= sleep {
        println!(
            "warning: the first deadlines passed before the last sleeper was asleep, so not all {n} were asleep at once; the memory figure undercounts (use a larger --sleep-ms)"
        );
    } else if let Some(t) = timers.filter(|&t| t != n) {
        println!("warning: {n} sleepers asleep but the runtime counts {t} timers");
    }
    println!(
        "memory while all asleep: {:.1} MiB above baseline = {bytes_per_task:.0} bytes per sleeping task (task + future + timer); peak RSS {:.1} MiB",
        mib(asleep_bytes),
        mib(peak)
    );
    println!(
        "all woke {elapsed_ms:.1} ms after the first spawn; the last woke {last_late_ms:.2} ms after the latest deadline; largest lateness of any task {max_late_ms:.2} ms"
    );
    println!("early wakes: {early} (must be 0: a timer never fires before its deadline)");
    if let Some(l) = counters {
        println!("{l}");
    }
    println!(
        "sleepers runtime={} tasks={n} procs={procs} sleep_ms={} elapsed_ms={elapsed_ms:.1} bytes_per_task={bytes_per_task:.0} early={early} spawn_ms={spawn_ms:.1} last_late_ms={last_late_ms:.2} max_late_ms={max_late_ms:.2}",
        R::NAME,
        a.sleep_ms
    );
    if early > 0 {
        eprintln!("sleepers: {early} tasks woke before their deadline");
        std::process::exit(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::error::ErrorKind;
    use common::testing::{assert_too_big, cli_contract, parse_error};
    use common::try_parse_from;

    #[test]
    fn cli() {
        cli_contract::<Args>(NAME);
        let a: Args = try_parse_from([NAME]).unwrap();
        assert_eq!((a.tasks, a.sleep_ms, a.procs.n, a.runtime), (1_000_000, 1000, None, Which::Gmprt));
        for bad in ["0", "86_400_001"] {
            let text = parse_error::<Args>(&[NAME, "--sleep-ms", bad], ErrorKind::ValueValidation, 2);
            assert!(text.contains("between 1 and 86400000"), "{text}");
        }
    }

    #[test]
    fn sleepers_that_cannot_fit_are_a_clear_error() {
        let a: Args = try_parse_from([NAME, "--tasks", "1e19"]).unwrap();
        assert_too_big(check_tasks("--tasks", a.tasks), "--tasks 10000000000000000000");
    }
}
