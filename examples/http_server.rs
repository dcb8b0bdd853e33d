//! hyper on gmprt: an HTTP/1.1 server that answers every request with `hello\n`, one task per
//! connection (Go's `net/http` serves each connection on its own goroutine).
//!
//! ```text
//! cargo run --release --example http_server -- --addr 127.0.0.1:8080 [--procs P] [--max-requests N]
//! wrk -t2 -c64 -d10s http://127.0.0.1:8080/
//! ```
//!
//! The listener and every connection are gmprt sockets on the netpoller
//! (`gmprt::net::TcpListener`); hyper gets them through `gmprt::net::hyper::HyperIo`, and its
//! timeouts through `GmprtTimer`. A connection that waits for its next request parks its task,
//! not a thread: the thread count stays near `procs` whatever the number of clients.
//! `--max-requests N` stops after N requests (for tests and scripted runs); without it the
//! server runs until it is killed, and prints its address once it listens.

#[path = "common/mod.rs"]
mod common;
use clap::Parser;
use common::{fail, positive, Cli, Procs};
use gmprt::net::hyper::{GmprtTimer, HyperIo};
use gmprt::net::TcpListener;
use gmprt::runtime::chan::{chan, Sender};
use http_body_util::Full;
use hyper::{body::Incoming, server::conn::http1, service::service_fn, Request, Response};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

const NAME: &str = "http_server";
/// The body of every answer.
const HELLO: &[u8] = b"hello\n";

/// An HTTP/1.1 server on gmprt that answers every request with `hello\n`.
#[derive(Parser, Debug)]
#[command(name = NAME)]
struct Args {
    /// Address to listen on (port 0: any free port; the chosen address is printed)
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8080")]
    addr: String,
    /// Stop after this many requests (default: run until killed)
    #[arg(long, value_name = "N", value_parser = positive)]
    max_requests: Option<usize>,
    #[command(flatten)]
    procs: Procs,
}

impl Cli for Args {}

/// Accepts forever on `listener`, one task per connection; the request that brings the
/// count to `max` sends on `done`.
async fn accept_loop(listener: TcpListener, max: Option<usize>, done: Sender<()>) -> std::io::Result<()> {
    let served = Arc::new(AtomicUsize::new(0));
    loop {
        let (stream, _peer) =
            listener.accept_retrying(|e, delay| eprintln!("{NAME}: {e}; retrying in {delay:?}")).await?;
        let (served, done) = (served.clone(), done.clone());
        gmprt::spawn(async move {
            let hello = service_fn(move |_req: Request<Incoming>| {
                let (served, done) = (served.clone(), done.clone());
                async move {
                    let n = served.fetch_add(1, Relaxed) + 1;
                    if max == Some(n) {
                        let _ = done.try_send(());
                    }
                    Ok::<_, Infallible>(Response::new(Full::new(bytes::Bytes::from_static(HELLO))))
                }
            });
            // A client that resets its connection is not the server's error.
            let _ =
                http1::Builder::new().timer(GmprtTimer).serve_connection(HyperIo::new(stream), hello).await;
        });
    }
}

/// Binds `addr` on `rt`, calls `ready` with the bound address, and serves until `max`
/// requests were answered (forever with `None`).
fn run(
    rt: &gmprt::Runtime,
    addr: &str,
    max: Option<usize>,
    ready: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    rt.block_on(async move {
        let listener = TcpListener::bind(addr)?;
        ready(listener.local_addr()?);
        let (tx, rx) = chan::<()>(1);
        let server = gmprt::spawn(accept_loop(listener, max, tx));
        if max.is_some() {
            rx.recv().await;
            server.abort();
            return Ok(());
        }
        server.await.map_err(std::io::Error::other)?
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
    run(&rt, &a.addr, a.max_requests, |addr| {
        println!("{NAME}: listening on http://{addr}/ with {procs} procs (hyper on gmprt's netpoller)");
    })
    .unwrap_or_else(|e| fail(NAME, format!("{}: {e}", a.addr)));
    let st = rt.stats();
    println!(
        "{NAME}: done; {} tasks spawned, {} polls, threads {}, M parks {} / unparks {}, steals {}, netpoll blocks {} ({} back to busy Ps only)",
        st.spawned, st.polls, st.threads, st.parks, st.unparks, st.steals, st.netpoll_blocks, st.netpoll_no_p
    );
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

    /// Three keep-alive requests on one connection and one on another, from plain threads:
    /// every answer is `hello\n`, and the server (bound by name) stops after the fourth.
    #[test]
    fn answers_hello() {
        let rt = gmprt::Runtime::builder().procs(2).build().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let client = std::thread::spawn(move || {
            let addr: SocketAddr = rx.recv().unwrap();
            let get = |s: &mut std::net::TcpStream| {
                s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
                let mut got = Vec::new();
                let mut buf = [0u8; 512];
                while !got.ends_with(HELLO) {
                    let n = s.read(&mut buf).unwrap();
                    assert!(n > 0, "closed early: {:?}", String::from_utf8_lossy(&got));
                    got.extend_from_slice(&buf[..n]);
                }
                let text = String::from_utf8(got).unwrap();
                assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
                assert!(text.contains("content-length: 6\r\n"), "{text}");
            };
            let mut a = std::net::TcpStream::connect(addr).unwrap();
            for _ in 0..3 {
                get(&mut a);
            }
            get(&mut std::net::TcpStream::connect(addr).unwrap());
        });
        // A host name, as `--addr localhost:8080` gives: resolved, as Go's `net.Listen` does.
        run(&rt, "localhost:0", Some(4), move |addr| tx.send(addr).unwrap()).unwrap();
        client.join().unwrap();
    }

    #[test]
    fn an_address_in_use_is_a_clear_error() {
        let rt = gmprt::Runtime::builder().procs(1).build().unwrap();
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let err = run(&rt, &taken.local_addr().unwrap().to_string(), Some(1), |_| {}).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse, "{err}");
    }
}
