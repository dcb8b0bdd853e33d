//! A Batcher configuration that cannot fit in memory is `Err(Config)` naming the bytes, found
//! before anything is allocated — not an abort ("memory allocation of … failed") or the OOM
//! killer (issue 11 item 4).
//!
//! Safe to run on any machine, whatever the code under test does: this binary's allocator
//! ([`Guard`]) refuses every single allocation above [`REFUSE_ABOVE`] (256 MiB) and records,
//! per thread, the largest size asked for. So a Batcher that skipped the check could not
//! touch gigabytes here: its first slot buffer would be refused (an `Err` through the
//! fallible allocation, or an abort where an allocation is infallible — a failing test
//! either way, and the largest-request assertion says which). Deterministic: no sleeps, no
//! timing.
use gmprt_offload::cuda::{CudaJob, LaunchCtx};
use gmprt_offload::model::DeviceProfile;
use gmprt_offload::runtime::Runtime;
use gmprt_offload::{BatchKernel, Batcher, BatcherConfig, Device, Job, OffloadError, Saxpy};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

/// The largest single allocation [`Guard`] grants.
const REFUSE_ABOVE: usize = 256 << 20;

thread_local! {
    /// The largest allocation this thread asked for since the last [`largest_since`] reset.
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

/// Forwards to the system allocator, refusing (null) anything above [`REFUSE_ABOVE`] and
/// recording the largest request per thread.
struct Guard;

impl Guard {
    fn admit(size: usize) -> bool {
        // `try_with`: during thread teardown the slot may be gone; then just don't record.
        let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
        size <= REFUSE_ABOVE
    }
}

// SAFETY: every method either returns null (a refusal, which `GlobalAlloc` allows) or
// forwards its arguments unchanged to `System`, which upholds the contract; `dealloc` and a
// granted `realloc` get pointers that came from `System`.
unsafe impl GlobalAlloc for Guard {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !Guard::admit(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's contract for `layout` is passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !Guard::admit(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (through this allocator) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !Guard::admit(new_size) {
            return std::ptr::null_mut(); // the old block stays valid, as `realloc` requires
        }
        // SAFETY: `ptr`/`layout` came from `System` through this allocator; the caller's
        // contract for `new_size` is passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GUARD: Guard = Guard;

/// Runs `f` and returns its result with the largest allocation this thread asked for
/// meanwhile.
fn largest_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|l| l.set(0));
    let out = f();
    (out, LARGEST.with(Cell::get))
}

/// A test kernel with `in_words` / `out_words` words per `u32` item (it copies the first).
struct Wide {
    in_words: usize,
    out_words: usize,
}

impl Job for Wide {
    fn name(&self) -> &'static str {
        "wide"
    }
    fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
        output[..n].copy_from_slice(&input[..n]);
        Ok(())
    }
}

impl CudaJob for Wide {
    fn launch_cuda(&self, _: &mut LaunchCtx<'_>, _: usize) -> Result<(), OffloadError> {
        Err(OffloadError::Config("the test kernel has no CUDA version".into()))
    }
}

impl BatchKernel for Wide {
    type Item = u32;
    type Output = u32;
    fn in_words(&self) -> usize {
        self.in_words
    }
    fn out_words(&self) -> usize {
        self.out_words
    }
    fn validate(&self, _: &u32, _: usize) -> Result<(), OffloadError> {
        Ok(())
    }
    fn stage(&self, items: &[u32], input: &mut [u32]) {
        input[..items.len()].copy_from_slice(items);
    }
    fn gather(&self, _n: usize, output: &[u32], i: usize) -> u32 {
        output[i]
    }
}

fn cfg(max_batch: usize, in_flight: usize) -> BatcherConfig {
    BatcherConfig { max_batch, in_flight, max_delay: Duration::ZERO, ..BatcherConfig::default() }
}

/// The number before ` B` right after `prefix` in `m`.
fn bytes_after(m: &str, prefix: &str) -> u128 {
    let at = m.find(prefix).unwrap_or_else(|| panic!("`{prefix}` missing from: {m}")) + prefix.len();
    let digits: String = m[at..].chars().take_while(char::is_ascii_digit).collect();
    assert!(m[at + digits.len()..].starts_with(" B"), "no `<n> B` after `{prefix}` in: {m}");
    digits.parse().unwrap_or_else(|e| panic!("`{digits}`: {e} in: {m}"))
}

