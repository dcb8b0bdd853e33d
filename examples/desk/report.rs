//! The desk's report: what one run measured, what a sweep found, and how both print.

use super::book::{Decision, Placement};
use super::feed::Accounting;
use super::gateway::OrderStats;
use super::{BURST_LEN, NAME};
use hdrhistogram::Histogram;

/// Percentiles of a latency, µs.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Latency {
    pub count: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
}

impl Latency {
    pub fn of(h: &Histogram<u64>) -> Latency {
        Latency {
            count: h.len(),
            p50_us: h.value_at_quantile(0.5),
            p99_us: h.value_at_quantile(0.99),
            p999_us: h.value_at_quantile(0.999),
            max_us: h.max(),
        }
    }
}

/// The final risk against the f64 reference.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Check {
    pub worst_ratio: f64,
    pub worst_at: String,
}

/// The Monte Carlo share against Black-Scholes.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PathsCheck {
    /// Largest |value − Black-Scholes| / standard error over the underlyings.
    pub worst_z: f64,
    /// Where.
    pub worst_at: String,
}

/// One run's report.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Report {
    pub placement: Placement,
    pub device: String,
    pub profile: String,
    pub procs: usize,
    pub underlyings: usize,
    pub contracts: usize,
    pub rate: f64,
    pub wall_s: f64,
    pub tick_to_risk: Latency,
    pub tick_to_ack: Latency,
    pub risk_updates: u64,
    pub contracts_repriced: u64,
    pub full_book_revaluations_per_s: f64,
    pub feed: Accounting,
    pub feed_total: u64,
    pub orders: OrderStats,
    /// Device time (copies and kernels) over the run's wall time, of the risk engine's slot
    /// and of the exotics task's; the two are separate streams that may overlap, so they are
    /// reported apart and their sum may pass 1.
    pub device_busy_fraction: f64,
    pub device_busy_risk: f64,
    pub device_busy_exotics: f64,
    /// `--resident`: the book stayed on the device; bytes uploaded after the first full upload
    /// (the moved spots and the list of moved underlyings).
    pub resident: bool,
    pub resident_upload_bytes: u64,
    pub batches_cpu: u64,
    pub batches_gpu: u64,
    pub auto_decisions: u64,
    pub decisions: Vec<Decision>,
    pub gamma_breaches: u64,
    /// Portfolio sums: price, delta, gamma, vega, theta, rho.
    pub totals: [f64; 6],
    pub check: Check,
    /// Path-dependent contracts in the book, and paths per contract.
    pub mc_contracts: u64,
    pub mc_paths: u64,
    /// Their batches on each side.
    pub mc_batches_cpu: u64,
    pub mc_batches_gpu: u64,
    /// Tick → the path-dependent share valued (its own task, off the fast path).
    pub tick_to_exotics: Latency,
    /// `auto`'s first decisions for the Monte Carlo batches.
    pub mc_decisions: Vec<Decision>,
    /// Their position-weighted Monte Carlo value at the end.
    pub mc_value: f64,
    pub paths_check: PathsCheck,
}

pub fn print_report(r: &Report) {
    println!(
        "{NAME}: {} underlyings, {} contracts, placement {:?}, {} procs; device {}",
        r.underlyings, r.contracts, r.placement, r.procs, r.device
    );
    println!("  cost model profile: {}", r.profile);
    let f = &r.feed;
    println!(
        "  feed: {} sequence numbers at {:.0}/s in {:.2} s: {} processed, {} conflated, {} rejected, {} gaps; {} disconnects, {} framing errors",
        r.feed_total, r.rate, r.wall_s, f.processed, f.conflated, f.rejected, f.gaps, f.disconnects, f.framing_errors
    );
    for m in &f.messages {
        println!("    {m}");
    }
    let l = |x: &Latency| {
        format!(
            "p50 {} µs, p99 {} µs, p99.9 {} µs, max {} µs (n={})",
            x.p50_us, x.p99_us, x.p999_us, x.max_us, x.count
        )
    };
    println!("  tick -> risk updated: {}", l(&r.tick_to_risk));
    println!("  tick -> order acked:  {}", l(&r.tick_to_ack));
    println!(
        "  risk updates {}, contracts repriced {} ({:.1} full books); full-book revaluations {:.1}/s",
        r.risk_updates,
        r.contracts_repriced,
        r.contracts_repriced as f64 / r.contracts as f64,
        r.full_book_revaluations_per_s
    );
    println!(
        "  placement: {} batches on the CPU, {} on the device; device busy {:.1}% of the run (risk {:.1}%, exotics {:.1}%: two streams)",
        r.batches_cpu,
        r.batches_gpu,
        100.0 * r.device_busy_fraction,
        100.0 * r.device_busy_risk,
        100.0 * r.device_busy_exotics
    );
    if r.resident {
        println!(
            "  resident book: {} bytes of spots and lists uploaded after the first full upload, {:.0} per device batch",
            r.resident_upload_bytes,
            r.resident_upload_bytes as f64 / r.batches_gpu.max(1) as f64
        );
    }
    if r.placement == Placement::Auto {
        println!(
            "  auto: {} decisions; the first ones (predicted CPU vs device end to end):",
            r.auto_decisions
        );
        for d in r.decisions.iter().take(6) {
            println!(
                "    {:>8} contracts -> {:?}  (cpu {:.1} µs, device {:.1} µs)",
                d.contracts, d.side, d.cpu_us, d.gpu_us
            );
        }
    }
    let o = &r.orders;
    println!(
        "  hedges: {} decided, {} netted, {} acked, {} resent, {} gateway refusals, {} pending at the end{}",
        o.decided,
        o.netted,
        o.acked,
        o.resent,
        o.refused,
        o.pending_at_end,
        o.last_error.as_ref().map(|e| format!(" (last error: {e})")).unwrap_or_default()
    );
    let t = &r.totals;
    println!(
        "  portfolio: value {:.0}, delta {:.0}, gamma {:.1}, vega {:.0}; gamma breaches {}",
        t[0], t[1], t[2], t[3], r.gamma_breaches
    );
    println!("  tick -> exotics valued: {}", l(&r.tick_to_exotics));
    if let Some(d) = r.mc_decisions.iter().find(|d| d.contracts > 0) {
        println!(
            "  auto, Monte Carlo: {} contracts -> {:?}  (cpu {:.1} µs, device {:.1} µs)",
            d.contracts, d.side, d.cpu_us, d.gpu_us
        );
    }
    println!(
        "  Monte Carlo share: {} contracts x {} paths, {} batches on the CPU and {} on the device; value {:.0}, worst |z| vs Black-Scholes {:.2} ({}) {}",
        r.mc_contracts,
        r.mc_paths,
        r.mc_batches_cpu,
        r.mc_batches_gpu,
        r.mc_value,
        r.paths_check.worst_z,
        r.paths_check.worst_at,
        if r.paths_check.worst_z <= 5.0 { "ok" } else { "FAILED" }
    );
    println!(
        "  check: final risk vs f64 reference, worst |error|/tolerance {:.3} ({}) {}",
        r.check.worst_ratio,
        r.check.worst_at,
        if r.check.worst_ratio <= 1.0 { "ok" } else { "FAILED" }
    );
}

