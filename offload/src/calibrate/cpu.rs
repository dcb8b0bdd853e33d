//! The CPU side of a calibration: the four kernels on 1, 2, 4, … `max_procs` Ps of a fresh
//! gmprt [`Runtime`], split with `parallel_for` by a task on that runtime ([`CpuKernels`]),
//! fitted per P count (`cpu_kernels`).
use super::measure::{calls, middle, samples};
use super::{mc_contract, Plan, MC_SEED};
use crate::error::OffloadError;
use crate::model::{CpuFit, KernelProfile, LinFit};
use gmprt_kernels::black_scholes::{self, BsBatch, BsIn, BsOut, Contract};
use gmprt_kernels::{monte_carlo, saxpy, sgemm};
use gmprt_runtime::{yield_now, Handle, Runtime};
use parking_lot::Mutex;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Items per `parallel_for` chunk at least: below this the per-chunk claim is a visible cost.
const MIN_GRAIN: usize = 4096;
/// Chunks per P: a few, so that a P that starts late still gets a share.
const CHUNKS_PER_P: usize = 4;

/// Per-chunk output buffers of `len` floats each, one lock per chunk (uncontended: each chunk
/// is claimed once), so `parallel_for`'s shared closure can write disjoint outputs safely.
fn chunk_bufs(chunks: usize, len: usize) -> Vec<Mutex<Vec<f32>>> {
    (0..chunks).map(|_| Mutex::new(vec![1.0f32; len])).collect()
}

/// The chunk size for `n` items on `p` Ps.
fn grain(n: usize, p: usize) -> usize {
    n.div_ceil(CHUNKS_PER_P * p).max(MIN_GRAIN)
}

/// Times one `parallel_for` (wall clock).
fn timed(h: &Handle, len: usize, grain: usize, f: impl Fn(std::ops::Range<usize>) + Sync) -> Duration {
    let t = Instant::now();
    h.parallel_for(len, grain, f);
    t.elapsed()
}

/// The four kernels on the CPU, timed the way [`calibrate`](super::calibrate()) times them: by a task on the
/// runtime (so the caller is an M and runs chunks itself, as a Go program's goroutine would),
/// split over the Ps with `parallel_for` (about four chunks per P, each at least
/// 4096 items; SGEMM by row blocks through `sgemm_rows`), from inputs made once.
///
/// Timing inside a task matters on a VM: a `parallel_for` called from outside the runtime
/// waits for an M to wake and then is woken itself, and waking a halted virtual CPU costs
/// 5-100 µs on the dev VM depending on whether it was idle long enough to halt — a bimodal
/// latency that no fit can predict. On an M the caller starts on the chunks at once; a helper
/// that wakes late finds nothing left.
///
/// Public so that a benchmark can check the model's CPU predictions against fresh runs of
/// exactly what was calibrated.
///
/// ```
/// use gmprt_offload::calibrate::CpuKernels;
/// use gmprt_offload::runtime::Runtime;
///
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// let kernels = CpuKernels::new(4096, 4096);
/// for (kernel, n) in [("black_scholes", 4096), ("saxpy", 4096), ("sgemm", 16), ("monte_carlo", 4096)] {
///     let secs = kernels.time(&rt.handle(), kernel, n, 1).unwrap();
///     println!("{kernel} at {n} on 2 Ps: {secs:.2e} s");
/// }
/// ```
pub struct CpuKernels {
    inputs: Arc<CpuInputs>,
}

/// What [`CpuKernels`] computes on.
struct CpuInputs {
    bs: BsBatch,
    xs: Vec<f32>,
    contract: Contract,
}

/// Kernels [`CpuKernels::time`] knows.
const CPU_KERNELS: [&str; 4] = ["black_scholes", "saxpy", "sgemm", "monte_carlo"];

