//! Shared by the examples: one command-line dialect, storage sized by a count, and the `Rt`
//! interface of the examples that compare gmprt with tokio. Not every example uses every item.
//!
//! # The command line
//! Every example declares its flags with clap's derive API (`#[derive(Parser)] struct Args`)
//! and parses them with [`parse`], which gives all of them the same answers:
//! * `--help` prints the usage, every flag with its default, on stdout and exits 0;
//! * an unknown flag is named, followed by the flags that exist ([`name_the_flags`]), exit 2;
//! * a bad value names the flag and says what a good one looks like, exit 2. A count is written
//!   `1000000`, `1_000_000` or `1e6` ([`parse_count`], [`positive`], [`count_in`]).
//!
//! # Storage sized by a count
//! A count too big for the machine is an error that says what was asked, the least it needs
//! and what the machine has ([`TooBig`]); never a "capacity overflow" panic or an abort in the
//! allocator. [`check_fits`] and [`check_tasks`] check before anything is allocated; [`try_vec`]
//! and [`try_filled`] reserve with `Vec::try_reserve_exact` and map a refusal to the same error.
#![allow(dead_code)]

use clap::builder::StyledStr;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Command, CommandFactory, Parser};
use gmprt::runtime::Runtime;
use std::ffi::OsString;
use std::fmt;
use std::future::Future;
use std::time::Instant;

/// Parses a count written `1000000`, `1_000_000` or `1e6` (a whole number from 0 to
/// `usize::MAX`); the error says what a count looks like.
pub fn parse_count(s: &str) -> Result<usize, String> {
    let t = s.replace('_', "");
    if let Ok(n) = t.parse::<usize>() {
        return Ok(n);
    }
    match t.parse::<f64>() {
        // 2^64 is the first f64 that `as usize` would saturate (usize::MAX itself is not an f64).
        Ok(f) if f >= 0.0 && f.fract() == 0.0 && f < 18_446_744_073_709_551_616.0 => Ok(f as usize),
        Ok(f) if f >= 0.0 && f.fract() == 0.0 => {
            Err(format!("{s} is more than the largest count, {}", usize::MAX))
        }
        _ => Err(format!("not a count: {s:?}; write a whole number such as 1000000, 1_000_000 or 1e6")),
    }
}

/// A clap value parser for a count in `lo..=hi` (written as [`parse_count`] reads it).
pub fn count_in(
    lo: usize,
    hi: usize,
) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync + 'static {
    move |s| match parse_count(s)? {
        n if n < lo && hi == usize::MAX => Err(format!("must be at least {lo}")),
        n if n < lo || n > hi => Err(format!("must be between {lo} and {hi}")),
        n => Ok(n),
    }
}

/// A clap value parser for a count of at least 1 (written as [`parse_count`] reads it).
pub fn positive(s: &str) -> Result<usize, String> {
    count_in(1, usize::MAX)(s)
}

/// `--procs P`, for every example that starts a runtime (`#[command(flatten)]`).
#[derive(clap::Args, Debug, Clone)]
pub struct Procs {
    /// Ps: worker threads running tasks, Go's GOMAXPROCS [default: GMPRT_MAXPROCS, else one per
    /// core]
    #[arg(long = "procs", id = "procs", value_name = "P", value_parser = positive)]
    pub n: Option<usize>,
}

impl Procs {
    /// A gmprt runtime with this many Ps.
    pub fn gmprt(&self) -> Result<Runtime, String> {
        gmprt_rt(self.n)
    }
    /// A tokio multi-thread runtime with this many workers.
    pub fn tokio(&self) -> Result<tokio::runtime::Runtime, String> {
        tokio_rt(self.n)
    }
}

/// `--runtime gmprt|tokio`: which runtime runs the program, for the examples that have a peer
/// figure.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// This crate's runtime.
    Gmprt,
    /// tokio's multi-thread runtime, with the same worker count.
    Tokio,
}

