//! The trading desk (`examples/trading_desk.rs`) end to end on the Host device, through the
//! `gmprt` command: a seeded small desk (50 underlyings × 2,000 contracts, 5,000 ticks) whose
//! final risk must equal the f64 reference within the kernels' tolerances, whose every
//! sequence number must be accounted for, and which must report each bad input clearly.
//!
//! The feed runs unpaced (`--rate 0`) so a test takes well under a second; nothing here
//! depends on timing: how many ticks are conflated does, so only the sums are checked.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

/// 40 contracts per underlying, 2 of them (5%) path-dependent: 100 valued by Monte Carlo.
const SMALL: [&str; 11] = [
    "--underlyings",
    "50",
    "--contracts",
    "2000",
    "--ticks",
    "5000",
    "--rate",
    "0",
    "--mc-share",
    "0.05",
    "--json",
];

fn desk(extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gmprt"));
    c.args(["story", "trading_desk", "--procs", "2"]).args(SMALL).args(extra).env("GMPRT_DEVICE", "host");
    c
}

fn run(extra: &[&str]) -> (Output, String, String) {
    let o = desk(extra).output().expect("run gmprt");
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    (o, out, err)
}

/// Runs the desk, which must succeed, and returns its JSON report.
fn report(extra: &[&str]) -> Value {
    let (o, out, err) = run(extra);
    assert_eq!(o.status.code(), Some(0), "{extra:?}: {err}\n{out}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{extra:?}: not JSON ({e}): {out}"))
}

fn u(v: &Value, path: &[&str]) -> u64 {
    let mut x = v;
    for p in path {
        x = &x[*p];
    }
    x.as_u64().unwrap_or_else(|| panic!("{path:?} is not a count: {x}"))
}

/// processed + conflated + rejected + gaps = every sequence number the feed used.
fn assert_accounted(r: &Value, total: u64) {
    let f = &r["feed"];
    let sum = u(f, &["processed"]) + u(f, &["conflated"]) + u(f, &["rejected"]) + u(f, &["gaps"]);
    assert_eq!(u(r, &["feed_total"]), total, "{f}");
    assert_eq!(sum, total, "every sequence number lands in exactly one bucket: {f}");
}

fn assert_matches_reference(r: &Value) {
    let worst = r["check"]["worst_ratio"].as_f64().expect("worst_ratio");
    assert!(worst <= 1.0, "final risk vs the f64 reference: {}", r["check"]);
    // The Monte Carlo share against Black-Scholes (its payoff is European): within 5 σ.
    assert_eq!(u(r, &["mc_contracts"]), 100);
    let z = r["paths_check"]["worst_z"].as_f64().expect("worst_z");
    assert!(z <= 5.0, "Monte Carlo vs Black-Scholes: {}", r["paths_check"]);
    assert!(
        u(r, &["tick_to_exotics", "count"]) > 0,
        "the exotics task valued moves: {}",
        r["tick_to_exotics"]
    );
}

#[test]
fn each_placement_matches_the_reference_and_accounts_for_every_tick() {
    let mut totals = Vec::new();
    for placement in ["cpu", "gpu", "auto"] {
        let r = report(&["--placement", placement]);
        assert_accounted(&r, 5000);
        assert_matches_reference(&r);
        assert_eq!(u(&r, &["feed", "rejected"]) + u(&r, &["feed", "gaps"]), 0, "a clean feed: {}", r["feed"]);
        assert!(u(&r, &["orders", "acked"]) > 0, "the opening hedges are acked: {}", r["orders"]);
        assert_eq!(u(&r, &["orders", "pending_at_end"]), 0, "{}", r["orders"]);
        let (cpu, gpu) = (u(&r, &["batches_cpu"]), u(&r, &["batches_gpu"]));
        match placement {
            "cpu" => assert_eq!(gpu, 0),
            "gpu" => assert_eq!(cpu, 0),
            _ => assert_eq!(u(&r, &["auto_decisions"]), cpu + gpu, "auto decides every batch"),
        }
        totals.push(r["totals"][1].as_f64().expect("portfolio delta"));
    }
    // The final state is the same whatever priced it: the portfolio delta agrees closely.
    for t in &totals[1..] {
        assert!((t - totals[0]).abs() <= 1e-6 * totals[0].abs().max(1.0), "{totals:?}");
    }
}

/// `--resident`: the book goes to the device once and each batch uploads the moved spots
/// and their list alone, and reprices those underlyings there. A missed or misplaced upload leaves stale spots on the device, and the final risk then
/// misses the reference computed on the final state.
#[test]
fn a_resident_book_uploads_only_spots_and_matches_the_reference() {
    let r = report(&["--placement", "gpu", "--resident"]);
    assert_accounted(&r, 5000);
    assert_matches_reference(&r);
    assert_eq!(r["resident"], Value::Bool(true));
    let batches = u(&r, &["batches_gpu"]);
    let bytes = u(&r, &["resident_upload_bytes"]);
    // Per batch after the first (which uploads the whole book, counted apart): one spot word
    // for each of the 50 underlyings and the list of the 1..=50 moved ones, 4 bytes each; far
    // below the book's 2,000 contracts × 28 bytes of input columns.
    assert!(batches > 1 && bytes > 0, "{batches} batches, {bytes} bytes");
    assert!(bytes <= batches * (50 + 50) * 4, "{bytes} bytes in {batches} batches");
    assert!(bytes >= (batches - 1) * (50 + 1) * 4, "{bytes} bytes in {batches} batches");
}

