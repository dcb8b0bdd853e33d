//! Writing a recorder's events as Chrome trace-event JSON (what Perfetto and chrome://tracing
//! open): `{"traceEvents": [...], "otherData": {...}}`.
//!
//! * Lanes: each lane is a `(pid, tid)`; `pid` numbers the processes (`gmprt` first, in the
//!   order lanes were named), `tid` is the lane's index. `"M"` events name every process
//!   (`process_name`) and lane (`thread_name`), and order them (`*_sort_index`: P lanes in
//!   P order, then the rest as named).
//! * Times: `ts` and `dur` in µs as floats (ns / 1000, so nothing is lost up to 2^53 ns).
//! * Slices are `"X"`, instants `"i"` with thread scope, flows `"s"` / `"f"` with `bp:"e"`
//!   (the end binds to the slice that encloses it). Runtime wake flows have `cat:"wake"` and a
//!   string id `w<task>.<wake ns>` (a task is made runnable once per wake, at a distinct
//!   time, so the pair is unique); user flows (`Recorder::flow_out`) `cat:"flow"` and their
//!   numeric id.
//! * A flow is written only if both its ends were recorded: a task woken at shutdown and
//!   never polled again, or an end lost to the event cap, would leave half an arrow. What was
//!   left out is counted in `otherData.flow_ends_omitted`, next to `dropped_events` (the cap).

use super::recorder::{EvArgs, Event, Name, Ph, Recorder};
use std::collections::{HashMap, HashSet};
use std::io::{self, Write};

/// Flow key: user flows by id, wake flows by (task, time).
#[derive(Hash, PartialEq, Eq, Clone, Copy)]
enum Key {
    User(u64),
    Wake(u64, u64),
}

fn flow_key(ph: Ph) -> Option<(Key, bool)> {
    match ph {
        Ph::FlowOut(id) => Some((Key::User(id), true)),
        Ph::FlowIn(id) => Some((Key::User(id), false)),
        Ph::WakeOut(t, w) => Some((Key::Wake(t, w), true)),
        Ph::WakeIn(t, w) => Some((Key::Wake(t, w), false)),
        _ => None,
    }
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Writes `rec`'s trace to `w` (see the module docs for the format).
pub(crate) fn write(rec: &Recorder, w: impl Write) -> io::Result<()> {
    let mut w = io::BufWriter::new(w);
    let events = rec.merged();
    let lanes = rec.lane_names();
    // Processes, numbered from 1 in order of first naming, `gmprt` first.
    let mut procs: Vec<&str> = vec!["gmprt"];
    for (p, _) in &lanes {
        if !procs.contains(&p.as_str()) {
            procs.push(p);
        }
    }
    let pid_of = |lane: u32| -> usize {
        let p = lanes.get(lane as usize).map_or("threads", |l| l.0.as_str());
        procs.iter().position(|q| *q == p).map_or(0, |i| i + 1)
    };
    // Flow ends present.
    let mut outs = HashSet::new();
    let mut ins = HashSet::new();
    for e in &events {
        if let Some((k, out)) = flow_key(e.ph) {
            if out {
                outs.insert(k);
            } else {
                ins.insert(k);
            }
        }
    }
    let mut omitted = 0u64;
    w.write_all(b"{\"traceEvents\":[\n")?;
    let mut first = true;
    let mut sep = |w: &mut io::BufWriter<_>| -> io::Result<()> {
        if !std::mem::take(&mut first) {
            w.write_all(b",\n")?;
        }
        Ok(())
    };
    for (i, p) in procs.iter().enumerate() {
        sep(&mut w)?;
        write!(
            w,
            r#"{{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}},{{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}}"#,
            i + 1,
            jstr(p),
            i + 1,
            i
        )?;
    }
    for (i, (_, t)) in lanes.iter().enumerate() {
        sep(&mut w)?;
        let pid = pid_of(i as u32);
        write!(
            w,
            r#"{{"ph":"M","name":"thread_name","pid":{pid},"tid":{i},"args":{{"name":{}}}}},{{"ph":"M","name":"thread_sort_index","pid":{pid},"tid":{i},"args":{{"sort_index":{i}}}}}"#,
            jstr(t)
        )?;
    }
    let mut pids: HashMap<u32, usize> = HashMap::new();
    for e in &events {
        if let Some((k, out)) = flow_key(e.ph) {
            let other = if out { &ins } else { &outs };
            if !other.contains(&k) {
                omitted += 1;
                continue;
            }
        }
        let pid = *pids.entry(e.lane).or_insert_with(|| pid_of(e.lane));
        sep(&mut w)?;
        write_event(&mut w, e, pid)?;
    }
    write!(
        w,
        "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"clock\":\"ns since the recorder's epoch, written as us\",\"recorded_events\":{},\"dropped_events\":{},\"max_events\":{},\"flow_ends_omitted\":{}}}}}\n",
        events.len(),
        rec.dropped(),
        rec.0.max_events,
        omitted
    )?;
    w.flush()
}

fn write_event(w: &mut impl Write, e: &Event, pid: usize) -> io::Result<()> {
    let (lane, ts) = (e.lane, us(e.ts));
    write!(w, r#"{{"pid":{pid},"tid":{lane},"ts":{ts:.3},"name":"#)?;
    match &e.name {
        Name::Static(s) => w.write_all(jstr(s).as_bytes())?,
        Name::Owned(s) => w.write_all(jstr(s).as_bytes())?,
        Name::Task(id) => write!(w, "\"task {id}\"")?,
    }
    match e.ph {
        Ph::Slice(d) => {
            let cat = if matches!(e.args, EvArgs::Poll { .. }) { "poll" } else { "slice" };
            write!(w, r#","ph":"X","cat":"{cat}","dur":{:.3}"#, us(d))?
        }
        Ph::Instant => w.write_all(br#","ph":"i","s":"t","cat":"event""#)?,
        Ph::FlowOut(id) => write!(w, r#","ph":"s","cat":"flow","id":{id}"#)?,
        Ph::FlowIn(id) => write!(w, r#","ph":"f","bp":"e","cat":"flow","id":{id}"#)?,
        Ph::WakeOut(t, at) => write!(w, r#","ph":"s","cat":"wake","id":"w{t}.{at}""#)?,
        Ph::WakeIn(t, at) => write!(w, r#","ph":"f","bp":"e","cat":"wake","id":"w{t}.{at}""#)?,
    }
    match &e.args {
        EvArgs::None => {}
        EvArgs::Json(a) => {
            w.write_all(br#","args":{"#)?;
            for (i, (k, v)) in a.iter().enumerate() {
                if i > 0 {
                    w.write_all(b",")?;
                }
                write!(w, "{}:", jstr(k))?;
                serde_json::to_writer(&mut *w, v)?;
            }
            w.write_all(b"}")?;
        }
        EvArgs::Poll { task, ready } => {
            let r = if *ready { "ready" } else { "pending" };
            write!(w, r#","args":{{"task":{task},"result":"{r}"}}"#)?
        }
        EvArgs::Task(t) => write!(w, r#","args":{{"task":{t}}}"#)?,
        EvArgs::Victim(p) => write!(w, r#","args":{{"victim":"P{p}"}}"#)?,
        EvArgs::P(p) => write!(w, r#","args":{{"p":"P{p}"}}"#)?,
        EvArgs::M(m) => write!(w, r#","args":{{"m":{m}}}"#)?,
    }
    w.write_all(b"}")
}

/// A JSON string literal.
fn jstr(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".into())
}
