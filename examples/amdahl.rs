//! Amdahl's law, measured: a workload with a deliberately serial part, run on 1 … N Ps.
//!
//! ```text
//! cargo run --release --example amdahl -- [--max-procs N] [--serial U] [--parallel U]
//!     [--tasks T] [--reps R] [--out amdahl.svg]
//! ```
//! One run is a serial phase of `U` work units done by one task (nothing else can run beside
//! it), then a parallel phase of `U` units split into `T` tasks that every P takes from. Each
//! P count from 1 to `--max-procs` (default: the cores, at least 4) runs `R` times; the median
//! wall time `T(n)` gives the speed-up `S(n) = T(1) / T(n)`.
//!
//! Amdahl's law says `S(n) = 1 / ((1 − p) + p / n)` for a parallel fraction `p`. The program
//! fits `p` by least squares on the measurements (on `1/S(n) − 1 = −p·(1 − 1/n)`, which is
//! linear in `p`), using only the P counts up to this machine's cores: more Ps than cores add
//! no hardware, so their flattening is oversubscription, not the serial part. Beside the fitted
//! `p`, the serial phase timed alone gives the measured serial fraction `T_serial / T(1)`. The
//! table and an SVG plot (measured points, the fitted curve, the curve of the measured serial
//! fraction, and the ideal `S(n) = n`) show how soon a serial part caps the speed-up.
//!
//! `--help` lists every flag; bad flags exit 2 with the reason.

#[path = "common/mod.rs"]
mod common;
use clap::Parser;
use common::{count_in, fail, positive, Cli};
use plotters::prelude::*;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const NAME: &str = "amdahl";

/// A serial phase, then a parallel phase split into many tasks, on 1 … N Ps: measured
/// speed-up against Amdahl's law with the parallel fraction p fitted.
#[derive(Parser, Debug)]
#[command(name = NAME)]
pub struct Args {
    /// The largest P count to run [default: the cores, at least 4, so the curve's flattening
    /// shows even on a small machine]
    #[arg(long = "max-procs", value_name = "N", value_parser = count_in(1, 1024))]
    max_procs: Option<usize>,
    /// Work units of the serial phase (one unit is one xorshift64 step, about 1 ns)
    #[arg(long, value_name = "U", default_value_t = 20_000_000, value_parser = positive)]
    serial: usize,
    /// Work units of the parallel phase, split evenly among the tasks
    #[arg(long, value_name = "U", default_value_t = 80_000_000, value_parser = positive)]
    parallel: usize,
    /// Tasks the parallel phase is split into
    #[arg(long, value_name = "T", default_value_t = 256, value_parser = count_in(1, 1 << 20))]
    tasks: usize,
    /// Runs per P count; the median is kept
    #[arg(long, value_name = "R", default_value_t = 3, value_parser = count_in(1, 1000))]
    reps: usize,
    /// The SVG plot's path
    #[arg(long, value_name = "FILE.svg", default_value = "amdahl.svg")]
    out: PathBuf,
    /// Print the table as JSON instead of text
    #[arg(long)]
    json: bool,
}

impl Cli for Args {}

/// `units` steps of Marsaglia's xorshift64 (shifts 13, 7, 17): a chain of dependent steps the
/// optimiser can neither skip nor fold (an LCG's steps it can compose several at a time).
fn spin(units: usize, seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..units {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    std::hint::black_box(x)
}

/// Work units between yields in the serial phase: ~0.25 ms at ~2.5 ns a unit, well under
/// sysmon's 10 ms long-poll report, and 4 000 yields per second cost nothing measurable.
const SERIAL_SLICE: usize = 100_000;

/// The serial phase: `units` of work in one task, yielding every [`SERIAL_SLICE`] units as a
/// long loop should (nothing else is runnable meanwhile, so the yields do not let work in).
async fn serial_phase(units: usize) {
    let mut left = units;
    while left > 0 {
        let n = left.min(SERIAL_SLICE);
        std::hint::black_box(spin(n, left as u64));
        left -= n;
        gmprt::yield_now().await;
    }
}

/// One P count's figures.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    /// Ps.
    pub procs: usize,
    /// Median wall time of a whole run (serial + parallel phase).
    pub median_ms: f64,
    /// `T(1) / T(n)`.
    pub speedup: f64,
    /// Amdahl's `S(n)` with the fitted p.
    pub fitted: f64,
}

/// What a run of the story measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    /// One row per P count.
    pub rows: Vec<Row>,
    /// The parallel fraction fitted by least squares (None with fewer than 2 P counts to fit).
    pub fitted_p: Option<f64>,
    /// P counts the fit used (up to the machine's cores).
    pub fit_upto: usize,
    /// The serial phase timed alone, over `T(1)`: the measured serial fraction.
    pub measured_serial: f64,
    /// Cores of this machine.
    pub cores: usize,
}

