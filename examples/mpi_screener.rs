//! The option screener spread over MPI ranks: rank 0 builds the book (the synthetic option
//! chain of `option_screener`) and scatters it; each rank prices its share on its own gmprt
//! runtime (Black-Scholes + 5 Greeks, the CPU kernel, in `parallel_for` chunks) or, with
//! `--price device`, on its own device (one bulk launch: CUDA when found, else the Host
//! device); the portfolio Greeks are reduced to rank 0, which prints one line per rank (its
//! contracts, compute time and communication time) and then the total, and checks the Greeks
//! against one process pricing the same book the same way, bit for bit.
//!
//! ```text
//! cargo build --release --features mpi --example mpi_screener
//! mpirun --allow-run-as-root --oversubscribe -np 2 target/release/examples/mpi_screener \
//!     [--contracts 1e6] [--seed 7] [--procs P] [--wait handoff|poll] [--scaling strong|weak]
//!     [--price cpu|device]
//!     [--repeats 3] [--calibrate] [--fail-rank R [--fail-how error|panic]]
//! ```
//!
//! # Bit for bit, whatever the number of ranks
//! The book is cut into chunks of [`CHUNK`] contracts on one grid, whatever the ranks; a rank
//! gets whole chunks (a contiguous range), prices them and sums each chunk's Greeks in f64 in
//! contract order; rank 0 gathers every chunk's sums and adds them in chunk order. One process
//! doing the same (the check) adds the same f64 numbers in the same order, so the totals are
//! equal bit for bit — the same kernels, the same inputs, the same order. A sum of rank partials
//! would not be: f64 addition is not associative.
//!
//! # Communication
//! Every message goes through `gmprt::mpi` from a gmprt task (`--wait`: the blocking call handed
//! off like a syscall, or a non-blocking request polled by the task between parks), so a rank's
//! Ps keep running tasks while it waits. Communication time is the scatter, the gather of the
//! chunk sums and the checkpoints ([`gmprt::mpi::Comm::agree`]) as the rank saw them: on the
//! ranks that receive, it includes waiting for rank 0 to build and send their share.
//!
//! # Failures
//! `--fail-rank R` makes rank R report a failure at the checkpoint after pricing (`--fail-how
//! error`), or panic there (`panic`): every rank prints `rank R failed: …` and exits 1 (rank 0
//! adds that every rank stopped), or the panic aborts every rank through `MPI_Abort`. Never a
//! hang (see `gmprt::mpi`).
//!
//! # `--calibrate`
//! Ping-pong round trips between ranks 0 and 1 over sizes from 8 B to 4 MiB and the book's
//! scatter, both timed under each wait in the same run (medians), then the link fitted from
//! the hand-off ping-pong (`NetworkLink::fit`) and the network crossover: from how many contracts
//! scattering a batch to a second rank pays, on this link and on the published ones.
use clap::Parser;
use gmprt::kernels::black_scholes::{stage_words, synthetic_chain, IN_WORDS};
use gmprt::mpi::{wait_stats, Comm, Mpi, MpiError, Wait};
use gmprt::offload::model::{Crossover, ItemBytes, NetworkLink, PingPong};
use gmprt::offload::Device;
use gmprt::runtime::Runtime;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "mpi_screener/calibrate.rs"]
mod calibrate;
#[path = "common/mod.rs"]
mod common;
#[path = "mpi_screener/sums.rs"]
mod sums;
use calibrate::{calibrate, p_stays_free};
use common::{count_in, parse_count, positive, Cli};
use sums::{chunk_sums, chunk_sums_on, fold, CHUNK};

const NAME: &str = "mpi_screener";

/// The Greeks' names, in the order of a chunk's sums.
const GREEKS: [&str; 6] = ["price", "delta", "gamma", "vega", "theta", "rho"];

/// Ping-pong sizes for `--calibrate`, bytes.
const PING_SIZES: [usize; 7] = [8, 1 << 10, 16 << 10, 128 << 10, 512 << 10, 1 << 20, 4 << 20];

