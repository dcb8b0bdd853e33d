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
fn host_monte_carlo_matches_the_single_thread_stream() {
    let d = Device::host();
    for blocks in [0u64, 1, 7, 10_000] {
        let (hits, _) = d.pi_hits(42, blocks).unwrap();
        assert_eq!(hits, monte_carlo::pi_hits(42, 0, blocks), "blocks {blocks}");
    }
    let c = Contract {
        spot: 100.0,
        strike: 105.0,
        t: 0.5,
        rate: 0.03,
        vol: 0.25,
        kind: black_scholes::OptionKind::Call,
    };
    let ((s, q), _) = d.option_paths_sum(9, &c, 5_000).unwrap();
    let (rs, rq) = monte_carlo::option_paths_sum(9, &c, 0, 5_000);
    assert!((s - rs).abs() <= 1e-9 * rs.abs().max(1.0) && (q - rq).abs() <= 1e-9 * rq.abs().max(1.0));
    let bad = Contract { vol: -0.2, ..c };
    let e = d.option_paths_sum(9, &bad, 10).unwrap_err();
    assert!(e.to_string().contains("vol"), "{e}");
}
