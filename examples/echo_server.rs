//! A TCP echo server on gmprt: one task per connection, each reading and writing back until
//! the client closes — the smallest server a Go programmer ports first.
//!
//! ```text
//! cargo run --release --example echo_server -- --addr 127.0.0.1:7000 [--procs P] [--max-conns N]
//! ```
//!
//! Every connection's task parks on the netpoller between messages, so ten thousand idle
//! clients cost ten thousand small tasks and no threads. `--max-conns N` stops once N
//! connections have been served to their end (for tests and scripted runs); without it the
//! server runs until killed.

#[path = "common/mod.rs"]
mod common;
use clap::Parser;
use common::{fail, positive, Cli, Procs};
use gmprt::net::{TcpListener, TcpStream};
use gmprt::runtime::sync::WaitGroup;
use std::net::SocketAddr;

const NAME: &str = "echo_server";
/// Read buffer per connection (Go's `io.Copy` uses 32 KiB; echo messages are small).
const BUF: usize = 4096;

/// A TCP echo server on gmprt.
#[derive(Parser, Debug)]
#[command(name = NAME)]
struct Args {
    /// Address to listen on (port 0: any free port; the chosen address is printed)
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:7000")]
    addr: String,
    /// Stop after serving this many connections to their end (default: run until killed)
    #[arg(long, value_name = "N", value_parser = positive)]
    max_conns: Option<usize>,
    #[command(flatten)]
    procs: Procs,
}

impl Cli for Args {}

/// Echoes until the peer closes (or the connection fails). Returns the bytes echoed.
async fn echo(s: TcpStream) -> std::io::Result<u64> {
    let mut buf = vec![0u8; BUF];
    let mut total = 0;
    loop {
        match s.read(&mut buf).await? {
            0 => return Ok(total),
            n => {
                s.write_all(&buf[..n]).await?;
                total += n as u64;
            }
        }
    }
}

/// Binds `addr`, calls `ready` with the bound address, and serves `max` connections to their
/// end (forever with `None`). Returns the bytes echoed.
fn run(
    rt: &gmprt::Runtime,
    addr: &str,
    max: Option<usize>,
    ready: impl FnOnce(SocketAddr),
) -> std::io::Result<u64> {
    rt.block_on(async move {
        let listener = TcpListener::bind(addr)?;
        ready(listener.local_addr()?);
        let wg = WaitGroup::new();
        let total = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let mut accepted = 0usize;
        while max.is_none_or(|m| accepted < m) {
            let (s, peer) =
                listener.accept_retrying(|e, delay| eprintln!("{NAME}: {e}; retrying in {delay:?}")).await?;
            accepted += 1;
            wg.add(1);
            let (wg, total) = (wg.clone(), total.clone());
            gmprt::spawn(async move {
                match echo(s).await {
                    Ok(n) => drop(total.fetch_add(n, std::sync::atomic::Ordering::Relaxed)),
                    Err(e) => eprintln!("{NAME}: {peer}: {e}"),
                }
                wg.done();
            });
        }
        wg.wait().await;
        Ok(total.load(std::sync::atomic::Ordering::Relaxed))
    })
}

#[allow(dead_code)] // in the `gmprt` command, `main_from` is called instead
fn main() {
    main_from(std::env::args_os().collect());
}

/// Parses `args` (the program's name first) and serves.
pub fn main_from(args: Vec<std::ffi::OsString>) {
    let a: Args = common::parse_from(args);
    let rt = a.procs.gmprt().unwrap_or_else(|e| fail(NAME, e));
    let procs = rt.procs();
    let total =
        run(&rt, &a.addr, a.max_conns, |addr| println!("{NAME}: listening on {addr} with {procs} procs"))
            .unwrap_or_else(|e| fail(NAME, format!("{}: {e}", a.addr)));
    println!("{NAME}: done; {total} bytes echoed");
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::testing::cli_contract;
    use std::io::{Read, Write};

    #[test]
    fn cli() {
        cli_contract::<Args>(NAME);
    }

    /// 50 clients on plain threads, 20 messages each: every byte comes back, and the server
    /// ends after the 50th connection closes.
    #[test]
    fn echoes_every_byte() {
        let rt = gmprt::Runtime::builder().procs(2).build().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let clients = std::thread::spawn(move || {
            let addr: SocketAddr = rx.recv().unwrap();
            let hs: Vec<_> = (0..50u8)
                .map(|i| {
                    std::thread::spawn(move || {
                        let mut s = std::net::TcpStream::connect(addr).unwrap();
                        for j in 0..20u8 {
                            let msg = [i, j, 7, 9];
                            s.write_all(&msg).unwrap();
                            let mut got = [0u8; 4];
                            s.read_exact(&mut got).unwrap();
                            assert_eq!(got, msg);
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
        });
        let total = run(&rt, "127.0.0.1:0", Some(50), move |a| tx.send(a).unwrap()).unwrap();
        clients.join().unwrap();
        assert_eq!(total, 50 * 20 * 4);
    }
}
