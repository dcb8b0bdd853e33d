//! The netpoller: network readiness inside the G/M/P, Go's `netpoll.go` and its use in
//! `findRunnable`, `sysmon` and `checkdead`.
//!
//! A task that reads a socket with no data does not block its M: the operation returns
//! `WouldBlock`, the task parks on the descriptor's [`desc::PollDesc`], and the M
//! runs other tasks. Readiness comes back through the Ms themselves — there is no I/O thread:
//!
//! | Go                                   | here                                                |
//! |--------------------------------------|-----------------------------------------------------|
//! | `netpollinit` (first use)            | [`Shared::netpoll_init`] (first registration)       |
//! | `netpollopen` / `netpollclose`       | `Registration::new` / its `Drop` (`registration.rs`) |
//! | `netpoll(delay)` → `gList`           | [`Shared::netpoll`] → a list of wakers              |
//! | `injectglist(&list)`                 | [`crate::injectglist`]: one round of wakes          |
//! | `netpollBreak`                       | [`Shared::netpoll_break`]                           |
//! | `netpollWaiters`                     | `Shared::nwaiters`                                  |
//! | `sched.lastpoll` (0: an M is blocked)| `Shared::lastpoll`                                  |
//!
//! # Where Ms poll (`sched/worker.rs`, `sched/sysmon.rs`)
//! 1. **Non-blocking, in `findRunnable`, once every 61 ticks** (tokio's `event_interval`),
//!    before the queues: if some task waits on a descriptor and no M is blocked in `netpoll`
//!    (`lastpoll != 0`), poll without blocking; the woken tasks go to the tail of this M's P,
//!    in event order. Not when the queues are empty: see "Steal before polling".
//! 2. **Blocking, on the idle path**: an M that found nothing, released its P and rechecked
//!    (the park protocol of `sched/idle.rs`, step 3) blocks in `netpoll` instead of `stopm` if
//!    a task waits on a descriptor and it wins `lastpoll.swap(0) != 0` — so at most one M
//!    blocks there — with the earliest timer as its timeout. Back, it stores `lastpoll = now`,
//!    takes an idle P if there is one and queues the tasks it woke there (with none, it runs
//!    as a spinning M: a timer fell due), else leaves the tasks in the global queue for the
//!    busy Ps (`injectglist`) and parks. Taking the P first saves a hand-off: injecting first
//!    would start another M for the tasks while this one went back to sleep.
//! 3. **sysmon**: when no M has polled for 10 ms (`lastpoll` older than that), sysmon polls
//!    without blocking and injects what it finds: a busy P that never empties its queues
//!    would otherwise starve the network.
//! 4. **A waiter off an M** (a `block_on` future, a foreign thread): it holds no P and no M
//!    will run `findRunnable` for it, so after counting itself in `nwaiters` it calls `wakep`
//!    unless an M is blocked in `netpoll` already (`lastpoll == 0`).
//!
//! # Steal before polling
//! Go's `findRunnable` also polls without blocking once the local and global queues are empty,
//! before stealing. Here an M with empty queues steals first and reads the network only on the
//! idle path (step 2), as tokio's workers do (steal, then park on the driver). Order of
//! arrival is the reason: a task queued on another P became runnable before any event still in
//! the kernel. An M that polls first serves those newer events while the older tasks wait for
//! their own P's M, and when the OS deschedules that M (its core is shared with the load, or
//! with other processes) they wait out a whole OS time slice. That was the tail of `benches/net`'s
//! HTTP run on 2 cores: p99 6.1-6.8 ms with the early poll against tokio's 4.2 ms, 4.2-4.8 ms
//! without it, at the same throughput (`benches/results/net-2core-issue25-steal-first.txt`).
//! Correctness does not depend on it: the early poll was an optimisation, and the proof below
//! rests on the idle path and sysmon. The cost is a P released and taken back around the
//! blocking poll when events are already pending (two `sched` lock round trips).
//!
//! # `netpollBreak`
//! The M blocked in `netpoll` holds no P and is in no idle list; it is woken by an event, its
//! timeout, or [`Shared::netpoll_break`]. Breaks are needed: at shutdown (the M must exit), and
//! when `startm` starts no thread for an idle P (`sched/idle.rs`, step 5: the Ms outside
//! blocking calls already number `procs`; or the thread cap): the M in `netpoll` is then the one
//! that can run the work, as a tokio worker parked on its driver is. An M that claims `netpoll`
//! looks at the queues and the idle list once more after its claim, in case the break was read
//! by a poll that ran before it (`sched/worker.rs`). Timers need none here: unlike Go, every idle M parks
//! with the earliest deadline it saw (`stopm(timer)`), so a timer added while one M waits in
//! `netpoll` with a later timeout is still served on time by another.
//!
//! # Why no wake-up is lost (extending `sched/idle.rs`)
//! The proof there covers tasks in queues. A task parked on a descriptor is woken by the
//! netpoller, so it needs: whenever `nwaiters > 0`, some M either is blocked in `netpoll`,
//! will poll (it holds a P and will reach `findRunnable`, or is on the idle path before its
//! check), or sysmon runs (some P is busy). (a) An M on the idle path reads `nwaiters` after
//! its `SeqCst` fence, the fence of the park protocol; a waiter counts itself (`SeqCst`)
//! before its M goes to `findRunnable` (task on an M) or before its `wakep` (off an M), whose
//! fence pairs with that idle-path fence in the store-buffering pattern: either the idle M
//! sees the waiter and polls, or the waiter's `wakep` sees the idle P and starts an M, to
//! which (a) applies again. (b) `lastpoll == 0` means an M is inside `netpoll` or between
//! its swap and the wait; the descriptor was registered with the kernel before the task
//! parked, so the kernel queues the event for that wait; and a blocked M that returns runs
//! the idle path (or its P's `findRunnable`) again before it can park, rereading `nwaiters`.
//! (c) Readiness against the parking task itself is `desc.rs`'s protocol. The loom models in
//! `tests/loom_netpoll.rs` race readiness, a spawn from outside and the last spinning M.