/// What `--contracts` counts.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Scaling {
    /// The whole book: more ranks share the same contracts.
    Strong,
    /// Each rank's share: the book grows with the ranks.
    Weak,
}

/// Where a rank prices its share.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Price {
    /// On the rank's runtime: `parallel_for` over the chunks, the CPU kernel.
    Cpu,
    /// On the rank's device (`Device::detect`: CUDA when found, else the Host device), one bulk
    /// launch of the share, its copies included.
    Device,
}

/// How `--fail-rank` fails.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum FailHow {
    /// Report an error at the checkpoint after pricing.
    Error,
    /// Panic there (the panic hook aborts every rank).
    Panic,
}

/// The option screener over MPI ranks: scatter the book, price each share on its own runtime,
/// reduce the portfolio Greeks to rank 0. Run it under mpirun.
#[derive(Parser, Debug)]
#[command(name = NAME)]
struct Args {
    /// Contracts: the book (--scaling strong) or each rank's share (weak); 1e6, 1_000_000 …
    #[arg(long, value_name = "N", default_value_t = 1_000_000, value_parser = count_in(1, 1 << 28))]
    contracts: usize,
    /// Seed of the synthetic option chain
    #[arg(long, value_name = "SEED", default_value_t = 7, value_parser = parse_count)]
    seed: usize,
    /// Ps per rank [default: GMPRT_MAXPROCS, else the cores this rank may use (its affinity:
    /// mpirun binds a rank to one core by default for 2 ranks or fewer) over the ranks on this
    /// machine (OMPI_COMM_WORLD_LOCAL_SIZE), at least 1]
    #[arg(long, value_name = "P", value_parser = positive)]
    procs: Option<usize>,
    /// How a task waits for MPI: handoff (the blocking call in gmprt's syscall) or poll
    #[arg(long, value_name = "handoff|poll", default_value = "handoff")]
    wait: Wait,
    /// What --contracts counts: the whole book (strong) or each rank's share (weak)
    #[arg(long, value_enum, default_value = "strong")]
    scaling: Scaling,
    /// Where each rank prices its share: its runtime's Ps (cpu) or its device (device: CUDA
    /// when found, else the Host device; GMPRT_DEVICE forces one)
    #[arg(long, value_enum, default_value = "cpu")]
    price: Price,
    /// Runs of scatter, price and gather; the times printed are their medians
    #[arg(long, value_name = "R", default_value_t = 3, value_parser = count_in(1, 1000))]
    repeats: usize,
    /// Also time ping-pongs and the scatter under both waits, fit the link, and print the
    /// network crossover (needs 2 ranks or more)
    #[arg(long)]
    calibrate: bool,
    /// Make this rank fail at the checkpoint after pricing [default: none]
    #[arg(long, value_name = "R", value_parser = parse_count)]
    fail_rank: Option<usize>,
    /// How --fail-rank fails: an error reported to every rank, or a panic (MPI_Abort)
    #[arg(long, value_enum, default_value = "error", requires = "fail_rank")]
    fail_how: FailHow,
}

impl Cli for Args {}

/// Which contracts each rank prices: whole chunks, contiguous, in rank order.
#[derive(Clone, Debug, PartialEq)]
struct Plan {
    /// Contracts in the book.
    n: usize,
    /// Per rank: its first contract and its count.
    shares: Vec<(usize, usize)>,
}

impl Plan {
    fn new(n: usize, ranks: usize) -> Plan {
        let chunks = n.div_ceil(CHUNK);
        let shares = (0..ranks)
            .map(|r| {
                let (c0, c1) = (r * chunks / ranks, (r + 1) * chunks / ranks);
                let (lo, hi) = ((c0 * CHUNK).min(n), (c1 * CHUNK).min(n));
                (lo, hi - lo)
            })
            .collect();
        Plan { n, shares }
    }

    /// Chunks of rank `r`'s share.
    fn chunks(&self, r: usize) -> usize {
        self.shares[r].1.div_ceil(CHUNK)
    }
}

