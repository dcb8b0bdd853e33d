//! Go's `sync` package for tasks: [`WaitGroup`], [`Mutex<T>`] (with Go's starvation mode),
//! [`RwMutex<T>`] (with Go's writer preference) and [`Once`].
//!
//! | Go | gmprt | waiting |
//! |---|---|---|
//! | `var wg sync.WaitGroup`; `wg.Add(n)`, `wg.Done()`, `wg.Wait()`, `wg.Go(f)` | [`WaitGroup`] (a cloneable handle): `add`, `done`, `wait().await`, `wait_blocking()`, `go(fut)` | parks the task |
//! | `var mu sync.Mutex`; `mu.Lock()`, `mu.Unlock()`, `mu.TryLock()` | [`Mutex<T>`] owning its data: `lock().await` → [`MutexGuard`] (unlock on drop), `try_lock()`, `lock_blocking()` | parks the task |
//! | `var rw sync.RWMutex`; `rw.RLock()`, `rw.Lock()`, `TryRLock`, `TryLock` | [`RwMutex<T>`]: `read().await`, `write().await` → guards, `try_read()`, `try_write()`, `*_blocking()` | parks the task |
//! | `var once sync.Once`; `once.Do(f)` | [`Once`]: `call_once(f)`, `call_once_async(f).await` | parks the task (async form) |
//!
//! Each primitive's file opens with its protocol, its invariants and why no wake-up is lost:
//! `waitgroup.rs`, `raw_mutex.rs` (the lock protocol, Go's two modes, cancellation) and
//! `mutex.rs` (the typed wrapper), `rwmutex.rs`, `once.rs`. They share `waiters.rs`, a FIFO of wakers with
//! O(1) cancellation, and `block.rs`, which blocks a thread on any of them (on an M, the way
//! [`crate::syscall`] does, so the P keeps running tasks).
//!
//! All of them are built only from `crate::loom` primitives, and `tests/loom_sync.rs` checks
//! their races under loom: done racing wait, lock/unlock/cancel races (mutual exclusion, no
//! lost hand-off), and concurrent `Once` callers.
//!
//! Wake-ups follow the runtime's rules: a waiter woken from a running task goes to that task's
//! P `runnext`, like Go's `ready`, so a hand-off runs the receiver next.

mod block;
mod mutex;
mod once;
mod raw_mutex;
mod rwmutex;
mod waiters;
mod waitgroup;

pub use mutex::{Lock, Mutex, MutexGuard};
pub use once::Once;
pub use raw_mutex::STARVATION_THRESHOLD;
pub use rwmutex::{Acquire, RwMutex, RwMutexReadGuard, RwMutexWriteGuard};
pub use waitgroup::{Wait, WaitGroup};
