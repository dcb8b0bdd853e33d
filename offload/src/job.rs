//! What a slot runs: a [`Job`] computes a batch on the host (device-neutral), a [`CudaJob`] is
//! a job that can also be launched on a CUDA slot, with the [`LaunchCtx`] its launch gets.
//!
//! A leaf of the crate's modules: it names no backend. The CUDA device a launch uses is reached
//! through [`LaunchDevice`] (its name, SM count and compiled functions), which
//! `cuda::CudaBackend` implements, so `backend.rs` (slots, which run `&dyn CudaJob`) and
//! `cuda/` (the CUDA backend, which implements `backend.rs`'s traits) both depend on this file
//! and not on each other: the circle `backend.rs ↔ cuda/` that issue 27 (item 9) asked to break.
//! The paths `gmprt_offload::Job` and `gmprt_offload::cuda::{CudaJob, LaunchCtx}` still name
//! these items (re-exported).
use crate::error::OffloadError;
use cudarc::driver::{CudaFunction, CudaStream, CudaView, CudaViewMut};
use gmprt_kernels::cuda::CudaSource;
use std::sync::Arc;

/// How to compute a batch of `n` items on the host, device-neutral: what placement, the CPU
/// side of a Batcher and the Host and simulated slots need. The CUDA launch of the same job
/// is [`CudaJob`].
///
/// ```
/// use gmprt_offload::Job;
/// /// Doubles every word: a host-only job.
/// struct Double;
/// impl Job for Double {
///     fn name(&self) -> &'static str {
///         "double"
///     }
///     fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
///         output[..n].iter_mut().zip(input).for_each(|(o, i)| *o = 2 * i);
///         Ok(())
///     }
/// }
/// let mut out = [0; 3];
/// Double.run_host(3, &[1, 2, 3], &mut out).unwrap();
/// assert_eq!(out, [2, 4, 6]);
/// ```
pub trait Job: Sync {
    /// Short kernel name for timelines and errors (`"black_scholes"`).
    fn name(&self) -> &'static str;
    /// Host: compute `output` words from `input` words (both column-major, stride `n`).
    /// An `Err` fails the whole batch with that message.
    fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String>;
}

/// The CUDA device as a launch sees it ([`LaunchCtx::backend`]): what a [`CudaJob`] needs to
/// enqueue its kernel. `cuda::CudaBackend` implements it.
///
/// ```
/// use gmprt_offload::cuda::{CudaBackend, LaunchDevice};
///
/// // Where a GPU is usable (skipped without one, so this passes on CI):
/// if let Ok(gpu) = CudaBackend::new(0) {
///     let d: &dyn LaunchDevice = &gpu;
///     assert!(d.sm_count() > 0 && !d.name().is_empty());
///     assert!(d.as_any().downcast_ref::<CudaBackend>().is_some());
/// }
/// ```
pub trait LaunchDevice: Sync {
    /// The device's name (`NVIDIA H200`), for errors.
    fn name(&self) -> &str;
    /// Streaming multiprocessors, for grid sizes.
    fn sm_count(&self) -> u32;
    /// `function` of `src`, compiled (NVRTC) and loaded once per device, then looked up.
    fn function(&self, src: &CudaSource, function: &str) -> Result<CudaFunction, OffloadError>;
    /// The device as `Any`, so gmprt's own launches can reach the rest of its backend (the
    /// cuBLAS handles) by downcasting.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// What a [`CudaJob`] gets to enqueue its launch on a CUDA slot.
///
/// # Examples
///
/// A job that copies its input words to its output with the context's stream and buffers
/// (a device-to-device copy, no kernel). It runs on the Host slot everywhere, and on a CUDA
/// slot too where a GPU is usable (skipped without one, so this passes on CI):
///
/// ```
/// use gmprt_offload::cuda::{CudaBackend, CudaJob, LaunchCtx};
/// use gmprt_offload::{Backend, Device, Job, OffloadError, Phases};
///
/// struct Copy;
/// impl Job for Copy {
///     fn name(&self) -> &'static str { "copy" }
///     fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
///         output[..n].copy_from_slice(&input[..n]);
///         Ok(())
///     }
/// }
/// impl CudaJob for Copy {
///     fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
///         let (src, mut dst) = (ctx.input.slice(..n), ctx.output.slice_mut(..n));
///         ctx.stream.memcpy_dtod(&src, &mut dst).map_err(|e| OffloadError::Driver {
///             op: format!("cuMemcpyDtoDAsync on {}", ctx.backend.name()),
///             msg: e.to_string(),
///         })
///     }
/// }
///
/// let run_on = |backend: &dyn Backend| {
///     let mut slot = backend.new_slot(3, 3).unwrap();
///     slot.staging_in().copy_from_slice(&[7, 8, 9]);
///     slot.run(&Copy, 3, 3, 3, Phases::ALL).unwrap();
///     slot.staging_out().to_vec()
/// };
/// assert_eq!(run_on(Device::host().backend()), [7, 8, 9]);
/// if let Ok(gpu) = CudaBackend::new(0) {
///     assert_eq!(run_on(&gpu), [7, 8, 9]);
/// }
/// ```
pub struct LaunchCtx<'a> {
    /// The slot's stream; launches go here.
    pub stream: &'a Arc<CudaStream>,
    /// The device input buffer (first `n * in_words_per_item` words are the batch).
    pub input: CudaView<'a, u32>,
    /// The device output buffer.
    pub output: CudaViewMut<'a, u32>,
    /// The device: its name, SM count and compiled functions ([`LaunchDevice`]); gmprt's own
    /// CUDA backend behind it (`cuda::CudaBackend`, reached with [`LaunchDevice::as_any`]) also
    /// holds the slot stream's cuBLAS handle.
    pub backend: &'a dyn LaunchDevice,
}

