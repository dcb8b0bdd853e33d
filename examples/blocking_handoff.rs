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

use gmprt::runtime::{syscall, Runtime};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn usage() -> ! {
    eprintln!("usage: blocking_handoff [--blocking B] [--compute C] [--procs P] [--no-syscall]");
    std::process::exit(2)
}

fn main() {
    let (mut blocking, mut compute, mut procs, mut use_syscall) = (16usize, None, None, true);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut num = || it.next().and_then(|v| v.parse::<usize>().ok()).unwrap_or_else(|| usage());
        match a.as_str() {
            "--blocking" => blocking = num(),
            "--compute" => compute = Some(num()),
            "--procs" => procs = Some(num()),
            "--no-syscall" => use_syscall = false,
            _ => usage(),
        }
    }
    let mut b = Runtime::builder();
    if let Some(p) = procs {
        b = b.procs(p);
    }
    let rt = b.build().unwrap_or_else(|e| {
        eprintln!("blocking_handoff: {e}");
        std::process::exit(2)
    });
    let procs = rt.procs();
    let compute = compute.unwrap_or(4 * procs);
    let slices = Arc::new(AtomicU64::new(0));
    let blocked_done = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();

    let mut hs = Vec::new();
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
    let mut cs = Vec::new();
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
