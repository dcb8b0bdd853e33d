//! What a device must provide to run one batch: a [`Backend`] makes [`Slot`]s; a slot is one
//! stream with its own pinned staging buffers and device buffers, reused for every batch it
//! runs. What a slot runs is a [`CudaJob`]: a [`Job`] (how to compute a batch on the host)
//! that can also be launched on a GPU; both traits live in [`crate::job`].
//!
//! Dependencies: this module names no device type. The job type of [`Slot::run`], `&dyn
//! CudaJob`, comes from `job.rs`, a leaf that reaches the CUDA device through a trait, so
//! `backend.rs` and `cuda/` (which implements these traits) do not depend on each other's
//! files in a circle: a slot of any backend may be handed the same job (Host and simulated
//! slots call its [`Job::run_host`], CUDA slots its [`CudaJob::launch_cuda`]).
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
use crate::job::CudaJob;
/// Re-exported from [`crate::job`], where it lives (this path predates that file).
pub use crate::job::Job;
use std::fmt;
use std::time::Duration;

/// Which phases [`Slot::run`] performs.
///
/// ```
/// use gmprt_offload::{Device, Phases, Saxpy};
///
/// let mut slot = Device::host().backend().new_slot(2, 1).unwrap();
/// slot.staging_in().copy_from_slice(&[2.0f32.to_bits(), 1.0f32.to_bits()]); // x = 2, y = 1
/// // Upload only: the kernel and D2H take no time and leave the output as it was.
/// let upload = Phases { h2d: true, kernel: false, d2h: false };
/// let t = slot.run(&Saxpy { a: 3.0 }, 1, 2, 1, upload).unwrap();
/// assert!(t.kernel.is_zero() && t.d2h.is_zero());
/// assert_eq!(slot.staging_out(), [0]);
/// ```
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
    ///
    /// ```
    /// use gmprt_offload::{Device, Phases, Saxpy};
    ///
    /// assert!(Phases::ALL.h2d && Phases::ALL.kernel && Phases::ALL.d2h);
    /// let mut slot = Device::host().backend().new_slot(2, 1).unwrap();
    /// slot.staging_in().copy_from_slice(&[2.0f32.to_bits(), 1.0f32.to_bits()]);
    /// slot.run(&Saxpy { a: 3.0 }, 1, 2, 1, Phases::ALL).unwrap();
    /// assert_eq!(f32::from_bits(slot.staging_out()[0]), 7.0); // 3·2 + 1, uploaded and back
    /// ```
    pub const ALL: Phases = Phases { h2d: true, kernel: true, d2h: true };
}

