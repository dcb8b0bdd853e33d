//! `explain`'s words and numbers: readable times and sizes, the profile's and a link's
//! provenance tags, crossover sentences and the phase table, shared by the printout and the
//! plot's captions (`plot.rs`).

use gmprt::offload::model::{
    Breakdown, Crossover, DeviceProfile, LinkSource, NetworkLink, ProfileSource, Residency,
};

/// The tag every line quoting the profile carries.
pub fn tag(p: &DeviceProfile) -> String {
    match &p.source {
        ProfileSource::Published { .. } => "published figures, not measured".to_string(),
        ProfileSource::Measured => format!("measured on {}", p.device),
    }
}

/// Seconds with a readable unit.
pub fn secs(s: f64) -> String {
    if s == 0.0 {
        "0".to_string()
    } else if s < 1e-6 {
        format!("{:.1} ns", s * 1e9)
    } else if s < 1e-3 {
        format!("{:.1} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

/// A size such as `516`, `32768` or `1.5e6`.
pub fn size(n: f64) -> String {
    if n < 10.0 {
        format!("{}", (n * 10.0).round() / 10.0)
    } else if n < 1e5 {
        format!("{n:.0}")
    } else {
        let e = n.log10().floor();
        let m = n / 10f64.powf(e);
        if (m - m.round()).abs() < 1e-9 {
            format!("{}e{}", m.round(), e)
        } else {
            format!("{m:.2}e{e}")
        }
    }
}

/// `text` cut at spaces into lines of at most `width` characters.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let last = lines.last_mut().expect("never empty");
        if !last.is_empty() && last.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

/// A link's label tag: measured where, or published.
pub fn link_tag(l: &NetworkLink) -> &'static str {
    match l.source {
        LinkSource::Measured { .. } => "measured on the 2-core VM",
        LinkSource::Published { .. } => "published figures, not measured",
    }
}

pub fn residency_name(r: Residency) -> &'static str {
    match r {
        Residency::Host => "host-resident (GPU pays H2D + D2H)",
        Residency::Device => "device-resident (no transfers)",
        Residency::Pageable => "in pageable host memory (GPU pays pageable H2D + D2H)",
    }
}

pub fn crossover_words(c: &Crossover, unit: &str) -> String {
    match c {
        Crossover::At { n } => format!("the GPU wins from n* = {} {unit} on", size(*n)),
        Crossover::Always => "the GPU wins at every size, even n = 1".to_string(),
        Crossover::Never { reason, wins_below: Some(_) } => {
            format!("no crossover, the GPU loses at large n: {reason}")
        }
        Crossover::Never { reason, .. } => format!("the GPU never wins: {reason}"),
    }
}

pub fn print_breakdown(b: &Breakdown, t: &str) {
    println!("  {:<22} {:>12}", "phase", "time");
    let rows = [
        ("queue wait", b.queue_wait),
        ("launch", b.launch),
        ("H2D", b.h2d),
        ("kernel", b.kernel_time),
        ("D2H", b.d2h),
        ("GPU total", b.gpu_total),
    ];
    for (name, s) in rows {
        println!("  {name:<22} {:>12}   [{t}]", secs(s));
    }
    for (procs, s) in &b.cpu {
        println!("  {:<22} {:>12}   [{t}]", format!("CPU on {procs} P"), secs(*s));
    }
}
