//! One-shot measured operations on [`CudaBackend`]: SGEMM through cuBLAS, π hits and option
//! path sums through the Monte Carlo kernels.
//!
//! Protocol: each call takes the backend's utility stream (created on first use; its lock is
//! held for the whole call, so calls are serialised and their event timings never
//! interleave), allocates its device buffers on that stream *before* the first event (so
//! allocation is not timed), records four events around upload / kernel / download, waits on
//! the last, and returns the event-measured times. The buffers are freed on the same stream
//! when the call returns, after everything that used them (stream order; event tracking is
//! off, see `cuda`'s docs). On an error after work was enqueued the stream is synchronised
//! before returning.
use super::gemm::gemm_f32;
use super::launch::{config, grid_size, BLOCK_SIZE};
use super::{driver_err, phase_times, CudaBackend};
use crate::backend::Phases;
use crate::error::OffloadError;
use crate::PhaseTimes;
use cudarc::driver::{CudaEvent, CudaStream, PushKernelArg};
use gmprt_kernels::black_scholes::{Contract, OptionKind};
use gmprt_kernels::cuda::{FN_OPTION_PATHS, FN_OPTION_PATHS_BATCH, FN_PI_HITS, MONTE_CARLO};
use gmprt_kernels::precision::Precision;
use gmprt_kernels::KernelError;
use std::sync::Arc;

impl CudaBackend {
    /// Runs `f` on the utility stream (lock held), with its four timing events (created at the
    /// first call, reused after: `f` records every event it reads before reading it); on
    /// error synchronises the stream before returning.
    pub(crate) fn with_util<T>(
        &self,
        f: impl FnOnce(&Arc<CudaStream>, &[CudaEvent; 4]) -> Result<T, OffloadError>,
    ) -> Result<T, OffloadError> {
        let mut util = self.inner.util.lock();
        self.inner.ctx.bind_to_thread().map_err(|e| driver_err("cuCtxSetCurrent", e))?;
        let stream = match util.as_ref() {
            Some(s) => s.clone(),
            None => {
                let s = self.inner.ctx.new_stream().map_err(|e| driver_err("cuStreamCreate", e))?;
                *util = Some(s.clone());
                s
            }
        };
        let mut events = self.inner.util_events.lock();
        if events.is_none() {
            *events = Some(self.phase_events()?);
        }
        let events = events.as_ref().expect("created above");
        let out = f(&stream, events);
        if out.is_err() {
            let _ = stream.synchronize();
        }
        out
    }

    /// C = A·B (row-major, m×k by k×n) through cuBLAS: uploads, runs, downloads; returns
    /// event-timed phases. Shapes are checked first (`Err(Kernel(Shape))` naming `a`, `b` or
    /// `c`); an empty `c` or `k = 0` needs no device work.
    ///
    /// # Examples
    ///
    /// Runs with or without a GPU (without one, `new` fails and the GPU part is skipped):
    ///
    /// ```
    /// use gmprt_offload::cuda::CudaBackend;
    /// use gmprt_offload::kernels::KernelError;
    /// use gmprt_offload::OffloadError;
    ///
    /// match CudaBackend::new(0) {
    ///     Ok(gpu) => {
    ///         let (a, b) = ([1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0]);
    ///         let mut c = [0.0f32; 4]; // (2×3)·(3×2)
    ///         match gpu.sgemm(2, 2, 3, &a, &b, &mut c) {
    ///             Ok(_times) => assert_eq!(c, [4.0, 5.0, 10.0, 11.0]),
    ///             Err(e) => assert!(e.to_string().contains("cublas"), "{e}"), // no usable cuBLAS
    ///         }
    ///         // A wrong shape is refused before any device work.
    ///         let err = gpu.sgemm(2, 2, 3, &a[..5], &b, &mut c).unwrap_err();
    ///         assert_eq!(err, OffloadError::Kernel(KernelError::Shape { what: "a", expected: 6, got: 5 }));
    ///     }
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn sgemm(
        &self,
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        b: &[f32],
        c: &mut [f32],
    ) -> Result<PhaseTimes, OffloadError> {
        self.sgemm_with(Precision::Fp32, m, n, k, a, b, c)
    }

