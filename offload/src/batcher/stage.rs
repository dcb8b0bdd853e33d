//! Accepting items without one contended lock: per-P lanes and one admission word (steps 1
//! and 2 of the parent module's protocol).
//!
//! # State
//! * **Lanes**: one per P of the Batcher's runtime, plus one for every other caller (plain
//!   threads, other runtimes' Ms). A lane holds the items accepted on its P since the last
//!   take, and the [`Block`] their result entries go to, under the lane's own mutex. The
//!   submitting P is the only regular locker (a task runs on one P between `.await`s, see
//!   [`gmprt_runtime::procid`]), so the lock is uncontended except against a taking worker.
//! * **The admission word** (`AtomicU64`), the only state every submitter touches:
//!   `open` (bits 0-30) items accepted and not yet taken, `reserved` (bits 31-61) room
//!   promised to woken waiters who have not entered yet, `WAITERS` (bit 62) some submit is
//!   queued for room, `CLOSED` (bit 63) shut down.
//!
//! # Protocol
//! 1. *Accept* (fast path, any thread): lock the caller's lane; CAS the word `open += 1`,
//!    allowed only when `!CLOSED && !WAITERS && open + reserved < max_batch`; push the item
//!    and its entry; unlock. The CAS and the push happen under the same lane lock, so a
//!    worker that takes the lane sees either neither or both.
//! 2. *Enter with a reservation* (a waiter given room): the same under its lane lock, the
//!    CAS moving one unit from `reserved` to `open` (allowed unless `CLOSED`).
//! 3. *Take* (a slot worker): lock every lane (in index order; a submitter holds at most
//!    one), move their items to the batch and take their blocks, subtract the items moved
//!    from `open`, unlock. So `open` equals the items sitting in lanes whenever no lane lock
//!    is held, is 0 right after a take, and never exceeds `max_batch`: memory stays bounded.
//! 4. *Queue for room* (slow path, under `central`): a submit the CAS refuses re-checks under
//!    `central` and either enters or joins `waiters` and sets `WAITERS`. After a take, the
//!    worker (under `central`) pops as many front waiters as there is room, adds them to
//!    `reserved` and clears `WAITERS` when the queue empties. No newcomer overtakes a queued
//!    waiter: the fast path's CAS fails while `WAITERS` is set, and room given to popped
//!    waiters is counted in `reserved` before the bit clears.
//! 5. *Close*: shutdown sets `CLOSED` and clears `reserved` in one CAS; every later CAS of
//!    steps 1-2 fails (`Err(Closed)`: never accepted). A worker exits when `CLOSED` and
//!    `open == 0`: nothing can enter any more, and everything that entered was taken.
//!
//! Who tells an idle worker: the submit whose CAS makes `open` go 0 → 1 (a batch opens: it
//! also stamps `opened`, from which the deadline runs) and the one that makes `open` reach
//! `max_batch` (full). Room reserved for woken waiters does not make a batch full: they are
//! runnable and about to enter it (closing at `open + reserved = max_batch` took batches of
//! one item while thousands of waiters cycled, each first entry closing a "full" batch). Both notify under `central`, where the worker
//! checks the word before it waits, so the notification cannot be lost.
use super::Block;
use crossbeam_utils::CachePadded;
use std::sync::atomic::Ordering::*;
use std::sync::Arc;
#[cfg(loom)]
use {::loom::sync::atomic::AtomicU64, loom_sync::Mutex};
#[cfg(not(loom))]
use {parking_lot::Mutex, std::sync::atomic::AtomicU64};

/// Under `--cfg loom` (the model at the end of this file), the lanes' locks and the word are
/// loom's, so the model explores every interleaving of admission, take and close; a lock
/// with `parking_lot`'s API (no poisoning) over loom's.
#[cfg(loom)]
mod loom_sync {
    pub(crate) struct Mutex<T>(::loom::sync::Mutex<T>);
    impl<T> Mutex<T> {
        pub(crate) fn new(v: T) -> Self {
            Mutex(::loom::sync::Mutex::new(v))
        }
        pub(crate) fn lock(&self) -> ::loom::sync::MutexGuard<'_, T> {
            self.0.lock().expect("a model thread panicked while holding a lane")
        }
    }
}

const OPEN_BITS: u32 = 31;
const OPEN_MASK: u64 = (1 << OPEN_BITS) - 1;
const RESERVED_ONE: u64 = 1 << OPEN_BITS;
const RESERVED_MASK: u64 = ((1 << OPEN_BITS) - 1) << OPEN_BITS;
const WAITERS: u64 = 1 << 62;
const CLOSED: u64 = 1 << 63;

// max_batch (≤ 2²⁴) must fit both counters with room to spare.
const _: () = assert!(super::MAX_BATCH_LIMIT as u64 <= OPEN_MASK);

