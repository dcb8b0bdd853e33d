//! The Batcher's per-item latency (submit → result, split into queue wait and batch time) and
//! the serde form of its `Report` and `BatchTimeline`s. Deterministic: every check is on counts
//! and on orderings that hold whatever the timings are (an item's latency is its queue wait
//! plus its batch time, so each percentile of the latency is at least the same percentile of
//! either part); no measured time is compared with a constant.
use gmprt_offload::runtime::{spawn, Runtime};
use gmprt_offload::{Batcher, BatcherConfig, Device, Report, Saxpy};
use gmprt_runtime::latency::LatencySummary;
use std::time::Duration;

/// `n` tasks each submit one SAXPY item and await it; returns the Batcher's report.
fn run(n: usize, config: BatcherConfig) -> Report {
    let rt = Runtime::builder().procs(2).build().unwrap();
    let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), config).unwrap();
    let b2 = b.clone();
    let ys: Vec<f32> = rt.block_on(async move {
        let hs: Vec<_> = (0..n)
            .map(|i| {
                let b = b2.clone();
                spawn(async move { b.submit((i as f32, 1.0)).await })
            })
            .collect();
        let mut ys = Vec::with_capacity(n);
        for h in hs {
            ys.push(h.await.unwrap().unwrap());
        }
        ys
    });
    for (i, y) in ys.iter().enumerate() {
        assert_eq!(*y, 2.0 * i as f32 + 1.0);
    }
    b.report()
}

fn ordered(s: &LatencySummary) {
    assert!(s.p50 <= s.p99 && s.p99 <= s.p999 && s.p999 <= s.max, "{s:?}");
}

/// Each percentile of the end-to-end latency is at least that of each of its two parts.
fn dominates(total: &LatencySummary, part: &LatencySummary) {
    assert!(
        total.p50 >= part.p50 && total.p99 >= part.p99 && total.p999 >= part.p999 && total.max >= part.max,
        "latency {total:?} below its part {part:?}"
    );
}

fn check(r: &Report, n: u64) {
    assert_eq!(r.stats.items, n);
    for s in [&r.latency, &r.queue_wait, &r.batch_time] {
        assert_eq!(s.count, n, "every batched item is counted once: {r}");
        ordered(s);
    }
    dominates(&r.latency, &r.queue_wait);
    dominates(&r.latency, &r.batch_time);
    // The run took time: some item waited for its batch to run.
    assert!(r.batch_time.max > Duration::ZERO);
}

#[test]
fn counts_every_item_and_percentiles_are_ordered() {
    let r = run(3000, BatcherConfig { max_batch: 64, ..BatcherConfig::default() });
    check(&r, 3000);
    let text = r.to_string();
    assert!(text.contains("submit → result") && text.contains("queue wait") && text.contains("batch time"));
    assert!(text.contains("(n=3000)"), "{text}");
}

#[test]
fn items_that_waited_for_room_are_counted_too() {
    // One slot of 4 items: 500 submits at once mostly go through the waiting (backpressure)
    // path, whose queue wait starts at `submit`, not when room was found.
    let r = run(500, BatcherConfig { max_batch: 4, in_flight: 1, ..BatcherConfig::default() });
    check(&r, 500);
    assert!(r.stats.batches >= 125);
}

#[test]
fn report_and_timelines_serialise() {
    let rt = Runtime::builder().procs(2).build().unwrap();
    let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), BatcherConfig::default()).unwrap();
    let b2 = b.clone();
    rt.block_on(async move {
        let hs: Vec<_> = (0..100).map(|i| spawn(b2.submit((i as f32, 0.0)))).collect();
        for h in hs {
            h.await.unwrap().unwrap();
        }
    });
    let r = serde_json::to_value(b.report()).unwrap();
    assert_eq!(r["kernel"], "saxpy");
    assert_eq!(r["stats"]["items"], 100);
    assert_eq!(r["latency"]["count"], 100);
    // Durations are serde's default: {"secs", "nanos"}.
    assert!(r["latency"]["max"]["secs"].is_u64() && r["latency"]["max"]["nanos"].is_u64(), "{r}");
    assert_eq!(r["phases"][0]["phase"], "queue_wait");
    assert!(r["model_error"].is_null());
    let t = serde_json::to_value(b.timelines()).unwrap();
    let first = &t[0];
    assert_eq!(first["device"], "host");
    assert_eq!(first["placement"], "gpu");
    assert!(
        ["full", "deadline", "flush", "shutdown"].contains(&first["closed_by"].as_str().unwrap()),
        "{first}"
    );
    let total: u64 = t.as_array().unwrap().iter().map(|x| x["n"].as_u64().unwrap()).sum();
    assert_eq!(total, 100);
}
