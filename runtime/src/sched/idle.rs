//! M parking and unparking: `wakep`, `startm`, `stopm`, the idle-P list.
//!
//! # The problem
//! An M with nothing to run should sleep (burning a core on an empty queue is waste), but a task
//! made runnable must never sit in a queue while every M sleeps (a *lost wakeup*). And waking
//! an M for every spawn is too slow: an unpark costs a futex call and a context switch.
//!
//! # The protocol (Go's "Worker thread parking/unparking", proc.go)
//! State: `npidle` (idle Ps), `nmspinning` (Ms that hold a P and are looking for work but have
//! found none yet), both `SeqCst` atomics, plus the idle-P and idle-M lists under `sched` (Go's
//! `sched.lock`). An M runs tasks only while it holds a P.
//!
//! 1. **Submitter.** Whoever makes a task runnable in a place other Ms can take it from (a
//!    local queue push, a displaced `runnext`, the global queue) then calls [`Shared::wakep`]:
//!    `fence(SeqCst)`; if `npidle == 0` (every P busy; they will find it) or
//!    `nmspinning != 0` (a spinner will find it) return; otherwise CAS `nmspinning` 0 → 1, take
//!    an idle P and hand it to an idle M (or a new thread) as a *spinning* M. A task put in an
//!    empty `runnext` slot wakes nobody: the current M runs it as soon as the current poll
//!    returns. Any task that an M holding a P puts on that P's own queue (a spawn from a task,
//!    a wake by a task, a task that its own poll re-queues: a yield, a spent coop budget) is in
//!    the same position: that M is awake and reaches it, or a thief takes it first, so its
//!    `wakep` is only a hint for parallelism ([`Shared::wakep_local`]): it runs only when plain
//!    reads, without the fence, show an idle P and no spinner, as Go's `wakep` reads after
//!    `runqput`. A re-queued task gets none when alone on its P (`Shared::schedule`): that is
//!    the M's next task, which a woken M could only take from the M about to run it. The fence
//!    is for work no awake M owns: the global queue (`inject`, `injectglist`). With one P, a
//!    submitter that holds it sends no `wakep` at all (`Processor::runqput` reports nothing
//!    stealable): no other P exists to be idle, and the task stays with the P, which its M
//!    either reaches or, entering a syscall, hands off with the task in view (`handoffp`).
//! 2. **Spinner.** A spinning M that finds work stops spinning (`nmspinning -= 1`) and, as Go's
//!    `resetspinning`, calls `wakep` itself: there may be more work, and it was the one that was
//!    supposed to find it.
//!
//!    **Spinning cap.** An M becomes a spinner only while fewer than half the busy Ps have one:
//!    `2·nmspinning < busy`, busy counting the P the M holds or is about to take
//!    ([`Shared::try_spin`], a CAS, so Ms deciding at once cannot overshoot). Every path to
//!    spinning passes there — the steal check in `findRunnable`, the re-arm of step 3, a timed
//!    wake-up — except `wakep`'s first spinner (0 → 1, always within the cap). A timed or
//!    netpoll wake-up over the cap keeps its P as a plain M: it fires due timers and runs what
//!    its own queues and the global queue hold, and steals nothing.
//! 3. **M going idle** (found nothing): under `sched`, recheck the global queue, then put its P
//!    on the idle list (`npidle += 1`); then stop spinning (`nmspinning -= 1` if it was);
//!    `fence(SeqCst)`; then **recheck the global queue, every P's queue and the `runnext` of
//!    every P that is not running** ([`Shared::work_seen`]). A running P's `runnext` is left
//!    out: its own M runs that task when its poll returns, thieves take it only after a
//!    back-off (`processor.rs`, "Stealing runnext"), and counting it sent every M that went
//!    idle beside a spawner back to spinning, past the cap, for a task it was not to take. If
//!    it sees work, an idle P exists and the cap allows one more spinner with that P counted
//!    busy, it takes the P and continues looking as a *spinning* M (Go's `becomeSpinning`: the
//!    work may be another P's, reachable only by stealing); otherwise it parks (`stopm`) until
//!    `startm` hands it a P. Before it parks, an M that finds the runtime *quiescent* (nothing
//!    queued, no M running on a P) with a registered hook pending takes a P back and
//!    runs the hook there (`quiesce.rs`); this adds a way out of the idle path, never a wait,
//!    so the argument below is unchanged.
//! 4. **`wakep` that finds no idle P** undoes its `nmspinning` increment, `fence(SeqCst)`s and
//!    rechecks the queues and `npidle`; if both show something it tries again.
//! 5. **`startm` that finds no parked M** (unlike Go's, which always starts a thread then):
//!    when it is for queued tasks (a spawn, a wake, the global queue, a spinner passing on;
//!    not a timer, a socket waiter off any M or a hand-off), the P holds no task of its own
//!    (one from the idle list holds none) and the Ms outside blocking calls already number
//!    `procs`, it starts no thread. It puts the P back (`pidleput`: the idle list, or an M
//!    back from a blocking call that waits for one), undoes the spinning count, breaks the
//!    netpoller (`netpollBreak`), and leaves the work to an M that holds no P and is not
//!    parked: by counting, one exists (below). Such an M either is on its idle path, whose
//!    last looks find the work, or is blocked in `netpoll`, which the break ends; an M that
//!    claims `netpoll` looks once more after its claim (`worker.rs`), for a break read by an
//!    earlier poll. This is the tokio shape (a worker parked on the I/O driver holds its core,
//!    and a notification unparks it through the driver) within Go's: under HTTP on 2 cores the
//!    third M that Go's rule starts, for the P the M in `netpoll` released, left 3-6% of the
//!    cores idle (`RuntimeStats::startm_deferred` counts these).
//! 6. **A deferral holds `wakep` back until its M has looked.** When step 5 puts its P on the
//!    idle list it sets `wake_deferred` (under `sched`, before it undoes the spinning count).
//!    While the flag is set, a `wakep` for queued work returns after its fence, as it does for
//!    a counted spinner: the M that step 5 counted is still to look, and another `startm`
//!    could only defer again. Whoever takes a P off the idle list (`pidleget`) and every M
//!    about to park (`stopm`, before its last look) clears it, under `sched`, then
//!    `fence(SeqCst)`s. `WakeFrom::Other` ignores it, as step 5 does. Without the hold, every
//!    spawn in the window between an M's release of its P and its re-arm or park took
//!    `sched` to defer once more: 13,335 of the 13,462 `startm`s of a cold 2-P
//!    `million_tasks` run, on the lock that the idle M needed for its own look.
//!
//! # Why no wakeup is lost (proof sketch, in the form of rayon-core's sleep README)
//! Take a task T pushed at time W by a submitter that then runs `wakep`. Suppose, for a
//! contradiction, that afterwards every M sleeps while T stays queued.
//!
//! * The submitter's `wakep` fence F_s and the fence F_m of any M that went idle (step 3) are
//!   both in the single total order of `SeqCst` operations. This is the store-buffering
//!   pattern: (push T; F_s; read `npidle`/`nmspinning`) against (`npidle += 1`,
//!   `nmspinning -= 1`; F_m; read queues). Either F_m comes after F_s, and that M's recheck sees
//!   T — it then takes an idle P and keeps looking, or fails to get one because another M took
//!   the P, and *that* M will look; or F_s comes after F_m, and the submitter sees that M's
//!   increments of `npidle` and its decrement of `nmspinning`.
//! * So the submitter saw `npidle > 0` (else some P was busy at F_s and its M will run through
//!   `findRunnable`, which scans the local and global queues, before it could go idle — and
//!   going idle it rechecks). If it saw `nmspinning == 0` it started a spinner, which looks
//!   (and step 3 applies to it in turn). If its CAS found no idle P, step 4's recheck is the
//!   same store-buffering argument against the M that took the P.
//! * If it saw `nmspinning > 0`, some spinner S existed after W. S either finds work — then
//!   by step 2 it calls `wakep`, whose fence comes after W, and the argument repeats with a
//!   later fence — or goes idle through step 3, whose recheck comes after S's spin began …
//!   and after W in the fence order, so it sees T.
//!
//! * An M whose recheck sees T but is refused by the cap read `nmspinning = n ≥ 1` (the cap
//!   refuses only when `2n ≥ busy ≥ 1`) after its fence: it is in the position of a submitter
//!   that saw `nmspinning > 0`, and the previous point applies to the spinner it counted.
//!   It takes no P before deciding, so no submitter can read `npidle == 0` because of it.
//! * A spinner that sleeps in the `runnext` back-off is still counted and holds its P; the
//!   back-off is bounded, after which it takes work (step 2) or goes idle (step 3).
//! * A task left out of the recheck — in a running P's `runnext` — is not stranded: the M
//!   running that P is awake and runs it when its poll returns; if the poll runs long with
//!   work queued, sysmon's `wakep` sends a spinner, which takes it after one back-off.
//! * A task an M put on its own P's queue (a spawn, a wake, a re-queue by its own poll) with
//!   no fenced `wakep` (alone, or `wakep_local`'s plain reads showed no idle P or a spinner,
//!   perhaps stale) is in the same position: that M is awake, and its own queue, which it
//!   looks at before any idle path, holds it (unless a thief took it). Only parallelism can be
//!   lost, and only until that M's current poll returns, or sysmon's `wakep` for a long poll
//!   with work queued.
//! * A `startm` that starts no thread (step 5) held `sched`, found `midle` empty and counted
//!   `t - s ≥ procs` Ms (`t` started, `s` inside `syscall`, whose count rises before the P is
//!   given up and falls after one is taken back). At most `procs - 1` of the other `t - s`
//!   hold a P (its own P is idle), so one, M_i, holds none and is not parked: it is between its
//!   idle path's `pidleput` and `stopm`'s push to `midle` (or just started, on its way there),
//!   or blocked in `netpoll`. M_i's `stopm` takes `sched` after this `startm` released it (else
//!   `midle` was not empty) and makes its last look there, which sees T (queued before the
//!   submitter's fence, before this `startm`) and an idle P. If M_i claims `netpoll` instead,
//!   either its claim comes after the break, and its look after the claim sees T and the P
//!   put back before the break; or the break comes after the claim, when no other poll can
//!   read it (`lastpoll == 0` stops them), and ends M_i's poll. Either way M_i takes a P,
//!   spinning if the cap allows — if not, the spinners it counted find T, as above. If
//!   `pidleput` gave the P to an M back from a blocking call instead, M_i may find no idle P:
//!   that M now holds the P and is awake, and it reaches T through its own `findRunnable`.
//! * A submitter that read `wake_deferred` set (step 6) and returned read a value that
//!   precedes, in the flag's modification order, the next clear C, whose fence F_c follows
//!   it. So F_s precedes F_c in the fence order, and every read that happens after F_c sees T.
//!   A clear comes: the deferral that set the flag counted an M_i that holds no P and is not
//!   parked, and M_i next either takes an idle P (`pidleget` clears) or parks (`stopm`
//!   clears), unless another M clears first. The clearing M either takes the P (it is awake
//!   with a P, and its `findRunnable` and any later step-3 recheck come after F_c; or it is a
//!   `startm` that wakes an M for it, or defers again under the same lock, and then the
//!   deferral's own M_i looks after it), or is in `stopm`, whose last look comes after F_c
//!   and sees T, then takes an idle P or parks beside Ms that will run T, as in the previous
//!   point. A `wakep` from `Other` is never held back, so step 5's reasons for excluding those
//!   stand.
//!
//! Each repetition happens strictly later in the fence order and involves an M that is
//! awake at that point, so "every M sleeps while T is queued" cannot be reached.
//!
//! **Tasks parked on sockets** are not in any queue until the netpoller wakes them; the same
//! fence carries the argument over (`netpoll/mod.rs`, "Why no wake-up is lost"): step 3's M
//! reads `nwaiters` after its fence and, if a task waits on a socket and no other M is
//! blocked in `netpoll` (`lastpoll != 0`), blocks there instead of in `stopm` — an M in
//! `netpoll` is awake for the purpose of the proof, since the readiness it waits for is what
//! would make the task runnable. A waiter off any M pairs its `nwaiters` increment with this
//! fence through `wakep`. `tests/loom_netpoll.rs` checks readiness racing the idle path, a
//! spawn and the last spinning M, and shutdown with an M blocked in `netpoll`. The loom models
//! in `tests/loom_park.rs` check small instances: one P with a spawn from outside racing an M
//! that is parking or on its idle path, and two Ps with spawns from outside and from a task.

