//! sysmon — the monitor thread (Go's `sysmon`): retakes Ps from blocking calls, spots polls
//! that hog their P, wakes idle Ms for work stuck behind such a poll, and prints schedtrace.
//!
//! # Loop
//! Sleep `delay`, then look at every P:
//! * **`SYSCALL`**: retake it (`syscall.rs`, step 2) when it has queued work, or no other P is
//!   idle or spinning, once it has been there ≥ 20 µs; or in any case after 10 ms (Go's rule:
//!   do not retake for nothing, but do not let a P sit in a syscall forever).
//! * **`RUNNING`** with the same poll count as last time: the M is inside one poll. Past 10 ms
//!   (Go's `forcePreemptNS`) that is a *long poll*: counted in `stats().long_polls`, appended
//!   to schedtrace, and — if tasks are queued behind it on that P — reported once per runtime
//!   on stderr naming the task (a long poll that delays nobody, such as the caller of a long
//!   `parallel_for` whose helpers run on the other Ps, is counted but not warned about). Go would preempt
//!   the goroutine here; a future cannot be preempted, so the best we can do is (a) say so and
//!   (b) `wakep` if the stuck P has queued work, so idle Ms steal it (`runnext` included).
//!
//! Back-off as Go's: `delay` is 20 µs while sysmon keeps finding things to do, doubles after 50
//! idle rounds up to 10 ms, and when every P is idle and none is in a syscall sysmon sleeps
//! until `sysmon_wake` (called by `startm` and `syscall`), capped at the schedtrace interval.

use super::syscall::{P_RUNNING, P_SYSCALL};
use super::Shared;
use crate::loom::sync::atomic::Ordering::SeqCst;
use crate::loom::sync::wait_for;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Go's sysmon minimum delay.
const DELAY_MIN: Duration = Duration::from_micros(20);
/// Go's sysmon maximum delay.
const DELAY_MAX: Duration = Duration::from_millis(10);
/// Rounds without work before the delay starts doubling (Go: 50).
const IDLE_ROUNDS: u32 = 50;
/// A poll longer than this is reported (Go's `forcePreemptNS`, 10 ms).
const LONG_POLL_NS: u64 = 10_000_000;
/// Rounds in a row a long poll's P must show queued work to count as delaying it: two, so a
/// task caught in the queue for the microseconds before a spinning M steals it does not count.
const QUEUED_ROUNDS: u32 = 2;
/// A P in a syscall with nothing queued is retaken after this long anyway (Go: 10 ms).
const SYSCALL_RETAKE_NS: u64 = 10_000_000;

/// What sysmon remembers about one P between rounds.
#[derive(Clone, Copy, Default)]
struct PSeen {
    polls: u64,
    since: u64,
    /// This poll was counted as long.
    reported: bool,
    /// This poll was counted as delaying queued tasks.
    delaying: bool,
    /// Consecutive rounds of this poll in which the P had queued work.
    queued_rounds: u32,
}

/// State shared with the rest of the runtime (in `Shared::sysmon`).
#[derive(Default)]
pub(crate) struct SysmonCtl {
    /// True while sysmon sleeps without a deadline (all Ps idle).
    pub(crate) deep: bool,
    /// Set at shutdown.
    pub(crate) stop: bool,
}

impl Shared {
    /// Wakes sysmon from its deep sleep (a P became busy or entered a syscall).
    pub(crate) fn sysmon_wake(&self) {
        let (m, cv) = &*self.monitor;
        let mut g = m.lock();
        if g.deep {
            g.deep = false;
            cv.notify_one();
        }
    }