    /// [`CudaBackend::sgemm`] at an explicit input precision: TF32 and BF16 run on the tensor
    /// cores (`cublasGemmStridedBatchedEx`, FP32 accumulation; `Device::sgemm_with`).
    #[allow(clippy::too_many_arguments)]
    pub fn sgemm_with(
        &self,
        precision: Precision,
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        b: &[f32],
        c: &mut [f32],
    ) -> Result<PhaseTimes, OffloadError> {
        let shape = |what, r: usize, col: usize, got: usize| match r.checked_mul(col) {
            Some(expected) if expected == got => Ok(()),
            Some(expected) => Err(OffloadError::Kernel(KernelError::Shape { what, expected, got })),
            None => Err(OffloadError::Config(format!("sgemm {what}: {r}×{col} overflows usize"))),
        };
        shape("a", m, k, a.len())?;
        shape("b", k, n, b.len())?;
        shape("c", m, n, c.len())?;
        if c.is_empty() {
            return Ok(PhaseTimes::default());
        }
        if k == 0 {
            c.fill(0.0); // an empty sum
            return Ok(PhaseTimes::default());
        }
        self.with_util(|s, ev| {
            // The stream's cuBLAS handle, before the first event (a first use, not a phase).
            self.ensure_blas(s)?;
            // The first GEMM of a shape does host work (heuristics, kernel choice, module
            // loads) between the events while the GPU idles: the H200 timed a 123×77×45 GEMM
            // at 71.6 ms. Each new shape runs once untimed first, on zeroed operands (issue 27).
            let key = (s.cu_stream() as usize, m, n, k, precision);
            if !self.inner.gemm_warm.lock().contains(&key) {
                let zeros =
                    |len: usize| s.alloc_zeros::<f32>(len).map_err(|e| driver_err("cuMemAllocAsync", e));
                let (wa, wb, mut wc) = (zeros(a.len())?, zeros(b.len())?, zeros(c.len())?);
                gemm_f32(
                    self,
                    s,
                    precision,
                    1,
                    m,
                    n,
                    k,
                    &wa.as_view(),
                    &wb.as_view(),
                    &mut wc.as_view_mut(),
                )?;
                s.synchronize().map_err(|e| driver_err("cuStreamSynchronize", e))?;
                self.inner.gemm_warm.lock().insert(key);
            }
            let alloc = |len: usize| {
                // SAFETY: every element is written before it is read: da and db by the
                // uploads below, dc by the GEMM (beta = 0: C is not read).
                unsafe { s.alloc::<f32>(len) }.map_err(|e| driver_err("cuMemAllocAsync", e))
            };
            let (mut da, mut db, mut dc) = (alloc(a.len())?, alloc(b.len())?, alloc(c.len())?);
            let record = |i: usize| ev[i].record(s).map_err(|e| driver_err("cuEventRecord", e));
            record(0)?;
            s.memcpy_htod(a, &mut da).map_err(|e| driver_err("cuMemcpyHtoDAsync(a)", e))?;
            s.memcpy_htod(b, &mut db).map_err(|e| driver_err("cuMemcpyHtoDAsync(b)", e))?;
            record(1)?;
            gemm_f32(self, s, precision, 1, m, n, k, &da.as_view(), &db.as_view(), &mut dc.as_view_mut())?;
            record(2)?;
            s.memcpy_dtoh(&dc, c).map_err(|e| driver_err("cuMemcpyDtoHAsync(c)", e))?;
            record(3)?;
            self.wait_end(&ev[3])?;
            phase_times(ev, Phases::ALL)
        })
    }

