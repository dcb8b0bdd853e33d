//! Issue 14 §1/§2: the runtime's trace and latency histograms.
//!
//! A small real run (spawns, a channel ping-pong, a timer, a `syscall`, a fan-out on 2 Ps) is
//! recorded with `Builder::trace`, and the file it writes at shutdown is loaded and checked
//! with `trace::check` (every slice nests, per-lane time order, flows with both ends, every
//! lane named) and for the kinds of events such a run must contain. Nothing here waits on a
//! clock or asserts on a measured time: each event asserted on is one the run causes by
//! construction (a poll per task, a wake per channel hand-off, a fired timer, a syscall).

use gmprt::runtime::chan::chan;
use gmprt::runtime::time::sleep;
use gmprt::runtime::trace::{self, check, Recorder};
use gmprt::runtime::{syscall, Runtime};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("gmprt-test-{name}-{}.json", std::process::id()))
}

fn load(path: &PathBuf) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("no trace at {}: {e}", path.display()));
    serde_json::from_slice(&bytes).expect("the trace is JSON")
}

/// The workload: every kind of event the trace must show.
fn workload(rt: &Runtime) {
    rt.block_on(async {
        // Inside the runtime the recorder is reachable.
        assert!(trace::current().is_some());
        // Ping-pong over unbuffered channels: each hand-off wakes the other task.
        let (ping_tx, ping_rx) = chan::<u32>(0);
        let (pong_tx, pong_rx) = chan::<u32>(0);
        let echo = gmprt::spawn(async move {
            while let Some(v) = ping_rx.recv().await {
                pong_tx.send(v + 1).await.unwrap();
            }
        });
        for i in 0..50 {
            ping_tx.send(i).await.unwrap();
            assert_eq!(pong_rx.recv().await, Some(i + 1));
        }
        drop(ping_tx);
        echo.await.unwrap();
        // A timer fired by an M.
        gmprt::spawn(async { sleep(Duration::from_millis(1)).await }).await.unwrap();
        // A blocking call.
        let v = gmprt::spawn(async {
            assert!(trace::current_task().is_some());
            syscall(|| 7).unwrap_or_else(|_| panic!("the thread cap is not reached here"))
        });
        assert_eq!(v.await.unwrap(), 7);
        // A fan-out that idle Ps may steal from.
        let hs: Vec<_> =
            (0..2000u64).map(|i| gmprt::spawn(async move { (0..100).fold(i, |a, b| a ^ b) })).collect();
        for h in hs {
            h.await.unwrap();
        }
    });
}

#[test]
fn a_traced_run_writes_a_well_formed_trace() {
    let path = tmp("run");
    let rt = Runtime::builder().procs(2).trace(&path).build().unwrap();
    assert!(rt.handle().trace_recorder().is_some());
    workload(&rt);
    let st = rt.stats();
    drop(rt); // writes the trace
    let v = load(&path);
    std::fs::remove_file(&path).unwrap();
    let s = check(&v).unwrap_or_else(|e| panic!("malformed trace: {e}"));
    // Polls on the P lanes (a poll per task at least: 2000 + 3 spawned tasks).
    let p_polls: usize = s.lanes.iter().filter(|(l, _)| l.starts_with("gmprt/P")).map(|(_, n)| n).sum();
    assert!(p_polls > 2000, "lanes: {:?}", s.lanes);
    assert!(s.by_cat.get("poll").copied().unwrap_or(0) as u64 >= st.spawned, "{:?}", s.by_cat);
    // Wake flows: the ping-pong alone makes 100 wake-ups.
    assert!(s.flows >= 100, "flows: {}", s.flows);
    assert!(s.by_cat.get("wake").copied().unwrap_or(0) >= 200, "{:?}", s.by_cat);
    // The timer and the syscall (its instant on the P lane and its slice on the M's lane).
    assert!(s.by_name.get("timers").copied().unwrap_or(0) >= 1, "{:?}", s.by_name);
    assert!(s.by_name.get("syscall").copied().unwrap_or(0) >= 2, "{:?}", s.by_name);
    assert_eq!(s.dropped, 0);
    // Every lane is named by metadata, including the block_on thread's.
    let names: Vec<&str> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert!(names.contains(&"P0") && names.contains(&"P1") && names.contains(&"sysmon"), "{names:?}");
}

#[test]
fn tracing_off_records_and_writes_nothing() {
    assert!(std::env::var_os("GMPRT_TRACE").is_none(), "run the tests without GMPRT_TRACE set");
    let rt = Runtime::builder().procs(2).build().unwrap();
    assert!(rt.handle().trace_recorder().is_none());
    let inside = rt.block_on(async { trace::current().is_none() });
    assert!(inside, "no recorder inside a runtime that does not trace");
    workload_untraced(&rt);
}

fn workload_untraced(rt: &Runtime) {
    let n = rt.block_on(async {
        let hs: Vec<_> = (0..100u64).map(|i| gmprt::spawn(async move { i })).collect();
        let mut n = 0;
        for h in hs {
            n += h.await.unwrap();
        }
        n
    });
    assert_eq!(n, 4950);
}

#[test]
fn latency_histograms_fill_and_their_percentiles_are_ordered() {
    let rt = Runtime::builder().procs(2).build().unwrap();
    workload_untraced(&rt);
    rt.block_on(async {
        for _ in 0..200 {
            gmprt::spawn(async { gmprt::yield_now().await }).await.unwrap();
        }
    });
    let st = rt.stats();
    for l in [st.sched_latency, st.poll_time] {
        // 1 in 64 readiness events per thread is sampled: the block_on thread alone spawns
        // 300 tasks, so at least 4 of their first polls are timed.
        assert!(l.count > 0, "{st:?}");
        assert!(l.p50 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max, "{l:?}");
    }
    assert_eq!(st.sched_latency.count, st.poll_time.count);
    let j = serde_json::to_value(&st).unwrap();
    assert_eq!(j["sched_latency"]["count"], json!(st.sched_latency.count));
}