use super::processor::Processor;
use super::syscall::P_RUNNING;
use super::Shared;
use crate::loom::sync::atomic::{fence, Ordering::Acquire, Ordering::Relaxed, Ordering::SeqCst};
use crate::loom::sync::{wait_for, Condvar, Mutex, MutexGuard};
use std::sync::Arc;
use std::time::Duration;

/// Why a `wakep` or `startm` happened, for the `startm_*` counters of `RuntimeStats`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WakeFrom {
    /// A spawn or a wake queued a task on the caller's P (`runqput` added stealable work).
    Submit,
    /// A task went to the global queue (`inject`, `injectglist`).
    Inject,
    /// A spinning M found work and passes the search on (Go's `resetspinning`).
    Spinner,
    /// Timers, the netpoller, sysmon, a P handed off from a syscall.
    Other,
}

/// State under `Shared::sched` (Go's `sched.lock`).
pub(crate) struct Sched {
    /// Idle Ps (Go's `sched.pidle`). Boxed: a P is handed between Ms by pointer.
    #[allow(clippy::vec_box)]
    pub(crate) pidle: Vec<Box<Processor>>,
    /// Parked Ms (Go's `sched.midle`).
    pub(crate) midle: Vec<Arc<MPark>>,
    /// Ms back from a syscall waiting for a P (`syscall.rs`); served before the idle list.
    pub(crate) syscall_waiters: Vec<Arc<MPark>>,
    /// OS threads of Ms, joined at shutdown.
    pub(crate) threads: Vec<crate::loom::thread::JoinHandle<()>>,
    /// Ms ever started (ids).
    pub(crate) mnext: usize,
    /// A `startm` has found no idle M and could not start one, and said so on stderr: later
    /// ones are only counted (`RuntimeStats::startm_no_m`).
    pub(crate) newm_warned: bool,
}