    /// π hits over `blocks` Philox blocks from `seed` (same stream as
    /// `gmprt_kernels::monte_carlo::pi_hits(seed, 0, blocks)`), with the kernel's time.
    ///
    /// # Examples
    ///
    /// Runs with or without a GPU (without one, `new` fails and the GPU part is skipped);
    /// with a GPU, the kernel needs NVRTC:
    ///
    /// ```
    /// use gmprt_offload::cuda::{nvrtc, CudaBackend};
    /// use gmprt_offload::kernels::monte_carlo;
    /// use gmprt_offload::OffloadError;
    ///
    /// match CudaBackend::new(0) {
    ///     Ok(gpu) => match gpu.pi_hits(7, 1024) {
    ///         // Integer math: exactly the CPU's count.
    ///         Ok((hits, _times)) => assert_eq!(hits, monte_carlo::pi_hits(7, 0, 1024)),
    ///         Err(e) => assert!(nvrtc::available().is_err(), "{e}"),
    ///     },
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn pi_hits(&self, seed: u64, blocks: u64) -> Result<(u64, PhaseTimes), OffloadError> {
        if blocks == 0 {
            return Ok((0, PhaseTimes::default()));
        }
        let f = self.function(&MONTE_CARLO, FN_PI_HITS)?;
        self.with_util(|s, ev| {
            let mut hits = s.alloc_zeros::<u64>(1).map_err(|e| driver_err("cuMemAllocAsync", e))?;
            let record = |i: usize| ev[i].record(s).map_err(|e| driver_err("cuEventRecord", e));
            record(0)?;
            record(1)?;
            let cfg = config(blocks, self.inner.sms);
            let mut b = s.launch_builder(&f);
            b.arg(&seed).arg(&blocks).arg(&mut hits);
            // SAFETY: arguments match `gmprt_pi_hits(unsigned long long seed, unsigned long
            // long blocks, unsigned long long* hits)`; `hits` is one zeroed u64 (the memset is
            // ordered before the launch on this stream), the only word the kernel writes.
            unsafe { b.launch(cfg) }.map_err(|e| driver_err("cuLaunchKernel gmprt_pi_hits", e))?;
            record(2)?;
            let mut out = [0u64; 1];
            s.memcpy_dtoh(&hits, &mut out).map_err(|e| driver_err("cuMemcpyDtoHAsync(hits)", e))?;
            record(3)?;
            self.wait_end(&ev[3])?;
            let times = phase_times(ev, Phases { h2d: false, kernel: true, d2h: true })?;
            Ok((out[0], times))
        })
    }

    /// Monte Carlo option path sums (as `gmprt_kernels::monte_carlo::option_paths_sum(seed,
    /// c, 0, blocks)`), with the kernel's time.
    ///
    /// # Examples
    ///
    /// Runs with or without a GPU (without one, `new` fails and the GPU part is skipped);
    /// with a GPU, the kernel needs NVRTC:
    ///
    /// ```
    /// use gmprt_offload::cuda::{nvrtc, CudaBackend};
    /// use gmprt_offload::kernels::black_scholes::{Contract, OptionKind};
    /// use gmprt_offload::kernels::monte_carlo;
    /// use gmprt_offload::OffloadError;
    ///
    /// let c = Contract { spot: 100.0, strike: 100.0, t: 1.0, rate: 0.05, vol: 0.2, kind: OptionKind::Call };
    /// match CudaBackend::new(0) {
    ///     Ok(gpu) => match gpu.option_paths_sum(3, &c, 1024) {
    ///         // The same paths as the CPU; sums agree to float rounding.
    ///         Ok(((sum, _sum_sq), _times)) => {
    ///             let (cpu, _) = monte_carlo::option_paths_sum(3, &c, 0, 1024);
    ///             assert!((sum - cpu).abs() < 1e-4 * cpu, "{sum} vs {cpu}");
    ///         }
    ///         Err(e) => assert!(nvrtc::available().is_err(), "{e}"),
    ///     },
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn option_paths_sum(
        &self,
        seed: u64,
        c: &Contract,
        blocks: u64,
    ) -> Result<((f64, f64), PhaseTimes), OffloadError> {
        if blocks == 0 {
            return Ok(((0.0, 0.0), PhaseTimes::default()));
        }
        let f = self.function(&MONTE_CARLO, FN_OPTION_PATHS)?;
        let is_call: i32 = match c.kind {
            OptionKind::Call => 1,
            OptionKind::Put => 0,
        };
        self.with_util(|s, ev| {
            let mut sums = s.alloc_zeros::<f64>(2).map_err(|e| driver_err("cuMemAllocAsync", e))?;
            let record = |i: usize| ev[i].record(s).map_err(|e| driver_err("cuEventRecord", e));
            record(0)?;
            record(1)?;
            let cfg = config(blocks, self.inner.sms);
            let mut b = s.launch_builder(&f);
            b.arg(&seed).arg(&c.spot).arg(&c.strike).arg(&c.t).arg(&c.rate).arg(&c.vol);
            b.arg(&is_call).arg(&blocks).arg(&mut sums);
            // SAFETY: arguments match `gmprt_option_paths(unsigned long long seed, float spot,
            // float strike, float t, float rate, float vol, int is_call, unsigned long long
            // blocks, double* sums)`; `sums` is two zeroed f64 (memset ordered before the
            // launch), the only words the kernel writes.
            unsafe { b.launch(cfg) }.map_err(|e| driver_err("cuLaunchKernel gmprt_option_paths", e))?;
            record(2)?;
            let mut out = [0f64; 2];
            s.memcpy_dtoh(&sums, &mut out).map_err(|e| driver_err("cuMemcpyDtoHAsync(sums)", e))?;
            record(3)?;
            self.wait_end(&ev[3])?;
            let times = phase_times(ev, Phases { h2d: false, kernel: true, d2h: true })?;
            Ok(((out[0], out[1]), times))
        })
    }

