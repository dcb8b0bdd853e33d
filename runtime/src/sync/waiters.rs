//! `WaitList`: the FIFO of parked waiters behind every primitive in `sync`.
//!
//! A slab of slots threaded into a doubly linked list by index: O(1) push at the tail, O(1)
//! look at the head, O(1) unlink from anywhere (a cancelled waiter), no `unsafe`, and no
//! allocation per waiter once the slab has grown to the peak number of waiters.
//!
//! # Ownership rule
//! A slot's key belongs to exactly one future (the waiter that pushed it). The primitive may
//! *unlink* a slot — take it out of the queue order, e.g. to grant it the lock or to notify
//! it — but only the owning future *frees* it (when it completes or is dropped). So a key is
//! never stale while its owner holds it, and the primitive can leave a verdict ("granted",
//! "notified") in the slot for its owner to read.
//!
//! The list itself is not synchronised: each primitive keeps it under its own
//! `crate::loom::sync::Mutex`.

use std::task::{Context, Waker};

/// No slot (end of the list, empty free list).
const NIL: usize = usize::MAX;

/// One slot of the slab.
#[derive(Debug)]
struct Slot<W> {
    /// `Some` while allocated (linked or not), `None` while on the free list.
    val: Option<W>,
    /// Neighbours in the queue order while linked; `next` chains the free list while free.
    prev: usize,
    next: usize,
    /// In the queue order (between `head` and `tail`).
    linked: bool,
}

/// A FIFO of waiters with stable keys (see the module doc).
#[derive(Debug)]
pub(crate) struct WaitList<W> {
    slots: Vec<Slot<W>>,
    free: usize,
    head: usize,
    tail: usize,
    /// Slots in the queue order.
    linked: usize,
    /// Slots allocated (linked or unlinked but not yet freed by their owner).
    allocated: usize,
}

impl<W> WaitList<W> {
    /// An empty list; allocates nothing.
    pub(crate) const fn new() -> Self {
        WaitList { slots: Vec::new(), free: NIL, head: NIL, tail: NIL, linked: 0, allocated: 0 }
    }

    /// True when no waiter is in the queue order (unlinked, unfreed slots do not count).
    pub(crate) fn is_empty(&self) -> bool {
        self.linked == 0
    }

    /// Waiters in the queue order.
    pub(crate) fn len(&self) -> usize {
        self.linked
    }

    /// Appends `val` at the tail and returns its key, owned by the caller until [`free`].
    ///
    /// [`free`]: WaitList::free
    pub(crate) fn push_back(&mut self, val: W) -> usize {
        let key = if self.free != NIL {
            let k = self.free;
            self.free = self.slots[k].next;
            self.slots[k].val = Some(val);
            k
        } else {
            self.slots.push(Slot { val: Some(val), prev: NIL, next: NIL, linked: false });
            self.slots.len() - 1
        };
        self.allocated += 1;
        let slot = &mut self.slots[key];
        slot.prev = self.tail;
        slot.next = NIL;
        slot.linked = true;
        if self.tail == NIL {
            self.head = key;
        } else {
            self.slots[self.tail].next = key;
        }
        self.tail = key;
        self.linked += 1;
        key
    }

    /// The key at the head of the queue order.
    pub(crate) fn front(&self) -> Option<usize> {
        (self.head != NIL).then_some(self.head)
    }

    /// Whether `key` is still in the queue order.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_linked(&self, key: usize) -> bool {
        self.slots[key].linked
    }

    /// The waiter at `key`. Panics if `key` is not allocated (a protocol bug).
    pub(crate) fn get_mut(&mut self, key: usize) -> &mut W {
        self.slots[key].val.as_mut().expect("WaitList: key of a freed slot")
    }

    /// Takes `key` out of the queue order, leaving the slot allocated for its owner. No-op if
    /// it is already unlinked.
    pub(crate) fn unlink(&mut self, key: usize) {
        let (prev, next) = {
            let s = &mut self.slots[key];
            if !s.linked {
                return;
            }
            s.linked = false;
            (std::mem::replace(&mut s.prev, NIL), std::mem::replace(&mut s.next, NIL))
        };
        if prev == NIL {
            self.head = next;
        } else {
            self.slots[prev].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.slots[next].prev = prev;
        }
        self.linked -= 1;
    }

    /// Frees `key` (unlinking it first if needed) and returns its waiter. Only the key's owner
    /// calls this. When the last slot is freed the slab forgets its free list (keeping its
    /// capacity), so keys start from zero again.
    pub(crate) fn free(&mut self, key: usize) -> W {
        self.unlink(key);
        let val = self.slots[key].val.take().expect("WaitList: double free");
        self.allocated -= 1;
        if self.allocated == 0 {
            self.slots.clear();
            self.free = NIL;
        } else {
            self.slots[key].next = self.free;
            self.free = key;
        }
        val
    }
}