/// What a parked M waits for: a P to run with, or shutdown.
#[derive(Default)]
pub(crate) struct MSlot {
    pub(crate) p: Option<Box<Processor>>,
    pub(crate) spinning: bool,
    pub(crate) shutdown: bool,
}

/// The parking spot of one M (Go's `m.park` note).
#[derive(Default)]
pub(crate) struct MPark {
    pub(crate) slot: Mutex<MSlot>,
    pub(crate) cv: Condvar,
}

impl Shared {
    /// Go's `pidleput`. Must hold `sched`.
    /// An M back from a syscall waiting for a P gets it first (its poll is suspended on its
    /// stack until then). Returns whether the P went to the idle list (false: to such an M).
    pub(crate) fn pidleput(&self, s: &mut MutexGuard<'_, Sched>, p: Box<Processor>) -> bool {
        if !s.syscall_waiters.is_empty() {
            let m = s.syscall_waiters.remove(0);
            self.nsyscall_waiters.fetch_sub(1, SeqCst);
            let mut slot = m.slot.lock();
            slot.p = Some(p);
            m.cv.notify_one();
            return false;
        }
        s.pidle.push(p);
        if self.npidle.fetch_add(1, SeqCst) + 1 == self.procs() {
            // The last P went idle: a parked `block_on` may now find a deadlock (checkdead.rs).
            self.wake_block_ons_if_dead();
        }
        true
    }

