//! The test jobs (`CudaJob`s over a slot's staging) and the helpers the `[gpu]` tests share.

use super::*;

pub(super) fn f32s(words: &[u32]) -> Vec<f32> {
    words.iter().map(|&w| f32::from_bits(w)).collect()
}

/// A deterministic f32 in [-1, 1) from an index (splitmix-style hash).
pub(super) fn det(i: u64, salt: u64) -> f32 {
    let mut z = i.wrapping_add(salt.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((z >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
}

// ------------------------------------------------------------------------ test jobs ---

pub(super) struct BsJob;
impl Job for BsJob {
    fn name(&self) -> &'static str {
        "black_scholes"
    }
    fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
        black_scholes::price_greeks_words(n, input, output).map_err(|e| e.to_string())
    }
}

impl CudaJob for BsJob {
    fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
        cuda::launch_black_scholes(ctx, n)
    }
}

pub(super) struct SaxpyJob(pub(super) f32);
impl Job for SaxpyJob {
    fn name(&self) -> &'static str {
        "saxpy"
    }
    fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
        for i in 0..n {
            output[i] = self.0.mul_add(f32::from_bits(input[i]), f32::from_bits(input[n + i])).to_bits();
        }
        Ok(())
    }
}

impl CudaJob for SaxpyJob {
    fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
        cuda::launch_saxpy(ctx, n, self.0)
    }
}

/// `count` products of m×k by k×n; `n` passed to `run` is `count`.
pub(super) struct GemmJob {
    pub(super) m: usize,
    pub(super) n: usize,
    pub(super) k: usize,
}
impl Job for GemmJob {
    fn name(&self) -> &'static str {
        "sgemm_batched"
    }
    fn run_host(&self, _: usize, _: &[u32], _: &mut [u32]) -> Result<(), String> {
        Err("not used".into())
    }
}

impl CudaJob for GemmJob {
    fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, count: usize) -> Result<(), OffloadError> {
        cuda::launch_sgemm_batched(ctx, count, self.m, self.n, self.k)
    }
}

/// The calibration kernels: `gmprt_empty`, then `gmprt_copy` of the input to the output.
pub(super) struct CopyJob;
impl Job for CopyJob {
    fn name(&self) -> &'static str {
        "copy"
    }
    fn run_host(&self, _: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
        output.copy_from_slice(input);
        Ok(())
    }
}

impl CudaJob for CopyJob {
    fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, words: usize) -> Result<(), OffloadError> {
        use cudarc::driver::{LaunchConfig, PushKernelArg};
        let err = |op: &str, e: cudarc::driver::DriverError| OffloadError::Driver {
            op: op.into(),
            msg: e.to_string(),
        };
        let empty = ctx.backend.function(&CALIB, FN_EMPTY)?;
        let copy = ctx.backend.function(&CALIB, FN_COPY)?;
        // SAFETY: gmprt_empty takes no argument.
        unsafe { ctx.stream.launch_builder(&empty).launch(LaunchConfig::for_num_elems(1)) }
            .map_err(|e| err("launch gmprt_empty", e))?;
        assert_eq!(words % 4, 0);
        let n4 = (words / 4) as u64;
        let mut b = ctx.stream.launch_builder(&copy);
        b.arg(&ctx.input).arg(&mut ctx.output).arg(&n4);
        let cfg = LaunchConfig {
            grid_dim: (cuda::grid_size(n4, ctx.backend.sm_count()), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: (const float4*, float4*, size_t n4): both views hold >= 4·n4 words (the
        // slot was made for `words`), device buffers are 256-byte aligned.
        unsafe { b.launch(cfg) }.map_err(|e| err("launch gmprt_copy", e))?;
        Ok(())
    }
}

/// Stages `contracts`, runs them on a fresh slot, returns the output words.
pub(super) fn run_bs(b: &CudaBackend, contracts: &[Contract]) -> Vec<u32> {
    let n = contracts.len();
    let mut slot = b.new_slot(n * IN_WORDS, n * OUT_WORDS).expect("slot");
    black_scholes::stage_words(contracts, slot.staging_in());
    let t = slot.run(&BsJob, n, n * IN_WORDS, n * OUT_WORDS, Phases::ALL).expect("run");
    println!("black_scholes n={n}: {t:?}");
    slot.staging_out().to_vec()
}
