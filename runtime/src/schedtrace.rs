//! `GMPRT_SCHEDTRACE=<ms>`: Go's `GODEBUG=schedtrace=X` line, printed to stderr.
//!
//! ```text
//! SCHED 1000ms: gomaxprocs=2 idleprocs=0 threads=3 spinningthreads=1 idlethreads=0 runqueue=0 [12 3]
//! ```
//! `threads` counts the M threads plus this monitor thread (Go counts sysmon's M too);
//! `idlethreads` the parked Ms; `runqueue` the global queue; the bracket each P's local queue
//! (plus its `runnext`). The numbers are read without stopping the world, as in Go. sysmon
//! prints it (`sched/sysmon.rs`). Once sysmon has seen a poll hog its P for over 10 ms,
//! ` longpolls=N` is appended (Go needs no such field: it preempts).

use crate::sched::Shared;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// Formats one schedtrace line.
pub(crate) fn line(shared: &Shared, elapsed: Duration) -> String {
    let lens: Vec<String> = shared.allp.iter().map(|p| p.queued().to_string()).collect();
    let long = shared.external_stats.long_polls.get();
    let tail = if long > 0 { format!(" longpolls={long}") } else { String::new() };
    format!(
        "SCHED {}ms: gomaxprocs={} idleprocs={} threads={} spinningthreads={} idlethreads={} runqueue={} [{}]{tail}",
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
