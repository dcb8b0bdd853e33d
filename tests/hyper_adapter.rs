//! hyper on gmprt through `gmprt::net::hyper`: a hyper client and a hyper server, both running
//! as gmprt tasks on a 2-P runtime, talk over an in-memory duplex pipe (written here, futures-io
//! on both ends), so these tests need no socket and run before `gmprt::net`'s TCP types exist.
//!
//! * HTTP/1.1: several keep-alive requests per connection, bodies of 0, 5 and 1 MiB bytes (the
//!   pipe holds 64 KiB, so the big ones cross it in many parked-and-woken writes), echoed back;
//!   several connections at once so both Ps serve.
//! * HTTP/2: concurrent streams on one connection, which hyper runs through the executor.
//! * The timer: `header_read_timeout` with `GmprtTimer` closes a connection whose client sent
//!   half a request head and then nothing, ever (stalled forever vs. a 50 ms timeout: nothing
//!   here depends on how fast the machine is).
//! * The executor, directly: from a task, and from a plain thread through a handle.
//!
//! No test sleeps to synchronise: every wait is on an event (a response, a task's end, EOF).

use bytes::Bytes;
use gmprt::net::hyper::{GmprtExecutor, GmprtTimer, HyperIo};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::rt::{Executor, Timer};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// An in-memory duplex pipe with futures-io ends

/// One direction of the pipe: bytes in flight, at most `cap`, and who waits on them.
struct Half {
    buf: VecDeque<u8>,
    cap: usize,
    /// The writing end closed (or was dropped): once `buf` is drained, reads see EOF.
    write_closed: bool,
    /// The reading end was dropped: writes fail with `BrokenPipe`.
    read_dropped: bool,
    reader: Option<Waker>,
    writer: Option<Waker>,
}

/// One end of a duplex pipe: reads from one `Half`, writes to the other.
struct End {
    rx: Arc<Mutex<Half>>,
    tx: Arc<Mutex<Half>>,
}

/// A pipe whose each direction holds at most `cap` bytes: a writer that finds it full parks
/// until the reader takes some (backpressure, as a socket buffer gives).
fn duplex(cap: usize) -> (End, End) {
    let half = || {
        Arc::new(Mutex::new(Half {
            buf: VecDeque::new(),
            cap,
            write_closed: false,
            read_dropped: false,
            reader: None,
            writer: None,
        }))
    };
    let (a_to_b, b_to_a) = (half(), half());
    (End { rx: b_to_a.clone(), tx: a_to_b.clone() }, End { rx: a_to_b, tx: b_to_a })
}

/// Stores `cx`'s waker in `slot` (skipping the clone when it would wake the same task).
fn register(slot: &mut Option<Waker>, cx: &Context<'_>) {
    match slot {
        Some(w) if w.will_wake(cx.waker()) => {}
        _ => *slot = Some(cx.waker().clone()),
    }
}

impl futures_io::AsyncRead for End {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, out: &mut [u8]) -> Poll<io::Result<usize>> {
        let mut h = self.rx.lock().unwrap();
        if h.buf.is_empty() {
            if h.write_closed || out.is_empty() {
                return Poll::Ready(Ok(0));
            }
            register(&mut h.reader, cx);
            return Poll::Pending;
        }
        let n = out.len().min(h.buf.len());
        for (o, b) in out.iter_mut().zip(h.buf.drain(..n)) {
            *o = b;
        }
        if let Some(w) = h.writer.take() {
            w.wake();
        }
        Poll::Ready(Ok(n))
    }
}

impl futures_io::AsyncWrite for End {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let mut h = self.tx.lock().unwrap();
        if h.read_dropped {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        }
        if h.write_closed {
            return Poll::Ready(Err(io::Error::other("write after close")));
        }
        let room = h.cap - h.buf.len();
        if room == 0 && !data.is_empty() {
            register(&mut h.writer, cx);
            return Poll::Pending;
        }
        let n = room.min(data.len());
        h.buf.extend(&data[..n]);
        if let Some(w) = h.reader.take() {
            w.wake();
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut h = self.tx.lock().unwrap();
        h.write_closed = true;
        if let Some(w) = h.reader.take() {
            w.wake();
        }
        Poll::Ready(Ok(()))
    }
}