/// An example's command line: the flags (clap's derive) and the checks that span several of
/// them, which clap cannot state flag by flag.
pub trait Cli: Parser {
    /// Checks across flags; the message says which flags and why.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
}

/// The example's `Command` as [`parse`] runs it: a flag's value may be a negative number, so
/// that `--tasks -5` is answered "not a count" instead of "unexpected argument '-5'".
pub fn command<A: CommandFactory>() -> Command {
    A::command().mut_args(|a| if a.get_action().takes_values() { a.allow_negative_numbers(true) } else { a })
}

/// Parses `args` (the program's name first) into `A`: clap's parse, then `A::check`. The
/// error's `exit()` prints it where it belongs and exits 0 for `--help`, 2 otherwise.
pub fn try_parse_from<A, I, T>(args: I) -> Result<A, clap::Error>
where
    A: Cli,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let mut cmd = command::<A>();
    let mut m = cmd.try_get_matches_from_mut(args).map_err(|e| name_the_flags(e, &mut cmd))?;
    let a = A::from_arg_matches_mut(&mut m).map_err(|e| e.format(&mut cmd))?;
    a.check().map_err(|msg| cmd.error(ErrorKind::ArgumentConflict, msg))?;
    Ok(a)
}

/// The program's own arguments, parsed by [`try_parse_from`]; on `--help` or an error it
/// prints and exits (0 for help, 2 for a bad command line).
pub fn parse<A: Cli>() -> A {
    parse_from(std::env::args_os().collect())
}

/// `args` (the program's name first) parsed by [`try_parse_from`]; on `--help` or an error it
/// prints and exits (0 for help, 2 for a bad command line). The `gmprt` command runs a story
/// through this with the arguments it was given after the story's name. From here on, a
/// closed stdout ends the program quietly ([`quiet_on_closed_stdout`]).
pub fn parse_from<A: Cli>(args: Vec<OsString>) -> A {
    quiet_on_closed_stdout();
    try_parse_from(args).unwrap_or_else(|e| e.exit())
}

/// Exit status of a program whose stdout was closed under it: 128 + SIGPIPE, what a shell
/// reports for a Unix tool that the signal ended.
pub const CLOSED_STDOUT_EXIT: i32 = 141;

/// Makes a closed stdout (`million_tasks | head`) end the program quietly with
/// [`CLOSED_STDOUT_EXIT`], as a Unix tool ends on SIGPIPE, instead of panicking with a
/// backtrace. Rust ignores SIGPIPE, so `println!` to a closed pipe panics with `BrokenPipe`;
/// restoring the signal instead would be unsafe here: the tokio peers write sockets with
/// `writev`, which raises it when a client goes away. Installed once per process, in front of
/// the hook already there, which every other panic still reaches.
pub fn quiet_on_closed_stdout() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let p = info.payload();
            let msg =
                p.downcast_ref::<String>().map(String::as_str).or_else(|| p.downcast_ref::<&str>().copied());
            // std's message for a failed `print!`: "failed printing to stdout: <io::Error>", and
            // EPIPE's error reads "Broken pipe (os error 32)".
            if msg.is_some_and(|m| m.starts_with("failed printing to stdout") && m.contains("(os error 32)"))
            {
                std::process::exit(CLOSED_STDOUT_EXIT);
            }
            prev(info)
        }));
    });
}

/// Every flag `cmd` accepts, `--tasks <N>, --park, …, --help`, in declaration order.
pub fn flag_list(cmd: &mut Command) -> String {
    cmd.build();
    let flag = |a: &clap::Arg| {
        let long = a.get_long()?;
        let names = a.get_value_names().filter(|_| a.get_action().takes_values()).unwrap_or_default();
        let values: String = names.iter().map(|v| format!(" <{v}>")).collect();
        Some(format!("--{long}{values}"))
    };
    cmd.get_arguments().filter(|a| !a.is_hide_set()).filter_map(flag).collect::<Vec<_>>().join(", ")
}

