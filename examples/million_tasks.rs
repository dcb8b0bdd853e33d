//! A million green tasks on a few cores: spawn, join, and park.
//!
//! ```text
//! cargo run --release --example million_tasks -- [--tasks N] [--procs P] [--park] [--runtime gmprt|tokio]
//! ```
//!
//! * default (`mode=spawn`): from inside a task, spawn N tasks that each do a little
//!   arithmetic, join them all, and report the time per task.
//! * `--park`: keep all N tasks alive and suspended at once, each waiting on one shared gate,
//!   report the memory each parked task costs, then open the gate and let them finish.
//! * `--detached` (`mode=detached`): Go's peer program (`benches/go/million_tasks`) task for
//!   task: N detached tasks (no `JoinHandle`, like `go f()`), each counting down one latch (a
//!   `sync.WaitGroup`) that the root waits on. Like Go's closures, which capture `&wg`, the
//!   tasks borrow the latch (`&'static`, leaked once per run) rather than each cloning an `Arc`
//!   of it. The default mode does more: each task does a little arithmetic, and keeps its
//!   result until the root joins it.
//!
//! * `--warm`: run the spawn + join (or `--detached`) program once untimed first, then time a
//!   second run in the same process. It then reuses memory the first run left (gmprt's cell
//!   heap, the allocator's for tokio) instead of taking a million fresh pages from the kernel:
//!   the scheduler's own cost, with the first touch of fresh memory (a fifth of a cold 1M run
//!   on the 2-core VM) left out. Counters and latencies cover both runs.
//!
//! `--runtime tokio` runs the same program on tokio's multi-thread runtime with the same worker
//! count (its peer figures, for ratios; run both in one session, as `benches/README.md` does).
//!
//! The last line is machine-readable:
//! `million_tasks mode=spawn tasks=1000000 procs=2 elapsed_ms=… ns_per_task=… peak_rss_mib=… bytes_per_task=…`
//!
//! Go's comparison point: a blocked goroutine costs ~2.7 KB (a 2 KB stack plus the `g` and a
//! `sudog`); a gmprt task costs its future plus a 72-byte header, because it has no stack.

#[path = "common/mod.rs"]
mod common;
use clap::Parser;
use common::{check_tasks, fail, positive, rss, try_vec, Cli, Procs, Rt, TooBig, Which};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

const NAME: &str = "million_tasks";

/// Spawns and joins N green tasks, or keeps all N parked at once (--park), on gmprt or tokio.
#[derive(Parser, Debug)]
#[command(name = NAME)]
struct Args {
    /// Tasks, written 1000000, 1_000_000 or 1e6
    #[arg(long, value_name = "N", default_value_t = 1_000_000, value_parser = positive)]
    tasks: usize,
    #[command(flatten)]
    procs: Procs,
    /// Keep all N tasks suspended at once on one gate and report the bytes each costs
    #[arg(long, conflicts_with = "detached")]
    park: bool,
    /// Spawn N detached tasks that count down one latch, as Go's peer does (goroutines and a
    /// WaitGroup), instead of joining each task's result
    #[arg(long)]
    detached: bool,
    /// Run the program once untimed first and time a second run, which reuses the first run's
    /// memory instead of faulting fresh pages in (counters cover both runs)
    #[arg(long, conflicts_with = "park")]
    warm: bool,
    /// The runtime that runs the program
    #[arg(long, value_enum, value_name = "RUNTIME", default_value_t = Which::Gmprt)]
    runtime: Which,
    /// Print the figures (and gmprt's RuntimeStats, latency percentiles included) as JSON
    /// instead of text
    #[arg(long)]
    json: bool,
}

impl Cli for Args {}

/// A gate that many tasks wait on at once (one waker slot per waiter, like a Go channel's
/// list of sudogs).
#[derive(Default)]
struct Gate {
    open: AtomicBool,
    waiters: Mutex<Vec<Waker>>,
}

