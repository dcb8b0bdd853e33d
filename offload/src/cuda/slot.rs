//! [`CudaSlot`]: one CUDA stream with its own pinned staging buffers, device buffers and
//! timing events, all allocated once in [`CudaSlot::new`] and reused by every run.
//!
//! Protocol of [`Slot::run`] (all on the slot's stream, in this order):
//! `ev[0]`, H2D of `in_words` (pinned in → device in), `ev[1]`, the job's launch, `ev[2]`,
//! D2H of `out_words` (device out → pinned out), `ev[3]`; then the host waits on `ev[3]`.
//! Events are recorded at every boundary whether or not the phase runs (a mapped run, below,
//! excepted), and a phase not asked for is reported as zero. Because the host waits on `ev[3]` before
//! `run` returns (and synchronises the stream when a run fails half-way), no copy is in flight
//! when the owner next writes [`Slot::staging_in`] or reads [`Slot::staging_out`]: the
//! staging slices are handed out only between runs (`run` takes `&mut self`, so the borrow
//! checker keeps them apart). The device buffers are only ever touched on this stream, so
//! stream order protects them (event tracking is off for the backend; see `cuda`'s docs).
//!
//! **Mapped I/O.** A small run — all three phases, input and output together at most
//! [`MAPPED_IO_MAX_BYTES`], of a job that [streams its I/O](CudaJob::streams_io) — skips both
//! copies: the launch is handed the pinned staging buffers themselves, through their device
//! addresses (`cuMemHostGetDevicePointer`; both are allocated `CU_MEMHOSTALLOC_DEVICEMAP`), so
//! the kernel reads its input and writes its output across PCIe. With unified addressing (every
//! 64-bit process) all pinned host memory is mapped into every context and the device address
//! is the host address (the driver API's *Unified Addressing* section); the explicit flag and
//! the lookup keep the slot correct where it is not. Such a run records only `ev[0]` and `ev[3]`
//! around its launch: it has no copy phases to time, and two back-to-back event records cost
//! ~1.3 µs of device time each pair on the H200 (`benches/results/h200-2026-11-27b/`), which a
//! run of four events reported as H2D and D2H time. So it reports zero H2D and D2H and its
//! whole span, the bytes' crossing included, as kernel time. The
//! guarantee above is unchanged: the kernel is the last reader of the input staging and the
//! last writer of the output staging, and `run` waits for it. A slot whose buffers the driver
//! will not map (`mapped` is `None`: a failed lookup) copies every run, and so does every slot
//! of a backend opened with `GMPRT_CUDA_MAPPED_IO=off` ([`MAPPED_IO_ENV`]): a switch for a
//! platform where reads across PCIe are slow, and for comparing both paths with one binary.
//!
//! Buffers: the input staging is pinned *write-combined* memory (`CU_MEMHOSTALLOC_WRITECOMBINED`):
//! host writes bypass the caches and stream over PCIe faster, but host *reads* of it are
//! uncached and very slow — fill it, do not read it back. The output staging is ordinary
//! pinned memory (read by the host). Both are zeroed at creation, so every word is
//! initialised before any slice of it exists.
//!
//! The end event is created with `CU_EVENT_BLOCKING_SYNC` (sync mode `blocking` or `auto`,
//! see `super::sync`): the worker thread sleeps in the driver instead of spinning for the
//! whole batch, leaving its core to the runtime's workers (the price is a few microseconds of
//! wake-up latency per batch); with `GMPRT_CUDA_SYNC=spin` it is a plain event and the
//! context's spin flag makes the worker poll. Under `auto` (the default) the worker first
//! polls the event for [`SPIN_BEFORE_BLOCK`] and only then sleeps on it: a tiny batch,
//! done within that, returns without the sleep and the interrupt wake-up (issue 27, item 4);
//! `blocking` sleeps at once, as asked.
//!
//! First use: [`CudaSlot::new`] compiles/loads every module and creates the stream's cuBLAS
//! handle, so `CudaJob::launch_cuda` only finds cached functions and an existing handle inside
//! the timed `ev[1]..ev[2]` span.
use super::{driver_err, event_span, phase_times, CudaBackend, CudaJob, LaunchCtx, SyncMode};
use crate::backend::{Phases, Slot};
use crate::error::OffloadError;
use crate::PhaseTimes;
use cudarc::driver::sys::{
    self, CUevent_flags, CUresult, CU_MEMHOSTALLOC_DEVICEMAP, CU_MEMHOSTALLOC_WRITECOMBINED,
};
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, PinnedHostSlice};
use gmprt_kernels::KernelError;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A CUDA [`Slot`]: stream, pinned staging, device buffers, four timing events.
///
/// # Examples
///
/// Runs with or without a GPU (without one, `new` fails and the GPU part is skipped); with
/// a GPU, the SAXPY kernel needs NVRTC:
///
/// ```
/// use gmprt_offload::cuda::{nvrtc, CudaBackend, CudaSlot};
/// use gmprt_offload::{OffloadError, Phases, Saxpy, Slot};
///
/// match CudaBackend::new(0) {
///     Ok(gpu) if nvrtc::available().is_ok() => {
///         let mut slot = CudaSlot::new(gpu, 4, 2).unwrap();
///         let words: Vec<u32> = [1.0f32, 2.0, 10.0, 20.0].iter().map(|v| v.to_bits()).collect();
///         slot.staging_in().copy_from_slice(&words); // x = [1, 2], y = [10, 20]
///         slot.run(&Saxpy { a: 3.0 }, 2, 4, 2, Phases::ALL).unwrap();
///         let out: Vec<f32> = slot.staging_out().iter().map(|w| f32::from_bits(*w)).collect();
///         assert_eq!(out, [13.0, 26.0]);
///         // A run larger than the buffers is refused before anything is enqueued.
///         let err = slot.run(&Saxpy { a: 3.0 }, 4, 8, 4, Phases::ALL).unwrap_err();
///         assert!(err.to_string().contains("slot input buffer"), "{err}");
///     }
///     Ok(_) => {} // a GPU without NVRTC: no kernel to run
///     // No GPU here (CI): nothing opened, the reason in the error.
///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
/// }
/// ```
pub struct CudaSlot {
    backend: CudaBackend,
    stream: Arc<CudaStream>,
    dev_in: CudaSlice<u32>,
    dev_out: CudaSlice<u32>,
    pinned_in: PinnedHostSlice<u32>,
    pinned_out: PinnedHostSlice<u32>,
    /// `pinned_in`'s data (valid for `pinned_in.len()` words while `pinned_in` lives).
    in_ptr: *mut u32,
    /// `pinned_out`'s data (valid for `pinned_out.len()` words while `pinned_out` lives).
    out_ptr: *mut u32,
    /// Capacity in words as asked for (the allocations hold at least one word).
    in_words: usize,
    out_words: usize,
    /// Boundaries: before H2D, before the kernel, before D2H, after D2H.
    events: [CudaEvent; 4],
    /// `pinned_in` and `pinned_out` seen from the device (mapped I/O, see the module docs), or
    /// `None` where the driver would not map them. They do not own the memory: `Drop` leaks
    /// them before `pinned_*` free it.
    mapped: Option<(CudaSlice<u32>, CudaSlice<u32>)>,
}

