//! Device choice (`GMPRT_DEVICE` through `Device::from_choice`, so no test mutates the
//! process environment) and the Host device's bulk helpers against the CPU kernels.
use gmprt_offload::kernels::black_scholes::{self, gather_words, stage_words, synthetic_chain, Contract};
use gmprt_offload::kernels::{monte_carlo, sgemm};
use gmprt_offload::{BlackScholes, Device, DeviceKind, OffloadError};

/// Whether this machine could have a CUDA device at all (a driver node exists).
fn maybe_gpu() -> bool {
    std::path::Path::new("/dev/nvidia0").exists() || std::path::Path::new("/dev/nvidiactl").exists()
}

#[test]
fn detect_never_panics_and_says_which_device() {
    // Whatever GMPRT_DEVICE holds in this environment, detect returns instead of panicking.
    match Device::detect() {
        Ok(d) => {
            assert!(!d.describe().is_empty());
            if d.kind() == DeviceKind::Host {
                assert!(d.describe().starts_with("host ("), "{}", d.describe());
            }
        }
        Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. } | OffloadError::Config(_)), "{e:?}"),
    }
}

#[test]
fn auto_falls_back_to_host_with_the_reason() {
    for choice in [None, Some(""), Some("auto"), Some(" AUTO ")] {
        let d = Device::from_choice(choice).expect("auto never fails");
        match d.kind() {
            DeviceKind::Host => {
                let reason = d.reason().expect("a Host chosen by detection keeps why");
                assert!(reason.starts_with("no CUDA: "), "{reason}");
                assert!(d.describe().contains(reason), "{}", d.describe());
                assert!(d.cuda_backend().is_none());
            }
            DeviceKind::Cuda => assert!(d.cuda_backend().is_some()),
            _ => unreachable!("only Host and Cuda exist"),
        }
    }
}

#[test]
fn host_is_forced_by_the_choice() {
    for choice in ["host", "HOST", " host\n"] {
        let d = Device::from_choice(Some(choice)).unwrap();
        assert_eq!(d.kind(), DeviceKind::Host);
        assert_eq!(d.kind_name(), "host");
        assert_eq!(d.reason(), Some("GMPRT_DEVICE=host"));
        assert!(d.describe().starts_with("host (") && d.describe().contains("GMPRT_DEVICE=host"));
    }
    let h = Device::host();
    assert_eq!((h.kind(), h.reason()), (DeviceKind::Host, None));
    assert!(h.describe().ends_with(" threads)"), "{}", h.describe());
}

#[test]
fn forcing_cuda_without_one_is_no_device() {
    match Device::from_choice(Some("cuda")) {
        Ok(d) => {
            assert!(maybe_gpu(), "CUDA opened on a machine without a driver node?");
            assert_eq!(d.kind(), DeviceKind::Cuda);
        }
        Err(OffloadError::NoDevice { reason }) => assert!(!reason.is_empty()),
        Err(e) => assert!(maybe_gpu(), "without a GPU forcing cuda must be NoDevice, got {e:?}"),
    }
    if !maybe_gpu() {
        let e = Device::cuda(0).unwrap_err();
        assert!(matches!(&e, OffloadError::NoDevice { reason } if !reason.is_empty()), "{e:?}");
        assert!(e.to_string().starts_with("no CUDA device: "), "{e}");
    }
}

#[test]
fn an_unknown_choice_is_a_config_error_naming_the_values() {
    for bad in ["gpu", "cpu", "cuda:0", "1"] {
        match Device::from_choice(Some(bad)) {
            Err(OffloadError::Config(m)) => {
                assert!(m.contains("GMPRT_DEVICE") && m.contains("`host`") && m.contains("`cuda`"), "{m}");
                assert!(m.contains(&bad.to_ascii_lowercase()), "{m}");
            }
            other => panic!("{bad}: {other:?}"),
        }
    }
}

#[test]
fn run_bulk_black_scholes_matches_the_cpu_kernel() {
    let d = Device::host();
    let n = 1000;
    let chain = synthetic_chain(n, 11);
    let mut input = vec![0u32; n * black_scholes::IN_WORDS];
    stage_words(&chain, &mut input);
    let mut expect = vec![0u32; n * black_scholes::OUT_WORDS];
    black_scholes::price_greeks_words(n, &input, &mut expect).unwrap();
    for resident in [false, true] {
        let (out, ph) = d
            .run_bulk(
                &BlackScholes,
                n,
                &input,
                n * black_scholes::IN_WORDS,
                n * black_scholes::OUT_WORDS,
                resident,
            )
            .unwrap();
        assert_eq!(out, expect);
        assert!(ph.kernel > std::time::Duration::ZERO);
        assert_eq!(gather_words(n, &out, 3), gather_words(n, &expect, 3));
    }
}