impl Gate {
    fn wait(self: &Arc<Self>) -> GateWait {
        GateWait { gate: self.clone(), registered: false }
    }
    fn open(&self) {
        self.open.store(true, Ordering::SeqCst);
        let ws = std::mem::take(&mut *self.waiters.lock().unwrap());
        for w in ws {
            w.wake();
        }
    }
}

struct GateWait {
    gate: Arc<Gate>,
    registered: bool,
}

impl Future for GateWait {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.gate.open.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        if !self.registered {
            let mut ws = self.gate.waiters.lock().unwrap();
            // Re-check under the lock: `open` takes the list under the same lock.
            if self.gate.open.load(Ordering::SeqCst) {
                return Poll::Ready(());
            }
            ws.push(cx.waker().clone());
            drop(ws);
            self.registered = true;
        }
        Poll::Pending
    }
}

/// Counts events and wakes one waiter when the count reaches a target.
struct Latch {
    left: AtomicUsize,
    waker: Mutex<Option<Waker>>,
}

impl Latch {
    fn new(n: usize) -> Arc<Self> {
        Arc::new(Latch { left: AtomicUsize::new(n), waker: Mutex::new(None) })
    }
    fn count_down(&self) {
        let left = self.left.fetch_sub(1, Ordering::AcqRel);
        assert!(left > 0, "the latch was counted down more times than it counts: a task ran twice");
        if left == 1 {
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

#[inline(never)]
fn little_arithmetic(i: u64) -> u64 {
    // A few dependent multiply-adds: "a little arithmetic", not a benchmark of arithmetic.
    let mut x = i;
    for _ in 0..8 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    }
    x
}

/// The spawning loops yield every this many spawns: ~200 µs of spawning at a time, far below
/// the 10 ms after which sysmon reports a poll as hogging its P.
const YIELD_EVERY: u64 = 1024;

fn spawn_mode<R: Rt>(rt: &R, n: usize) -> Result<(Duration, u64), TooBig> {
    let t0 = Instant::now();
    // The root is itself a task, so every spawn comes from inside the runtime on both peers.
    let checksum = rt.block_on(async move {
        R::spawn(async move {
            let mut handles = try_vec(n, &format!("--tasks {n}"), "a join handle")?;
            for i in 0..n as u64 {
                handles.push(R::spawn(async move { little_arithmetic(i) }));
                // A loop of 1M spawns is one long poll: yield now and then, as the runtime's
                // long-poll report asks (Go would preempt the loop instead).
                if i % YIELD_EVERY == YIELD_EVERY - 1 {
                    R::yield_now().await;
                }
            }
            let mut acc = 0u64;
            for h in handles {
                acc = acc.wrapping_add(h.await);
            }
            Ok::<_, TooBig>(acc)
        })
        .await
    })?;
    let elapsed = t0.elapsed();
    let expect = (0..n as u64).fold(0u64, |a, i| a.wrapping_add(little_arithmetic(i)));
    assert_eq!(checksum, expect, "a task's result was lost or wrong");
    Ok((elapsed, checksum))
}

fn detached_mode<R: Rt>(rt: &R, n: usize) -> Duration {
    let t0 = Instant::now();
    // One small allocation per run, never freed: the tasks borrow the latch as Go's closures
    // borrow `wg`, with no reference count to write per task.
    let done: &'static Latch =
        Box::leak(Box::new(Latch { left: AtomicUsize::new(n), waker: Mutex::new(None) }));
    rt.block_on(async move {
        R::spawn(async move {
            for i in 0..n as u64 {
                R::go(async move { done.count_down() });
                if i % YIELD_EVERY == YIELD_EVERY - 1 {
                    R::yield_now().await;
                }
            }
            // Every task counted down once: a second count-down would have panicked, and the
            // wait ends only at 0.
            done.wait().await;
        })
        .await
    });
    t0.elapsed()
}

struct ParkReport {
    park_elapsed: Duration,
    release_elapsed: Duration,
    parked_bytes: u64,
}

fn park_mode<R: Rt>(rt: &R, n: usize) -> ParkReport {
    let gate = Arc::new(Gate::default());
    let parked = Latch::new(n);
    let done = Latch::new(n);
    let (rss_before, _) = rss();
    let t0 = Instant::now();
    let (g, p, d) = (gate.clone(), parked.clone(), done.clone());
    rt.block_on(async move {
        R::spawn(async move {
            for i in 0..n {
                if i as u64 % YIELD_EVERY == YIELD_EVERY - 1 {
                    R::yield_now().await;
                }
                let (g, p, d) = (g.clone(), p.clone(), d.clone());
                // Detached (like `go f()`): no JoinHandle kept, so only the task is measured.
                R::go(async move {
                    let mut wait = g.wait();
                    // First poll registers with the gate, then we report "parked".
                    if std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut wait).poll(cx))).await.is_pending()
                    {
                        p.count_down();
                        wait.await;
                    } else {
                        p.count_down();
                    }
                    d.count_down();
                });
            }
            p.wait().await;
        })
        .await
    });
    let park_elapsed = t0.elapsed();
    // A task counts down `parked` inside the poll that parks it; the runtime counts it parked
    // only when that poll has returned `Pending`. The last few may still be returning when the
    // root sees 0, so wait for the runtime's own count to catch up before reading the memory.
    if let Some(parked) = wait_for_parked(rt, n) {
        assert!(parked >= n, "expected {n} parked tasks, the runtime says {parked} after 30 s");
    }
    let (rss_parked, _) = rss();
    let t1 = Instant::now();
    gate.open();
    rt.block_on(done.wait());
    ParkReport {
        park_elapsed,
        release_elapsed: t1.elapsed(),
        parked_bytes: rss_parked.saturating_sub(rss_before),
    }
}