    /// [`CudaBackend::option_paths_sum`] for many contracts in one launch
    /// (`gmprt_option_paths_batch`): contract `i` on the stream of `seeds[i]`, `blocks` Philox
    /// blocks each. Uploads the seeds and the contracts' parameters (32 bytes per contract),
    /// runs one kernel, downloads `2 · n` sums; returns them with the event-timed phases. The
    /// caller validates the contracts (`Device::option_paths_sum_many` does); unequal slices
    /// are a `Config` error.
    pub fn option_paths_sum_many(
        &self,
        seeds: &[u64],
        contracts: &[Contract],
        blocks: u64,
    ) -> Result<(Vec<(f64, f64)>, PhaseTimes), OffloadError> {
        crate::device::paths_batch_shape(seeds.len(), contracts.len())?;
        let n = u32::try_from(contracts.len()).map_err(|_| {
            OffloadError::Config(format!("{} contracts in one launch: at most 2^32 - 1", contracts.len()))
        })?;
        if n == 0 || blocks == 0 {
            return Ok((vec![(0.0, 0.0); contracts.len()], PhaseTimes::default()));
        }
        let f = self.function(&MONTE_CARLO, FN_OPTION_PATHS_BATCH)?;
        let params: Vec<f32> = contracts
            .iter()
            .flat_map(|c| {
                let call = if c.kind == OptionKind::Call { 1.0 } else { 0.0 };
                [c.spot, c.strike, c.t, c.rate, c.vol, call]
            })
            .collect();
        // The grid a single launch of all n · blocks Philox blocks would get, split into rows
        // of contracts (at most 65,535: the grid's y limit) and, within a row, as many CUDA
        // blocks as one contract's blocks can use.
        let total = grid_size(u64::from(n).saturating_mul(blocks), self.inner.sms);
        let rows = n.min(65_535).min(total).max(1);
        let cols = (total / rows).max(1).min(grid_size(blocks, self.inner.sms));
        let cfg = cudarc::driver::LaunchConfig {
            grid_dim: (cols, rows, 1),
            block_dim: (BLOCK_SIZE, 1, 1),
            shared_mem_bytes: 0,
        };
        self.with_util(|s, ev| {
            let mut sums =
                s.alloc_zeros::<f64>(2 * contracts.len()).map_err(|e| driver_err("cuMemAllocAsync", e))?;
            // SAFETY: both are written by the uploads below before the kernel reads them.
            let mut d_seeds =
                unsafe { s.alloc::<u64>(seeds.len()) }.map_err(|e| driver_err("cuMemAllocAsync", e))?;
            // SAFETY: as above.
            let mut d_params =
                unsafe { s.alloc::<f32>(params.len()) }.map_err(|e| driver_err("cuMemAllocAsync", e))?;
            let record = |i: usize| ev[i].record(s).map_err(|e| driver_err("cuEventRecord", e));
            record(0)?;
            s.memcpy_htod(seeds, &mut d_seeds).map_err(|e| driver_err("cuMemcpyHtoDAsync(seeds)", e))?;
            s.memcpy_htod(&params, &mut d_params).map_err(|e| driver_err("cuMemcpyHtoDAsync(params)", e))?;
            record(1)?;
            let mut b = s.launch_builder(&f);
            b.arg(&d_seeds).arg(&d_params).arg(&n).arg(&blocks).arg(&mut sums);
            // SAFETY: arguments match `gmprt_option_paths_batch(const unsigned long long* seeds,
            // const float* params, unsigned n, unsigned long long blocks, double* sums)`: n
            // seeds, 6n params, 2n zeroed sums (memset ordered before the launch), the only
            // words the kernel writes.
            unsafe { b.launch(cfg) }.map_err(|e| driver_err("cuLaunchKernel gmprt_option_paths_batch", e))?;
            record(2)?;
            let mut out = vec![0f64; 2 * contracts.len()];
            s.memcpy_dtoh(&sums, &mut out).map_err(|e| driver_err("cuMemcpyDtoHAsync(sums)", e))?;
            record(3)?;
            self.wait_end(&ev[3])?;
            let times = phase_times(ev, Phases::ALL)?;
            Ok((out.chunks_exact(2).map(|p| (p[0], p[1])).collect(), times))
        })
    }
}