/// The largest run, input plus output bytes, that uses mapped I/O (see the module docs): 64 KiB.
/// A pinned copy costs a fixed ~3–5 µs before its bytes move (the H100 profile's fits:
/// intercepts 4.8 µs H2D and 3.0 µs D2H, slopes ~52 GB/s, `offload/profiles/h100-measured-2026-11-27.json`),
/// as long as its slope takes for ~150–250 KB. Mapped reads and writes have no fixed cost but
/// cross PCIe per access, at a lower rate than the copy engines'; a quarter of the break-even
/// keeps a mapped run's transfers well under the two copies' fixed costs it saves.
pub const MAPPED_IO_MAX_BYTES: usize = 64 << 10;

/// The environment variable that can turn mapped I/O off: `GMPRT_CUDA_MAPPED_IO`.
pub const MAPPED_IO_ENV: &str = "GMPRT_CUDA_MAPPED_IO";

/// Whether `GMPRT_CUDA_MAPPED_IO` allows mapped I/O: unset, empty, `on` or `1` allow it (the
/// default), `off` or `0` turn it off (case and surrounding spaces ignored); anything else is
/// `Err(Config)` naming the variable, the value and the accepted values. Read once per backend,
/// at [`CudaBackend::new`].
///
/// # Examples
///
/// ```
/// use gmprt_offload::cuda::{mapped_io_from_env, MAPPED_IO_ENV};
///
/// // SAFETY (every block below): a doctest runs in its own process, and this one starts no
/// // thread.
/// unsafe { std::env::remove_var(MAPPED_IO_ENV) };
/// assert!(mapped_io_from_env().unwrap());
/// unsafe { std::env::set_var(MAPPED_IO_ENV, " OFF ") };
/// assert!(!mapped_io_from_env().unwrap());
/// unsafe { std::env::set_var(MAPPED_IO_ENV, "sometimes") };
/// let e = mapped_io_from_env().unwrap_err().to_string();
/// assert!(e.contains("GMPRT_CUDA_MAPPED_IO must be `on` or `off`") && e.contains("got `sometimes`"), "{e}");
/// unsafe { std::env::remove_var(MAPPED_IO_ENV) };
/// ```
pub fn mapped_io_from_env() -> Result<bool, OffloadError> {
    let got = match std::env::var(MAPPED_IO_ENV) {
        Err(std::env::VarError::NotPresent) => return Ok(true),
        Err(std::env::VarError::NotUnicode(v)) => format!("a non-UTF-8 value {v:?}"),
        Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
            "" | "on" | "1" => return Ok(true),
            "off" | "0" => return Ok(false),
            _ => format!("`{v}`"),
        },
    };
    Err(OffloadError::Config(format!("{MAPPED_IO_ENV} must be `on` or `off` (unset means on); got {got}")))
}

