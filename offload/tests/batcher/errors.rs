//! Bad input: a failed batch fails only its own items, invalid items are refused at submit
//! naming the field, and configurations that cannot work are refused.

use super::*;

#[test]
fn a_failed_batch_fails_only_its_own_items() {
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(4, LONG, 2)).unwrap();
    let rt = rt(2);
    let groups = [[0, 1, 2, 3], [4, POISON, 6, 7], [8, 9, 10, 11]];
    for (g, items) in groups.iter().enumerate() {
        let futs: Vec<_> = items.iter().map(|&x| b.submit(x)).collect();
        for (f, &x) in futs.into_iter().zip(items) {
            let r = rt.block_on(f);
            if g == 1 {
                match r {
                    Err(OffloadError::Batch { batch, kernel, msg }) => {
                        assert_eq!((batch, kernel), (1, "mix"));
                        assert!(msg.contains("poison"), "{msg}");
                    }
                    other => panic!("item {x} of the poisoned batch: {other:?}"),
                }
            } else {
                assert_eq!(r, Ok(mix(x)), "item {x} of a healthy batch");
            }
        }
    }
    let s = b.stats();
    assert_eq!((s.batches, s.failed_batches, s.failed_items, s.items), (3, 1, 4, 12));
    let tl = b.timelines();
    assert_eq!(tl.iter().filter(|t| !t.ok).map(|t| t.batch).collect::<Vec<_>>(), vec![1]);
    // The batcher keeps going after a failure.
    let f = b.submit(12);
    b.flush();
    assert_eq!(rt.block_on(f), Ok(mix(12)));
}

#[test]
fn invalid_items_are_rejected_at_submit_naming_the_field() {
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(4, LONG, 1)).unwrap();
    let f = b.submit(INVALID);
    assert!(!f.is_accepted());
    let e = rt(1).block_on(f).unwrap_err();
    assert!(matches!(&e, OffloadError::Invalid(InvalidInput { field: "item", .. })), "{e:?}");
    assert_eq!(b.occupancy().open_items, 0, "a rejected item never enters a batch");
    assert_eq!((b.stats().rejected_invalid, b.stats().items), (1, 0));
    assert!(b.report().to_string().contains("1 invalid"));

    let s = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), BatcherConfig::default()).unwrap();
    let e = rt(1).block_on(s.submit((f32::NAN, 1.0))).unwrap_err();
    assert!(e.to_string().contains("x ="), "{e}");

    let g = Batcher::new(SmallSgemm { m: 2, n: 3, k: 4 }, &Device::host(), BatcherConfig::default()).unwrap();
    let e = rt(1).block_on(g.submit((vec![0.0; 8], vec![0.0; 11]))).unwrap_err();
    assert_eq!(e, OffloadError::Kernel(KernelError::Shape { what: "b", expected: 12, got: 11 }));
    let e = rt(1).block_on(g.submit((vec![0.0; 7], vec![0.0; 12]))).unwrap_err();
    assert!(matches!(e, OffloadError::Kernel(KernelError::Shape { what: "a", .. })), "{e:?}");
    let mut b = vec![0.0; 12];
    b[5] = f32::INFINITY;
    let e = rt(1).block_on(g.submit((vec![0.0; 8], b))).unwrap_err();
    assert!(matches!(&e, OffloadError::Invalid(InvalidInput { field: "b", .. })), "{e:?}");
    assert_eq!(g.stats().items, 0, "no rejected item entered a batch");
}

#[test]
fn black_scholes_rejects_a_negative_vol() {
    let b = Batcher::new(BlackScholes, &Device::host(), BatcherConfig::default()).unwrap();
    let c = Contract { spot: 100.0, strike: 100.0, t: 1.0, rate: 0.05, vol: -0.2, kind: OptionKind::Call };
    let e = rt(1).block_on(b.submit(c)).unwrap_err();
    assert!(matches!(&e, OffloadError::Invalid(InvalidInput { field: "vol", .. })), "{e:?}");
    assert!(e.to_string().contains("vol"), "{e}");
}

#[test]
fn bad_configs_are_refused() {
    let d = Device::host();
    for (c, what) in [
        (cfg(0, LONG, 2), "max_batch"),
        (cfg(1 << 30, LONG, 2), "max_batch"),
        (cfg(8, LONG, 0), "in_flight"),
        (cfg(8, LONG, 1000), "in_flight"),
        (cfg(8, Duration::from_secs(7200), 2), "max_delay"),
    ] {
        match Batcher::new(Mix::default(), &d, c.clone()) {
            Err(OffloadError::Config(m)) => assert!(m.contains(what), "{m}"),
            other => panic!("{c:?}: {other:?}"),
        }
    }
    match Batcher::new(SmallSgemm { m: 0, n: 4, k: 4 }, &d, BatcherConfig::default()) {
        Err(OffloadError::Config(m)) => assert!(m.contains("words per item"), "{m}"),
        other => panic!("{other:?}"),
    }
    match Batcher::new(SmallSgemm { m: 4096, n: 4096, k: 4096 }, &d, cfg(1 << 20, LONG, 2)) {
        Err(OffloadError::Config(m)) => assert!(m.contains("slot limit"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(BatcherConfig::default().validate(), Ok(()));
}