#[test]
fn host_sgemm_matches_the_naive_product() {
    let d = Device::host();
    let (m, n, k) = (33, 17, 29);
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 5) % 11) as f32 - 5.0).collect();
    let mut c = vec![0f32; m * n];
    let mut r = vec![0f32; m * n];
    d.sgemm(m, n, k, &a, &b, &mut c).unwrap();
    sgemm::sgemm_naive(m, n, k, &a, &b, &mut r).unwrap();
    for (x, y) in c.iter().zip(&r) {
        assert!((x - y).abs() <= 1e-3 * y.abs().max(1.0), "{x} vs {y}");
    }
    let e = d.sgemm(m, n, k, &a[1..], &b, &mut c).unwrap_err();
    assert!(matches!(e, OffloadError::Kernel(_)), "{e:?}");
}

#[test]
fn host_sgemm_on_the_pool_is_bit_identical_to_scoped_threads() {
    use gmprt_offload::pool::{host_threads, HostPool};
    let d = Device::host();
    let (m, n, k) = (61, 47, 53);
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7919) % 1009) as f32 / 1009.0 - 0.5).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 104_729) % 997) as f32 / 997.0 - 0.5).collect();
    let mut on_pool = vec![0f32; m * n];
    d.sgemm(m, n, k, &a, &b, &mut on_pool).unwrap();
    let mut scoped = vec![0f32; m * n];
    sgemm::sgemm_crate(m, n, k, &a, &b, &mut scoped, host_threads()).unwrap();
    let bits = |c: &[f32]| c.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&on_pool), bits(&scoped));
    // The pool is one per process: a second call reuses it.
    assert!(std::ptr::eq(HostPool::global(), HostPool::global()));
}

#[test]
fn a_panicking_part_on_the_host_pool_reaches_the_caller() {
    use gmprt_offload::pool::HostPool;
    let r = std::panic::catch_unwind(|| {
        HostPool::global().split_blocks(8, 4, |first, _| assert!(first != 4, "part at block {first}"))
    });
    let msg = r.unwrap_err().downcast::<String>().map(|s| *s).unwrap_or_default();
    assert!(msg.contains("part at block 4"), "{msg}");
    // The pool still works after a part panicked.
    assert_eq!(HostPool::global().split_blocks(3, 4, |f, c| f + c), [1, 2, 3]);
}

/// The Monte Carlo tests' contract: a call a little out of the money.
const MC_CALL: Contract = Contract {
    spot: 100.0,
    strike: 105.0,
    t: 0.5,
    rate: 0.03,
    vol: 0.25,
    kind: black_scholes::OptionKind::Call,
};

#[test]
fn host_monte_carlo_matches_the_single_thread_stream() {
    let d = Device::host();
    for blocks in [0u64, 1, 7, 10_000] {
        let (hits, _) = d.pi_hits(42, blocks).unwrap();
        assert_eq!(hits, monte_carlo::pi_hits(42, 0, blocks), "blocks {blocks}");
    }
    let c = MC_CALL;
    let ((s, q), _) = d.option_paths_sum(9, &c, 5_000).unwrap();
    let (rs, rq) = monte_carlo::option_paths_sum(9, &c, 0, 5_000);
    assert!((s - rs).abs() <= 1e-9 * rs.abs().max(1.0) && (q - rq).abs() <= 1e-9 * rq.abs().max(1.0));
    let bad = Contract { vol: -0.2, ..c };
    let e = d.option_paths_sum(9, &bad, 10).unwrap_err();
    assert!(e.to_string().contains("vol"), "{e}");
}