#[test]
fn malformed_ticks_gaps_and_disconnects_are_counted_and_the_run_completes() {
    let r = report(&[
        "--fault-malformed-every",
        "97",
        "--fault-gap-every",
        "101",
        "--fault-disconnect-every",
        "700",
    ]);
    assert_accounted(&r, 5000);
    assert_matches_reference(&r);
    let gaps = (0..5000u64).filter(|s| s % 101 == 100).count() as u64;
    let bad = (0..5000u64).filter(|s| s % 97 == 96 && s % 101 != 100).count() as u64;
    assert_eq!(u(&r, &["feed", "gaps"]), gaps, "{}", r["feed"]);
    assert_eq!(u(&r, &["feed", "rejected"]), bad, "{}", r["feed"]);
    // The server closes after every 700 frames (the ticks sent, then the end frame).
    let frames = 5000 - gaps + 1;
    assert_eq!(u(&r, &["feed", "disconnects"]), (frames - 1) / 700, "{}", r["feed"]);
    let msgs = r["feed"]["messages"].to_string();
    assert!(msgs.contains("never arrived") && msgs.contains("rejected"), "{msgs}");
}

#[test]
fn a_gateway_that_refuses_at_first_gets_every_order_later() {
    let r = report(&["--fault-gateway-refuse", "3"]);
    let o = &r["orders"];
    assert!(u(o, &["refused"]) >= 3, "{o}");
    assert!(u(o, &["acked"]) > 0, "{o}");
    assert_eq!(u(o, &["pending_at_end"]), 0, "{o}");
    assert_accounted(&r, 5000);
}

#[test]
fn a_gateway_that_never_stops_refusing_leaves_orders_reported_and_the_run_ends() {
    // It accepts every connection and drops it at once: the sender gives up after the feed
    // ends, and says how many orders it could not send.
    let r = report(&["--fault-gateway-refuse", "1000000"]);
    let o = &r["orders"];
    assert_eq!(u(o, &["acked"]), 0, "{o}");
    assert!(u(o, &["pending_at_end"]) > 0, "{o}");
    assert!(u(o, &["refused"]) >= 3, "{o}");
    assert_accounted(&r, 5000);
}

#[test]
fn a_gateway_that_is_down_leaves_orders_reported_not_dropped() {
    let r = report(&["--fault-gateway-down"]);
    let o = &r["orders"];
    assert_eq!(u(o, &["acked"]), 0, "{o}");
    assert!(u(o, &["pending_at_end"]) > 0, "the hedges are still queued, and said so: {o}");
    assert!(o["last_error"].as_str().unwrap_or("").contains("gateway"), "{o}");
    assert_accounted(&r, 5000);
}

#[test]
fn a_feed_that_never_answers_is_a_clear_error_not_a_hang() {
    // A port nothing listens on: bind one, note it, close it.
    let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let (o, _, err) = run(&["--feed", &addr]);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("the feed ended early") && err.contains("connection attempts"), "{err}");
}

#[test]
fn bad_command_lines_say_what_was_wrong() {
    for (args, says) in [
        (&["--underlyings", "50", "--contracts", "10"][..], "every underlying needs a contract"),
        (&["--placement", "fpga"][..], "fpga"),
        (&["--delta-limit", "NaN"][..], "--delta-limit"),
        (&["--mc-share", "2"][..], "--mc-share"),
        (&["--sweep", "--sweep-secs", "0"][..], "--sweep-secs"),
        (&["--sweep-secs", "inf"][..], "--sweep-secs"),
        (&["--resident"][..], "--resident keeps the book on the device"),
        (&["--resident", "--placement", "cpu"][..], "needs --placement gpu"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_gmprt"))
            .args(["story", "trading_desk"])
            .args(args)
            .output()
            .expect("run gmprt");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn the_feed_can_be_a_separate_process() {
    let mut server = Command::new(env!("CARGO_BIN_EXE_gmprt"))
        .args([
            "story",
            "trading_desk",
            "--serve-feed",
            "127.0.0.1:0",
            "--underlyings",
            "50",
            "--ticks",
            "5000",
        ])
        .args(["--rate", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the feed process");
    let mut first = String::new();
    // Kept open until the server exits: its last line must not meet a closed pipe.
    let mut lines = BufReader::new(server.stdout.take().unwrap());
    lines.read_line(&mut first).unwrap();
    let addr = first.trim().rsplit(' ').next().expect("the address ends the line").to_string();
    let r = report(&["--feed", &addr]);
    assert_accounted(&r, 5000);
    assert_matches_reference(&r);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut lines, &mut rest).unwrap();
    assert!(server.wait().unwrap().success(), "{first}{rest}");
    assert!(rest.contains("feed sent in full"), "{rest}");
}
