//! The scheduler's event points: what each records, and the latency samples taken there.
//!
//! # Readiness and polls
//!
//! A task becomes runnable at its spawn or a wake (`Shared::schedule`); [`Shared::trace_ready`]
//! then stamps it (trace-clock ns, in its wait cell's auxiliary word, which a runnable task
//! does not use otherwise: `task/wait.rs`). The poll that follows reads it
//! ([`Shared::trace_poll_begin`]) before the poll's wait reason overwrites it: start − wake is the scheduling
//! latency (Go's `/sched/latencies`), end − start the poll time (tokio's poll-time histogram),
//! both recorded in the polling P's histograms (`stats.rs`).
//!
//! **Sampling.** Without a trace, 1 in [`TRACKING_PERIOD`] (64) readiness events of each
//! thread is stamped. Go tracks 1 in 8 goroutine transitions (`gTrackingPeriod`), but here a
//! sample costs three clock reads (~36 ns each on the development VM, measured) plus a lock
//! and two histogram records, against ~46 ns for a whole `yield_now` round trip: at 1 in 8,
//! `yield_many` ran ~75% slower and `chained_spawn` ~45% (benches/scheduler.rs, against the
//! commit before sampling existed); with sampling disabled both were back at the old figures.
//! At 1 in 64 the sample path is an eighth of that. A run of 100k tasks still gives thousands
//! of samples, enough for a p99.9. With a trace, every readiness is stamped (the flow arrows
//! need them all), so the histograms then hold every poll.
//!
//! **Why the stamp needs no stronger ordering than `Relaxed`.** It is written by the thread
//! that makes the task runnable, before the task is pushed on a run queue, and read by the M
//! that popped it, before polling. The queue's push/pop (release/acquire) orders the two; no
//! other thread touches the field in between, since a task is queued at most once at a time.
//!
//! # Poll segments (tracing on)
//!
//! A poll is drawn as a slice on the lane of the P that runs it. A blocking `syscall` inside
//! the poll gives the P up (sysmon may hand it to another M, which then polls other tasks on
//! that lane), so the poll is cut there: the part before on the P lane, the blocking call as
//! a `syscall` slice on the M's lane, the rest on the lane of whatever P the M holds after.
//! The open segment (its lane and start) lives in a thread-local while the poll runs.

use super::recorder::{EvArgs, Event, Name, Ph};
use super::{Lane, Recorder};
use crate::sched::context::with_current;
use crate::sched::Shared;
use crate::task::core::Header;
use std::cell::Cell;

/// Without a trace, one readiness event in this many (per thread) is timed (Go's
/// `gTrackingPeriod` is 8; why 64 here: see the module docs).
pub(crate) const TRACKING_PERIOD: u32 = 64;

/// The runtime's tracing state (`Shared::trace`), present only when tracing.
pub(crate) struct RtTrace {
    pub(crate) rec: Recorder,
    /// Lane of each P, by id.
    pub(crate) p_lanes: Box<[Lane]>,
    pub(crate) sysmon: Lane,
    /// Where it is written at shutdown (for messages).
    pub(crate) path: std::path::PathBuf,
    /// The file, created when the runtime was built (a bad path fails the build); taken by
    /// the one `finish`.
    file: std::sync::Mutex<Option<std::fs::File>>,
}

impl RtTrace {
    pub(crate) fn new(rec: Recorder, procs: usize, path: std::path::PathBuf, file: std::fs::File) -> RtTrace {
        let p_lanes = (0..procs).map(|p| rec.lane("gmprt", &format!("P{p}"))).collect();
        let sysmon = rec.lane("gmprt", "sysmon");
        RtTrace { rec, p_lanes, sysmon, path, file: std::sync::Mutex::new(Some(file)) }
    }

    fn ev(&self, lane: Lane, ts: u64, ph: Ph, name: Name, args: EvArgs) {
        self.rec.push(Event { lane: lane.0, ts, ph, name, args });
    }