/// A [`Job`] that can also be launched on a CUDA slot: what a [`Slot`](crate::Slot) runs
/// (Host and simulated slots call [`Job::run_host`], a CUDA slot
/// [`launch_cuda`](CudaJob::launch_cuda)). A job with no CUDA kernel returns an error from
/// `launch_cuda`.
///
/// # Examples
///
/// A host-only job: its CUDA side says so. It runs on the Host slot; on a CUDA slot (where a
/// GPU is usable; skipped without one, so this passes on CI) its batch fails with that error.
///
/// ```
/// use gmprt_offload::cuda::{CudaBackend, CudaJob, LaunchCtx};
/// use gmprt_offload::{Backend, Device, Job, OffloadError, Phases};
///
/// struct Count;
/// impl Job for Count {
///     fn name(&self) -> &'static str { "count" }
///     fn run_host(&self, n: usize, _input: &[u32], output: &mut [u32]) -> Result<(), String> {
///         (0..n).for_each(|i| output[i] = i as u32);
///         Ok(())
///     }
/// }
/// impl CudaJob for Count {
///     fn launch_cuda(&self, _ctx: &mut LaunchCtx<'_>, _n: usize) -> Result<(), OffloadError> {
///         Err(OffloadError::Config("count has no CUDA kernel".into()))
///     }
/// }
///
/// let mut slot = Device::host().backend().new_slot(0, 4).unwrap();
/// slot.run(&Count, 4, 0, 4, Phases::ALL).unwrap();
/// assert_eq!(slot.staging_out(), [0, 1, 2, 3]);
/// if let Ok(gpu) = CudaBackend::new(0) {
///     let mut slot = gpu.new_slot(0, 4).unwrap();
///     let err = slot.run(&Count, 4, 0, 4, Phases::ALL).unwrap_err();
///     assert_eq!(err, OffloadError::Config("count has no CUDA kernel".into()));
/// }
/// ```
pub trait CudaJob: Job {
    /// Enqueues the computation of `n` items on `ctx`'s stream, reading `ctx`'s input buffer
    /// and writing its output buffer. Must not synchronise.
    fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError>;

    /// Untimed work a CUDA slot does before a run's first event, when the run launches the
    /// job: what only the first launch of a shape costs on the host (cuBLAS choosing and
    /// loading its kernel), so that no timed phase holds it. Same stream and buffers as the
    /// launch; the input is not uploaded yet (it holds the previous batch's words, or zeros),
    /// so whatever this computes must be overwritten by the launch. Default: nothing.
    fn prepare_cuda(&self, _ctx: &mut LaunchCtx<'_>, _n: usize) -> Result<(), OffloadError> {
        Ok(())
    }

    /// Whether the launch reads each input word at most once and writes each output word at
    /// most once, with plain loads and stores (no atomics, no re-reads): then a small run may
    /// hand the launch the slot's pinned host buffers themselves, mapped into the device's
    /// address space, instead of device copies of them, and skip both copies (see
    /// [`MAPPED_IO_MAX_BYTES`](crate::cuda::MAPPED_IO_MAX_BYTES)). Each access then crosses
    /// PCIe, which only pays while the copies' fixed cost dominates. Default: `false` (a GEMM
    /// reads each input word many times).
    fn streams_io(&self) -> bool {
        false
    }
}
