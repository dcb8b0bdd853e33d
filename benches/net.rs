//! Network benches (issue 16): gmprt's netpoller against tokio, serving the same thing with the
//! same code in the same run, on the same number of workers (gmprt Ps, tokio worker threads).
//!
//! ```text
//! cargo bench --bench net -- [http] [echo] [idle] [--secs S] [--conns N] [--rounds R]
//!                            [--procs P] [--msg BYTES] [--json PATH] [--gmprt-max-threads M]
//! ```
//!
//! No workload named runs all three. Each runs `--rounds` rounds (default 3); within a round
//! every side runs once, the order alternating between rounds (tokio first in odd rounds,
//! gmprt first in even ones), so a drift of the machine spreads over both. The table gives the
//! median of the rounds and gmprt/tokio, then the *paired* ratio: gmprt's run over tokio's in
//! the same round, the median of those ratios and a distribution-free confidence interval for it
//! (`report.rs`), which says whether a target such as "≥ 1.0× tokio" is met beyond the machine's
//! drift; `target/bench-net.json` (or `--json PATH`) holds every round's figure.
//!
//! * **http**: the side's hyper HTTP/1.1 server (peers.rs: keep-alive, `hello\n` for every
//!   request) in this process on 127.0.0.1:0, and `wrk -t<procs> -c<conns, 64> -d<secs>s
//!   --latency` as a child process. Reads requests/s and the p99 latency from wrk's report,
//!   and gives the CPU time (user + system) the server's process and wrk each spent per
//!   request (`getrusage`), and how often the server's threads blocked per 1,000 requests
//!   (voluntary context switches: parks, `epoll_wait`s that slept), and the cores the server and
//!   wrk kept busy together (their CPU time over the run's wall time). On 2 cores shared with
//!   wrk, requests/s swings ~20% between runs with the machine; the CPU per request moves far
//!   less, and says which server costs more. With the machine saturated, requests/s = cores
//!   busy ÷ (server + wrk CPU per request): of two servers at the same CPU per request, the one
//!   that leaves cores idle serves less.
//! * **echo**: the side's echo server in this process; the client is this binary again in a
//!   child process (`--client echo`, a tokio runtime with `procs` workers): `conns` (1000)
//!   connections each send a `msg`-byte (64) message and read the echo, over and over for
//!   `secs`. Round trips per second and the p99 round-trip time (hdrhistogram, 1%), and as
//!   for http the CPU time the server's process and the client each spent per round trip,
//!   the server's sleeps per 1,000 round trips and the cores both kept busy: where gmprt's
//!   round trips/s trail, these say whether its server costs more per round trip or leaves
//!   cores idle (the question issue 25's echo target at 16 procs asks).
//! * **idle**: `conns` (100,000) connections to the echo server that, after one byte's round
//!   trip (so each is accepted and its task has run), send nothing; bytes per
//!   connection = (server process VmRSS with them − before them) / connections. The server runs
//!   in a fresh child process per side and round (`--serve-idle`), so memory freed by an
//!   earlier server and kept by the allocator does not hide the next one's growth; the clients
//!   in another (`--client idle`). Every process holds one descriptor per connection, so the
//!   count is cut to what the open-file limit allows, and the run says so.
//!
//! Like with like: the servers differ only in runtime and socket types (peers.rs,
//! gmprt_side.rs); the load generators are the same for both. On a 2-core machine the load
//! generator shares the cores with the server: the figures compare servers under the same
//! load, not the most either could do alone.
//!
//! `--serve-http SIDE` runs one side's HTTP server alone in this process (its address on stdout,
//! until stdin closes), so perf or strace can look at that server and nothing else:
//! `scripts/net-syscalls.sh` counts each side's system calls and user/system CPU per request
//! that way.
//!
//! Every process of the bench first raises its soft open-file limit to the hard one the way
//! gmprt's runtime does (Go's start-up raise), by building a one-P gmprt runtime, so both sides
//! run under the same limit.

use clap::{Parser, ValueEnum};
use std::collections::BTreeMap;
use std::io::{self, BufReader, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "net/client.rs"]
mod client;
#[path = "net/peers.rs"]
mod peers;
#[path = "net/report.rs"]
mod report;

// The gmprt servers (hyper on gmprt's netpoller, and the echo server).
#[path = "net/gmprt_side.rs"]
mod gmprt_side;

