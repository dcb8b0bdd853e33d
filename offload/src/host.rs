//! [`HostBackend`]: the GPU pipeline played on the CPU, so that the Batcher, its timelines and
//! every example run (and are tested) on a machine without a GPU.
//!
//! Each [`Slot`] owns four buffers: the staging pair (`staging_in`, `staging_out`, what a CUDA
//! slot keeps in pinned host memory) and a separate "device" pair. A run does what a GPU run
//! does, phase by phase:
//! * **H2D**: a timed `memcpy` of the first `in_words` staging words into the device input;
//! * **kernel**: [`Job::run_host`] over the device buffers, on the calling thread (the slot's
//!   worker thread in a Batcher);
//! * **D2H**: a timed `memcpy` of the first `out_words` device output words into staging.
//!
//! Times are host clocks ([`Instant`]) around each phase, so a Host timeline has the same
//! shape as a CUDA one: transfers are cheap memcpys here, where on a GPU they cross PCIe.
//!
//! The simulated device ([`SimBackend`](crate::SimBackend)) runs the very same slot body
//! (`HostSlot<P>`, generic over a `Pacer`): the same buffers, pages mapped at creation, the
//! same over-capacity error and the same work; only its pacer stretches each phase to the
//! profile's prediction (the Host's `NoPacing` does nothing), so a simulated and a Host slot
//! compute identical outputs. There is no `unsafe` in this module.
use crate::backend::{host_available, Backend, MemoryNeed, MemoryParts, PhaseTimes, Phases, Slot};
use crate::cuda::CudaJob;
use crate::error::OffloadError;
use crate::job::Job;
use crate::pool::host_threads;
use gmprt_kernels::KernelError;
use std::time::{Duration, Instant};

/// The CPU standing in for a GPU. Cheap to create; holds no threads of its own.
///
/// ```
/// use gmprt_offload::{Backend, HostBackend, Phases, Saxpy};
/// let host = HostBackend::new(Some("no GPU in this doctest".into()));
/// assert!(host.describe().contains("no GPU in this doctest"));
/// // One slot of 2 input words and 1 output word: SAXPY of one item, 2·3 + 1.
/// let mut slot = host.new_slot(2, 1).unwrap();
/// slot.staging_in().copy_from_slice(&[3.0f32.to_bits(), 1.0f32.to_bits()]);
/// slot.run(&Saxpy { a: 2.0 }, 1, 2, 1, Phases::ALL).unwrap();
/// assert_eq!(f32::from_bits(slot.staging_out()[0]), 7.0);
/// ```
#[derive(Clone, Debug)]
pub struct HostBackend {
    threads: usize,
    reason: Option<String>,
}

impl HostBackend {
    /// A Host backend; `reason` says why it is used instead of a GPU (shown by
    /// [`Backend::describe`]), `None` when nobody asked for a GPU.
    ///
    /// ```
    /// use gmprt_offload::{Backend, HostBackend};
    ///
    /// let forced = HostBackend::new(Some("GMPRT_DEVICE=host".into()));
    /// assert_eq!(forced.describe(), format!("host ({} threads; GMPRT_DEVICE=host)", forced.threads()));
    /// let chosen = HostBackend::new(None);
    /// assert_eq!(chosen.describe(), format!("host ({} threads)", chosen.threads()));
    /// ```
    pub fn new(reason: Option<String>) -> HostBackend {
        HostBackend { threads: host_threads(), reason }
    }

    /// CPU threads available to this process ([`host_threads`]):
    /// how many parts the bulk helpers of [`Device`](crate::Device) split their work into, run
    /// on the [`HostPool`](crate::pool::HostPool).
    ///
    /// ```
    /// use gmprt_offload::HostBackend;
    ///
    /// assert_eq!(HostBackend::new(None).threads(), gmprt_offload::pool::host_threads());
    /// ```
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Why the Host backend is in use, if a reason was given.
    ///
    /// ```
    /// use gmprt_offload::HostBackend;
    ///
    /// assert_eq!(HostBackend::new(Some("no CUDA: test".into())).reason(), Some("no CUDA: test"));
    /// assert_eq!(HostBackend::new(None).reason(), None);
    /// ```
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }
}

impl Backend for HostBackend {
    fn describe(&self) -> String {
        match &self.reason {
            Some(r) => format!("host ({} threads; {r})", self.threads),
            None => format!("host ({} threads)", self.threads),
        }
    }

    /// The Host slot computes on the caller's thread (`HostSlot` with no pacing).
    fn runs_on_caller(&self) -> bool {
        true
    }

