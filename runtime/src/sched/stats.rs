//! Counters behind `Runtime::stats()`.
//!
//! Each P has its own cache-padded block of counters. Only the M holding the P writes them,
//! so [`Counter::bump`] is a relaxed load and store, not a locked read-modify-write: a P passes
//! between Ms only through `sched`'s mutex or an M's park slot, which order one holder's
//! writes before the next holder's. Events off any P (spawns from outside, cancellations at
//! shutdown, M parks) go to one shared block with [`Counter::bump_shared`] (a real RMW).
//! `stats()` sums them; a snapshot taken while tasks run is approximate, one taken when
//! quiescent is exact.
//!
//! Latency histograms (scheduling latency, poll time: see `trace/hooks.rs` for what is
//! sampled) are per P too, each behind a mutex that only the M holding the P takes while the
//! run goes on (uncontended: no other M records into it), and `stats()` takes to merge them.
//! The mutex is taken once per *sampled* poll only.

// Plain std atomics even under loom: the counters are relaxed statistics that no protocol
// decision reads, and as loom atomics every `bump` would only add a scheduling point.
use crate::latency::{histogram, LatencySummary};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};

/// One event counter.
#[derive(Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    /// Single-writer increment: only for counters of the P the caller holds.
    #[inline(always)]
    pub(crate) fn bump(&self) {
        self.0.store(self.0.load(Relaxed) + 1, Relaxed);
    }
    /// Single-writer addition of `n` (as `bump`).
    #[inline(always)]
    pub(crate) fn add(&self, n: u64) {
        self.0.store(self.0.load(Relaxed) + n, Relaxed);
    }
    /// Multi-writer increment, for the shared block.
    #[inline(always)]
    pub(crate) fn bump_shared(&self) {
        self.0.fetch_add(1, Relaxed);
    }
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

/// One P's latency histograms (ns).
pub(crate) struct Latencies {
    /// Runnable (spawn or wake) → poll start.
    sched: Histogram<u64>,
    /// Poll start → poll end.
    poll: Histogram<u64>,
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies { sched: histogram(), poll: histogram() }
    }
}

/// Counters of one P (or of the shared "no P" block).
#[derive(Default)]
pub(crate) struct PStats {
    /// Sampled latencies (see the module docs).
    pub(crate) latency: Mutex<Latencies>,
    pub(crate) spawned: Counter,
    pub(crate) completed: Counter,
    pub(crate) cancelled: Counter,
    pub(crate) polls: Counter,
    pub(crate) steal_attempts: Counter,
    pub(crate) steals: Counter,
    pub(crate) stolen: Counter,
    pub(crate) runnext_steals: Counter,
    pub(crate) runnext_steals_early: Counter,
    pub(crate) runnext_backoffs: Counter,
    pub(crate) rearms: Counter,
    pub(crate) rearms_runnext_only: Counter,
    pub(crate) rearms_refused: Counter,
    pub(crate) quiescent_runs: Counter,
    pub(crate) spin_over_cap: Counter,
    pub(crate) startm_submit: Counter,
    pub(crate) startm_inject: Counter,
    pub(crate) startm_spinner: Counter,
    pub(crate) startm_other: Counter,
    pub(crate) startm_no_m: Counter,
    pub(crate) startm_deferred: Counter,
    pub(crate) global_takes: Counter,
    pub(crate) parks: Counter,
    pub(crate) unparks: Counter,
    pub(crate) syscalls: Counter,
    pub(crate) retakes: Counter,
    pub(crate) long_polls: Counter,
    pub(crate) long_polls_delaying: Counter,
    pub(crate) netpoll_blocks: Counter,
    pub(crate) netpoll_no_p: Counter,
    pub(crate) netpoll_sysmon: Counter,
}

impl PStats {
    /// Records one sampled poll: its scheduling latency and its duration (ns).
    pub(crate) fn record_latency(&self, sched_ns: u64, poll_ns: u64) {
        // A panic cannot happen while the lock is held (recording into an auto-resizing
        // histogram does not panic), but a poisoned lock would still hold valid histograms.
        let mut l = self.latency.lock().unwrap_or_else(PoisonError::into_inner);
        record(&mut l.sched, sched_ns);
        record(&mut l.poll, poll_ns);
    }
}

