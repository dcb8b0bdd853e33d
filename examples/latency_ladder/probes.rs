//! The latency ladder's probes: what one dependent step costs, measured with nothing else in
//! the chain (examples/latency_ladder.rs says what each rung means).
//! * `chase`: loads along one random cycle of 64-byte lines (`chase_buffer`, Sattolo's shuffle);
//! * `fma_chain`: dependent FMAs, with the FMA unit where the CPU has one;
//! * `ping_pong`: one cache line bounced between two CPUs pinned to it (`two_cpus`, `pin`);
//! * `measure_gpu`: the same chase and chain in one GPU thread (`CudaBackend::{chase,
//!   fma_chain}`), over `gpu_cycle`'s 128-byte lines in each of `GPU_SIZES`, and a word
//!   bounced between two SMs (`CudaBackend::sm_ping_pong`).
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Acquire, Ordering::Release};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The GPU chase's buffers: 16 KiB sits in one SM's L1 (256 KiB with shared memory on an H100
/// or H200), 8 MiB in their 50-60 MB L2, 1 GiB 16x past it, in device memory.
const GPU_SIZES: [(&str, usize); 3] = [("L1", 16 << 10), ("L2", 8 << 20), ("DRAM", 1 << 30)];
/// The GPU's L1 line: one chase node per line.
const GPU_LINE_WORDS: usize = 128 / 4;

/// One line of the chase buffer: the index of the next line, alone on its 64-byte line.
#[repr(align(64))]
#[derive(Clone, Copy, Default)]
pub(super) struct Line {
    pub(super) next: usize,
}

/// A small xorshift generator: the shuffle needs no statistical quality, only no pattern a
/// prefetcher could follow.
pub(super) struct XorShift(u64);

/// The shuffles' seed: any nonzero value works (xorshift stays at 0 from 0); these are the
/// golden ratio's bits, the usual choice. Fixed, so every run chases the same cycle.
const SEED: u64 = 0x9E37_79B9_7F4A_7C15;

impl XorShift {
    /// A value in `0..n` (`n > 0`).
    pub(super) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Sattolo's shuffle of the identity on `0..n`, through `swap(i, j)`: swapping each position
/// only with an earlier one turns it into a single cycle through all `n`. Both chase buffers
/// start as the identity (every node naming itself) and are shuffled by this.
fn sattolo(n: usize, mut swap: impl FnMut(usize, usize)) {
    let mut rng = XorShift(SEED);
    for i in (1..n).rev() {
        swap(i, rng.below(i));
    }
}

/// `n` lines linked into one cycle through all of them in random order ([`sattolo`]), or the
/// error saying why they do not fit in memory.
pub(super) fn chase_buffer(n: usize, asked: &str) -> Result<Vec<Line>, String> {
    debug_assert!(n > 0);
    let mut lines =
        super::common::try_filled(n, Line::default(), asked, "a 64-byte line").map_err(|e| e.to_string())?;
    advise_huge_pages(&mut lines);
    for (i, l) in lines.iter_mut().enumerate() {
        l.next = i;
    }
    sattolo(n, |i, j| {
        let (a, b) = (lines[i].next, lines[j].next);
        (lines[i].next, lines[j].next) = (b, a);
    });
    Ok(lines)
}

/// The GPU chase's buffer: `bytes / 128` lines of 128 bytes, the first word of each holding the
/// word index of the next line in one random cycle ([`sattolo`], as `chase_buffer`), or the
/// error saying why it does not fit in memory.
pub(super) fn gpu_cycle(bytes: usize) -> Result<Vec<u32>, String> {
    let lines = (bytes / (4 * GPU_LINE_WORDS)).max(1);
    let mut next = super::common::try_filled(
        lines * GPU_LINE_WORDS,
        0u32,
        &format!("a GPU chase of {bytes} bytes"),
        "a word",
    )
    .map_err(|e| e.to_string())?;
    for i in 0..lines {
        next[i * GPU_LINE_WORDS] = (i * GPU_LINE_WORDS) as u32;
    }
    sattolo(lines, |i, j| next.swap(i * GPU_LINE_WORDS, j * GPU_LINE_WORDS));
    Ok(next)
}

/// The median of `runs` (each a time over `per` steps), in ns per step. `runs` is not empty.
pub(super) fn median_ns(mut runs: Vec<Duration>, per: u64) -> f64 {
    runs.sort();
    runs[runs.len() / 2].as_secs_f64() * 1e9 / per as f64
}

/// One GPU rung: its name (as the CPU rung's), the chase's buffer in bytes (0: FMA), ns per step.
pub(super) type GpuRung = (&'static str, usize, f64);

/// What one GPU measured.
pub(super) struct GpuFigures {
    /// The device, as the backend describes it.
    pub(super) device: String,
    /// FMA, then the chase at each of [`GPU_SIZES`].
    pub(super) rungs: Vec<GpuRung>,
    /// A write on one SM seen by another (half a round trip through the L2), ns; `None` when
    /// the two blocks did not run at once.
    pub(super) sm_to_sm_ns: Option<f64>,
}

/// The GPU's figures (the rungs in ns per step, medians of `reps`; `round_trips` of a word
/// between two SMs); or why they could not be measured (no device, no NVRTC, a buffer that
/// does not fit).
pub(super) fn measure_gpu(steps: usize, round_trips: usize, reps: usize) -> Result<GpuFigures, String> {
    if std::env::var("GMPRT_DEVICE").is_ok_and(|d| d == "host") {
        return Err("GMPRT_DEVICE=host".into());
    }
    let gpu = gmprt::offload::cuda::CudaBackend::new(0).map_err(|e| e.to_string())?;
    let err = |e: gmprt::offload::OffloadError| e.to_string();
    let mut rungs = Vec::new();
    let n = steps as u64;
    let runs = (0..reps).map(|_| gpu.fma_chain(n)).collect::<Result<Vec<_>, _>>().map_err(err)?;
    rungs.push(("FMA", 0, median_ns(runs, n)));
    // A device-memory load takes several times a CPU's: a tenth of the steps keeps a run short.
    let n = (steps as u64 / 10).max(1);
    for (name, bytes) in GPU_SIZES {
        let next = gpu_cycle(bytes)?;
        let (runs, _) = gpu.chase(&next, n, reps).map_err(err)?;
        rungs.push((name, next.len() * 4, median_ns(runs, n)));
    }
    let rounds = u32::try_from(round_trips.min(1 << 30)).unwrap_or(1 << 30);
    let runs = (0..reps).map(|_| gpu.sm_ping_pong(rounds)).collect::<Result<Vec<_>, _>>().map_err(err)?;
    // Every run must have had both blocks at once; one that did not leaves no figure.
    let sm_to_sm_ns =
        runs.into_iter().collect::<Option<Vec<_>>>().map(|r| median_ns(r, 2 * u64::from(rounds)));
    Ok(GpuFigures { device: gmprt::offload::Backend::describe(&gpu), rungs, sm_to_sm_ns })
}

/// Asks the kernel for transparent huge pages under `lines` (advice only: refused or not, the
/// chase is correct; granted, fewer of its loads wait for a page walk).
fn advise_huge_pages(lines: &mut [Line]) {
    #[cfg(target_os = "linux")]
    // SAFETY: madvise only advises on the pages of a live allocation we hold mutably; it does
    // not change their contents, and its failure is harmless (ignored).
    unsafe {
        libc::madvise(lines.as_mut_ptr().cast(), std::mem::size_of_val(lines), libc::MADV_HUGEPAGE);
    };
}

/// `steps` dependent loads along the cycle from line 0: the elapsed time and where it ended.
pub(super) fn chase(lines: &[Line], steps: usize) -> (Duration, usize) {
    let mut p = 0;
    let t0 = Instant::now();
    for _ in 0..steps {
        p = lines[p].next;
    }
    (t0.elapsed(), black_box(p))
}

/// `n` dependent FMAs (`x = x·a + b`) with the FMA unit: elapsed time and the result.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
fn fma_chain_fma(n: usize, x: f32, a: f32, b: f32) -> (Duration, f32) {
    let mut x = x;
    let t0 = Instant::now();
    for _ in 0..n {
        x = x.mul_add(a, b);
    }
    (t0.elapsed(), x)
}

/// `n` dependent FMAs, each a multiply then an add where there is no FMA unit (or a fused one
/// where the target has it): elapsed time, the result, and what ran.
pub(super) fn fma_chain(n: usize) -> (Duration, f32, &'static str) {
    // a < 1 and b small keep x bounded and normal: no denormal slows a step.
    let (x, a, b) = (black_box(1.0f32), black_box(0.999_999f32), black_box(1e-6f32));
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has FMA (checked just above), the one feature the function enables.
        let (t, x) = unsafe { fma_chain_fma(n, x, a, b) };
        return (t, black_box(x), "vfmadd (fused)");
    }
    let mut x = x;
    let t0 = Instant::now();
    for _ in 0..n {
        x = black_box(x * a) + b;
    }
    (t0.elapsed(), black_box(x), "multiply, then add (no FMA unit)")
}

/// The first two CPUs this process may run on, when it may run on two.
pub(super) fn two_cpus() -> Option<(usize, usize)> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most
        // its size into it, and CPU_ISSET reads within it (i < CPU_SETSIZE).
        let cpus: Vec<usize> = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                return None;
            }
            (0..libc::CPU_SETSIZE as usize).filter(|&i| libc::CPU_ISSET(i, &set)).collect()
        };
        if cpus.len() >= 2 {
            return Some((cpus[0], cpus[1]));
        }
    }
    None
}