use peers::Side;
use report::{fmt_value, print_table, target_dir, write_json};

#[derive(Parser, Debug)]
#[command(name = "net", about = "gmprt vs tokio: HTTP (wrk), TCP echo, idle connections' memory")]
struct Cli {
    /// Workloads to run, in this order; none: all three.
    #[arg(value_enum)]
    workloads: Vec<Workload>,
    /// Seconds of load per run (http, echo).
    #[arg(long, default_value_t = 5)]
    secs: u64,
    /// Connections: default 64 (http), 1000 (echo), 100000 (idle; cut to the open-file limit).
    #[arg(long)]
    conns: Option<usize>,
    /// Rounds per workload; the table gives their median.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Workers on every side: gmprt Ps, tokio worker threads, wrk threads, client workers.
    /// Default: env BENCH_PROCS, else 2.
    #[arg(long)]
    procs: Option<usize>,
    /// Echo message size in bytes.
    #[arg(long, default_value_t = 64)]
    msg: usize,
    /// `Builder::max_threads` of gmprt's in-process servers (http, echo): every M, the one
    /// blocked in netpoll included. Default: the runtime's. tokio has no counterpart (its
    /// worker count is `--procs`).
    #[arg(long)]
    gmprt_max_threads: Option<usize>,
    /// Where to write the JSON summary (default: target/bench-net.json).
    #[arg(long)]
    json: Option<PathBuf>,

    /// (child process) run a load generator instead of the benchmark.
    #[arg(long, value_enum, hide = true)]
    client: Option<ClientMode>,
    /// (child process) run this side's echo server for the idle workload.
    #[arg(long, hide = true)]
    serve_idle: Option<String>,
    /// Serve this side's HTTP server alone (tokio or gmprt), on `--procs` workers: print its
    /// address and serve until stdin closes. For looking at one side with perf or strace
    /// (scripts/net-syscalls.sh).
    #[arg(long, value_name = "SIDE")]
    serve_http: Option<String>,
    /// (child process) the server to load.
    #[arg(long, hide = true)]
    addr: Option<SocketAddr>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Workload {
    Http,
    Echo,
    Idle,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum ClientMode {
    Echo,
    Idle,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Http => "http",
            Workload::Echo => "echo",
            Workload::Idle => "idle",
        }
    }

    fn default_conns(self) -> usize {
        match self {
            Workload::Http => 64,
            Workload::Echo => 1000,
            Workload::Idle => 100_000,
        }
    }
}

fn main() {
    let cli = Cli::parse();
    let nofile = raise_nofile();
    let procs = cli.procs.unwrap_or_else(bench_procs);
    if procs == 0 {
        fail("--procs must be at least 1");
    }
    if let Some(mode) = cli.client {
        let addr = cli.addr.unwrap_or_else(|| fail("--client needs --addr"));
        match mode {
            ClientMode::Echo => client::echo_client(
                addr,
                cli.conns.unwrap_or(Workload::Echo.default_conns()),
                cli.msg,
                cli.secs,
                procs,
            ),
            ClientMode::Idle => client::idle_client(addr, cli.conns.unwrap_or(1), procs),
        }
        return;
    }
    let side_named = |name: &str| {
        sides().into_iter().find(|s| s.name == name).unwrap_or_else(|| {
            let known: Vec<&str> = sides().iter().map(|s| s.name).collect();
            fail(&format!("unknown side '{name}' (known: {})", known.join(", ")))
        })
    };
    if let Some(name) = &cli.serve_http {
        if let Err(e) = serve_http(side_named(name), procs) {
            fail(&format!("{name} http server: {e}"));
        }
        return;
    }
    if let Some(name) = &cli.serve_idle {
        let side = side_named(name);
        if let Err(e) = serve_idle(side, procs) {
            fail(&format!("{name} idle server: {e}"));
        }
        return;
    }
    if cli.rounds == 0 || cli.secs == 0 || cli.msg == 0 {
        fail("--rounds, --secs and --msg must be at least 1");
    }
    if let Some(m) = cli.gmprt_max_threads {
        // The runtime's own check of the pair, once here, before either side runs.
        if let Err(e) = gmprt::Runtime::builder().procs(procs).max_threads(m).build() {
            fail(&format!("--gmprt-max-threads {m} with --procs {procs}: {e}"));
        }
        gmprt_side::MAX_THREADS.set(m).expect("set once, before any server");
    }
    coordinate(&cli, procs, nofile);
}

