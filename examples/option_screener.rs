//! Greeks for a million option contracts, five ways — the story of why green tasks never move
//! to a GPU by themselves, and how an explicit Batcher gets them there anyway:
//!
//! 1. one green task per contract on the CPU;
//! 2. data-parallel chunks over the Ps (`parallel_for`);
//! 3. one offload launch per task — the anti-pattern (a Batcher with `max_batch = 1`; run on a
//!    capped number of contracts and extrapolated, and labelled so);
//! 4. a million green tasks submitting through the Batcher (coalesced launches);
//! 5. one bulk launch: (a) with the data already on the device — the floor; (b) with its
//!    transfers.
//!
//! ```text
//! cargo run --release --example option_screener -- [--n 1e6] [--seed 7] [--procs P]
//!     [--max-batch 65536] [--max-delay-us 500] [--per-launch-cap 20000]
//! ```
//! All ways must agree with way 2 (the CPU) within a tolerance per contract and per output,
//! scaled by the magnitudes of the terms that output sums (`black_scholes::tolerance`, shared
//! with the kernel and CUDA tests): a relative rule cannot work, since e.g. theta of a deep
//! in-the-money put cancels two terms of ~15 to near 0, and a few ulp of 15 is a correct
//! result's difference. The rule and the worst error/tolerance per output are printed; the
//! program exits 1 if any ratio exceeds 1.
use gmprt::kernels::black_scholes::tolerance::{
    agreement_tolerance, MathAccuracy, CPU_MATH, CUDA_MATH, OUTPUT_NAMES, TOLERANCE_RULE,
};
use gmprt::kernels::black_scholes::{
    price_greeks, stage_words, synthetic_chain, BsBatch, BsResults, Contract, Greeks, IN_WORDS, OUT_WORDS,
};
use gmprt::offload::jobs::BlackScholes;
use gmprt::offload::model::{CostModel, DeviceProfile};
use gmprt::offload::timeline::Report;
use gmprt::offload::{Batcher, BatcherConfig, Device, DeviceKind, PhaseTimes};
use gmprt::runtime::Runtime;
use std::time::{Duration, Instant};

#[path = "common/mod.rs"]
mod common;
use clap::Parser;
use common::{check_fits, fail, parse_count, positive, try_filled, try_vec, Cli, Procs, TooBig};

/// Contracts per `parallel_for` chunk: 16k contracts = 768 KiB of in+out columns, about
/// 100 µs of work — cache-friendly and plenty of chunks to balance (61 at 1M).
const CHUNK: usize = 16 * 1024;

const NAME: &str = "option_screener";

/// Greeks for N option contracts five ways: a task per contract, chunks over the Ps, one
/// launch per task, N tasks through the Batcher, one bulk launch.
#[derive(Parser, Debug)]
#[command(name = NAME)]
struct Args {
    /// Contracts, written 1000000, 1_000_000 or 1e6
    #[arg(long, value_name = "N", default_value_t = 1_000_000, value_parser = positive)]
    n: usize,
    /// Seed of the synthetic option chain
    #[arg(long, value_name = "SEED", default_value_t = 7, value_parser = parse_count)]
    seed: usize,
    #[command(flatten)]
    procs: Procs,
    /// The Batcher's largest batch (way 4)
    #[arg(long, value_name = "ITEMS", default_value_t = 1 << 16, value_parser = parse_count)]
    max_batch: usize,
    /// How long the Batcher waits to fill a batch, in µs (way 4)
    #[arg(long, value_name = "US", default_value_t = 500, value_parser = parse_count)]
    max_delay_us: usize,
    /// Contracts way 3 (one launch per task) runs before extrapolating to N
    #[arg(long, value_name = "N", default_value_t = 20_000, value_parser = positive)]
    per_launch_cap: usize,
    /// Print the ways, their agreement and the Batcher's reports as JSON instead of tables
    #[arg(long)]
    json: bool,
    /// The ways to run, e.g. 2,4 (way 2 always runs: it is the reference the others must agree
    /// with); fewer ways make a shorter trace (`gmprt trace option_screener --ways 2,4`)
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "1,2,3,4,5",
        value_parser = clap::value_parser!(u8).range(1..=5)
    )]
    ways: Vec<u8>,
    /// A device profile (JSON, e.g. offload/profiles/host-2core-vm.json) whose cost model
    /// predicts each of way 4's batches: a traced run draws the prediction on a model lane
    /// beside each slot, so a misprediction shows [default: no model]
    #[arg(long, value_name = "PROFILE")]
    model: Option<std::path::PathBuf>,
}