/// The device address of pinned host memory at `host` (allocated with
/// `CU_MEMHOSTALLOC_DEVICEMAP` in the bound context), or `None` if the driver does not give one.
fn device_address(host: *mut u32) -> Option<sys::CUdeviceptr> {
    let mut dptr: sys::CUdeviceptr = 0;
    // SAFETY: `host` is the start of a live `cuMemHostAlloc` allocation of the context bound
    // to this thread; the call only writes `dptr`.
    let r = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dptr, host.cast(), 0) };
    (r == CUresult::CUDA_SUCCESS && dptr != 0).then_some(dptr)
}

// SAFETY: the raw pointers point into `pinned_in` / `pinned_out`, which this value owns and
// which cudarc already declares `Send`; they are dereferenced only through `&self` /
// `&mut self` methods, so moving the slot to another thread moves the only access path.
unsafe impl Send for CudaSlot {}

impl CudaSlot {
    /// A slot on `backend` whose buffers hold `in_words` input and `out_words` output words.
    ///
    /// Warm-up (so that no run's event span contains a first-use cost): every embedded
    /// module is compiled and loaded when NVRTC is usable (once per backend; later slots
    /// find them cached), and
    /// this slot's stream gets its cuBLAS handle now when cuBLAS is usable (a missing or
    /// refused cuBLAS fails only a GEMM job, with the reason). The costs are counted in
    /// [`CudaBackend::first_use`](super::CudaBackend::first_use).
    ///
    /// # Examples
    ///
    /// Runs with or without a GPU (without one, the GPU part is skipped):
    ///
    /// ```
    /// use gmprt_offload::cuda::{nvrtc, CudaBackend, CudaSlot};
    /// use gmprt_offload::kernels::cuda::ALL;
    /// use gmprt_offload::OffloadError;
    ///
    /// match CudaBackend::new(0) {
    ///     Ok(gpu) => {
    ///         let slot = CudaSlot::new(gpu.clone(), 1024, 512).unwrap();
    ///         assert_eq!(slot.capacity(), (1024, 512));
    ///         // Warm-up happened here, not in a run: every module compiled (with NVRTC).
    ///         if nvrtc::available().is_ok() {
    ///             assert_eq!(gpu.first_use().modules as usize, ALL.len());
    ///         }
    ///     }
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn new(backend: CudaBackend, in_words: usize, out_words: usize) -> Result<CudaSlot, OffloadError> {
        let ctx = backend.context().clone();
        ctx.bind_to_thread().map_err(|e| driver_err("cuCtxSetCurrent", e))?;
        // Best effort: a module that cannot be compiled here (no NVRTC, a compile error)
        // fails only the job that launches it, with the reason, as before.
        let _ = backend.warm_modules();
        let stream = ctx.new_stream().map_err(|e| driver_err("cuStreamCreate", e))?;

        // Zero-length allocations are refused by some driver calls: keep at least one word.
        let (cap_in, cap_out) = (in_words.max(1), out_words.max(1));
        let (cap_in_bytes, cap_out_bytes) = (cap_in.checked_mul(4), cap_out.checked_mul(4));
        if cap_in_bytes.is_none_or(|b| b > isize::MAX as usize)
            || cap_out_bytes.is_none_or(|b| b > isize::MAX as usize)
        {
            return Err(OffloadError::Config(format!(
                "slot of {in_words} input / {out_words} output words is too large"
            )));
        }
        // DEVICEMAP: the device may address them too (mapped I/O, see the module docs).
        let flags_in = CU_MEMHOSTALLOC_WRITECOMBINED | CU_MEMHOSTALLOC_DEVICEMAP;
        // SAFETY: the memory is uninitialised when returned; it is zeroed below before any
        // slice of it is formed.
        let mut pinned_in = unsafe { ctx.alloc_pinned_with_flags::<u32>(cap_in, flags_in) }
            .map_err(|e| driver_err("cuMemHostAlloc(WRITECOMBINED | DEVICEMAP)", e))?;
        // SAFETY: as above (ordinary page-locked memory, mapped).
        let mut pinned_out =
            unsafe { ctx.alloc_pinned_with_flags::<u32>(cap_out, CU_MEMHOSTALLOC_DEVICEMAP) }
                .map_err(|e| driver_err("cuMemHostAlloc(DEVICEMAP)", e))?;
        // `as_mut_ptr` waits on the buffer's event, never recorded yet: returns at once.
        let in_ptr = pinned_in.as_mut_ptr().map_err(|e| driver_err("cuEventSynchronize", e))?;
        let out_ptr = pinned_out.as_mut_ptr().map_err(|e| driver_err("cuEventSynchronize", e))?;
        // SAFETY: each pointer is valid for writes of its buffer's length (cudarc allocated
        // `len` u32s, aligned), and nothing else refers to the buffers yet.
        unsafe {
            std::ptr::write_bytes(in_ptr, 0, cap_in);
            std::ptr::write_bytes(out_ptr, 0, cap_out);
        }
        let dev_in =
            stream.alloc_zeros::<u32>(cap_in).map_err(|e| driver_err("cuMemAllocAsync(input)", e))?;
        let dev_out =
            stream.alloc_zeros::<u32>(cap_out).map_err(|e| driver_err("cuMemAllocAsync(output)", e))?;
        let events = backend.phase_events()?;
        let lookup = |p| if backend.mapped_io() { device_address(p) } else { None };
        let mapped = match (lookup(in_ptr), lookup(out_ptr)) {
            // SAFETY: each address is the device view of a pinned allocation of `cap_*` u32s
            // that this slot owns; the slices never free it (`Drop` leaks them first), and
            // event tracking is off for the backend, so they record nothing of their own.
            (Some(i), Some(o)) => unsafe {
                Some((
                    stream.upgrade_device_ptr::<u32>(i, cap_in),
                    stream.upgrade_device_ptr::<u32>(o, cap_out),
                ))
            },
            _ => None,
        };
        // The allocations and memsets are stream-ordered: finish them so the slot starts idle.
        stream.synchronize().map_err(|e| driver_err("cuStreamSynchronize", e))?;
        // Last fallible step (nothing to undo after it): this stream's cuBLAS handle, when
        // cuBLAS is usable.
        if super::gemm::cublas_available().is_ok() {
            backend.ensure_blas(&stream)?;
        }
        Ok(CudaSlot {
            backend,
            stream,
            dev_in,
            dev_out,
            pinned_in,
            pinned_out,
            in_ptr,
            out_ptr,
            in_words,
            out_words,
            events,
            mapped,
        })
    }