/// Device-side time of each phase of one run (zero for a phase not run).
///
/// ```
/// use gmprt_offload::{Device, PhaseTimes, Saxpy};
///
/// let input = [2.0f32.to_bits(), 1.0f32.to_bits()];
/// // Resident: the input is uploaded and the output fetched untimed, so only the kernel counts.
/// let (out, t) = Device::host().run_bulk(&Saxpy { a: 3.0 }, 1, &input, 2, 1, true).unwrap();
/// assert_eq!(f32::from_bits(out[0]), 7.0);
/// assert_eq!(t, PhaseTimes { kernel: t.kernel, ..PhaseTimes::default() });
/// ```
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
///
/// ```
/// use gmprt_offload::model::DeviceProfile;
/// use gmprt_offload::{Backend, HostBackend, MemoryNeed, SimBackend};
///
/// let backends: [Box<dyn Backend>; 2] =
///     [Box::new(HostBackend::new(None)), Box::new(SimBackend::new(DeviceProfile::published_h100()))];
/// // Check the memory once for all the slots, then make them.
/// let need = MemoryNeed { slots: 2, items: 256, in_words: 2, out_words: 1, queues: 0, item_bytes: 0 };
/// for b in &backends {
///     b.check_memory(&need).unwrap();
///     let mut slots: Vec<_> = (0..need.slots).map(|_| b.new_slot(256 * 2, 256).unwrap()).collect();
///     assert_eq!((slots[1].staging_in().len(), slots[1].staging_out().len()), (512, 256));
/// }
/// assert!(backends[0].describe().starts_with("host ("));
/// assert!(backends[1].describe().starts_with("simulated from NVIDIA H100"));
/// ```
pub trait Backend: Send + Sync {
    /// One line naming the device: `cuda:0 NVIDIA H200 (sm_90, driver 13.0)` or `host (...)`.
    fn describe(&self) -> String;
    /// A slot whose buffers hold `in_words` input and `out_words` output words. Running out
    /// of memory is an `Err`, never an abort.
    fn new_slot(&self, in_words: usize, out_words: usize) -> Result<Box<dyn Slot>, OffloadError>;
    /// Checks that `need` fits the memory this backend would put each part of it in, before
    /// any of it is allocated: [`MemoryNeed::check`] once per memory (host memory for all of
    /// it on the Host and simulated devices; pinned host memory for the staging and GPU
    /// memory for the device-side copies on CUDA). `Err(Config)` names the bytes needed and
    /// available. A caller that makes several slots asks once, for all of them.
    fn check_memory(&self, need: &MemoryNeed) -> Result<(), OffloadError>;
    /// Whether a slot's [`Slot::run`] computes on the calling thread and never waits (no
    /// stream to wait on, no pacing to sleep out), so a Batcher may run a batch inline on the
    /// runtime M that closes it instead of handing it to a slot worker thread. `true` only for
    /// the Host device; the default is `false`, and a Batcher then runs every batch on its
    /// slot workers.
    fn runs_on_caller(&self) -> bool {
        false
    }
}

/// One stream plus its reusable buffers. Owned by one thread at a time.
///
/// Uploading once and then timing the kernel alone (data resident on the device):
/// ```
/// use gmprt_offload::{Device, Phases, Saxpy};
/// let mut slot = Device::host().backend().new_slot(4, 2).unwrap();
/// let words: Vec<u32> = [1.0f32, 2.0, 10.0, 20.0].iter().map(|x| x.to_bits()).collect();
/// slot.staging_in().copy_from_slice(&words); // x = [1, 2], y = [10, 20]
/// let only = |h2d, kernel, d2h| Phases { h2d, kernel, d2h };
/// slot.run(&Saxpy { a: 3.0 }, 2, 4, 2, only(true, false, false)).unwrap();
/// let t = slot.run(&Saxpy { a: 3.0 }, 2, 4, 2, only(false, true, false)).unwrap();
/// assert!(t.h2d.is_zero() && t.d2h.is_zero()); // phases not run take no time
/// slot.run(&Saxpy { a: 3.0 }, 2, 4, 2, only(false, false, true)).unwrap();
/// assert_eq!(slot.staging_out().iter().map(|w| f32::from_bits(*w)).collect::<Vec<_>>(), [13.0, 26.0]);
/// ```
pub trait Slot: Send {
    /// Pinned (on CUDA) input staging; the first `in_words` of a run are uploaded.
    ///
    /// Write-only for the host: on CUDA it is write-combined memory, whose host reads are
    /// uncached (10-50x slower than ordinary memory). Fill it and upload it; never read it
    /// back, and never compute on the CPU from it (the Batcher stages a CPU-placed batch into
    /// ordinary host memory instead).
    fn staging_in(&mut self) -> &mut [u32];
    /// Output staging; valid after a run with `d2h`.
    fn staging_out(&self) -> &[u32];
    /// Runs the selected phases for a batch of `n` items and waits for them. On error the
    /// slot stays usable for the next batch.
    fn run(
        &mut self,
        job: &dyn CudaJob,
        n: usize,
        in_words: usize,
        out_words: usize,
        phases: Phases,
    ) -> Result<PhaseTimes, OffloadError>;
    /// Uploads only the word `ranges` of the input staging to the device-side input and waits:
    /// one copy per run of ranges that touch or overlap (`upload.rs`: the same plan on every
    /// backend; 500 adjacent segments go up as one copy, not 500 driver calls); the rest of
    /// the device-side input keeps what earlier uploads left there. For data that stays on the
    /// device between runs: upload it all once (a run with `h2d`), then per run only what
    /// changed, and run with `h2d: false`. Returns the copies' time. A range past the slot's
    /// input is an error naming it, and nothing is copied.
    ///
    /// ```
    /// use gmprt_offload::{Device, Phases, Saxpy};
    /// let mut slot = Device::host().backend().new_slot(4, 2).unwrap();
    /// let words: Vec<u32> = [1.0f32, 2.0, 10.0, 20.0].iter().map(|x| x.to_bits()).collect();
    /// slot.staging_in().copy_from_slice(&words); // x = [1, 2], y = [10, 20]
    /// let all = Phases { h2d: true, kernel: true, d2h: true };
    /// slot.run(&Saxpy { a: 3.0 }, 2, 4, 2, all).unwrap();
    /// // x[1] changes: one word goes up, the rest stays resident.
    /// slot.staging_in()[1] = 5.0f32.to_bits();
    /// slot.upload(&[1..2]).unwrap();
    /// slot.run(&Saxpy { a: 3.0 }, 2, 4, 2, Phases { h2d: false, ..all }).unwrap();
    /// assert_eq!(slot.staging_out().iter().map(|w| f32::from_bits(*w)).collect::<Vec<_>>(), [13.0, 35.0]);
    /// assert!(slot.upload(&[3..5]).unwrap_err().to_string().contains("3..5"));
    /// ```
    fn upload(&mut self, ranges: &[std::ops::Range<usize>]) -> Result<std::time::Duration, OffloadError>;
    /// Whether [`run`](Slot::run) with these arguments would use *mapped I/O*: no copies, the
    /// kernel reading and writing the staging itself across the bus (`cuda::CudaSlot`'s small
    /// runs of a job that streams its I/O); such a run reports zero H2D and D2H. Decided from
    /// the arguments and the slot alone, never from a run's times. Default: `false` (every
    /// run copies as its phases ask; the simulated device only *paces* small runs so).
    ///
    /// ```
    /// use gmprt_offload::{Device, Phases, Saxpy};
    /// let slot = Device::host().backend().new_slot(4, 2).unwrap();
    /// assert!(!slot.maps_io(&Saxpy { a: 1.0 }, 4, 2, Phases::ALL));
    /// ```
    fn maps_io(&self, _job: &dyn CudaJob, _in_words: usize, _out_words: usize, _phases: Phases) -> bool {
        false
    }
}

