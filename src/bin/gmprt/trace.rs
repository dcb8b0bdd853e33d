//! `gmprt trace <story> [story flags] --out trace.json [--svg gantt.svg]`: runs a story with
//! the runtime's trace recorder on (`GMPRT_TRACE`), reads back the Chrome trace it wrote when
//! its runtime shut down, checks its structure, and draws a window of it as an SVG Gantt chart.
//!
//! trace's own flags and the story's may be mixed after the story's name: the flags below are
//! trace's, every other argument after the story's name is the story's.
//!
//! `gmprt gantt trace.json --svg gantt.svg` draws a window of a trace recorded earlier.
use crate::{fail, Story};
use clap::Parser;
use gmprt::gantt::{self, Window};
use gmprt::runtime::trace::CheckSummary;
use std::ffi::OsString;
use std::path::PathBuf;

/// Runs a story with tracing on, checks the trace and optionally draws a Gantt chart of a window
/// of it. trace's flags and the story's own may be mixed after the story's name.
#[derive(Parser, Debug)]
#[command(name = "gmprt trace")]
pub struct Flags {
    /// The story to trace (`gmprt story <name> --help` lists its flags)
    #[arg(value_enum, value_name = "STORY")]
    story: Story,
    /// Where the Chrome trace-event JSON goes (open it in ui.perfetto.dev or chrome://tracing)
    /// (required)
    #[arg(long, value_name = "FILE.json", required = true)]
    out: Option<PathBuf>,
    /// Also draw a window of the trace as an SVG Gantt chart here [default: no chart]
    #[arg(long, value_name = "FILE.svg")]
    svg: Option<PathBuf>,
    /// The chart's window starts this many ms after the trace's first event
    #[arg(long = "start-ms", value_name = "MS", default_value_t = 0.0, value_parser = non_negative)]
    start_ms: f64,
    /// The chart's window is this many ms long (a long window of a busy trace draws many bars)
    #[arg(long = "window-ms", value_name = "MS", default_value_t = 2.0, value_parser = positive_ms)]
    window_ms: f64,
    /// Start the chart's window at the first slice whose name (or lane's name) contains this,
    /// less a tenth of the window, instead of at --start-ms (e.g. "H2D", "offload slot 0")
    #[arg(long, value_name = "NAME")]
    focus: Option<String>,
    /// Print the trace's summary as JSON, on one line after the story's own output (the last
    /// line)
    #[arg(long)]
    json: bool,
}

fn non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!("{s:?} is not a time in ms (a number, 0 or more)")),
    }
}

fn positive_ms(s: &str) -> Result<f64, String> {
    match non_negative(s) {
        Ok(x) if x > 0.0 => Ok(x),
        _ => Err(format!("{s:?} is not a length in ms (a number above 0)")),
    }
}

/// trace's own long flags, and whether each takes a value.
const OWN: [(&str, bool); 7] = [
    ("--out", true),
    ("--svg", true),
    ("--start-ms", true),
    ("--window-ms", true),
    ("--focus", true),
    ("--json", false),
    ("--help", false),
];

/// Splits `args` into trace's own (the story's name among them) and the story's.
fn split(args: Vec<OsString>) -> (Vec<OsString>, Vec<OsString>) {
    let (mut own, mut story) = (vec![OsString::from("gmprt trace")], Vec::new());
    let mut named = false;
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let s = a.to_string_lossy().to_string();
        let flag = s.split('=').next().unwrap_or("");
        if let Some(&(_, takes)) =
            OWN.iter().find(|(f, _)| *f == flag).or((s == "-h").then_some(&("-h", false)))
        {
            own.push(a);
            if takes && !s.contains('=') {
                own.extend(it.next());
            }
        } else if !named && !s.starts_with('-') {
            named = true;
            own.push(a);
        } else {
            story.push(a);
        }
    }
    (own, story)
}

/// The summary `gmprt trace` prints.
#[derive(Debug, serde::Serialize)]
struct Summary {
    story: &'static str,
    trace: PathBuf,
    events: usize,
    lanes: Vec<String>,
    slices: usize,
    instants: usize,
    flows: usize,
    unmatched_flow_ends: usize,
    not_drawn: usize,
    span_ms: f64,
    gantt: Option<PathBuf>,
    gantt_bars: usize,
    /// Where the chart's window starts, ms from the trace's start.
    gantt_from_ms: f64,
    /// Events the recorder did not keep, past its cap (GMPRT_TRACE_MAX_EVENTS).
    dropped: u64,
    /// The runtime's structure check's counts.
    check: CheckSummary,
}