/// Waits until the runtime reports at least `n` parked tasks, or 30 s pass (a task lost by the
/// runtime, reported by the caller's assertion); returns the last count, `None` where the
/// runtime cannot say. The wait is for an event (each task's poll returning), not for a time:
/// the 30 s are a bound no healthy run comes near.
fn wait_for_parked<R: Rt>(rt: &R, n: usize) -> Option<usize> {
    let give_up = Instant::now() + Duration::from_secs(30);
    loop {
        let parked = rt.parked_tasks()?;
        if parked >= n || Instant::now() > give_up {
            return Some(parked);
        }
        std::thread::sleep(Duration::from_micros(50));
    }
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
    // Every task is at least its header: refuse a count that cannot fit before starting.
    check_tasks("--tasks", a.tasks).unwrap_or_else(|e| fail(NAME, e));
    match a.runtime {
        Which::Tokio => run(a.procs.tokio().unwrap_or_else(|e| fail("million_tasks: tokio", e)), &a),
        Which::Gmprt => run(a.procs.gmprt().unwrap_or_else(|e| fail(NAME, e)), &a),
    }
}

fn run<R: Rt>(rt: R, a: &Args) {
    let procs = rt.procs();
    let n = a.tasks;
    let (rss0, _) = rss();
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    // Text lines, unless --json asked for one JSON document at the end.
    let say = |line: String| {
        if !a.json {
            println!("{line}");
        }
    };
    let (mode, elapsed, bytes_per_task) = if a.park {
        let r = park_mode(&rt, n);
        say(format!(
            "parked {n} tasks on {procs} procs in {:.1} ms; all suspended at once on one gate",
            r.park_elapsed.as_secs_f64() * 1e3
        ));
        say(format!(
            "memory while parked: {:.1} MiB above baseline = {:.0} bytes per parked task (task + gate waker slot)",
            mib(r.parked_bytes),
            r.parked_bytes as f64 / n as f64
        ));
        say(format!("released them all in {:.1} ms", r.release_elapsed.as_secs_f64() * 1e3));
        ("park", r.park_elapsed + r.release_elapsed, r.parked_bytes as f64 / n as f64)
    } else if a.detached {
        if a.warm {
            let _ = detached_mode(&rt, n);
        }
        let elapsed = detached_mode(&rt, n);
        let (_, peak) = rss();
        say(format!(
            "spawned {n} detached tasks on {procs} procs and waited for their latch in {:.1} ms",
            elapsed.as_secs_f64() * 1e3
        ));
        (
            if a.warm { "detached_warm" } else { "detached" },
            elapsed,
            peak.saturating_sub(rss0) as f64 / n as f64,
        )
    } else {
        if a.warm {
            let _ = spawn_mode(&rt, n).unwrap_or_else(|e| fail(NAME, e));
        }
        let (elapsed, _) = spawn_mode(&rt, n).unwrap_or_else(|e| fail(NAME, e));
        let (_, peak) = rss();
        say(format!(
            "spawned and joined {n} tasks on {procs} procs in {:.1} ms",
            elapsed.as_secs_f64() * 1e3
        ));
        (
            if a.warm { "spawn_warm" } else { "spawn" },
            elapsed,
            // Peak memory above start-up over the tasks: every task and its JoinHandle were
            // alive at once before the root joined them.
            peak.saturating_sub(rss0) as f64 / n as f64,
        )
    };
    let (_, peak) = rss();
    let ns_per_task = elapsed.as_nanos() as f64 / n as f64;
    let counters = rt.stats_line().map_or(String::new(), |l| format!("; {l}"));
    say(format!("{ns_per_task:.1} ns per task; peak RSS {:.1} MiB{counters}", mib(peak)));
    for line in rt.latency_lines() {
        say(line);
    }
    let stats = rt.stats_json();
    drop(rt);
    if a.json {
        let v = serde_json::json!({
            "runtime": R::NAME, "mode": mode, "tasks": n, "procs": procs,
            "elapsed_ms": elapsed.as_secs_f64() * 1e3, "ns_per_task": ns_per_task,
            "peak_rss_mib": mib(peak), "bytes_per_task": bytes_per_task, "stats": stats,
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_else(|e| fail(NAME, e)));
        return;
    }
    let runtime = R::NAME;
    println!(
        "million_tasks runtime={runtime} mode={mode} tasks={n} procs={procs} elapsed_ms={:.1} ns_per_task={:.1} peak_rss_mib={:.1} bytes_per_task={:.0}",
        elapsed.as_secs_f64() * 1e3,
        ns_per_task,
        mib(peak),
        bytes_per_task
    );
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
    }

    #[test]
    fn counts_in_every_spelling() {
        for n in ["1000000", "1_000_000", "1e6"] {
            let a: Args = try_parse_from([NAME, "--tasks", n]).unwrap();
            assert_eq!(a.tasks, 1_000_000, "--tasks {n}");
        }
        let a: Args = try_parse_from([NAME]).unwrap();
        assert_eq!((a.tasks, a.procs.n, a.park, a.runtime), (1_000_000, None, false, Which::Gmprt));
        for bad in ["-5", "0", "1.5", "lots", "1e20"] {
            let text = parse_error::<Args>(&[NAME, "--tasks", bad], ErrorKind::ValueValidation, 2);
            assert!(text.contains("--tasks"), "--tasks {bad}: {text}");
        }
    }

    #[test]
    fn tasks_that_cannot_fit_are_a_clear_error() {
        let a: Args = try_parse_from([NAME, "--tasks", "1e19"]).unwrap();
        assert_too_big(check_tasks("--tasks", a.tasks), "--tasks 10000000000000000000");
        let msg = check_tasks("--tasks", a.tasks).unwrap_err().to_string();
        // The header's size comes from the type (72 bytes on 64-bit targets), not a constant.
        let each = gmprt::runtime::TASK_HEADER_BYTES;
        assert!(msg.contains(&format!("× {each} bytes (a task's header alone)")), "{msg}");
        assert!(
            msg.contains(&format!("= at least {} bytes", 10_000_000_000_000_000_000u128 * each as u128)),
            "{msg}"
        );
        // The storage itself is reserved, not allocated and then aborted on.
        let r = try_vec::<u64>(a.tasks, "--tasks 10000000000000000000", "a join handle").map(drop);
        assert_too_big(r, "--tasks 10000000000000000000");
        assert!(check_tasks("--tasks", 1_000).is_ok());
    }
}