/// The memory a set of slots needs, part by part — the one computation of it; each
/// [`Backend::check_memory`] says where each part lives and what is available there, and
/// [`MemoryNeed::check`] turns that into `Ok` or an `Err(Config)` naming the bytes.
///
/// Parts, all in bytes (4 per word):
/// * **staging**: `slots × items × (in_words + out_words) × 4` — the buffers a task's items
///   are staged into and read back from (pinned host memory on CUDA);
/// * **device-side copies**: as much again — the buffers a kernel reads and writes (GPU
///   memory on CUDA; a second host copy on the Host and simulated devices);
/// * **item queues**: `queues × items × item_bytes` — host memory a caller keeps per item
///   beside the slots (the Batcher's item `Vec`s and result entries; zero for a bare slot).
///
/// ```
/// use gmprt_offload::{MemoryNeed, MemoryParts};
///
/// // 2 slots of 1000 SAXPY items (2 words in, 1 out), and 3 queues of 8 B per item.
/// let need = MemoryNeed { slots: 2, items: 1000, in_words: 2, out_words: 1, queues: 3, item_bytes: 8 };
/// assert_eq!(need.staging_bytes(), 2 * 1000 * 12);
/// assert_eq!(need.device_bytes(), 2 * 1000 * 12);
/// assert_eq!(need.queue_bytes(), 3 * 1000 * 8);
/// assert_eq!(need.bytes(MemoryParts::ALL), 72_000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryNeed {
    /// Slots (a Batcher's `in_flight`).
    pub slots: usize,
    /// Items each slot holds (a Batcher's `max_batch`).
    pub items: usize,
    /// Input words per item.
    pub in_words: usize,
    /// Output words per item.
    pub out_words: usize,
    /// Item queues kept in host memory beside the slots (0 for none).
    pub queues: usize,
    /// Host bytes per item per queue.
    pub item_bytes: usize,
}

