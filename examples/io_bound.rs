//! The "fetchMarketData" story: many tasks, a little CPU each, then a long wait for the network.
//!
//! ```text
//! cargo run --release --example io_bound -- [--tasks N=100000] [--cpu-us C=5] [--wait-ms W=100] [--procs P]
//! ```
//!
//! N tasks each do C µs of real CPU work (a busy loop of dependent multiply/xor/shift steps,
//! calibrated once at start-up so that C µs is honest; the calibration is printed), then wait
//! W ms for a simulated network reply (`sleep`: the task parks, its timer sits on its P's heap,
//! and the P runs other tasks meanwhile), then finish.
//!
//! A serial program would take N·(C+W). On `procs` cores the CPU work alone needs N·C/procs,
//! and every task waits W, so the wall time is about max(W, N·C/procs): the waits overlap each
//! other and the CPU work. All N requests start at once here, so the last task to get a core
//! still waits W after its work, and the wall lands between that model and N·C/procs + W (with
//! the defaults the two terms are close, 100 ms and 250 ms, so nearer the sum); what is left
//! over is the runtime's own work per task (spawn, timer, wake, join). The output says why a
//! GPU cannot shorten any of it.
//!
//! The last line is machine-readable:
//! `io_bound tasks=100000 procs=2 cpu_us=5 wait_ms=100 wall_ms=… serial_ms=… cpu_bound_ms=… model_ms=… ratio=…`

#[path = "common/mod.rs"]
mod common;
use clap::Parser;
use common::{check_tasks, count_in, cpu_work, cpu_work_steps_per_us, fail, positive, try_vec, Cli, Procs};
use gmprt::runtime::time::sleep;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Upper limits that keep the arithmetic below (and `Instant + Duration`) from overflowing.
const MAX_CPU_US: usize = 60_000_000; // one minute of CPU per task
const MAX_WAIT_MS: usize = 86_400_000; // one day of waiting

const NAME: &str = "io_bound";

/// "fetchMarketData": N tasks, C µs of CPU then a W ms wait each; wall time against
/// max(W, N·C/procs), and why a GPU could not help.
#[derive(Parser, Debug)]
#[command(name = NAME)]
struct Args {
    /// Tasks (requests), written 100000, 100_000 or 1e5
    #[arg(long, value_name = "N", default_value_t = 100_000, value_parser = positive)]
    tasks: usize,
    /// CPU work per task, in µs (at most one minute)
    #[arg(long, value_name = "C", default_value_t = 5, value_parser = count_in(0, MAX_CPU_US))]
    cpu_us: usize,
    /// The wait for each reply, in ms (at most one day)
    #[arg(long, value_name = "W", default_value_t = 100, value_parser = count_in(0, MAX_WAIT_MS))]
    wait_ms: usize,
    #[command(flatten)]
    procs: Procs,
    /// Print the figures and the runtime's stats (RuntimeStats, latency percentiles included)
    /// as JSON instead of text
    #[arg(long)]
    json: bool,
}

impl Cli for Args {
    fn check(&self) -> Result<(), String> {
        if self.cpu_us == 0 && self.wait_ms == 0 {
            return Err("--cpu-us and --wait-ms cannot both be 0: there would be nothing to model".into());
        }
        Ok(())
    }
}

struct Calibration {
    iters_per_us: f64,
    /// Iterations that make one task's CPU part.
    iters: u64,
    /// What one call of `cpu_work(iters)` took, measured after calibrating (µs).
    check_us: f64,
}

