//! What a CPU run "as called" starts from (issue 27, item 5): the runtime's Ps parked, and the
//! run's operands in DRAM, not in any cache.
//!
//! Calibration used to time the CPU kernels from a task on the runtime, on the same buffers
//! run after run. On the H200 machine's 16-core Xeon that put 48 MB of Black-Scholes operands
//! in its caches and SAXPY at 1M elements at 178 GB/s; `explain` then predicted 1M options on
//! 16 Ps at 563 µs where `option_screener` way 2, which calls from outside the runtime on data
//! it made earlier, measured 0.95–1.61 ms. A program calls the way way 2 does: these two steps
//! put each timed run in that state, untimed.
//!
//! * [`wait_parked`]: until every P is on the idle list (`RuntimeStats::idle_procs`), then
//!   [`SETTLE`] more, so the Ms that gave them up are asleep, not still on their way down.
//! * [`evict`]: on x86-64, `clflushopt` (or, on a CPU without it, `clflush`) of every cache
//!   line of the operands, which invalidates the line in every core's caches (and writes it
//!   back if dirty), then `mfence`; elsewhere, this thread streams through a scratch buffer of
//!   twice the last-level cache, which evicts the shared cache but not other cores' private
//!   ones: on those targets a small run's operands may still be in a helper's L2, and its
//!   figure is that much optimistic.
//!
//! # Why `clflushopt`
//! Both instructions evict the same lines from the same caches; they differ in ordering.
//! `clflush` is ordered against every other `clflush`, so a CPU runs them one at a time, each
//! waiting out its round trip to memory; `clflushopt` is ordered only against fences, locked
//! instructions and writes to its own line, so many are in flight at once, and the `mfence`
//! after the loop is what waits for all of them to finish (the Intel SDM's definition of
//! `clflushopt`; `cpuid` leaf 7, EBX bit 23 says a CPU has it). On the 2-core VM's Xeon, 64 MiB
//! took 156 ms with `clflush` (0.4 GB/s) and 2.6 ms with `clflushopt` (26 GB/s), dirty or clean,
//! best of 5; a quick Host calibration evicts its operands before each of its hundreds of
//! timed runs, and spent a quarter of its time in `clflush`.
use gmprt_runtime::Handle;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// After the Ps are idle, how long to wait before the run: 200 µs, past the few µs an M
/// spins and the futex call that parks it, and short next to the runs timed (a calibration
/// makes thousands of them).
pub(super) const SETTLE: Duration = Duration::from_micros(200);
/// Longest wait for the Ps to go idle (another program's tasks, if any, could keep one busy):
/// 100 ms, then the run goes ahead as it would in a program.
const PARK_WAIT_MAX: Duration = Duration::from_millis(100);
/// Cache line bytes [`evict`] steps by: 64 on every x86-64 and on the Arm cores this runs on.
const LINE: usize = 64;

/// Blocks until every P of `h` is idle (at most [`PARK_WAIT_MAX`]), then [`SETTLE`] more.
/// Call from outside the runtime.
pub(super) fn wait_parked(h: &Handle) {
    let t = Instant::now();
    // 50 µs polls: fine next to the wait, cheap next to `stats()`.
    while h.stats().idle_procs < h.procs() && t.elapsed() < PARK_WAIT_MAX {
        std::thread::sleep(Duration::from_micros(50));
    }
    std::thread::sleep(SETTLE);
}

/// Evicts `len` bytes at `ptr` from the caches (see the module doc). `ptr..ptr + len` must lie
/// in one live allocation (the function reads no byte of it, but flushes its lines).
pub(super) fn evict(ptr: *const u8, len: usize) {
    if len == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    flush_lines(ptr, len, has_clflushopt());
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = ptr;
        stream_scratch();
    }
}