    /// The slot's stream (non-blocking, this slot's alone).
    ///
    /// # Examples
    ///
    /// Runs with or without a GPU (without one, the GPU part is skipped):
    ///
    /// ```
    /// use gmprt_offload::cuda::{CudaBackend, CudaSlot};
    /// use gmprt_offload::OffloadError;
    /// use std::sync::Arc;
    ///
    /// match CudaBackend::new(0) {
    ///     Ok(gpu) => {
    ///         let (a, b) = (CudaSlot::new(gpu.clone(), 4, 4).unwrap(), CudaSlot::new(gpu.clone(), 4, 4).unwrap());
    ///         // Two slots, two streams (so their copies and kernels can overlap), one context.
    ///         assert_ne!(a.stream().cu_stream(), b.stream().cu_stream());
    ///         assert!(Arc::ptr_eq(a.stream().context(), gpu.context()));
    ///     }
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Input and output capacity in words, as asked for (even 0; the allocations hold at
    /// least one word).
    ///
    /// # Examples
    ///
    /// Runs with or without a GPU (without one, the GPU part is skipped):
    ///
    /// ```
    /// use gmprt_offload::cuda::{CudaBackend, CudaSlot};
    /// use gmprt_offload::{OffloadError, Slot};
    ///
    /// match CudaBackend::new(0) {
    ///     Ok(gpu) => {
    ///         let mut slot = CudaSlot::new(gpu, 0, 6).unwrap();
    ///         assert_eq!(slot.capacity(), (0, 6));
    ///         assert_eq!((slot.staging_in().len(), slot.staging_out().len()), (0, 6));
    ///     }
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn capacity(&self) -> (usize, usize) {
        (self.in_words, self.out_words)
    }

    /// What a job's launch (and its untimed preparation) gets: this slot's stream and the first
    /// `in_words` / `out_words` of its device buffers, or of its mapped staging when `mapped`
    /// (the caller checked that the slot has it).
    fn launch_ctx(&mut self, in_words: usize, out_words: usize, mapped: bool) -> LaunchCtx<'_> {
        debug_assert!(!mapped || self.mapped.is_some());
        let (input, output) = match &mut self.mapped {
            Some((i, o)) if mapped => (i.slice(..in_words), o.slice_mut(..out_words)),
            _ => (self.dev_in.slice(..in_words), self.dev_out.slice_mut(..out_words)),
        };
        LaunchCtx { stream: &self.stream, input, output, backend: &self.backend }
    }