/// Which parts of a [`MemoryNeed`] one memory holds (see [`MemoryNeed::check`]).
///
/// ```
/// use gmprt_offload::{MemoryNeed, MemoryParts};
///
/// let need = MemoryNeed { slots: 2, items: 1000, in_words: 2, out_words: 1, queues: 3, item_bytes: 8 };
/// // Where CUDA puts them: staging in pinned host memory, device-side copies in GPU memory,
/// // the queues in ordinary host memory. Each part is counted once.
/// let pinned = MemoryParts { staging: true, ..MemoryParts::default() };
/// let gpu = MemoryParts { device_copies: true, ..MemoryParts::default() };
/// let host = MemoryParts { queues: true, ..MemoryParts::default() };
/// assert_eq!((need.bytes(pinned), need.bytes(gpu), need.bytes(host)), (24_000, 24_000, 24_000));
/// assert_eq!(need.bytes(MemoryParts::default()), 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryParts {
    /// The staging buffers.
    pub staging: bool,
    /// The device-side copies.
    pub device_copies: bool,
    /// The item queues.
    pub queues: bool,
}

impl MemoryParts {
    /// Every part (the Host and simulated devices keep everything in host memory).
    ///
    /// ```
    /// use gmprt_offload::{MemoryNeed, MemoryParts};
    ///
    /// let need = MemoryNeed { slots: 2, items: 1000, in_words: 2, out_words: 1, queues: 3, item_bytes: 8 };
    /// let each = need.staging_bytes() + need.device_bytes() + need.queue_bytes();
    /// assert_eq!(need.bytes(MemoryParts::ALL), each);
    /// ```
    pub const ALL: MemoryParts = MemoryParts { staging: true, device_copies: true, queues: true };
}

/// `bytes` as `N B (x.y GiB)`.
fn bytes_and_gib(bytes: u128) -> String {
    format!("{bytes} B ({:.1} GiB)", bytes as f64 / (1u64 << 30) as f64)
}

impl MemoryNeed {
    /// Bytes per item of one slot: `(in_words + out_words) × 4`.
    ///
    /// ```
    /// use gmprt_offload::MemoryNeed;
    ///
    /// // Black-Scholes: 6 words in, 6 out.
    /// let need = MemoryNeed { slots: 1, items: 1, in_words: 6, out_words: 6, queues: 0, item_bytes: 0 };
    /// assert_eq!(need.slot_bytes_per_item(), 48);
    /// ```
    pub fn slot_bytes_per_item(&self) -> u128 {
        (self.in_words as u128 + self.out_words as u128) * 4
    }

    /// Bytes of the staging buffers of all slots.
    ///
    /// ```
    /// use gmprt_offload::MemoryNeed;
    ///
    /// let need = MemoryNeed { slots: 2, items: 1000, in_words: 2, out_words: 1, queues: 3, item_bytes: 8 };
    /// assert_eq!(need.staging_bytes(), 2 * 1000 * need.slot_bytes_per_item());
    /// assert_eq!(need.staging_bytes(), 24_000);
    /// ```
    pub fn staging_bytes(&self) -> u128 {
        self.slots as u128 * self.items as u128 * self.slot_bytes_per_item()
    }

    /// Bytes of the device-side copies of all slots (as many as the staging buffers).
    ///
    /// ```
    /// use gmprt_offload::MemoryNeed;
    ///
    /// let need = MemoryNeed { slots: 2, items: 1000, in_words: 2, out_words: 1, queues: 3, item_bytes: 8 };
    /// assert_eq!(need.device_bytes(), need.staging_bytes());
    /// ```
    pub fn device_bytes(&self) -> u128 {
        self.staging_bytes()
    }