/// `a / b`, 0 when `b` is 0.
fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Records `v` ns, growing the histogram as needed. (`saturating_record` would clamp to the
/// current range instead of growing it: a fresh histogram's range ends at 2 ns.) Growing
/// fails only past the histogram's absolute range, then the value is clamped to it.
fn record(h: &mut Histogram<u64>, v: u64) {
    if h.record(v).is_err() {
        h.saturating_record(v);
    }
}

/// A snapshot of the scheduler's counters (see `Runtime::stats`).
///
/// ```
/// let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(async {
///     for _ in 0..200 {
///         gmprt_runtime::spawn(async {}).await.unwrap();
///     }
/// });
/// let st = rt.stats();
/// assert!(st.sched_latency.count > 0); // 1 in 64 readiness events per thread is timed
/// let json = serde_json::to_value(&st).unwrap();
/// assert!(json["poll_time"]["p99"].is_object());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RuntimeStats {
    /// Number of Ps (GOMAXPROCS).
    pub procs: usize,
    /// Tasks spawned.
    pub spawned: u64,
    /// Tasks that ran to completion (including those that panicked).
    pub completed: u64,
    /// Tasks aborted, or dropped unfinished at shutdown.
    pub cancelled: u64,
    /// Polls of task futures.
    pub polls: u64,
    /// Visits to a victim P while stealing (idle Ps are skipped, not visited).
    pub steal_attempts: u64,
    /// Visits that came back with work.
    pub steals: u64,
    /// Tasks those visits took (a queue steal takes half the victim's queue; a `runnext`
    /// steal one task): `stolen / steals` is tasks per successful steal.
    pub stolen: u64,
    /// Tasks taken from another P's `runnext` slot (the last resort of stealing).
    pub runnext_steals: u64,
    /// `runnext` steals from a *running* P without a back-off between seeing the task and
    /// taking it (Go's `runqgrab` sleeps first, so the owner can run its own child). Reads 0 by
    /// design: the counter checks the rule where it is applied (`processor.rs`, "runnext").
    pub runnext_steals_early: u64,
    /// Back-offs a thief slept before taking a running P's `runnext` (at most one per steal
    /// pass, `processor.rs`).
    pub runnext_backoffs: u64,
    /// Times an M that had given its P back saw work on its last look and took a P again as a
    /// spinning M (`idle.rs`, step 3).
    pub rearms: u64,
    /// Of `rearms`, those where the only work seen was a `runnext` whose P was running when
    /// the M took its idle P, a task that P's own M runs as soon as its poll returns. The last
    /// look leaves such a slot out (`idle.rs`, step 3), so this reads 0 unless that P started
    /// running in between (a P handed over around a blocking call).
    pub rearms_runnext_only: u64,
    /// Times an M that saw work on its last look took no idle P because the spinning cap was
    /// full (the spinning Ms it counted will find the work: `idle.rs`, step 3).
    pub rearms_refused: u64,
    /// Times an M found the runtime quiescent with a [`QuiescentHook`](crate::QuiescentHook)
    /// pending, took a P back and ran it (`sched/quiesce.rs`). The Batcher's hook runs once
    /// per batch closed on quiescence.
    pub quiescent_runs: u64,
    /// Times an M became spinning while `2 × spinning Ms ≥ busy Ps` (Go's cap: at most half
    /// the busy Ps spin). 0 by construction since issue 25: every increment but `wakep`'s
    /// first spinner is admitted by one CAS against those counts (`Shared::try_spin`). Before,
    /// the idle path's re-arm and the timed and netpoll wake-ups added spinners unchecked, and
    /// this read 42-353 per 1M spawns on 2 cores (`benches/results/counters-2core-issue25.txt`);
    /// kept so that figure stays comparable.
    pub spin_over_cap: u64,
    /// `startm`s (an idle P handed to a parked or new M) by why they happened: a task queued
    /// on a P by a spawn or a wake (`wakep` after `runqput`) ...
    pub startm_submit: u64,
    /// ... a task pushed to the global queue (a spawn or a wake from outside, `injectglist`) ...
    pub startm_inject: u64,
    /// ... a spinning M that found work and passed the search on (Go's `resetspinning`) ...
    pub startm_spinner: u64,
    /// ... and the rest: timers, the netpoller, sysmon, a P handed off from a syscall.
    pub startm_other: u64,
    /// Of all `startm`s, those that found no parked M and could not start a thread: the
    /// thread cap ([`Builder::max_threads`](crate::Builder::max_threads)) was reached or the
    /// OS refused one. The P went back to the idle list, where the Ms that are awake find it,
    /// and the M blocked in the netpoller, if any, was woken to run it. Only the first is
    /// reported on stderr. With `max_threads == procs` this counts about every wake-up that
    /// finds one M blocked in the netpoller: that M holds no P, so a third M is wanted.
    pub startm_no_m: u64,
    /// `startm`s for queued tasks (`startm_submit`, `_inject`, `_spinner`) that found no
    /// parked M and started no thread because the Ms outside blocking calls already
    /// numbered `procs`: the P went back to the idle list for the M that is on its idle path or
    /// blocked in the netpoller, which was woken (`sched/idle.rs`, step 5). Not counted in
    /// `startm_no_m`.
    pub startm_deferred: u64,
    /// Takes from the global queue (single fairness takes and batch refills).
    pub global_takes: u64,
    /// Times an M parked for lack of work.
    pub parks: u64,
    /// Times a parked M was handed a P and woken.
    pub unparks: u64,
    /// Blocking calls made through `syscall`.
    pub syscalls: u64,
    /// Ps that sysmon took from an M blocked in `syscall` and handed to another M.
    pub retakes: u64,
    /// Polls that ran longer than 10 ms, as seen by sysmon (each blocked its P meanwhile).
    pub long_polls: u64,
    /// Long polls during which tasks were queued behind them on their P (sysmon saw queued
    /// work in some round of the poll): the ones that delayed other tasks, and that the
    /// stderr warning is about. The rest are compute on a P nobody else was waiting for.
    pub long_polls_delaying: u64,
    /// Times an M blocked in the netpoller (Go's `netpoll(delay)` on the idle path) instead of
    /// parking: tasks were waiting on sockets and every P was idle.
    pub netpoll_blocks: u64,
    /// Of those, the times the M came back with woken tasks and found every P busy: it put
    /// them in the global queue and parked (Go's order), a wake-up that ran nothing on it.
    pub netpoll_no_p: u64,
    /// Times sysmon's poll (no M had polled for 10 ms) found ready sockets.
    pub netpoll_sysmon: u64,
    /// Sockets registered with the netpoller now.
    pub net_fds: usize,
    /// Tasks (directions of a socket) parked on the netpoller now (Go's `netpollWaiters`).
    pub net_waiters: usize,
    /// OS threads running Ms.
    pub threads: usize,
    /// Tasks waiting in each P's local queue and `runnext`.
    pub local_queue_lens: Vec<usize>,
    /// Tasks waiting in the global queue.
    pub global_queue_len: usize,
    /// Tasks that have parked and not yet completed (in the owned-task list).
    pub parked_tasks: usize,
    /// Timers registered in the per-P heaps (pending `sleep`s).
    pub timers: usize,
    /// Ps on the idle list (all of them when nothing runs).
    pub idle_procs: usize,
    /// Scheduling latency: from a task becoming runnable (spawned or woken) to its poll
    /// starting, Go's `/sched/latencies`. Sampled: 1 in 64 readiness events per thread (Go's
    /// `gTrackingPeriod` is 8; see `trace/hooks.rs` for the measured cost that set 64), every
    /// one while tracing.
    pub sched_latency: LatencySummary,
    /// Duration of the polls whose scheduling latency was sampled (tokio's poll-time
    /// histogram): a long tail here is tasks hogging their P.
    pub poll_time: LatencySummary,
}