#[test]
fn a_batcher_too_large_for_memory_is_a_config_error_before_anything_is_allocated() {
    // max_batch 2^24 and in_flight 64, both at their validated limits, with 64 + 64 words per
    // item: 64 slots × 2^24 items × 512 B = 512 GiB of staging and 512 GiB of device-side
    // copies — far beyond any machine's RAM, so the check refuses it everywhere.
    let slots_bytes: u128 = 2 * 64 * (1 << 24) * 512;
    for device in [Device::host(), Device::simulated(DeviceProfile::published_h100())] {
        let kernel = Wide { in_words: 64, out_words: 64 };
        let (made, largest) = largest_during(|| Batcher::new(kernel, &device, cfg(1 << 24, 64)));
        let m = match made {
            Err(OffloadError::Config(m)) => m,
            Err(e) => panic!("{}: expected Err(Config), got {e:?}", device.describe()),
            Ok(_) => panic!("{}: a 1 TiB Batcher was built", device.describe()),
        };
        assert!(
            largest < (1 << 20),
            "{}: {largest} B were asked of the allocator before the refusal: the check must come \
             before any allocation ({m})",
            device.describe()
        );
        let need = bytes_after(&m, " need ");
        let available = bytes_after(&m, " but ");
        assert!(need >= slots_bytes && need > available, "need {need}, available {available}: {m}");
        for part in [
            "Batcher of wide (max_batch 16777216, in_flight 64)",
            "of host memory",
            "64 slots × 16777216 items × 512 B per item (256 B in + 256 B out) = 512.0 GiB of staging + \
             512.0 GiB of device-side copies",
            // in_flight + one lane per P (or CPU) + one: the count depends on the machine.
            " item queues × 16777216 items × ",
            "is available (MemAvailable in /proc/meminfo)",
            "lower max_batch or in_flight",
        ] {
            assert!(m.contains(part), "`{part}` missing from: {m}");
        }
        println!("{m}");
    }
}

#[test]
fn a_batcher_that_fits_still_builds_and_runs() {
    let rt = Runtime::builder().procs(2).build().expect("runtime");
    for config in [BatcherConfig::default(), cfg(1 << 16, 4)] {
        let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), config.clone())
            .expect("a config that fits builds");
        let b2 = b.clone();
        let y = rt.block_on(async move { b2.submit((3.0, 1.0)).await }).expect("submit");
        assert_eq!(y, 7.0, "{config:?}");
    }
}

#[test]
fn a_host_slot_the_allocator_refuses_is_an_error_not_an_abort() {
    // 2^27 words = 512 MiB: within any check on this machine's scale but refused by
    // `Guard`, as a real allocator refuses when memory ran out after the check.
    for device in [Device::host(), Device::simulated(DeviceProfile::published_h100())] {
        let e = device.backend().new_slot(1 << 27, 1).err().expect("the allocator refuses 512 MiB");
        let OffloadError::Config(m) = &e else { panic!("expected Err(Config), got {e:?}") };
        assert!(
            m.contains("cannot allocate the input staging buffer of a slot: 134217728 words = 536870912 B"),
            "{m}"
        );
        assert!(m.contains("available"), "{m}");
    }
}

#[test]
fn a_batcher_whose_slot_allocation_is_refused_says_which_slot() {
    // Fits the memory check (about 1.1 GB, all told) but one staging buffer is 2^23 × 9 words
    // = 288 MiB, which `Guard` refuses: the Batcher returns the slot's error with its context.
    let (made, _) =
        largest_during(|| Batcher::new(Wide { in_words: 9, out_words: 1 }, &Device::host(), cfg(1 << 23, 1)));
    let Err(OffloadError::Config(m)) = made else { panic!("expected Err(Config), got {:?}", made.err()) };
    assert!(m.contains("Batcher of wide (max_batch 8388608, in_flight 1)"), "{m}");
    assert!(m.contains("slot 0 of 1: cannot allocate the input staging buffer of a slot"), "{m}");
}