impl CpuKernels {
    /// Inputs for up to `max_options` Black-Scholes options and `max_elements` SAXPY elements
    /// (Monte Carlo and SGEMM make theirs per call).
    ///
    /// ```
    /// use gmprt_offload::calibrate::CpuKernels;
    /// use gmprt_offload::runtime::Runtime;
    ///
    /// let rt = Runtime::builder().procs(1).build().unwrap();
    /// let kernels = CpuKernels::new(100, 4096);
    /// kernels.time(&rt.handle(), "saxpy", 4096, 1).unwrap();
    /// // More items than it was made for: an error, not a longer buffer.
    /// let e = kernels.time(&rt.handle(), "black_scholes", 101, 1).unwrap_err().to_string();
    /// assert!(e.contains("black_scholes of 101 items, but this CpuKernels was made for at most 100"));
    /// ```
    pub fn new(max_options: usize, max_elements: usize) -> CpuKernels {
        CpuKernels {
            inputs: Arc::new(CpuInputs {
                bs: BsBatch::from_contracts(&black_scholes::synthetic_chain(max_options.max(1), 42)),
                xs: vec![1.5f32; max_elements.max(1)],
                contract: mc_contract(),
            }),
        }
    }

    /// Median wall-clock seconds of `kernel` (`black_scholes`, `saxpy`, `sgemm`, `monte_carlo`)
    /// at size `n` (items; the matrix side for SGEMM; paths for Monte Carlo) on `h`'s Ps,
    /// timed by one task on `h` (see the type's docs); blocks the calling thread, which must
    /// not be an M. `reps` is the least number of timed runs after one warm-up run (short runs
    /// get more, as every calibration point does). Errors: an unknown kernel, more items than
    /// [`CpuKernels::new`] was made for, or a runtime that is shutting down.
    ///
    /// ```
    /// use gmprt_offload::calibrate::CpuKernels;
    /// use gmprt_offload::runtime::Runtime;
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let kernels = CpuKernels::new(1, 4096);
    /// let secs = kernels.time(&rt.handle(), "saxpy", 4096, 3).unwrap();
    /// println!("SAXPY of 4096 elements on 2 Ps: {secs:.2e} s");
    /// let e = kernels.time(&rt.handle(), "daxpy", 4096, 3).unwrap_err().to_string();
    /// assert!(e.contains("unknown kernel `daxpy` (one of black_scholes, saxpy, sgemm, monte_carlo)"));
    /// ```
    pub fn time(&self, h: &Handle, kernel: &str, n: usize, reps: usize) -> Result<f64, OffloadError> {
        let Some(&kernel) = CPU_KERNELS.iter().find(|&&k| k == kernel) else {
            return Err(OffloadError::Config(format!(
                "CpuKernels::time: unknown kernel `{kernel}` (one of {})",
                CPU_KERNELS.join(", ")
            )));
        };
        let cap = match kernel {
            "black_scholes" => self.inputs.bs.len(),
            "saxpy" => self.inputs.xs.len(),
            _ => usize::MAX,
        };
        if n > cap {
            return Err(OffloadError::Config(format!(
                "CpuKernels::time: {kernel} of {n} items, but this CpuKernels was made for at most {cap}"
            )));
        }
        let inputs = self.inputs.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        h.try_spawn(async move {
            let h = Handle::try_current().expect("a task runs inside its runtime");
            let run = inputs.prepare(&h, kernel, n);
            let warm = run().as_secs_f64();
            let mut v = vec![];
            for _ in 0..calls(reps, warm) {
                // One run per poll: the P is given back to the scheduler between runs.
                yield_now().await;
                v.push(run().as_secs_f64());
            }
            // The receiver waits for exactly this message; it cannot be gone.
            let _ = tx.send(middle(v));
        })
        .map_err(|e| OffloadError::Config(format!("CpuKernels::time: cannot spawn the timing task: {e}")))?;
        rx.recv().map_err(|_| {
            OffloadError::Config("CpuKernels::time: the runtime dropped the timing task (shut down?)".into())
        })
    }
}