    /// Enqueues the selected phases with their boundary events (only `ev[0]` and `ev[3]` for a
    /// mapped run); does not wait. Returns whether the run is mapped.
    fn enqueue(
        &mut self,
        job: &dyn CudaJob,
        n: usize,
        in_words: usize,
        out_words: usize,
        phases: Phases,
    ) -> Result<bool, OffloadError> {
        let record =
            |ev: &CudaEvent, s: &CudaStream| ev.record(s).map_err(|e| driver_err("cuEventRecord", e));
        let mapped = self.maps_io(job, in_words, out_words, phases);
        if phases.kernel {
            // Before the first event: a first launch's host work is not a phase (CudaJob::prepare_cuda).
            job.prepare_cuda(&mut self.launch_ctx(in_words, out_words, mapped), n)?;
        }
        record(&self.events[0], &self.stream)?;
        if mapped {
            job.launch_cuda(&mut self.launch_ctx(in_words, out_words, true), n)?;
            record(&self.events[3], &self.stream)?;
            return Ok(true);
        }
        if phases.h2d && in_words > 0 {
            // SAFETY: `in_ptr` is valid for `pinned_in.len() >= in_words` initialised words
            // (checked by `run`); `&mut self` excludes any other access until `run` returns,
            // and `run` waits for this copy before returning.
            let src = unsafe { std::slice::from_raw_parts(self.in_ptr, in_words) };
            let mut dst = self.dev_in.slice_mut(..in_words);
            self.stream.memcpy_htod(src, &mut dst).map_err(|e| driver_err("cuMemcpyHtoDAsync", e))?;
        }
        record(&self.events[1], &self.stream)?;
        if phases.kernel {
            job.launch_cuda(&mut self.launch_ctx(in_words, out_words, false), n)?;
        }
        record(&self.events[2], &self.stream)?;
        if phases.d2h && out_words > 0 {
            // SAFETY: `out_ptr` is valid for `pinned_out.len() >= out_words` words (checked by
            // `run`); no shared borrow of it can exist while `&mut self` is held, and `run`
            // waits for this copy before handing out `staging_out` again.
            let dst = unsafe { std::slice::from_raw_parts_mut(self.out_ptr, out_words) };
            let src = self.dev_out.slice(..out_words);
            self.stream.memcpy_dtoh(&src, dst).map_err(|e| driver_err("cuMemcpyDtoHAsync", e))?;
        }
        record(&self.events[3], &self.stream)?;
        Ok(false)
    }
}

