//! The CPU side of a calibration: the four kernels on 1, 2, 4, … `max_procs` Ps of a fresh
//! gmprt [`Runtime`], split with `parallel_for` ([`CpuKernels`]), fitted per P count
//! (`cpu_kernels`), twice: as a program calls them (the fits the cost model prices) and
//! cache-resident (a separate, labelled line: [`CpuTiming`]).
use super::cold::{evict_slice, wait_parked};
use super::measure::{calls, middle, samples};
use super::{mc_contract, Plan, MC_SEED};
use crate::error::OffloadError;
use crate::model::{CpuFit, CpuTiming, KernelProfile, LinFit};
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
/// With `fresh` they start empty: each run allocates its own ([`Outputs::get`]).
struct Outputs {
    bufs: Vec<Mutex<Vec<f32>>>,
    len: usize,
    fresh: bool,
}

impl Outputs {
    fn new(chunks: usize, len: usize, fresh: bool) -> Outputs {
        let make = || Mutex::new(if fresh { Vec::new() } else { vec![1.0f32; len] });
        Outputs { bufs: (0..chunks).map(|_| make()).collect(), len, fresh }
    }

    /// Chunk `i`'s buffer, allocated now (zeroed, pages untouched) when fresh.
    fn get(&self, i: usize) -> parking_lot::MutexGuard<'_, Vec<f32>> {
        let mut b = self.bufs[i].lock();
        if self.fresh && b.is_empty() {
            *b = vec![0.0f32; self.len];
        }
        b
    }

    /// Before an as-called run: evicts the buffers, or (fresh) frees them, untimed.
    fn reset(&self) {
        for b in &self.bufs {
            let mut b = b.lock();
            if self.fresh {
                *b = Vec::new();
            } else {
                evict_slice(&b);
            }
        }
    }
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

