//! A Gantt chart of a trace: a short window of a Chrome trace-event JSON file (what
//! `GMPRT_TRACE=out.json` writes) drawn as an SVG, for people who would rather look than load
//! the file into Perfetto.
//!
//! # What is read
//! The object `{"traceEvents": [...]}` (or a bare array of events). Each event is an object
//! with a phase `ph`:
//! * `"M"` metadata named `thread_name` names a lane: `(pid, tid)` → `args.name` ("P0", "P1",
//!   …, "sysmon", "offload slot 0", "slot 0 model");
//! * `"X"` a complete slice: `ts` and `dur` in µs, a `name` (and maybe a `cat`); one bar;
//! * `"i"` / `"I"` an instant: a tick on its lane;
//! * `"s"` / `"f"` the two ends of a flow arrow with the same `id` (and `cat`): a thin line
//!   from one lane to the other;
//! * any other phase (`"B"`/`"E"`, counters, …) is not drawn; [`Trace::ignored`] counts them
//!   and [`Rendered::ignored`] says so, so nothing is dropped silently.
//!
//! An event without the fields its phase needs (a slice without a numeric `ts` or `dur`, a
//! negative `dur`, a flow without an `id`) is an error naming the event's index: a malformed
//! trace is not half drawn. Lanes that have no `thread_name` are named `pid/tid`.
//!
//! # The picture
//! One row per lane, in the order a reader expects: the P lanes by number, then sysmon, then
//! each offload slot followed by its model twin, then anything else by name. A bar's colour
//! says its kind ([`Kind`]): a task poll, an offload phase (queue wait, stage, H2D, kernel,
//! D2H, scatter) in the same colour on a slot's lane (measured) and on its model lane
//! (predicted), so a misprediction shows as bars of one colour that do not line up; a whole
//! batch frames its phases. The legend lists the kinds present. The
//! time axis counts from the window's start, in µs, or ms for windows over 10 ms.
//!
//! ```
//! use gmprt::gantt::{self, Window};
//! let trace = serde_json::json!({"traceEvents": [
//!     {"ph": "M", "name": "thread_name", "pid": 1, "tid": 0, "args": {"name": "P0"}},
//!     {"ph": "X", "name": "poll task 7", "pid": 1, "tid": 0, "ts": 10.0, "dur": 25.0},
//! ]});
//! let t = gantt::Trace::parse(&trace).unwrap();
//! let r = gantt::render(&t, Window::all()).unwrap();
//! assert_eq!(r.bars, 1);
//! assert!(r.svg.contains("P0"));
//! ```
use plotters::prelude::*;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;

/// What a bar stands for; its colour in the chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A task's poll on a P (and anything else on a P lane).
    Poll,
    /// An item waiting for its batch to close.
    QueueWait,
    /// Copying a batch's inputs into the slot's staging buffer.
    Stage,
    /// Host-to-device transfer.
    H2D,
    /// The kernel.
    Kernel,
    /// Device-to-host transfer.
    D2H,
    /// Handing the results back to the waiting tasks, and waking them.
    Scatter,
    /// A whole batch (`batch #N`), drawn behind its phases, a little taller, as their frame.
    Batch,
    /// The cost model's prediction of a batch (a slice on a lane whose name ends in "model"
    /// that is not a phase); its predicted phases take their phases' colours.
    Model,
    /// Sysmon's work, and any slice of a kind not listed here.
    Other,
}

impl Kind {
    /// The kind of slice `name` on the lane `lane`.
    pub fn of(lane: &str, name: &str) -> Kind {
        let n = name.to_ascii_lowercase();
        if n.contains("h2d") {
            Kind::H2D
        } else if n.contains("d2h") {
            Kind::D2H
        } else if n.contains("kernel") {
            Kind::Kernel
        } else if n.contains("queue") {
            Kind::QueueWait
        } else if n.contains("stage") {
            Kind::Stage
        } else if n.contains("scatter") || n == "wake" {
            Kind::Scatter
        } else if lane.ends_with("model") {
            Kind::Model
        } else if n.starts_with("batch") {
            Kind::Batch
        } else if lane_order(lane).0 == 0 {
            Kind::Poll
        } else {
            Kind::Other
        }
    }