impl Cli for Args {}

/// What every contract holds at the least while the ways run: the contract, its staged input
/// columns, one set of results and the header of the task that prices it (way 1).
const BYTES_PER_CONTRACT: usize =
    std::mem::size_of::<Contract>() + (IN_WORDS + OUT_WORDS) * 4 + common::MIN_TASK_BYTES;

/// Refuses, before anything is allocated, a `--n` whose contracts cannot fit in memory.
fn check_memory(n: usize) -> Result<(), TooBig> {
    let what = "a contract, its input columns, its results and its task's header";
    check_fits(&format!("--n {n}"), n as u128, BYTES_PER_CONTRACT, what)
}

/// One row of the table.
#[derive(serde::Serialize)]
struct Way {
    name: String,
    time: Duration,
    /// Contracts actually run (≤ n when extrapolated).
    ran: usize,
    launches: u64,
    pcie_bytes: u64,
    /// (transfers, kernel) device time, when the way used the device.
    split: Option<(Duration, Duration)>,
    #[serde(skip)]
    results: Option<BsResults>,
    /// Through the Batcher: its `report()`, with each item's submit → result latency split
    /// into queue wait and batch time.
    report: Option<Report>,
}

// In the `gmprt` command, which includes this file as a module, `main_from` is called instead.
#[allow(dead_code)]
fn main() {
    main_from(std::env::args_os().collect());
}

