//! Run queues: crossbeam-deque normally, a loom-visible stand-in under `cfg(loom)`.
//!
//! * `Worker<T>` — a P's local FIFO run queue. Only the M holding the P pushes and pops.
//! * `Stealer<T>` — the handle other Ms steal from (half the queue per steal).
//! * `Injector<T>` — the global run queue (Go's `sched.runq`).
//!
//! loom cannot see inside crossbeam-deque's epoch-based buffers, so the loom build swaps in
//! `Mutex<VecDeque>` queues with the same API subset. The scheduler's own protocols
//! (runnext, spinning, parking) are what the loom models check; the queues are treated as
//! linearizable black boxes, which crossbeam documents and tests on its own.

#[cfg(not(loom))]
pub(crate) use crossbeam_deque::{Injector, Steal, Stealer, Worker};

#[cfg(loom)]
pub(crate) use self::loom_queue::{Injector, Steal, Stealer, Worker};

#[cfg(loom)]
mod loom_queue {
    use crate::loom::sync::{Arc, Mutex};
    use std::collections::VecDeque;

    /// Outcome of a steal, as crossbeam's.
    pub(crate) enum Steal<T> {
        Empty,
        Success(T),
        #[allow(dead_code)]
        Retry,
    }

    impl<T> Steal<T> {
        pub(crate) fn success(self) -> Option<T> {
            match self {
                Steal::Success(t) => Some(t),
                _ => None,
            }
        }
    }

    pub(crate) struct Worker<T>(Arc<Mutex<VecDeque<T>>>);
    pub(crate) struct Stealer<T>(Arc<Mutex<VecDeque<T>>>);
    pub(crate) struct Injector<T>(Mutex<VecDeque<T>>);

    impl<T> Worker<T> {
        pub(crate) fn new_fifo() -> Self {
            Worker(Arc::new(Mutex::new(VecDeque::new())))
        }
        pub(crate) fn stealer(&self) -> Stealer<T> {
            Stealer(self.0.clone())
        }
        pub(crate) fn push(&self, t: T) {
            self.0.lock().push_back(t)
        }
        pub(crate) fn pop(&self) -> Option<T> {
            self.0.lock().pop_front()
        }
        pub(crate) fn len(&self) -> usize {
            self.0.lock().len()
        }
    }

    fn take_batch<T>(src: &mut VecDeque<T>, dest: &Worker<T>, limit: usize) -> Steal<T> {
        let Some(first) = src.pop_front() else { return Steal::Empty };
        let n = (src.len() / 2).min(limit - 1);
        let mut d = dest.0.lock();
        for _ in 0..n {
            d.push_back(src.pop_front().unwrap());
        }
        Steal::Success(first)
    }

    impl<T> Stealer<T> {
        pub(crate) fn steal_batch_with_limit_and_pop(&self, dest: &Worker<T>, limit: usize) -> Steal<T> {
            let mut src = self.0.lock();
            take_batch(&mut src, dest, limit)
        }
        pub(crate) fn is_empty(&self) -> bool {
            self.0.lock().is_empty()
        }
        pub(crate) fn len(&self) -> usize {
            self.0.lock().len()
        }
    }

    impl<T> Injector<T> {
        pub(crate) fn new() -> Self {
            Injector(Mutex::new(VecDeque::new()))
        }
        pub(crate) fn push(&self, t: T) {
            self.0.lock().push_back(t)
        }
        pub(crate) fn steal(&self) -> Steal<T> {
            match self.0.lock().pop_front() {
                Some(t) => Steal::Success(t),
                None => Steal::Empty,
            }
        }
        pub(crate) fn steal_batch_with_limit_and_pop(&self, dest: &Worker<T>, limit: usize) -> Steal<T> {
            let mut src = self.0.lock();
            take_batch(&mut src, dest, limit)
        }
        pub(crate) fn is_empty(&self) -> bool {
            self.0.lock().is_empty()
        }
        pub(crate) fn len(&self) -> usize {
            self.0.lock().len()
        }
    }
}
