//! The `crate::loom` facade: every synchronisation primitive of the runtime comes through here.
//!
//! Normally these are `std`'s atomics and `parking_lot`'s locks. Under `RUSTFLAGS="--cfg loom"`
//! they are [loom]'s, so the loom models in `tests/loom_*.rs` explore every interleaving of the
//! runtime's own protocols (park/unpark, the task state word, join hand-off, `runnext`).
//! loom cannot see inside crossbeam-deque, so the run queues have a loom-visible stand-in
//! (see `sched::queue`), and loom shrinks a few constants (see [`LOOM`]).
//!
//! [loom]: https://docs.rs/loom

/// True when compiled for loom models; used to shrink constants so models stay small.
pub(crate) const LOOM: bool = cfg!(loom);

#[cfg(not(loom))]
mod imp {
    pub(crate) mod sync {
        pub(crate) use parking_lot::{Condvar, Mutex, MutexGuard};

        /// Waits on `cv` for at most `d`; true if it timed out.
        pub(crate) fn wait_for<T>(cv: &Condvar, g: &mut MutexGuard<'_, T>, d: std::time::Duration) -> bool {
            cv.wait_for(g, d).timed_out()
        }
        pub(crate) mod atomic {
            pub(crate) use std::sync::atomic::{
                fence, AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering,
            };
        }
    }

    pub(crate) mod cell {
        /// `UnsafeCell` with loom's closure-based API, so call sites read the same in both builds.
        #[derive(Debug)]
        pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

        impl<T> UnsafeCell<T> {
            pub(crate) const fn new(v: T) -> Self {
                UnsafeCell(std::cell::UnsafeCell::new(v))
            }
            #[inline(always)]
            pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
                f(self.0.get())
            }
            #[inline(always)]
            pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
                f(self.0.get())
            }
        }
    }

    pub(crate) mod thread {
        pub(crate) use std::thread::{current, Builder, JoinHandle};
    }

    /// Declares a thread-local; `std`'s normally, loom's under `cfg(loom)`.
    macro_rules! rt_thread_local {
        ($($t:tt)*) => { std::thread_local!($($t)*); };
    }
    pub(crate) use rt_thread_local as thread_local;
}

#[cfg(loom)]
mod imp {
    pub(crate) mod sync {
        /// A `parking_lot`-shaped wrapper over loom's `Mutex` (no poisoning in the API).
        #[derive(Debug, Default)]
        pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);
        pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

        impl<T> Mutex<T> {
            pub(crate) fn new(v: T) -> Self {
                Mutex(loom::sync::Mutex::new(v))
            }
            pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
                self.0.lock().unwrap()
            }
            #[allow(dead_code)] // parking_lot API parity
            pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
                self.0.try_lock().ok()
            }
        }

        /// A `parking_lot`-shaped wrapper over loom's `Condvar`.
        #[derive(Debug, Default)]
        pub(crate) struct Condvar(loom::sync::Condvar);

        impl Condvar {
            pub(crate) fn new() -> Self {
                Condvar(loom::sync::Condvar::new())
            }
            pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
                // loom's wait takes the guard by value; swap it through a temporary.
                // SAFETY: `guard` is read out and written back before anyone else can observe
                // it; `wait` does not panic under loom except on model failure (which aborts).
                unsafe {
                    let g = std::ptr::read(guard);
                    let g = self.0.wait(g).unwrap();
                    std::ptr::write(guard, g);
                }
            }
            pub(crate) fn notify_one(&self) -> bool {
                self.0.notify_one();
                true
            }
            pub(crate) fn notify_all(&self) -> usize {
                self.0.notify_all();
                0
            }
        }

        /// loom has no timed wait: models never depend on timers, so this waits for a notify.
        pub(crate) fn wait_for<T>(cv: &Condvar, g: &mut MutexGuard<'_, T>, _d: std::time::Duration) -> bool {
            cv.wait(g);
            false
        }

        pub(crate) mod atomic {
            pub(crate) use loom::sync::atomic::{
                fence, AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering,
            };
        }
    }

    pub(crate) mod cell {
        pub(crate) use loom::cell::UnsafeCell;
    }

    pub(crate) mod thread {
        pub(crate) use loom::thread::{current, JoinHandle};

        /// loom has no thread builder; this one ignores names and stack sizes.
        #[derive(Debug, Default)]
        pub(crate) struct Builder;
        impl Builder {
            pub(crate) fn new() -> Self {
                Builder
            }
            pub(crate) fn name(self, _n: String) -> Self {
                self
            }
            pub(crate) fn stack_size(self, _s: usize) -> Self {
                self
            }
            pub(crate) fn spawn<F, T>(self, f: F) -> std::io::Result<JoinHandle<T>>
            where
                F: FnOnce() -> T + 'static,
                T: 'static,
            {
                Ok(loom::thread::spawn(f))
            }
        }
    }

    /// loom's `thread_local!` has no `const { .. }` initialiser form: strip it.
    macro_rules! rt_thread_local {
        ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = const { $init:expr };) => {
            loom::thread_local!($(#[$attr])* $vis static $name: $t = $init;);
        };
        ($($t:tt)*) => { loom::thread_local!($($t)*); };
    }
    pub(crate) use rt_thread_local as thread_local;
}

pub(crate) use imp::*;