/// The median of some durations.
fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// Ps per rank: `--procs`, else GMPRT_MAXPROCS, else the cores over the ranks on this node.
fn procs(a: &Args) -> usize {
    if let Some(p) = a.procs {
        return p;
    }
    if let Some(p) = std::env::var("GMPRT_MAXPROCS").ok().and_then(|v| v.parse::<usize>().ok()) {
        return p.max(1);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let local =
        std::env::var("OMPI_COMM_WORLD_LOCAL_SIZE").ok().and_then(|v| v.parse::<usize>().ok()).unwrap_or(1);
    (cores / local.max(1)).max(1)
}

/// Runs `fut` as a task on one of `rt`'s Ps (not on this thread, which holds no P) and waits
/// for it.
fn on_task<T: Send + 'static>(rt: &Runtime, fut: impl std::future::Future<Output = T> + Send + 'static) -> T {
    rt.block_on(rt.spawn(fut)).expect("a task of this program panicked (the panic hook aborts first)")
}

/// One run's timings on this rank.
#[derive(Clone, Copy, Debug, Default)]
struct Times {
    compute: Duration,
    comm: Duration,
    /// Rank 0: from the start of the scatter to the end of the gather.
    wall: Duration,
}

fn main() {
    let a: Args = common::parse();
    let mpi = Mpi::init().unwrap_or_else(|e| common::fail(NAME, e));
    let rank = mpi.rank();
    let result = run(&a, &mpi);
    // A failure agreed on at a checkpoint reaches every rank there: each says so in one write,
    // waits until every rank has written, finalises and exits 1. (mpirun stops the job at the
    // first non-zero exit: a line written in pieces, as `eprintln!` writes it, lost a piece in 2
    // runs of 10 on Open MPI 4.1; one write before the barrier lost none in 30.) A failure of
    // this rank alone that no checkpoint carried (an MPI call that failed here) cannot wait for
    // the others, which may be waiting for this rank: it aborts the job.
    let code = match &result {
        Ok(()) => 0,
        Err(Exit::BadArgs(e)) => {
            eprintln!("{NAME}: {e}");
            2
        }
        Err(Exit::Agreed(e)) => {
            let mut text = format!("{NAME}: rank {rank}: stopping: {e}\n");
            if rank == 0 {
                text +=
                    &format!("{NAME}: every rank (all {}) stopped at the same checkpoint: {e}\n", mpi.size());
            }
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), text.as_bytes());
            mpi.barrier();
            1
        }
        Err(Exit::Local(e)) => {
            let text = format!("{NAME}: rank {rank}: {e}; aborting every rank (MPI_Abort)\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), text.as_bytes());
            mpi.abort(1)
        }
    };
    drop(mpi);
    std::process::exit(code)
}

/// How `run` ends early.
enum Exit {
    /// A command line that no rank can run (every rank sees the same one): exit 2.
    BadArgs(String),
    /// A failure every rank learnt of at the same checkpoint: exit 1 together.
    Agreed(String),
    /// A failure of this rank alone, outside a checkpoint: abort the job.
    Local(String),
}

impl From<MpiError> for Exit {
    fn from(e: MpiError) -> Exit {
        match e {
            MpiError::RankFailed { .. } => Exit::Agreed(e.to_string()),
            e => Exit::Local(e.to_string()),
        }
    }
}

