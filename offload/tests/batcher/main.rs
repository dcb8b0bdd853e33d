//! Batcher tests on the Host device, with a test kernel defined here (item `x: u32` →
//! `mix(x)`), so they do not depend on any real kernel. Deterministic: every wait is on an
//! event (a future's result, a gate the kernel reports to, a waker flag) — no sleeps.
//!
//! One test binary, one file per concern; the test kernel and the helpers below are shared by
//! all of them: `closing.rs` (how batches close), `errors.rs` (bad input and configurations),
//! `backpressure.rs` (full slots and waiters), `kernels.rs` (reports, slots, real kernels, dumps).

use gmprt_offload::cuda::{CudaJob, LaunchCtx};
use gmprt_offload::jobs::{BlackScholes, Saxpy, SmallSgemm};
use gmprt_offload::kernels::black_scholes::{Contract, OptionKind};
use gmprt_offload::kernels::{InvalidInput, KernelError};
use gmprt_offload::runtime::Runtime;
use gmprt_offload::{
    BatchKernel, Batcher, BatcherConfig, CloseReason, Device, DeviceKind, Job, OffloadError, Phases,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// An item that fails its whole batch in `run_host`.
const POISON: u32 = u32::MAX;
/// An item rejected by `validate`.
const INVALID: u32 = u32::MAX - 1;

fn mix(x: u32) -> u32 {
    x.wrapping_mul(0x9E37_79B9).rotate_left(7) ^ 0xA5A5_A5A5
}

/// Lets the test hold the kernel: each run reports its entry and waits for a permit.
#[derive(Default)]
struct Gate {
    state: Mutex<(usize, usize)>, // (runs entered, permits)
    cv: Condvar,
}

impl Gate {
    fn enter(&self) {
        let mut s = self.state.lock().unwrap();
        s.0 += 1;
        self.cv.notify_all();
        while s.1 == 0 {
            s = self.cv.wait(s).unwrap();
        }
        s.1 -= 1;
    }
    fn wait_entered(&self, k: usize) {
        let mut s = self.state.lock().unwrap();
        while s.0 < k {
            s = self.cv.wait(s).unwrap();
        }
    }
    fn release(&self, permits: usize) {
        self.state.lock().unwrap().1 += permits;
        self.cv.notify_all();
    }
}

#[derive(Default)]
struct Mix {
    gate: Option<Arc<Gate>>,
}

impl Job for Mix {
    fn name(&self) -> &'static str {
        "mix"
    }
    fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
        assert_eq!((input.len(), output.len()), (n, n), "the Batcher passes exactly n words");
        if let Some(g) = &self.gate {
            g.enter();
        }
        if input.contains(&POISON) {
            return Err("poison item in the batch".into());
        }
        for (o, &x) in output.iter_mut().zip(input) {
            *o = mix(x);
        }
        Ok(())
    }
}

impl CudaJob for Mix {
    fn launch_cuda(&self, _ctx: &mut LaunchCtx<'_>, _n: usize) -> Result<(), OffloadError> {
        Err(OffloadError::Config("the test kernel has no CUDA version".into()))
    }
}

impl BatchKernel for Mix {
    type Item = u32;
    type Output = u32;
    fn in_words(&self) -> usize {
        1
    }
    fn out_words(&self) -> usize {
        1
    }
    fn validate(&self, item: &u32, index: usize) -> Result<(), OffloadError> {
        if *item == INVALID {
            return Err(InvalidInput {
                field: "item",
                index,
                value: f64::from(*item),
                why: "reserved value",
            }
            .into());
        }
        Ok(())
    }
    fn stage(&self, items: &[u32], input: &mut [u32]) {
        input.copy_from_slice(items);
    }
    fn gather(&self, _n: usize, output: &[u32], i: usize) -> u32 {
        output[i]
    }
}

fn cfg(max_batch: usize, max_delay: Duration, in_flight: usize) -> BatcherConfig {
    BatcherConfig { max_batch, max_delay, in_flight, ..BatcherConfig::default() }
}

fn rt(procs: usize) -> Runtime {
    Runtime::builder().procs(procs).build().expect("runtime")
}

const LONG: Duration = Duration::from_secs(3600);

/// A waker that records that it was woken.
#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A waker that can be waited for (an event, not a sleep).
#[derive(Default)]
struct Woken {
    woken: Mutex<bool>,
    cv: Condvar,
}

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        *self.woken.lock().unwrap() = true;
        self.cv.notify_all();
    }
}

impl Woken {
    /// Blocks until woken.
    fn wait(&self) {
        let mut w = self.woken.lock().unwrap();
        while !*w {
            w = self.cv.wait(w).unwrap();
        }
    }
}

fn poll_once<F: Future + Unpin>(f: &mut F, flag: &Arc<Flag>) -> Poll<F::Output> {
    let waker = Waker::from(flag.clone());
    Pin::new(f).poll(&mut Context::from_waker(&waker))
}

mod backpressure;
mod closing;
mod errors;
mod kernels;