    /// Bytes of the item queues: `queues × items × item_bytes`.
    ///
    /// ```
    /// use gmprt_offload::MemoryNeed;
    ///
    /// let need = MemoryNeed { slots: 2, items: 1000, in_words: 2, out_words: 1, queues: 3, item_bytes: 8 };
    /// assert_eq!(need.queue_bytes(), 3 * 1000 * 8);
    /// assert_eq!(MemoryNeed { queues: 0, ..need }.queue_bytes(), 0); // a bare slot
    /// ```
    pub fn queue_bytes(&self) -> u128 {
        self.queues as u128 * self.items as u128 * self.item_bytes as u128
    }

    /// Bytes of `parts`.
    ///
    /// ```
    /// use gmprt_offload::{MemoryNeed, MemoryParts};
    ///
    /// let need = MemoryNeed { slots: 2, items: 1000, in_words: 2, out_words: 1, queues: 3, item_bytes: 8 };
    /// assert_eq!(need.bytes(MemoryParts::ALL), 24_000 + 24_000 + 24_000);
    /// let staging_and_queues = MemoryParts { staging: true, queues: true, device_copies: false };
    /// assert_eq!(need.bytes(staging_and_queues), 48_000);
    /// ```
    pub fn bytes(&self, parts: MemoryParts) -> u128 {
        let part = |on: bool, bytes: u128| if on { bytes } else { 0 };
        part(parts.staging, self.staging_bytes())
            + part(parts.device_copies, self.device_bytes())
            + part(parts.queues, self.queue_bytes())
    }

    /// `parts`' bytes per item (what one more item per slot costs in that memory).
    fn bytes_per_item(&self, parts: MemoryParts) -> u128 {
        let per_slot_item = self.slots as u128 * self.slot_bytes_per_item();
        let part = |on: bool, bytes: u128| if on { bytes } else { 0 };
        part(parts.staging, per_slot_item)
            + part(parts.device_copies, per_slot_item)
            + part(parts.queues, self.queues as u128 * self.item_bytes as u128)
    }