impl Drop for End {
    fn drop(&mut self) {
        let reader = {
            let mut h = self.tx.lock().unwrap();
            h.write_closed = true;
            h.reader.take()
        };
        let writer = {
            let mut h = self.rx.lock().unwrap();
            h.read_dropped = true;
            h.writer.take()
        };
        reader.into_iter().chain(writer).for_each(Waker::wake);
    }
}

/// Reads until EOF or an error, returning what was read.
async fn read_to_end(end: &mut End) -> io::Result<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        let n =
            std::future::poll_fn(|cx| futures_io::AsyncRead::poll_read(Pin::new(&mut *end), cx, &mut buf))
                .await?;
        if n == 0 {
            return Ok(got);
        }
        got.extend_from_slice(&buf[..n]);
    }
}

/// Writes all of `data`.
async fn write_all(end: &mut End, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        let n = std::future::poll_fn(|cx| futures_io::AsyncWrite::poll_write(Pin::new(&mut *end), cx, data))
            .await?;
        data = &data[n..];
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The server and the requests

/// The pipe's capacity per direction: far below the 1 MiB bodies.
const PIPE_CAP: usize = 64 * 1024;
const MIB: usize = 1 << 20;

/// The echo service: answers each request with its body, and says in `x-seq` how many requests
/// this connection had served before (so a test sees keep-alive reuse one connection).
fn echo_service() -> impl hyper::service::Service<
    Request<Incoming>,
    Response = Response<Full<Bytes>>,
    Error = hyper::Error,
    Future: Send + 'static,
> + Clone
       + Send
       + 'static {
    let served = Arc::new(AtomicUsize::new(0));
    service_fn(move |req: Request<Incoming>| {
        let seq = served.fetch_add(1, Ordering::Relaxed);
        async move {
            let body = req.into_body().collect().await?.to_bytes();
            let mut resp = Response::new(Full::new(body));
            resp.headers_mut().insert("x-seq", seq.into());
            Ok(resp)
        }
    })
}

/// A body of `len` bytes with a pattern that catches reordered or lost chunks.
fn body(len: usize, salt: usize) -> Bytes {
    (0..len).map(|i| ((i + salt) % 251) as u8).collect::<Vec<_>>().into()
}

fn runtime() -> gmprt::Runtime {
    gmprt::Runtime::builder().procs(2).build().expect("build a 2-P gmprt runtime")
}

/// The sizes every connection sends, in order, twice: 0, 5 and 1 MiB bytes.
const SIZES: [usize; 6] = [0, 5, MIB, 5, 0, MIB];

/// One HTTP/1.1 client connection over `io`: sends every size in `SIZES` as a POST and checks
/// each echo and its sequence number; then closes. Returns the number of requests made.
async fn http1_client(io: End, salt: usize) -> usize {
    let (mut send, conn) =
        hyper::client::conn::http1::handshake::<_, Full<Bytes>>(HyperIo::new(io)).await.expect("handshake");
    let conn = gmprt::spawn(conn);
    for (seq, &len) in SIZES.iter().enumerate() {
        let sent = body(len, salt + seq);
        let req = Request::post("/echo").body(Full::new(sent.clone())).unwrap();
        send.ready().await.expect("connection ready for the next request");
        let resp = send.send_request(req).await.expect("response");
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()["x-seq"], seq.to_string().as_str(), "one connection, kept alive");
        let got = resp.into_body().collect().await.expect("response body").to_bytes();
        assert_eq!(got.len(), len, "request {seq}: body length");
        assert!(got == sent, "request {seq}: body of {len} bytes differs from what was sent");
    }
    drop(send); // no more requests: the client connection closes its end
    conn.await.expect("client conn task").expect("client connection ends cleanly");
    SIZES.len()
}

