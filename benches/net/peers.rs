//! The servers under test, behind one interface ([`Side`]), and the tokio peer.
//!
//! Each side serves the same two things on `procs` workers (gmprt Ps, tokio worker threads),
//! started in this process on 127.0.0.1 with an OS-chosen port:
//!
//! * **http**: hyper 1.x HTTP/1.1, one task per connection, keep-alive (hyper's default),
//!   every request answered `200 OK` with the body `hello\n` ([`HELLO`]). Each side gives hyper
//!   its own timer (tokio: hyper-util's `TokioTimer`; gmprt: `GmprtTimer`), so both run hyper's
//!   default 30 s header-read timeout, as a production server would.
//! * **echo**: one task per connection reading up to [`ECHO_BUF`] bytes into a buffer held in
//!   the task and writing them back, until EOF. The idle workload connects to this server and
//!   sends nothing, so its bytes per connection include that buffer on both sides.
//!
//! Both accept in one task and spawn one task per connection; both set `TCP_NODELAY` on every
//! accepted socket (as Go does on every TCP connection). Nothing else differs but the runtime
//! and its socket types.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The body of every HTTP response.
pub const HELLO: &[u8] = b"hello\n";

/// The echo server's read buffer per connection, held in the connection's task.
pub const ECHO_BUF: usize = 1024;

/// A server running in this process until dropped.
pub struct Server {
    pub addr: SocketAddr,
    /// Connections accepted so far (counted as each connection's task starts).
    pub accepted: Arc<AtomicUsize>,
    stop: Option<Box<dyn FnOnce()>>,
}

impl Server {
    pub fn new(addr: SocketAddr, accepted: Arc<AtomicUsize>, stop: impl FnOnce() + 'static) -> Server {
        Server { addr, accepted, stop: Some(Box::new(stop)) }
    }

    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::Relaxed)
    }
}

impl Drop for Server {
    /// Shuts the server's runtime down (its connections are dropped with their tasks).
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop();
        }
    }
}

/// One runtime's servers.
#[derive(Clone, Copy)]
pub struct Side {
    pub name: &'static str,
    /// The HTTP server, on `procs` workers.
    pub http: fn(procs: usize) -> io::Result<Server>,
    /// The echo server, on `procs` workers.
    pub echo: fn(procs: usize) -> io::Result<Server>,
}

/// What an accept loop does after a failed accept (e.g. EMFILE): says so once in a while and
/// waits a millisecond, as Go's `net/http` backs off, instead of spinning.
pub fn accept_failed(side: &str, e: &io::Error, failures: &mut u64) -> Duration {
    *failures += 1;
    if failures.is_power_of_two() {
        eprintln!("{side}: accept failed ({failures} so far): {e}");
    }
    Duration::from_millis(1)
}

// ---------------------------------------------------------------------------------------------
// tokio: hyper over hyper-util's TokioIo, on a multi-thread runtime

pub fn tokio() -> Side {
    Side { name: "tokio", http: tokio_http, echo: tokio_echo }
}

fn tokio_rt(procs: usize) -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(procs).enable_all().build()
}

/// Binds on 127.0.0.1:0 inside `rt` and runs `serve` for every accepted connection, each in its
/// own task.
fn tokio_serve<F, Fut>(rt: tokio::runtime::Runtime, serve: F) -> io::Result<Server>
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let addr = listener.local_addr()?;
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    rt.spawn(async move {
        let mut failures = 0;
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let conn = serve(stream);
                    let count = count.clone();
                    tokio::spawn(async move {
                        count.fetch_add(1, Ordering::Relaxed);
                        conn.await
                    });
                }
                Err(e) => tokio::time::sleep(accept_failed("tokio", &e, &mut failures)).await,
            }
        }
    });
    Ok(Server::new(addr, accepted, move || rt.shutdown_background()))
}

fn tokio_http(procs: usize) -> io::Result<Server> {
    use http_body_util::Full;
    use hyper::{body::Incoming, service::service_fn, Request, Response};
    tokio_serve(tokio_rt(procs)?, |stream| async move {
        let hello = service_fn(|_req: Request<Incoming>| async {
            Ok::<_, std::convert::Infallible>(Response::new(Full::new(bytes::Bytes::from_static(HELLO))))
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .serve_connection(hyper_util::rt::TokioIo::new(stream), hello);
        // A client that resets its connection (wrk at its end) is not the server's error.
        let _ = conn.await;
    })
}

fn tokio_echo(procs: usize) -> io::Result<Server> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    tokio_serve(tokio_rt(procs)?, |mut stream| async move {
        let mut buf = [0u8; ECHO_BUF];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if stream.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }
        }
    })
}