    /// How `parts`' bytes are made up, e.g. `64 slots × 16777216 items × 48 B per item (24 B
    /// in + 24 B out) = 48.0 GiB of staging + 48.0 GiB of device-side copies + 65 item
    /// queues × 16777216 items × 40 B = 40.6 GiB`.
    ///
    /// ```
    /// use gmprt_offload::{MemoryNeed, MemoryParts};
    ///
    /// let need =
    ///     MemoryNeed { slots: 8, items: 1 << 24, in_words: 2, out_words: 1, queues: 4, item_bytes: 16 };
    /// assert_eq!(
    ///     need.made_of(MemoryParts::ALL),
    ///     "8 slots × 16777216 items × 12 B per item (8 B in + 4 B out) = 1.5 GiB of staging \
    ///      + 1.5 GiB of device-side copies + 4 item queues × 16777216 items × 16 B = 1.0 GiB"
    /// );
    /// let gpu = MemoryParts { device_copies: true, ..MemoryParts::default() };
    /// assert!(need.made_of(gpu).ends_with("= 1.5 GiB of device-side copies"));
    /// ```
    pub fn made_of(&self, parts: MemoryParts) -> String {
        let slots = format!(
            "{} slots × {} items × {} B per item ({} B in + {} B out)",
            self.slots,
            self.items,
            self.slot_bytes_per_item(),
            self.in_words as u128 * 4,
            self.out_words as u128 * 4
        );
        let gib = |b: u128| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64);
        let mut terms = Vec::new();
        match (parts.staging, parts.device_copies) {
            (true, true) => terms.push(format!(
                "{slots} = {} of staging + {} of device-side copies",
                gib(self.staging_bytes()),
                gib(self.device_bytes())
            )),
            (true, false) => terms.push(format!("{slots} = {} of staging", gib(self.staging_bytes()))),
            (false, true) => {
                terms.push(format!("{slots} = {} of device-side copies", gib(self.device_bytes())))
            }
            (false, false) => {}
        }
        if parts.queues && self.queue_bytes() > 0 {
            terms.push(format!(
                "{} item queues × {} items × {} B = {}",
                self.queues,
                self.items,
                self.item_bytes,
                gib(self.queue_bytes())
            ));
        }
        terms.join(" + ")
    }

    /// `Ok` when `parts` fit in what is `available` in `memory` (e.g. `"host memory"`), or
    /// when that is unknown (then only the allocations themselves can fail, and they do so
    /// with an error, not an abort). Otherwise `Err(Config)` naming the bytes needed, how
    /// they are made up, the bytes available and where that figure comes from, and the
    /// largest number of items per slot that would fit.
    ///
    /// Headroom: refused when the need *exceeds* what is available, not at some fraction of
    /// it. `MemAvailable` is already the kernel's estimate of what can be allocated without
    /// swapping (free memory plus reclaimable cache, less the reserves it keeps), and
    /// `cuMemGetInfo`'s free is what the device can still hand out; a fixed fraction would
    /// refuse configurations that fit while still guaranteeing nothing against a concurrent
    /// user. What this check cannot see (other processes allocating at the same moment, the
    /// caller's own tasks) is left to the fallible allocations.
    ///
    /// ```
    /// use gmprt_offload::{Available, MemoryNeed, MemoryParts};
    ///
    /// let need = MemoryNeed { slots: 2, items: 1000, in_words: 2, out_words: 1, queues: 0, item_bytes: 0 };
    /// let have = |bytes| Available { bytes: Ok(bytes), source: "a test" };
    /// // 48 000 B: staging and device-side copies.
    /// need.check("host memory", MemoryParts::ALL, &have(48_000)).unwrap(); // exactly fits
    /// let e = need.check("host memory", MemoryParts::ALL, &have(47_999)).unwrap_err().to_string();
    /// assert!(e.contains("need 48000 B (0.0 GiB) of host memory"), "{e}");
    /// assert!(e.contains("(a test)") && e.contains("at most 999 items per slot fit"), "{e}");
    /// // When the memory available is unknown, only the allocations can refuse.
    /// let unknown = Available { bytes: Err("no /proc".into()), source: "a test" };
    /// need.check("host memory", MemoryParts::ALL, &unknown).unwrap();
    /// ```
    pub fn check(&self, memory: &str, parts: MemoryParts, available: &Available) -> Result<(), OffloadError> {
        let need = self.bytes(parts);
        let Ok(bytes) = available.bytes else { return Ok(()) };
        if need <= u128::from(bytes) {
            return Ok(());
        }
        let fit = u128::from(bytes) / self.bytes_per_item(parts).max(1);
        Err(OffloadError::Config(format!(
            "{} slots of {} items need {} of {memory} ({}) but {}; lower max_batch or in_flight \
             (with {} slots, at most {fit} items per slot fit)",
            self.slots,
            self.items,
            bytes_and_gib(need),
            self.made_of(parts),
            available,
            self.slots
        )))
    }
}

/// How many bytes a memory has available, and where that figure comes from; `bytes` is
/// `Err` with the reason when it is unknown.
///
/// ```
/// use gmprt_offload::Available;
///
/// let known = Available { bytes: Ok(3 << 30), source: "MemAvailable in /proc/meminfo" };
/// assert_eq!(known.to_string(), "3221225472 B (3.0 GiB) is available (MemAvailable in /proc/meminfo)");
/// let unknown = Available { bytes: Err("no /proc".into()), source: "MemAvailable in /proc/meminfo" };
/// assert_eq!(unknown.to_string(), "the memory available is unknown (no /proc)");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Available {
    /// Bytes available, or why that is unknown.
    pub bytes: Result<u64, String>,
    /// Where the figure comes from (`MemAvailable in /proc/meminfo`, `cuMemGetInfo`).
    pub source: &'static str,
}

impl fmt::Display for Available {
    /// `24652124160 B (23.0 GiB) is available (MemAvailable in /proc/meminfo)`, or `the
    /// memory available is unknown (<why>)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.bytes {
            Ok(b) => write!(f, "{} is available ({})", bytes_and_gib(u128::from(*b)), self.source),
            Err(why) => write!(f, "the memory available is unknown ({why})"),
        }
    }
}

