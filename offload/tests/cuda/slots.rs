//! `[gpu]`: slots: phases timed alone, mapped I/O against copies, errors that leave a slot usable,
//! two slots on two threads, the calibration kernels, launch costs, first use, loaded libraries.

use super::*;

pub(super) fn slot_resident_runs_time_each_phase_alone(b: &CudaBackend) {
    let n = 1 << 16;
    let chain = black_scholes::synthetic_chain(n, 11);
    let mut slot = b.new_slot(n * IN_WORDS, n * OUT_WORDS).expect("slot");
    black_scholes::stage_words(&chain, slot.staging_in());
    let all = slot.run(&BsJob, n, n * IN_WORDS, n * OUT_WORDS, Phases::ALL).expect("all");
    let want = slot.staging_out().to_vec();
    assert!(all.h2d > std::time::Duration::ZERO && all.kernel > std::time::Duration::ZERO);
    // Data stays on the device: upload once, then kernels alone, then one download.
    let up =
        slot.run(&BsJob, n, n * IN_WORDS, n * OUT_WORDS, Phases { h2d: true, kernel: false, d2h: false });
    let up = up.expect("upload");
    assert!(up.kernel.is_zero() && up.d2h.is_zero());
    for _ in 0..3 {
        let k =
            slot.run(&BsJob, n, n * IN_WORDS, n * OUT_WORDS, Phases { h2d: false, kernel: true, d2h: false });
        let k = k.expect("kernel");
        assert!(k.h2d.is_zero() && k.d2h.is_zero() && !k.kernel.is_zero(), "{k:?}");
        println!("resident kernel n={n}: {:?} (full run {all:?})", k.kernel);
    }
    let down =
        slot.run(&BsJob, n, n * IN_WORDS, n * OUT_WORDS, Phases { h2d: false, kernel: false, d2h: true });
    assert!(down.expect("download").kernel.is_zero());
    assert_eq!(slot.staging_out(), &want[..]);
}

/// A small run of a job that streams its I/O (the library's `BlackScholes`, `Saxpy`) skips
/// both copies: the kernel works on the mapped staging (zero H2D and D2H time), and its output
/// equals, bit for bit, the same kernel's with copies (the test jobs, which do not opt in). Past
/// `MAPPED_IO_MAX_BYTES` the same job copies again. The slot stays usable both ways.
pub(super) fn small_runs_map_their_io_and_agree_with_copies(b: &CudaBackend) {
    // Whether a run maps is the slot's decision from its arguments (`Slot::maps_io`), not read
    // from measured times; a mapped run reports zero H2D and D2H by construction.
    let ok = |slot: &dyn Slot, job: &dyn CudaJob, (iw, ow), t: &gmprt_offload::PhaseTimes, mapped: bool| {
        assert_eq!(slot.maps_io(job, iw, ow, Phases::ALL), mapped, "{}: {iw} + {ow} words", job.name());
        if mapped {
            assert_eq!((t.h2d, t.d2h), (Duration::ZERO, Duration::ZERO), "{t:?}");
        }
    };
    // Black-Scholes: 6 input and 6 output words per contract.
    let small = 64;
    let big = cuda::MAPPED_IO_MAX_BYTES / (4 * (IN_WORDS + OUT_WORDS)) + 1;
    let mut slot = b.new_slot(big * IN_WORDS, big * OUT_WORDS).expect("slot");
    for (n, mapped) in [(small, true), (big, false), (small, true)] {
        let chain = black_scholes::synthetic_chain(n, 5 + n as u64);
        let (iw, ow) = (n * IN_WORDS, n * OUT_WORDS);
        black_scholes::stage_words(&chain, &mut slot.staging_in()[..iw]);
        let copied = slot.run(&BsJob, n, iw, ow, Phases::ALL).expect("copied run");
        ok(&*slot, &BsJob, (iw, ow), &copied, false);
        let want = slot.staging_out()[..ow].to_vec();
        // Another chain's results in the output staging, so a run that wrote nothing fails.
        black_scholes::stage_words(&black_scholes::synthetic_chain(n, 99), &mut slot.staging_in()[..iw]);
        slot.run(&BsJob, n, iw, ow, Phases::ALL).expect("other chain");
        assert_ne!(&slot.staging_out()[..ow], &want[..]);
        black_scholes::stage_words(&chain, &mut slot.staging_in()[..iw]);
        let t = slot.run(&BlackScholes, n, iw, ow, Phases::ALL).expect("library job");
        ok(&*slot, &BlackScholes, (iw, ow), &t, mapped);
        assert_eq!(&slot.staging_out()[..ow], &want[..], "n = {n}, mapped {mapped}");
        println!("black_scholes n={n}: copies {copied:?}, library job {t:?}");
    }
    // Resident phases never map: the kernel alone reads the device copy.
    let resident = Phases { h2d: false, kernel: true, d2h: false };
    assert!(!slot.maps_io(&BlackScholes, small * IN_WORDS, small * OUT_WORDS, resident));
    let k = slot.run(&BlackScholes, small, small * IN_WORDS, small * OUT_WORDS, resident);
    assert!(k.expect("kernel only").h2d.is_zero());
    // SAXPY: x then y in, one word out per item.
    let n = 1000;
    let mut slot = b.new_slot(2 * n, n).expect("slot");
    let words: Vec<u32> = (0..2 * n).map(|i| det(i as u64, 9).to_bits()).collect();
    slot.staging_in().copy_from_slice(&words);
    let copied = slot.run(&SaxpyJob(1.5), n, 2 * n, n, Phases::ALL).expect("copied saxpy");
    ok(&*slot, &SaxpyJob(1.5), (2 * n, n), &copied, false);
    let want = slot.staging_out().to_vec();
    slot.run(&SaxpyJob(-2.0), n, 2 * n, n, Phases::ALL).expect("other saxpy");
    assert_ne!(slot.staging_out(), &want[..]);
    slot.staging_in().copy_from_slice(&words);
    let t = slot.run(&Saxpy { a: 1.5 }, n, 2 * n, n, Phases::ALL).expect("mapped saxpy");
    ok(&*slot, &Saxpy { a: 1.5 }, (2 * n, n), &t, true);
    assert_eq!(slot.staging_out(), &want[..]);
}