impl CpuInputs {
    /// Makes the buffers for `kernel` at `n` on `h`'s Ps once, and returns one timed run: a
    /// `parallel_for` from the calling task, its wall time (the buffers are reused run after
    /// run, so no timed run pays for allocating or filling them).
    fn prepare<'a>(&'a self, h: &'a Handle, kernel: &str, n: usize) -> Box<dyn Fn() -> Duration + Send + 'a> {
        let p = h.procs().max(1);
        match kernel {
            "black_scholes" => {
                let input = self.bs.as_in();
                let g = grain(n, p);
                let bufs = chunk_bufs(n.div_ceil(g), 6 * g);
                Box::new(move || {
                    timed(h, n, g, |r| {
                        let mut buf = bufs[r.start / g].lock();
                        let m = r.len();
                        let (price, rest) = buf[..6 * m].split_at_mut(m);
                        let (delta, rest) = rest.split_at_mut(m);
                        let (gamma, rest) = rest.split_at_mut(m);
                        let (vega, rest) = rest.split_at_mut(m);
                        let (theta, rho) = rest.split_at_mut(m);
                        let sub = BsIn {
                            spot: &input.spot[r.clone()],
                            strike: &input.strike[r.clone()],
                            t: &input.t[r.clone()],
                            rate: &input.rate[r.clone()],
                            vol: &input.vol[r.clone()],
                            kind: &input.kind[r.clone()],
                        };
                        let mut out = BsOut { price, delta, gamma, vega, theta, rho };
                        black_box(black_scholes::price_greeks(&sub, &mut out)).ok();
                    })
                })
            }
            "saxpy" => {
                let g = grain(n, p);
                let bufs = chunk_bufs(n.div_ceil(g), g);
                Box::new(move || {
                    timed(h, n, g, |r| {
                        let mut y = bufs[r.start / g].lock();
                        black_box(saxpy::saxpy(0.5, &self.xs[r.clone()], &mut y[..r.len()])).ok();
                    })
                })
            }
            "sgemm" => {
                let a: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 * 0.25).collect();
                // Row blocks: at least 8 rows (one register tile's worth), a few per P.
                let g = n.div_ceil(CHUNKS_PER_P * p).max(8);
                let bufs = chunk_bufs(n.div_ceil(g), g * n);
                Box::new(move || {
                    timed(h, n, g, |r| {
                        let mut c = bufs[r.start / g].lock();
                        let rows = r.len();
                        black_box(sgemm::sgemm_rows(n, n, n, &a, &a, r, &mut c[..rows * n])).ok();
                    })
                })
            }
            _ => {
                let blocks = n / 4;
                let g = grain(blocks, p).min(blocks.max(1)); // blocks: a chunk of 4096 is 16k paths
                Box::new(move || {
                    timed(h, blocks, g, |r| {
                        black_box(monte_carlo::option_paths_sum(
                            MC_SEED,
                            &self.contract,
                            r.start as u64,
                            r.len() as u64,
                        ));
                    })
                })
            }
        }
    }
}

/// CPU fits of the four kernels (in `kernels`' order) on each P count of the plan.
pub(super) fn cpu_kernels(plan: &Plan, kernels: &mut [KernelProfile]) -> Result<(), OffloadError> {
    let max = |sizes: &[usize]| sizes.iter().max().copied().unwrap_or(1);
    let cpu = CpuKernels::new(max(&plan.bs), max(&plan.saxpy));
    for &p in &plan.procs {
        let rt = Runtime::builder()
            .procs(p)
            .build()
            .map_err(|e| OffloadError::Config(format!("calibrate: cannot build a {p}-P runtime: {e}")))?;
        let h = rt.handle();
        let sizes: [(&str, &[usize]); 4] = [
            ("black_scholes", &plan.bs),
            ("saxpy", &plan.saxpy),
            ("sgemm", &plan.sgemm),
            ("monte_carlo", &plan.mc_paths),
        ];
        for (k, (name, ns)) in kernels.iter_mut().zip(sizes) {
            debug_assert_eq!(k.name, name);
            let size = k.size;
            let samples = samples(ns, |n| size.work(n as f64), |n| cpu.time(&h, name, n, plan.reps))?;
            k.cpu.push(CpuFit { procs: p, fit: LinFit::fit(&samples), samples });
        }
        drop(rt);
    }
    Ok(())
}
