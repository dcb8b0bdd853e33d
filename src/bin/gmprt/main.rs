//! The `gmprt` command: the stories in one binary, a tour of them, tracing, calibration and
//! quick measurements.
//!
//! ```text
//! gmprt tour [--out DIR]                     every story, small, with a sentence before each
//! gmprt story <name> [story flags]           one story, as `cargo run --example <name>` runs it
//! gmprt explain [explain's flags]            why a kernel runs where it runs (the cost model)
//! gmprt calibrate --save profile.json        measure this machine's device profile
//! gmprt trace <story> [story flags] --out trace.json [--svg gantt.svg --start-ms S --window-ms W]
//! gmprt gantt trace.json --svg gantt.svg     draw a window of a trace recorded earlier
//! gmprt bench [--json]                       quick in-process measurements, gmprt against tokio
//! ```
//!
//! # One body of code
//! The stories are the repository's examples, included here as modules (`#[path]` below): each
//! example's `main` parses its process's arguments and calls its `pub fn main_from(args)`, and
//! this command calls the same function with the arguments given after the story's name. A
//! story's flags, defaults, output and errors are the example's own (`gmprt story sleepers
//! --help` prints the example's help); nothing is copied.
//!
//! A bad command line prints why and exits 2, `--help` exits 0, as everywhere in gmprt.

// Each story declares `mod common;` (examples/common/mod.rs), as it must to build as its own
// example; included here, every story has its own copy of that small module. Sharing one would
// mean a different `common` path in the binary than in the example, for no gain. The binary's
// own copy gives `bench` the stories' `Rt` interface (one body for gmprt and tokio).
#![allow(clippy::duplicate_mod)]

#[path = "../../../examples/amdahl.rs"]
mod amdahl;
#[path = "../../../examples/blocking_handoff.rs"]
mod blocking_handoff;
#[path = "../../../examples/common/mod.rs"]
mod common;
#[path = "../../../examples/explain.rs"]
mod explain;
#[path = "../../../examples/false_sharing.rs"]
mod false_sharing;
#[path = "../../../examples/fetch_market_data.rs"]
mod fetch_market_data;
#[path = "../../../examples/io_bound.rs"]
mod io_bound;
#[path = "../../../examples/latency_ladder.rs"]
mod latency_ladder;
#[path = "../../../examples/matmul_ladder.rs"]
mod matmul_ladder;
#[path = "../../../examples/million_tasks.rs"]
mod million_tasks;
#[path = "../../../examples/monte_carlo_pi.rs"]
mod monte_carlo_pi;
#[path = "../../../examples/option_screener.rs"]
mod option_screener;
#[path = "../../../examples/sleepers.rs"]
mod sleepers;
#[path = "../../../examples/trading_desk.rs"]
mod trading_desk;

mod bench;
mod calibrate;
mod trace;

use clap::{Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::path::PathBuf;

/// gmprt: Go's G/M/P scheduler as a work-stealing green-task runtime, with an explicit GPU
/// offload layer beside it. Run `gmprt tour` first.
#[derive(Parser, Debug)]
#[command(name = "gmprt", bin_name = "gmprt", version, propagate_version = true)]
struct Gmprt {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Runs every story in order with small sizes, a sentence before each saying what to look at
    Tour {
        /// The folder the stories' plots go to (amdahl.svg, explain-black-scholes.svg), created
        /// if missing
        #[arg(long, value_name = "DIR", default_value = ".")]
        out: PathBuf,
    },
    /// Runs one story with its own flags (`gmprt story <name> --help` lists them). The
    /// stories: million_tasks, io_bound, fetch_market_data, sleepers, blocking_handoff, option_screener,
    /// matmul_ladder, monte_carlo_pi, latency_ladder, amdahl, false_sharing, explain, trading_desk
    #[command(disable_help_flag = true)]
    Story {
        /// The story's name, then its own flags
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "STORY [FLAGS]")]
        args: Vec<OsString>,
    },
    /// Why a kernel runs where it runs: the cost model's breakdown, verdict, crossover and plot
    /// (the explain story; `gmprt explain --help` lists its flags)
    #[command(disable_help_flag = true)]
    Explain {
        /// explain's flags (--kernel K or --all, --n, --device, --out DIR, …)
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "FLAGS")]
        args: Vec<OsString>,
    },
    /// Measures this machine's device profile (launch, transfers, every kernel on the device
    /// and on 1 … P cores) and saves it as JSON for `gmprt explain --device FILE.json`
    Calibrate(calibrate::Args),
    /// Runs a story with tracing on (GMPRT_TRACE), checks the trace's structure, and optionally
    /// draws a window of it as an SVG Gantt chart. Flags of trace and of the story may be mixed
    /// after the story's name
    #[command(disable_help_flag = true)]
    Trace {
        /// trace's own flags and the story's
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "STORY [FLAGS]")]
        args: Vec<OsString>,
    },
    /// Draws a window of a trace recorded earlier as an SVG Gantt chart
    Gantt(trace::GanttArgs),
    /// Quick in-process measurements (medians of a few runs), each beside its peer on tokio
    Bench(bench::Args),
}