    fn colour(self) -> RGBColor {
        match self {
            Kind::Poll => RGBColor(66, 133, 244),
            Kind::QueueWait => RGBColor(189, 189, 189),
            Kind::Stage => RGBColor(255, 193, 7),
            Kind::H2D => RGBColor(233, 30, 99),
            Kind::Kernel => RGBColor(76, 175, 80),
            Kind::D2H => RGBColor(156, 39, 176),
            Kind::Scatter => RGBColor(255, 112, 67),
            Kind::Batch => RGBColor(207, 216, 220),
            Kind::Model => RGBColor(176, 190, 197),
            Kind::Other => RGBColor(97, 97, 97),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Kind::Poll => "task poll",
            Kind::QueueWait => "queue wait",
            Kind::Stage => "stage",
            Kind::H2D => "H2D",
            Kind::Kernel => "kernel",
            Kind::D2H => "D2H",
            Kind::Scatter => "scatter / wake",
            Kind::Batch => "batch (span)",
            Kind::Model => "batch (model's prediction)",
            Kind::Other => "other (sysmon, …)",
        }
    }
}

/// A lane's rank: P lanes by number, sysmon, offload slots each followed by its model twin,
/// then the rest (by name, as the caller sorts ties).
fn lane_order(name: &str) -> (u8, u64, u8) {
    let num = |s: &str| s.trim().split(|c: char| !c.is_ascii_digit()).next().and_then(|d| d.parse().ok());
    if let Some(n) = name.strip_prefix('P').and_then(num) {
        return (0, n, 0);
    }
    if name == "sysmon" {
        return (1, 0, 0);
    }
    if let Some(n) = name.strip_prefix("offload slot ").and_then(num) {
        return (2, n, 0);
    }
    if let Some(n) = name.strip_prefix("slot ").filter(|r| r.ends_with("model")).and_then(num) {
        return (2, n, 1);
    }
    (3, 0, 0)
}

/// A malformed trace, or a window with nothing in it.
#[derive(Debug, Clone, PartialEq)]
pub enum GanttError {
    /// The JSON is not `{"traceEvents": [...]}` nor an array of events.
    NotATrace(String),
    /// Event `index` lacks a field its phase needs, or has one of the wrong type.
    BadEvent {
        /// The event's index in `traceEvents`.
        index: usize,
        /// What is wrong with it.
        why: String,
    },
    /// No slice lies in the window.
    EmptyWindow {
        /// The window asked for, µs from the trace's start.
        start_us: f64,
        /// Its length in µs.
        len_us: f64,
        /// The trace's span in µs.
        span_us: f64,
    },
    /// The window's start or length is negative or not finite, or its length is zero.
    BadWindow(String),
    /// plotters could not draw.
    Draw(String),
}

impl fmt::Display for GanttError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GanttError::NotATrace(why) => write!(f, "not a Chrome trace: {why}"),
            GanttError::BadEvent { index, why } => write!(f, "traceEvents[{index}]: {why}"),
            GanttError::EmptyWindow { start_us, len_us, span_us } => write!(
                f,
                "no slice in the window {:.3} ms + {:.3} ms; the trace spans {:.3} ms",
                start_us / 1e3,
                len_us / 1e3,
                span_us / 1e3
            ),
            GanttError::BadWindow(why) => write!(f, "bad window: {why}"),
            GanttError::Draw(why) => write!(f, "drawing the chart: {why}"),
        }
    }
}

impl std::error::Error for GanttError {}

/// One bar: a `"X"` slice.
#[derive(Debug, Clone, PartialEq)]
pub struct Slice {
    /// Index into [`Trace::lanes`].
    pub lane: usize,
    /// The event's `name`.
    pub name: String,
    /// Its kind (colour).
    pub kind: Kind,
    /// Start, µs from the trace's first timestamp.
    pub start_us: f64,
    /// Duration in µs.
    pub dur_us: f64,
}

/// A flow arrow: from `(lane, µs)` to `(lane, µs)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    /// Where it starts: lane index and µs from the trace's start.
    pub from: (usize, f64),
    /// Where it ends.
    pub to: (usize, f64),
}

/// A trace as the chart needs it: lanes in display order, slices, instants and flows.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// Lane names, in display order.
    pub lanes: Vec<String>,
    /// Every slice.
    pub slices: Vec<Slice>,
    /// Every instant: lane index, µs from the start, name.
    pub instants: Vec<(usize, f64, String)>,
    /// Every flow whose two ends were found.
    pub flows: Vec<Flow>,
    /// Flow ends with no partner (a start without a finish, or the reverse).
    pub unmatched_flow_ends: usize,
    /// Events of phases the chart does not draw (not metadata, slices, instants or flows).
    pub ignored: usize,
    /// From the first timestamp to the last slice's end, µs.
    pub span_us: f64,
}

