//! Per-P timer heaps (Go's `p.timers`): a 4-ary min-heap of pointers to timer nodes.
//!
//! # Protocol
//! A [`TimerNode`] lives inside a pinned `Sleep` future (so inside the sleeping task's cell: no
//! allocation per timer). While it is registered, P `p`'s heap holds a pointer to it, and every
//! write to the node — by its owner (`Sleep::poll`, `Sleep::drop`) or by the M that fires it —
//! happens **under that P's heap lock**. The node records its heap index (updated by every
//! sift, under the lock), so the owner can remove it in O(log n) when dropped: a cancelled
//! sleep frees its heap slot at once, never later (Go's pre-1.14 leak of stopped timers, and
//! its later lazy `deletedTimers` clean-up, are not needed).
//!
//! Firing (`run_expired`): under the lock, pop every node whose `when <= now`, set its `fired`
//! flag and clone its waker; after unlocking, wake the clones. A woken task then finds `fired`
//! and completes.
//!
//! One read happens without the lock: the owner's re-poll of a registered, unfired node
//! (`Sleep::poll`'s fast path) loads `fired` and reads the waker slot, and returns `Pending`
//! if the slot's waker wakes the task polling now. This is sound because only the owner ever
//! writes the waker slot (registering, replacing or clearing it, always under the lock); the
//! firing M only reads it, to clone it, so the owner's unlocked read races no write. And it
//! loses no wake-up: a fire that the load does not see clones the waker the owner just compared
//! and wakes it. So a task stolen to another P polls its pending `Sleep` without writing the
//! line of the lock that the registering P's M uses (loom: `tests/loom_time.rs`). The deadline
//! it records as the task's wait reason is the node's `when`, which only the owner writes, at
//! registration: an atomic, so the owner reads it without the lock too.
//!
//! `timer0_when` (in `PShared`) mirrors the heap's earliest deadline (0: empty) so Ms check it
//! with one load and read the clock only when it is due.
//!
//! Why 4-ary: as Go's `siftupTimer`/`siftdownTimer` (since 1.10), a shallower tree than a
//! binary heap — fewer cache lines touched per sift for the large heaps 1M sleepers make.

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed, Ordering::Release};
use std::ptr::NonNull;
use std::task::Waker;

/// Not in a heap.
pub(crate) const NO_INDEX: usize = usize::MAX;

/// A timer's state. Access rules: see the module doc (written under its P's heap lock once
/// registered; the owner's unlocked reads of `fired` and `waker` are the one exception).
pub(crate) struct TimerNode {
    /// Deadline in runtime nanoseconds (`Shared::nanos`), never 0. Written only by the owner,
    /// under the lock, before the node is pushed (the heap copies it into its slot then);
    /// `Relaxed`: the lock orders it for the heap, and the owner reads its own write.
    pub(crate) when: AtomicU64,
    /// The heap's bookkeeping: only under the heap lock.
    pub(crate) inner: UnsafeCell<NodeInner>,
    /// Set by the firing M (`Release`, under the lock); cleared by the owner under the lock
    /// when it unlinks the node.
    pub(crate) fired: AtomicBool,
    /// The owner's waker: written only by the owner, under the lock; read by the firing M under
    /// the lock (to clone it) and by the owner without it (its own write: see the module doc).
    pub(crate) waker: UnsafeCell<Option<Waker>>,
}

pub(crate) struct NodeInner {
    /// Index in the heap, or `NO_INDEX`.
    pub(crate) index: usize,
}

// SAFETY: the node is shared between its owner and the firing M only under the heap lock.
unsafe impl Send for TimerNode {}
// SAFETY: as above.
unsafe impl Sync for TimerNode {}

impl TimerNode {
    pub(crate) fn new(when: u64) -> Self {
        TimerNode {
            when: AtomicU64::new(when),
            inner: UnsafeCell::new(NodeInner { index: NO_INDEX }),
            fired: AtomicBool::new(false),
            waker: UnsafeCell::new(None),
        }
    }
}

/// One P's heap. Lives under a `Mutex` in `PShared`.
#[derive(Default)]
pub(crate) struct TimerHeap {
    /// `(when, node)`: the deadline is copied next to the pointer so sifting compares without
    /// touching the nodes' cache lines.
    slots: Vec<(u64, NonNull<TimerNode>)>,
}

// SAFETY: the pointers are only followed under the lock that guards this heap.
unsafe impl Send for TimerHeap {}

impl TimerHeap {
    /// Earliest deadline, or 0 when empty.
    pub(crate) fn first_when(&self) -> u64 {
        self.slots.first().map_or(0, |s| s.0)
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    fn set_index(&mut self, i: usize) {
        let node = self.slots[i].1;
        // SAFETY: registered nodes are alive (their owner removes them before dropping) and we
        // hold the heap lock (`&mut self`).
        unsafe { node.as_ref() }.inner.with_mut(|n| unsafe { (*n).index = i });
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 4;
            if self.slots[i].0 >= self.slots[parent].0 {
                break;
            }
            self.slots.swap(i, parent);
            self.set_index(i);
            i = parent;
        }
        self.set_index(i);
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.slots.len();
        loop {
            let first = 4 * i + 1;
            if first >= n {
                break;
            }
            let last = (first + 4).min(n);
            let min = (first..last).min_by_key(|&c| self.slots[c].0).expect("non-empty range");
            if self.slots[min].0 >= self.slots[i].0 {
                break;
            }
            self.slots.swap(i, min);
            self.set_index(i);
            i = min;
        }
        self.set_index(i);
    }