/// The stories, in the tour's order.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
#[value(rename_all = "snake_case")]
pub enum Story {
    /// Spawn and join a million green tasks (or keep them parked)
    MillionTasks,
    /// Many tasks, a little CPU each, then a long wait
    IoBound,
    /// The same with real sockets: N clients of a loopback server, through the netpoller
    FetchMarketData,
    /// A million concurrent sleepers
    Sleepers,
    /// Blocking calls next to compute: the syscall hand-off
    BlockingHandoff,
    /// Black-Scholes pricing four ways, the last through the Batcher
    OptionScreener,
    /// Matrix multiply, from naive to the device
    MatmulLadder,
    /// Monte Carlo π and option prices
    MonteCarloPi,
    /// One dependent step at a time: FMA, cache levels, DRAM, core to core
    LatencyLadder,
    /// A serial part against Amdahl's law
    Amdahl,
    /// Per-P counters packed against padded
    FalseSharing,
    /// The cost model's explanation of where a kernel runs
    Explain,
    /// Ticks in, risk and hedges out: feed, risk engine and order gateway as green tasks
    TradingDesk,
}

impl Story {
    /// The story's name, as the example's.
    pub fn name(self) -> &'static str {
        match self {
            Story::MillionTasks => "million_tasks",
            Story::IoBound => "io_bound",
            Story::FetchMarketData => "fetch_market_data",
            Story::Sleepers => "sleepers",
            Story::BlockingHandoff => "blocking_handoff",
            Story::OptionScreener => "option_screener",
            Story::MatmulLadder => "matmul_ladder",
            Story::MonteCarloPi => "monte_carlo_pi",
            Story::LatencyLadder => "latency_ladder",
            Story::Amdahl => "amdahl",
            Story::FalseSharing => "false_sharing",
            Story::Explain => "explain",
            Story::TradingDesk => "trading_desk",
        }
    }

    /// Runs the story with `flags` (not including its name), as its example would.
    pub fn run(self, flags: &[OsString]) {
        let mut args = vec![OsString::from(self.name())];
        args.extend_from_slice(flags);
        match self {
            Story::MillionTasks => million_tasks::main_from(args),
            Story::IoBound => io_bound::main_from(args),
            Story::FetchMarketData => fetch_market_data::main_from(args),
            Story::Sleepers => sleepers::main_from(args),
            Story::BlockingHandoff => blocking_handoff::main_from(args),
            Story::OptionScreener => option_screener::main_from(args),
            Story::MatmulLadder => matmul_ladder::main_from(args),
            Story::MonteCarloPi => monte_carlo_pi::main_from(args),
            Story::LatencyLadder => latency_ladder::main_from(args),
            Story::Amdahl => amdahl::main_from(args),
            Story::FalseSharing => false_sharing::main_from(args),
            Story::Explain => explain::main_from(args),
            Story::TradingDesk => trading_desk::main_from(args),
        }
    }

    /// The story from its name (`million_tasks`, or `million-tasks`).
    pub fn parse(s: &str) -> Result<Story, String> {
        Story::from_str(&s.replace('-', "_"), false).map_err(|_| {
            let names: Vec<&str> = Story::value_variants().iter().map(|s| s.name()).collect();
            format!("no story named {s:?}; the stories are {}", names.join(", "))
        })
    }
}

