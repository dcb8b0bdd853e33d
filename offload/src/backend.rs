//! What a device must provide to run one batch: a [`Backend`] makes [`Slot`]s; a slot is one
//! stream with its own pinned staging buffers and device buffers, reused for every batch it
//! runs. A [`Job`] says how to compute a batch on either kind of device.
//!
//! Protocol of one batch on a slot (the Batcher's slot worker drives it, one batch at a time
//! per slot; two slots give two batches in flight, so the copy of one overlaps the kernel of
//! the other on a GPU):
//! 1. the worker writes the batch's input words into [`Slot::staging_in`] (column-major,
//!    stride `n`, see `gmprt_kernels`' crate docs);
//! 2. [`Slot::run`] enqueues H2D of `in_words`, the job's launch over `n` items, D2H of
//!    `out_words`, waits for all three, and returns their device-measured times (CUDA events;
//!    host clocks on Host);
//! 3. the worker reads results from [`Slot::staging_out`].
//!
//! [`Phases`] lets a caller run a subset — upload once and then time the kernel alone, which
//! is how "data already on the device" is measured.
use crate::error::OffloadError;
use std::time::Duration;

/// How to compute a batch of `n` items on each kind of device.
pub trait Job: Sync {
    /// Short kernel name for timelines and errors (`"black_scholes"`).
    fn name(&self) -> &'static str;
    /// Host: compute `output` words from `input` words (both column-major, stride `n`).
    /// An `Err` fails the whole batch with that message.
    fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String>;
    /// CUDA: enqueue the computation on `ctx`'s stream, reading `ctx`'s input buffer and
    /// writing its output buffer. Must not synchronise.
    fn launch_cuda(&self, ctx: &mut crate::cuda::LaunchCtx<'_>, n: usize) -> Result<(), OffloadError>;
}

/// Which phases [`Slot::run`] performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phases {
    /// Copy the staged input to the device buffer.
    pub h2d: bool,
    /// Launch the job.
    pub kernel: bool,
    /// Copy the device output buffer back to the staging output.
    pub d2h: bool,
}

impl Phases {
    /// All three phases.
    pub const ALL: Phases = Phases { h2d: true, kernel: true, d2h: true };
}

/// Device-side time of each phase of one run (zero for a phase not run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseTimes {
    /// Host → device copy.
    pub h2d: Duration,
    /// Kernel (launch to completion).
    pub kernel: Duration,
    /// Device → host copy.
    pub d2h: Duration,
}

/// A device able to create execution slots.
pub trait Backend: Send + Sync {
    /// One line naming the device: `cuda:0 NVIDIA H200 (sm_90, driver 13.0)` or `host (...)`.
    fn describe(&self) -> String;
    /// A slot whose buffers hold `in_words` input and `out_words` output words.
    fn new_slot(&self, in_words: usize, out_words: usize) -> Result<Box<dyn Slot>, OffloadError>;
}

/// One stream plus its reusable buffers. Owned by one thread at a time.
pub trait Slot: Send {
    /// Pinned (on CUDA) input staging; the first `in_words` of a run are uploaded.
    fn staging_in(&mut self) -> &mut [u32];
    /// Output staging; valid after a run with `d2h`.
    fn staging_out(&self) -> &[u32];
    /// Runs the selected phases for a batch of `n` items and waits for them. On error the
    /// slot stays usable for the next batch.
    fn run(
        &mut self,
        job: &dyn Job,
        n: usize,
        in_words: usize,
        out_words: usize,
        phases: Phases,
    ) -> Result<PhaseTimes, OffloadError>;
}