/// The four kernels on the CPU, timed the way [`calibrate`](super::calibrate()) times them,
/// split over the Ps with `parallel_for` (about four chunks per P, each at least 4096 items;
/// SGEMM by row blocks through `sgemm_rows`), from inputs made once, in one of the
/// [`CpuTiming`]s:
/// * **as called** ([`CpuKernels::time`], the fits the cost model prices): from the calling
///   thread, outside the runtime, after every P has parked, with the operands (inputs and
///   outputs) evicted from every cache before each run (`cold.rs`), as `option_screener`'s
///   way 2 and a CPU-placed Batcher batch call;
/// * **cache-resident** ([`CpuKernels::time_as`] with [`CpuTiming::Resident`]): by a task on
///   the runtime (so the caller is an M and runs chunks itself, the helpers awake), on the same
///   buffers run after run — the best case, kept as a separate line. (Waking a halted virtual
///   CPU costs 5-100 µs on the dev VM, which this timing leaves out and the first one pays.)
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
        self.time_as(h, kernel, n, reps, CpuTiming::AsCalled)
    }

    /// [`CpuKernels::time`] in the given [`CpuTiming`] (see the type's docs). Same errors, and
    /// as-called timings from inside a runtime's task are an error too (the caller must not be
    /// an M: it would time its own P's hand-off, not a program's call).
    ///
    /// ```
    /// use gmprt_offload::calibrate::CpuKernels;
    /// use gmprt_offload::model::CpuTiming;
    /// use gmprt_offload::runtime::Runtime;
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let kernels = CpuKernels::new(1, 1 << 14);
    /// for timing in [CpuTiming::AsCalled, CpuTiming::AsCalledFreshOutputs, CpuTiming::Resident] {
    ///     let secs = kernels.time_as(&rt.handle(), "saxpy", 1 << 14, 3, timing).unwrap();
    ///     println!("SAXPY of 16k elements on 2 Ps, {}: {secs:.2e} s", timing.describe());
    /// }
    /// ```
    pub fn time_as(
        &self,
        h: &Handle,
        kernel: &str,
        n: usize,
        reps: usize,
        timing: CpuTiming,
    ) -> Result<f64, OffloadError> {
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
        if timing != CpuTiming::Resident {
            if Handle::try_current().is_some() {
                return Err(OffloadError::Config(
                    "CpuKernels::time: an as-called timing must be called from outside the runtime \
                     (this thread is inside one)"
                        .into(),
                ));
            }
            let run = self.inputs.prepare(h, kernel, n, timing == CpuTiming::AsCalledFreshOutputs);
            let once = || {
                wait_parked(h);
                (run.reset)();
                (run.run)().as_secs_f64()
            };
            let warm = once();
            let v = (0..calls(reps, warm)).map(|_| once()).collect();
            return Ok(middle(v));
        }
        let inputs = self.inputs.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        h.try_spawn(async move {
            let h = Handle::try_current().expect("a task runs inside its runtime");
            let run = inputs.prepare(&h, kernel, n, false).run;
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

/// One prepared kernel: `run` times one `parallel_for` (wall clock); `reset` puts its operands
/// back in DRAM (or frees fresh outputs), untimed, before an as-called run.
struct Prepared<'a> {
    run: Box<dyn Fn() -> Duration + Send + 'a>,
    reset: Box<dyn Fn() + Send + 'a>,
}

impl CpuInputs {
    /// Makes the buffers for `kernel` at `n` on `h`'s Ps once (outputs allocated per run when
    /// `fresh`), and returns one timed run: a `parallel_for` from the calling thread or task,
    /// its wall time (the inputs are made before, so no timed run pays for making them).
    fn prepare<'a>(&'a self, h: &'a Handle, kernel: &str, n: usize, fresh: bool) -> Prepared<'a> {
        let p = h.procs().max(1);
        match kernel {
            "black_scholes" => {
                let input = self.bs.as_in();
                let g = grain(n, p);
                let bufs = Arc::new(Outputs::new(n.div_ceil(g), 6 * g, fresh));
                let outs = bufs.clone();
                let reset = Box::new(move || {
                    let i = self.bs.as_in();
                    for s in [i.spot, i.strike, i.t, i.rate, i.vol] {
                        evict_slice(&s[..n]);
                    }
                    evict_slice(&i.kind[..n]);
                    outs.reset();
                });
                let run = Box::new(move || {
                    timed(h, n, g, |r| {
                        let mut buf = bufs.get(r.start / g);
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
                });
                Prepared { run, reset }
            }
            "saxpy" => {
                let g = grain(n, p);
                let bufs = Arc::new(Outputs::new(n.div_ceil(g), g, fresh));
                let outs = bufs.clone();
                let reset = Box::new(move || {
                    evict_slice(&self.xs[..n]);
                    outs.reset();
                });
                let run = Box::new(move || {
                    timed(h, n, g, |r| {
                        let mut y = bufs.get(r.start / g);
                        black_box(saxpy::saxpy(0.5, &self.xs[r.clone()], &mut y[..r.len()])).ok();
                    })
                });
                Prepared { run, reset }
            }
            "sgemm" => {
                let a: Arc<Vec<f32>> = Arc::new((0..n * n).map(|i| (i % 7) as f32 * 0.25).collect());
                // Row blocks: at least 8 rows (one register tile's worth), a few per P.
                let g = n.div_ceil(CHUNKS_PER_P * p).max(8);
                let bufs = Arc::new(Outputs::new(n.div_ceil(g), g * n, fresh));
                let (outs, a2) = (bufs.clone(), a.clone());
                let reset = Box::new(move || {
                    evict_slice(&a2);
                    outs.reset();
                });
                let run = Box::new(move || {
                    timed(h, n, g, |r| {
                        let mut c = bufs.get(r.start / g);
                        let rows = r.len();
                        black_box(sgemm::sgemm_rows(n, n, n, &a, &a, r, &mut c[..rows * n])).ok();
                    })
                });
                Prepared { run, reset }
            }
            _ => {
                let blocks = n / 4;
                let g = grain(blocks, p).min(blocks.max(1)); // blocks: a chunk of 4096 is 16k paths
                                                             // No operands: the paths are generated in registers.
                let reset = Box::new(|| {});
                let run = Box::new(move || {
                    timed(h, blocks, g, |r| {
                        black_box(monte_carlo::option_paths_sum(
                            MC_SEED,
                            &self.contract,
                            r.start as u64,
                            r.len() as u64,
                        ));
                    })
                });
                Prepared { run, reset }
            }
        }
    }
}

/// CPU fits of the four kernels (in `kernels`' order) on each P count of the plan: as called
/// into `cpu`, cache-resident into `cpu_resident`.
/// `progress` hears of each P count as it starts.
pub(super) fn cpu_kernels(
    plan: &Plan,
    kernels: &mut [KernelProfile],
    progress: &dyn Fn(&str),
) -> Result<(), OffloadError> {
    let max = |sizes: &[usize]| sizes.iter().max().copied().unwrap_or(1);
    let cpu = CpuKernels::new(max(&plan.bs), max(&plan.saxpy));
    for &p in &plan.procs {
        progress(&format!("kernels on the CPU, {p} P{}", if p == 1 { "" } else { "s" }));
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
            for (timing, fits) in
                [(CpuTiming::AsCalled, &mut k.cpu), (CpuTiming::Resident, &mut k.cpu_resident)]
            {
                let samples =
                    samples(ns, |n| size.work(n as f64), |n| cpu.time_as(&h, name, n, plan.reps, timing))?;
                fits.push(CpuFit { procs: p, fit: LinFit::fit(&samples), samples });
            }
        }
        drop(rt);
    }
    Ok(())
}
