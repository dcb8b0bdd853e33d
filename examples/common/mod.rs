//! Shared by the examples that compare gmprt with tokio: the `Rt` interface (so each program is
//! written once and run on both), argument parsing and RSS readings. Not every example uses
//! every item.
#![allow(dead_code)]

use gmprt::runtime::Runtime;
use std::future::Future;
use std::time::Instant;

/// Parses a count written `1000000`, `1_000_000` or `1e6`.
pub fn parse_count(s: &str) -> Option<usize> {
    let s = s.replace('_', "");
    s.parse()
        .ok()
        .or_else(|| s.parse::<f64>().ok().filter(|f| *f >= 0.0 && f.fract() == 0.0).map(|f| f as usize))
}

/// Resident set size (current, peak) in bytes, from /proc/self/status (Linux).
pub fn rss() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        s.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// A gmprt runtime with `procs` Ps (default: `GMPRT_MAXPROCS`, else the available parallelism).
pub fn gmprt_rt(procs: Option<usize>) -> Result<Runtime, String> {
    let mut b = Runtime::builder();
    if let Some(p) = procs {
        b = b.procs(p);
    }
    b.build().map_err(|e| e.to_string())
}

/// A tokio multi-thread runtime with `procs` workers (default: the available parallelism) and
/// its timer enabled. Zero workers is an error here rather than tokio's panic.
pub fn tokio_rt(procs: Option<usize>) -> Result<tokio::runtime::Runtime, String> {
    let n = procs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if n == 0 {
        return Err("--procs must be at least 1".to_string());
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_time()
        .worker_threads(n)
        .build()
        .map_err(|e| e.to_string())
}

/// Says why a runtime could not start and exits with status 2 (bad arguments).
pub fn fail(what: &str, e: String) -> ! {
    eprintln!("{what}: {e}");
    std::process::exit(2)
}

/// The two runtimes the examples run on, behind one interface so the programs are the same.
pub trait Rt: 'static {
    const NAME: &'static str;
    fn procs(&self) -> usize;
    fn block_on<F: Future>(&self, f: F) -> F::Output;
    /// Spawns from inside the runtime; the returned future yields the task's output.
    fn spawn<F>(f: F) -> impl Future<Output = F::Output> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static;
    /// Spawns and detaches (Go's `go f()`).
    fn go<F: Future<Output = ()> + Send + 'static>(f: F);
    fn yield_now() -> impl Future<Output = ()> + Send;
    /// The runtime's own timer (Go's `time.Sleep` until an instant).
    fn sleep_until(deadline: Instant) -> impl Future<Output = ()> + Send + 'static;
    /// Tasks the runtime reports as parked, if it can say.
    fn parked_tasks(&self) -> Option<usize>;
    /// Timers the runtime reports as pending, if it can say.
    fn timers(&self) -> Option<usize>;
    /// A line of scheduler counters, if the runtime has them.
    fn stats_line(&self) -> Option<String>;
}

impl Rt for Runtime {
    const NAME: &'static str = "gmprt";
    fn procs(&self) -> usize {
        Runtime::procs(self)
    }
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        Runtime::block_on(self, f)
    }
    fn spawn<F>(f: F) -> impl Future<Output = F::Output> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let h = gmprt::spawn(f);
        async move { h.await.expect("task failed") }
    }
    fn go<F: Future<Output = ()> + Send + 'static>(f: F) {
        drop(gmprt::spawn(f));
    }
    fn yield_now() -> impl Future<Output = ()> + Send {
        gmprt::yield_now()
    }
    fn sleep_until(deadline: Instant) -> impl Future<Output = ()> + Send + 'static {
        gmprt::runtime::time::sleep_until(deadline)
    }
    fn parked_tasks(&self) -> Option<usize> {
        Some(self.stats().parked_tasks)
    }
    fn timers(&self) -> Option<usize> {
        Some(self.stats().timers)
    }
    fn stats_line(&self) -> Option<String> {
        let st = self.stats();
        Some(format!(
            "steals {} of {} attempts; M parks {}, unparks {}; threads {}",
            st.steals, st.steal_attempts, st.parks, st.unparks, st.threads
        ))
    }
}

impl Rt for tokio::runtime::Runtime {
    const NAME: &'static str = "tokio";
    fn procs(&self) -> usize {
        self.metrics().num_workers()
    }
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        tokio::runtime::Runtime::block_on(self, f)
    }
    fn spawn<F>(f: F) -> impl Future<Output = F::Output> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let h = tokio::spawn(f);
        async move { h.await.expect("task failed") }
    }
    fn go<F: Future<Output = ()> + Send + 'static>(f: F) {
        drop(tokio::spawn(f));
    }
    fn yield_now() -> impl Future<Output = ()> + Send {
        tokio::task::yield_now()
    }
    fn sleep_until(deadline: Instant) -> impl Future<Output = ()> + Send + 'static {
        tokio::time::sleep_until(tokio::time::Instant::from_std(deadline))
    }
    fn parked_tasks(&self) -> Option<usize> {
        None
    }
    fn timers(&self) -> Option<usize> {
        None
    }
    fn stats_line(&self) -> Option<String> {
        None
    }
}