/// Least-squares parallel fraction `p` of Amdahl's law from `(n, S(n))` pairs: with
/// `y = 1/S − 1` and `x = 1 − 1/n`, the law is `y = −p·x`, so `p = −Σxy / Σx²`, clamped to
/// `[0, 1]`. None when no point has `n > 1` (x is 0 for every point: nothing to fit).
pub fn fit_p(points: &[(usize, f64)]) -> Option<f64> {
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for &(n, s) in points {
        if n == 0 || !s.is_finite() || s <= 0.0 {
            continue;
        }
        let x = 1.0 - 1.0 / n as f64;
        let y = 1.0 / s - 1.0;
        sxy += x * y;
        sxx += x * x;
    }
    (sxx > 0.0).then(|| (-sxy / sxx).clamp(0.0, 1.0))
}

/// Amdahl's speed-up on `n` processors for a parallel fraction `p`.
pub fn amdahl(p: f64, n: f64) -> f64 {
    1.0 / ((1.0 - p) + p / n)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// One run on `rt`: the serial phase in one task, then the parallel phase in `tasks` tasks.
fn one_run(rt: &gmprt::Runtime, a: &Args) -> Duration {
    let (serial, tasks) = (a.serial, a.tasks);
    let per = a.parallel / tasks;
    let t0 = Instant::now();
    rt.block_on(async move {
        serial_phase(serial).await;
        let hs: Vec<_> = (0..tasks).map(|i| gmprt::spawn(async move { spin(per, i as u64) })).collect();
        for h in hs {
            std::hint::black_box(h.await.expect("a parallel task failed"));
        }
    });
    t0.elapsed()
}

/// Runs the story: every P count, the fit, the table and the plot.
pub fn run(a: &Args) -> Result<Outcome, String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let max = a.max_procs.unwrap_or(cores.max(4));
    let mut times = Vec::with_capacity(max);
    let mut serial_alone = Vec::with_capacity(a.reps);
    for n in 1..=max {
        let rt = gmprt::Runtime::builder().procs(n).build().map_err(|e| e.to_string())?;
        // One warm-up run: the first spawns pay for thread start-up and first-touch pages.
        one_run(&rt, a);
        let runs: Vec<Duration> = (0..a.reps).map(|_| one_run(&rt, a)).collect();
        if n == 1 {
            let serial = a.serial;
            serial_alone = (0..a.reps)
                .map(|_| {
                    let t0 = Instant::now();
                    rt.block_on(serial_phase(serial));
                    t0.elapsed()
                })
                .collect();
        }
        times.push(median(runs));
    }
    let t1 = times[0].as_secs_f64();
    let points: Vec<(usize, f64)> =
        times.iter().enumerate().map(|(i, t)| (i + 1, t1 / t.as_secs_f64())).collect();
    let fit_upto = cores.min(max);
    let fitted_p = fit_p(&points[..fit_upto]);
    let measured_serial = (median(serial_alone).as_secs_f64() / t1).min(1.0);
    let rows = points
        .iter()
        .zip(&times)
        .map(|(&(procs, speedup), t)| Row {
            procs,
            median_ms: t.as_secs_f64() * 1e3,
            speedup,
            fitted: fitted_p.map_or(f64::NAN, |p| amdahl(p, procs as f64)),
        })
        .collect();
    let out = Outcome { rows, fitted_p, fit_upto, measured_serial, cores };
    plot(&out, &a.out).map_err(|e| format!("writing the plot {}: {e}", a.out.display()))?;
    Ok(out)
}

/// The table, in words.
pub fn print(o: &Outcome, a: &Args) {
    println!(
        "serial phase {} units in one task, then {} units in {} tasks; median of {} runs per P count; {} cores",
        a.serial, a.parallel, a.tasks, a.reps, o.cores
    );
    println!("{:>5} {:>11} {:>9} {:>12}", "procs", "median ms", "speed-up", "Amdahl(fit)");
    for r in &o.rows {
        let note = if r.procs > o.cores { "  (more Ps than cores)" } else { "" };
        println!("{:>5} {:>11.1} {:>9.2} {:>12.2}{note}", r.procs, r.median_ms, r.speedup, r.fitted);
    }
    match o.fitted_p {
        Some(p) => println!(
            "fitted p = {p:.3} (serial fraction 1-p = {:.3}, on P counts 1..={}); measured serial fraction \
             (serial phase alone / T(1)) = {:.3}; the speed-up can never pass 1/(1-p) = {}",
            1.0 - p,
            o.fit_upto,
            o.measured_serial,
            if p < 1.0 { format!("{:.1}", 1.0 / (1.0 - p)) } else { "infinity".to_string() }
        ),
        None => println!(
            "no fit: it needs a P count above 1 within the {} cores; measured serial fraction = {:.3}",
            o.cores, o.measured_serial
        ),
    }
    println!("plot: {}", a.out.display());
}