/// Host memory available to new allocations: `MemAvailable` from `/proc/meminfo` on Linux
/// (the kernel's estimate of what can be allocated without swapping); unknown elsewhere, or
/// when the file cannot be read. A cgroup memory limit below it is not consulted.
///
/// ```
/// let a = gmprt_offload::backend::host_available();
/// assert_eq!(a.source, "MemAvailable in /proc/meminfo");
/// match &a.bytes {
///     Ok(bytes) => {
///         assert!(*bytes > 0);
///         assert!(a.to_string().ends_with("is available (MemAvailable in /proc/meminfo)"));
///     }
///     Err(why) => assert!(a.to_string().contains(why.as_str())), // not Linux, or no /proc
/// }
/// ```
pub fn host_available() -> Available {
    let source = "MemAvailable in /proc/meminfo";
    let bytes = if cfg!(target_os = "linux") {
        std::fs::read_to_string("/proc/meminfo")
            .map_err(|e| format!("cannot read /proc/meminfo: {e}"))
            .and_then(|text| parse_mem_available(&text))
    } else {
        Err("MemAvailable is read from /proc/meminfo, on Linux only".into())
    };
    Available { bytes, source }
}

/// `MemAvailable` in bytes from the text of `/proc/meminfo` (`MemAvailable:  24074340 kB`).
fn parse_mem_available(meminfo: &str) -> Result<u64, String> {
    let value = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .ok_or("/proc/meminfo has no MemAvailable line")?;
    value
        .trim()
        .strip_suffix("kB")
        .and_then(|n| n.trim().parse::<u64>().ok())
        .map(|kib| kib.saturating_mul(1024))
        .ok_or_else(|| format!("cannot read `MemAvailable:{value}` in /proc/meminfo"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_available_is_read_in_bytes() {
        let text = "MemTotal:       24684096 kB\nMemFree:        22977040 kB\nMemAvailable:   24074340 kB\n";
        assert_eq!(parse_mem_available(text), Ok(24_074_340 * 1024));
        assert!(parse_mem_available("MemTotal: 1 kB\n").unwrap_err().contains("no MemAvailable"));
        assert!(parse_mem_available("MemAvailable: lots\n").unwrap_err().contains("lots"));
    }

    #[test]
    fn check_names_need_parts_and_available() {
        let need = MemoryNeed { slots: 2, items: 1000, in_words: 2, out_words: 1, queues: 3, item_bytes: 8 };
        assert_eq!(need.staging_bytes(), 2 * 1000 * 12);
        assert_eq!(need.queue_bytes(), 3 * 1000 * 8);
        let total = 2 * 2 * 1000 * 12 + 3 * 1000 * 8;
        assert_eq!(need.bytes(MemoryParts::ALL), total);
        let known = |b: u64| Available { bytes: Ok(b), source: "test" };
        need.check("host memory", MemoryParts::ALL, &known(total as u64)).expect("exactly fits");
        let e = need.check("host memory", MemoryParts::ALL, &known(total as u64 - 1)).unwrap_err();
        let OffloadError::Config(m) = e else { panic!("{e:?}") };
        for part in [
            format!("need {total} B"),
            "2 slots × 1000 items × 12 B per item (8 B in + 4 B out)".to_string(),
            "of staging + ".to_string(),
            "3 item queues × 1000 items × 8 B".to_string(),
            format!("but {} B", total - 1),
            "(test)".to_string(),
            "at most 999 items per slot fit".to_string(),
        ] {
            assert!(m.contains(&part), "`{part}` missing from: {m}");
        }
        // Only the parts asked for are counted (CUDA: device copies in GPU memory).
        let gpu = MemoryParts { device_copies: true, ..MemoryParts::default() };
        assert_eq!(need.bytes(gpu), 2 * 1000 * 12);
        let e = need.check("GPU memory", gpu, &known(100)).unwrap_err().to_string();
        assert!(
            e.contains("of device-side copies") && !e.contains("staging") && !e.contains("queues"),
            "{e}"
        );
        // Unknown: not refused here (the allocations decide).
        let unknown = Available { bytes: Err("no /proc".into()), source: "test" };
        need.check("host memory", MemoryParts::ALL, &unknown).expect("unknown is not a refusal");
        assert_eq!(unknown.to_string(), "the memory available is unknown (no /proc)");
    }
}