/// Says what was wrong with the command line and exits 2.
fn fail(why: &str) -> ! {
    eprintln!("net bench: {why} (see --help)");
    std::process::exit(2)
}

fn bench_procs() -> usize {
    match std::env::var("BENCH_PROCS") {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| fail(&format!("BENCH_PROCS={v:?}: expected a number"))),
        Err(_) => 2,
    }
}

/// The servers to compare: the tokio peer, and gmprt's once gmprt::net is in the tree.
fn sides() -> Vec<Side> {
    std::iter::once(peers::tokio()).chain(gmprt_side::side()).collect()
}

/// Raises the soft open-file limit as gmprt's runtime does (the first runtime built in a process
/// does it), and returns the limit now in force.
fn raise_nofile() -> Option<u64> {
    drop(gmprt::Runtime::builder().procs(1).build().expect("a one-P gmprt runtime"));
    gmprt::runtime::nofile_limit().map(|l| l.current)
}

/// This process's resident set in bytes (VmRSS of /proc/self/status).
fn rss_bytes() -> io::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .ok_or_else(|| io::Error::other("no VmRSS in /proc/self/status"))?;
    Ok(kb * 1024)
}

// ---------------------------------------------------------------------------------------------
// The coordinator

/// One figure a workload yields per run.
#[derive(Clone, Copy)]
struct Metric {
    name: &'static str,
    unit: &'static str,
    higher_is_better: bool,
}

const RPS: Metric = Metric { name: "requests/s", unit: "1/s", higher_is_better: true };
const RTS: Metric = Metric { name: "round trips/s", unit: "1/s", higher_is_better: true };
const P99: Metric = Metric { name: "p99 latency", unit: "µs", higher_is_better: false };
const SERVER_CPU: Metric = Metric { name: "server CPU/request", unit: "µs", higher_is_better: false };
const CLIENT_CPU: Metric = Metric { name: "wrk CPU/request", unit: "µs", higher_is_better: false };
const BUSY: Metric = Metric { name: "cores busy", unit: "cores", higher_is_better: true };
const SERVER_SLEEPS: Metric =
    Metric { name: "server sleeps/1k req", unit: "1/1000", higher_is_better: false };
const ECHO_SERVER_CPU: Metric =
    Metric { name: "server CPU/round trip", unit: "µs", higher_is_better: false };
const ECHO_CLIENT_CPU: Metric =
    Metric { name: "client CPU/round trip", unit: "µs", higher_is_better: false };
const ECHO_SERVER_SLEEPS: Metric =
    Metric { name: "server sleeps/1k rt", unit: "1/1000", higher_is_better: false };
const BYTES: Metric = Metric { name: "bytes/connection", unit: "B", higher_is_better: false };