/// `e` unchanged, unless it is an unknown argument: then with a last tip that lists the flags
/// that exist (clap's own error names the unknown flag and at most one near miss).
pub fn name_the_flags(mut e: clap::Error, cmd: &mut Command) -> clap::Error {
    if e.kind() == ErrorKind::UnknownArgument {
        let mut tips = match e.get(ContextKind::Suggested) {
            Some(ContextValue::StyledStrs(tips)) => tips.clone(),
            _ => Vec::new(),
        };
        tips.push(StyledStr::from(format!("the flags are {}", flag_list(cmd))));
        e.insert(ContextKind::Suggested, ContextValue::StyledStrs(tips));
    }
    e
}

/// The least memory one task can take on either runtime: each allocates a task as one block
/// that starts with a header — gmprt's is `TASK_HEADER_BYTES` (derived from the type: 72 on
/// x86-64), tokio's cell is aligned to 128 bytes there — before the future is counted. A
/// floor for [`check_tasks`], not an estimate.
pub const MIN_TASK_BYTES: usize = gmprt::runtime::TASK_HEADER_BYTES;

/// A count whose storage cannot fit in memory: what was asked, the least it needs, and what
/// the machine has. Displays as one sentence. (Boxed: it travels in `Result`s on hot paths.)
#[derive(Debug)]
pub struct TooBig(Box<Shortfall>);

/// What a [`TooBig`] says.
#[derive(Debug)]
struct Shortfall {
    /// What was asked, as the user wrote it (`--tasks 10000000000000000000`).
    asked: String,
    /// Items of `each` bytes; `what` says what one item is.
    items: u128,
    each: usize,
    what: String,
    /// MemAvailable from /proc/meminfo, when it could be read.
    available: Option<u64>,
    /// The allocator's refusal, when the check before allocating had passed.
    refused: Option<std::collections::TryReserveError>,
}

impl TooBig {
    fn new(asked: &str, items: u128, each: usize, what: &str, available: Option<u64>) -> TooBig {
        let (asked, what) = (asked.to_string(), what.to_string());
        TooBig(Box::new(Shortfall { asked, items, each, what, available, refused: None }))
    }

    /// Bytes needed at the least (`items × each`).
    fn needs(&self) -> u128 {
        self.0.items.saturating_mul(self.0.each as u128)
    }
}

impl fmt::Display for TooBig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Shortfall { asked, items, each, what, available, refused } = &*self.0;
        let needs = self.needs();
        write!(
            f,
            "{asked} cannot fit in memory: {items} × {each} bytes ({what}) = at least {needs} bytes ({})",
            human_bytes(needs)
        )?;
        if needs > isize::MAX as u128 {
            write!(f, ", more than any allocation can hold ({} bytes)", isize::MAX)?;
        }
        match available {
            Some(av) => write!(
                f,
                "; this machine has {av} bytes ({}) available (MemAvailable in /proc/meminfo)",
                human_bytes(*av as u128)
            )?,
            None => write!(f, "; MemAvailable could not be read from /proc/meminfo")?,
        }
        if let Some(e) = refused {
            write!(f, "; the allocator refused it: {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for TooBig {}

/// Bytes in binary units with one decimal: `555.1 EiB`.
fn human_bytes(b: u128) -> String {
    const UNITS: [&str; 9] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"];
    let mut x = b as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < UNITS.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{x:.1} {}", UNITS[u])
    }
}

/// MemAvailable from /proc/meminfo in bytes (Linux), when it can be read.
pub fn mem_available() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb = s.lines().find_map(|l| l.strip_prefix("MemAvailable:"))?;
    kb.split_whitespace().next()?.parse::<u64>().ok()?.checked_mul(1024)
}

/// Checks, before anything is allocated, that `items` of `each` bytes (`what` is one item,
/// e.g. "a join handle") fit: no larger than the largest allocation, nor than MemAvailable
/// when it can be read. `asked` is what the user asked for, as written (`--tasks 1e19`).
pub fn check_fits(asked: &str, items: u128, each: usize, what: &str) -> Result<(), TooBig> {
    let e = TooBig::new(asked, items, each, what, mem_available());
    let needs = e.needs();
    if needs > isize::MAX as u128 || e.0.available.is_some_and(|av| needs > av as u128) {
        return Err(e);
    }
    Ok(())
}