impl Slot for CudaSlot {
    /// Mapped I/O (see the module docs): all three phases, a job that streams its I/O, at most
    /// [`MAPPED_IO_MAX_BYTES`] in and out, and buffers the driver maps.
    fn maps_io(&self, job: &dyn CudaJob, in_words: usize, out_words: usize, phases: Phases) -> bool {
        phases == Phases::ALL
            && self.mapped.is_some()
            && (in_words + out_words).saturating_mul(4) <= MAPPED_IO_MAX_BYTES
            && job.streams_io()
    }

    fn staging_in(&mut self) -> &mut [u32] {
        debug_assert!(self.pinned_in.len() >= self.in_words);
        // SAFETY: valid for `in_words` initialised words (zeroed at creation); no device
        // copy reads it now (every `run` waits for its copies before returning), and the
        // `&mut self` borrow makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.in_ptr, self.in_words) }
    }

    fn staging_out(&self) -> &[u32] {
        debug_assert!(self.pinned_out.len() >= self.out_words);
        // SAFETY: valid for `out_words` initialised words; no device copy writes it now (as
        // above), and `run`, the only writer, needs `&mut self`, which this borrow excludes.
        unsafe { std::slice::from_raw_parts(self.out_ptr, self.out_words) }
    }

    fn run(
        &mut self,
        job: &dyn CudaJob,
        n: usize,
        in_words: usize,
        out_words: usize,
        phases: Phases,
    ) -> Result<PhaseTimes, OffloadError> {
        if in_words > self.in_words {
            return Err(KernelError::Shape {
                what: "slot input buffer",
                expected: in_words,
                got: self.in_words,
            }
            .into());
        }
        if out_words > self.out_words {
            return Err(KernelError::Shape {
                what: "slot output buffer",
                expected: out_words,
                got: self.out_words,
            }
            .into());
        }
        self.backend.context().bind_to_thread().map_err(|e| driver_err("cuCtxSetCurrent", e))?;
        let done = self
            .enqueue(job, n, in_words, out_words, phases)
            .and_then(|mapped| self.backend.wait_end(&self.events[3]).map(|()| mapped));
        match done {
            // A mapped run's one span is its kernel time (the module docs).
            Ok(true) => {
                Ok(PhaseTimes { kernel: event_span(&self.events[0], &self.events[3])?, ..Default::default() })
            }
            Ok(false) => phase_times(&self.events, phases),
            Err(e) => {
                // Part of the run may be queued: let it finish before the caller touches the
                // staging buffers again (its own error, if any, is the one already reported).
                let _ = self.stream.synchronize();
                Err(e)
            }
        }
    }

    fn upload(&mut self, ranges: &[std::ops::Range<usize>]) -> Result<Duration, OffloadError> {
        let plan = crate::upload::upload_plan(ranges, self.in_words)?;
        self.backend.context().bind_to_thread().map_err(|e| driver_err("cuCtxSetCurrent", e))?;
        let record =
            |ev: &CudaEvent, s: &CudaStream| ev.record(s).map_err(|e| driver_err("cuEventRecord", e));
        let enqueue = |slot: &mut CudaSlot| -> Result<(), OffloadError> {
            record(&slot.events[0], &slot.stream)?;
            for r in &plan {
                // SAFETY: `in_ptr` is valid for `in_words` initialised words and every range
                // lies within them (`upload_plan` checked); `&mut self` excludes any other
                // access, and we wait for the copies before returning.
                let src = unsafe { std::slice::from_raw_parts(slot.in_ptr.add(r.start), r.len()) };
                let mut dst = slot.dev_in.slice_mut(r.clone());
                slot.stream.memcpy_htod(src, &mut dst).map_err(|e| driver_err("cuMemcpyHtoDAsync", e))?;
            }
            // The other three events close the copy phase, so `wait` and `phase_times` apply.
            for ev in &slot.events[1..] {
                record(ev, &slot.stream)?;
            }
            Ok(())
        };
        // The same wait as `run`'s: an upload of a few KB is done within the spin, and a
        // blocking wait would add its sleep and wake-up (~18 µs more on the H100,
        // benches/results/h100-2026-11-27) to every resident batch's two round trips.
        let done = enqueue(self).and_then(|()| self.backend.wait_end(&self.events[3]));
        if let Err(e) = done {
            let _ = self.stream.synchronize();
            return Err(e);
        }
        Ok(phase_times(&self.events, Phases { h2d: true, kernel: false, d2h: false })?.h2d)
    }
}

