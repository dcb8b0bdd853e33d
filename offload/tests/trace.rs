//! The Batcher's lanes in a real trace: a small SAXPY run on the Host device inside a traced
//! runtime (`Builder::trace`), with a cost model in the config so every batch gets its model
//! twin. The JSON written at shutdown must pass the runtime's structure check, and every
//! batch span must hold its phases, have a twin on the model lane, and be the end of a flow
//! arrow from a `submit` on a P lane; it lies on a slot worker's lane, or on a P's when it ran
//! inline there (closed on quiescence). No timing is asserted: only containment, counts and
//! names, which hold however slow the machine is.
mod common;

use common::{saxpy_profile, transfer};
use gmprt_offload::model::{CostModel, LinFit};
use gmprt_offload::runtime::{spawn, trace, Runtime};
use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

/// Items submitted, and the batch size: several full batches plus a partial one.
const ITEMS: usize = 1000;
const MAX_BATCH: usize = 128;

/// Runs the story with tracing into a temporary file and returns the parsed trace.
fn traced_run() -> Value {
    let dir = std::env::temp_dir().join(format!("gmprt-offload-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.json");
    let model = CostModel::new(saxpy_profile(
        (2e-6, 5e-6),
        transfer(1e-5, 1e-10, 2e-10),
        transfer(1e-5, 1e-10, 2e-10),
        LinFit::known(3e-6, 1e-9),
        2e-9,
    ));
    {
        let rt = Runtime::builder().procs(2).trace(&path).build().unwrap();
        let b = rt.block_on(async {
            let cfg = BatcherConfig {
                max_batch: MAX_BATCH,
                max_delay: Duration::from_micros(200),
                model: Some(Arc::new(model)),
                ..BatcherConfig::default()
            };
            Batcher::new(Saxpy { a: 2.0 }, &Device::host(), cfg).unwrap()
        });
        let b2 = b.clone();
        let ys: Vec<f32> = rt.block_on(async move {
            let hs: Vec<_> = (0..ITEMS)
                .map(|i| {
                    let b = b2.clone();
                    spawn(async move { b.submit((i as f32, 1.0)).await })
                })
                .collect();
            let mut ys = Vec::new();
            for h in hs {
                ys.push(h.await.unwrap().unwrap());
            }
            ys
        });
        assert_eq!(ys[7], 15.0);
        // Join the workers before the runtime writes its trace at drop.
        b.shutdown();
    }
    let text = std::fs::read_to_string(&path).expect("the runtime wrote its trace at shutdown");
    let _ = std::fs::remove_dir_all(&dir);
    serde_json::from_str(&text).expect("the trace is JSON")
}

fn lane_names(events: &[Value]) -> HashMap<(u64, u64), String> {
    events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| {
            (
                (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A slice: (lane, start µs, end µs).
fn span(e: &Value) -> ((u64, u64), f64, f64) {
    let ts = e["ts"].as_f64().unwrap();
    ((e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()), ts, ts + e["dur"].as_f64().unwrap())
}

#[test]
fn batches_phases_model_twins_and_submit_flows() {
    let trace = traced_run();
    trace::check(&trace).expect("the trace's structure");
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let names = lane_names(events);
    let slices: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    let is_batch =
        |e: &&Value| e["name"].as_str().is_some_and(|n| n.starts_with("batch #") && !n.ends_with("(model)"));
    let batches: Vec<&Value> = slices.iter().copied().filter(is_batch).collect();
    // Every item is in exactly one recorded batch.
    let items: u64 = batches.iter().map(|b| b["args"]["n"].as_u64().unwrap()).sum();
    assert_eq!(items, ITEMS as u64);
    assert!(batches.len() >= ITEMS / MAX_BATCH, "{} batches", batches.len());

    // Flow ends by id (as written: a number or a string).
    let mut flows_in: HashMap<String, ((u64, u64), f64)> = HashMap::new();
    let mut flows_out: HashMap<String, ((u64, u64), f64)> = HashMap::new();
    for e in events {
        let at = || ((e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()), e["ts"].as_f64().unwrap());
        match e["ph"].as_str() {
            Some("s") => drop(flows_out.insert(e["id"].to_string(), at())),
            Some("f") => drop(flows_in.insert(e["id"].to_string(), at())),
            _ => {}
        }
    }
    let twins: HashSet<String> = slices
        .iter()
        .filter_map(|e| e["name"].as_str().filter(|n| n.ends_with("(model)")).map(String::from))
        .collect();
    // Within 1 ns: µs floats written from integer ns, and their sums, round.
    let inside = |e: &Value, b: &Value| {
        let ((l, s, f), (lb, sb, fb)) = (span(e), span(b));
        l == lb && s >= sb - 1e-3 && f <= fb + 1e-3
    };
    // Every slice on a slot lane is a batch or lies inside one: no phase leaves its batch.
    for e in &slices {
        let lane = &names[&span(e).0];
        if lane.starts_with("offload slot ") && !is_batch(e) {
            assert!(batches.iter().any(|b| inside(e, b)), "{} {:?} is in no batch span", e["name"], span(e));
        }
    }
    let mut with_flow = 0;
    for b in &batches {
        let (lane, start, _) = span(b);
        let lane_name = &names[&lane];
        // On its slot worker's lane, or — closed on quiescence, run inline on the M that found
        // the runtime idle (Host device) — on the lane of the P it ran on.
        let closed_by = b["args"]["closed_by"].as_str().unwrap();
        assert!(
            lane_name.starts_with("offload slot ")
                || (lane_name.starts_with('P') && closed_by == "quiescent"),
            "batch closed by {closed_by} on lane {lane_name}"
        );
        // The phases this batch holds (every phase is inside some batch: checked below).
        let phases: Vec<&str> = slices
            .iter()
            .filter(|e| !is_batch(e) && inside(e, b))
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        for p in ["queue wait", "stage", "h2d", "kernel", "scatter", "wake"] {
            assert!(phases.contains(&p), "{} has no {p}: {phases:?}", b["name"]);
        }
        let name = b["name"].as_str().unwrap();
        assert!(twins.contains(&format!("{name} (model)")), "{name} has no model twin");
        assert!(["full", "deadline", "flush", "shutdown", "quiescent"].contains(&closed_by));
        // The flow from the first item's submit ends at the batch's start, on its lane.
        let flow = flows_in.iter().find(|(_, (l, ts))| *l == lane && (*ts - start).abs() < 1e-3);
        if let Some((id, _)) = flow {
            let (from, ts) = flows_out.get(id).expect("a flow's start exists");
            assert!(names[from].starts_with('P'), "submit flow from lane {}", names[from]);
            assert!(*ts <= start + 1e-3);
            with_flow += 1;
        }
    }
    // Every batch was opened by a task's submit on a P, so each has its arrow.
    assert_eq!(with_flow, batches.len());
    // Model lanes are named after their slot.
    assert!(names.values().any(|n| n.starts_with("slot ") && n.ends_with(" model")), "{names:?}");
}