impl RuntimeStats {
    /// Victim visits per task spawned (0 when nothing was spawned).
    pub fn steal_attempts_per_task(&self) -> f64 {
        ratio(self.steal_attempts, self.spawned)
    }

    /// Tasks taken per successful steal (0 when nothing was stolen).
    pub fn tasks_per_steal(&self) -> f64 {
        ratio(self.stolen, self.steals)
    }

    /// M unparks per 1,000 tasks spawned.
    pub fn unparks_per_1k_tasks(&self) -> f64 {
        1000.0 * ratio(self.unparks, self.spawned)
    }

    /// All `startm`s, whatever their cause.
    pub fn startms(&self) -> u64 {
        self.startm_submit + self.startm_inject + self.startm_spinner + self.startm_other
    }

    /// The structural counters on one line, as `million_tasks` and the scaling bench print
    /// them: `key=value` pairs, the ratios first, then the counters that read 0 by design, then
    /// `startm_deferred` (added last, so earlier fields keep their places).
    pub fn scaling_line(&self) -> String {
        format!(
            "steal_attempts_per_task={:.3} tasks_per_steal={:.2} steals={} stolen={} runnext_steals={} \
             runnext_backoffs={} unparks_per_1k_tasks={:.2} startm_submit={} startm_inject={} \
             startm_spinner={} startm_other={} rearms={} rearms_refused={} parks={} \
             rearms_runnext_only={} spin_over_cap={} runnext_steals_early={} startm_deferred={}",
            self.steal_attempts_per_task(),
            self.tasks_per_steal(),
            self.steals,
            self.stolen,
            self.runnext_steals,
            self.runnext_backoffs,
            self.unparks_per_1k_tasks(),
            self.startm_submit,
            self.startm_inject,
            self.startm_spinner,
            self.startm_other,
            self.rearms,
            self.rearms_refused,
            self.parks,
            self.rearms_runnext_only,
            self.spin_over_cap,
            self.runnext_steals_early,
            self.startm_deferred,
        )
    }