/// [`check_fits`] for `n` tasks asked for by `flag` (`--tasks`), at [`MIN_TASK_BYTES`] each.
pub fn check_tasks(flag: &str, n: usize) -> Result<(), TooBig> {
    check_fits(&format!("{flag} {n}"), n as u128, MIN_TASK_BYTES, "a task's header alone")
}

/// An empty `Vec` with room for exactly `n` items, or the error saying why not: checked by
/// [`check_fits`] first, then reserved with `Vec::try_reserve_exact`.
pub fn try_vec<T>(n: usize, asked: &str, what: &str) -> Result<Vec<T>, TooBig> {
    let each = std::mem::size_of::<T>();
    check_fits(asked, n as u128, each, what)?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|refused| {
        let mut e = TooBig::new(asked, n as u128, each, what, mem_available());
        e.0.refused = Some(refused);
        e
    })?;
    Ok(v)
}

/// `n` copies of `value` in storage reserved by [`try_vec`].
pub fn try_filled<T: Clone>(n: usize, value: T, asked: &str, what: &str) -> Result<Vec<T>, TooBig> {
    let mut v = try_vec(n, asked, what)?;
    v.resize(n, value);
    Ok(v)
}

/// The number of field `name` (with its colon, e.g. `"Threads:"`) in the text of
/// `/proc/self/status`, or `None` where it is missing or not a number.
pub fn status_field(status: &str, name: &str) -> Option<u64> {
    status
        .lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// Resident set size (current, peak) in bytes, from /proc/self/status (Linux).
pub fn rss() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| status_field(&s, name).map_or(0, |kb| kb * 1024);
    (field("VmRSS:"), field("VmHWM:"))
}

/// Threads of this process now (`/proc/self/status`), or 0 where that cannot be read.
pub fn threads_now() -> usize {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status_field(&s, "Threads:").map_or(0, |n| n as usize)
}

/// The CPU part of a request in the I/O stories (parse, validate, sign…), stood in for by
/// `iters` dependent steps of a 64-bit mix: multiply, add, xor-shift. Each step needs the
/// previous result, so the loop cannot be vectorised or folded away; `black_box` keeps the
/// count opaque.
#[inline(never)]
pub fn cpu_work(iters: u64, seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..std::hint::black_box(iters) {
        x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(0x6A09_E667_F3BC_C909);
        x ^= x >> 29;
    }
    x
}