    fn new_slot(&self, in_words: usize, out_words: usize) -> Result<Box<dyn Slot>, OffloadError> {
        Ok(Box::new(HostSlot::new(in_words, out_words, NoPacing)?))
    }

    fn check_memory(&self, need: &MemoryNeed) -> Result<(), OffloadError> {
        // Staging, the "device" copies and the caller's item queues are all host memory.
        need.check("host memory", MemoryParts::ALL, &host_available())
    }
}

/// `len` zero words whose pages are already mapped. `vec![0; len]` would get lazily-zeroed
/// pages from the OS (calloc), and the first run would pay a page fault per 4 KiB inside its
/// timed copy or kernel phase — as `cudaMalloc`'d memory does not. Writing the zeros here
/// moves that cost to slot creation, like a device allocation.
///
/// The reservation is fallible (`try_reserve_exact`): an allocation the allocator refuses —
/// a size past what [`Backend::check_memory`] saw, or memory taken by someone else since —
/// is `Err(Config)` naming the buffer (`what`), its bytes and the memory available, not an
/// abort. (Memory the OS promises and cannot deliver when the zeros are written is beyond
/// any allocator's reach; the check before allocating is what prevents that.)
#[allow(clippy::slow_vector_initialization)] // on purpose: the explicit write is the point
fn touched(len: usize, what: &str) -> Result<Vec<u32>, OffloadError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|e| {
        OffloadError::Config(format!(
            "cannot allocate the {what} buffer of a slot: {len} words = {} B ({e}); {}; ask for \
             fewer items per batch or fewer slots",
            len as u128 * 4,
            host_available()
        ))
    })?;
    v.resize(len, 0);
    Ok(v)
}

/// A slot's four buffers in host memory: staging (what the caller writes and reads) and
/// separate "device" copies of the same sizes, with each phase's work.
struct HostBuffers {
    staging_in: Vec<u32>,
    staging_out: Vec<u32>,
    dev_in: Vec<u32>,
    dev_out: Vec<u32>,
}

impl HostBuffers {
    /// Buffers for `in_words` input and `out_words` output words, pages mapped ([`touched`]).
    fn new(in_words: usize, out_words: usize) -> Result<HostBuffers, OffloadError> {
        Ok(HostBuffers {
            staging_in: touched(in_words, "input staging")?,
            staging_out: touched(out_words, "output staging")?,
            dev_in: touched(in_words, "device-side input")?,
            dev_out: touched(out_words, "device-side output")?,
        })
    }

    /// `Err(Shape)` unless a run of `in_words` / `out_words` fits these buffers: the one
    /// over-capacity error of Host and simulated slots.
    fn check_shape(&self, in_words: usize, out_words: usize) -> Result<(), OffloadError> {
        if in_words > self.dev_in.len() {
            return Err(KernelError::Shape {
                what: "input words",
                expected: self.dev_in.len(),
                got: in_words,
            }
            .into());
        }
        if out_words > self.dev_out.len() {
            return Err(KernelError::Shape {
                what: "output words",
                expected: self.dev_out.len(),
                got: out_words,
            }
            .into());
        }
        Ok(())
    }

    /// H2D: staging → device-side input. Caller checked the shape.
    fn h2d(&mut self, in_words: usize) {
        self.dev_in[..in_words].copy_from_slice(&self.staging_in[..in_words]);
    }

    /// The kernel: `job` over `n` items, device-side input → device-side output. Caller
    /// checked the shape.
    fn kernel(
        &mut self,
        job: &dyn Job,
        n: usize,
        in_words: usize,
        out_words: usize,
    ) -> Result<(), OffloadError> {
        job.run_host(n, &self.dev_in[..in_words], &mut self.dev_out[..out_words])
            .map_err(|msg| OffloadError::Batch { batch: 0, kernel: job.name(), msg })
    }

    /// D2H: device-side output → staging. Caller checked the shape.
    fn d2h(&mut self, out_words: usize) {
        self.staging_out[..out_words].copy_from_slice(&self.dev_out[..out_words]);
    }
}

/// One of the three engines a phase runs on (a GPU's H2D copy engine, its compute engine, its
/// D2H copy engine): a [`Pacer`] may serialise the phases of one engine across slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Engine {
    /// Host → device copies.
    H2d = 0,
    /// Kernels.
    Kernel = 1,
    /// Device → host copies.
    D2h = 2,
}