#[test]
fn with_tracing_every_poll_is_in_the_histograms() {
    let path = tmp("hist");
    let rt = Runtime::builder().procs(1).trace(&path).build().unwrap();
    workload_untraced(&rt);
    let st = rt.stats();
    drop(rt);
    std::fs::remove_file(&path).unwrap();
    // Tracing stamps every readiness: each of the 100 tasks' polls is timed.
    assert!(st.poll_time.count >= 100, "{st:?}");
}

#[test]
fn the_cap_counts_what_it_drops() {
    let rec = Recorder::with_capacity(3);
    let lane = rec.lane("test", "lane");
    for i in 0..5 {
        rec.instant(lane, "tick", i * 1000, vec![]);
    }
    assert_eq!((rec.events(), rec.dropped()), (3, 2));
    let mut out = Vec::new();
    rec.write_json(&mut out).unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["otherData"]["dropped_events"], json!(2));
    let s = check(&v).unwrap();
    assert_eq!((s.instants, s.dropped), (3, 2));
}

#[test]
fn half_flows_are_left_out_and_counted() {
    let rec = Recorder::new();
    let (a, b) = (rec.lane("test", "a"), rec.lane("test", "b"));
    let (whole, half) = (rec.new_flow_id(), rec.new_flow_id());
    assert_ne!(whole, half);
    rec.slice(a, "send", 0, 10, vec![]);
    rec.flow_out(a, whole, 5);
    rec.flow_out(a, half, 6);
    rec.slice(b, "recv", 20, 30, vec![]);
    rec.flow_in(b, whole, 20);
    let mut out = Vec::new();
    rec.write_json(&mut out).unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["otherData"]["flow_ends_omitted"], json!(1));
    assert_eq!(check(&v).unwrap().flows, 1);
    // The same lane names give the same lane.
    assert_eq!(rec.lane("test", "a"), a);
}

#[test]
fn check_rejects_malformed_traces() {
    let meta = |tid: u32, name: &str| {
        vec![
            json!({"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "p"}}),
            json!({"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": name}}),
        ]
    };
    let with = |evs: Vec<Value>| {
        let mut all = meta(0, "L");
        all.extend(evs);
        json!({ "traceEvents": all })
    };
    let x = |ts: f64, dur: f64| json!({"ph": "X", "name": "s", "pid": 1, "tid": 0, "ts": ts, "dur": dur});
    // Nested and disjoint slices are fine; a partial overlap is not.
    assert!(check(&with(vec![x(0.0, 10.0), x(2.0, 3.0), x(10.0, 1.0)])).is_ok());
    let e = check(&with(vec![x(0.0, 10.0), x(5.0, 10.0)])).unwrap_err();
    assert!(e.contains("overlaps"), "{e}");
    // An unclosed "B".
    let b = json!({"ph": "B", "name": "b", "pid": 1, "tid": 0, "ts": 1.0});
    assert!(check(&with(vec![b])).unwrap_err().contains("never ended"));
    // A flow with no end.
    let s = json!({"ph": "s", "name": "f", "cat": "c", "id": 1, "pid": 1, "tid": 0, "ts": 1.0});
    assert!(check(&with(vec![x(0.0, 2.0), s])).unwrap_err().contains("no end"));
    // A lane without a name.
    let other = json!({"ph": "i", "name": "i", "pid": 1, "tid": 9, "ts": 1.0});
    assert!(check(&with(vec![other])).unwrap_err().contains("thread_name"));
    // Time going backwards on a lane.
    let e = check(&with(vec![x(5.0, 1.0), x(1.0, 1.0)])).unwrap_err();
    assert!(e.contains("before"), "{e}");
}

#[test]
fn a_retaken_syscall_keeps_the_trace_well_formed() {
    // One P: task A blocks in `syscall` until task B, queued on the same P, has run. B can only
    // run once sysmon retakes the P and hands it to another M, so the trace must show the
    // retake, and A's poll split around the blocking call while B's poll runs on the P lane.
    let path = tmp("retake");
    let rt = Runtime::builder().procs(1).trace(&path).build().unwrap();
    rt.block_on(async {
        gmprt::spawn(async {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let b = gmprt::spawn(async move { tx.send(()).unwrap() });
            syscall(move || rx.recv().unwrap())
                .unwrap_or_else(|_| panic!("the thread cap is not reached here"));
            b.await.unwrap();
        })
        .await
        .unwrap();
    });
    let retakes = rt.stats().retakes;
    drop(rt);
    let v = load(&path);
    std::fs::remove_file(&path).unwrap();
    let s = check(&v).unwrap_or_else(|e| panic!("malformed trace: {e}"));
    assert!(retakes >= 1);
    // On the sysmon lane and on the P's.
    assert!(s.by_name.get("retake").copied().unwrap_or(0) >= 2, "{:?}", s.by_name);
    assert!(s.lanes.keys().any(|l| l.starts_with("gmprt/M")), "{:?}", s.lanes);
}

/// A trace path that cannot be created fails the build, naming who gave it (issue 23).
#[test]
fn a_bad_trace_path_fails_the_build() {
    let bad = tmp("no-such-dir").join("deeper").join("t.json");
    let e = Runtime::builder().procs(1).trace(&bad).build().unwrap_err();
    assert!(matches!(e, gmprt::runtime::BuildError::Trace { source: "Builder::trace", .. }), "{e}");
    assert!(
        e.to_string().starts_with(&format!("Builder::trace={}: cannot create the trace file", bad.display())),
        "{e}"
    );
}