    /// Go's `pidleget`. Must hold `sched`.
    pub(crate) fn pidleget(&self, s: &mut MutexGuard<'_, Sched>) -> Option<Box<Processor>> {
        let p = s.pidle.pop()?;
        let was = self.npidle.fetch_sub(1, SeqCst);
        // Every P was idle: sysmon may be in its deep sleep, which only `sysmon_wake` ends
        // (sysmon.rs; it decides to sleep under its lock from `npidle`, so a wake taken after
        // this decrement cannot be missed). `startm` wakes it too, but a P taken here by an M
        // on its idle path (step 3's re-arm, `stopm`'s last look, after `netpoll`) has no
        // `startm`: since step 5 defers starts to such Ms, a P could run a long poll or enter
        // a blocking call with sysmon asleep, and never be retaken. Not under loom, where
        // sysmon does not run.
        #[cfg(not(loom))]
        if was == self.procs() {
            self.sysmon_wake();
        }
        #[cfg(loom)]
        let _ = was;
        // Whoever takes an idle P looks at the queues next (it holds a P and runs
        // `findRunnable`, or hands the P to an M that does, or defers again under this lock).
        self.clear_wake_deferred(s);
        Some(p)
    }

    /// Step 6: ends a deferral's hold on `wakep`. Must hold `sched` (the guard is the proof;
    /// the flag's only writers hold it), and must look at the queues after the call, or leave
    /// the duty to one that does after this lock is released: `pidleget` (the P's taker) and
    /// `stopm` (before its last look). The fence pairs with `wakep`'s: a submitter that read
    /// the flag set read it before this clear, so its fence precedes ours, and every read
    /// after ours sees its task.
    fn clear_wake_deferred(&self, _sched: &mut MutexGuard<'_, Sched>) {
        // Relaxed: written only under `sched`, which we hold.
        if self.wake_deferred.load(Relaxed) {
            self.wake_deferred.store(false, SeqCst);
            fence(SeqCst);
        }
    }