    /// Writes the trace to its path; errors and drops are reported on stderr.
    pub(crate) fn finish(&self) {
        let file = self.file.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(file) = file else { return }; // written already
        let res = self.rec.write_json(file);
        let p = self.path.display();
        match res {
            Err(e) => eprintln!("gmprt: could not write the trace to {p}: {e}"),
            Ok(()) => {
                let d = self.rec.dropped();
                if d > 0 {
                    eprintln!(
                        "gmprt: trace {p}: {d} events dropped past the cap of {} (GMPRT_TRACE_MAX_EVENTS)",
                        self.rec.0.max_events
                    );
                }
            }
        }
    }
}

/// What `trace_poll_begin` hands to `trace_poll_end`.
#[derive(Clone, Copy)]
pub(crate) struct PollMark {
    /// Poll start (trace-clock ns), or `u64::MAX` when this poll is not timed.
    start: u64,
    /// The wake stamp the poll consumed (ns, without the +1).
    woken: u64,
}

/// The open poll segment while tracing.
#[derive(Clone, Copy)]
struct Segment {
    task: u64,
    /// Lane of the poll's first segment (where its wake flow ends).
    first: Lane,
    /// Lane and start of the open segment.
    lane: Lane,
    start: u64,
}

thread_local! {
    /// This thread's readiness count, for sampling.
    static TICK: Cell<u32> = const { Cell::new(0) };
    /// The open poll segment while tracing.
    static SEGMENT: Cell<Segment> = const { Cell::new(Segment { task: 0, first: Lane(0), lane: Lane(0), start: 0 }) };
}

impl Shared {
    /// Trace-clock ns now (the runtime's epoch is the recorder's when tracing).
    #[inline]
    fn clock(&self) -> u64 {
        self.clock.now_nanos()
    }

    /// `header`'s task became runnable (spawn or wake): stamp it (sampled when not tracing)
    /// and, when tracing, start its wake flow on the caller's lane.
    #[inline]
    pub(crate) fn trace_ready(&self, header: &Header) {
        if let Some(t) = &self.trace {
            let now = self.clock();
            header.wait.stamp_ready(now);
            t.ev(t.rec.here(), now, Ph::WakeOut(header.id().0, now), Name::Static("wake"), EvArgs::None);
            return;
        }
        // `try_with`: a wake can come from a thread-local's destructor at thread exit, when
        // this counter may already be gone; such a wake is simply not sampled.
        let n = TICK.try_with(|c| {
            let n = c.get().wrapping_add(1);
            c.set(n);
            n
        });
        if n.is_ok_and(|n| n.is_multiple_of(TRACKING_PERIOD)) {
            header.wait.stamp_ready(self.clock());
        }
    }

    /// A poll of `header`'s task starts on this M.
    #[inline]
    pub(crate) fn trace_poll_begin(&self, header: &Header) -> PollMark {
        // No need to clear the stamp: the poll's `wait::enter` overwrites the word.
        let w = header.wait.ready_stamp();
        if w.is_none() && self.trace.is_none() {
            return PollMark { start: u64::MAX, woken: u64::MAX };
        }
        let start = self.clock();
        if let Some(t) = &self.trace {
            let lane = t.rec.here();
            SEGMENT.with(|s| s.set(Segment { task: header.id().0, first: lane, lane, start }));
        }
        PollMark { start, woken: w.unwrap_or(u64::MAX) }
    }

    /// The poll that `mark` began ends (`ready`: the future finished).
    #[inline]
    pub(crate) fn trace_poll_end(&self, header: &Header, mark: PollMark, ready: bool) {
        if mark.start == u64::MAX {
            return;
        }
        let end = self.clock();
        if mark.woken != u64::MAX {
            let pid = with_current(|cx| cx.map_or(usize::MAX, |cx| cx.pid.get()));
            let stats = self.allp.get(pid).map_or(&*self.external_stats, |p| &p.stats);
            stats.record_latency(mark.start.saturating_sub(mark.woken), end.saturating_sub(mark.start));
        }
        if let Some(t) = &self.trace {
            let task = header.id().0;
            let seg = SEGMENT.with(Cell::get);
            let dur = end.saturating_sub(seg.start);
            t.ev(seg.lane, seg.start, Ph::Slice(dur), Name::Task(task), EvArgs::Poll { task, ready });
            if mark.woken != u64::MAX {
                // Pushed after the poll's first slice (same thread, same `ts`; the writer's
                // sort is stable), so the flow's end binds to it.
                t.ev(seg.first, mark.start, Ph::WakeIn(task, mark.woken), Name::Static("wake"), EvArgs::None);
            }
        }
    }

