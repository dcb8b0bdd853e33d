//! The "fetchMarketData" story with real sockets: `go fetchMarketData()` a hundred thousand
//! times, each a TCP connection to a server that answers after 100 ms.
//!
//! ```text
//! cargo run --release --example fetch_market_data -- [--tasks N=100000] [--cpu-us C=5] [--wait-ms W=100] [--procs P]
//! ```
//!
//! A loopback "market data server" runs on the same runtime: one task accepts, and one task
//! per connection reads a 16-byte request, waits W ms (a timer: the quote is slow to come),
//! and writes a 32-byte answer. N client tasks each connect, send a request, do C µs of CPU
//! (build and sign the next order), and wait for the answer — real sockets, real readiness:
//! every wait parks the task on the netpoller, never the M, so the threads stay near `procs`
//! whatever N is (no thread per connection).
//!
//! The clients dial no faster than the server accepts, with 2,048 connections of slack: a
//! listener's backlog (`somaxconn`, 4,096 here) that fills up makes the kernel drop SYNs, and
//! each dropped connect is retried a second later — a burst of 10,000 connects at once turns
//! a 0.4 s run into 1.4 s (measured here before pacing).
//!
//! Both ends of every connection live in this process (2 descriptors each). If the open-file
//! limit (raised to its hard limit at start, as Go does) cannot hold N connections at once, the
//! story says so and runs as many as fit.
//!
//! The wall time is set against max(W, N·C/procs), as in `io_bound` (which stands a `sleep` in
//! for the network); the output adds the peak descriptors and threads, and why a GPU could not
//! help. The last line is machine-readable:
//! `fetch_market_data tasks=… procs=… cpu_us=… wait_ms=… wall_ms=… model_ms=… ratio=… peak_fds=… peak_threads=…`

#[path = "common/mod.rs"]
mod common;
use clap::Parser;
use common::{
    check_tasks, count_in, cpu_work, cpu_work_steps_per_us, fail, positive, threads_now, Cli, Procs,
};
use gmprt::runtime::net::{TcpListener, TcpStream};
use gmprt::runtime::time::sleep;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

const NAME: &str = "fetch_market_data";
/// Upper limits that keep `Instant + Duration` and the products below from overflowing.
const MAX_CPU_US: usize = 60_000_000;
const MAX_WAIT_MS: usize = 3_600_000;
/// Request and answer sizes: a symbol and a sequence number; a quote (bid, ask, size, time).
const REQ: usize = 16;
const ANS: usize = 32;
/// Connections the clients may have waiting in the listener's backlog (the kernel's
/// `somaxconn`, 4096 here): past a full backlog the kernel drops SYNs and each connect retries
/// a second later, so the fleet dials no faster than the server accepts, with this much slack.
const DIAL_AHEAD: usize = 2048;
/// Descriptors kept free for everything else (stdio, the epoll and eventfd, cargo's pipes…).
const FD_RESERVE: u64 = 64;

/// N tasks fetch a quote each over loopback TCP from a server that answers after W ms.
#[derive(Parser, Debug)]
#[command(name = NAME)]
struct Args {
    /// Client tasks (connections), written 100000, 100_000 or 1e5
    #[arg(long, value_name = "N", default_value_t = 100_000, value_parser = positive)]
    tasks: usize,
    /// CPU work per task, in µs
    #[arg(long, value_name = "C", default_value_t = 5, value_parser = count_in(0, MAX_CPU_US))]
    cpu_us: usize,
    /// The server's delay before each answer, in ms
    #[arg(long, value_name = "W", default_value_t = 100, value_parser = count_in(0, MAX_WAIT_MS))]
    wait_ms: usize,
    #[command(flatten)]
    procs: Procs,
}

impl Cli for Args {}

/// CPU time of this process so far (user, system) in ms, from `/proc/self/stat` (clock ticks of
/// 10 ms: Linux's USER_HZ is 100), or zeros where that cannot be read.
fn cpu_ms_now() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) * 10.0;
    // utime and stime are fields 14 and 15 of stat(5); `rest` starts at field 3.
    (tick(11), tick(12))
}

/// Open descriptors of this process now (`/proc/self/fd`), or 0 where that cannot be read.
fn fds_now() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// How many connections fit the open-file limit at once (2 descriptors each, both ends here).
fn connections_that_fit(base_fds: usize) -> (u64, usize) {
    // Known once a runtime was built (the caller built one); unknown: assume Linux's usual 1024.
    let limit = gmprt::runtime::nofile_limit().map_or(1024, |l| l.current);
    let fit = limit.saturating_sub(base_fds as u64 + FD_RESERVE) / 2;
    (limit, usize::try_from(fit).unwrap_or(usize::MAX))
}