    /// Tasks neither completed nor cancelled yet. Exact when quiescent; a snapshot taken while
    /// tasks run reads the counters one after another, so it saturates at zero.
    pub fn live(&self) -> u64 {
        self.spawned.saturating_sub(self.completed + self.cancelled)
    }

    /// Sets the latency summaries from the merged histograms of `blocks`.
    pub(crate) fn set_latencies<'a>(&mut self, blocks: impl Iterator<Item = &'a PStats>) {
        let (mut sched, mut poll) = (histogram(), histogram());
        for b in blocks {
            let l = b.latency.lock().unwrap_or_else(PoisonError::into_inner);
            // Same precision, auto-resizing: `add` cannot fail.
            let _ = sched.add(&l.sched);
            let _ = poll.add(&l.poll);
        }
        self.sched_latency = LatencySummary::from_histogram(&sched);
        self.poll_time = LatencySummary::from_histogram(&poll);
    }

    pub(crate) fn add(&mut self, p: &PStats) {
        self.spawned += p.spawned.get();
        self.completed += p.completed.get();
        self.cancelled += p.cancelled.get();
        self.polls += p.polls.get();
        self.steal_attempts += p.steal_attempts.get();
        self.steals += p.steals.get();
        self.stolen += p.stolen.get();
        self.runnext_steals += p.runnext_steals.get();
        self.runnext_steals_early += p.runnext_steals_early.get();
        self.runnext_backoffs += p.runnext_backoffs.get();
        self.rearms += p.rearms.get();
        self.rearms_runnext_only += p.rearms_runnext_only.get();
        self.rearms_refused += p.rearms_refused.get();
        self.quiescent_runs += p.quiescent_runs.get();
        self.spin_over_cap += p.spin_over_cap.get();
        self.startm_submit += p.startm_submit.get();
        self.startm_inject += p.startm_inject.get();
        self.startm_spinner += p.startm_spinner.get();
        self.startm_other += p.startm_other.get();
        self.startm_no_m += p.startm_no_m.get();
        self.startm_deferred += p.startm_deferred.get();
        self.global_takes += p.global_takes.get();
        self.parks += p.parks.get();
        self.unparks += p.unparks.get();
        self.syscalls += p.syscalls.get();
        self.retakes += p.retakes.get();
        self.long_polls += p.long_polls.get();
        self.long_polls_delaying += p.long_polls_delaying.get();
        self.netpoll_blocks += p.netpoll_blocks.get();
        self.netpoll_no_p += p.netpoll_no_p.get();
        self.netpoll_sysmon += p.netpoll_sysmon.get();
    }
}