/// How many [`cpu_work`] steps this core does per µs: a warm-up that finds a run of about
/// 5 ms, then the median of 7 timed runs of that length.
pub fn cpu_work_steps_per_us() -> f64 {
    let time = |iters: u64| {
        let t = Instant::now();
        std::hint::black_box(cpu_work(iters, 12345));
        t.elapsed().as_secs_f64()
    };
    let mut iters = 1u64 << 14;
    while time(iters) < 5e-3 {
        iters *= 2;
    }
    let mut rates: Vec<f64> = (0..7).map(|_| iters as f64 / (time(iters) * 1e6)).collect();
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// A gmprt runtime with `procs` Ps (default: `GMPRT_MAXPROCS`, else the available parallelism).
pub fn gmprt_rt(procs: Option<usize>) -> Result<Runtime, String> {
    let mut b = Runtime::builder();
    if let Some(p) = procs {
        b = b.procs(p);
    }
    b.build().map_err(|e| e.to_string())
}

/// A tokio multi-thread runtime with `procs` workers (default: the available parallelism) and
/// its timer enabled. Zero workers is an error here rather than tokio's panic.
pub fn tokio_rt(procs: Option<usize>) -> Result<tokio::runtime::Runtime, String> {
    let n = procs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if n == 0 {
        return Err("--procs must be at least 1".to_string());
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_time()
        .worker_threads(n)
        .build()
        .map_err(|e| e.to_string())
}

/// Says why the program cannot go on (a runtime that could not start, a count too big for
/// memory) and exits with status 2, as for bad arguments.
pub fn fail(what: &str, e: impl fmt::Display) -> ! {
    eprintln!("{what}: {e}");
    std::process::exit(2)
}

/// The two runtimes the examples run on, behind one interface so the programs are the same.
pub trait Rt: 'static {
    /// The runtime's name, as `--runtime` spells it.
    const NAME: &'static str;
    /// Ps (gmprt) or worker threads (tokio).
    fn procs(&self) -> usize;
    /// Runs `f` to completion on the calling thread, the runtime's tasks around it.
    fn block_on<F: Future>(&self, f: F) -> F::Output;
    /// Spawns from inside the runtime; the returned future yields the task's output.
    fn spawn<F>(f: F) -> impl Future<Output = F::Output> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static;
    /// Spawns and detaches (Go's `go f()`).
    fn go<F: Future<Output = ()> + Send + 'static>(f: F);
    /// Lets the other tasks on this P run (Go's `runtime.Gosched()`).
    fn yield_now() -> impl Future<Output = ()> + Send;
    /// The runtime's own timer (Go's `time.Sleep` until an instant).
    fn sleep_until(deadline: Instant) -> impl Future<Output = ()> + Send + 'static;
    /// Tasks the runtime reports as parked, if it can say.
    fn parked_tasks(&self) -> Option<usize>;
    /// Timers the runtime reports as pending, if it can say.
    fn timers(&self) -> Option<usize>;
    /// A line of scheduler counters, if the runtime has them.
    fn stats_line(&self) -> Option<String>;
    /// Lines of latency percentiles (wake → poll, poll time), if the runtime records them.
    fn latency_lines(&self) -> Vec<String> {
        Vec::new()
    }
    /// The runtime's stats as JSON, if it has them (gmprt's `RuntimeStats`).
    fn stats_json(&self) -> Option<serde_json::Value> {
        None
    }
}

impl Rt for Runtime {
    const NAME: &'static str = "gmprt";
    fn procs(&self) -> usize {
        Runtime::procs(self)
    }
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        Runtime::block_on(self, f)
    }
    fn spawn<F>(f: F) -> impl Future<Output = F::Output> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let h = gmprt::spawn(f);
        async move { h.await.expect("task failed") }
    }
    fn go<F: Future<Output = ()> + Send + 'static>(f: F) {
        drop(gmprt::spawn(f));
    }
    fn yield_now() -> impl Future<Output = ()> + Send {
        gmprt::yield_now()
    }
    fn sleep_until(deadline: Instant) -> impl Future<Output = ()> + Send + 'static {
        gmprt::runtime::time::sleep_until(deadline)
    }
    fn parked_tasks(&self) -> Option<usize> {
        Some(self.stats().parked_tasks)
    }
    fn timers(&self) -> Option<usize> {
        Some(self.stats().timers)
    }
    fn stats_line(&self) -> Option<String> {
        let st = self.stats();
        Some(format!(
            "steals {} of {} attempts; M parks {}, unparks {}; threads {}\ncounters: {}",
            st.steals,
            st.steal_attempts,
            st.parks,
            st.unparks,
            st.threads,
            st.scaling_line()
        ))
    }
    fn stats_json(&self) -> Option<serde_json::Value> {
        serde_json::to_value(self.stats()).ok()
    }
    fn latency_lines(&self) -> Vec<String> {
        let st = self.stats();
        vec![
            format!("scheduling latency (wake → poll): {}", st.sched_latency),
            format!("poll time:                        {}", st.poll_time),
        ]
    }
}