/// Measures how many `cpu_work` steps this core does per µs (`cpu_work_steps_per_us`), then
/// checks the result on a batch of calls of the real size.
fn calibrate(cpu_us: usize) -> Calibration {
    let iters_per_us = cpu_work_steps_per_us();
    let task_iters = (cpu_us as f64 * iters_per_us).round() as u64;
    // About 20 ms of calls (at most 2000, at least 1).
    let calls = 20_000usize.checked_div(cpu_us).map_or(1, |c| c.clamp(1, 2_000));
    let t = Instant::now();
    for i in 0..calls {
        black_box(cpu_work(task_iters, i as u64));
    }
    let check_us = t.elapsed().as_secs_f64() * 1e6 / calls as f64;
    Calibration { iters_per_us, iters: task_iters, check_us }
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
    // Every task is at least its header: refuse a count that cannot fit up front.
    check_tasks("--tasks", a.tasks).unwrap_or_else(|e| fail(NAME, e));
    let rt = a.procs.gmprt().unwrap_or_else(|e| fail(NAME, e));
    let (n, procs) = (a.tasks, rt.procs());
    let (cpu, wait) = (Duration::from_micros(a.cpu_us as u64), Duration::from_millis(a.wait_ms as u64));

    let cal = calibrate(a.cpu_us);
    if !a.json {
        println!(
        "calibration: {:.0} mix steps per µs on this core (median of 7 runs); {} µs of CPU = {} steps, measured {:.2} µs per call",
        cal.iters_per_us, a.cpu_us, cal.iters, cal.check_us
        );
    }

    // Per-task CPU time actually spent, summed (two clock reads per task, ~50 ns against C µs).
    let cpu_ns = Arc::new(AtomicU64::new(0));
    let iters = cal.iters;
    let t0 = Instant::now();
    let cpu_ns2 = cpu_ns.clone();
    let mut handles: Vec<gmprt::JoinHandle<u64>> =
        try_vec(n, &format!("--tasks {n}"), "a join handle").unwrap_or_else(|e| fail(NAME, e));
    let checksum = rt.block_on(async move {
        // The root is itself a task, like a Go main that fires `go fetchMarketData(i)` N times.
        let root = gmprt::spawn(async move {
            for i in 0..n as u64 {
                let cpu_ns = cpu_ns2.clone();
                handles.push(gmprt::spawn(async move {
                    let t = Instant::now();
                    let v = cpu_work(iters, i); // build and sign the request
                    cpu_ns.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
                    sleep(wait).await; // the remote server takes W ms to answer
                    v
                }));
                if i % 1024 == 1023 {
                    // Futures cannot be preempted: give the P back now and then, or this loop
                    // would hold it for the whole spawn (sysmon would report a long poll).
                    gmprt::yield_now().await;
                }
            }
            let mut acc = 0u64;
            for h in handles {
                acc = acc.wrapping_add(h.await.expect("task failed"));
            }
            acc
        });
        root.await.expect("root task failed")
    });
    let wall = t0.elapsed();
    black_box(checksum);
    let stats = rt.stats();
    drop(rt);

    let ms = |d: f64| d * 1e3; // seconds → ms
    let wall_ms = ms(wall.as_secs_f64());
    let serial_ms = ms(n as f64 * (cpu + wait).as_secs_f64());
    let cpu_bound_ms = ms(n as f64 * cpu.as_secs_f64() / procs as f64);
    let wait_ms = ms(wait.as_secs_f64());
    let model_ms = wait_ms.max(cpu_bound_ms);
    let upper_ms = wait_ms + cpu_bound_ms;
    let ratio = wall_ms / model_ms;
    let mean_cpu_us = cpu_ns.load(Ordering::Relaxed) as f64 / n as f64 / 1e3;
    if a.json {
        let v = serde_json::json!({
            "tasks": n, "procs": procs, "cpu_us": a.cpu_us, "wait_ms": a.wait_ms,
            "calibration": {"steps_per_us": cal.iters_per_us, "steps": cal.iters, "check_us": cal.check_us},
            "mean_cpu_us_in_task": mean_cpu_us, "wall_ms": wall_ms, "serial_ms": serial_ms,
            "cpu_bound_ms": cpu_bound_ms, "model_ms": model_ms, "upper_ms": upper_ms, "ratio": ratio,
            "stats": stats,
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_else(|e| fail(NAME, e)));
        return;
    }

    println!(
        "{n} tasks on {procs} procs, each {} µs of CPU (measured in-task: {mean_cpu_us:.2} µs) then a {} ms wait",
        a.cpu_us, a.wait_ms
    );
    println!("wall time:                       {wall_ms:>12.1} ms");
    println!(
        "serial estimate N·(C+W):         {serial_ms:>12.1} ms  ({:.1} h: one request after another)",
        serial_ms / 3.6e6
    );
    println!("CPU bound N·C/procs:             {cpu_bound_ms:>12.1} ms  (all the arithmetic, on every core)");
    println!(
        "model max(W, N·C/procs):         {model_ms:>12.1} ms  → measured/model = {ratio:.2} (upper bound N·C/procs + W = {upper_ms:.1} ms)"
    );
    println!(
        "beyond the upper bound: {:.1} ms = {:.2} µs of core time per task: spawn, timer, wake, join (and any noise)",
        wall_ms - upper_ms,
        (wall_ms - upper_ms) * 1e3 * procs as f64 / n as f64
    );
    println!(
        "speed-up over serial: {:.0}×, on {procs} cores; M parks {}, threads {}",
        serial_ms / wall_ms,
        stats.parks,
        stats.threads
    );
    println!("scheduling latency (wake → poll): {}", stats.sched_latency);
    println!("poll time:                        {}", stats.poll_time);
    let wait_share = 100.0 * wait.as_secs_f64() / (cpu + wait).as_secs_f64().max(f64::MIN_POSITIVE);
    println!(
        "why a GPU could not speed this up: {wait_share:.3}% of each request's time is waiting for a reply; no processor makes the remote end answer sooner (concurrency, not parallelism)."
    );
    println!(
        "the CPU part is tiny ({} µs), branchy and per-request; a PCIe round trip plus a kernel launch (~10-20 µs) to move it to a GPU would cost more than computing it here.",
        a.cpu_us
    );
    println!(
        "io_bound tasks={n} procs={procs} cpu_us={} wait_ms={} wall_ms={wall_ms:.1} serial_ms={serial_ms:.1} cpu_bound_ms={cpu_bound_ms:.1} model_ms={model_ms:.1} ratio={ratio:.2}",
        a.cpu_us, a.wait_ms
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
        let a: Args = try_parse_from([NAME, "--tasks", "1e5"]).unwrap();
        assert_eq!((a.tasks, a.cpu_us, a.wait_ms, a.procs.n), (100_000, 5, 100, None));
        let text =
            parse_error::<Args>(&[NAME, "--cpu-us", "0", "--wait-ms", "0"], ErrorKind::ArgumentConflict, 2);
        assert!(text.contains("cannot both be 0"), "{text}");
        let text = parse_error::<Args>(&[NAME, "--wait-ms", "1e9"], ErrorKind::ValueValidation, 2);
        assert!(text.contains("between 0 and 86400000"), "{text}");
    }

    #[test]
    fn tasks_that_cannot_fit_are_a_clear_error() {
        let a: Args = try_parse_from([NAME, "--tasks", "1e19"]).unwrap();
        assert_too_big(check_tasks("--tasks", a.tasks), "--tasks 10000000000000000000");
    }
}
