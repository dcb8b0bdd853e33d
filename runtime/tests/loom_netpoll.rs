//! loom models of the netpoller inside the scheduler (`netpoll/mod.rs`, `netpoll/desc.rs`, the
//! idle path of `sched/worker.rs`), run through the real `Runtime`: M threads are loom threads
//! running the real `m_main`; the OS poller is `netpoll/sys.rs`'s loom stand-in, and the model
//! plays the kernel ([`FakeFd::make_ready`]: data arrives, the poller reports the edge).
//!
//! What must hold in every interleaving: a task (or `block_on`) parked on a descriptor runs
//! again after the descriptor becomes ready — whether the readiness races its parking, an M
//! going idle (and blocking in `netpoll`, or not, because nobody waited yet), a spawn from
//! outside, or the last spinning M — and shutdown completes with an M blocked in `netpoll`.
//! A lost wake-up leaves the model's main thread blocked forever: loom reports a deadlock.
//!
//! Run with
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
//!     cargo test -p gmprt-runtime --release --test loom_netpoll
//! ```
#![cfg(loom)]

use gmprt_runtime::loom_hooks::FakeFd;
use gmprt_runtime::Runtime;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;
use std::sync::Arc;

/// procs = 1. `block_on` itself reads (a waiter off any M: it counts itself and wakes an M,
/// which must end up blocked in `netpoll`) while the kernel makes the descriptor ready.
#[test]
fn block_on_reader_races_readiness_procs1() {
    loom::model(|| {
        let rt = Runtime::builder().procs(1).build().unwrap();
        let fd = Arc::new(rt.block_on(async { FakeFd::new() }).unwrap());
        let kernel = {
            let fd = fd.clone();
            thread::spawn(move || fd.make_ready())
        };
        rt.block_on(async { fd.read().await }).unwrap();
        kernel.join().unwrap();
        drop(fd);
        drop(rt);
    });
}

/// procs = 1, at most 2 Ms. A task parks on the descriptor (its M then goes idle with
/// `nwaiters > 0`, so it blocks in `netpoll`) while the kernel makes it ready and this thread
/// spawns a second task from outside (global queue + `wakep`, which must find an M other than
/// the one in `netpoll`, which is in no idle list, or break it). The M started for the spawn
/// is the last spinning M: it finds the task, or goes idle behind the one in `netpoll`.
#[test]
fn reader_races_readiness_and_a_spawn_procs1() {
    loom::model(|| {
        let rt = Runtime::builder().procs(1).max_threads(2).loom_prestart_ms(0).build().unwrap();
        let h = rt.handle();
        let fd = Arc::new(rt.block_on(async { FakeFd::new() }).unwrap());
        let reader = {
            let fd = fd.clone();
            h.spawn(async move { fd.read().await.map(|()| 1) })
        };
        let kernel = {
            let fd = fd.clone();
            thread::spawn(move || fd.make_ready())
        };
        let other = h.spawn(async { 2 });
        assert_eq!(reader.join().unwrap().unwrap() + other.join().unwrap(), 3);
        kernel.join().unwrap();
        drop(fd);
        drop(rt);
    });
}

/// procs = 1. A task parks on the descriptor, so the only M goes to block in `netpoll`, while
/// this thread spawns two tasks from outside without waiting between them. A `startm` that
/// finds the M on its way there, or blocked, starts no thread: it leaves the P to that M and
/// breaks the poller (idle.rs, step 5), and its hold keeps the second spawn's `wakep` from
/// `sched` (step 6). Both tasks run; then the descriptor turns ready and the reader ends.
#[test]
fn two_spawns_while_the_m_polls_procs1() {
    loom::model(|| {
        let rt = Runtime::builder().procs(1).loom_prestart_ms(0).build().unwrap();
        let h = rt.handle();
        let fd = Arc::new(rt.block_on(async { FakeFd::new() }).unwrap());
        let reader = {
            let fd = fd.clone();
            h.spawn(async move { fd.read().await.map(|()| 1) })
        };
        let b = h.spawn(async { 2 });
        let c = h.spawn(async { 3 });
        assert_eq!((b.join().unwrap(), c.join().unwrap()), (2, 3));
        fd.make_ready();
        assert_eq!(reader.join().unwrap().unwrap(), 1);
        drop(fd);
        drop(rt);
    });
}

/// procs = 2, at most 2 Ms. `block_on` spawns a reader; the M that runs it and the other M
/// race to go idle (the last one blocks in `netpoll`) while the kernel makes the descriptor
/// ready.
#[test]
fn reader_and_two_ms_going_idle_procs2() {
    loom::model(|| {
        let rt = Runtime::builder().procs(2).max_threads(2).loom_prestart_ms(0).build().unwrap();
        let fd = Arc::new(rt.block_on(async { FakeFd::new() }).unwrap());
        let kernel = {
            let fd = fd.clone();
            thread::spawn(move || fd.make_ready())
        };
        let fd2 = fd.clone();
        rt.block_on(async move { gmprt_runtime::spawn(async move { fd2.read().await }).await })
            .unwrap()
            .unwrap();
        kernel.join().unwrap();
        drop(fd);
        drop(rt);
    });
}

/// A value that counts its drops.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// procs = 1. A task waits on a descriptor that never becomes ready, so its M blocks in
/// `netpoll` (in no idle list); `Runtime::drop` must break it, join it, and drop the task's
/// future exactly once.
#[test]
fn shutdown_breaks_the_m_in_netpoll_procs1() {
    loom::model(|| {
        let rt = Runtime::builder().procs(1).build().unwrap();
        let fd = Arc::new(rt.block_on(async { FakeFd::new() }).unwrap());
        let drops = Arc::new(AtomicUsize::new(0));
        let guard = DropCount(drops.clone());
        let fd2 = fd.clone();
        let h = rt.spawn(async move {
            let _g = guard;
            let _ = fd2.read().await;
        });
        drop(rt);
        assert!(h.join().is_err(), "the task was cancelled at shutdown");
        assert_eq!(drops.load(SeqCst), 1);
        drop(fd);
    });
}

/// procs = 1. `block_on` reads a descriptor that never becomes ready, parking without the
/// deadline's lock (no deadline yet), while another thread sets a read deadline already past.
/// The read must fail with `TimedOut`: `set_deadline` stores its flag before it takes the
/// waiters and the reader reads the flag again after storing its waker, so either the setter
/// wakes the reader or the reader sees the deadline. Without the reader's second look, the
/// interleaving "reader reads no deadline, setter sets it and finds no waiter, reader parks"
/// leaves `block_on` parked forever (loom: deadlock).
#[test]
fn deadline_set_while_a_reader_parks_procs1() {
    loom::model(|| {
        let rt = Runtime::builder().procs(1).build().unwrap();
        let fd = Arc::new(rt.block_on(async { FakeFd::new() }).unwrap());
        let past = std::time::Instant::now();
        let setter = {
            let fd = fd.clone();
            thread::spawn(move || fd.set_read_deadline(Some(past)))
        };
        let err = rt.block_on(async { fd.read().await }).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err}");
        setter.join().unwrap();
        drop(fd);
        drop(rt);
    });
}