/// The key of a lane: `pid` and `tid`, as written (numbers or strings).
fn lane_key(e: &Value) -> (String, String) {
    let s = |v: Option<&Value>| v.map_or_else(|| "0".to_string(), |v| v.to_string());
    (s(e.get("pid")), s(e.get("tid")))
}

impl Trace {
    /// Reads a Chrome trace (see the module docs). Errors name the first malformed event.
    pub fn parse(v: &Value) -> Result<Trace, GanttError> {
        let events = match v {
            Value::Array(a) => a,
            Value::Object(o) => match o.get("traceEvents") {
                Some(Value::Array(a)) => a,
                Some(_) => return Err(GanttError::NotATrace("traceEvents is not an array".into())),
                None => return Err(GanttError::NotATrace("no traceEvents field".into())),
            },
            _ => return Err(GanttError::NotATrace("neither an object nor an array".into())),
        };
        let bad = |index: usize, why: &str| GanttError::BadEvent { index, why: why.to_string() };
        let mut names: HashMap<(String, String), String> = HashMap::new();
        // First pass: lane names, and which lanes are used, in first-use order.
        let mut used: Vec<(String, String)> = Vec::new();
        let mut t0 = f64::INFINITY;
        for (i, e) in events.iter().enumerate() {
            let ph = e.get("ph").and_then(Value::as_str).ok_or_else(|| bad(i, "no \"ph\" string"))?;
            if ph == "M" {
                if e.get("name").and_then(Value::as_str) == Some("thread_name") {
                    let name = e
                        .pointer("/args/name")
                        .and_then(Value::as_str)
                        .ok_or_else(|| bad(i, "thread_name without args.name"))?;
                    names.insert(lane_key(e), name.to_string());
                }
                continue;
            }
            if matches!(ph, "X" | "i" | "I" | "s" | "f") {
                let ts = e.get("ts").and_then(Value::as_f64).ok_or_else(|| bad(i, "no numeric \"ts\""))?;
                if !ts.is_finite() {
                    return Err(bad(i, "\"ts\" is not finite"));
                }
                t0 = t0.min(ts);
                let k = lane_key(e);
                if !used.contains(&k) {
                    used.push(k);
                }
            }
        }
        let mut lanes: Vec<((String, String), String)> = used
            .into_iter()
            .map(|k| {
                let name = names.get(&k).cloned().unwrap_or_else(|| format!("{}/{}", k.0, k.1));
                (k, name)
            })
            .collect();
        lanes.sort_by(|a, b| lane_order(&a.1).cmp(&lane_order(&b.1)).then_with(|| a.1.cmp(&b.1)));
        let index: HashMap<(String, String), usize> =
            lanes.iter().enumerate().map(|(i, (k, _))| (k.clone(), i)).collect();
        let mut t = Trace { lanes: lanes.into_iter().map(|(_, n)| n).collect(), ..Trace::default() };
        let mut open: HashMap<String, Vec<(usize, f64)>> = HashMap::new();
        let mut finishes: Vec<(String, usize, f64)> = Vec::new();
        for (i, e) in events.iter().enumerate() {
            let ph = e.get("ph").and_then(Value::as_str).unwrap_or("");
            if ph == "M" {
                continue;
            }
            let Some(&lane) = index.get(&lane_key(e)) else {
                t.ignored += 1;
                continue;
            };
            let ts = e.get("ts").and_then(Value::as_f64).unwrap_or(t0) - t0;
            let name = e.get("name").and_then(Value::as_str).unwrap_or("").to_string();
            match ph {
                "X" => {
                    let dur = e
                        .get("dur")
                        .and_then(Value::as_f64)
                        .ok_or_else(|| bad(i, "slice without numeric \"dur\""))?;
                    if !(dur.is_finite() && dur >= 0.0) {
                        return Err(bad(i, "slice with a negative or non-finite \"dur\""));
                    }
                    let kind = Kind::of(&t.lanes[lane], &name);
                    t.span_us = t.span_us.max(ts + dur);
                    t.slices.push(Slice { lane, name, kind, start_us: ts, dur_us: dur });
                }
                "i" | "I" => {
                    t.span_us = t.span_us.max(ts);
                    t.instants.push((lane, ts, name));
                }
                "s" | "f" => {
                    let id = e.get("id").ok_or_else(|| bad(i, "flow event without \"id\""))?;
                    let cat = e.get("cat").and_then(Value::as_str).unwrap_or("");
                    let key = format!("{cat}\u{0}{id}");
                    if ph == "s" {
                        open.entry(key).or_default().push((lane, ts));
                    } else {
                        finishes.push((key, lane, ts));
                    }
                }
                _ => t.ignored += 1,
            }
        }
        for (key, lane, ts) in finishes {
            match open.get_mut(&key).and_then(Vec::pop) {
                Some(from) => t.flows.push(Flow { from, to: (lane, ts) }),
                None => t.unmatched_flow_ends += 1,
            }
        }
        t.unmatched_flow_ends += open.values().map(Vec::len).sum::<usize>();
        Ok(t)
    }
}