/// A snapshot of the admission word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Word(u64);

impl Word {
    pub(super) fn open(self) -> usize {
        (self.0 & OPEN_MASK) as usize
    }
    pub(super) fn reserved(self) -> usize {
        ((self.0 & RESERVED_MASK) >> OPEN_BITS) as usize
    }
    pub(super) fn waiters(self) -> bool {
        self.0 & WAITERS != 0
    }
    pub(super) fn closed(self) -> bool {
        self.0 & CLOSED != 0
    }
    /// Whether step 1 admits `n` more items now (open, nobody queued, room left). The one
    /// rule for the CAS in [`Stage::admit`] and for `submit`'s look before it.
    pub(super) fn has_room(self, n: usize, max_batch: usize) -> bool {
        !self.closed() && !self.waiters() && self.open() + self.reserved() + n <= max_batch
    }
}

/// Why an entry was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refused {
    /// Shut down: never accepted.
    Closed,
    /// No room (or waiters ahead): queue for room.
    NoRoom,
}

/// What an accepted entry must do next: notify an idle worker when it opened the batch
/// (`first`) or filled it (`full`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Admitted {
    pub(super) first: bool,
    pub(super) full: bool,
}

/// The admission word and the lanes (see the module docs).
pub(super) struct Stage<I, O> {
    word: CachePadded<AtomicU64>,
    lanes: Box<[LaneCell<I, O>]>,
    max_batch: usize,
}

/// A lane under its lock, on its own cache line (each is written by its own P).
type LaneCell<I, O> = CachePadded<Mutex<Lane<I, O>>>;

/// One P's items since the last take, and the block their entries go to.
pub(super) struct Lane<I, O> {
    pub(super) items: Vec<I>,
    pub(super) block: Option<Arc<Block<O>>>,
}

impl<I, O> Stage<I, O> {
    /// `lanes` lanes (one per P of the runtime, plus one for everyone else), empty.
    pub(super) fn new(lanes: usize, max_batch: usize) -> Self {
        debug_assert!(lanes >= 1 && max_batch >= 1);
        let lanes = (0..lanes)
            .map(|_| CachePadded::new(Mutex::new(Lane { items: Vec::new(), block: None })))
            .collect();
        Stage { word: CachePadded::new(AtomicU64::new(0)), lanes, max_batch }
    }

    /// The admission word now. Acquire: pairs with the Release half of every CAS below, so a
    /// worker that sees `open > 0` and then locks the lanes finds those items.
    pub(super) fn word(&self) -> Word {
        Word(self.word.load(Acquire))
    }

    /// The caller's lane: its P's, or the shared last lane off an M (or for a P id beyond
    /// this Batcher's lanes, from another runtime).
    pub(super) fn lane(&self) -> &Mutex<Lane<I, O>> {
        self.lane_of(gmprt_runtime::procid())
    }

    /// The lane of P `procid` (`None`, or a P beyond this Batcher's lanes: the last one).
    fn lane_of(&self, procid: Option<usize>) -> &Mutex<Lane<I, O>> {
        let last = self.lanes.len() - 1;
        &self.lanes[procid.map_or(last, |p| p.min(last))]
    }

    /// Step 1 (`reserved == false`) or 2 (`true`) for `n` items: the CAS on the word. The
    /// caller holds its lane's lock and pushes the items only on `Ok`.
    pub(super) fn admit(&self, n: usize, reserved: bool) -> Result<Admitted, Refused> {
        debug_assert!(n >= 1 && (!reserved || n == 1));
        let max = self.max_batch;
        // AcqRel: Release publishes nothing by itself (the items are pushed under the lane
        // lock, which the taker takes), but pairs with `word()`'s Acquire so a worker that
        // sees the count also sees the flags set before it.
        let r = self.word.fetch_update(AcqRel, Acquire, |w| {
            let s = Word(w);
            if s.closed() {
                return None;
            }
            if reserved {
                debug_assert!(s.reserved() >= 1, "entering with a reservation that is not counted");
                return Some(w - RESERVED_ONE + 1);
            }
            s.has_room(n, max).then_some(w + n as u64)
        });
        match r {
            Ok(prev) => {
                let (p, now) = (
                    Word(prev),
                    if reserved { Word(prev - RESERVED_ONE + 1) } else { Word(prev + n as u64) },
                );
                Ok(Admitted { first: p.open() == 0, full: now.open() >= max })
            }
            Err(w) if Word(w).closed() => Err(Refused::Closed),
            Err(_) => Err(Refused::NoRoom),
        }
    }

