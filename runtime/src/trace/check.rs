//! A structure check of a Chrome trace-event JSON trace, for tests and the `gmprt` command.
//!
//! What a trace must satisfy (any writer's, not only this crate's):
//! * `{"traceEvents": [...]}` (or a bare array) of objects, each with a string `ph`; every
//!   event other than metadata has numeric `pid`, `tid` and a finite `ts` ≥ 0.
//! * Events of one lane (`pid`, `tid`) appear in time order.
//! * `"B"`/`"E"`: every begin has its end on the same lane, ends never outnumber begins.
//! * `"X"` slices have `dur` ≥ 0 and nest on their lane: two slices of one lane either are
//!   disjoint or one contains the other (within 1 ns, the rounding of µs floats).
//! * Flows (`"s"`, `"t"`, `"f"`): every id (with its `cat`) has a start and an end, the end
//!   not before the start.
//! * Metadata names every process (`process_name`) and lane (`thread_name`) that has events.

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// A lane's key: (`pid`, `tid`) as written.
type LaneKey = (String, String);
/// A slice: start, end (µs), name.
type Slice = (f64, f64, String);

/// Slack for comparing µs floats written from integer ns (3 decimals): 1 ns.
const EPS_US: f64 = 0.001_5;

/// What [`check`] counted in a trace it accepted.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CheckSummary {
    /// Events other than metadata.
    pub events: usize,
    /// Complete (`X`) and begin/end (`B`/`E` pairs) slices.
    pub slices: usize,
    /// Instant events.
    pub instants: usize,
    /// Flows with both ends.
    pub flows: usize,
    /// Lanes by name (`process/thread`), with how many events each has.
    pub lanes: BTreeMap<String, usize>,
    /// Event counts by category (`cat`; `-` when absent), e.g. `poll`, `wake`, `event`.
    pub by_cat: BTreeMap<String, usize>,
    /// Slice and instant counts by name, except task polls (`cat` `poll`), which are named by
    /// task id and counted in `by_cat`.
    pub by_name: BTreeMap<String, usize>,
    /// First and last timestamp (µs).
    pub span_us: (f64, f64),
    /// `otherData.dropped_events`, if the writer said.
    pub dropped: u64,
}

fn num(e: &Value, k: &str) -> Option<f64> {
    e.get(k).and_then(Value::as_f64)
}

fn key(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "?".into(),
    }
}

