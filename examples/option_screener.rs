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
//! cargo run --release --example option_screener -- [--n 1e6] [--seed 7] [--procs N]
//!     [--max-batch 65536] [--max-delay-us 500] [--per-launch-cap 20000]
//! ```
//! All ways must agree within 1e-5 (relative to max(|value|, 0.01)); the program exits 1 if not.
use gmprt::kernels::black_scholes::{
    price_greeks, stage_words, synthetic_chain, BsBatch, BsResults, Contract, Greeks, IN_WORDS, OUT_WORDS,
};
use gmprt::offload::jobs::BlackScholes;
use gmprt::offload::{Batcher, BatcherConfig, Device, PhaseTimes};
use gmprt::runtime::Runtime;
use std::time::{Duration, Instant};

mod common;
use common::{fail, parse_count};

/// Contracts per `parallel_for` chunk: 16k contracts = 768 KiB of in+out columns, about
/// 100 µs of work — cache-friendly and plenty of chunks to balance (61 at 1M).
const CHUNK: usize = 16 * 1024;

struct Args {
    n: usize,
    seed: u64,
    procs: Option<usize>,
    max_batch: usize,
    max_delay: Duration,
    per_launch_cap: usize,
}

fn args() -> Args {
    let mut a = Args {
        n: 1_000_000,
        seed: 7,
        procs: None,
        max_batch: 1 << 16,
        max_delay: Duration::from_micros(500),
        per_launch_cap: 20_000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().unwrap_or_else(|| fail("option_screener", format!("{flag} needs a value")));
        let v =
            parse_count(&v).unwrap_or_else(|| fail("option_screener", format!("{flag}: not a count: {v}")));
        match flag.as_str() {
            "--n" => a.n = v,
            "--seed" => a.seed = v as u64,
            "--procs" => a.procs = Some(v),
            "--max-batch" => a.max_batch = v,
            "--max-delay-us" => a.max_delay = Duration::from_micros(v as u64),
            "--per-launch-cap" => a.per_launch_cap = v,
            _ => fail(
                "option_screener",
                format!("unknown flag {flag} (try --n, --seed, --procs, --max-batch, --max-delay-us, --per-launch-cap)"),
            ),
        }
    }
    if a.n == 0 || a.per_launch_cap == 0 {
        fail("option_screener", "--n and --per-launch-cap must be at least 1".into());
    }
    a
}

/// One row of the table.
struct Way {
    name: String,
    time: Duration,
    /// Contracts actually run (≤ n when extrapolated).
    ran: usize,
    launches: u64,
    pcie_bytes: u64,
    /// (transfers, kernel) device time, when the way used the device.
    split: Option<(Duration, Duration)>,
    results: Option<BsResults>,
}

