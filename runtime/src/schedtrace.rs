//! `GMPRT_SCHEDTRACE=<ms>`: Go's `GODEBUG=schedtrace=X` line, printed to stderr.
//!
//! ```text
//! SCHED 1000ms: gomaxprocs=2 idleprocs=0 threads=3 spinningthreads=1 idlethreads=0 runqueue=0 [12 3]
//! ```
//! `threads` counts the M threads plus this monitor thread (Go counts sysmon's M too);
//! `idlethreads` the parked Ms; `runqueue` the global queue; the bracket each P's local queue
//! (plus its `runnext`). The numbers are read without stopping the world, as in Go.

use crate::sched::Shared;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Formats one schedtrace line.
pub(crate) fn line(shared: &Shared, elapsed: Duration) -> String {
    let lens: Vec<String> = shared.allp.iter().map(|p| p.queued().to_string()).collect();
    format!(
        "SCHED {}ms: gomaxprocs={} idleprocs={} threads={} spinningthreads={} idlethreads={} runqueue={} [{}]",
        elapsed.as_millis(),
        shared.procs(),
        shared.npidle.load(Relaxed),
        shared.mcount.load(Relaxed) + 1,
        shared.nmspinning.load(Relaxed),
        shared.nmidle.load(Relaxed),
        shared.injector.len(),
        lens.join(" ")
    )
}

/// Starts the monitor thread that prints a line every `every` until shutdown.
pub(crate) fn start(shared: Arc<Shared>, every: Duration) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().name("gmprt-schedtrace".into()).spawn(move || {
        let start = Instant::now();
        let mut next = start + every;
        let (lock, cv) = &shared.monitor;
        let mut stop = lock.lock();
        loop {
            if *stop {
                return;
            }
            let now = Instant::now();
            if now >= next {
                eprintln!("{}", line(&shared, now - start));
                next += every;
                continue;
            }
            cv.wait_for(&mut stop, next - now);
        }
    })
}