/// A waiter of a wake-all primitive (`WaitGroup`, `Once`): its waker and whether it has been
/// notified. Notifying unlinks the slot and sets the flag; the owner frees the slot.
#[derive(Debug)]
pub(crate) struct Parked {
    pub(crate) waker: Option<Waker>,
    pub(crate) notified: bool,
}

impl Parked {
    /// A waiter that will be woken through `cx`.
    pub(crate) fn new(cx: &Context<'_>) -> Self {
        Parked { waker: Some(cx.waker().clone()), notified: false }
    }
}

impl WaitList<Parked> {
    /// Unlinks every waiter, marks it notified and returns the wakers, to be woken once the
    /// caller has released the list's lock.
    pub(crate) fn notify_all(&mut self) -> Vec<Waker> {
        let mut wakers = Vec::with_capacity(self.len());
        while let Some(k) = self.front() {
            self.unlink(k);
            let w = self.get_mut(k);
            w.notified = true;
            wakers.extend(w.waker.take());
        }
        wakers
    }
}

/// Stores `cx`'s waker in `slot` unless the one there would wake the same task.
pub(crate) fn update_waker(slot: &mut Option<Waker>, cx: &Context<'_>) {
    match slot {
        Some(w) if w.will_wake(cx.waker()) => {}
        _ => *slot = Some(cx.waker().clone()),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn order(l: &WaitList<u32>) -> Vec<u32> {
        let mut out = Vec::new();
        let mut k = l.head;
        while k != NIL {
            out.push(*l.slots[k].val.as_ref().unwrap());
            k = l.slots[k].next;
        }
        out
    }

    #[test]
    fn fifo_unlink_free_and_reuse() {
        let mut l = WaitList::new();
        let k: Vec<usize> = (0..5).map(|i| l.push_back(i)).collect();
        assert_eq!(order(&l), [0, 1, 2, 3, 4]);
        l.unlink(k[2]);
        l.unlink(k[2]); // idempotent
        assert!(!l.is_linked(k[2]) && l.is_linked(k[3]));
        assert_eq!(order(&l), [0, 1, 3, 4]);
        assert_eq!(l.free(k[0]), 0); // head
        assert_eq!(l.free(k[4]), 4); // tail
        assert_eq!(order(&l), [1, 3]);
        assert_eq!(l.len(), 2);
        let k5 = l.push_back(5); // reuses a freed slot
        assert!(k5 == k[4] || k5 == k[0]);
        assert_eq!(order(&l), [1, 3, 5]);
        assert_eq!(l.front(), Some(k[1]));
        *l.get_mut(k[1]) = 10;
        assert_eq!(order(&l), [10, 3, 5]);
        for key in [k[1], k[2], k[3], k5] {
            l.free(key);
        }
        assert!(l.is_empty());
        assert_eq!(l.allocated, 0);
        assert_eq!(l.push_back(7), 0, "an empty slab starts its keys from zero");
    }

    #[test]
    fn notify_all_unlinks_and_keeps_slots() {
        let mut l = WaitList::new();
        let cx = Context::from_waker(Waker::noop());
        let a = l.push_back(Parked::new(&cx));
        let b = l.push_back(Parked::new(&cx));
        assert_eq!(l.notify_all().len(), 2);
        assert!(l.is_empty());
        assert!(l.get_mut(a).notified && l.get_mut(b).notified);
        l.free(a);
        l.free(b);
        assert_eq!(l.allocated, 0);
    }
}