/// Every run's figures: (workload, the metric's place in its run's list) → side → (round, value)
/// for each round the side's run succeeded in. The round pairs the two sides' runs for the
/// paired ratios (`report.rs`).
type Figures = BTreeMap<(Workload, usize), (Metric, BTreeMap<&'static str, Vec<(usize, f64)>>)>;

fn coordinate(cli: &Cli, procs: usize, nofile: Option<u64>) {
    let sides = sides();
    let mut notes = Vec::new();
    if sides.len() == 1 {
        let note = "only one side is built: the other runs alone";
        eprintln!("note: {note}");
        notes.push(note.to_string());
    }
    if let Some(m) = cli.gmprt_max_threads {
        let note = format!("gmprt's in-process servers run with Builder::max_threads({m})");
        eprintln!("note: {note}");
        notes.push(note);
    }
    let workloads = if cli.workloads.is_empty() {
        vec![Workload::Http, Workload::Echo, Workload::Idle]
    } else {
        cli.workloads.clone()
    };
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    eprintln!(
        "net bench: {} on {procs} workers per side, {} rounds, {} s per run; {cpus} CPUs; open-file limit {}",
        workloads.iter().map(|w| w.name()).collect::<Vec<_>>().join(", "),
        cli.rounds,
        cli.secs,
        nofile.map_or("unknown".into(), |n| n.to_string()),
    );
    let mut figures = Figures::new();
    let mut conns_run = BTreeMap::new();
    for &w in &workloads {
        let mut conns = cli.conns.unwrap_or(w.default_conns());
        if w == Workload::Idle {
            let (fit, why) = idle_fit(conns, nofile);
            if fit < conns {
                let note = format!("idle: {conns} connections asked, {fit} run: {why}");
                eprintln!("note: {note}");
                notes.push(note);
                conns = fit;
            }
        }
        conns_run.insert(w.name(), conns);
        for round in 0..cli.rounds {
            let order: Vec<&Side> =
                if round % 2 == 0 { sides.iter().collect() } else { sides.iter().rev().collect() };
            for side in order {
                let t0 = Instant::now();
                let got = match w {
                    Workload::Http => http_run(side, procs, conns, cli.secs),
                    Workload::Echo => echo_run(side, procs, conns, cli.msg, cli.secs),
                    Workload::Idle => idle_run(side, procs, conns),
                };
                match got {
                    Ok(values) => {
                        let line: Vec<String> =
                            values.iter().map(|(m, v)| format!("{} {}", m.name, fmt_value(*v, m))).collect();
                        eprintln!(
                            "{:5} round {}/{} {:6} {}  ({:.1} s)",
                            w.name(),
                            round + 1,
                            cli.rounds,
                            side.name,
                            line.join(", "),
                            t0.elapsed().as_secs_f64()
                        );
                        for (i, (m, v)) in values.into_iter().enumerate() {
                            figures
                                .entry((w, i))
                                .or_insert_with(|| (m, BTreeMap::new()))
                                .1
                                .entry(side.name)
                                .or_default()
                                .push((round, v));
                        }
                    }
                    Err(e) => {
                        let note = format!("{} round {} {}: failed: {e}", w.name(), round + 1, side.name);
                        eprintln!("{note}");
                        notes.push(note);
                    }
                }
            }
        }
    }
    print_table(&figures, procs, cli.rounds);
    let path = cli.json.clone().unwrap_or_else(|| target_dir().join("bench-net.json"));
    match write_json(&path, &figures, cli, procs, cpus, nofile, &conns_run, &notes) {
        Ok(()) => eprintln!("wrote {}", path.display()),
        Err(e) => eprintln!("could not write {}: {e}", path.display()),
    }
}

/// How many idle connections fit: each process (server, clients) holds one descriptor per
/// connection plus a few of its own, and the clients need an ephemeral port each towards the
/// one server port.
fn idle_fit(asked: usize, nofile: Option<u64>) -> (usize, String) {
    const SLACK: usize = 64;
    let mut fit = asked;
    let mut why = String::new();
    if let Some(limit) = nofile {
        let by_fds = (limit as usize).saturating_sub(SLACK);
        if by_fds < fit {
            fit = by_fds;
            why = format!(
                "the open-file limit is {limit} (raised to the hard limit; each process holds one \
                 descriptor per connection, less {SLACK} kept for the process itself)"
            );
        }
    }
    if let Some((lo, hi)) =
        std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok().and_then(|s| {
            let mut it = s.split_whitespace().map(|v| v.parse::<usize>().ok());
            Some((it.next()??, it.next()??))
        })
    {
        let by_ports = (hi + 1).saturating_sub(lo).saturating_sub(SLACK);
        if by_ports < fit {
            fit = by_ports;
            why = format!("the ephemeral port range {lo}-{hi} (one port per connection to one server port)");
        }
    }
    (fit, why)
}

fn http_run(side: &Side, procs: usize, conns: usize, secs: u64) -> io::Result<Vec<(Metric, f64)>> {
    let server = (side.http)(procs)?;
    let (own0, children0) = (cpu_us(libc::RUSAGE_SELF), cpu_us(libc::RUSAGE_CHILDREN));
    let slept0 = sleeps(libc::RUSAGE_SELF);
    let t0 = Instant::now();
    let r = client::wrk(server.addr, procs, conns, secs)?;
    let wall_us = t0.elapsed().as_secs_f64() * 1e6;
    // This process is the server (its main thread waits for wrk meanwhile); wrk is its only
    // child since the last reading, waited for by `wrk` above.
    let (own, children) = (cpu_us(libc::RUSAGE_SELF) - own0, cpu_us(libc::RUSAGE_CHILDREN) - children0);
    let slept = sleeps(libc::RUSAGE_SELF) - slept0;
    drop(server);
    if r.errors > 0 {
        eprintln!("{}: wrk counted {} errors", side.name, r.errors);
    }
    let per_request = |us: f64| if r.requests > 0 { us / r.requests as f64 } else { f64::NAN };
    Ok(vec![
        (RPS, r.requests_per_sec),
        (P99, r.p99_us),
        (SERVER_CPU, per_request(own)),
        (CLIENT_CPU, per_request(children)),
        (SERVER_SLEEPS, per_request(slept) * 1e3),
        // wrk's start and its connections' set-up are in the wall time too: a few ms of 5 s.
        (BUSY, (own + children) / wall_us),
    ])
}

/// User + system CPU time, µs, of this process (`RUSAGE_SELF`) or of its waited-for children
/// (`RUSAGE_CHILDREN`). On a machine where the load generator shares the cores with the server,
/// throughput is set by the CPU both spend per request: this is the figure that says which
/// side costs more, with less of the machine's drift than requests/s.
fn cpu_us(who: libc::c_int) -> f64 {
    rusage(who).map_or(f64::NAN, |ru| {
        let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
        us(ru.ru_utime) + us(ru.ru_stime)
    })
}

/// Voluntary context switches of this process's threads (`RUSAGE_SELF`, threads that have
/// exited included): each is a thread that blocked (a futex, `epoll_wait`, a sleep) and was
/// later woken. A server that parks and wakes its threads more often per request pays for it
/// in the kernel's scheduler and in wake-up latency. Involuntary switches are left out: on a
/// machine where wrk shares the cores, they count wrk's preemptions, not the server's choices.
fn sleeps(who: libc::c_int) -> f64 {
    rusage(who).map_or(f64::NAN, |ru| ru.ru_nvcsw as f64)
}

/// `getrusage(who)`, or `None` if it fails.
fn rusage(who: libc::c_int) -> Option<libc::rusage> {
    // SAFETY: `getrusage` only writes the struct it is given, which is plain data (all-zero is
    // a valid value of it).
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        (libc::getrusage(who, &mut ru) == 0).then_some(ru)
    }
}

