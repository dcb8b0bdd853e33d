//! What a Batcher reports (its timelines), the Host slot's phases, the crate's kernels through
//! a Batcher, and what a task dump says about a waiting submit.

use super::*;

#[test]
fn report_and_timelines() {
    // Items that find the open batch full wait and join a later batch, which only its
    // deadline closes: keep it short.
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(8, Duration::from_millis(1), 2)).unwrap();
    let futs: Vec<_> = (0..20).map(|x| b.submit(x)).collect();
    let rt = rt(2);
    for f in futs {
        rt.block_on(f).unwrap();
    }
    let r = b.report();
    assert_eq!(r.stats.items, 20);
    assert_eq!(r.phases.len(), 6);
    let text = r.to_string();
    for w in [
        "kernel mix",
        "host (",
        "queue_wait",
        "staging",
        "h2d",
        "kernel",
        "d2h",
        "scatter",
        "median",
        "p99",
        "launches",
        "PCIe",
    ] {
        assert!(text.contains(w), "report lacks {w:?}:\n{text}");
    }
    let tl = b.timelines();
    let mut seqs: Vec<u64> = tl.iter().map(|t| t.batch).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (0..tl.len() as u64).collect::<Vec<_>>(), "batches numbered from 0 without gaps");
    assert!(tl.iter().all(|t| t.start >= t.queue_wait || t.start.is_zero()));
}

#[test]
fn host_slot_runs_each_phase() {
    let d = Device::host();
    let job = Mix::default();
    let mut slot = d.backend().new_slot(8, 8).unwrap();
    slot.staging_in()[..4].copy_from_slice(&[1, 2, 3, 4]);
    // Kernel without H2D reads the (zeroed) device buffer, not the staging one.
    slot.run(&job, 4, 4, 4, Phases { h2d: false, kernel: true, d2h: true }).unwrap();
    assert_eq!(&slot.staging_out()[..4], &[mix(0); 4]);
    slot.run(&job, 4, 4, 4, Phases::ALL).unwrap();
    assert_eq!(&slot.staging_out()[..4], &[mix(1), mix(2), mix(3), mix(4)]);
    assert!(slot.run(&job, 9, 9, 9, Phases::ALL).is_err(), "larger than the slot");
    // run_bulk: totals of words, resident or not.
    let input = [5u32, 6, 7];
    for resident in [false, true] {
        let (out, ph) = d.run_bulk(&job, 3, &input, 3, 3, resident).unwrap();
        assert_eq!(out, vec![mix(5), mix(6), mix(7)]);
        if resident {
            assert_eq!((ph.h2d, ph.d2h), (Duration::ZERO, Duration::ZERO));
        }
    }
    assert!(matches!(d.run_bulk(&job, 3, &input, 4, 3, false), Err(OffloadError::Kernel(_))));
    let e = d.run_bulk(&job, 2, &[POISON, 1], 2, 2, false).unwrap_err();
    assert!(e.to_string().contains("poison"), "{e}");
}

