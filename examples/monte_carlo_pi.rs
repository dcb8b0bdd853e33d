//! Monte Carlo on the CPU's Ps and on the device, with the same Philox stream: π from N
//! samples (the hit counts must be *identical* — the test is exact integer arithmetic), and a
//! European call priced by N paths next to its Black-Scholes value.
//!
//! ```text
//! cargo run --release --example monte_carlo_pi -- [--samples 100e6] [--paths 10e6] [--seed 42] [--procs P]
//! ```
//! `GMPRT_DEVICE=host|cuda` chooses the device (default: CUDA if present, else Host).
use gmprt::kernels::black_scholes::{reference, Contract, OptionKind};
use gmprt::kernels::monte_carlo::{mc_price, option_paths_sum, pi_hits, PiEstimate};
use gmprt::offload::Device;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

#[path = "common/mod.rs"]
mod common;
use clap::Parser;
use common::{count_in, fail, parse_count, Cli, Procs};

/// Philox blocks per chunk: 2^16 blocks = 131k samples, ≈ 1 ms of work on one core, small
/// enough to balance over the Ps and large enough that one atomic add per chunk is noise.
const CHUNK_BLOCKS: u64 = 1 << 16;

const NAME: &str = "monte_carlo_pi";

/// π and a European call by Monte Carlo on the CPU's Ps and on the device, with the same
/// Philox stream (identical hit counts).
#[derive(Parser, Debug)]
#[command(name = NAME)]
struct Args {
    /// Samples for π (at least 2), written 100000000, 100_000_000 or 100e6
    #[arg(long, value_name = "N", default_value_t = 100_000_000, value_parser = count_in(2, usize::MAX))]
    samples: usize,
    /// Paths for the option price (at least 4)
    #[arg(long, value_name = "N", default_value_t = 10_000_000, value_parser = count_in(4, usize::MAX))]
    paths: usize,
    /// Seed of the Philox stream
    #[arg(long, value_name = "SEED", default_value_t = 42, value_parser = parse_count)]
    seed: usize,
    #[command(flatten)]
    procs: Procs,
}

impl Cli for Args {}

/// The run's draws, as the kernels count them.
struct Draws {
    samples: u64,
    paths: u64,
    seed: u64,
}

// In the `gmprt` command, which includes this file as a module, `main_from` is called instead.
#[allow(dead_code)]
fn main() {
    main_from(std::env::args_os().collect());
}

/// Parses `args` (the program's name first) and runs the story: what `main` and the `gmprt`
/// command call. `--help` prints and exits 0; a bad command line prints why and exits 2.
pub fn main_from(args: Vec<std::ffi::OsString>) {
    let args: Args = common::parse_from(args);
    // Counts of draws, not of storage: the work is cut into chunks, nothing is sized by them.
    let a = Draws { samples: args.samples as u64, paths: args.paths as u64, seed: args.seed as u64 };
    let device = Device::detect().unwrap_or_else(|e| fail("monte_carlo_pi: GMPRT_DEVICE", e));
    // First-use costs (CUDA modules, the Host pool's threads) before anything is timed.
    device.warm_up().unwrap_or_else(|e| fail("monte_carlo_pi: device warm-up", e));
    let rt = args.procs.gmprt().unwrap_or_else(|e| fail(NAME, e));
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::error::ErrorKind;
    use common::testing::{cli_contract, parse_error};
    use common::try_parse_from;

    #[test]
    fn cli() {
        cli_contract::<Args>(NAME);
        let a: Args = try_parse_from([NAME]).unwrap();
        assert_eq!((a.samples, a.paths, a.seed, a.procs.n), (100_000_000, 10_000_000, 42, None));
        let a: Args = try_parse_from([NAME, "--samples", "1e9", "--paths", "1_000"]).unwrap();
        assert_eq!((a.samples, a.paths), (1_000_000_000, 1000));
        let text = parse_error::<Args>(&[NAME, "--paths", "3"], ErrorKind::ValueValidation, 2);
        assert!(text.contains("at least 4"), "{text}");
    }
}