fn echo_run(
    side: &Side,
    procs: usize,
    conns: usize,
    msg: usize,
    secs: u64,
) -> io::Result<Vec<(Metric, f64)>> {
    let server = (side.echo)(procs)?;
    let args: Vec<String> = [
        "--client",
        "echo",
        "--addr",
        &server.addr.to_string(),
        "--conns",
        &conns.to_string(),
        "--msg",
        &msg.to_string(),
        "--secs",
        &secs.to_string(),
        "--procs",
        &procs.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (own0, children0) = (cpu_us(libc::RUSAGE_SELF), cpu_us(libc::RUSAGE_CHILDREN));
    let slept0 = sleeps(libc::RUSAGE_SELF);
    let mut child = client::spawn_client(&args)?;
    let mut out = BufReader::new(child.stdout.take().expect("piped"));
    let line = client::read_line(&mut out, "echo client");
    let status = child.wait()?;
    // As in `http_run`: this process is the server (its main thread waits for the client), and
    // the client is its only child waited for since the first reading. Both CPU figures include
    // the client's connecting (1000 connects and accepts: a few ms of CPU), but the cores busy
    // are taken over the client's timed phase, not the run's wall time: a connect that
    // overflows a listen backlog waits out the kernel's 1-s SYN retry, idle time that is not
    // the echo's.
    let (own, children) = (cpu_us(libc::RUSAGE_SELF) - own0, cpu_us(libc::RUSAGE_CHILDREN) - children0);
    let slept = sleeps(libc::RUSAGE_SELF) - slept0;
    drop(server);
    let line = line?;
    if !status.success() {
        return Err(io::Error::other(format!("echo client exited with {status}")));
    }
    let v: serde_json::Value = serde_json::from_str(&line)
        .map_err(|e| io::Error::other(format!("echo client's report {line:?}: {e}")))?;
    let num =
        |k: &str| v[k].as_f64().ok_or_else(|| io::Error::other(format!("echo client's report lacks {k}")));
    let failed = num("failed_connects")?;
    if failed > 0.0 {
        eprintln!("{}: {failed} echo connections failed to connect", side.name);
    }
    let (round_trips, secs) = (num("round_trips")?, num("secs")?);
    let per_rt = |us: f64| if round_trips > 0.0 { us / round_trips } else { f64::NAN };
    Ok(vec![
        (RTS, round_trips / secs),
        (P99, num("p99_us")?),
        (ECHO_SERVER_CPU, per_rt(own)),
        (ECHO_CLIENT_CPU, per_rt(children)),
        (ECHO_SERVER_SLEEPS, per_rt(slept) * 1e3),
        (BUSY, (own + children) / (secs * 1e6)),
    ])
}

fn idle_run(side: &Side, procs: usize, conns: usize) -> io::Result<Vec<(Metric, f64)>> {
    let mut server = Command::new(std::env::current_exe()?)
        .args(["--serve-idle", side.name, "--procs", &procs.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut sout = BufReader::new(server.stdout.take().expect("piped"));
    let mut sin = server.stdin.take().expect("piped");
    // "listening ADDR RSS"
    let line = client::read_line(&mut sout, "idle server")?;
    let mut it = line.split_whitespace().skip(1);
    let addr = it.next().unwrap_or_default().to_string();
    let before: f64 = it.next().and_then(|v| v.parse().ok()).ok_or_else(|| bad("idle server", &line))?;
    let mut client = client::spawn_client(&[
        "--client".into(),
        "idle".into(),
        "--addr".into(),
        addr,
        "--conns".into(),
        conns.to_string(),
        "--procs".into(),
        procs.to_string(),
    ])?;
    let mut cout = BufReader::new(client.stdout.take().expect("piped"));
    let result = (|| {
        // "connected K FAILED"
        let line = client::read_line(&mut cout, "idle client")?;
        let connected: usize = line
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| bad("idle client", &line))?;
        writeln!(sin, "expect {connected}")?;
        // "accepted A RSS"
        let line = client::read_line(&mut sout, "idle server")?;
        let mut it = line.split_whitespace().skip(1).map(|v| v.parse::<f64>().ok());
        let (accepted, after) = match (it.next().flatten(), it.next().flatten()) {
            (Some(a), Some(r)) if a > 0.0 => (a, r),
            _ => return Err(bad("idle server", &line)),
        };
        if (accepted as usize) < conns {
            eprintln!("{}: {accepted} of {conns} idle connections open", side.name);
        }
        Ok(vec![(BYTES, (after - before) / accepted)])
    })();
    // The server goes first (it closes the accepted sockets; their TIME_WAIT stays on its
    // port), then the clients.
    drop(sin);
    server.wait()?;
    drop(client.stdin.take());
    client.wait()?;
    result
}

fn bad(who: &str, line: &str) -> io::Error {
    io::Error::other(format!("{who} said {line:?}"))
}

/// `--serve-http SIDE`: this side's HTTP server alone in this process. Prints its address and
/// serves until stdin closes (or says anything).
fn serve_http(side: Side, procs: usize) -> io::Result<()> {
    let server = (side.http)(procs)?;
    println!("{}", server.addr);
    io::stdout().flush()?;
    let _ = io::stdin().read_line(&mut String::new());
    drop(server);
    Ok(())
}

/// `--serve-idle SIDE`: this side's echo server alone in this process. Prints `listening ADDR
/// RSS`, reads `expect K`, waits until K connections have been accepted and their tasks have
/// started, prints `accepted A RSS`, and exits when stdin closes.
fn serve_idle(side: Side, procs: usize) -> io::Result<()> {
    let server = (side.echo)(procs)?;
    // Let the runtime's threads start before the baseline.
    std::thread::sleep(Duration::from_millis(100));
    println!("listening {} {}", server.addr, rss_bytes()?);
    io::stdout().flush()?;
    let mut line = String::new();
    io::stdin().read_line(&mut line)?;
    let expect: usize = line.trim().strip_prefix("expect ").and_then(|v| v.parse().ok()).unwrap_or(0);
    // Harness-side polling (not a test): up to a minute for the accepts, then 200 ms for the
    // last tasks to reach their first read and park.
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.accepted() < expect && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    println!("accepted {} {}", server.accepted(), rss_bytes()?);
    io::stdout().flush()?;
    let _ = io::stdin().read_line(&mut String::new());
    drop(server);
    Ok(())
}