/// The crate's kernels through the Batcher, against their CPU entry points (many tasks, small
/// batches, so items land in batches of different sizes and positions).
#[test]
fn crate_kernels_through_the_batcher() {
    let rt = rt(2);
    let d = Device::host();
    let close = |x: f32, y: f32| (x - y).abs() <= 1e-5 * y.abs().max(1.0);

    let chain = gmprt_offload::kernels::black_scholes::synthetic_chain(300, 5);
    let bs = Batcher::new(BlackScholes, &d, cfg(64, Duration::from_micros(200), 2)).unwrap();
    let got: Vec<_> = rt.block_on({
        let (bs, chain) = (bs.clone(), chain.clone());
        async move {
            let hs: Vec<_> = chain
                .into_iter()
                .map(|c| {
                    let b = bs.clone();
                    gmprt_offload::runtime::spawn(async move { b.submit(c).await })
                })
                .collect();
            let mut out = Vec::new();
            for h in hs {
                out.push(h.await.unwrap().unwrap());
            }
            out
        }
    });
    for (c, g) in chain.iter().zip(&got) {
        let mut input = [0u32; 6];
        gmprt_offload::kernels::black_scholes::stage_words(std::slice::from_ref(c), &mut input);
        let mut out = [0u32; 6];
        gmprt_offload::kernels::black_scholes::price_greeks_words(1, &input, &mut out).unwrap();
        let r = gmprt_offload::kernels::black_scholes::gather_words(1, &out, 0);
        for (x, y) in [(g.price, r.price), (g.delta, r.delta), (g.gamma, r.gamma), (g.vega, r.vega)] {
            assert!(close(x, y), "{c:?}: {x} vs {y}");
        }
    }

    let sx = Batcher::new(Saxpy { a: 1.5 }, &d, cfg(16, Duration::from_micros(200), 2)).unwrap();
    let futs: Vec<_> = (0..100).map(|i| sx.submit((i as f32, 2.0 * i as f32))).collect();
    for (i, f) in futs.into_iter().enumerate() {
        let v = rt.block_on(f).unwrap();
        assert!(close(v, 1.5 * i as f32 + 2.0 * i as f32), "{i}: {v}");
    }

    let (m, n, k) = (3, 4, 5);
    let g = Batcher::new(SmallSgemm { m, n, k }, &d, cfg(8, Duration::from_micros(200), 2)).unwrap();
    let items: Vec<(Vec<f32>, Vec<f32>)> = (0..20)
        .map(|s| {
            let a = (0..m * k).map(|i| ((i + s) % 7) as f32 - 3.0).collect();
            let b = (0..k * n).map(|i| ((i * 3 + s) % 5) as f32 - 2.0).collect();
            (a, b)
        })
        .collect();
    let futs: Vec<_> = items.iter().map(|it| g.submit(it.clone())).collect();
    for ((a, b), f) in items.iter().zip(futs) {
        let c = rt.block_on(f).unwrap();
        let mut r = vec![0f32; m * n];
        gmprt_offload::kernels::sgemm::sgemm_naive(m, n, k, a, b, &mut r).unwrap();
        assert_eq!(c.len(), m * n);
        assert!(c.iter().zip(&r).all(|(&x, &y)| close(x, y)), "{c:?} vs {r:?}");
    }
}

#[test]
fn a_task_dump_says_what_each_submit_waits_on() {
    use gmprt_offload::runtime::dump::{TaskState, WaitReason};
    let gate = Arc::new(Gate::default());
    // Two Ps: batch 0 may run on the slot's worker thread or inline on the M that finds the
    // runtime quiescent (Host device); held in the kernel there, that M keeps its P, and the
    // other P runs the rest.
    let rt = rt(2);
    // One slot, one item per batch: the first item's batch runs and is held in the kernel, the
    // second fills the open batch, the third finds no room (backpressure).
    let b = Batcher::new(Mix { gate: Some(gate.clone()) }, &Device::host(), cfg(1, LONG, 1)).unwrap();
    let hs: Vec<_> = (0..3)
        .map(|x| {
            let b = b.clone();
            rt.spawn(async move { b.submit(x).await })
        })
        .collect();
    gate.wait_entered(1);
    // The slot took batch 0 (and woke any waiter it gave room) before entering the kernel, so
    // from here each task only moves towards its final wait. Wait for that state, observed
    // through the runtime's dump (an event, not a time).
    let dump = loop {
        let d = rt.dump();
        let parked = hs
            .iter()
            .filter(|h| d.tasks.iter().any(|t| t.id == Some(h.id()) && t.state == TaskState::Parked))
            .count();
        if parked == hs.len() {
            break d;
        }
        std::thread::yield_now();
    };
    let on = |name: &str| {
        dump.tasks
            .iter()
            .filter(|t| matches!(&t.wait, WaitReason::External { what, .. } if *what == name))
            .count()
    };
    assert_eq!((on("Batcher batch"), on("Batcher room")), (2, 1), "{dump}");
    assert!(dump.to_string().contains("Batcher batch #0"), "{dump}");
    gate.release(usize::MAX / 2);
    let mut outs: Vec<u32> = hs.into_iter().map(|h| rt.block_on(h).unwrap().unwrap()).collect();
    outs.sort_unstable();
    let mut want: Vec<u32> = (0..3).map(mix).collect();
    want.sort_unstable();
    assert_eq!(outs, want);
}