#[test]
fn http1_keep_alive_requests_over_a_pipe() {
    const CONNS: usize = 4;
    let rt = runtime();
    let served = rt.block_on(async {
        let mut servers = Vec::new();
        let mut clients = Vec::new();
        for c in 0..CONNS {
            let (client_end, server_end) = duplex(PIPE_CAP);
            servers.push(gmprt::spawn(
                hyper::server::conn::http1::Builder::new()
                    .timer(GmprtTimer)
                    .serve_connection(HyperIo::new(server_end), echo_service()),
            ));
            clients.push(gmprt::spawn(http1_client(client_end, c * 1000)));
        }
        let mut n = 0;
        for c in clients {
            n += c.await.expect("client task");
        }
        for s in servers {
            s.await.expect("server task").expect("server connection ends cleanly when the client closes");
        }
        n
    });
    assert_eq!(served, CONNS * SIZES.len());
}

#[test]
fn http1_server_answers_a_hand_written_request() {
    // A client that is not hyper: the bytes on the wire are what we expect of HTTP/1.1.
    let rt = runtime();
    let reply = rt.block_on(async {
        let (mut client, server_end) = duplex(PIPE_CAP);
        let server = gmprt::spawn(
            hyper::server::conn::http1::Builder::new()
                .timer(GmprtTimer)
                .serve_connection(HyperIo::new(server_end), echo_service()),
        );
        write_all(
            &mut client,
            b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello",
        )
        .await
        .unwrap();
        let reply = read_to_end(&mut client).await.unwrap();
        server.await.unwrap().expect("server connection ends cleanly after `connection: close`");
        String::from_utf8(reply).unwrap()
    });
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply:?}");
    assert!(reply.contains("content-length: 5\r\n"), "{reply:?}");
    assert!(reply.ends_with("\r\n\r\nhello"), "{reply:?}");
}

// ---------------------------------------------------------------------------------------------
// The executor

/// `GmprtExecutor` that counts the futures hyper hands it.
#[derive(Clone)]
struct CountingExecutor {
    inner: GmprtExecutor,
    spawned: Arc<AtomicUsize>,
}

impl<F> Executor<F> for CountingExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        self.spawned.fetch_add(1, Ordering::Relaxed);
        self.inner.execute(fut);
    }
}

#[test]
fn http2_streams_run_on_the_executor() {
    const STREAMS: usize = 16;
    let rt = runtime();
    let server_spawns = Arc::new(AtomicUsize::new(0));
    let client_spawns = Arc::new(AtomicUsize::new(0));
    let (s_count, c_count) = (server_spawns.clone(), client_spawns.clone());
    rt.block_on(async move {
        let (client_end, server_end) = duplex(PIPE_CAP);
        let server_exec = CountingExecutor { inner: GmprtExecutor::new(), spawned: s_count };
        let server = gmprt::spawn(
            hyper::server::conn::http2::Builder::new(server_exec)
                .timer(GmprtTimer)
                .serve_connection(HyperIo::new(server_end), echo_service()),
        );
        let client_exec = CountingExecutor { inner: GmprtExecutor::new(), spawned: c_count };
        let (send, conn) = hyper::client::conn::http2::Builder::new(client_exec)
            .timer(GmprtTimer)
            .handshake::<_, Full<Bytes>>(HyperIo::new(client_end))
            .await
            .expect("h2 handshake");
        let conn = gmprt::spawn(conn);
        // Every stream at once, each from its own task: one connection multiplexes them.
        let streams: Vec<_> = (0..STREAMS)
            .map(|i| {
                let mut send = send.clone();
                gmprt::spawn(async move {
                    let len = [0, 5, MIB][i % 3];
                    let sent = body(len, i);
                    send.ready().await.expect("h2 ready");
                    let resp =
                        send.send_request(Request::post("/").body(Full::new(sent.clone())).unwrap()).await;
                    let resp = resp.expect("h2 response");
                    assert_eq!(resp.status(), StatusCode::OK);
                    let got = resp.into_body().collect().await.expect("h2 body").to_bytes();
                    assert!(got == sent, "stream {i}: body of {len} bytes differs");
                })
            })
            .collect();
        for s in streams {
            s.await.expect("stream task");
        }
        drop(send);
        conn.await.expect("client conn task").expect("h2 client connection ends cleanly");
        server.await.expect("server task").expect("h2 server connection ends cleanly");
    });
    // hyper's h2 server spawns one task per stream; its client spawns at least the connection's
    // own pipe tasks. (Exact counts are hyper's business; that it used ours is ours.)
    assert!(server_spawns.load(Ordering::Relaxed) >= STREAMS, "server executor: {server_spawns:?}");
    assert!(client_spawns.load(Ordering::Relaxed) >= 1, "client executor: {client_spawns:?}");
}

