//! P — the processor: a local FIFO run queue, a `runnext` slot and per-P counters.
//!
//! A P is split in two. [`Processor`] is owned by exactly one M at a time (or sits in the idle
//! list): it holds the `Worker` end of the local queue, the scheduler tick and the id cache.
//! [`PShared`] lives in `Shared::allp` and is what other Ms touch: the `Stealer`, the `runnext`
//! slot and the counters.
//!
//! # runnext
//! `runnext` holds at most one task pointer (a `Notified` reference, stored raw).
//! * `runqput(next = true)` — *owner only*: `swap` the new task in; a task it displaces goes to
//!   the tail of the local queue.
//! * `runqget` — *owner only*: `swap(null)` takes it.
//! * `runnext_steal` — *any M*, last resort: `compare_exchange(ptr, null)` of a pointer it saw
//!   earlier (see "Stealing runnext").
//!
//! Every taker uses one atomic read-modify-write that leaves null behind, so exactly one of
//! them obtains a given pointer: the task is run once. The swap that installs a task is
//! `AcqRel`/`Release` so the task's header writes are visible to the M that takes it, which
//! uses `Acquire`. A recycled address is harmless: a successful CAS means the slot held that
//! value, i.e. that reference, at that moment.
//!
//! The task taken from `runnext` inherits the current time slice (Go's `inheritTime`): the
//! scheduler tick is not advanced. To keep two tasks that wake each other from starving the
//! queue, after `RUNNEXT_CHAIN_MAX` consecutive `runnext` runs the slot's task is moved to the
//! tail of the queue and the head runs instead.
//!
//! A task placed in an *empty* `runnext` does not `wakep` (see `idle.rs`): the current M runs
//! it as soon as the current poll returns, and waking a second M to steal it would only move
//! a cache-hot task across cores (tokio's LIFO slot makes the same choice). Go calls `wakep`
//! on every `newproc` and makes thieves wait before taking a running P's `runnext` (below).
//! The cost of our choice: "spawn exactly one child, then compute without awaiting" runs the
//! child only after the computation — a second spawn (which displaces the first into the
//! stealable queue) or an `.await` lets it run elsewhere, and sysmon wakes a spinner for a
//! poll that holds queued work past a round (`sysmon.rs`).
//!
//! # Stealing runnext
//! A running P's `runnext` is the task its M will run next, within nanoseconds when the
//! current task is about to block or return. Taking it at once (as this runtime did before
//! issue 25) moves that task across cores, and on 16 cores it made stealing a one-task trade:
//! each thief took the spawner's latest child the moment it appeared, paying a CAS on the
//! spawner's line, a `wakep` and a fresh scan per task (15.5 visits and 0.76 steals per task
//! for 1M spawns at 16 Ps). So, as Go's `runqgrab`, a thief takes a *running* P's `runnext`
//! only after a back-off ([`RUNNEXT_BACKOFF`]):
//! 1. the last round of `steal_work` records each running victim whose `runnext` holds a task,
//!    with the task's pointer, instead of taking it; a victim in a blocking call (`P_SYSCALL`)
//!    gives its `runnext` at once, an idle P has none;
//! 2. if that round found nothing else, the thief backs off **once** for all of them, then
//!    visits each recorded victim's queue again (meanwhile the owner's next spawns have
//!    displaced tasks into it: half of them go in one steal) and only then CASes the recorded
//!    pointer out of its `runnext` — a CAS that fails if the owner has run that task.
//!
//! Why this keeps the idle protocol's guarantees (`idle.rs`): the thief is a spinning M for
//! the whole back-off, so it counts in `nmspinning`, holds its P and is awake in the sense of
//! the proof sketch — after a bounded wait it either takes work (then `resetspinning` and
//! `wakep`) or goes through the idle path's fence and last look. A task in a running P's
//! `runnext` is never stranded: its own M runs it when the current poll returns, and a poll
//! that runs long with work queued behind it gets a spinner from sysmon, which takes the task
//! after one back-off. `runnext_steals_early` in `RuntimeStats` counts steals of a running
//! P's `runnext` not preceded by a back-off since the task was seen (0 by design), and
//! `tests/loom_runnext.rs` checks the pass against an owner that runs, displaces or keeps it.