/// Checks a trace's structure (see the module docs); the first violation is the error,
/// naming the event's index and lane.
///
/// ```
/// let t = serde_json::json!({"traceEvents": [
///     {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "gmprt"}},
///     {"ph": "M", "name": "thread_name", "pid": 1, "tid": 0, "args": {"name": "P0"}},
///     {"ph": "X", "name": "task 1", "pid": 1, "tid": 0, "ts": 1.0, "dur": 2.0},
/// ]});
/// let s = gmprt_runtime::trace::check(&t).unwrap();
/// assert_eq!(s.slices, 1);
/// let bad = serde_json::json!([{"ph": "B", "name": "x", "pid": 1, "tid": 0, "ts": 1.0}]);
/// assert!(gmprt_runtime::trace::check(&bad).is_err());
/// ```
pub fn check(json: &Value) -> Result<CheckSummary, String> {
    let evs = match json {
        Value::Array(a) => a,
        Value::Object(o) => {
            o.get("traceEvents").and_then(Value::as_array).ok_or("not a trace: no \"traceEvents\" array")?
        }
        _ => return Err("not a trace: neither an object nor an array".into()),
    };
    let mut s = CheckSummary { span_us: (f64::INFINITY, f64::NEG_INFINITY), ..Default::default() };
    let mut proc_names: HashMap<String, String> = HashMap::new();
    let mut lane_names: HashMap<(String, String), String> = HashMap::new();
    let mut last_ts: HashMap<(String, String), f64> = HashMap::new();
    let mut open: HashMap<(String, String), Vec<String>> = HashMap::new();
    let mut slices: HashMap<LaneKey, Vec<Slice>> = HashMap::new();
    // flow key -> (start ts, end ts)
    let mut flows: HashMap<String, (Option<f64>, Option<f64>)> = HashMap::new();
    let mut lane_events: HashMap<(String, String), usize> = HashMap::new();
    for (i, e) in evs.iter().enumerate() {
        let ph = e.get("ph").and_then(Value::as_str).ok_or_else(|| format!("event {i}: no \"ph\""))?;
        let lane = (key(e.get("pid")), key(e.get("tid")));
        let name = e.get("name").and_then(Value::as_str).unwrap_or("");
        if ph == "M" {
            let arg = e.pointer("/args/name").and_then(Value::as_str).map(str::to_string);
            match (name, arg) {
                ("process_name", Some(n)) => {
                    proc_names.insert(lane.0.clone(), n);
                }
                ("thread_name", Some(n)) => {
                    lane_names.insert(lane.clone(), n);
                }
                _ => {}
            }
            continue;
        }
        if e.get("pid").is_none() || e.get("tid").is_none() {
            return Err(format!("event {i} ({name:?}): no pid/tid"));
        }
        let ts = num(e, "ts").filter(|t| t.is_finite() && *t >= 0.0);
        let ts = ts.ok_or_else(|| format!("event {i} ({name:?}) on lane {lane:?}: no valid ts"))?;
        if let Some(&prev) = last_ts.get(&lane) {
            if ts + EPS_US < prev {
                return Err(format!(
                    "event {i} ({name:?}) on lane {lane:?}: ts {ts} before the lane's previous {prev}"
                ));
            }
        }
        last_ts.insert(lane.clone(), ts);
        s.events += 1;
        *lane_events.entry(lane.clone()).or_default() += 1;
        s.span_us = (s.span_us.0.min(ts), s.span_us.1.max(ts));
        let cat = e.get("cat").and_then(Value::as_str).unwrap_or("-");
        *s.by_cat.entry(cat.to_string()).or_default() += 1;
        let named = |s: &mut CheckSummary| {
            if cat != "poll" {
                *s.by_name.entry(name.to_string()).or_default() += 1;
            }
        };
        match ph {
            "X" => {
                let d = num(e, "dur").filter(|d| d.is_finite() && *d >= 0.0);
                let d =
                    d.ok_or_else(|| format!("event {i} ({name:?}) on lane {lane:?}: X without a valid dur"))?;
                slices.entry(lane.clone()).or_default().push((ts, ts + d, name.to_string()));
                s.span_us.1 = s.span_us.1.max(ts + d);
                s.slices += 1;
                named(&mut s);
            }
            "B" => {
                open.entry(lane.clone()).or_default().push(name.to_string());
                named(&mut s);
            }
            "E" => {
                if open.entry(lane.clone()).or_default().pop().is_none() {
                    return Err(format!("event {i} on lane {lane:?}: \"E\" with no open \"B\""));
                }
                s.slices += 1;
            }
            "i" | "I" => {
                s.instants += 1;
                named(&mut s);
            }
            "s" | "t" | "f" => {
                let id = e.get("id").or_else(|| e.get("bind_id"));
                let id = id.ok_or_else(|| format!("event {i} on lane {lane:?}: flow without an id"))?;
                let k = format!("{cat}/{}", key(Some(id)));
                let f = flows.entry(k).or_default();
                if ph == "s" {
                    f.0 = Some(ts);
                } else if ph == "f" {
                    f.1 = Some(ts);
                }
            }
            _ => {}
        }
    }
    for (lane, st) in &open {
        if let Some(n) = st.last() {
            return Err(format!("lane {lane:?}: \"B\" {n:?} never ended"));
        }
    }
    for (lane, mut sl) in slices {
        // Start order, longer first at equal starts: a parent precedes its children.
        sl.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut stack: Vec<&Slice> = Vec::new();
        for x in &sl {
            while stack.last().is_some_and(|top| x.0 + EPS_US >= top.1) {
                stack.pop();
            }
            if let Some(top) = stack.last() {
                if x.1 > top.1 + EPS_US {
                    return Err(format!(
                        "lane {lane:?}: slice {:?} [{}, {}] overlaps {:?} [{}, {}] without nesting",
                        x.2, x.0, x.1, top.2, top.0, top.1
                    ));
                }
            }
            stack.push(x);
        }
    }
    for (k, (a, b)) in &flows {
        match (a, b) {
            (Some(a), Some(b)) if b + EPS_US >= *a => s.flows += 1,
            (Some(a), Some(b)) => return Err(format!("flow {k}: ends at {b} before it starts at {a}")),
            (None, _) => return Err(format!("flow {k}: no start (\"s\")")),
            (_, None) => return Err(format!("flow {k}: no end (\"f\")")),
        }
    }
    for (lane, n) in lane_events {
        let p = proc_names
            .get(&lane.0)
            .ok_or_else(|| format!("pid {} has events but no process_name", lane.0))?;
        let t =
            lane_names.get(&lane).ok_or_else(|| format!("lane {lane:?} has events but no thread_name"))?;
        s.lanes.insert(format!("{p}/{t}"), n);
    }
    if s.events == 0 {
        s.span_us = (0.0, 0.0);
    }
    s.dropped = json.pointer("/otherData/dropped_events").and_then(Value::as_u64).unwrap_or(0);
    Ok(s)
}