    /// `pidleget`, unless the runtime is shutting down (then no P leaves the idle list: shutdown
    /// sets its flag before it collects the idle Ps, so a P taken under `sched` after that check
    /// could escape the drain). Must hold `sched`.
    pub(crate) fn pidleget_unless_shutdown(&self, s: &mut MutexGuard<'_, Sched>) -> Option<Box<Processor>> {
        if self.is_shutdown() {
            None
        } else {
            self.pidleget(s)
        }
    }

    /// Step 1 for a task the caller's own P now holds (a spawn, or a wake, by the M holding
    /// that P): that M is awake and reaches the task, so a wake-up is for parallelism only.
    /// Plain reads decide whether one looks useful (an idle P and no spinner), and only then
    /// the fenced [`Shared::wakep`] runs. A stale "no" costs a moment of parallelism, never the
    /// task (module doc, step 1) — Go's `wakep` after `runqput` reads without a barrier too.
    #[inline]
    pub(crate) fn wakep_local(&self) {
        // Relaxed: a hint, not the protocol's read; `wakep` reads both again after its fence.
        if self.npidle.load(Relaxed) != 0 && self.nmspinning.load(Relaxed) == 0 {
            self.wakep(WakeFrom::Submit);
        }
    }

    /// Go's `wakep`: after making stealable work, start a spinning M if there is an idle P and
    /// no spinner. Any thread may call it. See the module doc, steps 1, 4 and 6.
    pub(crate) fn wakep(&self, from: WakeFrom) {
        loop {
            // Pairs with the fence in the idle path (step 3) and in our own retry below.
            fence(SeqCst);
            if self.npidle.load(SeqCst) == 0 || self.nmspinning.load(SeqCst) != 0 {
                return;
            }
            // Step 6: a deferral's M has still to look, and it will see our task; another
            // `startm` would only defer again. Read last, so only a `wakep` that would take
            // `sched` reads this line.
            if from != WakeFrom::Other && self.wake_deferred.load(SeqCst) {
                return;
            }
            if self.nmspinning.compare_exchange(0, 1, SeqCst, SeqCst).is_err() {
                return;
            }
            let mut s = self.sched.lock();
            // Shutdown is checked under the lock, and the P goes to an M before we unlock
            // (`startm`): shutdown sets its flag before it joins the Ms and collects the idle
            // Ps, so no P is ever held outside both where its queue would escape the drain.
            let p = self.pidleget_unless_shutdown(&mut s);
            match p {
                Some(p) => return self.startm(s, p, true, from),
                None => {
                    drop(s);
                    // Step 4: a concurrent submitter may have relied on our transient spinner.
                    self.nmspinning.fetch_sub(1, SeqCst);
                    if self.is_shutdown() {
                        return;
                    }
                    fence(SeqCst);
                    if self.npidle.load(SeqCst) == 0 || !self.any_work_visible() {
                        return;
                    }
                }
            }
        }
    }