use super::queue::{Injector, Steal, Stealer, Worker};
use super::stats::PStats;
use super::syscall::{P_IDLE, P_RUNNING, P_SYSCALL};
use super::Shared;
use crate::loom::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, Ordering::*};
use crate::loom::sync::Mutex;
use crate::task::cache::CellCache;
use crate::task::{Header, Notified, TaskId};
use crate::time::TimerHeap;
use crossbeam_utils::CachePadded;
use std::ptr::{self, NonNull};

/// Consecutive `runnext` runs before the slot yields to the queue. Go bounds the inherited
/// slice by time (10 ms, enforced by sysmon preemption); futures cannot be preempted, so we
/// bound it by count. 16 keeps a ping-pong pair on one P (cache-hot, no cross-core wake) for
/// 16 round trips, then lets queued tasks in: a queued task waits at most 16 short polls.
pub(crate) const RUNNEXT_CHAIN_MAX: u32 = if crate::loom::LOOM { 2 } else { 16 };

/// How long a thief waits before taking a *running* P's `runnext` (Go's `runqgrab`:
/// `usleep(3)`): see "Stealing runnext" in the module doc. Go's reasoning for 3 µs: a task that
/// readies another and then blocks lets its own P run the readied one within ~50 ns (a channel
/// hand-off), so 3 µs is ~50× that. Like Go's `usleep`, `thread::sleep` is a `nanosleep`, which
/// Linux stretches by the thread's timer slack (50 µs by default): measured on the 2-core VM,
/// a 3 µs sleep lasts 71-85 µs (p10-p99, 2,000 sleeps). That is the back-off Go really does
/// there, and the one measured on 16 cores (issue 25's experiment B).
#[cfg_attr(loom, allow(dead_code))] // under loom the back-off is a yield
pub(crate) const RUNNEXT_BACKOFF: std::time::Duration = std::time::Duration::from_micros(3);

