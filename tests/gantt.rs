//! The Gantt renderer on small hand-built traces: what the SVG contains (one bar per slice in
//! the window, the lane labels in display order, the legend), not its pixels; and the clear
//! errors on malformed traces and empty windows.
use gmprt::gantt::{render, GanttError, Kind, Trace, Window, BAR_OPACITY};
use serde_json::{json, Value};

fn lane(tid: u64, name: &str) -> Value {
    json!({"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": name}})
}

fn slice(tid: u64, name: &str, ts: f64, dur: f64) -> Value {
    json!({"ph": "X", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur})
}

/// Two P lanes, sysmon, one offload slot and its model lane; slices from 1000 µs to 1900 µs; a
/// flow from a poll on P1 to the slot's H2D; an instant; a counter the chart does not draw.
fn small() -> Value {
    json!({"traceEvents": [
        lane(3, "offload slot 0"), lane(4, "slot 0 model"), lane(1, "P1"), lane(0, "P0"), lane(2, "sysmon"),
        slice(0, "poll task 1", 1000.0, 100.0),
        slice(0, "poll task 2", 1150.0, 50.0),
        slice(1, "poll task 3", 1020.0, 30.0),
        slice(2, "retake", 1400.0, 5.0),
        slice(3, "queue wait", 1050.0, 100.0),
        slice(3, "H2D", 1200.0, 200.0),
        slice(3, "kernel", 1400.0, 300.0),
        slice(3, "D2H", 1700.0, 150.0),
        slice(4, "kernel", 1380.0, 320.0),
        {"ph": "s", "id": 7, "cat": "submit", "name": "submit", "pid": 1, "tid": 1, "ts": 1040.0},
        {"ph": "f", "id": 7, "cat": "submit", "name": "submit", "pid": 1, "tid": 3, "ts": 1200.0, "bp": "e"},
        {"ph": "i", "name": "steal", "pid": 1, "tid": 0, "ts": 1300.0, "s": "t"},
        {"ph": "C", "name": "runq", "pid": 1, "tid": 0, "ts": 1300.0, "args": {"len": 3}},
    ]})
}

fn bars_in(svg: &str) -> usize {
    svg.matches(&format!("opacity=\"{BAR_OPACITY}\"")).count()
}

#[test]
fn lanes_come_in_reading_order() {
    let t = Trace::parse(&small()).unwrap();
    assert_eq!(t.lanes, ["P0", "P1", "sysmon", "offload slot 0", "slot 0 model"]);
    assert_eq!(t.slices.len(), 9);
    assert_eq!((t.flows.len(), t.unmatched_flow_ends, t.instants.len(), t.ignored), (1, 0, 1, 1));
    // Timestamps count from the first event.
    assert_eq!(t.slices[0].start_us, 0.0);
    assert_eq!(t.span_us, 850.0);
    let kinds: Vec<Kind> = t.slices.iter().map(|s| s.kind).collect();
    use Kind::*;
    // A predicted phase takes its phase's colour on the model lane.
    assert_eq!(kinds, [Poll, Poll, Poll, Other, QueueWait, H2D, Kernel, D2H, Kernel]);
    assert_eq!(Kind::of("offload slot 0 (black_scholes)", "batch #3"), Batch);
    assert_eq!(Kind::of("slot 0 (black_scholes) model", "batch #3 (model)"), Model);
    assert_eq!(Kind::of("slot 0 (black_scholes) model", "H2D"), H2D);
    assert_eq!(Kind::of("offload slot 0 (black_scholes)", "wake"), Scatter);
}

#[test]
fn the_whole_trace_has_one_bar_per_slice_and_every_lane_label() {
    let t = Trace::parse(&small()).unwrap();
    let r = render(&t, Window::all()).unwrap();
    assert_eq!((r.bars, r.flows, r.lanes, r.ignored), (9, 1, 5, 1));
    assert_eq!(bars_in(&r.svg), 9, "one bar rectangle per slice");
    let mut at = 0;
    for name in ["P0", "P1", "sysmon", "offload slot 0", "slot 0 model"] {
        let pos = r.svg.find(&format!("\n{name}\n</text>")).unwrap_or_else(|| panic!("no label {name}"));
        assert!(pos > at, "{name} is out of order");
        at = pos;
    }
    for legend in ["task poll", "H2D", "kernel", "D2H", "queue wait", "flow"] {
        assert!(r.svg.contains(legend), "the legend lacks {legend}");
    }
    assert!(r.svg.contains("µs from the window"), "an axis under 10 ms is in µs");
}