    /// Go's `startm`: run `p` on an idle M, or on a new thread if none is idle. Called with
    /// `sched` held (the P was just taken from the idle list under it). With `spinning`, the
    /// caller already counted the M in `nmspinning`. `from` only feeds the counters. Lock
    /// order: `sched`, then an M's slot.
    pub(crate) fn startm(
        &self,
        mut s: MutexGuard<'_, Sched>,
        p: Box<Processor>,
        spinning: bool,
        from: WakeFrom,
    ) {
        let st = &self.external_stats;
        match from {
            WakeFrom::Submit => st.startm_submit.bump_shared(),
            WakeFrom::Inject => st.startm_inject.bump_shared(),
            WakeFrom::Spinner => st.startm_spinner.bump_shared(),
            WakeFrom::Other => st.startm_other.bump_shared(),
        }
        self.sysmon_wake();
        if let Some(m) = s.midle.pop() {
            self.nmidle.fetch_sub(1, SeqCst);
            let mut slot = m.slot.lock();
            debug_assert!(slot.p.is_none());
            slot.p = Some(p);
            slot.spinning = spinning;
            m.cv.notify_one();
            drop(slot);
            drop(s);
            self.external_stats.unparks.bump_shared();
            self.trace_unpark();
            return;
        }
        // No parked M. A start for queued tasks (a spawn's, a wake's, the global queue's, a
        // spinner's passing on: every M's last look reads those queues) with a P that holds
        // none of its own gets no new thread while the Ms not in a blocking call already
        // number `procs`: one of them then holds no P and is on its idle path or blocked in
        // netpoll, and it runs the work instead (step 5). Not for `Other` (a timer, a socket
        // waiter off any M, sysmon, a P handed off from a blocking call): what those need an M
        // for is not in a queue, and an M's last look would not see it; nor for a P with tasks
        // in its own queue, which thieves skip while it is idle. A third M for two Ps, the one
        // the M in netpoll left its P to, is what kept cores idle under HTTP on 2 cores
        // (benches/README.md, "Sleeps and idle cores").
        let ms_out_of_calls = s.threads.len().saturating_sub(self.dead.in_syscall.load(SeqCst));
        if from != WakeFrom::Other && ms_out_of_calls >= self.procs() && !self.allp[p.id].has_work() {
            st.startm_deferred.bump_shared();
            if self.pidleput(&mut s, p) {
                // Step 6: stored before the spinning count falls, so that a `wakep` which
                // reads the fall (then this flag, both SeqCst) reads it set.
                self.wake_deferred.store(true, SeqCst);
            }
            if spinning {
                self.nmspinning.fetch_sub(1, SeqCst);
            }
            drop(s);
            // The M that takes it over may be blocked in netpoll, or about to block there.
            self.netpoll_break();
            return;
        }
        // No idle M: start one (Go's `newm`). Spawning under the lock keeps shutdown's
        // "join every thread" loop exact.
        if let Err(e) = self.newm(&mut s, Some(p), spinning) {
            // Keep the P usable; the work it was meant for stays queued for other Ms. The M
            // blocked in netpoll (if any) is in no idle list but can run it: break it
            // (netpoll/mod.rs, `netpollBreak`).
            self.external_stats.startm_no_m.bump_shared();
            // Said once per runtime, then counted: with `max_threads == procs`, a setting the
            // Builder allows, the M blocked in netpoll makes every such `startm` refused (it
            // was 380-430 lines a second under the HTTP bench on 2 cores).
            let first = !std::mem::replace(&mut s.newm_warned, true);
            drop(s);
            self.netpoll_break();
            if first {
                eprintln!(
                    "gmprt: could not start a worker thread ({e}); continuing with fewer Ms \
                     (said once; RuntimeStats::startm_no_m counts every time)"
                );
            }
        }
    }

