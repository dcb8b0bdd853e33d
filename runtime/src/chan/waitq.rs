//! A channel's waiting operations: Go's `waitq` of `sudog`s.
//!
//! Go allocates a `sudog` per blocked operation from a per-P cache. Here every channel keeps
//! its own slab of [`Slot`]s (a `Vec` with a free list): a blocked `send`, `recv` or `select`
//! arm takes a slot, links it into the channel's `recvq` or `sendq` (doubly linked through slot
//! indices, so a cancelled waiter unlinks in O(1)), and gives it back when it completes or is
//! dropped. Once the slab has grown to the largest number of operations ever blocked on the
//! channel at once, blocking allocates nothing; it is freed when the channel goes idle after
//! having grown past [`SHRINK_ABOVE`] slots.
//!
//! Only the operation that took a slot frees it (its future, or its `select`): the channel
//! side only unlinks slots and changes their [`Status`]. So a slot index held by a future is
//! always valid, with no generation counter.
//!
//! Everything here runs under the channel's lock. Nothing that can run user code — waking a
//! waker, dropping a waker or a value — happens there: [`Wakes`] carries wakers out of the
//! critical section, and values are returned to the caller.

use super::token::SelToken;
use std::sync::Arc;
use std::task::Waker;

/// "No slot": the end of a list.
pub(crate) const NIL: u32 = u32::MAX;

/// A slab that has grown beyond this many slots is freed when no operation waits any more,
/// so a burst of blocked operations does not pin its memory forever.
pub(crate) const SHRINK_ABOVE: usize = 1024;

/// Where a waiting operation stands. Only the channel side moves a slot out of `Queued`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// Linked in its queue, waiting.
    Queued,
    /// Unlinked by a counterpart that completed the operation: a sender's value was taken, a
    /// receiver was granted one of the buffered values (a *reservation*, see the module doc of
    /// `chan`).
    Done,
    /// Unlinked without completing: the channel was closed, or the slot belonged to a `select`
    /// that another arm already won. A sender's value is still in the slot.
    Unlinked,
}

/// One waiting operation (Go's `sudog`).
pub(crate) struct Slot<T> {
    pub(crate) status: Status,
    /// Woken (outside the lock) when the status leaves `Queued`.
    pub(crate) waker: Option<Waker>,
    /// A waiting sender's value; taken by the receiver that completes it.
    pub(crate) value: Option<T>,
    /// For a `select` arm: the select's token and the arm's index. A counterpart must win the
    /// token (see `SelToken::try_claim`) before it may complete this slot.
    pub(crate) select: Option<(Arc<SelToken>, usize)>,
    prev: u32,
    next: u32,
}

/// A FIFO of slots (Go's `waitq`): head and tail indices into the slab.
#[derive(Debug)]
pub(crate) struct WaitQueue {
    head: u32,
    tail: u32,
}

impl WaitQueue {
    pub(crate) const fn new() -> Self {
        WaitQueue { head: NIL, tail: NIL }
    }

    /// The first slot, or [`NIL`].
    pub(crate) fn head(&self) -> u32 {
        self.head
    }

    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_empty(&self) -> bool {
        self.head == NIL
    }
}

/// The slab of slots.
pub(crate) struct Slots<T> {
    slots: Vec<Slot<T>>,
    /// Head of the free list (linked through `next`).
    free: u32,
    /// Slots in use.
    live: usize,
}

impl<T> Slots<T> {
    pub(crate) const fn new() -> Self {
        Slots { slots: Vec::new(), free: NIL, live: 0 }
    }

    pub(crate) fn get(&self, i: u32) -> &Slot<T> {
        &self.slots[i as usize]
    }

    pub(crate) fn get_mut(&mut self, i: u32) -> &mut Slot<T> {
        &mut self.slots[i as usize]
    }

    /// The slot after `i` in its queue, or [`NIL`].
    pub(crate) fn next(&self, i: u32) -> u32 {
        self.slots[i as usize].next
    }

