//! The load generators, the same for every server: wrk for HTTP (a child process), and this
//! binary's own TCP clients for echo and idle, run in a child process (`net --client echo|idle`)
//! on a tokio multi-thread runtime with as many workers as the server has.

use hdrhistogram::Histogram;
use std::io::{self, BufRead, Write};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

// ---------------------------------------------------------------------------------------------
// HTTP: wrk

/// What one wrk run measured.
#[derive(Clone, Copy, Debug, Default)]
pub struct WrkResult {
    pub requests_per_sec: f64,
    pub p99_us: f64,
    pub p50_us: f64,
    /// Requests completed (`N requests in Xs`).
    pub requests: u64,
    /// Socket errors (connect, read, write, timeout) plus non-2xx/3xx responses.
    pub errors: u64,
}

/// Runs `wrk -t<threads> -c<conns> -d<secs>s --latency http://addr/` and parses its report.
pub fn wrk(addr: SocketAddr, threads: usize, conns: usize, secs: u64) -> io::Result<WrkResult> {
    let out = Command::new("wrk")
        .args([
            format!("-t{threads}"),
            format!("-c{conns}"),
            format!("-d{secs}s"),
            "--latency".into(),
            format!("http://{addr}/"),
        ])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            io::Error::new(e.kind(), format!("running wrk: {e} (install it: apt-get install -y wrk)"))
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "wrk exited with {}: {}{}",
            out.status,
            text,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    parse_wrk(&text).ok_or_else(|| io::Error::other(format!("could not read wrk's report:\n{text}")))
}

/// Reads `Requests/sec:`, the `50%` and `99%` lines of `--latency`'s distribution, and the
/// error lines (`Socket errors: connect 0, read 0, write 0, timeout 0`, `Non-2xx or 3xx
/// responses: N`) from wrk's report.
pub fn parse_wrk(text: &str) -> Option<WrkResult> {
    let mut r = WrkResult::default();
    let (mut rps, mut p99, mut p50) = (None, None, None);
    for line in text.lines().map(str::trim) {
        if let Some((n, _)) = line.split_once(" requests in ") {
            r.requests = n.trim().parse().unwrap_or(0);
        } else if let Some(v) = line.strip_prefix("Requests/sec:") {
            rps = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("99%") {
            p99 = wrk_duration_us(v.trim());
        } else if let Some(v) = line.strip_prefix("50%") {
            p50 = wrk_duration_us(v.trim());
        } else if let Some(v) = line.strip_prefix("Socket errors:") {
            r.errors +=
                v.split(',').filter_map(|kv| kv.split_whitespace().nth(1)?.parse::<u64>().ok()).sum::<u64>();
        } else if let Some(v) = line.strip_prefix("Non-2xx or 3xx responses:") {
            r.errors += v.trim().parse::<u64>().unwrap_or(0);
        }
    }
    r.requests_per_sec = rps?;
    r.p99_us = p99?;
    r.p50_us = p50?;
    Some(r)
}

/// wrk's durations: `635.91us`, `1.25ms`, `2.00s`, `1.50m`.
fn wrk_duration_us(s: &str) -> Option<f64> {
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    let scale = match unit {
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "m" => 60e6,
        "h" => 3600e6,
        _ => return None,
    };
    Some(v * scale)
}

// ---------------------------------------------------------------------------------------------
// The child process's side of the protocol

/// Starts this binary again as a client (`--client ...`), stdin and stdout piped: it reports on
/// stdout and exits when its stdin closes (idle) or when done (echo).
pub fn spawn_client(args: &[String]) -> io::Result<std::process::Child> {
    Command::new(std::env::current_exe()?)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
}

/// Reads the next line a child wrote, or says it ended.
pub fn read_line(from: &mut impl BufRead, who: &str) -> io::Result<String> {
    let mut line = String::new();
    if from.read_line(&mut line)? == 0 {
        return Err(io::Error::other(format!("{who} ended without reporting (see its stderr above)")));
    }
    Ok(line.trim_end().to_string())
}

fn client_rt(procs: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(procs)
        .enable_all()
        .build()
        .expect("tokio client runtime")
}

/// Connects `n` sockets to `addr`, at most `in_flight` at a time, each retried up to 3 times
/// after a refusal or reset. A connection counts as open only once one byte has
/// made the round trip through the echo server: then the server has accepted it and its task
/// has run (a connect alone completes in the kernel, and a fast client would overflow the
/// server's listen backlog with connections it has not accepted yet). Returns the sockets and
/// the number that could not connect (with the last error).
async fn connect_many(
    addr: SocketAddr,
    n: usize,
    in_flight: usize,
) -> (Vec<tokio::net::TcpStream>, usize, Option<io::Error>) {
    let gate = Arc::new(tokio::sync::Semaphore::new(in_flight));
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let gate = gate.clone();
            tokio::spawn(async move {
                let _permit = gate.acquire_owned().await.expect("gate never closes");
                let mut last = None;
                for _ in 0..4 {
                    match tokio::net::TcpStream::connect(addr).await {
                        Ok(mut s) => {
                            let mut b = [7u8];
                            match async { s.write_all(&b).await.and(s.read_exact(&mut b).await) }.await {
                                Ok(_) => return Ok(s),
                                Err(e) => last = Some(e),
                            }
                        }
                        Err(e) => last = Some(e),
                    }
                }
                Err(last.expect("tried"))
            })
        })
        .collect();
    let (mut ok, mut failed, mut last) = (Vec::with_capacity(n), 0, None);
    for t in tasks {
        match t.await.expect("connect task") {
            Ok(s) => ok.push(s),
            Err(e) => {
                failed += 1;
                last = Some(e);
            }
        }
    }
    (ok, failed, last)
}