    /// Go's `stopm`: park this M until `startm` hands it a P (`Some((p, spinning))`) or the
    /// runtime shuts down (`None`). The M must hold no P.
    ///
    /// With `timer` (a runtime-nanosecond deadline, 0 for none) the M wakes by itself at that
    /// time, takes an idle P if there is one and returns as a spinning M, which then fires the
    /// due timers (Go's idle M blocks in `netpoll(delay)` instead; here one M does so only while
    /// tasks wait on sockets, `netpoll/mod.rs`, and every other idle M parks here with the
    /// earliest deadline it saw). If every P is busy, their Ms fire
    /// timers at their next scheduling round, and this M parks again without a deadline.
    pub(crate) fn stopm(&self, park: &Arc<MPark>, mut timer: u64) -> Option<(Box<Processor>, bool)> {
        {
            let mut s = self.sched.lock();
            // Checked under the lock: shutdown sets the flag, then takes the lock to wake midle.
            if self.is_shutdown() {
                return None;
            }
            // This M parks unless it takes a P below: a deferral's hold on `wakep` ends here,
            // before the last look, which then sees what a `wakep` it held back was for (step 6).
            self.clear_wake_deferred(&mut s);
            // Last look, under the lock: a `startm` that found no idle M (this one was on its
            // way here) and could not start a thread (the thread cap) put its P back on the
            // idle list before we took the lock, so its work is visible now. Without this a
            // just-started M, which reaches here without the idle path's recheck, could sleep
            // on queued work.
            if self.any_work_visible() {
                if let Some(p) = self.pidleget_spinning(&mut s) {
                    return Some((p, true));
                }
            }
            s.midle.push(park.clone());
            self.nmidle.fetch_add(1, SeqCst);
        }
        // This M stopped spinning and gave its P back: if that made the scheduler quiet, a
        // parked `block_on` runs the deadlock check (checkdead.rs).
        self.wake_block_ons_if_dead();
        self.external_stats.parks.bump_shared();
        self.trace_park();
        loop {
            let mut slot = park.slot.lock();
            loop {
                if let Some(p) = slot.p.take() {
                    return Some((p, std::mem::take(&mut slot.spinning)));
                }
                if slot.shutdown {
                    return None;
                }
                if timer == 0 {
                    park.cv.wait(&mut slot);
                    continue;
                }
                let now = self.now_nanos();
                if now >= timer {
                    break;
                }
                wait_for(&park.cv, &mut slot, Duration::from_nanos(timer - now));
            }
            drop(slot);
            // Timed out. Under `sched` (lock order: sched, then slot) either startm already
            // popped us and handed a P, or we are still in midle and leave it ourselves.
            let mut s = self.sched.lock();
            let mut slot = park.slot.lock();
            if let Some(p) = slot.p.take() {
                return Some((p, std::mem::take(&mut slot.spinning)));
            }
            if slot.shutdown {
                return None;
            }
            drop(slot);
            if let Some(p) = self.pidleget(&mut s) {
                if let Some(i) = s.midle.iter().position(|m| Arc::ptr_eq(m, park)) {
                    s.midle.swap_remove(i);
                    self.nmidle.fetch_sub(1, SeqCst);
                }
                // Spinning if the cap allows (to look at every P); either way it fires the due
                // timers of every P before it can go idle again (`run_all_timers`).
                let spinning = self.try_spin(false);
                return Some((p, spinning));
            }
            // Every P is busy: their Ms run due timers themselves. Park without a deadline.
            timer = 0;
        }
    }