/// The back-off itself; under loom a yield (a point where the owner may run), since loom
/// models no time.
fn runnext_backoff() {
    #[cfg(not(loom))]
    std::thread::sleep(RUNNEXT_BACKOFF);
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// Go's `schedtick % 61`: a P looks at the global queue first once every 61 ticks, so a P
/// busy with its own tasks cannot starve spawns from outside. 61 is prime, like Go's, so it
/// does not fall into step with periodic workloads.
pub(crate) const GLOBAL_CHECK_TICKS: u32 = 61;

/// Upper bound of one global-queue refill (Go: half the 256-slot local queue).
const GLOBAL_BATCH_MAX: usize = 128;

/// Most tasks one steal takes (it takes half the victim's queue up to this). 32 keeps the
/// thief's own queue inside crossbeam's smallest buffer (64 slots; the thief's queue is empty
/// when it steals), so a steal never makes it grow, and popping never makes it shrink back.
/// Unbounded batches did both after every back-off, and each resize frees the old buffer
/// through the epoch collector on whatever thread collects: a `free` into another thread's
/// malloc arena, whose lock the spawner's next `malloc` of a task cell then waited on (`perf`
/// on the 2-core VM, 1M spawns at 2 Ps: 4% of samples in that lock's futex wake; with the
/// bound 1.2%, and 2 Ps went from 288 to 263 ns per task in the same run). Go takes half of
/// its 256-slot ring, at most 128; crossbeam's own `steal_batch` takes at most 32.
const STEAL_BATCH_MAX: usize = 32;

/// Go's `_GoidCacheBatch`: ids are taken from the global counter 16 at a time per P.
const GOID_BATCH: u64 = 16;

/// The part of a P that other Ms see.
///
/// Laid out by who writes what (`repr(C)` keeps the order; `Shared::allp` pads each P to its
/// own lines): first what every thief and every idle M's last look reads and almost nobody
/// writes; then `runnext`, which the owner writes on every spawn and wake, on a line of its
/// own; then the counters and the rest, which the owner writes on every poll. Before this
/// split a thief's look at `stealer` or `status` shared a line with the owner's per-poll
/// counter writes, so every idle round cost the busy P a cache miss.
#[repr(C)]
pub(crate) struct PShared {
    // Read by thieves and idle Ms on every look; written only when the P changes hands.
    pub(crate) stealer: Stealer<Notified>,
    /// `P_IDLE` / `P_RUNNING` / `P_SYSCALL` (`syscall.rs`): for sysmon, for a thief deciding
    /// whether to back off before taking `runnext`, and for the idle path's last look.
    pub(crate) status: AtomicU8,
    /// The heap's earliest deadline in runtime nanoseconds, 0 when empty (Go's `timer0When`):
    /// lets an M skip the lock and the clock when nothing is due. Written under `timers`.
    pub(crate) timer0_when: AtomicU64,
    // Written by the owner on every spawn and wake.
    pub(crate) runnext: CachePadded<AtomicPtr<Header>>,
    // Written by the owner on every poll.
    pub(crate) stats: CachePadded<PStats>,
    /// This P's timers (`time/heap.rs`). Any M may lock it: the owner to add and fire, others
    /// to fire timers of a P whose M is busy, and a `Sleep`'s owner to cancel.
    pub(crate) timers: Mutex<TimerHeap>,
    /// Where the P waits while its M is in a blocking call; the slot's lock decides whether the
    /// M takes it back or sysmon hands it off.
    pub(crate) syscall_slot: Mutex<Option<Box<Processor>>>,
    /// When the current blocking call started (runtime nanoseconds).
    pub(crate) syscall_when: AtomicU64,
    /// The `Header::ident` (id and spawn site) of the task being polled (0: none), for
    /// sysmon's long-poll report and `trace::current_task`; decode with [`PShared::current`].
    pub(crate) curtask: AtomicU64,
}

impl PShared {
    /// The id and spawn-site index of the task this P is polling, if any. Any thread (racy by
    /// nature: a reader may see the previous or the next poll's task).
    pub(crate) fn current(&self) -> Option<(crate::task::TaskId, u16)> {
        let ident = self.curtask.load(Relaxed);
        (ident != 0).then(|| crate::task::core::split_ident(ident))
    }

    /// Tasks waiting on this P (queue + runnext), for stats and schedtrace. Racy by nature.
    pub(crate) fn queued(&self) -> usize {
        self.stealer.len() + usize::from(!self.runnext.load(Relaxed).is_null())
    }

    /// True if this P has queued work (used by the idle path's recheck).
    pub(crate) fn has_work(&self) -> bool {
        !self.stealer.is_empty() || !self.runnext.load(Acquire).is_null()
    }

    /// Mirrors the heap's earliest deadline; call with `timers` held.
    pub(crate) fn set_timer0(&self, when: u64) {
        // Relaxed: every store is made under `timers`, which the caller holds, so this reads
        // the last one. An unchanged deadline is not stored again: nothing new to publish,
        // and a timer armed and cancelled behind the earliest (hyper's header timer, per
        // request) then leaves alone this line, which every idle M's look reads.
        if self.timer0_when.load(Relaxed) == when {
            return;
        }
        // SeqCst: an M going idle reads every P's timer0_when after its fence (idle.rs, step 3),
        // and a timer added off an M is followed by `wakep`'s fence: store-buffering as for
        // queued tasks, so a new deadline is seen by the idle M or the idle M is woken.
        self.timer0_when.store(when, SeqCst);
    }

    /// Any M, last resort of stealing: takes `cur`, seen in this P's `runnext` earlier, if the
    /// slot still holds it (Go's `runnext.cas(next, 0)`).
    pub(crate) fn runnext_steal(&self, cur: *mut Header) -> Option<Notified> {
        if cur.is_null() {
            return None;
        }
        // Acquire pairs with the owner's AcqRel swap that installed `cur`.
        match self.runnext.compare_exchange(cur, ptr::null_mut(), Acquire, Relaxed) {
            // SAFETY: we removed the pointer from the slot, so its queue reference is ours.
            Ok(p) => Some(unsafe { Notified::from_raw(NonNull::new_unchecked(p)) }),
            Err(_) => None,
        }
    }
}

/// The part of a P owned by the M holding it.
pub(crate) struct Processor {
    pub(crate) id: usize,
    pub(crate) runq: Worker<Notified>,
    /// Incremented for every task run that did not inherit a time slice.
    pub(crate) schedtick: u32,
    /// Consecutive runs taken from `runnext`.
    runnext_chain: u32,
    pub(crate) rng: FastRand,
    /// Free task cells (Go's `p.gFree`), see `task/cache.rs`.
    pub(crate) cache: CellCache,
    goid_next: u64,
    goid_end: u64,
    /// Task references to this runtime, for the tasks spawned here (see `taskrefs.rs`).
    pub(crate) refs: super::taskrefs::RefReserve,
    /// Back-offs this P's Ms have done before taking a running P's `runnext` (`steal_work`).
    backoffs: u64,
    /// The current steal pass's running victims with a task in `runnext`: (victim, the task's
    /// address, `backoffs` when seen). Reused between passes (no allocation once grown).
    runnext_seen: Vec<(usize, usize, u64)>,
}

impl Processor {
    pub(crate) fn new(id: usize, task_cache: bool) -> (Processor, PShared) {
        let runq = Worker::new_fifo();
        let shared = PShared {
            stealer: runq.stealer(),
            runnext: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
            stats: CachePadded::new(PStats::default()),
            timers: Mutex::new(TimerHeap::default()),
            timer0_when: AtomicU64::new(0),
            status: AtomicU8::new(0),
            syscall_slot: Mutex::new(None),
            syscall_when: AtomicU64::new(0),
            curtask: AtomicU64::new(0),
        };
        let p = Processor {
            id,
            runq,
            schedtick: 0,
            runnext_chain: 0,
            rng: FastRand::new(0x9E37_79B9_7F4A_7C15 ^ (id as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9)),
            cache: CellCache::new(task_cache),
            goid_next: 0,
            goid_end: 0,
            refs: super::taskrefs::RefReserve::new(),
            backoffs: 0,
            runnext_seen: Vec::new(),
        };
        (p, shared)
    }

    /// Owner only. Next task id from this P's cache, refilled from `shared` in batches.
    pub(crate) fn next_goid(&mut self, shared: &Shared) -> TaskId {
        if self.goid_next == self.goid_end {
            self.goid_next = shared.idgen.fetch_add(GOID_BATCH, Relaxed);
            self.goid_end = self.goid_next + GOID_BATCH;
        }
        let id = self.goid_next;
        self.goid_next += 1;
        TaskId(id)
    }

    /// Owner only. Queues `task`; with `next` it goes to `runnext`. Returns true when stealable
    /// work was added (a displaced `runnext` or a queue push) and another P exists to steal it,
    /// i.e. when a `wakep` may help. With one P there is none: while its owner runs, no P is
    /// idle, so `wakep` would pay its fence to read `npidle == 0` on every spawn.
    pub(crate) fn runqput(&mut self, shared: &Shared, task: Notified, next: bool) -> bool {
        let others = shared.procs() > 1;
        if next {
            shared.trace_runnext(self.id, task.id());
            let slot = &shared.allp[self.id].runnext;
            // Only the owner makes the slot non-null, and thieves only take a non-null value,
            // so an empty slot stays empty until we fill it: a plain release store suffices
            // (no locked RMW on the ping-pong path). Release publishes the task to its taker.
            if slot.load(Relaxed).is_null() {
                slot.store(task.into_raw().as_ptr(), Release);
                return false;
            }
            // AcqRel: release publishes the task to whoever takes it; acquire takes ownership
            // of the displaced one (which a thief may have taken meanwhile: then `old` is null).
            let old = slot.swap(task.into_raw().as_ptr(), AcqRel);
            match NonNull::new(old) {
                None => false,
                Some(old) => {
                    // SAFETY: the displaced pointer carried a queue reference, now ours.
                    self.runq.push(unsafe { Notified::from_raw(old) });
                    others
                }
            }
        } else {
            self.runq.push(task);
            others
        }
    }

    /// Owner only. Takes the next local task: `runnext` first (inheriting the time slice)
    /// unless the chain bound is hit, then the queue head. Returns `(task, inherit_time)`.
    pub(crate) fn runqget(&mut self, shared: &Shared) -> Option<(Notified, bool)> {
        let slot = &shared.allp[self.id].runnext;
        // A plain load first: an empty slot (queue-driven workloads) costs no locked RMW.
        if slot.load(Relaxed).is_null() {
            self.runnext_chain = 0;
            return self.runq.pop().map(|t| (t, false));
        }
        if self.runnext_chain < RUNNEXT_CHAIN_MAX {
            // Acquire pairs with the release of the swap that installed it.
            if let Some(t) = NonNull::new(slot.swap(ptr::null_mut(), Acquire)) {
                self.runnext_chain += 1;
                // SAFETY: taken out of the slot: the queue reference is ours.
                return Some((unsafe { Notified::from_raw(t) }, true));
            }
        } else if let Some(t) = NonNull::new(slot.swap(ptr::null_mut(), Acquire)) {
            // Chain bound hit: the runnext task goes behind the queued ones.
            // SAFETY: as above.
            self.runq.push(unsafe { Notified::from_raw(t) });
        }
        self.runnext_chain = 0;
        self.runq.pop().map(|t| (t, false))
    }

    /// Refills from the global queue (Go's `globrunqget`): takes `len/procs + 1` tasks (at most
    /// `GLOBAL_BATCH_MAX`) into the local queue and returns one.
    pub(crate) fn globrunqget(&mut self, shared: &Shared) -> Option<Notified> {
        let inj: &Injector<Notified> = &shared.injector;
        if inj.is_empty() {
            return None;
        }
        let n = (inj.len() / shared.procs() + 1).min(GLOBAL_BATCH_MAX);
        loop {
            match inj.steal_batch_with_limit_and_pop(&self.runq, n) {
                Steal::Success(t) => {
                    shared.allp[self.id].stats.global_takes.bump();
                    return Some(t);
                }
                Steal::Empty => return None,
                Steal::Retry => continue,
            }
        }
    }

    /// One task from the global queue (the 1-in-61 fairness check).
    pub(crate) fn globrunqget_one(&mut self, shared: &Shared) -> Option<Notified> {
        loop {
            match shared.injector.steal() {
                Steal::Success(t) => {
                    shared.allp[self.id].stats.global_takes.bump();
                    return Some(t);
                }
                Steal::Empty => return None,
                Steal::Retry => continue,
            }
        }
    }

    /// Steals work from other Ps (Go's `stealWork`): 4 rounds over the victims in a random
    /// order (random start, coprime stride), skipping idle Ps (Go's `idlepMask`); each visit
    /// (a steal attempt) takes half the victim's queue (at most `STEAL_BATCH_MAX`); the last
    /// round also looks at each victim's `runnext`. A running P's `runnext` is taken only after
    /// one back-off for the whole pass (see "Stealing runnext" in the module doc).
    pub(crate) fn steal_work(&mut self, shared: &Shared) -> Option<Notified> {
        // Go's stealTries: a few rounds, because a victim's queue may refill while we look.
        // Under loom 1: the last round does all an earlier one does (the idle skip, the queue)
        // and then looks at runnext, so more rounds add states (each read a step the models
        // explore), not behaviours the protocol depends on: a queue that refills after the
        // pass is found by the idle path's last look. Two rounds, with the idle skip's read,
        // made loom_netpoll's longest model 909 s (it was ~400).
        const STEAL_TRIES: usize = if crate::loom::LOOM { 1 } else { 4 };
        let n = shared.procs();
        if n == 1 {
            return None;
        }
        let mystats = &shared.allp[self.id].stats;
        self.runnext_seen.clear();
        for round in 0..STEAL_TRIES {
            let last = round == STEAL_TRIES - 1;
            for victim in shared.order.iter(self.rng.next()) {
                if victim == self.id {
                    continue;
                }
                if shared.is_shutdown() {
                    return None;
                }
                let vp = &shared.allp[victim];
                // Go's `idlepMask`: an idle P's queue and `runnext` are empty (its M emptied both
                // before giving it up, and only a P's owner fills them), so a visit would only
                // read its deque's indices, which share a line with what its owner writes on
                // every spawn once it runs again. `status` sits on the read-mostly line (see
                // `PShared`). Relaxed: a stale answer only skips or makes one visit; a P that
                // shows IDLE while it holds work is between Ms (a hand-off, or the moment before
                // a blocking call marks it SYSCALL), and the M it goes to runs that work. The idle
                // path's last look (`any_work_visible`) does not skip, so no wake-up is lost.
                let status = vp.status.load(Relaxed);
                if status == P_IDLE {
                    continue;
                }
                if let Some(t) = self.steal_queue(shared, victim) {
                    return Some(t);
                }
                if !last {
                    continue;
                }
                // The status read above (one read per visit: each atomic access is a step every
                // loom model of a steal pass explores). It only chooses whether to wait; the
                // CAS below decides. A status that changed since (a blocking call begun or
                // ended) is the race any read of it has: it changes only whether this pass
                // backs off before its CAS.
                match status {
                    // Its M runs that task as soon as its poll returns: wait first (below).
                    P_RUNNING => {
                        let cur = vp.runnext.load(Relaxed);
                        if !cur.is_null() {
                            self.runnext_seen.push((victim, cur as usize, self.backoffs));
                        }
                    }
                    // In a blocking call: nobody will run it soon, take it now (Go only waits
                    // for a running P).
                    P_SYSCALL => {
                        let cur = vp.runnext.load(Acquire);
                        if let Some(t) = self.runnext_take(shared, victim, cur, None) {
                            return Some(t);
                        }
                    }
                    // An idle P's runnext is empty: its M emptied it before giving the P up,
                    // and only a P's owner fills it.
                    _ => {}
                }
            }
        }
        if self.runnext_seen.is_empty() {
            return None;
        }
        // One back-off for every running P seen; then their queues (the owner's next spawn
        // displaces its runnext task into the queue, where half of what built up meanwhile can
        // be taken at once), then the tasks seen, if still there.
        runnext_backoff();
        self.backoffs += 1;
        mystats.runnext_backoffs.bump();
        for i in 0..self.runnext_seen.len() {
            let (victim, cur, seen_at) = self.runnext_seen[i];
            if shared.is_shutdown() {
                return None;
            }
            if let Some(t) = self.steal_queue(shared, victim) {
                return Some(t);
            }
            if let Some(t) = self.runnext_take(shared, victim, cur as *mut Header, Some(seen_at)) {
                return Some(t);
            }
        }
        None
    }

    /// Owner only (the thief's P). One visit to `victim`'s queue: takes half of it into ours
    /// and returns one task.
    fn steal_queue(&mut self, shared: &Shared, victim: usize) -> Option<Notified> {
        debug_assert_ne!(victim, self.id, "a P steals from itself");
        let mystats = &shared.allp[self.id].stats;
        let vp = &shared.allp[victim];
        mystats.steal_attempts.bump();
        // Two index loads first: crossbeam's steal pins the epoch before it looks, and most
        // visits find an empty queue (an idle P's, or one just emptied by another thief).
        if vp.stealer.is_empty() {
            return None;
        }
        let had = self.runq.len();
        loop {
            match vp.stealer.steal_batch_with_limit_and_pop(&self.runq, STEAL_BATCH_MAX) {
                Steal::Success(t) => {
                    mystats.steals.bump();
                    // The returned task plus what the batch put in our queue.
                    mystats.stolen.add(1 + self.runq.len().saturating_sub(had) as u64);
                    shared.trace_steal(self.id, victim);
                    return Some(t);
                }
                Steal::Empty => return None,
                Steal::Retry => continue,
            }
        }
    }

    /// Owner only (the thief's P). Takes `cur` out of `victim`'s `runnext` if it is still
    /// there. `seen_at`: for a victim that was running when `cur` was seen, how many back-offs
    /// this P had done then (`runnext_seen`); one must have come between.
    fn runnext_take(
        &self,
        shared: &Shared,
        victim: usize,
        cur: *mut Header,
        seen_at: Option<u64>,
    ) -> Option<Notified> {
        let t = shared.allp[victim].runnext_steal(cur)?;
        let mystats = &shared.allp[self.id].stats;
        mystats.steals.bump();
        mystats.stolen.bump();
        mystats.runnext_steals.bump();
        // The rule checked where it is applied: seen before this P's latest back-off.
        if seen_at.is_some_and(|at| at >= self.backoffs) {
            mystats.runnext_steals_early.bump();
        }
        shared.trace_steal(self.id, victim);
        Some(t)
    }

    /// Shutdown: hands back every task queued on this P.
    pub(crate) fn drain(&mut self, shared: &Shared) -> Vec<Notified> {
        let mut out = Vec::new();
        if let Some(t) = NonNull::new(shared.allp[self.id].runnext.swap(ptr::null_mut(), Acquire)) {
            // SAFETY: taken from the slot.
            out.push(unsafe { Notified::from_raw(t) });
        }
        while let Some(t) = self.runq.pop() {
            out.push(t);
        }
        out
    }
}

/// xorshift64*: a tiny per-P generator for victim order (quality needs are modest).
#[derive(Debug, Clone)]
pub(crate) struct FastRand(u64);

impl FastRand {
    pub(crate) fn new(seed: u64) -> Self {
        FastRand(seed | 1)
    }
    pub(crate) fn next(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }
}

/// Go's `randomOrder`: visits 0..n starting anywhere with a stride coprime to n, so every P is
/// visited exactly once per round in an order that differs between thieves.
pub(crate) struct RandomOrder {
    count: usize,
    coprimes: Vec<usize>,
}

impl RandomOrder {
    pub(crate) fn new(count: usize) -> Self {
        fn gcd(a: usize, b: usize) -> usize {
            if b == 0 {
                a
            } else {
                gcd(b, a % b)
            }
        }
        let coprimes = (1..=count).filter(|&i| gcd(i, count) == 1).collect();
        RandomOrder { count, coprimes }
    }

    /// The visiting order for one round, from a random number.
    pub(crate) fn iter(&self, r: u32) -> impl Iterator<Item = usize> + '_ {
        let r = r as usize;
        let start = r % self.count;
        let stride = self.coprimes[r % self.coprimes.len()];
        (0..self.count).map(move |i| (start + i * stride) % self.count)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::RandomOrder;

    #[test]
    fn random_order_visits_every_p_once() {
        for n in 1..=12 {
            let o = RandomOrder::new(n);
            for r in 0..200u32 {
                let mut seen: Vec<usize> = o.iter(r.wrapping_mul(2654435761)).collect();
                seen.sort_unstable();
                assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n={n} r={r}");
            }
        }
    }
}
