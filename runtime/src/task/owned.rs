//! The owned-task list: every task that has parked at least once and not yet completed.
//!
//! Shutdown uses it to find parked tasks — those no queue holds, referenced only by wakers
//! stored in some channel or timer — and drop their futures exactly once.
//!
//! Protocol:
//! * `insert` is called by the M polling the task (it holds `RUNNING`) when a poll returns
//!   `Pending` for the first time. The list takes one task reference.
//! * `remove` is called by whoever completes the task (it holds `RUNNING`). It returns whether
//!   the list held a reference, which the caller then releases.
//! * `close_and_drain` is called once, by shutdown, after every M has stopped. It marks every
//!   shard closed (later `insert`s fail, and the caller cancels the task instead) and hands
//!   back the list's references.
//!
//! The `linked` flag is written under the shard lock but read in `remove` without it. That
//! is sound because its writers are `insert` (an earlier `RUNNING` holder, ordered before us by
//! the state word's acquire/release) and `close_and_drain` (the thread that then completes the
//! task itself).
//!
//! Sharding: `shards` locks chosen by task id, so parks and completions on different Ps rarely
//! meet on one lock. 4 shards per P (rounded to a power of two) keeps the chance that two Ps
//! pick the same shard at one moment near 1/(4·procs).

use super::core::Header;
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
        &self.shards[(h.id.0 as usize) & self.mask]
    }

    /// Links a task that just parked. Caller holds `RUNNING`. On success the list owns a new
    /// reference (taken here). `Err` when shutdown has closed the list.
    pub(crate) fn insert(&self, h: &Header) -> Result<(), ()> {
        let mut shard = self.shard(h).lock();
        if shard.closed {
            return Err(());
        }
        h.state.ref_inc();
        let me = NonNull::from(h);
        h.links.with_mut(|l| {
            // SAFETY: links are only touched under this shard's lock (and `linked` by the
            // RUNNING holder, which we are).
            let l = unsafe { &mut *l };
            l.prev = None;
            l.next = shard.head;
            l.linked = true;
        });
        if let Some(old) = shard.head {
            // SAFETY: `old` is in this shard (we hold its lock), so it is alive.
            unsafe { old.as_ref() }.links.with_mut(|l| unsafe { (*l).prev = Some(me) });
        }
        shard.head = Some(me);
        shard.len += 1;
        Ok(())
    }

    /// True if this task is in the list. Caller holds `RUNNING` (see the module doc).
    pub(crate) fn is_linked(&self, h: &Header) -> bool {
        // SAFETY: see the module doc on `linked`.
        h.links.with(|l| unsafe { (*l).linked })
    }

    /// Unlinks a completing task. Returns true when the list held a reference, which the caller
    /// must now release.
    pub(crate) fn remove(&self, h: &Header) -> bool {
        if !self.is_linked(h) {
            return false;
        }
        let mut shard = self.shard(h).lock();
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
            l.linked = false;
        });
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
                cur = unsafe { t.as_ref() }.links.with_mut(|l| unsafe {
                    let next = (*l).next;
                    (*l).prev = None;
                    (*l).next = None;
                    (*l).linked = false;
                    next
                });
                out.push(t);
            }
            shard.len = 0;
        }
        out
    }

    /// Number of parked-at-least-once, not yet completed tasks.
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len).sum()
    }
}