#[test]
fn host_monte_carlo_batch_equals_the_cpu_twin_contract_by_contract() {
    let d = Device::host();
    let base = MC_CALL;
    let contracts: Vec<Contract> = (0..37)
        .map(|i| Contract {
            spot: 90.0 + i as f32,
            kind: if i % 2 == 0 { black_scholes::OptionKind::Put } else { black_scholes::OptionKind::Call },
            ..base
        })
        .collect();
    let seeds: Vec<u64> = (0..37).map(|i| 1000 + i).collect();
    for blocks in [0u64, 1, 300] {
        let (sums, _) = d.option_paths_sum_many(&seeds, &contracts, blocks).unwrap();
        let want: Vec<(f64, f64)> = seeds
            .iter()
            .zip(&contracts)
            .map(|(&s, c)| monte_carlo::option_paths_sum(s, c, 0, blocks))
            .collect();
        // Each contract's sums come from one single-threaded call: bit for bit, in order.
        assert_eq!(sums, want, "blocks {blocks}");
    }
    assert!(d.option_paths_sum_many(&[], &[], 10).unwrap().0.is_empty());
    // Bad input: the first bad contract is named, unequal slices are refused.
    let mut bad = contracts.clone();
    bad[5].vol = -0.1;
    let e = d.option_paths_sum_many(&seeds, &bad, 10).unwrap_err().to_string();
    assert!(e.contains("contract 5") && e.contains("vol"), "{e}");
    let e = d.option_paths_sum_many(&seeds[..3], &contracts, 10).unwrap_err().to_string();
    assert!(e.contains("3 seeds for 37 contracts"), "{e}");
}

// ---- issue 12: CUDA library checks, sync mode (pure parts; no GPU needed) ----

use gmprt_offload::cuda::libs::{self, CudaLib, EXPECTED_CUDA_MAJOR};
use gmprt_offload::cuda::SyncMode;
use std::path::{Path, PathBuf};

/// A synthetic `/proc/self/maps`: the driver, CUDA 13's NVRTC from a wheel, its builtins,
/// cuBLAS and cuBLASLt, libcudart, a path with a space, a deleted file and anonymous maps.
const MAPS: &str = "\
55d0c0a00000-55d0c0a2c000 r--p 00000000 08:01 1234  /usr/bin/cat
7f1000000000-7f1000100000 r--p 00000000 00:2f 77    /usr/local/nvidia/lib64/libcuda.so.580.95.05
7f1000100000-7f1000900000 r-xp 00100000 00:2f 77    /usr/local/nvidia/lib64/libcuda.so.580.95.05
7f2000000000-7f2000100000 r--p 00000000 08:01 88    /venv/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc.so.13
7f2100000000-7f2100100000 r--p 00000000 08:01 89    /venv/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc-builtins.so.13.0
7f3000000000-7f3000100000 r--p 00000000 08:01 90    /usr/local/cuda/lib64/libcublasLt.so.13.1.0.3
7f3100000000-7f3100100000 r--p 00000000 08:01 91    /usr/local/cuda/lib64/libcublas.so.13.1.0.3
7f3200000000-7f3200100000 r--p 00000000 08:01 92    /usr/local/cuda/lib64/libcudart.so.13.0.96
7f3300000000-7f3300100000 r--p 00000000 08:01 93    /opt/my libs/libcublas.so.13.1.0.3 (deleted)
7f4000000000-7f4000021000 rw-p 00000000 00:00 0
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0     [stack]
";

#[test]
fn maps_parser_finds_each_library_by_its_own_file_name() {
    let p = |s: &str| PathBuf::from(s);
    assert_eq!(
        libs::paths_in_maps(MAPS, CudaLib::Driver),
        vec![p("/usr/local/nvidia/lib64/libcuda.so.580.95.05")],
        "libcuda once (two mappings of one file), never libcudart"
    );
    assert_eq!(
        libs::paths_in_maps(MAPS, CudaLib::Nvrtc),
        vec![p("/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc.so.13")],
        "not libnvrtc-builtins"
    );
    assert_eq!(
        libs::paths_in_maps(MAPS, CudaLib::Cublas),
        vec![p("/usr/local/cuda/lib64/libcublas.so.13.1.0.3"), p("/opt/my libs/libcublas.so.13.1.0.3")],
        "not libcublasLt; a path with a space and a deleted file are kept whole"
    );
    assert!(libs::paths_in_maps("", CudaLib::Driver).is_empty());
    assert!(libs::paths_in_maps("garbage\n\n  \n", CudaLib::Nvrtc).is_empty());
}