/// Flushes every cache line of `ptr..ptr + len` (`clflushopt` when `opt`, else `clflush`),
/// then `mfence`s: [`evict`]'s x86-64 body, with its contract (`ptr..ptr + len` lies in one
/// live allocation). `opt` only where [`has_clflushopt`].
#[cfg(target_arch = "x86_64")]
fn flush_lines(ptr: *const u8, len: usize, opt: bool) {
    use std::arch::x86_64::{_mm_clflush, _mm_mfence};
    debug_assert!(!opt || has_clflushopt(), "clflushopt on a CPU without it");
    let start = ptr as usize & !(LINE - 1);
    let end = ptr as usize + len;
    if opt {
        for line in (start..end).step_by(LINE) {
            // SAFETY: the CPU has clflushopt (the caller checked); the line holds at least one
            // byte of the caller's live allocation (the first one may start before `ptr`, in
            // the same page), and clflushopt neither reads nor changes its contents, nor the
            // flags or the stack. No `nomem`: the compiler must not move this thread's own
            // loads and stores of the operands across it.
            unsafe { std::arch::asm!("clflushopt [{0}]", in(reg) line, options(nostack, preserves_flags)) };
        }
    } else {
        for line in (start..end).step_by(LINE) {
            // SAFETY: SSE2 (hence clflush) is part of x86-64's baseline; the line holds at least
            // one byte of the caller's live allocation (as above), and clflush neither reads
            // nor changes its contents.
            unsafe { _mm_clflush(line as *const u8) };
        }
    }
    // Waits for every flush above: `clflushopt` is ordered against `mfence` (module doc).
    // SAFETY: SSE2 baseline; a fence has no memory operands.
    unsafe { _mm_mfence() };
}

/// Whether this CPU has `clflushopt` (`cpuid` leaf 7, sub-leaf 0, EBX bit 23), read once.
#[cfg(target_arch = "x86_64")]
fn has_clflushopt() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        use std::arch::x86_64::{__cpuid_count, __get_cpuid_max};
        // `cpuid`'s intrinsics are unsafe functions on older toolchains and safe ones on
        // newer: hence the allow.
        #[allow(unused_unsafe)]
        // SAFETY: `cpuid` is part of x86-64's baseline and touches no memory; leaf 7 is read
        // only where the highest basic leaf says it exists.
        unsafe {
            __get_cpuid_max(0).0 >= 7 && (__cpuid_count(7, 0).ebx >> 23) & 1 == 1
        }
    })
}

/// Evicts a slice's bytes (see [`evict`]).
pub(super) fn evict_slice<T>(s: &[T]) {
    evict(s.as_ptr().cast(), std::mem::size_of_val(s));
}

/// The largest cache this machine's CPU 0 reports (`/sys/devices/system/cpu/cpu0/cache`), in
/// bytes, or 64 MiB if it reports none (more than any last-level cache of the machines here).
pub(super) fn last_level_cache_bytes() -> usize {
    let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let parse = |s: &str| -> Option<usize> {
        let s = s.trim();
        let (num, mul) = match s.as_bytes().last()? {
            b'K' => (&s[..s.len() - 1], 1 << 10),
            b'M' => (&s[..s.len() - 1], 1 << 20),
            b'G' => (&s[..s.len() - 1], 1 << 30),
            _ => (s, 1),
        };
        num.parse::<usize>().ok().map(|n| n * mul)
    };
    std::fs::read_dir(dir)
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("size")).ok())
        .filter_map(|s| parse(&s))
        .max()
        .unwrap_or(64 << 20)
}

/// Writes one byte per line of a scratch buffer twice the last-level cache (made once).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn stream_scratch() {
    static SCRATCH: OnceLock<Mutex<Vec<u8>>> = OnceLock::new();
    let buf = SCRATCH.get_or_init(|| Mutex::new(vec![0u8; 2 * last_level_cache_bytes()]));
    let mut b = buf.lock().unwrap_or_else(|e| e.into_inner());
    for i in (0..b.len()).step_by(LINE) {
        b[i] = b[i].wrapping_add(1);
    }
    std::hint::black_box(&*b);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicting_leaves_the_bytes_and_the_cache_size_is_sane() {
        let v: Vec<u32> = (0..100_000).collect();
        evict_slice(&v);
        evict_slice(&v[3..5]);
        evict_slice::<u32>(&[]);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32));
        // Both x86-64 bodies, whichever this CPU would use.
        #[cfg(target_arch = "x86_64")]
        for opt in [false, has_clflushopt()] {
            let bytes = vec![7u8; 300];
            flush_lines(bytes[1..].as_ptr(), 299, opt);
            assert!(bytes.iter().all(|&b| b == 7), "clflushopt: {opt}");
        }
        let llc = last_level_cache_bytes();
        assert!((32 << 10..=4 << 30).contains(&llc), "{llc}");
    }
}