/// One server connection: request, W ms, answer; until the client closes.
async fn serve(s: TcpStream, wait: Duration) -> std::io::Result<()> {
    let mut req = [0u8; REQ];
    loop {
        if !read_full(&s, &mut req).await? {
            return Ok(()); // the client closed
        }
        sleep(wait).await; // the quote is slow to come
        let mut ans = [0u8; ANS];
        ans[..REQ].copy_from_slice(&req);
        ans[REQ..].copy_from_slice(&0x4D41_524B_4554u128.to_le_bytes());
        s.write_all(&ans).await?;
    }
}

/// The server's read of a request: `read_exact`, but a clean end of stream before the first
/// byte is the client leaving (false), not an error.
async fn read_full(s: &TcpStream, buf: &mut [u8]) -> std::io::Result<bool> {
    let mut have = 0;
    while have < buf.len() {
        match s.read(&mut buf[have..]).await? {
            0 if have == 0 => return Ok(false),
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => have += n,
        }
    }
    Ok(true)
}

/// One client: connect, request, C µs of CPU, wait for the answer. Returns the CPU result.
async fn fetch(
    addr: std::net::SocketAddr,
    i: u64,
    iters: u64,
    open: &AtomicUsize,
    peak: &AtomicUsize,
) -> std::io::Result<u64> {
    let s = TcpStream::connect(addr).await?;
    let n = open.fetch_add(1, Relaxed) + 1;
    peak.fetch_max(n, Relaxed);
    let mut req = [0u8; REQ];
    req[..8].copy_from_slice(&i.to_le_bytes());
    s.write_all(&req).await?;
    let v = cpu_work(iters, i); // build and sign the next order while the quote is on its way
    let mut ans = [0u8; ANS];
    let got = s.read_exact(&mut ans).await; // UnexpectedEof if the server closed first
    open.fetch_sub(1, Relaxed);
    got?;
    if ans[..REQ] != req {
        return Err(std::io::Error::other("the answer is for another request"));
    }
    Ok(v)
}

#[allow(dead_code)] // in the `gmprt` command, `main_from` is called instead
fn main() {
    main_from(std::env::args_os().collect());
}