    /// Wakes every parked M for shutdown. Called after the shutdown flag is set.
    pub(crate) fn wake_all_for_shutdown(&self) {
        let ms: Vec<_> = {
            let mut s = self.sched.lock();
            self.nmidle.store(0, SeqCst);
            let mut ms = std::mem::take(&mut s.midle);
            self.nsyscall_waiters.fetch_sub(s.syscall_waiters.len(), SeqCst);
            ms.append(&mut s.syscall_waiters);
            ms
        };
        for m in ms {
            let mut slot = m.slot.lock();
            slot.shutdown = true;
            m.cv.notify_one();
        }
    }

    /// True if any queue (global, any P's local queue or runnext) holds a task.
    pub(crate) fn any_work_visible(&self) -> bool {
        self.work_seen().is_some()
    }

    /// The idle path's last look (step 3): where work that an M without a P must go after is
    /// queued, if anywhere: the global queue, a P's queue, or the `runnext` of a P that is not
    /// running (one in a blocking call). A *running* P's `runnext` is not such work: its own M
    /// runs it as soon as its poll returns, and a thief may take it only after a back-off
    /// (`processor.rs`, "Stealing runnext"); counting it made every M that went idle beside a
    /// spawner turn spinner again, past the cap, for a task it was not meant to take. The
    /// status is read before the slot, so a running P's busy `runnext` line is not touched.
    pub(crate) fn work_seen(&self) -> Option<Seen> {
        if !self.injector.is_empty() {
            return Some(Seen::Global);
        }
        let mut runnext = None;
        for (pid, p) in self.allp.iter().enumerate() {
            if !p.stealer.is_empty() {
                return Some(Seen::Queue);
            }
            if runnext.is_none() && p.status.load(SeqCst) != P_RUNNING && !p.runnext.load(Acquire).is_null() {
                runnext = Some(Seen::Runnext { pid });
            }
        }
        runnext
    }

    /// The spinning cap (Go's `2*nmspinning < gomaxprocs-npidle` in `findRunnable`): counts the
    /// calling M as spinning if fewer than half the busy Ps have a spinning M, and returns
    /// whether it did. The caller holds a P, counted busy, or (`taking`) is about to take one
    /// under `sched`. A CAS, so Ms deciding at once cannot all pass the check and overshoot
    /// it, as a load then an add could. Every M that starts spinning passes here except
    /// `wakep`'s first spinner (0 → 1, which the cap always allows: busy ≥ 1 once it has its
    /// P). So no M starts spinning past the cap as the counts read here stand:
    /// `RuntimeStats::spin_over_cap` reads 0 by construction.
    pub(crate) fn try_spin(&self, taking: bool) -> bool {
        let mut n = self.nmspinning.load(SeqCst);
        loop {
            let busy = self.procs().saturating_sub(self.npidle.load(SeqCst)) + usize::from(taking);
            if 2 * n >= busy {
                return false;
            }
            if self.nmspinning.compare_exchange_weak(n, n + 1, SeqCst, SeqCst).is_ok() {
                return true;
            }
            n = self.nmspinning.load(SeqCst);
        }
    }

    /// Step 3's re-arm: under `sched`, takes an idle P for the calling M (which holds none) as
    /// a *spinning* M, if an idle P exists and the spinning cap allows one more spinner with
    /// that P counted busy (`try_spin`). `None` means another M took the idle P, or at least
    /// half the busy Ps already have a spinning M: either way an M that is awake will find the
    /// work (module doc, "Why no wakeup is lost").
    pub(crate) fn pidleget_spinning(&self, s: &mut MutexGuard<'_, Sched>) -> Option<Box<Processor>> {
        // npidle changes only under `sched`, which we hold: the P counted in `try_spin` is there.
        if s.pidle.is_empty() {
            return None;
        }
        if !self.try_spin(true) {
            self.external_stats.rearms_refused.bump_shared();
            return None;
        }
        let p = self.pidleget(s);
        debug_assert!(p.is_some(), "the idle list emptied under the sched lock");
        p
    }
}

/// What the idle path's last look found (`Shared::work_seen`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seen {
    /// The global queue holds a task.
    Global,
    /// Some P's local queue holds a task.
    Queue,
    /// Only a `runnext` slot holds one: P `pid`'s, which was not running.
    Runnext { pid: usize },
    /// A timer is due.
    Timer,
}
