//! Blocking calls next to compute: Go's syscall hand-off, made visible.
//!
//! ```text
//! GMPRT_SCHEDTRACE=50 cargo run --release --example blocking_handoff -- [--blocking B] [--compute C] [--procs P]
//! ```
//! `B` tasks (default 16) each make real blocking calls inside `gmprt::syscall`: read a file and
//! `std::thread::sleep(20 ms)`, four times. Meanwhile `C` compute tasks (default 4·procs) crunch
//! numbers in slices, yielding between slices. Each blocked M gives up its P, sysmon hands the P
//! to another M, and compute keeps running: the schedtrace `threads=` count rises above
//! `gomaxprocs` while the calls block and the extra Ms go idle afterwards.
//!
//! The same program with the blocking calls made directly (`--no-syscall`) shows the opposite:
//! every blocked call holds its P, so the blocking phase takes as long as the calls run one
//! P at a time, and compute gets fewer slices per millisecond.

#[path = "common/mod.rs"]
mod common;
use clap::Parser;
use common::{check_tasks, fail, parse_count, try_vec, Cli, Procs};
use gmprt::runtime::syscall;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

const NAME: &str = "blocking_handoff";

/// Blocking calls inside `gmprt::syscall` next to compute tasks: with GMPRT_SCHEDTRACE=50 the
/// `threads=` count rises above `gomaxprocs` while the calls block, and falls back.
#[derive(Parser, Debug)]
#[command(name = NAME)]
struct Args {
    /// Tasks that each make 4 blocking calls (a file read and a 20 ms sleep)
    #[arg(long, value_name = "B", default_value_t = 16, value_parser = parse_count)]
    blocking: usize,
    /// Compute tasks that crunch numbers in slices meanwhile [default: 4 per P]
    #[arg(long, value_name = "C", value_parser = parse_count)]
    compute: Option<usize>,
    #[command(flatten)]
    procs: Procs,
    /// Make the blocking calls directly, holding the P, instead of inside `gmprt::syscall`
    #[arg(long)]
    no_syscall: bool,
}

impl Cli for Args {}

// In the `gmprt` command, which includes this file as a module, `main_from` is called instead.
#[allow(dead_code)]
fn main() {
    main_from(std::env::args_os().collect());
}

/// Parses `args` (the program's name first) and runs the story: what `main` and the `gmprt`
/// command call. `--help` prints and exits 0; a bad command line prints why and exits 2.
pub fn main_from(args: Vec<std::ffi::OsString>) {
    let a: Args = common::parse_from(args);
    let (blocking, use_syscall) = (a.blocking, !a.no_syscall);
    let rt = a.procs.gmprt().unwrap_or_else(|e| fail(NAME, e));
    let procs = rt.procs();
    let compute = a.compute.unwrap_or(4 * procs);
    // Every task is at least its header: refuse counts that cannot fit before spawning any.
    check_tasks("--blocking", blocking).unwrap_or_else(|e| fail(NAME, e));
    check_tasks("--compute", compute).unwrap_or_else(|e| fail(NAME, e));
    let mut hs = try_vec(blocking, &format!("--blocking {blocking}"), "a join handle")
        .unwrap_or_else(|e| fail(NAME, e));
    let mut cs =
        try_vec(compute, &format!("--compute {compute}"), "a join handle").unwrap_or_else(|e| fail(NAME, e));
    let slices = Arc::new(AtomicU64::new(0));
    let blocked_done = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();

    for i in 0..blocking {
        let done = blocked_done.clone();
        hs.push(rt.spawn(async move {
            for _ in 0..4 {
                let call = move || {
                    let n = std::fs::read("/proc/self/status").map_or(0, |v| v.len());
                    std::thread::sleep(Duration::from_millis(20));
                    n
                };
                let n = if use_syscall { syscall(call).expect("below the thread cap") } else { call() };
                std::hint::black_box((i, n));
            }
            done.fetch_add(1, Relaxed);
        }));
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for _ in 0..compute {
        let (slices, stop) = (slices.clone(), stop.clone());
        cs.push(rt.spawn(async move {
            let mut x = 1u64;
            while !stop.load(Relaxed) {
                // One slice: ~20 µs of arithmetic, then let others run.
                for _ in 0..20_000 {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                }
                std::hint::black_box(x);
                slices.fetch_add(1, Relaxed);
                gmprt::yield_now().await;
            }
        }));
    }
    // Sample the thread count while the blocking calls run.
    let mut max_threads = 0;
    let mut slices_during = 0;
    while blocked_done.load(Relaxed) < blocking {
        max_threads = max_threads.max(rt.stats().threads);
        slices_during = slices.load(Relaxed);
        std::thread::sleep(Duration::from_millis(5));
    }
    let blocking_ms = t0.elapsed().as_secs_f64() * 1e3;
    stop.store(true, Relaxed);
    for h in hs.into_iter().chain(cs) {
        h.join().expect("task failed");
    }
    let st = rt.stats();
    println!(
        "{blocking} tasks x 4 blocking calls (file read + 20 ms sleep) {} syscall, next to {compute} compute tasks on {procs} procs",
        if use_syscall { "inside" } else { "WITHOUT" }
    );
    println!(
        "blocking phase {blocking_ms:.0} ms; compute meanwhile: {slices_during} slices ({:.0} per ms); M threads peaked at {max_threads} (gomaxprocs={procs}); sysmon retakes {}",
        slices_during as f64 / blocking_ms,
        st.retakes
    );
    println!(
        "blocking_handoff syscall={} blocking={blocking} compute={compute} procs={procs} blocking_ms={blocking_ms:.0} compute_slices={slices_during} max_threads={max_threads} retakes={}",
        use_syscall, st.retakes
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::try_parse_from;

    #[test]
    fn cli() {
        common::testing::cli_contract::<Args>(NAME);
        let a: Args = try_parse_from([NAME]).unwrap();
        assert_eq!((a.blocking, a.compute, a.procs.n, a.no_syscall), (16, None, None, false));
        let a: Args = try_parse_from([NAME, "--blocking", "1e2", "--compute", "8", "--no-syscall"]).unwrap();
        assert_eq!((a.blocking, a.compute, a.no_syscall), (100, Some(8), true));
    }

    #[test]
    fn tasks_that_cannot_fit_are_a_clear_error() {
        let a: Args = try_parse_from([NAME, "--compute", "1e19"]).unwrap();
        let compute = a.compute.unwrap();
        common::testing::assert_too_big(check_tasks("--compute", compute), "--compute 10000000000000000000");
    }
}