/// The tour: each story with small sizes and what to look at.
fn tour(out: &std::path::Path) {
    let dir = out.to_string_lossy().to_string();
    let amdahl_svg = out.join("amdahl.svg").to_string_lossy().to_string();
    let stops: [(Story, &str, Vec<String>); 13] = [
        (
            Story::MillionTasks,
            "100 000 green tasks spawned and joined: look at tasks per second and the bytes each task costs.",
            vec!["--tasks".into(), "100000".into()],
        ),
        (
            Story::IoBound,
            "Tasks that compute a little and wait a lot: the wall time is the longest wait, not the sum, because a parked task holds no thread.",
            vec!["--tasks".into(), "20000".into(), "--wait-ms".into(), "20".into()],
        ),
        (
            Story::FetchMarketData,
            "The same story with real sockets: every wait parks a task on the netpoller, so a few threads serve thousands of connections.",
            vec!["--tasks".into(), "2000".into(), "--wait-ms".into(), "20".into()],
        ),
        (
            Story::Sleepers,
            "100 000 sleepers at once: each is a timer on its P's heap; look at the memory per sleeper and how late they wake.",
            vec!["--tasks".into(), "100000".into(), "--sleep-ms".into(), "100".into()],
        ),
        (
            Story::BlockingHandoff,
            "Blocking calls inside gmprt::syscall: the M blocks, its P moves on; the thread count rises above the P count and compute keeps going.",
            vec!["--blocking".into(), "4".into()],
        ),
        (
            Story::OptionScreener,
            "Black-Scholes four ways; way 4 sends items through the Batcher: look at the batch sizes and why each batch closed.",
            vec!["--n".into(), "100000".into()],
        ),
        (
            Story::MatmulLadder,
            "Matrix multiply from naive to tiled to parallel: the same arithmetic, orders of magnitude apart.",
            vec!["--n".into(), "256".into(), "--naive-max".into(), "256".into()],
        ),
        (
            Story::MonteCarloPi,
            "Monte Carlo across the Ps: the answer's error shrinks as 1/sqrt(samples), the time as 1/Ps.",
            vec!["--samples".into(), "1e7".into(), "--paths".into(), "1e6".into()],
        ),
        (
            Story::LatencyLadder,
            "GPUs are throughput machines: one dependent step at a time, CPU against GPU rung by rung; Little's law says why a GPU needs a million independent items.",
            vec!["--steps".into(), "5e5".into(), "--reps".into(), "3".into()],
        ),
        (
            Story::Amdahl,
            "A serial phase caps the speed-up: compare the fitted serial fraction with the one timed alone.",
            vec![
                "--serial".into(),
                "5e6".into(),
                "--parallel".into(),
                "2e7".into(),
                "--reps".into(),
                "3".into(),
                "--out".into(),
                amdahl_svg,
            ],
        ),
        (
            Story::FalseSharing,
            "Counters that share a cache line slow each other down though no data is shared: packed against padded.",
            vec!["--increments".into(), "5e6".into(), "--reps".into(), "3".into()],
        ),
        (
            Story::Explain,
            "Why the runtime does not move your compute to a GPU by itself: the cost model's breakdown and crossover.",
            vec!["--kernel".into(), "black-scholes".into(), "--device".into(), "simulated".into(), "--out".into(), dir],
        ),
        (
            Story::TradingDesk,
            "A desk: ticks over TCP, the book repriced where the cost model says, hedges to a gateway; look at tick -> risk, what was conflated, and where each batch ran.",
            vec!["--contracts".into(), "100000".into(), "--ticks".into(), "4000".into()],
        ),
    ];
    let total = stops.len();
    for (i, (story, sentence, flags)) in stops.into_iter().enumerate() {
        let shown: Vec<&str> = flags.iter().map(String::as_str).collect();
        println!("\n== {}/{total} {} {}", i + 1, story.name(), shown.join(" "));
        println!("   {sentence}\n");
        let flags: Vec<OsString> = flags.into_iter().map(OsString::from).collect();
        story.run(&flags);
    }
    println!("\nThat was the tour. `gmprt story <name> --help` shows a story's flags; `gmprt trace <name> --out t.json` records one.");
}

fn main() {
    let g = Gmprt::parse();
    match g.cmd {
        Cmd::Tour { out } => {
            if let Err(e) = std::fs::create_dir_all(&out) {
                fail(&format!("gmprt tour: --out {}", out.display()), e);
            }
            tour(&out)
        }
        Cmd::Story { args } => {
            let first = args.first().map(|a| a.to_string_lossy().to_string());
            match first.as_deref() {
                None => {
                    let names: Vec<&str> = Story::value_variants().iter().map(|s| s.name()).collect();
                    let msg = format!("name a story: {}", names.join(", "));
                    <Gmprt as clap::CommandFactory>::command()
                        .error(clap::error::ErrorKind::MissingRequiredArgument, msg)
                        .exit()
                }
                Some("--help" | "-h") => {
                    let mut cmd = <Gmprt as clap::CommandFactory>::command();
                    // Built, so that the usage line reads `gmprt story`, not `story`.
                    cmd.build();
                    let sub = cmd.find_subcommand_mut("story").expect("the story subcommand");
                    let _ = sub.print_long_help();
                }
                Some(name) => match Story::parse(name) {
                    Ok(story) => story.run(&args[1..]),
                    Err(e) => {
                        let mut cmd = <Gmprt as clap::CommandFactory>::command();
                        cmd.error(clap::error::ErrorKind::InvalidValue, e).exit()
                    }
                },
            }
        }
        Cmd::Explain { args } => Story::Explain.run(&args),
        Cmd::Calibrate(a) => calibrate::run(&a),
        Cmd::Trace { args } => trace::run(args),
        Cmd::Gantt(a) => trace::gantt(&a),
        Cmd::Bench(a) => bench::run(&a),
    }
}

/// Says why the command cannot go on and exits 2, as for bad arguments.
pub fn fail(what: &str, e: impl std::fmt::Display) -> ! {
    eprintln!("{what}: {e}");
    std::process::exit(2)
}

/// A spinner on stderr for work that takes over a second (hidden when stderr is not a
/// terminal, so piped output stays clean).
pub fn spinner(msg: &str) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new_spinner();
    pb.set_message(msg.to_string());
    // 100 ms: smooth enough to show life, rare enough to cost nothing.
    pb.enable_steady_tick(std::time::Duration::from_millis(100));
    pb
}
