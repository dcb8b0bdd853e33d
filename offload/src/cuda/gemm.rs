//! The cuBLAS GEMMs over the word layout: the batched SGEMM a slot launches (FP32, TF32 or
//! BF16 by [`Precision`]), its untimed first call per shape, and the one-shot `gemm_f32`; all
//! enqueued on the caller's stream and never synchronised here. Same protocol as the `launch`
//! module: sizes are checked against the buffers first (an error, never an out-of-bounds call).

use super::launch::need;
use super::{driver_err, CudaBackend, LaunchCtx};
use crate::error::OffloadError;
use cudarc::cublas::{Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::driver::{CudaStream, CudaView, CudaViewMut};
use gmprt_kernels::precision::Precision;
use std::sync::{Arc, OnceLock};

/// Runs [`launch_sgemm_batched`] once, untimed, the first time `ctx`'s stream meets an
/// (m, n, k) shape, and does nothing after that: the first cuBLAS call of a shape does host
/// work (heuristics, kernel choice, module loads) while the GPU idles (the H200 timed a first
/// 123×77×45 GEMM at 71.6 ms), which must not land in a timed phase. For
/// [`CudaJob::prepare_cuda`](crate::job::CudaJob::prepare_cuda), before a slot's first event; what it computes from the
/// not-yet-uploaded input is overwritten by the run's own launch (beta = 0). Keyed like the
/// one-shot `CudaBackend::sgemm`'s warm-up (stream, m, n, k), so batch sizes share it.
pub fn warm_sgemm_batched(
    ctx: &mut LaunchCtx<'_>,
    count: usize,
    m: usize,
    n: usize,
    k: usize,
) -> Result<(), OffloadError> {
    let Some(backend) = ctx.backend.as_any().downcast_ref::<CudaBackend>() else {
        return Ok(()); // not gmprt's backend: nothing of ours to warm
    };
    let key = (ctx.stream.cu_stream() as usize, m, n, k, Precision::Fp32);
    if backend.inner.gemm_warm.lock().contains(&key) {
        return Ok(());
    }
    launch_sgemm_batched(ctx, count, m, n, k)?;
    backend.inner.gemm_warm.lock().insert(key);
    Ok(())
}

/// Enqueues `count` independent products C_i = A_i·B_i (m×k by k×n, row-major) as one
/// strided-batched cuBLAS call. Input words: all A_i (count·m·k) then all B_i (count·k·n);
/// output words: all C_i (count·m·n). `k = 0` writes zeros (empty sums) without cuBLAS;
/// no output element enqueues nothing; short buffers are `Err(Kernel(Shape))`.
///
/// # Examples
///
/// A job of two 2×2 products whose CUDA side is this launch (as
/// [`SmallSgemm`](crate::SmallSgemm)'s is). It runs on the Host slot everywhere, and on a
/// CUDA slot too where a GPU and cuBLAS are usable (skipped without them, so this passes on
/// CI):
///
/// ```
/// use gmprt_offload::cuda::{launch_sgemm_batched, CudaBackend, CudaJob, LaunchCtx};
/// use gmprt_offload::kernels::sgemm;
/// use gmprt_offload::{loaded_libraries, Backend, Device, Job, OffloadError, Phases, Slot};
///
/// struct TwoByTwo;
/// impl Job for TwoByTwo {
///     fn name(&self) -> &'static str { "2x2" }
///     fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
///         sgemm::sgemm_batched_words(n, 2, 2, 2, input, output).map_err(|e| e.to_string())
///     }
/// }
/// impl CudaJob for TwoByTwo {
///     fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
///         launch_sgemm_batched(ctx, n, 2, 2, 2)
///     }
/// }
///
/// // A_0 = [[1, 2], [3, 4]], A_1 = 2·I; then B_0 = I, B_1 = [[5, 6], [7, 8]] (row-major).
/// let input: Vec<u32> = [1.0f32, 2.0, 3.0, 4.0, 2.0, 0.0, 0.0, 2.0, 1.0, 0.0, 0.0, 1.0, 5.0, 6.0, 7.0, 8.0]
///     .iter()
///     .map(|v| v.to_bits())
///     .collect();
/// let want = [1.0f32, 2.0, 3.0, 4.0, 10.0, 12.0, 14.0, 16.0]; // C_0 = A_0, C_1 = 2·B_1
/// let run = |slot: &mut Box<dyn Slot>| -> Result<Vec<f32>, OffloadError> {
///     slot.staging_in().copy_from_slice(&input);
///     slot.run(&TwoByTwo, 2, 16, 8, Phases::ALL)?;
///     Ok(slot.staging_out().iter().map(|w| f32::from_bits(*w)).collect())
/// };
/// assert_eq!(run(&mut Device::host().backend().new_slot(16, 8).unwrap()).unwrap(), want);
/// if let Ok(gpu) = CudaBackend::new(0) {
///     // The slot gets its cuBLAS handle when cuBLAS is usable (and it is then listed).
///     let mut slot = gpu.new_slot(16, 8).unwrap();
///     let cublas = loaded_libraries().iter().any(|l| l.name == "libcublas");
///     match run(&mut slot) {
///         Ok(c) => assert!(cublas && c == want, "{c:?}"),
///         // Without cuBLAS the batch fails, and says why.
///         Err(e) => assert!(!cublas && e.to_string().contains("cublas"), "{e}"),
///     }
/// }
/// ```
pub fn launch_sgemm_batched(
    ctx: &mut LaunchCtx<'_>,
    count: usize,
    m: usize,
    n: usize,
    k: usize,
) -> Result<(), OffloadError> {
    let mat = |r: usize, c: usize| r.checked_mul(c).and_then(|rc| rc.checked_mul(count));
    let overflow = || OffloadError::Config(format!("sgemm batch {count} × ({m}×{k} · {k}×{n}) overflows"));
    let (a_len, b_len, c_len) =
        (mat(m, k).ok_or_else(overflow)?, mat(k, n).ok_or_else(overflow)?, mat(m, n).ok_or_else(overflow)?);
    if c_len == 0 {
        return Ok(()); // no output element: nothing to compute
    }
    need(
        "device input words (sgemm A and B)",
        a_len.checked_add(b_len).ok_or_else(overflow)?,
        1,
        ctx.input.len(),
    )?;
    need("device output words (sgemm C)", c_len, 1, ctx.output.len())?;
    if k == 0 {
        // Empty sums: C = 0, without asking cuBLAS about a zero inner dimension.
        let mut c = ctx.output.slice_mut(..c_len);
        return ctx.stream.memset_zeros(&mut c).map_err(|e| driver_err("cuMemsetD8Async", e));
    }
    let a = ctx.input.slice(..a_len);
    let b = ctx.input.slice(a_len..a_len + b_len);
    // SAFETY: u32 and f32 have the same size and alignment and every bit pattern is a valid
    // f32; the lengths are the views' own.
    let (a32, b32) = unsafe { (a.transmute::<f32>(a_len), b.transmute::<f32>(b_len)) };
    let mut c = ctx.output.slice_mut(..c_len);
    // SAFETY: as above.
    let c32 = unsafe { c.transmute_mut::<f32>(c_len) };
    match (a32, b32, c32) {
        (Some(a32), Some(b32), Some(mut c32)) => {
            // cuBLAS handles are gmprt's CUDA backend's own: a launch device of another kind
            // has none to lend.
            let backend = ctx.backend.as_any().downcast_ref::<CudaBackend>().ok_or_else(|| {
                OffloadError::Config(format!(
                    "the batched SGEMM needs gmprt's CUDA backend for its cuBLAS handles, not {}",
                    ctx.backend.name()
                ))
            })?;
            gemm_f32(backend, ctx.stream, Precision::Fp32, count, m, n, k, &a32, &b32, &mut c32)
        }
        _ => {
            Err(OffloadError::Driver { op: "sgemm views".into(), msg: "view reinterpretation failed".into() })
        }
    }
}

/// Whether libcublas can be used: present (cudarc panics on a missing library), not a stub,
/// CUDA 13's (see [`super::libs`]). Checked once per process; its path and version
/// (`cublasGetProperty`) are logged and kept for [`super::loaded_libraries`].
pub(crate) fn cublas_available() -> Result<(), OffloadError> {
    static STATE: OnceLock<Result<(), String>> = OnceLock::new();
    let state = STATE.get_or_init(|| {
        // SAFETY: `is_culib_present` only tries to dlopen the candidate names; no precondition.
        if !unsafe { cudarc::cublas::sys::is_culib_present() } {
            return Err("no libcublas.so (cuBLAS not found: install the CUDA toolkit's cuBLAS, or \
                        put the directory holding libcublas.so.13 and libcublasLt.so.13 on \
                        LD_LIBRARY_PATH)"
                .to_string());
        }
        use cudarc::cublas::sys::libraryPropertyType as P;
        let prop = |p: P| {
            let mut v = 0;
            // SAFETY: the library is present (checked above), so cudarc's loader does not
            // panic; the pointer is valid for one write; cublasGetProperty needs no handle.
            unsafe { cudarc::cublas::sys::cublasGetProperty(p, &mut v) }
                .result()
                .map(|()| u32::try_from(v).unwrap_or(0))
                .map_err(|e| format!("libcublas loads but cublasGetProperty failed: {e}"))
        };
        let (major, minor, patch) = (prop(P::MAJOR_VERSION)?, prop(P::MINOR_VERSION)?, prop(P::PATCH_LEVEL)?);
        super::libs::check_loaded(super::libs::CudaLib::Cublas, major, &format!("{major}.{minor}.{patch}"))
            .map(|_| ())
    });
    state.clone().map_err(|msg| OffloadError::Driver { op: "cublasCreate".into(), msg })
}

/// `count` row-major products C_i = A_i·B_i (m×k by k×n) on `stream`, one strided-batched
/// cuBLAS call, with the stream's own cuBLAS handle (created on first use).
///
/// Row-major trick: cuBLAS is column-major, and a row-major r×c matrix is the column-major
/// c×r matrix of its transpose. So C (row-major m×n) = A·B is computed as the column-major
/// product Cᵀ = Bᵀ·Aᵀ: cuBLAS's (m', n', k') = (n, m, k), its first operand Bᵀ (n×k, leading
/// dimension n), its second Aᵀ (k×m, leading dimension k), result Cᵀ (n×m, leading dimension
/// n) — no transposition is ever performed, only the roles swap.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_f32(
    backend: &CudaBackend,
    stream: &Arc<CudaStream>,
    precision: Precision,
    count: usize,
    m: usize,
    n: usize,
    k: usize,
    a: &CudaView<'_, f32>,
    b: &CudaView<'_, f32>,
    c: &mut CudaViewMut<'_, f32>,
) -> Result<(), OffloadError> {
    let int = |v: usize, what: &str| {
        i32::try_from(v).map_err(|_| OffloadError::Config(format!("sgemm {what} = {v} exceeds cuBLAS's int")))
    };
    let stride = |r: usize, col: usize| {
        r.checked_mul(col)
            .and_then(|v| i64::try_from(v).ok())
            .ok_or_else(|| OffloadError::Config(format!("sgemm stride {r}×{col} exceeds i64")))
    };
    let cfg = StridedBatchedConfig {
        gemm: GemmConfig {
            transa: cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N,
            transb: cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N,
            m: int(n, "n")?,
            n: int(m, "m")?,
            k: int(k, "k")?,
            alpha: 1.0f32,
            lda: int(n, "n")?,
            // cuBLAS requires ld >= max(1, rows); k = 0 never gets here, but keep ld valid.
            ldb: int(k.max(1), "k")?,
            beta: 0.0f32,
            ldc: int(n, "n")?,
        },
        batch_size: int(count, "count")?,
        stride_a: stride(k, n)?,
        stride_b: stride(m, k)?,
        stride_c: stride(m, n)?,
    };
    // Normally a no-op: slots and the one-shot `sgemm` create their stream's handle before
    // their first event (`CudaBackend::ensure_blas`); this only catches a stream that was not
    // warmed (its creation is then counted in `FirstUse` and lands in the caller's span).
    backend.ensure_blas(stream)?;
    let key = stream.cu_stream() as usize;
    // The map's lock only to find the handle: held across the call it serialised the GEMMs
    // of every slot (issue 27).
    let Some(handle) = backend.inner.blas.lock().get(&key).cloned() else {
        return Err(OffloadError::Driver {
            op: "cublasSgemmStridedBatched".into(),
            msg: "the stream's cuBLAS handle was dropped while in use".into(),
        });
    };
    let blas = handle.lock();
    let compute = match precision {
        Precision::Fp32 => {
            // SAFETY: cfg describes exactly the views: first operand Bᵀ is `count` blocks of k·n
            // floats (b, length count·k·n), second Aᵀ `count` blocks of m·k (a), result `count`
            // blocks of m·n (c), with leading dimensions within each block as derived above; the
            // handle is bound to `stream`, the stream all three views are used on.
            return unsafe { blas.gemm_strided_batched(cfg, b, a, c) }.map_err(|e| OffloadError::Driver {
                op: "cublasSgemmStridedBatched".into(),
                msg: e.to_string(),
            });
        }
        Precision::Tf32 => cudarc::cublas::sys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32,
        Precision::Bf16 => cudarc::cublas::sys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_16BF,
    };
    use cudarc::driver::{DevicePtr, DevicePtrMut};
    let f32_t = cudarc::cublas::sys::cudaDataType_t::CUDA_R_32F;
    let (alpha, beta) = (cfg.gemm.alpha, cfg.gemm.beta);
    // Event tracking is off for this context (module docs): the records these return do nothing.
    let (bp, _rb) = b.device_ptr(stream);
    let (ap, _ra) = a.device_ptr(stream);
    let (cp, _rc) = c.device_ptr_mut(stream);
    // SAFETY: the same operands, shapes, strides and leading dimensions as the FP32 call above
    // (cfg), as FP32 data (CUDA_R_32F) in device memory owned by the three views for the whole
    // call; alpha and beta are host scalars (the handle's default pointer mode); the handle is
    // bound to `stream`. The compute type only tells cuBLAS to round the inputs to TF32/BF16 on
    // the tensor cores and accumulate in FP32.
    unsafe {
        cudarc::cublas::result::gemm_strided_batched_ex(
            *blas.handle(),
            cfg.gemm.transa,
            cfg.gemm.transb,
            cfg.gemm.m,
            cfg.gemm.n,
            cfg.gemm.k,
            (&alpha) as *const f32 as *const _,
            bp as *const _,
            f32_t,
            cfg.gemm.lda,
            cfg.stride_a,
            ap as *const _,
            f32_t,
            cfg.gemm.ldb,
            cfg.stride_b,
            (&beta) as *const f32 as *const _,
            cp as *mut _,
            f32_t,
            cfg.gemm.ldc,
            cfg.stride_c,
            cfg.batch_size,
            compute,
            cudarc::cublas::sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
    }
    .map_err(|e| OffloadError::Driver {
        op: format!("cublasGemmStridedBatchedEx ({precision})"),
        msg: e.to_string(),
    })
}