#[test]
fn executor_spawns_from_a_task_and_through_a_handle() {
    let rt = runtime();
    // From a task: the current runtime.
    let got = rt.block_on(async {
        let (tx, rx) = gmprt::runtime::chan::chan::<usize>(0);
        for i in 0..100 {
            let tx = tx.clone();
            GmprtExecutor::new().execute(async move { tx.send(i).await.unwrap() });
        }
        drop(tx);
        let mut sum = 0;
        while let Some(i) = rx.recv().await {
            sum += i;
        }
        sum
    });
    assert_eq!(got, (0..100).sum::<usize>());
    // From a plain thread: the handle's runtime.
    let exec = GmprtExecutor::with_handle(rt.handle());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || exec.execute(async move { tx.send(gmprt::runtime::procid()).unwrap() }))
        .join()
        .unwrap();
    let p = rx.recv().unwrap();
    assert!(p.is_some_and(|p| p < 2), "ran on one of the runtime's Ps, got {p:?}");
}

// ---------------------------------------------------------------------------------------------
// The timer

/// `GmprtTimer` that counts the sleeps hyper asks of it.
#[derive(Clone)]
struct CountingTimer(Arc<AtomicUsize>);

impl Timer for CountingTimer {
    fn sleep(&self, d: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        self.0.fetch_add(1, Ordering::Relaxed);
        GmprtTimer.sleep(d)
    }
    fn sleep_until(&self, at: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        self.0.fetch_add(1, Ordering::Relaxed);
        GmprtTimer.sleep_until(at)
    }
    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, at: Instant) {
        GmprtTimer.reset(sleep, at)
    }
}

#[test]
fn header_read_timeout_closes_a_stalled_connection() {
    let rt = runtime();
    let sleeps = Arc::new(AtomicUsize::new(0));
    let timer = CountingTimer(sleeps.clone());
    let (result, after) = rt.block_on(async move {
        let (mut client, server_end) = duplex(PIPE_CAP);
        let server = gmprt::spawn(
            hyper::server::conn::http1::Builder::new()
                .timer(timer)
                .header_read_timeout(Duration::from_millis(50))
                .serve_connection(HyperIo::new(server_end), echo_service()),
        );
        // Half a request head, then nothing: the client stays open and silent forever, so only
        // the timer can end this connection.
        write_all(&mut client, b"GET / HTTP/1.1\r\nhost: x\r\n").await.unwrap();
        let result = server.await.expect("server task");
        // The server dropped its end: the client sees EOF (hyper sends no response here).
        let after = read_to_end(&mut client).await.unwrap();
        (result, after)
    });
    let err = result.expect_err("a stalled head must time out");
    assert!(err.is_timeout(), "expected hyper's header timeout, got: {err}");
    assert!(sleeps.load(Ordering::Relaxed) >= 1, "hyper's timeout slept on GmprtTimer");
    assert!(after.is_empty() || after.starts_with(b"HTTP/1.1 408"), "{:?}", String::from_utf8_lossy(&after));
}

#[test]
fn timer_sleeps_and_resets_in_place() {
    let rt = runtime();
    rt.block_on(async {
        // Reset from an hour to already-passed: completes without waiting an hour.
        let mut s = GmprtTimer.sleep(Duration::from_secs(3600));
        GmprtTimer.reset(&mut s, Instant::now());
        s.await;
        // A deadline reached: never early.
        let at = Instant::now() + Duration::from_millis(2);
        GmprtTimer.sleep_until(at).await;
        assert!(Instant::now() >= at);
        // A sleep reset after it was registered (polled once, pending) moves out of the heap and
        // back in at the new deadline.
        let mut s = GmprtTimer.sleep(Duration::from_secs(3600));
        let polled = std::future::poll_fn(|cx| Poll::Ready(s.as_mut().poll(cx).is_pending())).await;
        assert!(polled, "an hour's sleep is pending");
        GmprtTimer.reset(&mut s, Instant::now());
        s.await;
    });
}