    /// Step 3: moves every lane's items to the end of `items` and their blocks to `blocks`
    /// (with each block's first index in `items`), and takes them off `open` — holding every
    /// lane's lock at once (in index order; a submitter holds at most one), so the take is
    /// atomic with respect to admissions: afterwards `open` is 0 and the next admission is
    /// the next batch's first. A worker only.
    pub(super) fn take(&self, items: &mut Vec<I>, blocks: &mut Vec<(Arc<Block<O>>, usize)>) -> usize {
        let mut lanes: Vec<_> = self.lanes.iter().map(|l| l.lock()).collect();
        let mut moved = 0;
        for l in lanes.iter_mut() {
            if l.items.is_empty() {
                continue;
            }
            let base = items.len();
            moved += l.items.len();
            // `append` moves the elements and keeps the lane's capacity for the next batch.
            items.append(&mut l.items);
            if let Some(b) = l.block.take() {
                blocks.push((b, base));
            }
        }
        if moved > 0 {
            // Under every lane lock: no admission is between its CAS and its push now.
            self.word.fetch_sub(moved as u64, AcqRel);
        }
        debug_assert_eq!(self.word().open(), 0, "a take under every lane lock leaves nothing open");
        moved
    }

    /// Step 4 (worker, under `central`): reserves `k ≤` the free room for popped waiters;
    /// returns how many it could. `clear_waiters` clears `WAITERS` in the same update.
    pub(super) fn reserve(&self, k: usize, clear_waiters: bool) -> usize {
        let max = self.max_batch;
        let mut got = 0;
        let _ = self.word.fetch_update(AcqRel, Acquire, |w| {
            let s = Word(w);
            if s.closed() {
                got = 0;
                return None;
            }
            got = k.min(max.saturating_sub(s.open() + s.reserved()));
            let mut w = w + got as u64 * RESERVED_ONE;
            if clear_waiters && got == k {
                w &= !WAITERS;
            }
            Some(w)
        });
        got
    }

    /// Step 4 (under `central`): some submit is queued for room.
    pub(super) fn set_waiters(&self) {
        self.word.fetch_or(WAITERS, AcqRel);
    }

    /// Step 4 (under `central`): the waiters queue is empty.
    pub(super) fn clear_waiters(&self) {
        self.word.fetch_and(!WAITERS, AcqRel);
    }

    /// A waiter holding a reservation leaves without entering (its future dropped): the room
    /// goes back. Under `central` (the caller may pass it on with `reserve`).
    pub(super) fn unreserve(&self) {
        let _ = self.word.fetch_update(AcqRel, Acquire, |w| {
            let s = Word(w);
            (!s.closed() && s.reserved() > 0).then(|| w - RESERVED_ONE)
        });
    }

    /// Step 5: sets `CLOSED` and drops every reservation. Returns whether this call closed it.
    pub(super) fn close(&self) -> bool {
        let prev = self
            .word
            .fetch_update(AcqRel, Acquire, |w| (w & CLOSED == 0).then_some((w | CLOSED) & !RESERVED_MASK));
        prev.is_ok()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn admission_counts_room_reservations_and_close() {
        let s: Stage<u32, u32> = Stage::new(1, 3);
        assert_eq!(s.admit(1, false), Ok(Admitted { first: true, full: false }));
        assert_eq!(s.admit(2, false), Ok(Admitted { first: false, full: true }));
        assert_eq!(s.admit(1, false), Err(Refused::NoRoom));
        s.set_waiters();
        // Two items taken (as a worker would after moving them): room for 2, one waiter.
        s.word.fetch_sub(2, AcqRel);
        assert_eq!(s.reserve(1, true), 1);
        assert!(!s.word().waiters());
        // A newcomer may use the unreserved room, not the reserved unit; the batch is full
        // only once the reserved item is in too.
        assert_eq!(s.admit(1, false), Ok(Admitted { first: false, full: false }));
        assert_eq!(s.admit(1, false), Err(Refused::NoRoom));
        assert_eq!(s.admit(1, true), Ok(Admitted { first: false, full: true }));
        assert_eq!((s.word().open(), s.word().reserved()), (3, 0));
        assert!(s.close());
        assert!(!s.close());
        assert_eq!(s.admit(1, false), Err(Refused::Closed));
    }
}

/// loom models of steps 1-5: `RUSTFLAGS="--cfg loom" cargo test -p gmprt-offload --lib
/// --release stage::loom` (CI runs them at `LOOM_MAX_PREEMPTIONS=2`). The submitters, the
/// worker and the closer below are the parent module's code paths reduced to the calls on
/// this module (`enter` is lock lane → `admit` → push; a worker's take and its waiter
/// hand-off run under `central`, here a loom mutex).
#[cfg(all(test, loom))]
mod loom {
    use super::*;
    use ::loom::sync::atomic::AtomicBool;
    use ::loom::sync::Mutex as Central;
    use ::loom::thread;
    use std::collections::VecDeque;