/// Pins the calling thread to `cpu` (best effort: unpinned, the figure is still a core-to-core
/// one whenever the two threads run on two cores).
fn pin(cpu: usize) {
    #[cfg(target_os = "linux")]
    // SAFETY: as in `two_cpus`; `cpu` came from this process's own affinity set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    };
}

/// The line two cores bounce, alone on a 128-byte block (clear of the adjacent-line prefetcher:
/// see the false_sharing example).
#[repr(align(128))]
struct Bounce(AtomicU64);

/// `round_trips` round trips of one cache line between `cpus`: the first thread writes an odd
/// count and waits for the second's even one. The elapsed time on the first thread.
pub(super) fn ping_pong(cpus: (usize, usize), round_trips: usize) -> Duration {
    let line = Arc::new(Bounce(AtomicU64::new(0)));
    let other = {
        let line = line.clone();
        std::thread::spawn(move || {
            pin(cpus.1);
            for i in 0..round_trips as u64 {
                // Acquire pairs with the first thread's Release store of 2i+1, Release with
                // its Acquire load of 2i+2: each write is seen before it is answered.
                while line.0.load(Acquire) != 2 * i + 1 {
                    std::hint::spin_loop();
                }
                line.0.store(2 * i + 2, Release);
            }
        })
    };
    pin(cpus.0);
    let t0 = Instant::now();
    for i in 0..round_trips as u64 {
        line.0.store(2 * i + 1, Release);
        while line.0.load(Acquire) != 2 * i + 2 {
            std::hint::spin_loop();
        }
    }
    let t = t0.elapsed();
    other.join().expect("the bouncing thread panicked");
    t
}