#[test]
fn version_suffixes_and_stubs_are_read_from_the_path() {
    assert_eq!(libs::file_version(Path::new("/x/libnvrtc.so.13.0.88")).as_deref(), Some("13.0.88"));
    assert_eq!(libs::file_major(Path::new("/x/libnvrtc.so.13.0.88")), Some(13));
    assert_eq!(libs::file_major(Path::new("/x/libcublas.so.12")), Some(12));
    assert_eq!(libs::file_version(Path::new("/x/libcublas.so")), None);
    assert_eq!(libs::file_major(Path::new("/x/libcuda.so.1")), Some(1));
    assert!(libs::is_stub(Path::new("/usr/local/cuda/lib64/stubs/libcuda.so")));
    assert!(libs::is_stub(Path::new("/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so.1")));
    assert!(!libs::is_stub(Path::new("/usr/local/nvidia/lib64/libcuda.so.1")));
    assert!(!libs::is_stub(Path::new("/opt/stubsy/libcuda.so.1")), "a component named stubs, not a prefix");
}

#[test]
fn a_stub_or_another_cuda_major_is_refused_with_the_path_and_the_fix() {
    let e = |lib, paths: &[&str], major, v: &str| {
        let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
        libs::verify(lib, &paths, major, v)
    };
    // The good case: path, reported version and file version kept.
    let ok = e(CudaLib::Nvrtc, &["/w/cu13/lib/libnvrtc.so.13"], 13, "13.0").expect("CUDA 13 NVRTC");
    assert_eq!(ok.name, "libnvrtc");
    assert_eq!(ok.version, "13.0");
    assert_eq!(ok.file_version.as_deref(), Some("13"));
    assert!(ok.to_string().contains("/w/cu13/lib/libnvrtc.so.13"), "{ok}");
    let drv =
        e(CudaLib::Driver, &["/usr/local/nvidia/lib64/libcuda.so.580.95.05"], 13, "13.0").expect("driver");
    assert_eq!(drv.file_version.as_deref(), Some("580.95.05"));
    assert!(
        e(CudaLib::Driver, &[], 13, "13.0").is_ok_and(|l| l.path.is_none()),
        "maps unreadable: no refusal"
    );

    // The driver stub.
    let msg = e(CudaLib::Driver, &["/usr/local/cuda/lib64/stubs/libcuda.so"], 13, "13.0").unwrap_err();
    assert!(msg.contains("stub") && msg.contains("/usr/local/cuda/lib64/stubs/libcuda.so"), "{msg}");
    assert!(msg.contains("LD_LIBRARY_PATH"), "says how to fix: {msg}");
    // A CUDA 12 NVRTC found by cudarc's fallback: by the reported version, or by the file.
    let msg = e(CudaLib::Nvrtc, &["/usr/local/cuda-12.4/lib64/libnvrtc.so.12"], 12, "12.4").unwrap_err();
    assert!(msg.contains("libnvrtc 12.4") && msg.contains("libnvrtc.so.12"), "{msg}");
    assert!(msg.contains(&format!("CUDA {EXPECTED_CUDA_MAJOR}")) && msg.contains("LD_LIBRARY_PATH"), "{msg}");
    let msg = e(CudaLib::Cublas, &["/a/libcublas.so.13", "/b/libcublas.so.11"], 13, "13.1.0").unwrap_err();
    assert!(msg.contains("/b/libcublas.so.11"), "names the odd one out: {msg}");
    assert!(
        e(CudaLib::Cublas, &["/a/libcublas.so"], 12, "12.8.4").is_err(),
        "unversioned file, CUDA 12 inside"
    );
    // A driver too old for CUDA 13 PTX and cuBLAS.
    let msg = e(CudaLib::Driver, &["/usr/lib/libcuda.so.535.1"], 12, "12.2").unwrap_err();
    assert!(msg.contains("12.2") && msg.contains("driver"), "{msg}");
}

#[test]
fn loaded_libraries_is_empty_or_names_real_paths() {
    // No GPU libraries load here; where they do, each entry has a name and a version.
    for lib in gmprt_offload::loaded_libraries() {
        assert!(lib.name.starts_with("lib") && !lib.version.is_empty(), "{lib:?}");
    }
}

