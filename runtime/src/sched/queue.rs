//! Run queues: crossbeam-deque normally, a loom-visible stand-in under `cfg(loom)`.
//!
//! * `Worker<T>` — a P's local FIFO run queue. Only the M holding the P pushes and pops.
//! * `Stealer<T>` — the handle other Ms steal from (half the queue per steal).
//! * `Injector<T>` — the global run queue (Go's `sched.runq`).
//!
//! loom cannot see inside crossbeam-deque's epoch-based buffers, so the loom build swaps in
//! `Mutex<VecDeque>` queues with the same API subset: the queues are treated as linearizable
//! black boxes, which crossbeam documents and tests on its own. The scheduler's own protocols
//! (runnext, spinning, parking) are what the loom models check, and those read the queues
//! without taking anything: `is_empty`/`len`. A locked `is_empty` would synchronise with every
//! push and make the idle protocol's `fence(SeqCst)` pairs unobservable, so the stand-in keeps
//! crossbeam's front/back (head/tail) indices as loom atomics with crossbeam's orderings and
//! answers `is_empty`/`len` from them, without the lock, as crossbeam does.

#[cfg(not(loom))]
pub(crate) use crossbeam_deque::{Injector, Steal, Stealer, Worker};

#[cfg(loom)]
pub(crate) use self::loom_queue::{Injector, Steal, Stealer, Worker};

#[cfg(loom)]
mod loom_queue {
    use crate::loom::sync::atomic::{fence, AtomicUsize, Ordering::*};
    use crate::loom::sync::Mutex;
    use std::collections::VecDeque;
    // std's Arc is enough: it only shares the queue; what loom must see is inside.
    use std::sync::Arc;

    /// Outcome of a steal, as crossbeam's.
    pub(crate) enum Steal<T> {
        Empty,
        Success(T),
        #[allow(dead_code)]
        Retry,
    }

    impl<T> Steal<T> {
        #[allow(dead_code)] // crossbeam API parity
        pub(crate) fn success(self) -> Option<T> {
            match self {
                Steal::Success(t) => Some(t),
                _ => None,
            }
        }
    }

    /// A local queue: the items under a lock, plus crossbeam's `front`/`back` indices. Indices
    /// change only under the lock, after the items do, so no taker can get ahead of them.
    struct Local<T> {
        q: Mutex<VecDeque<T>>,
        front: AtomicUsize,
        back: AtomicUsize,
    }

    impl<T> Local<T> {
        /// Takes from the front (owner pop or steal): crossbeam advances `front` with SeqCst.
        fn take(&self, q: &mut VecDeque<T>) -> Option<T> {
            let t = q.pop_front()?;
            self.front.fetch_add(1, SeqCst);
            Some(t)
        }

        /// crossbeam's `Stealer::is_empty`/`len`: front (Acquire), SeqCst fence, back (Acquire).
        fn len(&self) -> usize {
            let f = self.front.load(Acquire);
            fence(SeqCst);
            let b = self.back.load(Acquire);
            b.saturating_sub(f)
        }
    }

    pub(crate) struct Worker<T>(Arc<Local<T>>);
    pub(crate) struct Stealer<T>(Arc<Local<T>>);

    impl<T> Worker<T> {
        pub(crate) fn new_fifo() -> Self {
            Worker(Arc::new(Local {
                q: Mutex::new(VecDeque::new()),
                front: AtomicUsize::new(0),
                back: AtomicUsize::new(0),
            }))
        }
        pub(crate) fn stealer(&self) -> Stealer<T> {
            Stealer(self.0.clone())
        }
        /// crossbeam's `Worker::push`: write the slot, `fence(Release)`, store `back` Relaxed.
        pub(crate) fn push(&self, t: T) {
            let mut q = self.0.q.lock();
            q.push_back(t);
            let b = self.0.back.load(Relaxed);
            fence(Release);
            self.0.back.store(b + 1, Relaxed);
        }
        pub(crate) fn pop(&self) -> Option<T> {
            let mut q = self.0.q.lock();
            self.0.take(&mut q)
        }
        #[allow(dead_code)] // crossbeam API parity
        pub(crate) fn len(&self) -> usize {
            self.0.len()
        }
        /// crossbeam's `Worker::is_empty`: back Relaxed (only the owner writes it), front SeqCst.
        pub(crate) fn is_empty(&self) -> bool {
            let b = self.0.back.load(Relaxed);
            let f = self.0.front.load(SeqCst);
            b <= f
        }
    }

    impl<T> Stealer<T> {
        pub(crate) fn steal_batch_with_limit_and_pop(&self, dest: &Worker<T>, limit: usize) -> Steal<T> {
            let mut src = self.0.q.lock();
            let Some(first) = self.0.take(&mut src) else { return Steal::Empty };
            let n = (src.len() / 2).min(limit - 1);
            let batch: Vec<T> = (0..n).map(|_| self.0.take(&mut src).unwrap()).collect();
            drop(src); // no nested locks; the batch is in transit, as in crossbeam
            batch.into_iter().for_each(|t| dest.push(t));
            Steal::Success(first)
        }
        pub(crate) fn is_empty(&self) -> bool {
            self.0.len() == 0
        }
        pub(crate) fn len(&self) -> usize {
            self.0.len()
        }
    }

    /// The global queue: the items under a lock, plus crossbeam's `head`/`tail` indices (all
    /// SeqCst in crossbeam's `Injector`), changed under the lock after the items.
    pub(crate) struct Injector<T> {
        q: Mutex<VecDeque<T>>,
        head: AtomicUsize,
        tail: AtomicUsize,
    }

    impl<T> Injector<T> {
        pub(crate) fn new() -> Self {
            Injector { q: Mutex::new(VecDeque::new()), head: AtomicUsize::new(0), tail: AtomicUsize::new(0) }
        }
        pub(crate) fn push(&self, t: T) {
            let mut q = self.q.lock();
            q.push_back(t);
            self.tail.fetch_add(1, SeqCst);
        }
        fn take(&self, q: &mut VecDeque<T>) -> Option<T> {
            let t = q.pop_front()?;
            self.head.fetch_add(1, SeqCst);
            Some(t)
        }
        pub(crate) fn steal(&self) -> Steal<T> {
            let mut q = self.q.lock();
            match self.take(&mut q) {
                Some(t) => Steal::Success(t),
                None => Steal::Empty,
            }
        }
        pub(crate) fn steal_batch_with_limit_and_pop(&self, dest: &Worker<T>, limit: usize) -> Steal<T> {
            let mut src = self.q.lock();
            let Some(first) = self.take(&mut src) else { return Steal::Empty };
            let n = (src.len() / 2).min(limit - 1);
            let batch: Vec<T> = (0..n).map(|_| self.take(&mut src).unwrap()).collect();
            drop(src);
            batch.into_iter().for_each(|t| dest.push(t));
            Steal::Success(first)
        }
        /// crossbeam's `Injector::is_empty`: head then tail, both SeqCst.
        pub(crate) fn is_empty(&self) -> bool {
            let h = self.head.load(SeqCst);
            let t = self.tail.load(SeqCst);
            t <= h
        }
        pub(crate) fn len(&self) -> usize {
            let h = self.head.load(SeqCst);
            let t = self.tail.load(SeqCst);
            t.saturating_sub(h)
        }
    }
}
