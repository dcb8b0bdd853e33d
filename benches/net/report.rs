//! The net bench's report: medians over rounds, the table (gmprt against tokio, with which side
//! a ratio favours) and the JSON file with every round's figure.
//!
//! **Paired ratios.** The two sides' runs of one round are adjacent in time, so their ratio
//! cancels most of a drift of the machine that moves both (on the 2-core VM one side's
//! requests/s ranged 138k-186k within one set of 3 rounds). The table gives the median of the
//! per-round ratios and a confidence interval for that median from their order statistics
//! ([`median_ci`]: the sign test's interval, which assumes nothing about the distribution, only
//! that rounds are independent). A target such as "≥ 1.0× tokio" is met beyond the noise when
//! the interval's lower end is at or above it, missed beyond it when the upper end is below,
//! and *at the line* otherwise. 95% needs at least 6 rounds.

use super::*;

/// The figures of one side's rounds, in round order.
fn values(v: &[(usize, f64)]) -> Vec<f64> {
    v.iter().map(|&(_, x)| x).collect()
}

fn median_of(v: &[(usize, f64)]) -> f64 {
    median(&values(v))
}

/// gmprt's figure over tokio's, for each round in which both sides' runs succeeded.
pub(super) fn paired_ratios(gmprt: &[(usize, f64)], tokio: &[(usize, f64)]) -> Vec<f64> {
    gmprt
        .iter()
        .filter_map(|&(round, g)| tokio.iter().find(|&&(r, t)| r == round && t > 0.0).map(|&(_, t)| g / t))
        .collect()
}

/// A confidence interval for the median of `v` from its order statistics: the narrowest
/// `[v(k), v(n+1-k)]` (1-based, sorted) whose coverage `1 - 2·P(Binomial(n, 1/2) < k)` is at
/// least `level`. Returns (low, high, coverage), or `None` when even `[min, max]` covers less
/// (fewer than 6 values for 95%).
pub(super) fn median_ci(v: &[f64], level: f64) -> Option<(f64, f64, f64)> {
    let n = v.len();
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let p_each = 0.5f64.powi(i32::try_from(n).ok()?);
    let (mut best, mut below, mut choose) = (None, 0.0, 1.0f64);
    for k in 1..=n / 2 {
        // below = P(B < k) = Σ_{i < k} C(n, i) / 2^n; `choose` is C(n, k - 1) on entry.
        below += choose * p_each;
        choose = choose * (n - (k - 1)) as f64 / k as f64;
        let coverage = 1.0 - 2.0 * below;
        if coverage < level {
            break;
        }
        best = Some((s[k - 1], s[n - k], coverage));
    }
    best
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

pub(super) fn fmt_value(v: f64, m: &Metric) -> String {
    match m.unit {
        "µs" if v >= 1000.0 => format!("{:.2} ms", v / 1000.0),
        "µs" if v < 100.0 => format!("{v:.2} µs"),
        "µs" => format!("{v:.0} µs"),
        "B" => format!("{v:.0} B"),
        "1/1000" => format!("{v:.1}"),
        "cores" => format!("{v:.3}"),
        _ => {
            // Thousands separators for rates.
            let s = format!("{:.0}", v);
            let mut out = String::new();
            for (i, c) in s.chars().enumerate() {
                if i > 0 && (s.len() - i) % 3 == 0 {
                    out.push(',');
                }
                out.push(c);
            }
            out
        }
    }
}

pub(super) fn print_table(figures: &Figures, procs: usize, rounds: usize) {
    println!();
    println!("net bench, procs={procs}: median of {rounds} rounds");
    println!(
        "{:<6} {:<18} {:>14} {:>14}   {:<28} paired gmprt/tokio: median [95% CI]",
        "", "metric", "tokio", "gmprt", "gmprt/tokio"
    );
    for ((w, _), (m, by_side)) in figures {
        let med = |side: &str| by_side.get(side).filter(|v| !v.is_empty()).map(|v| median_of(v));
        let (t, g) = (med("tokio"), med("gmprt"));
        let show = |v: Option<f64>| v.map_or("—".to_string(), |v| fmt_value(v, m));
        let ratio = match (g, t) {
            (Some(g), Some(t)) if t > 0.0 => {
                format!(
                    "{:.2} ({})",
                    g / t,
                    if m.higher_is_better { "higher better" } else { "lower better" }
                )
            }
            _ => "—".to_string(),
        };
        let paired = match (by_side.get("gmprt"), by_side.get("tokio")) {
            (Some(g), Some(t)) => {
                let r = paired_ratios(g, t);
                match (r.is_empty(), median_ci(&r, 0.95)) {
                    (true, _) => "—".to_string(),
                    (false, Some((lo, hi, cov))) => {
                        format!("{:.2} [{lo:.2}, {hi:.2}] ({:.1}%, n={})", median(&r), 100.0 * cov, r.len())
                    }
                    (false, None) => format!("{:.2} (n={}: too few for a 95% interval)", median(&r), r.len()),
                }
            }
            _ => "—".to_string(),
        };
        println!("{:<6} {:<18} {:>14} {:>14}   {ratio:<28} {paired}", w.name(), m.name, show(t), show(g));
    }
}

pub(super) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/target")))
}

#[allow(clippy::too_many_arguments)]
pub(super) fn write_json(
    path: &std::path::Path,
    figures: &Figures,
    cli: &Cli,
    procs: usize,
    cpus: usize,
    nofile: Option<u64>,
    conns: &BTreeMap<&str, usize>,
    notes: &[String],
) -> io::Result<()> {
    let results: Vec<serde_json::Value> = figures
        .iter()
        .map(|((w, _), (m, by_side))| {
            let side = |name: &str| {
                by_side.get(name).map(|v| {
                    serde_json::json!({
                        "median": median_of(v),
                        "rounds": values(v),
                        "round_index": v.iter().map(|&(r, _)| r).collect::<Vec<_>>(),
                    })
                })
            };
            let med = |name: &str| by_side.get(name).map(|v| median_of(v));
            let paired = match (by_side.get("gmprt"), by_side.get("tokio")) {
                (Some(g), Some(t)) => {
                    let r = paired_ratios(g, t);
                    let ci = median_ci(&r, 0.95);
                    serde_json::json!({
                        "ratios": r,
                        "median": (!r.is_empty()).then(|| median(&r)),
                        "ci95": ci.map(|(lo, hi, _)| [lo, hi]),
                        "coverage": ci.map(|(_, _, c)| c),
                    })
                }
                _ => serde_json::Value::Null,
            };
            serde_json::json!({
                "workload": w.name(),
                "metric": m.name,
                "unit": m.unit,
                "better": if m.higher_is_better { "higher" } else { "lower" },
                "tokio": side("tokio"),
                "gmprt": side("gmprt"),
                "gmprt_over_tokio": match (med("gmprt"), med("tokio")) {
                    (Some(g), Some(t)) if t > 0.0 => Some(g / t),
                    _ => None,
                },
                "paired_gmprt_over_tokio": paired,
            })
        })
        .collect();
    let doc = serde_json::json!({
        "bench": "net",
        "procs": procs,
        "cpus": cpus,
        "rounds": cli.rounds,
        "secs": cli.secs,
        "echo_msg_bytes": cli.msg,
        "conns": conns,
        "open_file_limit": nofile,
        "results": results,
        "notes": notes,
    });
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, serde_json::to_string_pretty(&doc).map_err(io::Error::other)? + "\n")
}