pub(crate) mod desc;
pub(crate) mod registration;
pub(crate) mod sys;

use crate::loom::sync::atomic::Ordering::SeqCst;
use crate::loom::sync::Mutex;
use crate::sched::Shared;
use desc::PollDesc;
use std::io;
use std::sync::{Arc, OnceLock};
use std::task::Waker;
use std::time::Duration;

/// Go's `sysmon` rule: poll the network if no M has for this long (10 ms in `proc.go`).
pub(crate) const SYSMON_POLL_NS: u64 = 10_000_000;

/// The registered descriptors, by key: a slab with a generation per slot, so an event for a
/// descriptor removed (and its slot reused) since the kernel queued it finds a stale key and
/// is dropped instead of waking the new owner.
#[derive(Default)]
struct Descs {
    slots: Vec<(u32, Option<Arc<PollDesc>>)>,
    free: Vec<u32>,
    live: usize,
}

impl Descs {
    fn key(idx: u32, gen: u32) -> usize {
        ((gen as usize) << 32) | idx as usize
    }

    fn insert(&mut self, d: Arc<PollDesc>) -> usize {
        self.live += 1;
        if let Some(idx) = self.free.pop() {
            let slot = &mut self.slots[idx as usize];
            slot.0 = slot.0.wrapping_add(1);
            slot.1 = Some(d);
            return Self::key(idx, slot.0);
        }
        let idx = u32::try_from(self.slots.len()).expect("fewer than 2^32 descriptors");
        self.slots.push((0, Some(d)));
        Self::key(idx, 0)
    }

    fn get(&self, key: usize) -> Option<&Arc<PollDesc>> {
        let (idx, gen) = ((key & 0xffff_ffff) as u32, (key >> 32) as u32);
        match self.slots.get(idx as usize) {
            Some((g, Some(d))) if *g == gen => Some(d),
            _ => None,
        }
    }

    fn remove(&mut self, key: usize) -> Option<Arc<PollDesc>> {
        let idx = (key & 0xffff_ffff) as u32;
        self.get(key)?;
        self.live -= 1;
        self.free.push(idx);
        self.slots[idx as usize].1.take()
    }
}

/// One runtime's poller and its registered descriptors (Go's `netpollinit` state).
pub(crate) struct NetPoll {
    pub(crate) poller: sys::Poller,
    descs: Mutex<Descs>,
}

impl NetPoll {
    /// Adds `desc` to the table, returning its key (registered with the kernel by the caller).
    pub(crate) fn insert(&self, desc: Arc<PollDesc>) -> usize {
        self.descs.lock().insert(desc)
    }

    /// Removes `key` from the table (after the kernel's registration is deleted).
    pub(crate) fn remove(&self, key: usize) -> Option<Arc<PollDesc>> {
        self.descs.lock().remove(key)
    }

    /// Descriptors registered now.
    pub(crate) fn live(&self) -> usize {
        self.descs.lock().live
    }
}