/// The screener on this rank.
fn run(a: &Args, mpi: &Mpi) -> Result<(), Exit> {
    let (rank, size) = (mpi.rank(), mpi.size());
    if let Some(r) = a.fail_rank.filter(|&r| r >= size) {
        // Every rank has the same command line, so every rank says so and stops: no message.
        return Err(Exit::BadArgs(format!("--fail-rank {r}: there are only {size} ranks (0..{})", size - 1)));
    }
    let comm = mpi.comm(a.wait);
    let n = match a.scaling {
        Scaling::Strong => a.contracts,
        Scaling::Weak => a.contracts.saturating_mul(size),
    };
    let plan = Plan::new(n, size);
    let procs = procs(a);
    // The cores this rank may run on (its CPU affinity: mpirun may bind it).
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Setup: anything that can fail on one rank and not another is agreed on before the book.
    let setup = Runtime::builder().procs(procs).build().map_err(|e| format!("runtime: {e}")).and_then(|rt| {
        if a.price == Price::Cpu {
            return Ok((rt, None));
        }
        let d = Device::detect().map_err(|e| format!("GMPRT_DEVICE: {e}"))?;
        d.warm_up().map_err(|e| format!("warming up {}: {e}", d.describe()))?;
        Ok((rt, Some(d)))
    });
    let (rt, device) = match setup {
        Ok(x) => x,
        Err(e) => {
            // No runtime to run the checkpoint's task on: the checkpoint runs on this thread.
            let r = Runtime::builder().procs(1).build().unwrap_or_else(|e2| {
                eprintln!("{NAME}: rank {rank}: no runtime at all ({e2}); aborting every rank");
                mpi.abort(2)
            });
            r.block_on(comm.agree(Err(e.clone())))?;
            return Err(Exit::Agreed(e));
        }
    };
    on_task(&rt, async move { comm.agree(Ok(())).await })?;
    if rank == 0 {
        println!(
            "{NAME}: {size} rank{} ({}), {n} contracts ({}), seed {}, wait {}, {procs} P{} per rank on {} core{} it may \
             use, medians of {}",
            if size == 1 { "" } else { "s" },
            mpi.library(),
            match a.scaling {
                Scaling::Strong => "strong scaling: the book is --contracts".to_string(),
                Scaling::Weak => format!("weak scaling: {} per rank", a.contracts),
            },
            a.seed,
            a.wait,
            if procs == 1 { "" } else { "s" },
            cores,
            if cores == 1 { "" } else { "s" },
            a.repeats
        );
        println!(
            "{NAME}: each rank prices its share {}",
            device.as_ref().map_or("on its runtime's Ps (the CPU kernel)".to_string(), |d| format!(
                "on its device, one bulk launch with its copies (rank 0: {})",
                d.describe()
            ))
        );
        if cores < procs {
            println!(
                "{NAME}: rank 0 may use {cores} core{} for {procs} Ps (mpirun binds each rank to one core by \
                 default when there are 2 ranks or fewer: pass --bind-to none, or --map-by slot:PE=<cores>)",
                if cores == 1 { "" } else { "s" }
            );
        }
    }
    // A task waiting in MPI leaves its P free: checked on ranks 0 and 1 with this wait, and
    // with the hand-off refused by a thread cap of 1 (it then polls).
    let mut free = Vec::new();
    if size >= 2 && rank <= 1 {
        free.push(p_stays_free(comm, None)?);
        if a.wait == Wait::HandOff {
            free.push(p_stays_free(comm, Some(1))?);
        }
    }
    if rank == 0 {
        for line in &free {
            println!("{line}");
        }
    }
    // Rank 0's book, staged share by share (each share's columns, stride = its count).
    let book: Option<Arc<Vec<u32>>> = (rank == 0).then(|| {
        let chain = synthetic_chain(n, a.seed as u64);
        let mut words = vec![0u32; n * IN_WORDS];
        for &(lo, m) in &plan.shares {
            stage_words(&chain[lo..lo + m], &mut words[lo * IN_WORDS..(lo + m) * IN_WORDS]);
        }
        Arc::new(words)
    });
    let word_counts: Vec<usize> = plan.shares.iter().map(|&(_, m)| m * IN_WORDS).collect();
    let sum_counts: Vec<usize> = (0..size).map(|r| 6 * plan.chunks(r)).collect();
    let (my_lo, my_m) = plan.shares[rank];

    let mut runs: Vec<Times> = Vec::new();
    let mut greeks: Option<[f64; 6]> = None;
    // The share's buffer on the other ranks, reused from run to run (a fresh one's pages fault
    // in during the receive).
    let mut share_buf: Vec<u32> = Vec::new();
    for run in 0..a.repeats {
        let (data, counts) = (book.clone(), word_counts.clone());
        let recv = std::mem::take(&mut share_buf);
        let t0 = Instant::now();
        let (share, scatter_t) = on_task(&rt, async move {
            let t = Instant::now();
            let r = comm.scatter(0, data, &counts, recv).await;
            (r, t.elapsed())
        });
        let share = share?;
        // Rank 0's own share stays in the book (the scatter is in place on the root).
        let mine: &[u32] = match &book {
            Some(b) => &b[my_lo * IN_WORDS..(my_lo + my_m) * IN_WORDS],
            None => &share,
        };
        let tc = Instant::now();
        let priced = match &device {
            None => Ok(chunk_sums(&rt, my_m, mine)),
            Some(d) => chunk_sums_on(d, my_m, mine),
        };
        let compute = tc.elapsed();
        // The checkpoint after pricing: a failed rank reports here instead of skipping the
        // gather that the others would wait in.
        let (outcome, sums) = if a.fail_rank == Some(rank) {
            if a.fail_how == FailHow::Panic {
                panic!("injected panic (--fail-rank {rank} --fail-how panic)");
            }
            (Err(format!("injected failure (--fail-rank {rank})")), Vec::new())
        } else {
            match priced {
                Ok(s) => (Ok(()), s),
                Err(e) => (Err(e), Vec::new()),
            }
        };
        let counts = sum_counts.clone();
        let (gathered, rest_t) = on_task(&rt, async move {
            let t = Instant::now();
            comm.agree(outcome).await?;
            let g = comm.gather(0, sums, &counts).await?;
            Ok::<_, MpiError>((g, t.elapsed()))
        })?;
        let wall = t0.elapsed();
        if let Some(parts) = gathered {
            let all: Vec<f64> = parts.concat();
            let g = fold(&all);
            if let Some(prev) = greeks {
                if prev.map(f64::to_bits) != g.map(f64::to_bits) {
                    return Err(Exit::Local(format!(
                        "run {run} reduced other Greeks than run 0: {g:?} against {prev:?}"
                    )));
                }
            }
            greeks = Some(g);
        }
        runs.push(Times { compute, comm: scatter_t + rest_t, wall });
        share_buf = share;
    }
    let mine = Times {
        compute: median(runs.iter().map(|t| t.compute).collect()),
        comm: median(runs.iter().map(|t| t.comm).collect()),
        wall: median(runs.iter().map(|t| t.wall).collect()),
    };
    // Every rank's line, printed by rank 0 in rank order.
    let line = vec![mine.compute.as_secs_f64(), mine.comm.as_secs_f64(), my_m as f64];
    let lines = on_task(&rt, async move { comm.gather(0, line, &vec![3; comm.size()]).await })?;
    let mut check = Ok(());
    if let (Some(lines), Some(g)) = (lines, greeks) {
        for (r, l) in lines.iter().enumerate() {
            println!(
                "rank {r}: {:>9} contracts, compute {}, communication {}",
                l[2] as usize,
                ms(Duration::from_secs_f64(l[0])),
                ms(Duration::from_secs_f64(l[1]))
            );
        }
        let named: Vec<String> = GREEKS.iter().zip(g).map(|(k, v)| format!("{k} {v:.6e}")).collect();
        println!(
            "total: {n} contracts on {size} rank{} in {} (rank 0, scatter to gather): {}",
            if size == 1 { "" } else { "s" },
            ms(mine.wall),
            named.join(", ")
        );
        let bits: Vec<String> = g.iter().map(|x| format!("{:016x}", x.to_bits())).collect();
        println!("greeks as f64 bits: {}", bits.join(" "));
        // The check: one process, the same chunks, the same order.
        let book: &[u32] = book.as_deref().expect("rank 0 has the book");
        let t = Instant::now();
        let mut one = Vec::new();
        for &(lo, m) in &plan.shares {
            let words = &book[lo * IN_WORDS..(lo + m) * IN_WORDS];
            match &device {
                None => one.extend(chunk_sums(&rt, m, words)),
                Some(d) => match chunk_sums_on(d, m, words) {
                    Ok(s) => one.extend(s),
                    Err(e) => return Err(Exit::Local(format!("the one-process check: {e}"))),
                },
            }
        }
        let single = fold(&one);
        let took = t.elapsed();
        if single.map(f64::to_bits) == g.map(f64::to_bits) {
            println!(
                "check: equal bit for bit to one process pricing the same book in the same chunks ({} on rank 0 alone)",
                ms(took)
            );
        } else {
            check = Err(format!("the reduced Greeks {g:?} differ from one process's {single:?}"));
        }
        let s = wait_stats();
        println!(
            "rank 0 waits ({}): {} handed off, {} thread-cap fallbacks, {} tests, {} parks",
            a.wait, s.handoffs, s.fallbacks, s.tests, s.parks
        );
    }
    on_task(&rt, async move { comm.agree(check).await })?;
    if a.calibrate {
        calibrate(&rt, comm, &plan, book, &word_counts, mine.compute, my_m)?;
    }
    Ok(())
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
        assert_eq!(
            (a.contracts, a.wait, a.scaling, a.repeats, a.fail_rank),
            (1_000_000, Wait::HandOff, Scaling::Strong, 3, None)
        );
        let a: Args =
            try_parse_from([NAME, "--wait", "poll", "--contracts", "1e4", "--fail-rank", "1"]).unwrap();
        assert_eq!(
            (a.wait, a.contracts, a.fail_rank, a.fail_how),
            (Wait::Poll, 10_000, Some(1), FailHow::Error)
        );
        parse_error::<Args>(&[NAME, "--wait", "spin"], ErrorKind::ValueValidation, 2);
        parse_error::<Args>(&[NAME, "--contracts", "0"], ErrorKind::ValueValidation, 2);
        parse_error::<Args>(&[NAME, "--fail-how", "panic"], ErrorKind::MissingRequiredArgument, 2);
    }

    /// Every rank count cuts the book on the same chunk grid, into whole chunks in rank order.
    #[test]
    fn plans_cut_whole_chunks_in_rank_order() {
        for n in [1, CHUNK - 1, CHUNK, 3 * CHUNK + 5, 1_000_000] {
            for ranks in 1..=5 {
                let p = Plan::new(n, ranks);
                let mut next = 0;
                for &(lo, m) in &p.shares {
                    assert_eq!(lo, next.min(n));
                    assert!(lo % CHUNK == 0 || lo == n, "{n} {ranks}: {lo}");
                    next = lo + m;
                }
                assert_eq!(next, n, "{n} {ranks}");
                let chunks: usize = (0..ranks).map(|r| p.chunks(r)).sum();
                assert_eq!(chunks, n.div_ceil(CHUNK));
            }
        }
    }

    /// The sums of one share priced whole equal those of the same share priced by two ranks
    /// (chunk by chunk), folded in chunk order: bit for bit.
    #[test]
    fn chunk_sums_do_not_depend_on_the_split() {
        let rt = Runtime::builder().procs(2).build().unwrap();
        let n = 3 * CHUNK + 100;
        let chain = synthetic_chain(n, 3);
        let stage = |lo: usize, m: usize| {
            let mut w = vec![0u32; m * IN_WORDS];
            stage_words(&chain[lo..lo + m], &mut w);
            w
        };
        let whole = fold(&chunk_sums(&rt, n, &stage(0, n)));
        let p = Plan::new(n, 2);
        let mut parts = Vec::new();
        for &(lo, m) in &p.shares {
            parts.extend(chunk_sums(&rt, m, &stage(lo, m)));
        }
        assert_eq!(whole.map(f64::to_bits), fold(&parts).map(f64::to_bits));
        assert!(whole.iter().all(|g| g.is_finite()) && whole[0] > 0.0);
    }
}
