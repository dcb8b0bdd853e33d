//! Helpers shared by the integration tests (each test binary includes this module with
//! `mod common;`, so not every binary uses every item).
#![allow(dead_code)]

use gmprt::runtime::{Runtime, RuntimeStats};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Once};

/// Marker in the messages of panics the tests cause on purpose (the panic hook stays quiet).
pub const EXPECTED: &str = "[expected test panic]";

/// A non-string panic payload the tests throw on purpose.
pub struct ExpectedPayload(#[allow(dead_code)] pub u32);

/// Silences the default panic output for the panics tests cause on purpose; everything else
/// still goes to the previous hook.
pub fn quiet_expected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let p = info.payload();
            let expected = p.downcast_ref::<&str>().is_some_and(|s| s.contains(EXPECTED))
                || p.downcast_ref::<String>().is_some_and(|s| s.contains(EXPECTED))
                || p.is::<ExpectedPayload>();
            if !expected {
                prev(info);
            }
        }));
    });
}

pub fn rt(procs: usize) -> Runtime {
    quiet_expected_panics();
    Runtime::builder().procs(procs).build().expect("the runtime starts")
}

/// One counter per task (or per anything), shared between the test and its tasks.
#[derive(Clone)]
pub struct Counters(pub Arc<Vec<AtomicUsize>>);

impl Counters {
    pub fn new(n: usize) -> Self {
        Counters(Arc::new((0..n).map(|_| AtomicUsize::new(0)).collect()))
    }
    pub fn bump(&self, i: usize) {
        self.0[i].fetch_add(1, SeqCst);
    }
    pub fn get(&self, i: usize) -> usize {
        self.0[i].load(SeqCst)
    }
    pub fn sum(&self) -> usize {
        self.0.iter().map(|c| c.load(SeqCst)).sum()
    }
    /// Asserts every counter equals `want`, naming the first that does not.
    #[track_caller]
    pub fn assert_all(&self, want: usize, what: &str) {
        for (i, c) in self.0.iter().enumerate() {
            let got = c.load(SeqCst);
            assert_eq!(got, want, "{what}: counter {i} is {got}, want {want} (of {})", self.0.len());
        }
    }
}

/// Bumps `counters[i]` when dropped: put one inside a future (or an output) to count its drops.
pub struct DropGuard {
    counters: Counters,
    i: usize,
}

impl DropGuard {
    pub fn new(counters: &Counters, i: usize) -> Self {
        DropGuard { counters: counters.clone(), i }
    }
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.counters.bump(self.i);
    }
}

/// Waits on a plain thread until `cond` holds. Used only where the event has no other signal
/// (e.g. `JoinHandle::is_finished`); it spins on the event, not on time.
pub fn wait_until(mut cond: impl FnMut() -> bool) {
    while !cond() {
        std::thread::yield_now();
    }
}

/// Checks the accounting identity of a quiescent runtime.
#[track_caller]
pub fn assert_balanced(st: &RuntimeStats) {
    assert_eq!(st.spawned, st.completed + st.cancelled, "spawned != completed + cancelled: {st:?}");
    assert_eq!(st.live(), 0, "{st:?}");
}

/// Checks the stats of a runtime that has been dropped.
#[track_caller]
pub fn assert_shut_down(st: &RuntimeStats) {
    assert_balanced(st);
    assert_eq!(st.threads, 0, "M threads left after shutdown: {st:?}");
    assert_eq!(st.global_queue_len, 0, "{st:?}");
    assert!(st.local_queue_lens.iter().all(|&n| n == 0), "{st:?}");
    assert_eq!(st.parked_tasks, 0, "{st:?}");
}