/// The netpoller's fields of `Shared`.
#[derive(Default)]
pub(crate) struct NetPollState {
    /// Created by the first registration (`netpoll_init`).
    pub(crate) poll: OnceLock<NetPoll>,
    /// Go's `netpollWaiters`: wakers parked on registered descriptors (one per task and
    /// direction it waits on). Written by every wait on a socket, so on its own line.
    pub(crate) nwaiters: crossbeam_utils::CachePadded<crate::loom::sync::atomic::AtomicUsize>,
    /// Go's `sched.lastpoll`: runtime nanoseconds of the last poll (at least 1), or 0 while
    /// an M is blocked in `netpoll`. Written by every poll, so on its own line.
    pub(crate) lastpoll: crossbeam_utils::CachePadded<crate::loom::sync::atomic::AtomicU64>,
}

impl NetPollState {
    pub(crate) fn new() -> NetPollState {
        let s = NetPollState::default();
        s.lastpoll.store(1, SeqCst);
        s
    }
}

impl Shared {
    /// Go's `netpollGenericInit`: the poller, created on first use.
    pub(crate) fn netpoll_init(&self) -> io::Result<&NetPoll> {
        if let Some(np) = self.net.poll.get() {
            return Ok(np);
        }
        let np = NetPoll { poller: sys::Poller::new()?, descs: Mutex::new(Descs::default()) };
        // A racing first registration may have set it; theirs is kept and ours dropped.
        let _ = self.net.poll.set(np);
        Ok(self.net.poll.get().expect("set above"))
    }

    /// Go's `netpollAnyWaiters`.
    #[inline]
    pub(crate) fn netpoll_any_waiters(&self) -> bool {
        self.net.nwaiters.load(SeqCst) > 0
    }

    /// Go's `netpoll(delay)`: waits up to `delay` (`None`: until an event or a break; zero:
    /// not at all) and returns the wakers of the tasks whose descriptors became ready. Empty
    /// without waiting if another thread is polling. Any thread may call it.
    pub(crate) fn netpoll(&self, delay: Option<Duration>) -> Vec<Waker> {
        let Some(np) = self.net.poll.get() else { return Vec::new() };
        let mut evs = Vec::new();
        // Shutdown's break may have been used up by a non-blocking poll: read the flag once we
        // are the waiting thread (sys.rs).
        let blocking = delay != Some(Duration::ZERO);
        if let Err(e) = np.poller.wait(&mut evs, delay, || blocking && self.is_shutdown()) {
            // EINTR returns no events (sys.rs); anything else (EBADF on the epoll fd) would
            // repeat on every call, so say it once per call site and carry on: the tasks stay
            // parked, and a runtime with a broken poller cannot do network I/O at all.
            eprintln!("gmprt: netpoll failed: {e}");
            return Vec::new();
        }
        if evs.is_empty() {
            return Vec::new();
        }
        let mut wakers = Vec::with_capacity(evs.len());
        {
            let descs = np.descs.lock();
            for ev in evs {
                if let Some(d) = descs.get(ev.key) {
                    d.set_ready(ev, &mut wakers);
                }
            }
        }
        self.netpoll_uncount(&wakers);
        wakers
    }

    /// Takes wakers a `PollDesc` handed out (`set_ready`, `close`, `take_waiters`) out of
    /// `nwaiters`: each was counted when its task parked (`PollDesc::poll_ready`).
    fn netpoll_uncount(&self, wakers: &[Waker]) {
        if !wakers.is_empty() {
            self.net.nwaiters.fetch_sub(wakers.len(), SeqCst);
        }
    }

    /// `netpoll_uncount`, then wakes them (a close or a moved deadline, off the poll path).
    pub(crate) fn netpoll_wake(&self, wakers: Vec<Waker>) {
        self.netpoll_uncount(&wakers);
        for w in wakers {
            w.wake();
        }
    }

    /// Go's `netpollBreak`: wakes the M blocked in `netpoll`, or makes the next blocking poll
    /// return at once. Any thread may call it; cheap when the poller was never used.
    pub(crate) fn netpoll_break(&self) {
        if let Some(np) = self.net.poll.get() {
            if let Err(e) = np.poller.notify() {
                eprintln!("gmprt: netpollBreak failed: {e}");
            }
        }
    }

    /// Step 1 of the module doc, from `findRunnable` every 61 ticks: a non-blocking poll when
    /// tasks wait on descriptors and no M is blocked in `netpoll`; the woken tasks are queued
    /// on the caller's P. The caller is an M holding a P.
    pub(crate) fn netpoll_nonblocking(&self) {
        debug_assert!(self.current_pid().is_some(), "netpoll_nonblocking off an M holding a P");
        let last = self.net.lastpoll.load(SeqCst);
        if !self.netpoll_any_waiters() || last == 0 {
            return;
        }
        let ws = self.netpoll(Some(Duration::ZERO));
        // A poll, so sysmon's "no M has polled for 10 ms" stays false while Ms poll this way
        // (unlike Go, which counts only blocking polls: under load its sysmon polls every
        // 10 ms and, finding events, stays at its 20 µs period). A failed exchange means an M
        // blocked in netpoll meanwhile (0) or another poll stored a time: both fine.
        let _ = self.net.lastpoll.compare_exchange(last, self.now_nanos().max(1), SeqCst, SeqCst);
        if !ws.is_empty() {
            self.netpoll_ready_here(ws);
        }
    }