    /// Step 1 on lane `lane`: under the lane's lock, admit then push.
    fn enter(s: &Stage<u32, u32>, lane: usize, item: u32, reserved: bool) -> Result<(), Refused> {
        let mut l = s.lane_of(Some(lane)).lock();
        s.admit(1, reserved)?;
        l.items.push(item);
        let w = s.word();
        assert!(
            w.open() + w.reserved() <= s.max_batch,
            "bounded: {} open + {} reserved",
            w.open(),
            w.reserved()
        );
        Ok(())
    }

    /// A worker's loop: takes whatever is open until closed and drained; every batch it takes
    /// holds at most `max_batch` items.
    fn worker(s: &Stage<u32, u32>) -> Vec<u32> {
        let mut taken = Vec::new();
        loop {
            let w = s.word();
            if w.open() > 0 {
                let mut batch = Vec::new();
                let n = s.take(&mut batch, &mut Vec::new());
                assert!(n <= s.max_batch && n == batch.len());
                taken.extend(batch);
            } else if w.closed() {
                return taken;
            } else {
                thread::yield_now();
            }
        }
    }

    /// Two Ps submit (2 items and 1) while a worker takes and the main thread shuts down:
    /// every admitted item is taken exactly once, every refused one never, and nothing is
    /// admitted after the close.
    #[test]
    fn accept_take_close_loses_nothing() {
        ::loom::model(|| {
            let s = Arc::new(Stage::<u32, u32>::new(2, 2));
            let p0 = {
                let s = s.clone();
                thread::spawn(move || [1, 2].map(|i| enter(&s, 0, i, false).is_ok()))
            };
            let p1 = {
                let s = s.clone();
                thread::spawn(move || enter(&s, 1, 3, false).is_ok())
            };
            let w = {
                let s = s.clone();
                thread::spawn(move || worker(&s))
            };
            assert!(s.close());
            // After the close nothing enters.
            assert_eq!(enter(&s, 1, 4, false), Err(Refused::Closed));
            let [a1, a2] = p0.join().unwrap();
            let a3 = p1.join().unwrap();
            let mut taken = w.join().unwrap();
            taken.sort_unstable();
            let admitted: Vec<u32> =
                [(1, a1), (2, a2), (3, a3)].iter().filter(|(_, a)| *a).map(|(i, _)| *i).collect();
            assert_eq!(taken, admitted, "taken exactly the admitted items");
            assert_eq!(s.word().open(), 0);
        });
    }

    /// Backpressure (step 4), `max_batch` 1 and one item open: a submit refused for room
    /// queues under `central`; a newcomer races it; the worker takes the batch and, under
    /// `central`, hands the room to the queued waiter. The waiter, once given room, always
    /// enters (nobody took its reservation), and the room is never exceeded.
    #[test]
    fn a_woken_waiter_always_finds_its_room() {
        ::loom::model(|| {
            let s = Arc::new(Stage::<u32, u32>::new(2, 1));
            enter(&s, 0, 0, false).unwrap();
            // `central`: the queued waiters (here at most one) and whether it was popped.
            let central = Arc::new(Central::new(VecDeque::<u32>::new()));
            let popped = Arc::new(AtomicBool::new(false));
            let waiter = {
                let (s, central, popped) = (s.clone(), central.clone(), popped.clone());
                thread::spawn(move || {
                    if enter(&s, 1, 1, false).is_ok() {
                        return true;
                    }
                    {
                        let mut c = central.lock().unwrap();
                        // Re-check under `central` (the slow path's enter).
                        if enter(&s, 1, 1, false).is_ok() {
                            return true;
                        }
                        c.push_back(1);
                        s.set_waiters();
                    }
                    while !popped.load(Acquire) {
                        thread::yield_now();
                    }
                    enter(&s, 1, 1, true).expect("a popped waiter holds a reservation");
                    true
                })
            };
            let newcomer = {
                let s = s.clone();
                thread::spawn(move || enter(&s, 0, 2, false).is_ok())
            };
            // The worker: takes whatever is open, then (under `central`) hands the room to
            // the queued waiter, until the waiter has entered.
            let mut waiter_in = false;
            while !waiter_in {
                let mut batch = Vec::new();
                s.take(&mut batch, &mut Vec::new());
                waiter_in |= batch.contains(&1);
                let mut c = central.lock().unwrap();
                if !c.is_empty() {
                    let got = s.reserve(c.len(), true);
                    for _ in 0..got {
                        c.pop_front();
                        // Release: pairs with the waiter's Acquire; its reservation is on the
                        // word before it looks.
                        popped.store(true, Release);
                    }
                }
                drop(c);
                if !waiter_in {
                    thread::yield_now();
                }
            }
            assert!(waiter.join().unwrap());
            let _ = newcomer.join().unwrap();
            let w = s.word();
            assert!(w.open() + w.reserved() <= 1);
        });
    }
}