/// `--client echo`: `conns` connections (opened as [`connect_many`] does), each sending a `msg`-byte message and reading the echo
/// back, over and over for `secs` seconds after all have connected; prints one JSON line:
/// `{"round_trips", "secs", "p50_us", "p99_us", "max_us", "conns", "failed_connects"}`.
pub fn echo_client(addr: SocketAddr, conns: usize, msg: usize, secs: u64, procs: usize) {
    let rt = client_rt(procs);
    let report = rt.block_on(async move {
        let (streams, failed, last) = connect_many(addr, conns, 256).await;
        if let Some(e) = &last {
            eprintln!("echo client: {failed} of {conns} connections failed, last: {e}");
        }
        let start = Instant::now();
        let deadline = start + Duration::from_secs(secs);
        let tasks: Vec<_> = streams
            .into_iter()
            .enumerate()
            .map(|(i, mut s)| {
                tokio::spawn(async move {
                    let _ = s.set_nodelay(true);
                    // 1 ns .. 100 s, 2 significant digits (1%): ~30 KB per connection.
                    let mut h = Histogram::<u64>::new_with_bounds(1, 100_000_000_000, 2).expect("histogram");
                    let out: Vec<u8> = (0..msg).map(|b| (b + i) as u8).collect();
                    let mut back = vec![0u8; msg];
                    while Instant::now() < deadline {
                        let t0 = Instant::now();
                        if s.write_all(&out).await.is_err() || s.read_exact(&mut back).await.is_err() {
                            break;
                        }
                        h.saturating_record(t0.elapsed().as_nanos() as u64);
                        assert_eq!(back, out, "the echo differs from the message");
                    }
                    h
                })
            })
            .collect();
        let mut all = Histogram::<u64>::new_with_bounds(1, 100_000_000_000, 2).expect("histogram");
        for t in tasks {
            all.add(t.await.expect("echo client task")).expect("same bounds");
        }
        let secs = start.elapsed().as_secs_f64();
        serde_json::json!({
            "round_trips": all.len(),
            "secs": secs,
            "p50_us": all.value_at_quantile(0.50) as f64 / 1e3,
            "p99_us": all.value_at_quantile(0.99) as f64 / 1e3,
            "max_us": all.max() as f64 / 1e3,
            "conns": conns - failed,
            "failed_connects": failed,
        })
    });
    println!("{report}");
    rt.shutdown_background();
}

/// `--client idle`: opens `conns` connections, sends one byte on each and reads its echo (see
/// [`connect_many`]), then holds them, sending nothing more; prints
/// `connected N FAILED` once all are open (or failed), then waits for its stdin to close.
pub fn idle_client(addr: SocketAddr, conns: usize, procs: usize) {
    let rt = client_rt(procs);
    let (streams, failed, last) = rt.block_on(connect_many(addr, conns, 256));
    if let Some(e) = &last {
        eprintln!("idle client: {failed} of {conns} connections failed, last: {e}");
    }
    println!("connected {} {failed}", streams.len());
    io::stdout().flush().expect("stdout");
    // Hold them until the coordinator closes our stdin.
    let _ = io::stdin().lock().read_line(&mut String::new());
    drop(streams);
    rt.shutdown_background();
}
