//! The owned-task list: every task that has parked at least once and not yet completed.
//!
//! Shutdown uses it to find parked tasks — those no queue holds, referenced only by wakers
//! stored in some channel or timer — and drop their futures exactly once.
//!
//! Protocol (membership is the `OWNED` bit of the task's state word; the links and the bit
//! change only under the task's shard lock, so the two always agree there):
//! * `insert` — by the M polling the task (it holds `RUNNING`) when a poll returns `Pending`
//!   and `OWNED` is clear. Sets `OWNED` and takes one task reference for the list.
//! * `remove` — by whoever completes the task (it holds `RUNNING`). A clear `OWNED` bit read
//!   without the lock means "not in the list" (only the `RUNNING` holder could have set it);
//!   a set bit is re-checked under the lock, because shutdown may have drained the task
//!   meanwhile. Returns whether the list's reference passed to the caller.
//! * `close_and_drain` — once, by shutdown: marks every shard closed (later `insert`s fail and
//!   the caller cancels the task instead), unlinks every task, clears `OWNED`, and hands the
//!   list's references back.
//!
//! `remove` and `close_and_drain` can meet on one task when a thread outside the runtime
//! cancels a task it woke after shutdown began (`Shared::inject`); whichever clears `OWNED`
//! under the lock owns the list's reference, so it is released exactly once.
//!
//! Sharding: `shards` locks chosen by task id, so parks and completions on different Ps rarely
//! meet on one lock. 4 shards per P (rounded to a power of two) keeps the chance that two Ps
//! pick the same shard at one moment near 1/(4·procs).

use super::core::Header;
use super::state::OWNED;
use crate::loom::sync::Mutex;
use std::ptr::NonNull;

struct Shard {
    head: Option<NonNull<Header>>,
    closed: bool,
    len: usize,
}

// SAFETY: the raw pointers are only followed under the shard's lock.
unsafe impl Send for Shard {}

/// See the module doc.
pub(crate) struct OwnedTasks {
    shards: Box<[Mutex<Shard>]>,
    mask: usize,
}

impl OwnedTasks {
    /// A list with `4 * procs` shards (power of two).
    pub(crate) fn new(procs: usize) -> Self {
        let n = if crate::loom::LOOM { 1 } else { (4 * procs).next_power_of_two() };
        let shards = (0..n).map(|_| Mutex::new(Shard { head: None, closed: false, len: 0 })).collect();
        OwnedTasks { shards, mask: n - 1 }
    }

    fn shard(&self, h: &Header) -> &Mutex<Shard> {
        &self.shards[(h.id().0 as usize) & self.mask]
    }

    /// Links a task that just parked. Caller holds `RUNNING` and saw `OWNED` clear. On success
    /// the list owns a new reference. `Err` when shutdown has closed the list.
    pub(crate) fn insert(&self, h: &Header) -> Result<(), ()> {
        let mut shard = self.shard(h).lock();
        if shard.closed {
            return Err(());
        }
        h.state.set_owned();
        let me = NonNull::from(h);
        h.links.with_mut(|l| {
            // SAFETY: links are only touched under this shard's lock.
            let l = unsafe { &mut *l };
            l.prev = None;
            l.next = shard.head;
        });
        if let Some(old) = shard.head {
            // SAFETY: `old` is in this shard (we hold its lock), so it is alive.
            unsafe { old.as_ref() }.links.with_mut(|l| unsafe { (*l).prev = Some(me) });
        }
        shard.head = Some(me);
        shard.len += 1;
        Ok(())
    }

    /// True if this task is in the list. Exact for the holder of `RUNNING` when false (see the
    /// module doc); a `true` may be going stale during shutdown.
    pub(crate) fn is_linked(&self, h: &Header) -> bool {
        h.state.load().has(OWNED)
    }

    /// Unlinks a completing task. Returns true when the list's reference passed to the caller,
    /// which must release it.
    pub(crate) fn remove(&self, h: &Header) -> bool {
        if !self.is_linked(h) {
            return false;
        }
        let mut shard = self.shard(h).lock();
        if !self.is_linked(h) {
            // close_and_drain took it first; the reference is shutdown's.
            return false;
        }
        h.links.with_mut(|l| {
            // SAFETY: under the shard lock.
            let l = unsafe { &mut *l };
            match l.prev {
                // SAFETY: neighbours are in this shard, alive while linked.
                Some(p) => unsafe { p.as_ref() }.links.with_mut(|pl| unsafe { (*pl).next = l.next }),
                None => shard.head = l.next,
            }
            if let Some(n) = l.next {
                // SAFETY: as above.
                unsafe { n.as_ref() }.links.with_mut(|nl| unsafe { (*nl).prev = l.prev });
            }
            l.prev = None;
            l.next = None;
        });
        h.state.clear_owned();
        shard.len -= 1;
        true
    }

    /// Closes every shard and returns the tasks it held, each with the list's reference.
    /// Called once by shutdown after all Ms have stopped.
    pub(crate) fn close_and_drain(&self) -> Vec<NonNull<Header>> {
        let mut out = Vec::new();
        for s in self.shards.iter() {
            let mut shard = s.lock();
            shard.closed = true;
            let mut cur = shard.head.take();
            while let Some(t) = cur {
                // SAFETY: in the list, so alive; under the lock.
                let h = unsafe { t.as_ref() };
                cur = h.links.with_mut(|l| {
                    // SAFETY: under the shard lock.
                    let l = unsafe { &mut *l };
                    let next = l.next;
                    l.prev = None;
                    l.next = None;
                    next
                });
                h.state.clear_owned();
                out.push(t);
            }
            shard.len = 0;
        }
        out
    }

    /// Number of parked-at-least-once, not yet completed tasks.
    /// Calls `f` on every linked task, one shard at a time under its lock (`Runtime::dump`,
    /// the deadlock check). `f` must not touch the list (the shard's lock is held).
    pub(crate) fn for_each(&self, mut f: impl FnMut(&Header)) {
        for shard in self.shards.iter() {
            let shard = shard.lock();
            let mut cur = shard.head;
            while let Some(h) = cur {
                // SAFETY: `h` is linked in this shard, whose lock we hold: the list's reference
                // keeps it alive, and its links change only under this lock.
                let h = unsafe { h.as_ref() };
                f(h);
                // SAFETY: as above.
                cur = h.links.with(|l| unsafe { (*l).next });
            }
        }
    }

    /// Whether `f` holds for some listed task; stops at the first (shard by shard, each under
    /// its lock, as [`for_each`](Self::for_each)).
    pub(crate) fn any(&self, mut f: impl FnMut(&Header) -> bool) -> bool {
        let mut found = false;
        for shard in self.shards.iter() {
            let shard = shard.lock();
            let mut cur = shard.head;
            while let Some(h) = cur {
                // SAFETY: `h` is linked in this shard, whose lock we hold: the list's reference
                // keeps it alive, and its links change only under this lock.
                let h = unsafe { h.as_ref() };
                if f(h) {
                    found = true;
                    break;
                }
                // SAFETY: as above.
                cur = h.links.with(|l| unsafe { (*l).next });
            }
            if found {
                break;
            }
        }
        found
    }

    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len).sum()
    }
}
