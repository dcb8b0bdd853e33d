//! `[nvrtc]` and `[host]`: every CUDA source compiles, a compile error comes back with its log, the
//! CPU twin meets the sources' known answers, `probe` agrees with `CudaBackend::new`; and the
//! `[gpu]` probe test, the device describing itself.

use super::*;

// ---------------------------------------------------------------- NVRTC only (no GPU) ---

pub(super) fn nvrtc_compiles_every_source() {
    let version = nvrtc::version().expect("nvrtcVersion");
    for cc in [(9, 0), (8, 0)] {
        for src in ALL {
            let ptx = nvrtc::compile(src, cc).unwrap_or_else(|e| panic!("{} for {cc:?}: {e}", src.name));
            let text = ptx.to_src();
            // GMPRT_PTX_DIR=dir keeps the PTX (e.g. for `ptxas -arch=sm_90 -v` register checks).
            if let Some(dir) = std::env::var_os("GMPRT_PTX_DIR") {
                let path =
                    std::path::Path::new(&dir).join(format!("{}_{}.ptx", src.name, nvrtc::arch_for(cc)));
                std::fs::write(&path, &text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
            }
            for f in src.functions {
                assert!(
                    text.contains(&format!(".entry {f}(")),
                    "{}: PTX for {cc:?} has no entry {f}",
                    src.name
                );
            }
            println!(
                "nvrtc {version:?}: {} compiles for {} ({} bytes of PTX)",
                src.name,
                nvrtc::arch_for(cc),
                text.len()
            );
        }
    }
}

pub(super) fn nvrtc_reports_compile_errors_with_the_log() {
    let bad = CudaSource {
        name: "broken",
        src: "extern \"C\" __global__ void broken(float* x) { x[0] = undeclared_name; }",
        functions: &["broken"],
    };
    match nvrtc::compile(&bad, (9, 0)) {
        Err(OffloadError::Driver { op, msg }) => {
            assert_eq!(op, "nvrtc compile broken");
            assert!(msg.contains("undeclared_name"), "the log should name the error: {msg}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

/// Known answers of `gmprt_pi_hits`, counted by a host (g++) build of
/// `kernels/cuda/monte_carlo.cu`'s own Philox and hit test; that Philox reproduces Random123's
/// published philox4x32_10 test vectors. The GPU test below checks the device against them.
pub(super) const PI_KNOWN: [(u64, u64, u64); 3] =
    [(42, 1_000_000, 1_571_050), (1, 1000, 1603), (0xDEAD_BEEF_CAFE_BABE, 3_000_017, 4_711_977)];

pub(super) fn cpu_pi_hits_match_the_cuda_source_known_answers() {
    // No GPU needed: ties the CPU twin to the stream the .cu source draws.
    for (seed, blocks, hits) in PI_KNOWN {
        assert_eq!(gmprt_kernels::monte_carlo::pi_hits(seed, 0, blocks), hits, "seed {seed} blocks {blocks}");
    }
}

/// `[host]`: without a device, `probe` and `CudaBackend::new` give the same reason (and
/// neither panics); with one, the shared backend opened.
pub(super) fn probe_and_new_never_panic_and_agree() {
    match cuda::probe(0) {
        Err(reason) => {
            assert!(!reason.is_empty());
            match CudaBackend::new(0) {
                Err(OffloadError::NoDevice { reason: r }) => assert_eq!(r, reason),
                Err(e) => panic!("expected NoDevice, got {e}"),
                Ok(_) => panic!("probe failed but CudaBackend::new succeeded"),
            }
        }
        Ok(()) => {
            if let Err(gate) = gpu() {
                panic!("probe passed but the backend did not open: {gate:?}");
            }
        }
    }
}

/// `[gpu]`: the description names the device; a far ordinal is refused by number.
pub(super) fn device_describes_itself(b: &CudaBackend) {
    let d = b.describe();
    assert!(d.starts_with("cuda:0 ") && d.contains("(sm_") && d.contains("driver "), "{d}");
    println!("{d}; {} SMs", b.sm_count());
    let far = cuda::probe(1 << 20).expect_err("no machine has 2^20 GPUs");
    assert!(far.starts_with("device 1048576 not present (only "), "{far}");
}