#[test]
fn sync_mode_parses_the_three_values_and_names_a_bad_one() {
    assert_eq!(SyncMode::parse("spin").unwrap(), SyncMode::Spin);
    assert_eq!(SyncMode::parse(" Blocking ").unwrap(), SyncMode::Blocking);
    assert_eq!(SyncMode::parse("blocking_sync").unwrap(), SyncMode::Blocking);
    assert_eq!(SyncMode::parse("AUTO").unwrap(), SyncMode::Auto);
    assert_eq!(SyncMode::parse("").unwrap(), SyncMode::Auto, "empty means the default");
    assert_eq!(SyncMode::default(), SyncMode::Auto);
    for bad in ["yield", "spinning", "1", "blocking,spin"] {
        match SyncMode::parse(bad) {
            Err(OffloadError::Config(msg)) => {
                assert!(msg.contains("GMPRT_CUDA_SYNC") && msg.contains(bad), "{msg}");
                assert!(msg.contains("spin") && msg.contains("blocking") && msg.contains("auto"), "{msg}");
            }
            other => panic!("{bad:?} accepted: {other:?}"),
        }
    }
    for m in [SyncMode::Spin, SyncMode::Blocking, SyncMode::Auto] {
        assert_eq!(SyncMode::parse(m.name()).unwrap(), m);
        assert_eq!(SyncMode::from_ctx_flags(m.ctx_flags()), Some(m), "flags round-trip");
        assert_eq!(SyncMode::from_ctx_flags(m.ctx_flags() | 0x8), Some(m), "other flag bits ignored");
    }
    assert_eq!(SyncMode::from_ctx_flags(2), None, "CU_CTX_SCHED_YIELD is none of ours");
}

#[test]
fn host_devices_have_no_first_use_costs() {
    let h = Device::host();
    assert_eq!(h.warm_up().unwrap(), None);
    assert_eq!(h.first_use(), None);
}

/// TF32 and BF16 on the Host (issue 27, item 3): the inputs rounded as the tensor cores round
/// them, then FP32. Each element within its precision's bound of the exact product, the
/// rounding visible (the results are not FP32's), and the same rounding on the simulated device;
/// bad shapes are refused as for FP32.
#[test]
fn host_tf32_and_bf16_round_the_inputs_and_stay_within_their_bound() {
    use gmprt_offload::kernels::precision::Precision;
    use gmprt_offload::model::DeviceProfile;
    let (m, n, k) = (19, 23, 200);
    // Values with full 23-bit mantissas, in [-1, 1).
    let val = |i: usize, s: u64| {
        let x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15 ^ s);
        ((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    };
    let a: Vec<f32> = (0..m * k).map(|i| val(i, 1)).collect();
    let b: Vec<f32> = (0..k * n).map(|i| val(i, 2)).collect();
    let exact = |i: usize, j: usize| (0..k).map(|p| a[i * k + p] as f64 * b[p * n + j] as f64).sum::<f64>();
    let scale =
        |i: usize, j: usize| (0..k).map(|p| (a[i * k + p] as f64 * b[p * n + j] as f64).abs()).sum::<f64>();
    let mut fp32 = vec![0f32; m * n];
    Device::host().sgemm(m, n, k, &a, &b, &mut fp32).unwrap();
    let sim = Device::simulated(DeviceProfile::published_h100());
    for p in [Precision::Tf32, Precision::Bf16] {
        let mut c = vec![f32::NAN; m * n];
        Device::host().sgemm_with(p, m, n, k, &a, &b, &mut c).unwrap();
        let tol = p.tolerance(k);
        for i in 0..m {
            for j in 0..n {
                let (g, w, s) = (c[i * n + j] as f64, exact(i, j), scale(i, j));
                assert!((g - w).abs() <= tol * s, "{p} ({i},{j}): {g} vs exact {w}, bound {}", tol * s);
            }
        }
        let differs = c.iter().zip(&fp32).filter(|(x, y)| x != y).count();
        assert!(differs > m * n / 2, "{p}: only {differs} of {} elements differ from FP32", m * n);
        let mut s = vec![f32::NAN; m * n];
        sim.sgemm_with(p, m, n, k, &a, &b, &mut s).unwrap();
        assert_eq!(s, c, "{p}: the simulated device rounds as the Host does");
        let e = Device::host().sgemm_with(p, m, n, k, &a[1..], &b, &mut c).unwrap_err();
        assert!(matches!(e, OffloadError::Kernel(_)), "{e:?}");
    }
}