/// How long a slot's run polls its last event under `GMPRT_CUDA_SYNC=auto` before it sleeps on
/// it: 20 µs. On the H200 an empty launch's round trip took 8.9 µs spinning and 19.8 µs
/// blocking (`CudaBackend::launch_costs`, means of 1,000; `benches/results/h200-2026-11-26/`):
/// a batch done within about the cost of the sleep and wake-up returns without them, and a
/// longer one holds its worker's core at most 20 µs more before it sleeps.
pub const SPIN_BEFORE_BLOCK: Duration = Duration::from_micros(20);

impl CudaBackend {
    /// The four phase events of a slot or of the utility stream (H2D start, kernel start,
    /// D2H start, end), on this backend's context. The end event's flags follow the sync mode
    /// (`super::sync`): blocking (and auto) sleep in the driver; spin leaves it to the
    /// context's spin flag. Blocking sync keeps timing enabled (only DISABLE_TIMING turns it
    /// off).
    pub(crate) fn phase_events(&self) -> Result<[CudaEvent; 4], OffloadError> {
        let timing =
            |flags| self.inner.ctx.new_event(Some(flags)).map_err(|e| driver_err("cuEventCreate", e));
        Ok([
            timing(CUevent_flags::CU_EVENT_DEFAULT)?,
            timing(CUevent_flags::CU_EVENT_DEFAULT)?,
            timing(CUevent_flags::CU_EVENT_DEFAULT)?,
            timing(match self.sync_mode() {
                SyncMode::Spin => CUevent_flags::CU_EVENT_DEFAULT,
                SyncMode::Blocking | SyncMode::Auto => CUevent_flags::CU_EVENT_BLOCKING_SYNC,
            })?,
        ])
    }

    /// Waits for a run's end event (a slot's, or a one-shot operation's on the utility
    /// stream): polls it for up to [`SPIN_BEFORE_BLOCK`] under `GMPRT_CUDA_SYNC=auto` (else
    /// not at all: the context's flag and the event's decide how `cuEventSynchronize` waits),
    /// then sleeps on it. The caller has bound the context to this thread.
    pub(crate) fn wait_end(&self, ev: &CudaEvent) -> Result<(), OffloadError> {
        let spin = if self.sync_mode() == SyncMode::Auto { SPIN_BEFORE_BLOCK } else { Duration::ZERO };
        wait(ev, spin)
    }
}

/// Waits for `ev`: polls it (`cuEventQuery`) for up to `spin`, then `cuEventSynchronize`. The
/// caller has bound the context to this thread.
fn wait(ev: &CudaEvent, spin: Duration) -> Result<(), OffloadError> {
    if !spin.is_zero() {
        let t = Instant::now();
        loop {
            if ev.try_is_complete().map_err(|e| driver_err("cuEventQuery", e))? {
                return Ok(());
            }
            if t.elapsed() >= spin {
                break;
            }
            std::hint::spin_loop();
        }
    }
    ev.synchronize().map_err(|e| driver_err("cuEventSynchronize", e))
}

impl Drop for CudaSlot {
    fn drop(&mut self) {
        // Nothing is in flight after a completed `run`; synchronise anyway (a job may have
        // panicked after enqueueing), then drop this stream's cuBLAS handle, which holds
        // the stream. The buffers are freed on this stream afterwards, in stream order.
        let _ = self.stream.synchronize();
        // cuBLAS's destroy acts on the current context (see `Inner`'s drop).
        let _ = self.backend.context().bind_to_thread();
        let key = self.stream.cu_stream() as usize;
        let blas = self.backend.inner.blas.lock().remove(&key);
        drop(blas);
        // The mapped views do not own their memory (`pinned_*` do, freed after this).
        if let Some((i, o)) = self.mapped.take() {
            let _ = (i.leak(), o.leak());
        }
    }
}
