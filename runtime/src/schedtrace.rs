//! `GMPRT_SCHEDTRACE=<ms>`: Go's `GODEBUG=schedtrace=X` line, printed to stderr.
//!
//! ```text
//! SCHED 1000ms: gomaxprocs=2 idleprocs=0 threads=3 spinningthreads=1 idlethreads=0 runqueue=0 [12 3]
//! ```
//! `threads` counts the M threads plus this monitor thread (Go counts sysmon's M too);
//! `idlethreads` the parked Ms; `runqueue` the global queue; the bracket each P's local queue
//! (plus its `runnext`). The numbers are read without stopping the world, as in Go. sysmon
//! prints it (`sched/sysmon.rs`). Once sysmon has seen a poll hog its P for over 10 ms,
//! ` longpolls=N` is appended (Go needs no such field: it preempts); once a `startm` found no
//! M and could not start one (the `max_threads` cap), ` nom=N` (`RuntimeStats::startm_no_m`). Once latencies have been
//! sampled (`RuntimeStats::sched_latency`, `poll_time`), ` schedlat=p50/p99 polltime=p50/p99`
//! follows: the distributions since start-up, merged from the per-P histograms (a lock per P,
//! once per line: nothing on the scheduling path).
//!
//! Then the scheduling counters since start-up (`RuntimeStats`): `steals=S/A` successful steals
//! of victim visits, `stolen` tasks they took, `rnsteals` of them from a `runnext`, `backoffs`
//! before taking a running P's `runnext`, `startm=` by cause (submit/inject/spinner/other),
//! `deferred` of those left to an M without a P instead of a new thread (`startm_deferred`),
//! `rearms` of the idle path, and the three that read 0 by design: `rnrearms` (re-arms for a
//! running P's `runnext` alone), `overcap` (spinning past busy/2), `rnearly` (a running P's
//! `runnext` taken without a back-off).

use crate::sched::stats::RuntimeStats;
use crate::sched::Shared;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// Formats one schedtrace line.
pub(crate) fn line(shared: &Shared, elapsed: Duration) -> String {
    let lens: Vec<String> = shared.allp.iter().map(|p| p.queued().to_string()).collect();
    let long = shared.external_stats.long_polls.get();
    let mut tail = if long > 0 { format!(" longpolls={long}") } else { String::new() };
    // `startm`s refused for want of a thread (the `max_threads` cap): shown once there is one.
    let no_m = shared.external_stats.startm_no_m.get();
    if no_m > 0 {
        tail += &format!(" nom={no_m}");
    }
    // The scheduling counters since start-up (sums over the per-P blocks; see
    // `RuntimeStats::scaling_line` for their meaning).
    let mut st = RuntimeStats::default();
    shared.stat_blocks().for_each(|b| st.add(b));
    tail += &format!(
        " steals={}/{} stolen={} rnsteals={} backoffs={} startm={}/{}/{}/{} deferred={} rearms={} rnrearms={} overcap={} rnearly={}",
        st.steals,
        st.steal_attempts,
        st.stolen,
        st.runnext_steals,
        st.runnext_backoffs,
        st.startm_submit,
        st.startm_inject,
        st.startm_spinner,
        st.startm_other,
        st.startm_deferred,
        st.rearms,
        st.rearms_runnext_only,
        st.spin_over_cap,
        st.runnext_steals_early,
    );
    st.set_latencies(shared.stat_blocks());
    if st.sched_latency.count > 0 {
        let (s, p) = (st.sched_latency, st.poll_time);
        tail += &format!(" schedlat={:.1?}/{:.1?} polltime={:.1?}/{:.1?}", s.p50, s.p99, p.p50, p.p99);
    }
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