/// Runs `gmprt trace` with the arguments after `trace`.
pub fn run(args: Vec<OsString>) {
    let (own, story_args) = split(args);
    let f = Flags::try_parse_from(own).unwrap_or_else(|e| e.exit());
    let out = f.out.clone().expect("--out is required");
    // A trace left by an earlier run must not pass for this one's.
    if out.exists() {
        std::fs::remove_file(&out)
            .unwrap_or_else(|e| fail(&format!("gmprt trace: --out {}", out.display()), e));
    }
    // Before the story starts any thread: the runtime reads GMPRT_TRACE when it is built and
    // writes the trace there when it shuts down.
    std::env::set_var("GMPRT_TRACE", &out);
    f.story.run(&story_args);
    let text = std::fs::read_to_string(&out).unwrap_or_else(|e| {
        fail(
            &format!("gmprt trace: {} wrote no trace to {}", f.story.name(), out.display()),
            format!("{e} (a story that starts no gmprt runtime, such as explain, has nothing to trace)"),
        )
    });
    let v: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| fail(&format!("gmprt trace: {} is not JSON", out.display()), e));
    let (checked, t) =
        check(&v).unwrap_or_else(|e| fail(&format!("gmprt trace: {} failed its check", out.display()), e));
    let mut s = Summary {
        story: f.story.name(),
        trace: out.clone(),
        events: v.get("traceEvents").and_then(|e| e.as_array()).map_or(0, Vec::len),
        lanes: t.lanes.clone(),
        slices: t.slices.len(),
        instants: t.instants.len(),
        flows: t.flows.len(),
        unmatched_flow_ends: t.unmatched_flow_ends,
        not_drawn: t.ignored,
        span_ms: t.span_us / 1e3,
        gantt: None,
        gantt_bars: 0,
        gantt_from_ms: 0.0,
        dropped: checked.dropped,
        check: checked,
    };
    if let Some(svg) = &f.svg {
        let w = window(&t, f.start_ms, f.window_ms, f.focus.as_deref());
        let r = gantt::render(&t, w).unwrap_or_else(|e| fail("gmprt trace: --svg", e));
        s.gantt_from_ms = w.start_us / 1e3;
        std::fs::write(svg, &r.svg)
            .unwrap_or_else(|e| fail(&format!("gmprt trace: --svg {}", svg.display()), e));
        s.gantt = Some(svg.clone());
        s.gantt_bars = r.bars;
    }
    if f.json {
        println!("{}", serde_json::to_string(&s).unwrap_or_else(|e| fail("gmprt trace: --json", e)));
        return;
    }
    println!(
        "\ntrace: {} ({} events over {:.3} ms): {} slices, {} instants, {} flows on {} lanes ({}); structure checked",
        out.display(),
        s.events,
        s.span_ms,
        s.slices,
        s.instants,
        s.flows,
        s.lanes.len(),
        s.lanes.join(", ")
    );
    if s.dropped > 0 {
        println!(
            "  {} events were dropped at the recorder's cap (raise GMPRT_TRACE_MAX_EVENTS, or trace a smaller run)",
            s.dropped
        );
    }
    if s.not_drawn > 0 || s.unmatched_flow_ends > 0 {
        println!(
            "  {} events of kinds the chart does not draw; {} flow ends without a partner",
            s.not_drawn, s.unmatched_flow_ends
        );
    }
    if let Some(svg) = &s.gantt {
        println!(
            "gantt: {} ({} bars, {:.3} ms from {:.3} ms)",
            svg.display(),
            s.gantt_bars,
            f.window_ms,
            s.gantt_from_ms
        );
    }
    println!("open the trace in ui.perfetto.dev or chrome://tracing");
}

/// `gmprt gantt`'s flags.
#[derive(clap::Args, Debug)]
pub struct GanttArgs {
    /// A Chrome trace-event JSON file (from `gmprt trace` or GMPRT_TRACE)
    #[arg(value_name = "TRACE.json")]
    trace: PathBuf,
    /// Where the SVG goes
    #[arg(long, value_name = "FILE.svg", default_value = "gantt.svg")]
    svg: PathBuf,
    /// The window starts this many ms after the trace's first event
    #[arg(long = "start-ms", value_name = "MS", default_value_t = 0.0, value_parser = non_negative)]
    start_ms: f64,
    /// The window is this many ms long
    #[arg(long = "window-ms", value_name = "MS", default_value_t = 2.0, value_parser = positive_ms)]
    window_ms: f64,
    /// Start the window at the first slice whose name (or lane's name) contains this, less a
    /// tenth of the window, instead of at --start-ms
    #[arg(long, value_name = "NAME")]
    focus: Option<String>,
}

/// The window `--start-ms`/`--window-ms` say, or the one `--focus` points at; exits 2 when
/// nothing matches the focus.
fn window(t: &gantt::Trace, start_ms: f64, window_ms: f64, focus: Option<&str>) -> Window {
    match focus {
        None => Window::ms(start_ms, window_ms),
        Some(name) => match t.first(name) {
            Some(us) => Window::ms((us / 1e3 - window_ms / 10.0).max(0.0), window_ms),
            None => fail("gmprt: --focus", format!("no slice or lane in the trace is named like {name:?}")),
        },
    }
}

/// Runs `gmprt gantt`: reads, checks and draws a trace recorded earlier.
pub fn gantt(a: &GanttArgs) {
    let what = format!("gmprt gantt: {}", a.trace.display());
    let text = std::fs::read_to_string(&a.trace).unwrap_or_else(|e| fail(&what, e));
    let v: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| fail(&format!("{what} is not JSON"), e));
    let (_, t) = check(&v).unwrap_or_else(|e| fail(&format!("{what} failed its check"), e));
    let w = window(&t, a.start_ms, a.window_ms, a.focus.as_deref());
    let r = gantt::render(&t, w).unwrap_or_else(|e| fail(&what, e));
    std::fs::write(&a.svg, &r.svg)
        .unwrap_or_else(|e| fail(&format!("gmprt gantt: --svg {}", a.svg.display()), e));
    println!(
        "gantt: {} ({} bars, {} flows on {} lanes, {:.3} ms from {:.3} ms; {} events not drawn)",
        a.svg.display(),
        r.bars,
        r.flows,
        r.lanes,
        a.window_ms,
        w.start_us / 1e3,
        r.ignored
    );
}

/// The trace's structure: the runtime's own check (`gmprt_runtime::trace::check`: slices
/// closed and nested, per-lane time order, every flow's two ends, every lane named), then the
/// chart's reading of it.
fn check(v: &serde_json::Value) -> Result<(CheckSummary, gantt::Trace), String> {
    let summary = gmprt::runtime::trace::check(v)?;
    let t = gantt::Trace::parse(v).map_err(|e| e.to_string())?;
    Ok((summary, t))
}