    /// Adds a node. Caller holds the lock, and the node is pinned and outlives its registration.
    ///
    /// # Safety
    /// `node` must stay valid until it is removed or fired (its owner's drop removes it).
    pub(crate) unsafe fn push(&mut self, node: NonNull<TimerNode>) {
        // SAFETY: valid per the contract.
        let when = unsafe { node.as_ref() }.when.load(Relaxed);
        self.slots.push((when, node));
        let i = self.slots.len() - 1;
        self.sift_up(i);
    }

    /// Removes the node at `index` (the owner cancelling). Caller holds the lock.
    pub(crate) fn remove(&mut self, index: usize) {
        let last = self.slots.len() - 1;
        let node = self.slots[index].1;
        self.slots.swap(index, last);
        self.slots.pop();
        // SAFETY: the node was registered, so alive; under the lock.
        unsafe { node.as_ref() }.inner.with_mut(|n| unsafe { (*n).index = NO_INDEX });
        if index < self.slots.len() {
            self.sift_up(index);
            let i = self.index_of(self.slots[index].1).unwrap_or(index);
            self.sift_down(i);
        }
        // Release capacity when the heap has shrunk a lot (1M sleepers that all woke).
        if self.slots.capacity() > 64 && self.slots.len() < self.slots.capacity() / 4 {
            self.slots.shrink_to(self.slots.len() * 2);
        }
    }

    fn index_of(&self, node: NonNull<TimerNode>) -> Option<usize> {
        // SAFETY: registered node; under the lock.
        let i = unsafe { node.as_ref() }.inner.with(|n| unsafe { (*n).index });
        (i != NO_INDEX).then_some(i)
    }

    /// Pops every node due at `now`, marks it fired and collects a clone of its waker (the
    /// slot keeps its own: only the owner writes it, see the module doc).
    pub(crate) fn run_expired(&mut self, now: u64, wakers: &mut Vec<Waker>) {
        while let Some(&(when, node)) = self.slots.first() {
            if when > now {
                break;
            }
            self.remove(0);
            // SAFETY: the node was registered, so it is alive until its owner takes it out of
            // the heap under this lock.
            let node = unsafe { node.as_ref() };
            // Release: pairs with the owner's `Acquire` load in `Sleep::poll`'s fast path.
            node.fired.store(true, Release);
            // SAFETY: a read under the lock; the owner writes the slot only under it.
            if let Some(w) = node.waker.with(|w| unsafe { (*w).clone() }) {
                wakers.push(w);
            }
        }
    }
}

/// Test access to a node's fields (single-threaded tests, no heap lock needed).
#[cfg(all(test, not(loom)))]
fn with_node<R>(n: &TimerNode, f: impl FnOnce(&mut NodeInner) -> R) -> R {
    // SAFETY: the tests own every node and use them from one thread.
    n.inner.with_mut(|x| f(unsafe { &mut *x }))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn heap_orders_and_removes_by_index() {
        let nodes: Vec<Box<TimerNode>> =
            [50u64, 10, 40, 30, 20, 60, 5, 70, 15].iter().map(|&w| Box::new(TimerNode::new(w))).collect();
        let mut h = TimerHeap::default();
        for n in &nodes {
            // SAFETY: boxes outlive the heap in this test.
            unsafe { h.push(NonNull::from(&**n)) };
        }
        // Remove the node with deadline 40 by its recorded index.
        let idx = with_node(&nodes[2], |n| n.index);
        h.remove(idx);
        let mut fired = Vec::new();
        let mut order = Vec::new();
        while h.len() > 0 {
            let w = h.first_when();
            order.push(w);
            h.run_expired(w, &mut fired);
        }
        assert_eq!(order, vec![5, 10, 15, 20, 30, 50, 60, 70]);
        for (i, n) in nodes.iter().enumerate() {
            let (fired, index) = (n.fired.load(Relaxed), with_node(n, |n| n.index));
            assert_eq!(fired, i != 2, "node {i}");
            assert_eq!(index, NO_INDEX);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod stress {
    use super::*;

    fn check(h: &TimerHeap) {
        for (i, &(when, node)) in h.slots.iter().enumerate() {
            // SAFETY: boxes outlive the heap.
            let node = unsafe { node.as_ref() };
            let (nw, ni) = (node.when.load(Relaxed), with_node(node, |n| n.index));
            assert_eq!(ni, i, "stale index");
            assert_eq!(nw, when);
            if i > 0 {
                assert!(h.slots[(i - 1) / 4].0 <= when, "heap order");
            }
        }
    }

    #[test]
    fn random_push_remove_fire_keeps_indices() {
        let mut seed = 0x1234_5678_9abc_def1u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let nodes: Vec<Box<TimerNode>> = (0..400).map(|_| Box::new(TimerNode::new(1))).collect();
        let mut h = TimerHeap::default();
        let mut wakers = Vec::new();
        for step in 0..20_000 {
            let k = (rnd() % 400) as usize;
            let n = &nodes[k];
            let idx = with_node(n, |x| x.index);
            match rnd() % 3 {
                0 if idx == NO_INDEX => {
                    let w = rnd() % 1000 + 1;
                    n.when.store(w, Relaxed);
                    // SAFETY: boxes outlive the heap.
                    unsafe { h.push(NonNull::from(&**n)) };
                }
                1 if idx != NO_INDEX => h.remove(idx),
                2 => h.run_expired(rnd() % 300, &mut wakers),
                _ => {}
            }
            check(&h);
            let _ = step;
        }
    }
}