    /// Queues the tasks a poll woke on the calling M's P, in order, at the tail of its queue
    /// (Go's `injectglist` with a P, `runqput` for the rest): they run on this P unless the
    /// ordinary `wakep` of a stealable push brings a spinner to take some. The caller is an M
    /// holding a P of this runtime, not borrowed.
    pub(crate) fn netpoll_ready_here(&self, ws: Vec<Waker>) {
        debug_assert!(self.current_pid().is_some(), "netpoll_ready_here off an M holding a P");
        // To the tail, in event order: a batch through `runnext` would run the last first and
        // push every earlier one back.
        crate::sched::context::wake_all_to_tail(ws);
    }

    /// Step 2 of the module doc, for an M on the idle path that holds no P: true if it should
    /// block in `netpoll` (a task waits on a descriptor and no other M is blocked there); it
    /// then owns `lastpoll` (it swapped it to 0) and must call [`Shared::netpoll_blocked`].
    pub(crate) fn netpoll_claim(&self) -> bool {
        // SeqCst: read after the idle path's fence (module doc, (a)).
        self.netpoll_any_waiters() && self.net.lastpoll.swap(0, SeqCst) != 0
    }

    /// Gives back a claim taken by [`Shared::netpoll_claim`] without polling: the claimer saw
    /// work and an idle P on its look after the claim (`sched/worker.rs`) and runs instead.
    pub(crate) fn netpoll_unclaim(&self) {
        // SeqCst, as the store after a blocking poll: the next idle M or sysmon may poll.
        self.net.lastpoll.store(self.now_nanos().max(1), SeqCst);
    }

    /// Step 2: blocks in `netpoll` until an event, a break, or `until` (runtime nanoseconds,
    /// 0: none), then gives `lastpoll` back. Returns the woken tasks' wakers.
    pub(crate) fn netpoll_blocked(&self, until: u64) -> Vec<Waker> {
        let delay = (until != 0).then(|| Duration::from_nanos(until.saturating_sub(self.now_nanos())));
        self.external_stats.netpoll_blocks.bump_shared();
        let ws = self.netpoll(delay);
        self.net.lastpoll.store(self.now_nanos().max(1), SeqCst);
        ws
    }

    /// Step 3, for sysmon: polls if no M has for [`SYSMON_POLL_NS`]; true if it woke tasks.
    #[cfg_attr(loom, allow(dead_code))] // sysmon does not run under loom
    pub(crate) fn sysmon_netpoll(&self) -> bool {
        let last = self.net.lastpoll.load(SeqCst);
        let now = self.now_nanos().max(1);
        if !self.netpoll_any_waiters() || last == 0 || now.saturating_sub(last) < SYSMON_POLL_NS {
            return false;
        }
        // Only one poller updates it: losing the exchange means another M or sysmon polled.
        if self.net.lastpoll.compare_exchange(last, now, SeqCst, SeqCst).is_err() {
            return false;
        }
        let ws = self.netpoll(Some(Duration::ZERO));
        if ws.is_empty() {
            return false;
        }
        self.external_stats.netpoll_sysmon.bump_shared();
        crate::injectglist(ws);
        true
    }

    /// Step 4: a waiter off an M counted itself; make sure some M will poll for it.
    pub(crate) fn netpoll_waiter_off_m(&self) {
        // SeqCst: after the waiter's increment of `nwaiters` (module doc, (a)).
        if self.net.lastpoll.load(SeqCst) != 0 {
            self.wakep(crate::sched::idle::WakeFrom::Other);
        }
    }

    /// Shutdown's last step: closes every descriptor still registered (their polls fail from
    /// now on) and wakes what waits on them — waiters off the runtime: its tasks were
    /// cancelled already. (The M blocked in `netpoll` was broken at shutdown's start.)
    pub(crate) fn netpoll_shutdown(&self) {
        let Some(np) = self.net.poll.get() else { return };
        let mut wakers = Vec::new();
        {
            let descs = np.descs.lock();
            for d in descs.slots.iter().filter_map(|(_, d)| d.as_ref()) {
                d.close(&mut wakers);
            }
        }
        self.netpoll_wake(wakers);
    }
}
