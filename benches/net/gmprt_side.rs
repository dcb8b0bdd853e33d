//! The gmprt side: the same two servers as the tokio peer's (see peers.rs), on gmprt's
//! netpoller: `gmprt::runtime::net::{TcpListener, TcpStream}`, hyper through
//! `gmprt::net::hyper` (HyperIo, GmprtTimer), one task per connection spawned with
//! `gmprt::spawn` from the accepting task, as Go's `net/http` starts one goroutine per
//! connection.

use super::peers::{accept_failed, Server, Side, ECHO_BUF, HELLO};
use gmprt::runtime::net::{TcpListener, TcpStream};
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The gmprt servers.
pub fn side() -> Option<Side> {
    Some(Side { name: "gmprt", http: gmprt_http, echo: gmprt_echo })
}

/// Binds on 127.0.0.1:0 inside `rt` and runs `serve` for every accepted connection, each in its
/// own task.
fn gmprt_serve<F, Fut>(rt: gmprt::Runtime, serve: F) -> io::Result<Server>
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = rt.block_on(async { TcpListener::bind("127.0.0.1:0") })?;
    let addr = listener.local_addr()?;
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    drop(rt.spawn(async move {
        let mut failures = 0;
        loop {
            // EMFILE and the like wait out Go's back-off inside (logged); what is left is
            // counted and retried as the tokio side does.
            match listener.accept_retrying(|e, delay| eprintln!("gmprt: {e}; retrying in {delay:?}")).await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let conn = serve(stream);
                    let count = count.clone();
                    drop(gmprt::spawn(async move {
                        count.fetch_add(1, Ordering::Relaxed);
                        conn.await
                    }));
                }
                Err(e) => gmprt::runtime::time::sleep(accept_failed("gmprt", &e, &mut failures)).await,
            }
        }
    }));
    Ok(Server::new(addr, accepted, move || drop(rt)))
}

/// `--gmprt-max-threads`, when given: the servers' `Builder::max_threads`.
pub static MAX_THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

fn gmprt_rt(procs: usize) -> io::Result<gmprt::Runtime> {
    let b = gmprt::Runtime::builder().procs(procs);
    let b = match MAX_THREADS.get() {
        Some(&m) => b.max_threads(m),
        None => b,
    };
    b.build().map_err(io::Error::other)
}

fn gmprt_http(procs: usize) -> io::Result<Server> {
    use gmprt::net::hyper::{GmprtTimer, HyperIo};
    use http_body_util::Full;
    use hyper::{body::Incoming, service::service_fn, Request, Response};
    gmprt_serve(gmprt_rt(procs)?, |stream| async move {
        let hello = service_fn(|_req: Request<Incoming>| async {
            Ok::<_, std::convert::Infallible>(Response::new(Full::new(bytes::Bytes::from_static(HELLO))))
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(GmprtTimer)
            .serve_connection(HyperIo::new(stream), hello);
        // A client that resets its connection (wrk at its end) is not the server's error.
        let _ = conn.await;
    })
}

fn gmprt_echo(procs: usize) -> io::Result<Server> {
    gmprt_serve(gmprt_rt(procs)?, |stream| async move {
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