/// Parses `args` (the program's name first) and runs the story.
pub fn main_from(args: Vec<std::ffi::OsString>) {
    let a: Args = common::parse_from(args);
    check_tasks("--tasks", a.tasks).unwrap_or_else(|e| fail(NAME, e));
    let rt = a.procs.gmprt().unwrap_or_else(|e| fail(NAME, e));
    let procs = rt.procs();
    let (limit, fit) = connections_that_fit(fds_now());
    let n = a.tasks.min(fit);
    if n == 0 {
        fail(NAME, format!("the open-file limit ({limit}) leaves no room for a single connection"));
    }
    if n < a.tasks {
        println!(
            "the open-file limit is {limit} (soft = hard after gmprt's start-up raise): {} connections need {} \
             descriptors (both ends are in this process), so this runs {n} tasks, as many as fit at once. \
             Raise the hard limit (ulimit -Hn, as root) to run all.",
            a.tasks,
            2 * a.tasks
        );
    }
    let (cpu, wait) = (Duration::from_micros(a.cpu_us as u64), Duration::from_millis(a.wait_ms as u64));
    let iters = (a.cpu_us as f64 * cpu_work_steps_per_us()).round() as u64;

    // Peak threads, sampled every 10 ms by a plain thread (reading one line of /proc).
    let done = Arc::new(AtomicBool::new(false));
    let peak_threads = Arc::new(AtomicUsize::new(threads_now()));
    let sampler = {
        let (done, peak) = (done.clone(), peak_threads.clone());
        std::thread::spawn(move || {
            while !done.load(Relaxed) {
                peak.fetch_max(threads_now(), Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let base_fds = fds_now();
    let cpu0 = cpu_ms_now();
    let open = Arc::new(AtomicUsize::new(0));
    let peak_open = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    let (open2, peak2) = (open.clone(), peak_open.clone());
    let result: std::io::Result<u64> = rt.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let accepted = Arc::new(AtomicUsize::new(0));
        let accepted2 = accepted.clone();
        let server = gmprt::spawn(async move {
            loop {
                let (s, _) = listener
                    .accept_retrying(|e, delay| eprintln!("{NAME}: server: {e}; retrying in {delay:?}"))
                    .await?;
                accepted2.fetch_add(1, Relaxed);
                gmprt::spawn(async move {
                    if let Err(e) = serve(s, wait).await {
                        eprintln!("{NAME}: server connection: {e}");
                    }
                });
            }
            #[allow(unreachable_code)]
            Ok::<(), std::io::Error>(())
        });
        let root = gmprt::spawn(async move {
            let mut hs = Vec::with_capacity(n);
            for i in 0..n as u64 {
                let (open, peak) = (open2.clone(), peak2.clone());
                hs.push(gmprt::spawn(async move { fetch(addr, i, iters, &open, &peak).await }));
                if i % 1024 == 1023 {
                    gmprt::yield_now().await; // let the Ps run the clients while we spawn
                }
                // Dial no faster than the server accepts (see DIAL_AHEAD).
                while i as usize + 1 > accepted.load(Relaxed) + DIAL_AHEAD {
                    sleep(Duration::from_millis(1)).await;
                }
            }
            let mut acc = 0u64;
            for h in hs {
                acc = acc.wrapping_add(h.await.map_err(std::io::Error::other)??);
            }
            Ok::<u64, std::io::Error>(acc)
        });
        let r = root.await.map_err(std::io::Error::other)?;
        server.abort();
        r
    });
    let wall = t0.elapsed();
    let cpu1 = cpu_ms_now();
    done.store(true, Relaxed);
    let _ = sampler.join();
    let checksum = result.unwrap_or_else(|e| fail(NAME, format!("a fetch failed: {e}")));
    black_box(checksum);
    let stats = rt.stats();
    drop(rt);

    let wall_ms = wall.as_secs_f64() * 1e3;
    let cpu_bound_ms = n as f64 * cpu.as_secs_f64() * 1e3 / procs as f64;
    let wait_ms = wait.as_secs_f64() * 1e3;
    let model_ms = wait_ms.max(cpu_bound_ms);
    let ratio = wall_ms / model_ms;
    let (user_ms, sys_ms) = (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1);
    // What the model leaves out: the kernel's TCP work (both ends: socket, connect, accept,
    // epoll registration, send, receive, close) and the runtime's, per task.
    let all_cpu_bound_ms = (user_ms + sys_ms) / procs as f64;
    let peak_conns = peak_open.load(Relaxed);
    // Client ends counted exactly; the server end of each is open while its client is.
    let peak_fds = base_fds + 2 * peak_conns;
    let peak_threads = peak_threads.load(Relaxed);
    println!(
        "{n} client tasks on {procs} procs: connect over loopback, send a request, {} µs of CPU, wait for the answer the server sends after {} ms",
        a.cpu_us, a.wait_ms
    );
    println!("wall time:                   {wall_ms:>10.1} ms");
    println!("CPU bound N·C/procs:         {cpu_bound_ms:>10.1} ms");
    println!("model max(W, N·C/procs):     {model_ms:>10.1} ms  → measured/model = {ratio:.2}");
    println!(
        "CPU actually used: user {user_ms:.0} ms + system {sys_ms:.0} ms = {:.1} µs per task (the model counts {} µs): \
         the kernel's TCP work at both ends (socket, connect, accept, epoll, send, recv, close) dominates it. \
         W + all that CPU / procs = {:.1} ms",
        (user_ms + sys_ms) * 1e3 / n as f64,
        a.cpu_us,
        wait_ms + all_cpu_bound_ms
    );
    println!(
        "peak connections open at once: {peak_conns} → peak descriptors ≈ {peak_fds} (both ends here; {base_fds} before)"
    );
    println!(
        "peak threads: {peak_threads} (Ms: {}, + sysmon, the main thread and this sampler) — no thread per connection",
        stats.threads
    );
    println!(
        "netpoller: an M blocked in netpoll {} times; sysmon's poll found work {} times",
        stats.netpoll_blocks, stats.netpoll_sysmon
    );
    println!("scheduling latency (wake → poll): {}", stats.sched_latency);
    println!(
        "why a GPU could not help: each task spends {:.3}% of its time waiting for the server, and a GPU cannot make a \
         socket answer sooner; the {} µs of CPU is per-request, branchy work that a PCIe round trip (~10-20 µs) would cost more than.",
        100.0 * wait.as_secs_f64() / (cpu + wait).as_secs_f64().max(f64::MIN_POSITIVE),
        a.cpu_us
    );
    println!(
        "{NAME} tasks={n} procs={procs} cpu_us={} wait_ms={} wall_ms={wall_ms:.1} model_ms={model_ms:.1} ratio={ratio:.2} cpu_ms={:.0} peak_fds={peak_fds} peak_threads={peak_threads}",
        a.cpu_us,
        a.wait_ms,
        user_ms + sys_ms
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::testing::cli_contract;
    use common::try_parse_from;

    #[test]
    fn cli() {
        cli_contract::<Args>(NAME);
        let a: Args = try_parse_from([NAME, "--tasks", "1e3", "--wait-ms", "0"]).unwrap();
        assert_eq!((a.tasks, a.cpu_us, a.wait_ms), (1000, 5, 0));
    }

    #[test]
    fn a_small_run_fetches_every_quote() {
        // 300 clients, no server delay: every fetch must come back (the story fails the
        // process on any error), on 2 procs.
        main_from(
            ["fetch_market_data", "--tasks", "300", "--wait-ms", "0", "--cpu-us", "1", "--procs", "2"]
                .into_iter()
                .map(Into::into)
                .collect(),
        );
    }
}
