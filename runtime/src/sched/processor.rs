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
//! * `runnext_steal` — *any M*, last resort: `compare_exchange(ptr, null)`.
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
//! on every `newproc` and makes thieves wait ~3 µs before taking a running P's `runnext`
//! instead. The cost of our choice: "spawn exactly one child, then compute without awaiting"
//! runs the child only after the computation — a second spawn (which displaces the first
//! into the stealable queue) or an `.await` lets it run elsewhere.

use super::queue::{Injector, Steal, Stealer, Worker};
use super::stats::PStats;
use super::Shared;
use crate::loom::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, Ordering::*};
use crate::loom::sync::Mutex;
use crate::task::cache::CellCache;
use crate::task::{Header, Notified, TaskId};
use crate::time::TimerHeap;
use std::ptr::{self, NonNull};

/// Consecutive `runnext` runs before the slot yields to the queue. Go bounds the inherited
/// slice by time (10 ms, enforced by sysmon preemption); futures cannot be preempted, so we
/// bound it by count. 16 keeps a ping-pong pair on one P (cache-hot, no cross-core wake) for
/// 16 round trips, then lets queued tasks in: a queued task waits at most 16 short polls.
pub(crate) const RUNNEXT_CHAIN_MAX: u32 = if crate::loom::LOOM { 2 } else { 16 };

/// Go's `schedtick % 61`: a P looks at the global queue first once every 61 ticks, so a P
/// busy with its own tasks cannot starve spawns from outside. 61 is prime, like Go's, so it
/// does not fall into step with periodic workloads.
pub(crate) const GLOBAL_CHECK_TICKS: u32 = 61;

/// Upper bound of one global-queue refill (Go: half the 256-slot local queue).
const GLOBAL_BATCH_MAX: usize = 128;

/// Go's `_GoidCacheBatch`: ids are taken from the global counter 16 at a time per P.
const GOID_BATCH: u64 = 16;

/// The part of a P that other Ms see.
pub(crate) struct PShared {
    pub(crate) stealer: Stealer<Notified>,
    pub(crate) runnext: AtomicPtr<Header>,
    pub(crate) stats: PStats,
    /// This P's timers (`time/heap.rs`). Any M may lock it: the owner to add and fire, others
    /// to fire timers of a P whose M is busy, and a `Sleep`'s owner to cancel.
    pub(crate) timers: Mutex<TimerHeap>,
    /// The heap's earliest deadline in runtime nanoseconds, 0 when empty (Go's `timer0When`):
    /// lets an M skip the lock and the clock when nothing is due. Written under `timers`.
    pub(crate) timer0_when: AtomicU64,
    /// `P_IDLE` / `P_RUNNING` / `P_SYSCALL` (`syscall.rs`), for sysmon.
    pub(crate) status: AtomicU8,
    /// Where the P waits while its M is in a blocking call; the slot's lock decides whether the
    /// M takes it back or sysmon hands it off.
    pub(crate) syscall_slot: Mutex<Option<Box<Processor>>>,
    /// When the current blocking call started (runtime nanoseconds).
    pub(crate) syscall_when: AtomicU64,
    /// Id of the task being polled (0: none), for sysmon's long-poll report.
    pub(crate) curtask: AtomicU64,
    /// That task's spawn site (null: none), for the same report. Always null or a
    /// `&'static Location`, so a read racing the next poll's store is still a valid site.
    pub(crate) cursite: std::sync::atomic::AtomicPtr<std::panic::Location<'static>>,
}

impl PShared {
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
        // SeqCst: an M going idle reads every P's timer0_when after its fence (idle.rs, step 3),
        // and a timer added off an M is followed by `wakep`'s fence: store-buffering as for
        // queued tasks, so a new deadline is seen by the idle M or the idle M is woken.
        self.timer0_when.store(when, SeqCst);
    }

    /// Any M, last resort of stealing: takes this P's `runnext` task.
    pub(crate) fn runnext_steal(&self) -> Option<Notified> {
        let cur = self.runnext.load(Acquire);
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
}

impl Processor {
    pub(crate) fn new(id: usize, task_cache: bool) -> (Processor, PShared) {
        let runq = Worker::new_fifo();
        let shared = PShared {
            stealer: runq.stealer(),
            runnext: AtomicPtr::new(ptr::null_mut()),
            stats: PStats::default(),
            timers: Mutex::new(TimerHeap::default()),
            timer0_when: AtomicU64::new(0),
            status: AtomicU8::new(0),
            syscall_slot: Mutex::new(None),
            syscall_when: AtomicU64::new(0),
            curtask: AtomicU64::new(0),
            cursite: std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()),
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
    /// work was added (a displaced `runnext` or a queue push), i.e. when a `wakep` may help.
    pub(crate) fn runqput(&mut self, shared: &Shared, task: Notified, next: bool) -> bool {
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
                    true
                }
            }
        } else {
            self.runq.push(task);
            true
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
    /// order (random start, coprime stride); each visit takes half the victim's queue; the last
    /// round also takes a victim's `runnext`.
    pub(crate) fn steal_work(&mut self, shared: &Shared) -> Option<Notified> {
        // Go's stealTries: a few rounds, because a victim's queue may refill while we look.
        // Under loom 2 (one plain round, one that also takes runnext): more rounds add states,
        // not behaviours the protocol depends on.
        const STEAL_TRIES: usize = if crate::loom::LOOM { 2 } else { 4 };
        let n = shared.procs();
        if n == 1 {
            return None;
        }
        let mystats = &shared.allp[self.id].stats;
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
                mystats.steal_attempts.bump();
                let had = self.runq.len();
                loop {
                    match vp.stealer.steal_batch_with_limit_and_pop(&self.runq, usize::MAX) {
                        Steal::Success(t) => {
                            mystats.steals.bump();
                            // The returned task plus what the batch put in our queue.
                            mystats.stolen.add(1 + self.runq.len().saturating_sub(had) as u64);
                            shared.trace_steal(self.id, victim);
                            return Some(t);
                        }
                        Steal::Empty => break,
                        Steal::Retry => continue,
                    }
                }
                if last {
                    if let Some(t) = vp.runnext_steal() {
                        mystats.steals.bump();
                        mystats.stolen.bump();
                        mystats.runnext_steals.bump();
                        // Taken from a running P with no back-off at all.
                        if vp.status.load(Relaxed) == super::syscall::P_RUNNING {
                            mystats.runnext_steals_early.bump();
                        }
                        shared.trace_steal(self.id, victim);
                        return Some(t);
                    }
                }
            }
        }
        None
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
