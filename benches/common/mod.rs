//! Shared by the benches: the two runtimes behind one `Sched` interface, the worker count
//! (`BENCH_PROCS`), and running a workload's root as a spawned task on either runtime.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// The two runtimes behind one interface

/// What a workload needs from a runtime, from inside one of its tasks.
pub trait Sched: 'static {
    type Error: std::fmt::Debug;
    type Handle<T: Send + 'static>: Future<Output = Result<T, Self::Error>> + Send + 'static;

    fn spawn<F>(future: F) -> Self::Handle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static;

    fn yield_now() -> impl Future<Output = ()> + Send;

    /// The runtime's own timer (tokio's needs a runtime built with time: [`tokio_rt_timers`]).
    fn sleep(d: Duration) -> impl Future<Output = ()> + Send;
}

pub struct Gmprt;

impl Sched for Gmprt {
    type Error = gmprt::JoinError;
    type Handle<T: Send + 'static> = gmprt::JoinHandle<T>;

    fn spawn<F>(future: F) -> Self::Handle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        gmprt::spawn(future)
    }

    fn yield_now() -> impl Future<Output = ()> + Send {
        gmprt::yield_now()
    }

    fn sleep(d: Duration) -> impl Future<Output = ()> + Send {
        gmprt::runtime::time::sleep(d)
    }
}

pub struct Tokio;

impl Sched for Tokio {
    type Error = tokio::task::JoinError;
    type Handle<T: Send + 'static> = tokio::task::JoinHandle<T>;

    fn spawn<F>(future: F) -> Self::Handle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        tokio::spawn(future)
    }

    fn yield_now() -> impl Future<Output = ()> + Send {
        tokio::task::yield_now()
    }

    fn sleep(d: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(d)
    }
}

/// Worker count for both runtimes: env `BENCH_PROCS`, default 2.
pub fn procs() -> usize {
    match std::env::var("BENCH_PROCS") {
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => panic!("BENCH_PROCS={v:?}: expected a whole number of workers, at least 1"),
        },
        Err(_) => 2,
    }
}

pub fn gmprt_rt(procs: usize) -> gmprt::Runtime {
    gmprt::Runtime::builder().procs(procs).build().expect("start gmprt runtime")
}

pub fn tokio_rt(procs: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(procs).build().expect("start tokio runtime")
}

/// [`tokio_rt`] with tokio's timer driver, for workloads that sleep (`enable_time`, which
/// `#[tokio::main]` turns on too; off in [`tokio_rt`] so the other workloads' peer is the one
/// their earlier results were taken with).
pub fn tokio_rt_timers(procs: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(procs)
        .enable_time()
        .build()
        .expect("start tokio runtime")
}

/// Runs `root` as a spawned task on gmprt (so it runs on an M, holding a P) and waits for it.
pub fn run_gmprt<F>(rt: &gmprt::Runtime, root: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    rt.block_on(async { rt.spawn(root).await.expect("gmprt root task") })
}

/// Runs `root` as a spawned task on tokio (so it runs on a worker) and waits for it.
pub fn run_tokio<F>(rt: &tokio::runtime::Runtime, root: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    rt.block_on(async { tokio::spawn(root).await.expect("tokio root task") })
}

/// Criterion settings for every bench here: 20 samples, 1 s warm-up, 4 s per function, which
/// keeps each bench file within a few minutes on 2 cores; command-line flags
/// (`--measurement-time`, `--warm-up-time`, `--sample-size`) override them.
pub fn config() -> criterion::Criterion {
    criterion::Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
}
