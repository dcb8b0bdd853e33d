//! Blocking a thread on one of the `sync` futures: `WaitGroup::wait_blocking`,
//! `Mutex::lock_blocking` and the waiting side of `Once::call_once`.
//!
//! On a plain thread (or `Runtime::block_on`'s thread) the thread sleeps on a parker until the
//! future's waker fires. On an M — a task calling a blocking form — the wait runs inside
//! [`crate::syscall`], Go's `entersyscall`: the M gives up its P for the duration, sysmon hands
//! the P to another M, and the tasks this wait depends on keep running. So a blocking wait
//! inside a task costs a thread, never a deadlock — except when the thread cap is reached and
//! no idle M can take the P over: then the M waits holding its P (it cannot do otherwise), and
//! on `procs = 1` that can deadlock. Use the `async` forms inside tasks.

use crate::park::{block_on_local, ThreadParker};
use std::future::Future;

/// Blocks the calling thread until `fut` completes (see the module doc).
pub(crate) fn block_on<F: Future>(fut: F) -> F::Output {
    crate::checkdead::note_outside_use();
    let wait = move || block_on_local(fut, ThreadParker::current_waker());
    match crate::syscall(wait) {
        Ok(v) => v,
        // The thread cap refused the hand-off: wait holding the P (see the module doc).
        Err(limit) => (limit.f)(),
    }
}
