//! The `gmprt` command's contract: `--help` everywhere exits 0 with a usage, a bad command line
//! exits 2 naming what is wrong, a story runs with its own flags, and `gmprt trace` writes a
//! trace that passes the runtime's structural check.
use std::process::{Command, Output};

fn gmprt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gmprt"))
        .args(args)
        .current_dir(std::env::temp_dir())
        .output()
        .expect("the gmprt binary runs")
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).to_string(), String::from_utf8_lossy(&o.stderr).to_string())
}

#[test]
fn help_lists_every_subcommand() {
    let o = gmprt(&["--help"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    for sub in ["tour", "story", "explain", "calibrate", "trace", "gantt", "bench"] {
        assert!(out.contains(&format!("  {sub} ")), "--help does not list {sub}:\n{out}");
    }
}

#[test]
fn every_subcommand_has_help() {
    for (sub, usage) in [
        ("tour", "Usage: gmprt tour"),
        ("story", "Usage: gmprt story [STORY [FLAGS]]..."),
        ("explain", "Usage: explain"),
        ("calibrate", "Usage: gmprt calibrate"),
        ("trace", "Usage: gmprt trace"),
        ("gantt", "Usage: gmprt gantt"),
        ("bench", "Usage: gmprt bench"),
    ] {
        let o = gmprt(&[sub, "--help"]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{sub} --help: {err}");
        assert!(out.contains(usage), "{sub} --help lacks {usage:?}:\n{out}");
    }
    // A story's own help, through `gmprt story`.
    let o = gmprt(&["story", "million_tasks", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o).0.contains("--tasks"), "{}", text(&o).0);
}

#[test]
fn bad_command_lines_exit_2_saying_why() {
    for (args, says) in [
        (&["frob"][..], "unrecognized subcommand 'frob'"),
        (&["bench", "--frob"][..], "unexpected argument '--frob'"),
        (&["story", "nope"][..], "no story named \"nope\""),
        (&["story", "million_tasks", "--frob"][..], "'--frob'"),
        (&["story", "million_tasks", "--tasks", "-5"][..], "--tasks"),
        (&["trace", "million_tasks"][..], "--out <FILE.json>"),
        (&["trace", "no_such_story", "--out", "x.json"][..], "no_such_story"),
        (&["trace", "million_tasks", "--out", "x.json", "--window-ms", "0"][..], "--window-ms"),
        (&["calibrate"][..], "--save <FILE.json>"),
        (&["calibrate", "--save", "p.json", "--device", "tpu"][..], "tpu"),
    ] {
        let o = gmprt(args);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?} does not say {says:?}:\n{err}");
    }
}

/// `calibrate --save` with a path that cannot be written fails before measuring: at once, saying
/// nothing was measured (issue 23: it used to find out after 22 s of work and lose the profile).
#[test]
fn calibrate_refuses_a_bad_save_path_before_measuring() {
    let bad = std::env::temp_dir().join(format!("gmprt-no-such-dir-{}", std::process::id())).join("p.json");
    let o = gmprt(&["calibrate", "--save", bad.to_str().unwrap(), "--device", "host", "--quick"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("--save {}", bad.display())), "{err}");
    assert!(err.contains("(nothing was measured)"), "{err}");
    // A directory is no file either.
    let o = gmprt(&[
        "calibrate",
        "--save",
        std::env::temp_dir().to_str().unwrap(),
        "--device",
        "host",
        "--quick",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("(nothing was measured)"), "{}", text(&o).1);
}

/// A `GMPRT_TRACE` path that cannot be created fails the run before it starts, naming the
/// variable (issue 23: the trace of the whole run used to be lost at shutdown).
#[test]
fn a_bad_trace_path_fails_at_start() {
    let bad = std::env::temp_dir().join(format!("gmprt-no-such-dir-{}", std::process::id())).join("t.json");
    let o = Command::new(env!("CARGO_BIN_EXE_gmprt"))
        .args(["story", "million_tasks", "--tasks", "1000", "--procs", "1"])
        .env("GMPRT_TRACE", &bad)
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(err.contains(&format!("GMPRT_TRACE={}: cannot create the trace file", bad.display())), "{err}");
    assert!(!out.contains("tasks=1000"), "the run started: {out}");
}

#[test]
fn a_story_runs_with_its_own_flags() {
    let o = gmprt(&["story", "million_tasks", "--tasks", "1000", "--procs", "2"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains("million_tasks runtime=gmprt mode=spawn tasks=1000 procs=2"), "{out}");
}

#[test]
fn million_tasks_detached_runs_gos_program_and_refuses_it_with_park() {
    // Detached tasks and one latch (Go's goroutines and WaitGroup); the example itself asserts
    // that every task ran exactly once.
    let o = gmprt(&["story", "million_tasks", "--tasks", "3000", "--procs", "2", "--detached"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains("million_tasks runtime=gmprt mode=detached tasks=3000 procs=2"), "{out}");
    let o = gmprt(&["story", "million_tasks", "--tasks", "10", "--detached", "--park"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--park") && err.contains("--detached"), "{err}");
}

/// A story whose stdout is closed before it prints (`gmprt story … | head`, the reader gone
/// first) ends quietly with 141, as a Unix tool ended by SIGPIPE, without a panic or a
/// backtrace. The pipe's read end is closed before the child starts, so its first line fails.
#[test]
fn a_closed_stdout_ends_a_story_quietly() {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let o = Command::new(env!("CARGO_BIN_EXE_gmprt"))
        .args(["story", "million_tasks", "--tasks", "1000", "--procs", "2"])
        .stdout(writer)
        .output()
        .expect("gmprt runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(141), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn million_tasks_warm_times_a_second_run_and_refuses_park() {
    // The untimed first run and the timed second one both spawn every task (and a root).
    for (extra, mode) in [(None, "spawn_warm"), (Some("--detached"), "detached_warm")] {
        let mut args = vec!["story", "million_tasks", "--tasks", "1000", "--procs", "2", "--warm", "--json"];
        args.extend(extra);
        let o = gmprt(&args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("--json prints JSON");
        assert_eq!(v["mode"], mode, "{out}");
        let spawned = v["stats"]["spawned"].as_u64().expect("stats.spawned");
        assert!((2000..=2004).contains(&spawned), "two runs of 1000 tasks, {spawned} spawned: {out}");
    }
    let o = gmprt(&["story", "million_tasks", "--tasks", "10", "--warm", "--park"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--park") && err.contains("--warm"), "{err}");
}

#[test]
fn bench_json_has_a_row_per_measurement() {
    let o = gmprt(&["bench", "--reps", "1", "--json", "--procs", "2"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("bench --json prints JSON");
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 4, "{out}");
    assert!(rows.iter().take(3).all(|r| r["peer"] == "tokio" && r["ratio"].is_number()), "{out}");
}

#[test]
fn gantt_draws_a_trace_file_and_refuses_a_bad_one() {
    let dir = std::env::temp_dir().join(format!("gmprt-cli-gantt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (good, bad, svg) = (dir.join("t.json"), dir.join("bad.json"), dir.join("g.svg"));
    let trace = serde_json::json!({"traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "gmprt"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 0, "args": {"name": "P0"}},
        {"ph": "X", "name": "poll task 1", "pid": 1, "tid": 0, "ts": 5.0, "dur": 10.0},
        {"ph": "X", "name": "poll task 2", "pid": 1, "tid": 0, "ts": 20.0, "dur": 10.0},
    ]});
    std::fs::write(&good, trace.to_string()).unwrap();
    std::fs::write(&bad, r#"{"traceEvents": [{"ph": "X", "pid": 1, "tid": 0, "ts": 1}]}"#).unwrap();
    let o = gmprt(&["gantt", good.to_str().unwrap(), "--svg", svg.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains("(2 bars, 0 flows on 1 lanes"), "{out}");
    assert!(std::fs::read_to_string(&svg).unwrap().contains("\nP0\n</text>"));
    let o = gmprt(&["gantt", bad.to_str().unwrap(), "--svg", svg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("failed its check"), "{}", text(&o).1);
    let o = gmprt(&["gantt", good.to_str().unwrap(), "--svg", svg.to_str().unwrap(), "--start-ms", "9"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("no slice in the window"), "{}", text(&o).1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn trace_records_a_story_and_the_trace_passes_the_check() {
    let dir = std::env::temp_dir().join(format!("gmprt-cli-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, svg) = (dir.join("t.json"), dir.join("g.svg"));
    let o = gmprt(&[
        "trace",
        "million_tasks",
        "--tasks",
        "2000",
        "--procs",
        "2",
        "--out",
        json.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
        "--window-ms",
        "1000",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    // The story ran with its own flags, and the trace was checked.
    assert!(out.contains("million_tasks runtime=gmprt mode=spawn tasks=2000 procs=2"), "{out}");
    assert!(out.contains("structure checked"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let s = gmprt::runtime::trace::check(&v).expect("the trace passes the runtime's check");
    assert!(s.slices >= 2000, "a poll slice per task at least: {s:?}");
    // Which P ran the tasks is the scheduler's choice: P0, P1 or both.
    let ps: Vec<&String> = s.lanes.keys().filter(|l| l.ends_with("/P0") || l.ends_with("/P1")).collect();
    assert!(!ps.is_empty(), "no P lane: {:?}", s.lanes.keys());
    let svg = std::fs::read_to_string(&svg).unwrap();
    for p in ps {
        let name = p.rsplit('/').next().unwrap();
        assert!(svg.contains(&format!("\n{name}\n</text>")), "the Gantt chart has no {name} label");
    }
    assert!(svg.contains("task poll"), "the Gantt chart's legend has no task poll");
    std::fs::remove_dir_all(&dir).unwrap();
}