impl Trace {
    /// Start (µs from the trace's start) of the first slice whose name contains `name`, or
    /// whose lane's name does: where to point a window to see, say, the first "kernel" or the
    /// first slice on "offload slot 0".
    pub fn first(&self, name: &str) -> Option<f64> {
        self.slices
            .iter()
            .filter(|s| s.name.contains(name) || self.lanes[s.lane].contains(name))
            .map(|s| s.start_us)
            .min_by(f64::total_cmp)
    }
}

/// A time window of the trace, µs from its first timestamp.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Start, µs from the trace's first timestamp.
    pub start_us: f64,
    /// Length in µs; infinite for "to the end".
    pub len_us: f64,
}

impl Window {
    /// The whole trace.
    pub fn all() -> Window {
        Window { start_us: 0.0, len_us: f64::INFINITY }
    }

    /// `len_ms` milliseconds from `start_ms` (both from the trace's start).
    pub fn ms(start_ms: f64, len_ms: f64) -> Window {
        Window { start_us: start_ms * 1e3, len_us: len_ms * 1e3 }
    }
}

/// A drawn chart and what went into it.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The SVG document.
    pub svg: String,
    /// Bars drawn: the slices that overlap the window.
    pub bars: usize,
    /// Flow arrows drawn (at least one end in the window).
    pub flows: usize,
    /// Lanes shown (every lane of the trace, so that an idle P shows as an empty row).
    pub lanes: usize,
    /// Events of the trace not drawn because the chart has no form for them
    /// ([`Trace::ignored`]) plus flow ends without a partner.
    pub ignored: usize,
}

/// The opacity of a slice's bar, which nothing else in the chart uses: the SVG has exactly one
/// `opacity="0.85"` rectangle per bar, so tests can count bars in the document itself.
pub const BAR_OPACITY: f64 = 0.85;

/// Pixels between legend rows.
const LEGEND_ROW: i32 = 18;