/// Parses `args` (the program's name first) and runs the story: what `main` and the `gmprt`
/// command call. `--help` prints and exits 0; a bad command line prints why and exits 2.
pub fn main_from(args: Vec<std::ffi::OsString>) {
    let a: Args = common::parse_from(args);
    check_memory(a.n).unwrap_or_else(|e| fail(NAME, e));
    let device = Device::detect().unwrap_or_else(|e| fail("option_screener: GMPRT_DEVICE", e));
    // First-use costs (CUDA modules, the Host pool's threads) before anything is timed.
    device.warm_up().unwrap_or_else(|e| fail("option_screener: device warm-up", e));
    let rt = a.procs.gmprt().unwrap_or_else(|e| fail(NAME, e));
    let procs = rt.procs();
    let (n, seed) = (a.n, a.seed as u64);
    let asked = format!("--n {n}");
    if !a.json {
        println!("option_screener: {n} contracts (seed {seed}), {procs} procs; device {}", device.describe());
    }
    let chain: &'static [Contract] = Vec::leak(synthetic_chain(n, seed));
    let batch: &'static BsBatch = Box::leak(Box::new(BsBatch::from_contracts(chain)));
    let mut ways = Vec::new();

    let want = |way: u8| way == 2 || a.ways.contains(&way);

    // 1. One green task per contract.
    if want(1) {
        let t = Instant::now();
        let mut hs = try_vec(n, &asked, "a join handle").unwrap_or_else(|e| fail(NAME, e));
        let mut out = try_vec(n, &asked, "its Greeks").unwrap_or_else(|e| fail(NAME, e));
        // The root is itself a task, so every spawn comes from a P (runnext / local queue), as in
        // a Go program's main goroutine.
        let greeks: Vec<Greeks> = rt
            .block_on(rt.spawn(async move {
                for i in 0..n {
                    hs.push(gmprt::spawn(async move { price_at(batch, i) }));
                    // Spawn in slices of 1024 so the root's poll stays short (see million_tasks).
                    if i % 1024 == 1023 {
                        gmprt::yield_now().await;
                    }
                }
                for h in hs {
                    out.push(h.await.expect("pricing task failed"));
                }
                out
            }))
            .expect("root task");
        ways.push(Way {
            name: "1. one green task per contract (CPU)".into(),
            time: t.elapsed(),
            ran: n,
            launches: 0,
            pcie_bytes: 0,
            split: None,
            results: Some(collect(&greeks)),
            report: None,
        });
    }

    // 2. Data-parallel chunks over the Ps.
    let mut res = BsResults::zeroed(n);
    // Map the output pages before timing (the device ways' buffers are allocated up front too),
    // and make an unwritten output show up as NaN in the agreement check.
    for col in [&mut res.price, &mut res.delta, &mut res.gamma, &mut res.vega, &mut res.theta, &mut res.rho] {
        col.fill(f32::NAN);
    }
    let t = Instant::now();
    {
        let out = Columns::new(&mut res);
        let inp = batch.as_in();
        rt.handle().parallel_for(n, CHUNK, |r| {
            let sub = gmprt::kernels::black_scholes::BsIn {
                spot: &inp.spot[r.clone()],
                strike: &inp.strike[r.clone()],
                t: &inp.t[r.clone()],
                rate: &inp.rate[r.clone()],
                vol: &inp.vol[r.clone()],
                kind: &inp.kind[r.clone()],
            };
            // SAFETY: chunks are disjoint ranges of the result columns, which outlive the call.
            let mut o = unsafe { out.range(r) };
            price_greeks(&sub, &mut o).expect("lengths match by construction");
        });
    }
    ways.push(Way {
        name: format!("2. parallel_for, {CHUNK}-contract chunks (CPU)"),
        time: t.elapsed(),
        ran: n,
        launches: 0,
        pcie_bytes: 0,
        split: None,
        results: Some(res),
        report: None,
    });

    // 3. One launch per task (max_batch = 1), capped and extrapolated.
    if want(3) {
        let cap = a.per_launch_cap.min(n);
        let cfg = BatcherConfig { max_batch: 1, max_delay: Duration::ZERO, ..BatcherConfig::default() };
        ways.push(through_batcher(
            &rt,
            &device,
            &chain[..cap],
            cfg,
            if cap < n {
                format!("3. one launch per task (ran {cap}, ×{:.0} extrapolated)", n as f64 / cap as f64)
            } else {
                "3. one launch per task".to_string()
            },
        ));
    }

    // 4. A million tasks through the Batcher.
    if want(4) {
        let max_delay = Duration::from_micros(a.max_delay_us as u64);
        let model = a.model.as_ref().map(|path| match DeviceProfile::load(path) {
            Ok(p) => std::sync::Arc::new(CostModel::new(p)),
            Err(e) => fail("option_screener: --model", e),
        });
        let cfg = BatcherConfig { max_batch: a.max_batch, max_delay, model, ..BatcherConfig::default() };
        ways.push(through_batcher(
            &rt,
            &device,
            chain,
            cfg,
            format!("4. {n} tasks → Batcher (max_batch {}, {:?})", a.max_batch, max_delay),
        ));
    }

    // 5. One bulk launch: resident (the floor), and with its transfers.
    if want(5) {
        let mut input =
            try_filled(n * IN_WORDS, 0u32, &asked, "an input word").unwrap_or_else(|e| fail(NAME, e));
        stage_words(chain, &mut input);
        for (resident, name) in [
            (true, "5a. one bulk launch, data resident (floor)"),
            (false, "5b. one bulk launch incl. H2D + D2H"),
        ] {
            match device.run_bulk(&BlackScholes, n, &input, n * IN_WORDS, n * OUT_WORDS, resident) {
                Ok((out, ph)) => ways.push(Way {
                    name: name.into(),
                    time: if resident { ph.kernel } else { total(&ph) },
                    ran: n,
                    launches: 1,
                    pcie_bytes: if resident { 0 } else { (n * (IN_WORDS + OUT_WORDS) * 4) as u64 },
                    split: Some((ph.h2d + ph.d2h, ph.kernel)),
                    results: Some(from_words(n, &out)),
                    report: None,
                }),
                Err(e) => eprintln!("{name}: failed: {e}"),
            }
        }
    }

    // The device ways ran the device's kernel build: CUDA's math functions on a GPU, the
    // CPU's on the Host device.
    let device_math = if device.kind() == DeviceKind::Cuda { CUDA_MATH } else { CPU_MATH };
    let worst = worst_ratios(&ways, chain, &device_math);
    if a.json {
        let all = worst.iter().flatten().flatten().fold(0f64, |m, &x| m.max(x));
        let agree = !(all.is_nan() || all > 1.0);
        let v = serde_json::json!({
            "n": n, "seed": seed, "procs": procs, "device": device.describe(),
            "ways": ways, "worst_error_over_tolerance": worst, "outputs": OUTPUT_NAMES, "agree": agree,
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_else(|e| fail(NAME, e)));
        if !agree {
            eprintln!("DISAGREEMENT: worst error/tolerance {all:.3} > 1");
            std::process::exit(1);
        }
        return;
    }
    print_table(n, &ways, &device);
    println!("\nagreement with way 2 (tolerance: {TOLERANCE_RULE})");
    println!(
        "device ways are judged with the {} math functions' accuracy ({device_math:?}); 1.000 = at the tolerance",
        if device.kind() == DeviceKind::Cuda { "CUDA" } else { "CPU" }
    );
    println!(
        "{:<58} {}",
        "way: worst error / tolerance per output",
        OUTPUT_NAMES.map(|o| format!("{o:>9}")).join(" ")
    );
    let mut all = 0f64;
    for (w, r) in ways.iter().zip(&worst) {
        if let Some(r) = r {
            println!("{:<58} {}", w.name, r.map(|x| format!("{x:>9.3}")).join(" "));
            all = r.iter().fold(all, |m, &x| m.max(x));
        }
    }
    if all.is_nan() || all > 1.0 {
        eprintln!("DISAGREEMENT: worst error/tolerance {all:.3} > 1");
        std::process::exit(1);
    }
    println!("all ways agree: worst error/tolerance {all:.3} (<= 1)");
}

/// Contract `i` alone, through the same ISA dispatch as the other ways (so results agree bit
/// for bit); no allocation.
fn price_at(b: &BsBatch, i: usize) -> Greeks {
    let r = i..i + 1;
    let inp = gmprt::kernels::black_scholes::BsIn {
        spot: &b.spot[r.clone()],
        strike: &b.strike[r.clone()],
        t: &b.t[r.clone()],
        rate: &b.rate[r.clone()],
        vol: &b.vol[r.clone()],
        kind: &b.kind[r],
    };
    let mut o = [[0f32; 1]; 6];
    let [p, d, g, v, t, rho] = &mut o;
    let mut out =
        gmprt::kernels::black_scholes::BsOut { price: p, delta: d, gamma: g, vega: v, theta: t, rho };
    price_greeks(&inp, &mut out).expect("one contract");
    Greeks { price: o[0][0], delta: o[1][0], gamma: o[2][0], vega: o[3][0], theta: o[4][0], rho: o[5][0] }
}

fn through_batcher(
    rt: &Runtime,
    device: &Device,
    chain: &'static [Contract],
    cfg: BatcherConfig,
    name: String,
) -> Way {
    // The Batcher belongs to this runtime: its wake-ups land on these Ps, and when the runtime
    // traces (GMPRT_TRACE, `gmprt trace`), the batches are drawn in the same trace.
    let cfg = BatcherConfig { runtime: Some(rt.handle()), ..cfg };
    let batcher = match Batcher::new(BlackScholes, device, cfg) {
        Ok(b) => b,
        Err(e) => fail("option_screener: Batcher", e),
    };
    let t = Instant::now();
    let b2 = batcher.clone();
    let asked = format!("--n {}", chain.len());
    let mut hs = try_vec(chain.len(), &asked, "a join handle").unwrap_or_else(|e| fail(NAME, e));
    let mut out = try_vec(chain.len(), &asked, "its Greeks").unwrap_or_else(|e| fail(NAME, e));
    let greeks: Vec<Greeks> = rt
        .block_on(rt.spawn(async move {
            for (i, c) in chain.iter().enumerate() {
                let (b, c) = (b2.clone(), *c);
                hs.push(gmprt::spawn(async move { b.submit(c).await }));
                // Spawn in slices of 1024, as in way 1: spawning is not an await, so a root
                // that spawns a million tasks in one poll holds its P for ~100 ms.
                if i % 1024 == 1023 {
                    gmprt::yield_now().await;
                }
            }
            for h in hs {
                match h.await.expect("submitting task failed") {
                    Ok(g) => out.push(g),
                    Err(e) => fail("option_screener: offload", e),
                }
            }
            out
        }))
        .expect("root task");
    let time = t.elapsed();
    batcher.shutdown();
    let s = batcher.stats();
    let n_full = chain.len();
    Way {
        name,
        time,
        ran: n_full,
        launches: s.launches,
        pcie_bytes: s.bytes_h2d + s.bytes_d2h,
        split: Some((s.h2d + s.d2h, s.kernel)),
        results: Some(collect(&greeks)),
        report: Some(batcher.report()),
    }
}

fn total(p: &PhaseTimes) -> Duration {
    p.h2d + p.kernel + p.d2h
}

fn collect(g: &[Greeks]) -> BsResults {
    let mut r = BsResults::zeroed(g.len());
    for (i, x) in g.iter().enumerate() {
        r.price[i] = x.price;
        r.delta[i] = x.delta;
        r.gamma[i] = x.gamma;
        r.vega[i] = x.vega;
        r.theta[i] = x.theta;
        r.rho[i] = x.rho;
    }
    r
}

fn from_words(n: usize, w: &[u32]) -> BsResults {
    let mut g = try_vec(n, &format!("--n {n}"), "its Greeks").unwrap_or_else(|e| fail(NAME, e));
    g.extend((0..n).map(|i| gmprt::kernels::black_scholes::gather_words(n, w, i)));
    collect(&g)
}

/// Per way (`None` for a way without results), per output, the worst |way − way 2| /
/// tolerance over the contracts it ran, with the tolerance of `black_scholes::tolerance` for
/// way 2's CPU kernel against a CPU way's or (`device_math`) a device way's kernel. A NaN in
/// either result makes that output's ratio NaN.
fn worst_ratios(ways: &[Way], chain: &[Contract], device_math: &MathAccuracy) -> Vec<Option<[f64; 6]>> {
    let base = ways
        .iter()
        .find(|w| w.name.starts_with("2."))
        .and_then(|w| w.results.as_ref())
        .expect("way 2 always runs and has results");
    let mut worst: Vec<Option<[f64; 6]>> =
        ways.iter().map(|w| w.results.as_ref().map(|_| [0f64; 6])).collect();
    for (i, c) in chain.iter().enumerate() {
        let b = base.get(i).to_array64();
        let on_cpu = agreement_tolerance(c, &CPU_MATH, &CPU_MATH).to_array();
        let on_device = agreement_tolerance(c, &CPU_MATH, device_math).to_array();
        for (w, m) in ways.iter().zip(&mut worst) {
            let (Some(r), Some(m)) = (&w.results, m) else { continue };
            if i >= w.ran {
                continue;
            }
            let tol = if w.split.is_some() { &on_device } else { &on_cpu };
            let a = r.get(i).to_array64();
            for j in 0..6 {
                let ratio = (a[j] - b[j]).abs() / tol[j];
                // `max` would drop a NaN: keep it, so an unwritten output fails the check.
                m[j] = if ratio.is_nan() || m[j].is_nan() { f64::NAN } else { m[j].max(ratio) };
            }
        }
    }
    worst
}

fn print_table(n: usize, ways: &[Way], device: &Device) {
    println!("\n{n} contracts; device {}", device.describe());
    println!(
        "{:<58} {:>12} {:>13} {:>10} {:>11} {:>18}",
        "way", "time", "options/s", "launches", "PCIe bytes", "transfers/kernel"
    );
    for w in ways {
        let scale = n as f64 / w.ran as f64;
        let secs = w.time.as_secs_f64() * scale;
        let split = w.split.map_or("— (CPU)".to_string(), |(x, k)| {
            let tot = (x + k).as_secs_f64().max(1e-12);
            format!("{:.0}% / {:.0}%", 100.0 * x.as_secs_f64() / tot, 100.0 * k.as_secs_f64() / tot)
        });
        println!(
            "{:<58} {:>10.2}ms {:>13.3e} {:>10} {:>11} {:>18}",
            w.name,
            secs * 1e3,
            n as f64 / secs,
            (w.launches as f64 * scale).round() as u64,
            (w.pcie_bytes as f64 * scale).round() as u64,
            split
        );
    }
    for w in ways {
        if let Some(r) = &w.report {
            println!("{} per item (submit → result, as run):", w.name);
            println!(
                "    latency {}\n    queue wait {}\n    batch time {}",
                r.latency, r.queue_wait, r.batch_time
            );
        }
    }
}

/// Raw parts of the six result columns, so disjoint chunks can be written in parallel.
struct Columns([(usize, usize); 6]);

impl Columns {
    fn new(r: &mut BsResults) -> Columns {
        let p = |v: &mut Vec<f32>| (v.as_mut_ptr() as usize, v.len());
        Columns([
            p(&mut r.price),
            p(&mut r.delta),
            p(&mut r.gamma),
            p(&mut r.vega),
            p(&mut r.theta),
            p(&mut r.rho),
        ])
    }

    /// # Safety
    /// `r` must be in bounds and no other live view may overlap it.
    unsafe fn range(&self, r: std::ops::Range<usize>) -> gmprt::kernels::black_scholes::BsOut<'_> {
        let s = |i: usize| {
            let (p, len) = self.0[i];
            assert!(r.end <= len);
            // SAFETY: in bounds (checked) and disjoint (the caller's contract).
            unsafe { std::slice::from_raw_parts_mut((p as *mut f32).add(r.start), r.len()) }
        };
        gmprt::kernels::black_scholes::BsOut {
            price: s(0),
            delta: s(1),
            gamma: s(2),
            vega: s(3),
            theta: s(4),
            rho: s(5),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::try_parse_from;

    #[test]
    fn cli() {
        common::testing::cli_contract::<Args>(NAME);
        let a: Args = try_parse_from([NAME]).unwrap();
        assert_eq!(
            (a.n, a.seed, a.max_batch, a.max_delay_us, a.per_launch_cap),
            (1_000_000, 7, 65536, 500, 20_000)
        );
        let a: Args = try_parse_from([NAME, "--n", "1_000", "--max-delay-us", "1e3"]).unwrap();
        assert_eq!((a.n, a.max_delay_us, a.procs.n), (1000, 1000, None));
    }

    #[test]
    fn contracts_that_cannot_fit_are_a_clear_error() {
        let a: Args = try_parse_from([NAME, "--n", "1e19"]).unwrap();
        common::testing::assert_too_big(check_memory(a.n), "--n 10000000000000000000");
        assert!(check_memory(1000).is_ok());
    }
}
