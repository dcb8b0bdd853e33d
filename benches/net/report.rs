//! The net bench's report: medians over rounds, the table (gmprt against tokio, with which side
//! a ratio favours) and the JSON file with every round's figure.

use super::*;

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
    println!("{:<6} {:<18} {:>14} {:>14}   gmprt/tokio", "", "metric", "tokio", "gmprt");
    for ((w, _), (m, by_side)) in figures {
        let med = |side: &str| by_side.get(side).filter(|v| !v.is_empty()).map(|v| median(v));
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
        println!("{:<6} {:<18} {:>14} {:>14}   {ratio}", w.name(), m.name, show(t), show(g));
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
                by_side.get(name).map(|v| serde_json::json!({ "median": median(v), "rounds": v }))
            };
            let med = |name: &str| by_side.get(name).map(|v| median(v));
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