pub(super) fn slot_errors_leave_it_usable(b: &CudaBackend) {
    let n = 1000;
    let mut slot = b.new_slot(2 * n, n).expect("slot");
    // Too many words for the slot's buffers.
    let e = slot.run(&SaxpyJob(1.0), n, 2 * n + 1, n, Phases::ALL).expect_err("too big");
    assert!(matches!(e, OffloadError::Kernel(_)), "{e}");
    // A batch larger than the words handed to the kernel: refused by the launch.
    let e = slot.run(&SaxpyJob(1.0), n + 1, 2 * n, n, Phases::ALL).expect_err("short buffer");
    assert!(matches!(e, OffloadError::Kernel(_)), "{e}");
    // Still fine afterwards.
    for (i, w) in slot.staging_in().iter_mut().enumerate() {
        *w = (i as f32).to_bits();
    }
    slot.run(&SaxpyJob(2.0), n, 2 * n, n, Phases::ALL).expect("good run");
    let out = f32s(slot.staging_out());
    assert_eq!(out[3], 2.0 * 3.0 + (n + 3) as f32);
}

pub(super) fn two_slots_on_two_threads_stay_independent(b: &CudaBackend) {
    let n = 1 << 20;
    let start = std::time::Instant::now();
    let busy: Vec<std::time::Duration> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|t| {
                s.spawn(move || {
                    let mut slot = b.new_slot(2 * n, n).expect("slot");
                    let mut busy = std::time::Duration::ZERO;
                    for round in 0..20 {
                        let a = (t * 100 + round) as f32;
                        for (i, w) in slot.staging_in().iter_mut().enumerate() {
                            *w = ((i % 1000) as f32).to_bits();
                        }
                        let pt = slot.run(&SaxpyJob(a), n, 2 * n, n, Phases::ALL).expect("run");
                        busy += pt.h2d + pt.kernel + pt.d2h;
                        let out = slot.staging_out();
                        for i in [0, 1, 999, n - 1] {
                            let x = (i % 1000) as f32;
                            let y = ((n + i) % 1000) as f32;
                            assert_eq!(
                                f32::from_bits(out[i]),
                                a.mul_add(x, y),
                                "slot {t} round {round} #{i}"
                            );
                        }
                    }
                    busy
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("thread")).collect()
    });
    println!("two slots: wall {:?}, device-busy per slot {busy:?} (overlap if wall < sum)", start.elapsed());
}

pub(super) fn calibration_kernels_run(b: &CudaBackend) {
    let words = 1 << 20;
    let mut slot = b.new_slot(words, words).expect("slot");
    for (i, w) in slot.staging_in().iter_mut().enumerate() {
        *w = i as u32 ^ 0xA5A5_A5A5;
    }
    let t = slot.run(&CopyJob, words, words, words, Phases::ALL).expect("copy");
    println!("copy of {} MiB: {t:?}", (words * 4) >> 20);
    assert!(slot.staging_out().iter().enumerate().all(|(i, &w)| w == i as u32 ^ 0xA5A5_A5A5));
}

