//! The one-shot helpers of [`Device`]: a whole problem on the device in one call, for examples
//! and benchmarks that time it ([`Device::run_bulk`], [`Device::sgemm`], [`Device::pi_hits`],
//! [`Device::option_paths_sum`]). Each dispatches on the backend the device holds, checks its
//! sizes first (an error, never a panic) and returns the phase times it measured; the
//! [`Batcher`](crate::Batcher) is the path for many small submits.

use super::{Device, Inner};
use crate::backend::{PhaseTimes, Phases};
use crate::cuda::CudaJob;
use crate::error::OffloadError;
use crate::pool::{host_threads, HostPool};
use crate::sim::paced;
use gmprt_kernels::black_scholes::{self, Contract};
use gmprt_kernels::precision::Precision;
use gmprt_kernels::{monte_carlo, sgemm, KernelError};
use std::time::{Duration, Instant};

impl Device {
    /// Runs `job` once over `n` items: `input` holds the `in_words` input words (all items,
    /// in the job's layout; `in_words` and `out_words` are totals for the `n` items, as in
    /// [`Slot::run`](crate::Slot::run)); returns the `out_words` output words and the phase
    /// times. With `resident`, the input is uploaded first (untimed), then the kernel alone
    /// is timed and the output fetched untimed — the "data already on the device" figure;
    /// otherwise H2D, kernel and D2H are all timed.
    ///
    /// ```
    /// use gmprt_offload::{Device, Saxpy};
    ///
    /// // SAXPY of 2 items, a = 3: x = [1, 2] then y = [10, 20] (column-major).
    /// let input: Vec<u32> = [1.0f32, 2.0, 10.0, 20.0].iter().map(|v| v.to_bits()).collect();
    /// let d = Device::host();
    /// let (out, _times) = d.run_bulk(&Saxpy { a: 3.0 }, 2, &input, 4, 2, false).unwrap();
    /// assert_eq!(out.iter().map(|w| f32::from_bits(*w)).collect::<Vec<_>>(), [13.0, 26.0]);
    /// // Resident: the same result, and only the kernel is timed.
    /// let (again, times) = d.run_bulk(&Saxpy { a: 3.0 }, 2, &input, 4, 2, true).unwrap();
    /// assert_eq!(again, out);
    /// assert!(times.h2d.is_zero() && times.d2h.is_zero());
    /// // `input` must hold exactly `in_words` words.
    /// let e = d.run_bulk(&Saxpy { a: 3.0 }, 2, &input[..3], 4, 2, false).unwrap_err();
    /// assert!(e.to_string().contains("input words has 3 elements"), "{e}");
    /// ```
    pub fn run_bulk(
        &self,
        job: &dyn CudaJob,
        n: usize,
        input: &[u32],
        in_words: usize,
        out_words: usize,
        resident: bool,
    ) -> Result<(Vec<u32>, PhaseTimes), OffloadError> {
        if input.len() != in_words {
            return Err(
                KernelError::Shape { what: "input words", expected: in_words, got: input.len() }.into()
            );
        }
        let mut slot = self.backend().new_slot(in_words, out_words)?;
        slot.staging_in()[..in_words].copy_from_slice(input);
        let times = if resident {
            let only = |h2d, kernel, d2h| Phases { h2d, kernel, d2h };
            slot.run(job, n, in_words, out_words, only(true, false, false))?;
            let kernel = slot.run(job, n, in_words, out_words, only(false, true, false))?.kernel;
            slot.run(job, n, in_words, out_words, only(false, false, true))?;
            PhaseTimes { kernel, ..PhaseTimes::default() }
        } else {
            slot.run(job, n, in_words, out_words, Phases::ALL)?
        };
        Ok((slot.staging_out()[..out_words].to_vec(), times))
    }

