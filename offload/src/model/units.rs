//! Figures in readable units for the model's prose (`explain`, the crossover's reasons, the
//! network's): seconds, rates with an SI prefix, P counts.

/// `1 P`, `16 Ps`.
pub(super) fn ps(n: usize) -> String {
    if n == 1 {
        "1 P".to_string()
    } else {
        format!("{n} Ps")
    }
}

/// Seconds in a readable unit (ns, µs, ms, s).
pub(crate) fn secs(t: f64) -> String {
    let a = t.abs();
    if a == 0.0 {
        "0 s".to_string()
    } else if a < 1e-6 {
        format!("{:.3} ns", t * 1e9)
    } else if a < 1e-3 {
        format!("{:.2} µs", t * 1e6)
    } else if a < 1.0 {
        format!("{:.2} ms", t * 1e3)
    } else {
        format!("{t:.2} s")
    }
}

/// A rate with an SI prefix (`55.0 GB/s`, `4.98 G options`).
pub(super) fn rate(x: f64, unit: &str) -> String {
    let (v, p) = if x >= 1e12 {
        (x / 1e12, "T")
    } else if x >= 1e9 {
        (x / 1e9, "G")
    } else if x >= 1e6 {
        (x / 1e6, "M")
    } else if x >= 1e3 {
        (x / 1e3, "k")
    } else {
        (x, "")
    };
    if unit.starts_with("B/") || unit.starts_with("FLOP/s") {
        format!("{v:.2} {p}{unit}")
    } else {
        format!("{v:.2} {p} {unit}")
    }
}