    /// One sysmon round. Returns true if it did something (retake, wakep, report).
    fn sysmon_round(&self, seen: &mut [PSeen], warned: &mut bool) -> bool {
        let now = self.now_nanos();
        // No M has polled the network for 10 ms (netpoll/mod.rs, step 3).
        let mut acted = self.sysmon_netpoll();
        for (pid, ps) in self.allp.iter().enumerate() {
            match ps.status.load(SeqCst) {
                P_SYSCALL => {
                    let since = now.saturating_sub(ps.syscall_when.load(SeqCst));
                    let others_free = self.nmspinning.load(SeqCst) + self.npidle.load(SeqCst) > 0;
                    let retake = since >= DELAY_MIN.as_nanos() as u64
                        && (ps.has_work() || !others_free || since >= SYSCALL_RETAKE_NS);
                    if retake {
                        let s = self.sched.lock();
                        let p = ps.syscall_slot.lock().take();
                        if let Some(p) = p {
                            self.external_stats.retakes.bump_shared();
                            self.trace_retake(pid);
                            self.handoffp(s, p);
                            acted = true;
                        }
                    }
                }
                P_RUNNING => {
                    let polls = ps.stats.polls.get();
                    let s = &mut seen[pid];
                    if polls != s.polls {
                        *s = PSeen { polls, ..PSeen::default() };
                        s.since = now;
                        continue;
                    }
                    // Same poll for a whole round: others may take its queued work.
                    let has_work = ps.has_work();
                    s.queued_rounds = if has_work { s.queued_rounds + 1 } else { 0 };
                    if has_work && self.npidle.load(SeqCst) > 0 {
                        self.wakep(super::idle::WakeFrom::Other);
                        acted = true;
                    }
                    let long = now.saturating_sub(s.since) >= LONG_POLL_NS;
                    if long && !s.reported {
                        s.reported = true;
                        self.external_stats.long_polls.bump_shared();
                        acted = true;
                    }
                    // Said on stderr (once per runtime) only while tasks wait behind the poll: a
                    // long poll that delays nobody is how a compute task uses its P (the caller of
                    // a long `parallel_for`, a calibration), not a mistake. Checked every round of
                    // the poll, so work that queues up later is still reported. "Wait" means seen
                    // queued in two rounds in a row (≥ 20 µs apart): a task spawned for another P
                    // (a `parallel_for` helper) sits in the queue for the microseconds a
                    // spinning M takes to steal it, and a round can land in that window.
                    if !long || s.delaying || s.queued_rounds < QUEUED_ROUNDS {
                        continue;
                    }
                    s.delaying = true;
                    self.external_stats.long_polls_delaying.bump_shared();
                    acted = true;
                    if let (false, Some((task, site))) = (*warned, ps.current()) {
                        *warned = true;
                        let site = crate::task::site::lookup(site)
                            .map_or_else(String::new, |l| format!(" (spawned at {l})"));
                        eprintln!(
                            "gmprt: {task}{site} has been running one poll for over {} ms on P{pid} \
                             while {} task(s) wait behind it (futures cannot be preempted). Wrap blocking \
                             work in gmprt::syscall(..), or call gmprt::yield_now().await in long loops. \
                             (Reported once; stats().long_polls counts every long poll.)",
                            LONG_POLL_NS / 1_000_000,
                            ps.queued().max(1)
                        );
                    }
                }
                _ => seen[pid] = PSeen::default(),
            }
        }
        acted
    }

    fn all_idle(&self) -> bool {
        self.npidle.load(SeqCst) == self.procs()
            && self.allp.iter().all(|p| p.status.load(SeqCst) != P_SYSCALL)
    }
}

/// Starts sysmon. `schedtrace`: print Go's schedtrace line every interval.
#[cfg(not(loom))]
pub(crate) fn start(
    shared: Arc<Shared>,
    schedtrace: Option<Duration>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().name("gmprt-sysmon".into()).spawn(move || run(&shared, schedtrace))
}

#[cfg(not(loom))]
fn run(shared: &Shared, schedtrace: Option<Duration>) {
    let start = Instant::now();
    // A period past the end of time prints no line (`checked_add`: never, not a panic).
    let mut next_trace = schedtrace.and_then(|d| start.checked_add(d));
    let mut seen = vec![PSeen::default(); shared.procs()];
    let mut warned = false;
    let mut delay = DELAY_MIN;
    let mut idle = 0u32;
    loop {
        {
            let (m, cv) = &*shared.monitor;
            let mut g = m.lock();
            if g.stop {
                return;
            }
            // Deep sleep when nothing runs: until woken, or the next schedtrace line.
            let deep = shared.all_idle();
            g.deep = deep;
            let wait = match (deep, next_trace) {
                (true, None) => None,
                (true, Some(t)) => Some(t.saturating_duration_since(Instant::now())),
                (false, t) => {
                    Some(t.map_or(delay, |t| delay.min(t.saturating_duration_since(Instant::now()))))
                }
            };
            match wait {
                None => cv.wait(&mut g),
                Some(d) => {
                    wait_for(cv, &mut g, d);
                }
            }
            g.deep = false;
            if g.stop {
                return;
            }
        }
        if let (Some(every), Some(t)) = (schedtrace, next_trace) {
            let now = Instant::now();
            if now >= t {
                eprintln!("{}", crate::schedtrace::line(shared, now - start));
                next_trace = t.checked_add(every);
            }
        }
        if shared.sysmon_round(&mut seen, &mut warned) {
            idle = 0;
            delay = DELAY_MIN;
        } else {
            idle += 1;
            if idle > IDLE_ROUNDS {
                delay = (delay * 2).min(DELAY_MAX);
            }
        }
    }
}