    /// Takes a free slot, fills it, and links it at the tail of `q` (status `Queued`).
    pub(crate) fn push_back(
        &mut self,
        q: &mut WaitQueue,
        waker: Waker,
        value: Option<T>,
        select: Option<(Arc<SelToken>, usize)>,
    ) -> u32 {
        let slot =
            Slot { status: Status::Queued, waker: Some(waker), value, select, prev: q.tail, next: NIL };
        let i = if self.free != NIL {
            let i = self.free;
            self.free = self.slots[i as usize].next;
            // The free slot is empty (see `release`): overwriting it drops nothing.
            self.slots[i as usize] = slot;
            i
        } else {
            let i = self.slots.len();
            assert!(i < NIL as usize, "more than 2^32 - 1 operations blocked on one channel");
            self.slots.push(slot);
            i as u32
        };
        if q.tail == NIL {
            q.head = i;
        } else {
            self.slots[q.tail as usize].next = i;
        }
        q.tail = i;
        self.live += 1;
        i
    }

    /// Unlinks `i` from `q` (where it must be linked). The status is the caller's to set.
    pub(crate) fn unlink(&mut self, q: &mut WaitQueue, i: u32) {
        let (prev, next) = {
            let s = &mut self.slots[i as usize];
            let links = (s.prev, s.next);
            s.prev = NIL;
            s.next = NIL;
            links
        };
        if prev == NIL {
            debug_assert_eq!(q.head, i);
            q.head = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NIL {
            debug_assert_eq!(q.tail, i);
            q.tail = prev;
        } else {
            self.slots[next as usize].prev = prev;
        }
    }

    /// Frees slot `i` (already unlinked) and hands back what it held, for the caller to drop
    /// or use *outside* the lock.
    pub(crate) fn release(&mut self, i: u32) -> (Option<T>, Option<Waker>) {
        let s = &mut self.slots[i as usize];
        let value = s.value.take();
        let waker = s.waker.take();
        s.select = None;
        s.next = self.free;
        self.free = i;
        self.live -= 1;
        if self.live == 0 && self.slots.len() > SHRINK_ABOVE {
            // Every slot is free (and empty): give the memory back.
            self.slots = Vec::new();
            self.free = NIL;
        }
        (value, waker)
    }

    /// Slots in use.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// Slots allocated, in use or free.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn allocated(&self) -> usize {
        self.slots.len()
    }
}

/// A short list of wakers: the first inline (the common case, one wake per operation), the
/// rest in a `Vec` that allocates only when a second one is pushed (`close`).
#[derive(Default)]
struct WakerList {
    first: Option<Waker>,
    rest: Vec<Waker>,
}

impl WakerList {
    fn push(&mut self, w: Waker) {
        if self.first.is_none() {
            self.first = Some(w);
        } else {
            self.rest.push(w);
        }
    }
}

/// Wakers collected under a channel lock, to be woken (or just dropped) after it is released.
/// Waking outside the lock keeps the woken task from running into the lock its waker still
/// holds, and dropping outside it keeps a last waker reference — which may own a whole task
/// and its futures, channel ends included — from re-entering the channel.
#[derive(Default)]
pub(crate) struct Wakes {
    wake: WakerList,
    discard: WakerList,
}

impl Wakes {
    pub(crate) fn new() -> Self {
        Wakes::default()
    }

    /// Queues `w` to be woken.
    pub(crate) fn wake(&mut self, w: Option<Waker>) {
        if let Some(w) = w {
            self.wake.push(w);
        }
    }

    /// Queues `w` to be dropped without waking.
    pub(crate) fn discard(&mut self, w: Option<Waker>) {
        if let Some(w) = w {
            self.discard.push(w);
        }
    }

    /// Wakes and drops everything collected. Call with no channel lock held.
    pub(crate) fn fire(self) {
        let Wakes { wake, discard } = self;
        drop(discard);
        if let Some(w) = wake.first {
            w.wake();
        }
        for w in wake.rest {
            w.wake();
        }
    }
}