/// The SVG plot: measured speed-ups, the fitted law, the law at the measured serial fraction,
/// and the ideal line.
fn plot(o: &Outcome, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let max = o.rows.len() as f64;
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Amdahl: measured speed-up against S(n) = 1/((1-p) + p/n)", ("sans-serif", 22))
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(55)
        .build_cartesian_2d(0.5..max + 0.5, 0.0..max + 0.5)?;
    chart.configure_mesh().x_desc("Ps (n)").y_desc("speed-up T(1)/T(n)").draw()?;
    let curve =
        |p: f64| (0..=100).map(move |i| 1.0 + (max - 1.0) * i as f64 / 100.0).map(move |n| (n, amdahl(p, n)));
    chart
        .draw_series(LineSeries::new([(1.0, 1.0), (max, max)], BLACK.mix(0.3)))?
        .label("ideal S(n) = n")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.mix(0.3)));
    if let Some(p) = o.fitted_p {
        chart
            .draw_series(LineSeries::new(curve(p), BLUE.stroke_width(2)))?
            .label(format!("Amdahl, fitted p = {p:.3}"))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLUE.stroke_width(2)));
    }
    let pm = 1.0 - o.measured_serial;
    chart
        .draw_series(LineSeries::new(curve(pm), GREEN.stroke_width(2)))?
        .label(format!("Amdahl, measured serial fraction {:.3}", o.measured_serial))
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], GREEN.stroke_width(2)));
    chart
        .draw_series(o.rows.iter().map(|r| Circle::new((r.procs as f64, r.speedup), 5, RED.filled())))?
        .label("measured (median)")
        .legend(|(x, y)| Circle::new((x + 10, y), 5, RED.filled()));
    if o.cores < o.rows.len() {
        // Right of this line there are more Ps than cores: no hardware is added.
        let c = o.cores as f64 + 0.5;
        chart
            .draw_series(LineSeries::new([(c, 0.0), (c, max + 0.5)], RED.mix(0.5).stroke_width(2)))?
            .label(format!("{} cores: more Ps add no hardware", o.cores))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], RED.mix(0.5).stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Parses `args` (the program's name first) and runs the story; what `main` and `gmprt tour`
/// call. A bad command line prints its error and exits 2 (`--help` prints and exits 0).
pub fn main_from(args: Vec<OsString>) {
    let a: Args = common::parse_from(args);
    match run(&a) {
        Ok(o) if a.json => {
            println!("{}", serde_json::to_string_pretty(&o).unwrap_or_else(|e| fail(NAME, e)))
        }
        Ok(o) => print(&o, &a),
        Err(e) => fail(NAME, e),
    }
}

#[allow(dead_code)]
fn main() {
    main_from(std::env::args_os().collect());
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::try_parse_from;

    #[test]
    fn cli() {
        common::testing::cli_contract::<Args>(NAME);
        let a: Args = try_parse_from([NAME]).unwrap();
        assert_eq!((a.max_procs, a.serial, a.tasks, a.reps), (None, 20_000_000, 256, 3));
        assert_eq!(a.out, Path::new("amdahl.svg"));
        let a: Args =
            try_parse_from([NAME, "--max-procs", "8", "--serial", "1e3", "--out", "x/y.svg"]).unwrap();
        assert_eq!((a.max_procs, a.serial), (Some(8), 1000));
        common::testing::parse_error::<Args>(
            &[NAME, "--max-procs", "0"],
            clap::error::ErrorKind::ValueValidation,
            2,
        );
    }

    #[test]
    fn the_fit_recovers_p_from_exact_points() {
        for p in [0.0, 0.5, 0.8, 0.95, 1.0] {
            let pts: Vec<(usize, f64)> = (1..=8).map(|n| (n, amdahl(p, n as f64))).collect();
            let got = fit_p(&pts).unwrap();
            assert!((got - p).abs() < 1e-12, "p {p}: fitted {got}");
        }
    }

    #[test]
    fn the_fit_recovers_p_from_noisy_points() {
        // ±2 % noise, alternating in sign, on p = 0.8: the fit stays within 0.02.
        let pts: Vec<(usize, f64)> =
            (1..=16).map(|n| (n, amdahl(0.8, n as f64) * if n % 2 == 0 { 1.02 } else { 0.98 })).collect();
        let got = fit_p(&pts).unwrap();
        assert!((got - 0.8).abs() < 0.02, "fitted {got}");
    }

    #[test]
    fn nothing_to_fit_is_none() {
        assert_eq!(fit_p(&[(1, 1.0)]), None);
        assert_eq!(fit_p(&[]), None);
    }

    #[test]
    fn amdahl_limits() {
        assert_eq!(amdahl(1.0, 4.0), 4.0);
        assert_eq!(amdahl(0.0, 4.0), 1.0);
        assert!((amdahl(0.5, 1e12) - 2.0).abs() < 1e-9);
    }
}