/// Draws `window` of `trace` as an SVG Gantt chart (see the module docs). Errors when the
/// window is malformed or has no slice in it.
pub fn render(trace: &Trace, window: Window) -> Result<Rendered, GanttError> {
    let Window { start_us, len_us } = window;
    if !(start_us.is_finite() && start_us >= 0.0) {
        return Err(GanttError::BadWindow(format!(
            "start {start_us} µs is not a time from the trace's start"
        )));
    }
    if len_us.is_nan() || len_us <= 0.0 {
        return Err(GanttError::BadWindow(format!("length {len_us} µs is not positive")));
    }
    let end_us = (start_us + len_us).min(trace.span_us.max(start_us));
    let in_window: Vec<&Slice> =
        trace.slices.iter().filter(|s| s.start_us < end_us && s.start_us + s.dur_us >= start_us).collect();
    if in_window.is_empty() || end_us <= start_us {
        return Err(GanttError::EmptyWindow { start_us, len_us, span_us: trace.span_us });
    }
    let mut kinds: Vec<Kind> = in_window.iter().map(|s| s.kind).collect();
    kinds.sort();
    kinds.dedup();
    // Pixels: a 1400-wide picture, lane names in 150 on the left, the legend in 210 on the
    // right; 28 per lane row, 120 for the caption and the axis, and room for every legend row.
    let (w, row_h, label_w, legend_w) = (1400u32, 28u32, 150u32, 210u32);
    let legend_h = 60 + LEGEND_ROW as u32 * (kinds.len() as u32 + 1);
    let h = (120 + row_h * trace.lanes.len() as u32).max(legend_h);
    let n = trace.lanes.len() as f64;
    let ms = end_us - start_us > 10_000.0;
    let draw = |e: &dyn fmt::Display| GanttError::Draw(e.to_string());
    let mut svg = String::new();
    let flows;
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw(&e))?;
        let (labels, rest) = root.split_horizontally(label_w);
        let (plot, legend) = rest.split_horizontally(w - label_w - legend_w);
        let mut chart = ChartBuilder::on(&plot)
            .caption(
                format!("gmprt trace, {:.3} ms to {:.3} ms", start_us / 1e3, end_us / 1e3),
                ("sans-serif", 18),
            )
            .margin(10)
            .x_label_area_size(35)
            .build_cartesian_2d(0.0..end_us - start_us, 0.0..n)
            .map_err(|e| draw(&e))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_desc(if ms { "ms from the window's start" } else { "µs from the window's start" })
            .x_label_formatter(&|x| if ms { format!("{:.1}", x / 1e3) } else { format!("{x:.0}") })
            .draw()
            .map_err(|e| draw(&e))?;
        // Row i is drawn from the top: y runs from n (top) to 0.
        let row = |lane: usize| n - lane as f64;
        // A bar at least one pixel wide, so a short poll in a long window still shows.
        let px = (end_us - start_us) / f64::from(w - label_w - legend_w);
        chart
            .draw_series(in_window.iter().map(|s| {
                let x0 = (s.start_us - start_us).max(0.0);
                let x1 = (s.start_us + s.dur_us - start_us).min(end_us - start_us).max(x0 + px);
                let y = row(s.lane);
                // A batch frames its phases: a little taller, drawn first (it starts first).
                let (lo, hi) =
                    if matches!(s.kind, Kind::Batch | Kind::Model) { (0.95, 0.05) } else { (0.85, 0.15) };
                Rectangle::new([(x0, y - lo), (x1, y - hi)], s.kind.colour().mix(BAR_OPACITY).filled())
            }))
            .map_err(|e| draw(&e))?;
        let ticks = trace.instants.iter().filter(|(_, ts, _)| (start_us..=end_us).contains(ts));
        chart
            .draw_series(ticks.map(|&(lane, ts, _)| {
                let (x, y) = (ts - start_us, row(lane));
                PathElement::new([(x, y - 0.95), (x, y - 0.05)], BLACK.stroke_width(1))
            }))
            .map_err(|e| draw(&e))?;
        let visible: Vec<&Flow> = trace
            .flows
            .iter()
            .filter(|f| (start_us..=end_us).contains(&f.from.1) || (start_us..=end_us).contains(&f.to.1))
            .collect();
        flows = visible.len();
        // Light (a quarter of full ink): a window of a busy run holds thousands of wake-ups,
        // which at full ink would hide the bars they connect.
        chart
            .draw_series(visible.iter().map(|f| {
                let clip = |x: f64| (x - start_us).clamp(0.0, end_us - start_us);
                let a = (clip(f.from.1), row(f.from.0) - 0.5);
                let b = (clip(f.to.1), row(f.to.0) - 0.5);
                PathElement::new([a, b], RGBColor(30, 30, 30).mix(0.25).stroke_width(1))
            }))
            .map_err(|e| draw(&e))?;
        // The legend, in the strip right of the plot: the kinds present, then the flows.
        let font = ("sans-serif", 13).into_font();
        let mut y = 40;
        for k in &kinds {
            legend
                .draw(&Rectangle::new([(10, y), (24, y + 12)], k.colour().filled()))
                .map_err(|e| draw(&e))?;
            legend.draw(&Text::new(k.label(), (30, y), font.clone())).map_err(|e| draw(&e))?;
            y += LEGEND_ROW;
        }
        if flows > 0 {
            let line = PathElement::new([(10, y + 6), (24, y + 6)], BLACK.stroke_width(1));
            legend.draw(&line).map_err(|e| draw(&e))?;
            legend.draw(&Text::new("wake-up / hand-off (flow)", (30, y), font)).map_err(|e| draw(&e))?;
        }
        // Lane names, level with their rows, in the strip left of the plot.
        for (i, name) in trace.lanes.iter().enumerate() {
            let (_, py) = chart.backend_coord(&(0.0, row(i) - 0.5));
            labels
                .draw(&Text::new(name.clone(), (8, py - 7), ("sans-serif", 14).into_font()))
                .map_err(|e| draw(&e))?;
        }
        root.present().map_err(|e| draw(&e))?;
    }
    Ok(Rendered {
        svg,
        bars: in_window.len(),
        flows,
        lanes: trace.lanes.len(),
        ignored: trace.ignored + trace.unmatched_flow_ends,
    })
}