#[test]
fn a_window_draws_only_the_slices_it_overlaps() {
    let t = Trace::parse(&small()).unwrap();
    // 0.38 ms to 0.5 ms from the start: sysmon's retake, H2D, kernel and the model's kernel.
    let r = render(&t, Window::ms(0.38, 0.12)).unwrap();
    assert_eq!(r.bars, 4);
    assert_eq!(bars_in(&r.svg), 4);
    assert_eq!(r.flows, 0);
    assert!(!r.svg.contains("task poll"), "no poll in the window, none in the legend");
}

#[test]
fn an_empty_window_is_an_error() {
    let t = Trace::parse(&small()).unwrap();
    let e = render(&t, Window::ms(5.0, 1.0)).unwrap_err();
    assert!(matches!(e, GanttError::EmptyWindow { .. }), "{e:?}");
    assert!(e.to_string().contains("the trace spans 0.850 ms"), "{e}");
    assert!(matches!(render(&t, Window::ms(0.0, 0.0)), Err(GanttError::BadWindow(_))));
    assert!(matches!(render(&t, Window::ms(-1.0, 1.0)), Err(GanttError::BadWindow(_))));
    let empty = Trace::parse(&json!({"traceEvents": [lane(0, "P0")]})).unwrap();
    assert!(matches!(render(&empty, Window::all()), Err(GanttError::EmptyWindow { .. })));
}

#[test]
fn malformed_traces_are_errors_that_name_the_event() {
    let cases = [
        (json!(3), "not a Chrome trace"),
        (json!({"events": []}), "no traceEvents"),
        (json!({"traceEvents": {}}), "not an array"),
        (json!({"traceEvents": [{"name": "x"}]}), "traceEvents[0]: no \"ph\""),
        (
            json!({"traceEvents": [lane(0, "P0"), {"ph": "X", "pid": 1, "tid": 0, "ts": 1.0}]}),
            "traceEvents[1]: slice without",
        ),
        (json!({"traceEvents": [slice(0, "a", 1.0, -2.0)]}), "negative"),
        (
            json!({"traceEvents": [{"ph": "X", "pid": 1, "tid": 0, "ts": "soon", "dur": 1.0}]}),
            "no numeric \"ts\"",
        ),
        (json!({"traceEvents": [{"ph": "s", "pid": 1, "tid": 0, "ts": 1.0}]}), "without \"id\""),
        (json!({"traceEvents": [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 0}]}), "args.name"),
    ];
    for (v, want) in cases {
        let e = Trace::parse(&v).expect_err(&v.to_string()).to_string();
        assert!(e.contains(want), "{v}: {e:?} does not say {want:?}");
    }
}

#[test]
fn unmatched_flow_ends_are_counted_not_dropped() {
    let v = json!({"traceEvents": [
        lane(0, "P0"), slice(0, "poll", 0.0, 10.0),
        {"ph": "s", "id": 1, "pid": 1, "tid": 0, "ts": 1.0},
        {"ph": "f", "id": 2, "pid": 1, "tid": 0, "ts": 2.0},
    ]});
    let t = Trace::parse(&v).unwrap();
    assert_eq!((t.flows.len(), t.unmatched_flow_ends), (0, 2));
    assert_eq!(render(&t, Window::all()).unwrap().ignored, 2);
}

#[test]
fn first_finds_a_slice_by_its_name_or_its_lane() {
    let t = Trace::parse(&small()).unwrap();
    assert_eq!(t.first("H2D"), Some(200.0));
    assert_eq!(t.first("offload slot 0"), Some(50.0), "the queue wait, first on that lane");
    assert_eq!(t.first("poll task 3"), Some(20.0));
    assert_eq!(t.first("no such thing"), None);
}

#[test]
fn offload_lanes_named_with_their_kernel_sort_slot_then_model() {
    let v = json!({"traceEvents": [
        lane(9, "main"), lane(5, "slot 1 (saxpy) model"), lane(4, "offload slot 1 (saxpy)"),
        lane(3, "slot 0 (saxpy) model"), lane(2, "offload slot 0 (saxpy)"), lane(1, "P10"), lane(0, "P2"),
        slice(9, "x", 0.0, 1.0), slice(5, "batch #2 (model)", 0.0, 1.0), slice(4, "batch #2", 0.0, 1.0),
        slice(3, "batch #1 (model)", 0.0, 1.0), slice(2, "batch #1", 0.0, 1.0), slice(1, "poll", 0.0, 1.0),
        slice(0, "poll", 0.0, 1.0),
    ]});
    let t = Trace::parse(&v).unwrap();
    assert_eq!(
        t.lanes,
        [
            "P2",
            "P10",
            "offload slot 0 (saxpy)",
            "slot 0 (saxpy) model",
            "offload slot 1 (saxpy)",
            "slot 1 (saxpy) model",
            "main"
        ]
    );
}