/// `[gpu]`: the launch floors (issue 12 item 9) are measured, finite, positive and ordered as
/// they must be (a round trip costs more than an enqueue), and the context's sync flag is
/// back to the backend's mode afterwards.
pub(super) fn launch_costs_are_finite_and_positive(b: &CudaBackend) {
    let before = b.effective_sync_mode().expect("cuCtxGetFlags");
    let c = b.launch_costs(1000).expect("launch_costs");
    println!("{}: {c}", b.describe());
    for (what, d) in [
        ("enqueue", c.enqueue),
        ("empty kernel", c.empty_kernel),
        ("launch+sync spin", c.launch_sync_spin),
        ("launch+sync blocking", c.launch_sync_blocking),
    ] {
        let s = d.as_secs_f64();
        assert!(s.is_finite() && s > 0.0 && s < 0.1, "{what} = {d:?} is not a plausible launch cost");
    }
    assert!(c.launch_sync_spin > c.enqueue, "a round trip includes its enqueue: {c}");
    assert_eq!(c.launches, 1000);
    assert_eq!(c.sync_mode, b.sync_mode());
    assert_eq!(b.effective_sync_mode().expect("cuCtxGetFlags"), before, "flag restored");
    assert!(matches!(b.launch_costs(0), Err(OffloadError::Config(_))));
}

/// `[gpu]`: warm-up compiles and loads every embedded module and creates a cuBLAS handle
/// (issue 12 item 8), each cost reported; a slot created and run afterwards compiles
/// nothing more, so no event span can contain a compile.
pub(super) fn first_use_is_paid_before_any_timed_run(b: &CudaBackend) {
    let fu = b.warm_up().expect("warm_up");
    println!("{fu}");
    assert!(fu.modules as usize >= ALL.len(), "every embedded module compiled: {fu}");
    assert!(
        fu.nvrtc_compile > std::time::Duration::ZERO && fu.module_load > std::time::Duration::ZERO,
        "{fu}"
    );
    assert!(fu.cublas_handles >= 1 && fu.cublas_handle > std::time::Duration::ZERO, "{fu}");
    assert!(b.describe().contains("first use: NVRTC compile"), "{}", b.describe());
    let words = 1 << 12;
    let mut slot = b.new_slot(words, words).expect("slot");
    slot.run(&CopyJob, words, words, words, Phases::ALL).expect("copy");
    let after = b.first_use();
    assert_eq!(
        (after.modules, after.nvrtc_compile),
        (fu.modules, fu.nvrtc_compile),
        "nothing compiled in a run"
    );
}

/// `[gpu]`: the driver, NVRTC and cuBLAS this process loaded are listed with a real path (no
/// stub) and CUDA 13 versions (issue 12 item 4), and the description names them.
pub(super) fn loaded_libraries_name_cuda_13_paths(b: &CudaBackend) {
    b.warm_up().expect("warm_up");
    let libs = cuda::loaded_libraries();
    for l in &libs {
        println!("{l}");
    }
    for name in ["libcuda", "libnvrtc", "libcublas"] {
        let l = libs.iter().find(|l| l.name == name).unwrap_or_else(|| panic!("{name} not listed: {libs:?}"));
        let path = l.path.as_ref().unwrap_or_else(|| panic!("{name}: no path from /proc/self/maps"));
        assert!(!cuda::libs::is_stub(path), "{l}");
        assert!(l.version.starts_with("13.") || name == "libcuda", "{l}");
        assert!(b.describe().contains(&path.display().to_string()), "{}", b.describe());
    }
}

/// `[gpu]`: one thread's pointer chase (the latency ladder's GPU rungs) ends on the word the
/// same walk ends on here, over a random cycle through 1,024 lines of 128 bytes; the FMA chain
/// and the bounce between two SMs report a positive time.
pub(super) fn latency_kernels_follow_the_chain(b: &CudaBackend) {
    const WORDS_PER_LINE: usize = 32;
    let lines = 1024;
    // Sattolo's shuffle (a single cycle), with a fixed LCG: any cycle will do.
    let mut order: Vec<usize> = (0..lines).collect();
    let mut x: u64 = 12345;
    for i in (1..lines).rev() {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        order.swap(i, (x >> 33) as usize % i);
    }
    let mut next = vec![0u32; lines * WORDS_PER_LINE];
    for (i, &j) in order.iter().enumerate() {
        next[i * WORDS_PER_LINE] = (j * WORDS_PER_LINE) as u32;
    }
    let steps = 12_345;
    let mut p = 0;
    for _ in 0..steps {
        p = next[p as usize];
    }
    let (ts, end) = b.chase(&next, steps, 2).expect("chase");
    println!("chase of {steps} loads in 128 KiB, twice: {ts:?}");
    assert_eq!(end, p, "the device's walk ends where the host's does");
    assert_eq!(ts.len(), 2);
    assert!(ts.iter().all(|&t| t > std::time::Duration::ZERO));
    let t = b.fma_chain(100_000).expect("fma_chain");
    println!("100,000 dependent FMAs: {t:?}");
    assert!(t > std::time::Duration::ZERO);
    // Two one-thread blocks on an otherwise idle GPU run at once: the bounce completes.
    let t = b.sm_ping_pong(10_000).expect("sm_ping_pong");
    println!("10,000 round trips between two SMs: {t:?}");
    assert!(t.is_some_and(|t| t > std::time::Duration::ZERO), "the two blocks did not run at once");
}