/// How a [`HostSlot`] turns each phase's real work into its reported time. The Host device
/// reports the work's own time ([`NoPacing`]); the simulated one
/// ([`SimBackend`](crate::SimBackend)) waits on its engine, stretches the phase to the
/// profile's prediction and records what it paced to (see [`crate::sim`]).
pub(crate) trait Pacer: Send + 'static {
    /// The duration each phase in `phases` of this run is to take at least (zero: no
    /// pacing); zero for the phases not run.
    fn targets(
        &self,
        job: &dyn CudaJob,
        n: usize,
        in_words: usize,
        out_words: usize,
        phases: Phases,
    ) -> PhaseTimes;

    /// Runs one phase's `work` on `engine`, paced to `target`; returns its result and the
    /// phase's measured time (from the work's start, after any wait for the engine).
    fn phase<T>(&self, engine: Engine, target: Duration, work: impl FnOnce() -> T) -> (T, Duration);

    /// The duration an upload of `ranges` (input words, one copy each) is to take at least
    /// (zero: no pacing).
    fn upload_target(&self, ranges: &[std::ops::Range<usize>]) -> Duration;

    /// Called after every successful run with its targets and measured times.
    fn record(
        &self,
        job: &dyn Job,
        n: usize,
        in_words: usize,
        out_words: usize,
        target: PhaseTimes,
        measured: PhaseTimes,
    );
}

/// The Host device's [`Pacer`]: each phase takes what its work takes, timed by the host clock;
/// nothing is recorded.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NoPacing;

impl Pacer for NoPacing {
    fn targets(&self, _: &dyn CudaJob, _: usize, _: usize, _: usize, _: Phases) -> PhaseTimes {
        PhaseTimes::default()
    }

    fn phase<T>(&self, _: Engine, _: Duration, work: impl FnOnce() -> T) -> (T, Duration) {
        let t = Instant::now();
        let out = work();
        (out, t.elapsed())
    }

    fn upload_target(&self, _: &[std::ops::Range<usize>]) -> Duration {
        Duration::ZERO
    }

    fn record(&self, _: &dyn Job, _: usize, _: usize, _: usize, _: PhaseTimes, _: PhaseTimes) {}
}

/// One Host or simulated "stream": [`HostBuffers`], each phase run through the pacer `P`
/// ([`NoPacing`] on the Host device, the [`SimBackend`](crate::SimBackend) on a simulated
/// one). The one body both devices run, so they allocate, check and compute alike.
pub(crate) struct HostSlot<P: Pacer> {
    buf: HostBuffers,
    pacer: P,
}

impl<P: Pacer> HostSlot<P> {
    /// A slot of `in_words` input and `out_words` output words (pages mapped), paced by
    /// `pacer`. `Err(Config)` naming the buffer when the memory cannot be had.
    pub(crate) fn new(in_words: usize, out_words: usize, pacer: P) -> Result<HostSlot<P>, OffloadError> {
        Ok(HostSlot { buf: HostBuffers::new(in_words, out_words)?, pacer })
    }
}

impl<P: Pacer> Slot for HostSlot<P> {
    fn staging_in(&mut self) -> &mut [u32] {
        &mut self.buf.staging_in
    }

    fn staging_out(&self) -> &[u32] {
        &self.buf.staging_out
    }

    fn run(
        &mut self,
        job: &dyn CudaJob,
        n: usize,
        in_words: usize,
        out_words: usize,
        phases: Phases,
    ) -> Result<PhaseTimes, OffloadError> {
        self.buf.check_shape(in_words, out_words)?;
        let target = self.pacer.targets(job, n, in_words, out_words, phases);
        let mut times = PhaseTimes::default();
        let (buf, pacer) = (&mut self.buf, &self.pacer);
        if phases.h2d {
            times.h2d = pacer.phase(Engine::H2d, target.h2d, || buf.h2d(in_words)).1;
        }
        if phases.kernel {
            let (r, t) =
                pacer.phase(Engine::Kernel, target.kernel, || buf.kernel(job, n, in_words, out_words));
            r?;
            times.kernel = t;
        }
        if phases.d2h {
            times.d2h = pacer.phase(Engine::D2h, target.d2h, || buf.d2h(out_words)).1;
        }
        pacer.record(job, n, in_words, out_words, target, times);
        Ok(times)
    }

    fn upload(&mut self, ranges: &[std::ops::Range<usize>]) -> Result<Duration, OffloadError> {
        let plan = crate::upload::upload_plan(ranges, self.buf.dev_in.len())?;
        let target = self.pacer.upload_target(&plan);
        let buf = &mut self.buf;
        let ((), t) = self.pacer.phase(Engine::H2d, target, || {
            for r in &plan {
                buf.dev_in[r.clone()].copy_from_slice(&buf.staging_in[r.clone()]);
            }
        });
        Ok(t)
    }
}