    /// C = A·B, row-major (A m×k, B k×n, C m×n). Host: the GEMM crate
    /// ([`sgemm::sgemm_crate_on`]) on the [`HostPool`], timed as `kernel`; CUDA: cuBLAS with
    /// event-timed H2D, kernel and D2H; simulated: as Host, with H2D (`4(mk + kn)` bytes),
    /// kernel (`2mnk` flops of the profile's `sgemm`) and D2H (`4mn` bytes) paced by the
    /// profile.
    ///
    /// ```
    /// use gmprt_offload::Device;
    ///
    /// // [1 2; 3 4] · [5 6; 7 8] = [19 22; 43 50]
    /// let (a, b) = ([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]);
    /// let mut c = [0.0; 4];
    /// let d = Device::host();
    /// let times = d.sgemm(2, 2, 2, &a, &b, &mut c).unwrap();
    /// assert_eq!(c, [19.0, 22.0, 43.0, 50.0]);
    /// assert!(times.h2d.is_zero() && times.d2h.is_zero()); // Host: nothing to copy
    /// let e = d.sgemm(2, 2, 2, &a, &b[..3], &mut c).unwrap_err(); // B must be k×n
    /// assert!(e.to_string().contains("b has 3 elements"), "{e}");
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

    /// [`Device::sgemm`] at an explicit input [`Precision`]: FP32 is `sgemm`; TF32 and BF16
    /// round A and B to 10 and 7 mantissa bits and accumulate in FP32 — the tensor cores on
    /// CUDA (`cublasGemmStridedBatchedEx` with `CUBLAS_COMPUTE_32F_FAST_TF32` /
    /// `_FAST_16BF`), the same rounding ([`Precision::round`]) then the GEMM crate on Host and
    /// simulated devices, so every device returns what the GPU would within
    /// [`Precision::tolerance`]. The simulated device paces TF32 and BF16 by the profile's
    /// `sgemm_tf32` / `sgemm_bf16` when it has them, else by `sgemm`.
    ///
    /// ```
    /// use gmprt_offload::kernels::precision::Precision;
    /// use gmprt_offload::Device;
    ///
    /// // 1 + 2^-12 loses its last bit in TF32: the product says so.
    /// let x = 1.0 + 2f32.powi(-12);
    /// let mut c = [0.0f32];
    /// let d = Device::host();
    /// d.sgemm_with(Precision::Fp32, 1, 1, 1, &[x], &[1.0], &mut c).unwrap();
    /// assert_eq!(c[0], x);
    /// d.sgemm_with(Precision::Tf32, 1, 1, 1, &[x], &[1.0], &mut c).unwrap();
    /// assert_eq!(c[0], 1.0);
    /// ```
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
        match &*self.inner {
            Inner::Cuda(cuda) => cuda.sgemm_with(precision, m, n, k, a, b, c),
            Inner::Host(h) => {
                sgemm::check_shapes(m, n, k, a.len(), b.len(), c.len())?;
                let (a, b) = (precision.round_all(a), precision.round_all(b));
                let t = Instant::now();
                sgemm::sgemm_crate_on(HostPool::global(), m, n, k, &a, &b, c, h.threads())?;
                Ok(PhaseTimes { kernel: t.elapsed(), ..PhaseTimes::default() })
            }
            Inner::Sim(s) => {
                sgemm::check_shapes(m, n, k, a.len(), b.len(), c.len())?;
                let (a, b) = (precision.round_all(a), precision.round_all(b));
                let ((), h2d) = paced(s.h2d_time(4.0 * (m * k + k * n) as f64), || ());
                let flops = 2.0 * m as f64 * n as f64 * k as f64;
                let kernel = crate::model::sgemm_kernel_name(precision);
                let predicted = s
                    .kernel_time(kernel, flops)
                    .or_else(|| s.kernel_time("sgemm", flops))
                    .unwrap_or(Duration::ZERO);
                let (r, kernel) = paced(predicted, || {
                    sgemm::sgemm_crate_on(HostPool::global(), m, n, k, &a, &b, c, host_threads())
                });
                r?;
                let ((), d2h) = paced(s.d2h_time(4.0 * (m * n) as f64), || ());
                Ok(PhaseTimes { h2d, kernel, d2h })
            }
        }
    }

    /// π hits over `blocks` Philox blocks from `seed` (the same count as
    /// `monte_carlo::pi_hits(seed, 0, blocks)`), with the kernel's time. Host: the blocks are
    /// split over all host threads; simulated: as Host, the kernel paced by the profile's
    /// `monte_carlo` at `4 · blocks` paths (no transfers: the result is one word).
    ///
    /// ```
    /// use gmprt_offload::kernels::monte_carlo::{pi_hits, PiEstimate};
    /// use gmprt_offload::model::DeviceProfile;
    /// use gmprt_offload::Device;
    ///
    /// let (hits, _times) = Device::host().pi_hits(7, 1024).unwrap();
    /// assert_eq!(hits, pi_hits(7, 0, 1024)); // however many threads it split over
    /// let est = PiEstimate { hits, samples: 2 * 1024 }; // 2 points per block
    /// assert!((est.pi() - std::f64::consts::PI).abs() < 5.0 * est.std_error());
    /// let sim = Device::simulated(DeviceProfile::published_h100());
    /// assert_eq!(sim.pi_hits(7, 1024).unwrap().0, hits);
    /// ```
    pub fn pi_hits(&self, seed: u64, blocks: u64) -> Result<(u64, PhaseTimes), OffloadError> {
        match &*self.inner {
            Inner::Cuda(cuda) => cuda.pi_hits(seed, blocks),
            Inner::Host(h) => {
                let t = Instant::now();
                let hits = HostPool::global()
                    .split_blocks(blocks, h.threads(), |first, count| {
                        monte_carlo::pi_hits(seed, first, count)
                    })
                    .into_iter()
                    .sum();
                Ok((hits, PhaseTimes { kernel: t.elapsed(), ..PhaseTimes::default() }))
            }
            Inner::Sim(s) => {
                let predicted = s.kernel_time("monte_carlo", 4.0 * blocks as f64).unwrap_or(Duration::ZERO);
                let (hits, kernel) = paced(predicted, || {
                    HostPool::global()
                        .split_blocks(blocks, host_threads(), |first, count| {
                            monte_carlo::pi_hits(seed, first, count)
                        })
                        .into_iter()
                        .sum()
                });
                Ok((hits, PhaseTimes { kernel, ..PhaseTimes::default() }))
            }
        }
    }

    /// Sums of discounted payoffs and of their squares over the `4 * blocks` paths of
    /// `blocks` Philox blocks from `seed` (as `monte_carlo::option_paths_sum(seed, contract,
    /// 0, blocks)`; Host splits the blocks over all host threads and adds the parts in block
    /// order; simulated: as Host, the kernel paced by the profile's `monte_carlo` at
    /// `4 · blocks` paths), with the kernel's time. The contract is validated first.
    ///
    /// ```
    /// use gmprt_offload::kernels::black_scholes::{reference, Contract, OptionKind};
    /// use gmprt_offload::kernels::monte_carlo::{mc_price, option_paths_sum};
    /// use gmprt_offload::Device;
    ///
    /// let c = Contract { spot: 100.0, strike: 100.0, t: 1.0, rate: 0.05, vol: 0.2, kind: OptionKind::Call };
    /// let d = Device::host();
    /// let ((sum, sum_sq), _times) = d.option_paths_sum(3, &c, 1024).unwrap();
    /// // The same paths as one call over all blocks (the parts' sums may round differently).
    /// let (one, _) = option_paths_sum(3, &c, 0, 1024);
    /// assert!((sum - one).abs() <= 1e-9 * one);
    /// let mc = mc_price(sum, sum_sq, 4 * 1024);
    /// assert!((mc.price - reference(&c).price).abs() < 5.0 * mc.std_error);
    /// // The contract is checked before anything runs.
    /// let e = d.option_paths_sum(3, &Contract { vol: -1.0, ..c }, 1024).unwrap_err();
    /// assert!(e.to_string().contains("vol"), "{e}");
    /// ```
    pub fn option_paths_sum(
        &self,
        seed: u64,
        contract: &Contract,
        blocks: u64,
    ) -> Result<((f64, f64), PhaseTimes), OffloadError> {
        black_scholes::validate(contract, 0)?;
        match &*self.inner {
            Inner::Cuda(cuda) => cuda.option_paths_sum(seed, contract, blocks),
            Inner::Host(h) => {
                let t = Instant::now();
                let parts = HostPool::global().split_blocks(blocks, h.threads(), |first, count| {
                    monte_carlo::option_paths_sum(seed, contract, first, count)
                });
                let sums = parts.into_iter().fold((0.0, 0.0), |(s, q), (ps, pq)| (s + ps, q + pq));
                Ok((sums, PhaseTimes { kernel: t.elapsed(), ..PhaseTimes::default() }))
            }
            Inner::Sim(sim) => {
                let predicted = sim.kernel_time("monte_carlo", 4.0 * blocks as f64).unwrap_or(Duration::ZERO);
                let (sums, kernel) = paced(predicted, || {
                    let parts = HostPool::global().split_blocks(blocks, host_threads(), |first, count| {
                        monte_carlo::option_paths_sum(seed, contract, first, count)
                    });
                    parts.into_iter().fold((0.0, 0.0), |(s, q), (ps, pq)| (s + ps, q + pq))
                });
                Ok((sums, PhaseTimes { kernel, ..PhaseTimes::default() }))
            }
        }
    }

    /// [`Device::option_paths_sum`] for a batch of contracts, contract `i` on the stream of
    /// `seeds[i]`: one launch on CUDA (`gmprt_option_paths_batch`: a desk's path-dependent
    /// share pays one launch and one round trip per revaluation, not one per contract);
    /// Host and simulated split the contracts over the host threads, each contract's sums
    /// exactly `monte_carlo::option_paths_sum(seeds[i], &contracts[i], 0, blocks)`
    /// (simulated: paced by the profile's `monte_carlo` at `4 · blocks · n` paths). Every
    /// contract is validated first; the error names the first bad one.
    ///
    /// ```
    /// use gmprt_offload::kernels::black_scholes::{Contract, OptionKind};
    /// use gmprt_offload::kernels::monte_carlo::option_paths_sum;
    /// use gmprt_offload::Device;
    ///
    /// let c = Contract { spot: 100.0, strike: 95.0, t: 0.5, rate: 0.03, vol: 0.25, kind: OptionKind::Put };
    /// let d = Device::host();
    /// let (sums, _times) = d.option_paths_sum_many(&[7, 8], &[c, c], 512).unwrap();
    /// assert_eq!(sums[1], option_paths_sum(8, &c, 0, 512));
    /// // A bad contract is named before anything runs; so are unequal slices.
    /// let e = d.option_paths_sum_many(&[7, 8], &[c, Contract { t: f32::NAN, ..c }], 512).unwrap_err();
    /// assert!(e.to_string().contains("contract 1"), "{e}");
    /// assert!(d.option_paths_sum_many(&[7], &[c, c], 512).is_err());
    /// ```
    pub fn option_paths_sum_many(
        &self,
        seeds: &[u64],
        contracts: &[Contract],
        blocks: u64,
    ) -> Result<(Vec<(f64, f64)>, PhaseTimes), OffloadError> {
        paths_batch_shape(seeds.len(), contracts.len())?;
        for (i, c) in contracts.iter().enumerate() {
            black_scholes::validate(c, 0)
                .map_err(|e| OffloadError::Config(format!("option_paths_sum_many: contract {i}: {e}")))?;
        }
        let on_host = |threads: usize| -> Vec<(f64, f64)> {
            HostPool::global()
                .split_blocks(contracts.len() as u64, threads, |first, count| {
                    let r = first as usize..(first + count) as usize;
                    monte_carlo::option_paths_sum_many(&seeds[r.clone()], &contracts[r], blocks)
                        .expect("equal slices")
                })
                .into_iter()
                .flatten()
                .collect()
        };
        match &*self.inner {
            Inner::Cuda(cuda) => cuda.option_paths_sum_many(seeds, contracts, blocks),
            Inner::Host(h) => {
                let t = Instant::now();
                let sums = on_host(h.threads());
                Ok((sums, PhaseTimes { kernel: t.elapsed(), ..PhaseTimes::default() }))
            }
            Inner::Sim(sim) => {
                let paths = 4.0 * blocks as f64 * contracts.len() as f64;
                let predicted = sim.kernel_time("monte_carlo", paths).unwrap_or(Duration::ZERO);
                let (sums, kernel) = paced(predicted, || on_host(host_threads()));
                Ok((sums, PhaseTimes { kernel, ..PhaseTimes::default() }))
            }
        }
    }
}

/// `option_paths_sum_many`'s one shape rule, for the device and the CUDA backend: a seed per
/// contract.
pub(crate) fn paths_batch_shape(seeds: usize, contracts: usize) -> Result<(), OffloadError> {
    if seeds == contracts {
        return Ok(());
    }
    Err(OffloadError::Config(format!("option_paths_sum_many: {seeds} seeds for {contracts} contracts")))
}