impl Rt for tokio::runtime::Runtime {
    const NAME: &'static str = "tokio";
    fn procs(&self) -> usize {
        self.metrics().num_workers()
    }
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        tokio::runtime::Runtime::block_on(self, f)
    }
    fn spawn<F>(f: F) -> impl Future<Output = F::Output> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let h = tokio::spawn(f);
        async move { h.await.expect("task failed") }
    }
    fn go<F: Future<Output = ()> + Send + 'static>(f: F) {
        drop(tokio::spawn(f));
    }
    fn yield_now() -> impl Future<Output = ()> + Send {
        tokio::task::yield_now()
    }
    fn sleep_until(deadline: Instant) -> impl Future<Output = ()> + Send + 'static {
        tokio::time::sleep_until(tokio::time::Instant::from_std(deadline))
    }
    fn parked_tasks(&self) -> Option<usize> {
        None
    }
    fn timers(&self) -> Option<usize> {
        None
    }
    fn stats_line(&self) -> Option<String> {
        None
    }
}

/// The command-line contract every example's tests check (`common::testing::cli_contract`).
#[cfg(test)]
pub mod testing {
    use super::*;

    /// The rendered text of a parse of `args`, which must fail with `kind` and exit `code`.
    pub fn parse_error<A: Cli>(args: &[&str], kind: ErrorKind, code: i32) -> String {
        match try_parse_from::<A, _, _>(args) {
            Ok(_) => panic!("{args:?} parsed"),
            Err(e) => {
                let text = e.render().to_string();
                assert_eq!(e.kind(), kind, "{args:?}: {text}");
                assert_eq!(e.exit_code(), code, "{args:?}: {text}");
                text
            }
        }
    }

    /// Asserts that `r` is the clear error for `asked` (`--tasks 10000000000000000000`): what
    /// was asked, the bytes it needs at the least, and what the machine has.
    pub fn assert_too_big(r: Result<(), TooBig>, asked: &str) {
        let msg = r.expect_err(asked).to_string();
        for part in [&format!("{asked} cannot fit in memory: "), " bytes (", "MemAvailable"] {
            assert!(msg.contains(part), "{part:?} is not in: {msg}");
        }
    }

    /// For the example `name`: clap's own consistency checks pass; `--help` exits 0 listing
    /// every flag, each value's default (clap's `[default: …]`, or the help's own words, or
    /// that it is required); an
    /// unknown flag exits 2 naming it and every flag that exists, as does `--tasks -5` where
    /// there is no `--tasks`.
    pub fn cli_contract<A: Cli>(name: &str) {
        command::<A>().debug_assert();
        let help = parse_error::<A>(&[name, "--help"], ErrorKind::DisplayHelp, 0);
        let mut cmd = command::<A>();
        cmd.build();
        let longs: Vec<String> = cmd.get_arguments().filter_map(|a| a.get_long()).map(String::from).collect();
        assert!(longs.iter().any(|l| l == "help"), "{name}: no --help");
        for a in cmd.get_arguments() {
            let long = a.get_long().expect("every flag is a long flag");
            assert!(help.contains(&format!("--{long}")), "{name} --help does not list --{long}:\n{help}");
            if a.get_action().takes_values() {
                let words = a.get_help().map(|h| h.to_string()).unwrap_or_default();
                let own_words = words.contains("default") || words.contains("required");
                assert!(
                    !a.get_default_values().is_empty() || own_words,
                    "{name}: --{long} has no default in its help"
                );
                for d in a.get_default_values() {
                    let shown = format!("[default: {}]", d.to_string_lossy());
                    assert!(help.contains(&shown), "{name} --help does not show --{long}'s {shown}:\n{help}");
                }
            }
        }
        let mut unknown = vec![vec![name, "--no-such-flag"]];
        if !longs.iter().any(|l| l == "tasks") {
            unknown.push(vec![name, "--tasks", "-5"]);
        }
        for args in unknown {
            let text = parse_error::<A>(&args, ErrorKind::UnknownArgument, 2);
            assert!(text.contains(&format!("'{}'", args[1])), "{args:?} does not name the flag:\n{text}");
            for l in &longs {
                assert!(text.contains(&format!("--{l}")), "{args:?} does not list --{l}:\n{text}");
            }
        }
    }
}