fn main() {
    let a = args();
    let device = Device::detect().unwrap_or_else(|e| fail("option_screener: GMPRT_DEVICE", e.to_string()));
    let mut b = Runtime::builder();
    if let Some(p) = a.procs {
        b = b.procs(p);
    }
    let rt = b.build().unwrap_or_else(|e| fail("option_screener", e.to_string()));
    let procs = rt.procs();
    let n = a.n;
    println!("option_screener: {n} contracts (seed {}), {procs} procs; device {}", a.seed, device.describe());
    let chain: &'static [Contract] = Vec::leak(synthetic_chain(n, a.seed));
    let batch: &'static BsBatch = Box::leak(Box::new(BsBatch::from_contracts(chain)));
    let mut ways = Vec::new();

    // 1. One green task per contract.
    let t = Instant::now();
    // The root is itself a task, so every spawn comes from a P (runnext / local queue), as in
    // a Go program's main goroutine.
    let greeks: Vec<Greeks> = rt
        .block_on(rt.spawn(async move {
            let mut hs = Vec::with_capacity(n);
            for i in 0..n {
                hs.push(gmprt::spawn(async move { price_at(batch, i) }));
                // Spawn in slices of 1024 so the root's poll stays short (see million_tasks).
                if i % 1024 == 1023 {
                    gmprt::yield_now().await;
                }
            }
            let mut out = Vec::with_capacity(n);
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
    });

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
    });

    // 3. One launch per task (max_batch = 1), capped and extrapolated.
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

    // 4. A million tasks through the Batcher.
    let cfg = BatcherConfig { max_batch: a.max_batch, max_delay: a.max_delay, ..BatcherConfig::default() };
    ways.push(through_batcher(
        &rt,
        &device,
        chain,
        cfg,
        format!("4. {n} tasks → Batcher (max_batch {}, {:?})", a.max_batch, a.max_delay),
    ));

    // 5. One bulk launch: resident (the floor), and with its transfers.
    let mut input = vec![0u32; n * IN_WORDS];
    stage_words(chain, &mut input);
    for (resident, name) in
        [(true, "5a. one bulk launch, data resident (floor)"), (false, "5b. one bulk launch incl. H2D + D2H")]
    {
        match device.run_bulk(&BlackScholes, n, &input, n * IN_WORDS, n * OUT_WORDS, resident) {
            Ok((out, ph)) => ways.push(Way {
                name: name.into(),
                time: if resident { ph.kernel } else { total(&ph) },
                ran: n,
                launches: 1,
                pcie_bytes: if resident { 0 } else { (n * (IN_WORDS + OUT_WORDS) * 4) as u64 },
                split: Some((ph.h2d + ph.d2h, ph.kernel)),
                results: Some(from_words(n, &out)),
            }),
            Err(e) => println!("{name}: failed: {e}"),
        }
    }

    print_table(n, &ways, &device);
    let base = ways[1].results.as_ref().unwrap();
    let mut worst = 0f64;
    for w in &ways {
        if let Some(r) = &w.results {
            let e = max_err(r, base, w.ran);
            println!("agreement {:<58} max err {e:.2e}", w.name);
            worst = worst.max(e);
        }
    }
    if worst > 1e-5 {
        eprintln!("DISAGREEMENT: max error {worst:.2e} > 1e-5");
        std::process::exit(1);
    }
    println!("all ways agree within 1e-5 (relative to max(|value|, 0.01))");
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
    let batcher = match Batcher::new(BlackScholes, device, cfg) {
        Ok(b) => b,
        Err(e) => fail("option_screener: Batcher", e.to_string()),
    };
    let t = Instant::now();
    let b2 = batcher.clone();
    let greeks: Vec<Greeks> = rt
        .block_on(rt.spawn(async move {
            let hs: Vec<_> = chain
                .iter()
                .map(|c| {
                    let b = b2.clone();
                    gmprt::spawn(async move { b.submit(*c).await })
                })
                .collect();
            let mut out = Vec::with_capacity(chain.len());
            for h in hs {
                match h.await.expect("submitting task failed") {
                    Ok(g) => out.push(g),
                    Err(e) => fail("option_screener: offload", e.to_string()),
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
    let g: Vec<Greeks> = (0..n).map(|i| gmprt::kernels::black_scholes::gather_words(n, w, i)).collect();
    collect(&g)
}

/// Max over the first `ran` contracts and all six outputs of |a − b| / max(|b|, 0.01).
fn max_err(a: &BsResults, b: &BsResults, ran: usize) -> f64 {
    let cols = |r: &BsResults| {
        [r.price.clone(), r.delta.clone(), r.gamma.clone(), r.vega.clone(), r.theta.clone(), r.rho.clone()]
    };
    let (ca, cb) = (cols(a), cols(b));
    let mut m = 0f64;
    for (x, y) in ca.iter().zip(&cb) {
        for i in 0..ran {
            let d = (x[i] as f64 - y[i] as f64).abs() / (y[i].abs() as f64).max(0.01);
            m = m.max(d);
        }
    }
    m
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
