//! Monte Carlo on the CPU's Ps and on the device, with the same Philox stream: π from N
//! samples (the hit counts must be *identical* — the test is exact integer arithmetic), and a
//! European call priced by N paths next to its Black-Scholes value.
//!
//! ```text
//! cargo run --release --example monte_carlo_pi -- [--samples 100e6] [--paths 10e6] [--seed 42] [--procs N]
//! ```
//! `GMPRT_DEVICE=host|cuda` chooses the device (default: CUDA if present, else Host).
use gmprt::kernels::black_scholes::{reference, Contract, OptionKind};
use gmprt::kernels::monte_carlo::{mc_price, option_paths_sum, pi_hits, PiEstimate};
use gmprt::offload::Device;
use gmprt::runtime::Runtime;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

mod common;
use common::{fail, parse_count};

/// Philox blocks per chunk: 2^16 blocks = 131k samples, ≈ 1 ms of work on one core, small
/// enough to balance over the Ps and large enough that one atomic add per chunk is noise.
const CHUNK_BLOCKS: u64 = 1 << 16;

struct Args {
    samples: u64,
    paths: u64,
    seed: u64,
    procs: Option<usize>,
}

fn args() -> Args {
    let mut a = Args { samples: 100_000_000, paths: 10_000_000, seed: 42, procs: None };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| fail("monte_carlo_pi", format!("{flag} needs a value")));
        let count = |v: String| {
            parse_count(&v).unwrap_or_else(|| fail("monte_carlo_pi", format!("{flag}: not a count: {v}")))
        };
        match flag.as_str() {
            "--samples" => a.samples = count(val()) as u64,
            "--paths" => a.paths = count(val()) as u64,
            "--seed" => a.seed = count(val()) as u64,
            "--procs" => a.procs = Some(count(val())),
            _ => fail(
                "monte_carlo_pi",
                format!("unknown flag {flag} (try --samples, --paths, --seed, --procs)"),
            ),
        }
    }
    if a.samples < 2 || a.paths < 4 {
        fail("monte_carlo_pi", "--samples must be ≥ 2 and --paths ≥ 4".into());
    }
    a
}

fn main() {
    let a = args();
    let device = Device::detect().unwrap_or_else(|e| fail("monte_carlo_pi: GMPRT_DEVICE", e.to_string()));
    let mut b = Runtime::builder();
    if let Some(p) = a.procs {
        b = b.procs(p);
    }
    let rt = b.build().unwrap_or_else(|e| fail("monte_carlo_pi", e.to_string()));
    let procs = rt.procs();
    println!("monte_carlo_pi: device {}; CPU side: gmprt, {procs} procs", device.describe());

    // π: 2 samples per Philox block.
    let blocks = a.samples / 2;
    let samples = blocks * 2;
    let t = Instant::now();
    let hits = AtomicU64::new(0);
    let chunks = blocks.div_ceil(CHUNK_BLOCKS) as usize;
    rt.handle().parallel_for(chunks, 1, |r| {
        for c in r {
            let first = c as u64 * CHUNK_BLOCKS;
            hits.fetch_add(pi_hits(a.seed, first, CHUNK_BLOCKS.min(blocks - first)), Relaxed);
        }
    });
    let cpu_t = t.elapsed();
    let cpu = PiEstimate { hits: hits.into_inner(), samples };

    let t = Instant::now();
    let dev = device.pi_hits(a.seed, blocks);
    let dev_wall = t.elapsed();

    println!("\nπ from {samples} samples (seed {})", a.seed);
    println!("{:<34} {:>12} {:>14} {:>14} {:>12}", "where", "time", "samples/s", "estimate", "|π̂ − π|");
    let line = |who: &str, secs: f64, est: &PiEstimate| {
        println!(
            "{who:<34} {:>10.1}ms {:>14.3e} {:>14.9} {:>12.2e}",
            secs * 1e3,
            samples as f64 / secs,
            est.pi(),
            (est.pi() - std::f64::consts::PI).abs()
        )
    };
    line(&format!("cpu: gmprt parallel_for, {procs} procs"), cpu_t.as_secs_f64(), &cpu);
    match &dev {
        Ok((h, phases)) => {
            let est = PiEstimate { hits: *h, samples };
            line(&format!("device: {} (kernel)", device.kind_name()), phases.kernel.as_secs_f64(), &est);
            line(
                &format!("device: {} (wall, incl. launch)", device.kind_name()),
                dev_wall.as_secs_f64(),
                &est,
            );
            if *h != cpu.hits {
                eprintln!("MISMATCH: cpu hits {} != device hits {h} for the same Philox stream", cpu.hits);
                std::process::exit(1);
            }
            println!("same stream, same estimate: {} hits on both sides", cpu.hits);
        }
        Err(e) => println!("device: failed: {e}"),
    }

    // A European call by Monte Carlo vs its closed form.
    let c = Contract { spot: 100.0, strike: 105.0, t: 1.0, rate: 0.03, vol: 0.25, kind: OptionKind::Call };
    let blocks = a.paths / 4;
    let paths = blocks * 4;
    let t = Instant::now();
    let sums = Mutex::new((0.0f64, 0.0f64));
    let chunks = blocks.div_ceil(CHUNK_BLOCKS / 4) as usize;
    rt.handle().parallel_for(chunks, 1, |r| {
        for ch in r {
            let first = ch as u64 * (CHUNK_BLOCKS / 4);
            let (s, q) = option_paths_sum(a.seed, &c, first, (CHUNK_BLOCKS / 4).min(blocks - first));
            let mut g = sums.lock().unwrap();
            g.0 += s;
            g.1 += q;
        }
    });
    let cpu_t = t.elapsed();
    let (s, q) = sums.into_inner().unwrap();
    let cpu = mc_price(s, q, paths);
    let bs = reference(&c).price;
    println!("\nEuropean call S=100 K=105 T=1 r=3% σ=25%, {paths} paths; Black-Scholes {bs:.6}");
    println!("{:<34} {:>12} {:>12} {:>12} {:>10}", "where", "time", "price", "std error", "z vs BS");
    let pline = |who: &str, secs: f64, p: &gmprt::kernels::monte_carlo::McPrice| {
        println!(
            "{who:<34} {:>10.1}ms {:>12.6} {:>12.6} {:>10.2}",
            secs * 1e3,
            p.price,
            p.std_error,
            (p.price - bs) / p.std_error
        )
    };
    pline(&format!("cpu: gmprt parallel_for, {procs} procs"), cpu_t.as_secs_f64(), &cpu);
    match device.option_paths_sum(a.seed, &c, blocks) {
        Ok(((s, q), phases)) => {
            let p = mc_price(s, q, paths);
            pline(&format!("device: {} (kernel)", device.kind_name()), phases.kernel.as_secs_f64(), &p);
            println!(
                "cpu − device price: {:.3e} (same paths; f32 math may differ in the last bits)",
                cpu.price - p.price
            );
        }
        Err(e) => println!("device: failed: {e}"),
    }
}
