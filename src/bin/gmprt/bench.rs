//! `gmprt bench`: quick in-process measurements, the median of a few runs each, every one
//! beside the same program on its peer (tokio's multi-thread runtime with as many workers as
//! gmprt has Ps) where there is one. Seconds, not a benchmark suite: the criterion benches
//! (`cargo bench`) are the figures to quote; these are for a first look on a new machine.
use crate::common::Rt;
use crate::{fail, false_sharing, spinner};
use std::time::{Duration, Instant};

/// `gmprt bench`'s flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Ps for gmprt and workers for tokio [default: one per core]
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(u32).range(1..=1024))]
    procs: Option<u32>,
    /// Runs per measurement; the median is kept
    #[arg(long, value_name = "R", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    reps: u32,
    /// Print the table as JSON
    #[arg(long)]
    json: bool,
}

/// One measurement.
#[derive(Debug, serde::Serialize)]
struct Row {
    /// What was measured.
    what: &'static str,
    /// gmprt's median, in the row's unit.
    gmprt: f64,
    /// The peer's name, when there is one.
    peer: Option<&'static str>,
    /// The peer's median.
    peer_value: Option<f64>,
    /// gmprt over the peer (below 1: gmprt takes less).
    ratio: Option<f64>,
    /// The unit of both figures.
    unit: &'static str,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Tasks spawned and joined per run.
const SPAWNS: usize = 100_000;
/// yield_now calls per task per run.
const YIELDS: usize = 20_000;
/// Sleepers per run, each sleeping [`SLEEP`].
const SLEEPERS: usize = 10_000;
/// A short sleep, so that a run measures the timers' bookkeeping more than the wait.
const SLEEP: Duration = Duration::from_millis(1);

/// The three measurements on either runtime, through the examples' `Rt` interface (the one
/// the stories use to run the same program on gmprt and on tokio), so both sides run the
/// same code: spawn + join, `yield_now` on every P, and short sleepers.
fn runs<R: Rt>(rt: &R, reps: u32) -> [Duration; 3] {
    let procs = rt.procs();
    let timed = |body: &dyn Fn() -> Duration| median((0..reps).map(|_| body()).collect());
    let spawn = timed(&|| {
        rt.block_on(async {
            let t0 = Instant::now();
            let hs: Vec<_> = (0..SPAWNS).map(|i| R::spawn(async move { i })).collect();
            for h in hs {
                std::hint::black_box(h.await);
            }
            t0.elapsed()
        })
    });
    let yields = timed(&|| {
        rt.block_on(async {
            let t0 = Instant::now();
            let hs: Vec<_> = (0..procs)
                .map(|_| {
                    R::spawn(async {
                        for _ in 0..YIELDS {
                            R::yield_now().await;
                        }
                    })
                })
                .collect();
            for h in hs {
                h.await;
            }
            t0.elapsed()
        })
    });
    let sleeps = timed(&|| {
        rt.block_on(async {
            let t0 = Instant::now();
            let hs: Vec<_> =
                (0..SLEEPERS).map(|_| R::spawn(R::sleep_until(Instant::now() + SLEEP))).collect();
            for h in hs {
                h.await;
            }
            t0.elapsed()
        })
    });
    [spawn, yields, sleeps]
}

/// Runs `gmprt bench`.
pub fn run(a: &Args) {
    let mut b = gmprt::Runtime::builder();
    if let Some(p) = a.procs {
        b = b.procs(p as usize);
    }
    let rt = b.build().unwrap_or_else(|e| fail("gmprt bench: gmprt", e));
    let procs = rt.procs();
    let trt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(procs)
        .enable_time()
        .build()
        .unwrap_or_else(|e| fail("gmprt bench: tokio", e));
    let pb = spinner(&format!("measuring on {procs} Ps, median of {} runs", a.reps));
    let g = runs(&rt, a.reps);
    let t = runs(&trt, a.reps);
    drop(trt);
    let fs = false_sharing::measure(&rt, 5_000_000, a.reps as usize);
    pb.finish_and_clear();
    let fs = fs.unwrap_or_else(|e| fail("gmprt bench: false sharing", e));
    let ns = |d: Duration, n: usize| d.as_secs_f64() * 1e9 / n as f64;
    let pair = |what, unit, g: f64, t: f64| Row {
        what,
        gmprt: g,
        peer: Some("tokio"),
        peer_value: Some(t),
        ratio: Some(g / t),
        unit,
    };
    let rows = vec![
        pair("spawn + join, per task", "ns", ns(g[0], SPAWNS), ns(t[0], SPAWNS)),
        pair("yield_now, per yield on every P", "ns", ns(g[1], YIELDS), ns(t[1], YIELDS)),
        pair("10 000 sleepers of 1 ms, wall", "ms", g[2].as_secs_f64() * 1e3, t[2].as_secs_f64() * 1e3),
        Row {
            what: "false sharing: packed / padded counters",
            gmprt: fs.ratio_packed_over_padded64,
            peer: None,
            peer_value: None,
            ratio: None,
            unit: "x",
        },
    ];
    if a.json {
        let v = serde_json::json!({"procs": procs, "reps": a.reps, "rows": rows});
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_else(|e| fail("gmprt bench: --json", e)));
        return;
    }
    println!("gmprt bench: {procs} Ps (tokio: {procs} workers), median of {} runs each", a.reps);
    println!("{:<42} {:>10} {:>10} {:>8}  unit", "measurement", "gmprt", "tokio", "ratio");
    for r in &rows {
        let peer = r.peer_value.map_or("-".to_string(), |v| format!("{v:.2}"));
        let ratio = r.ratio.map_or("-".to_string(), |v| format!("{v:.2}"));
        println!("{:<42} {:>10.2} {:>10} {:>8}  {}", r.what, r.gmprt, peer, ratio, r.unit);
    }
    println!("ratio = gmprt / tokio (below 1: gmprt takes less). Quick figures; `cargo bench` has the careful ones.");
}