/// One step of the sweep.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Step {
    pub placement: Placement,
    pub rate: f64,
    pub p99_us: u64,
    pub conflated_share: f64,
    pub sustained: bool,
}

/// The sweep's result: every step, the highest sustained rate per placement (0: not even
/// the starting rate), and the two checks.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Sweep {
    pub budget_us: usize,
    pub start_rate: f64,
    pub steps: Vec<Step>,
    pub best: Vec<(Placement, f64)>,
    /// `auto`'s highest sustained rate over the better of `cpu`'s and `gpu`'s (target ≥ 0.9).
    pub auto_vs_best: f64,
    /// At half `auto`'s sustained rate: p99 tick → risk, µs.
    pub half_rate_p99_us: u64,
    /// The model's predicted time to price one tick's underlying (C/U contracts, the faster
    /// side), µs; the target is p99 ≤ 2× this.
    pub predicted_tick_us: f64,
    /// The same for a burst's batch (`burst_len` underlyings at once), µs: with 5% of ticks in
    /// bursts, the p99 tick is a burst's.
    pub predicted_burst_us: f64,
}

impl Sweep {
    /// The lowest rate any step ran at (the start, or a halving below it).
    pub fn lowest_rate(&self) -> f64 {
        self.steps.iter().map(|s| s.rate).fold(self.start_rate, f64::min)
    }
}

pub fn print_sweep(s: &Sweep, book_shape: (usize, usize), json: bool) {
    if json {
        println!("{}", serde_json::to_string_pretty(s).unwrap_or_else(|e| super::common::fail(NAME, e)));
        return;
    }
    let (u, c) = book_shape;
    println!(
        "{NAME} --sweep: {u} underlyings, {c} contracts; highest rate with p99 tick -> risk <= {} µs:",
        s.budget_us
    );
    for (p, r) in &s.best {
        if *r > 0.0 {
            println!("  {p:?}: {r:.0} ticks/s");
        } else {
            println!("  {p:?}: below the lowest rate tried ({:.0} ticks/s)", s.lowest_rate());
        }
    }
    if s.auto_vs_best.is_nan() {
        println!(
            "  auto / the better of cpu and gpu: not defined: neither held p99 <= {} µs at {:.0} ticks/s or above (target >= 0.9)",
            s.budget_us,
            s.lowest_rate()
        );
    } else {
        println!("  auto / the better of cpu and gpu: {:.2} (target >= 0.9)", s.auto_vs_best);
    }
    println!(
        "  at half auto's rate: p99 tick -> risk {} µs against 2 x the model's {:.1} µs per tick's pricing = {:.1} µs ({})",
        s.half_rate_p99_us,
        s.predicted_tick_us,
        2.0 * s.predicted_tick_us,
        if (s.half_rate_p99_us as f64) <= 2.0 * s.predicted_tick_us { "met" } else { "missed" }
    );
    println!(
        "  (a burst of {BURST_LEN} ticks is one batch: the model's time for it is {:.1} µs, and 5% of ticks arrive in bursts)",
        s.predicted_burst_us
    );
}