    /// A blocking `syscall` starts inside a poll on P `pid` (which the M still holds): the
    /// poll's segment on the P lane ends here, a `syscall` slice on the M's lane begins.
    pub(crate) fn trace_syscall_enter(&self, pid: usize, mid: usize) {
        let Some(t) = &self.trace else { return };
        let now = self.clock();
        let seg = SEGMENT.with(Cell::get);
        let task = seg.task;
        let dur = now.saturating_sub(seg.start);
        t.ev(seg.lane, seg.start, Ph::Slice(dur), Name::Task(task), EvArgs::Poll { task, ready: false });
        t.ev(t.p_lanes[pid], now, Ph::Instant, Name::Static("syscall"), EvArgs::Task(task));
        let m = t.rec.m_lane(mid);
        SEGMENT.with(|s| s.set(Segment { lane: m, start: now, ..seg }));
    }

    /// The blocking call returned and the M holds a P again (or none at shutdown): the
    /// `syscall` slice ends, the poll's next segment starts on the lane the M has now.
    pub(crate) fn trace_syscall_exit(&self) {
        let Some(t) = &self.trace else { return };
        let now = self.clock();
        let seg = SEGMENT.with(Cell::get);
        let dur = now.saturating_sub(seg.start);
        t.ev(seg.lane, seg.start, Ph::Slice(dur), Name::Static("syscall"), EvArgs::Task(seg.task));
        let lane = t.rec.here();
        SEGMENT.with(|s| s.set(Segment { lane, start: now, ..seg }));
    }

    /// sysmon took P `pid` from an M blocked in a `syscall` (on the sysmon lane and the P's).
    pub(crate) fn trace_retake(&self, pid: usize) {
        let Some(t) = &self.trace else { return };
        let now = self.clock();
        t.ev(t.sysmon, now, Ph::Instant, Name::Static("retake"), EvArgs::P(pid));
        t.ev(t.p_lanes[pid], now, Ph::Instant, Name::Static("retake"), EvArgs::P(pid));
    }

    /// P `thief` stole work from P `victim` (on the thief's lane).
    #[inline]
    pub(crate) fn trace_steal(&self, thief: usize, victim: usize) {
        let Some(t) = &self.trace else { return };
        t.ev(t.p_lanes[thief], self.clock(), Ph::Instant, Name::Static("steal"), EvArgs::Victim(victim));
    }

    /// P `pid` put task `task` in its `runnext` (it runs next, in the current time slice).
    #[inline]
    pub(crate) fn trace_runnext(&self, pid: usize, task: u64) {
        let Some(t) = &self.trace else { return };
        t.ev(t.p_lanes[pid], self.clock(), Ph::Instant, Name::Static("runnext"), EvArgs::Task(task));
    }

    /// This M parks for lack of work (on its M lane).
    pub(crate) fn trace_park(&self) {
        let Some(t) = &self.trace else { return };
        let m = with_current(|cx| cx.map_or(usize::MAX, |cx| cx.mid));
        t.ev(t.rec.m_lane(m), self.clock(), Ph::Instant, Name::Static("park"), EvArgs::M(m));
    }

    /// This thread handed a P to a parked M and woke it (`startm`).
    pub(crate) fn trace_unpark(&self) {
        let Some(t) = &self.trace else { return };
        t.ev(t.rec.here(), self.clock(), Ph::Instant, Name::Static("unpark"), EvArgs::None);
    }

    /// Brackets an M firing due timers: returns the start to pass to [`Self::trace_timers_end`].
    #[inline]
    pub(crate) fn trace_timers_begin(&self) -> u64 {
        if self.trace.is_some() {
            self.clock()
        } else {
            0
        }
    }

    /// `n` timers fired since `start` (their wakes' flows leave this slice).
    pub(crate) fn trace_timers_end(&self, start: u64, n: usize) {
        let Some(t) = &self.trace else { return };
        let now = self.clock();
        let args = EvArgs::Json(vec![("fired", serde_json::json!(n))]);
        t.ev(t.rec.here(), start, Ph::Slice(now - start), Name::Static("timers"), args);
    }
}
