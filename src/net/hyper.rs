//! hyper 1.x on gmprt: the three runtime pieces hyper asks its user for, implemented with
//! gmprt's tasks, timers and any futures-io stream.
//!
//! hyper owns HTTP (parsing, keep-alive, chunking, HTTP/2 framing) and owns no runtime: it is
//! handed an I/O object ([`::hyper::rt::Read`] + [`::hyper::rt::Write`]), an executor for the
//! tasks it spawns ([`::hyper::rt::Executor`]) and a timer for its timeouts
//! ([`::hyper::rt::Timer`]). This module supplies each for gmprt:
//!
//! | hyper asks for | gmprt gives | built on |
//! |---|---|---|
//! | `rt::Read + rt::Write` | [`HyperIo<T>`] | any `T: futures_io::AsyncRead + AsyncWrite + Unpin` (gmprt's `TcpStream`, an in-memory pipe, ...) |
//! | `rt::Executor<F>` | [`GmprtExecutor`] | [`gmprt::spawn`](crate::spawn) or a [`Handle`] |
//! | `rt::Timer` | [`GmprtTimer`] | [`gmprt::runtime::time::sleep_until`](crate::runtime::time::sleep_until), per-P timer heaps |
//!
//! It is hyper-util's `TokioIo`/`TokioExecutor`/`TokioTimer` for gmprt. As in Go's `net/http`,
//! where each connection is served by its own goroutine, serve each connection in its own task
//! (`gmprt::spawn(conn)`): a connection parks its task while it waits for bytes, and the P runs
//! other connections meanwhile.
//!
//! # Serving HTTP/1.1 on one connection
//!
//! ```
//! use gmprt::net::hyper::{GmprtTimer, HyperIo};
//! use hyper::{body::Incoming, server::conn::http1, service::service_fn, Request, Response};
//! use std::convert::Infallible;
//!
//! /// Answers every request on `stream` with `hello`, keeping the connection alive, until the
//! /// client closes it. `stream` is any futures-io byte stream: gmprt's `TcpStream`, a pipe.
//! async fn serve<S>(stream: S) -> Result<(), hyper::Error>
//! where
//!     S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin + Send + 'static,
//! {
//!     let hello = service_fn(|_req: Request<Incoming>| async {
//!         Ok::<_, Infallible>(Response::new(String::from("hello\n")))
//!     });
//!     // The timer gives hyper its header-read timeout (30 s by default once a timer is set).
//!     http1::Builder::new().timer(GmprtTimer).serve_connection(HyperIo::new(stream), hello).await
//! }
//! ```
//!
//! A whole server: accept on gmprt's `TcpListener`, one task per connection, as
//! `benches/net/gmprt_side.rs` and `examples/http_server.rs` serve (`no_run`: it serves until
//! killed):
//!
//! ```no_run
//! use gmprt::net::{hyper::{GmprtTimer, HyperIo}, TcpListener};
//! use hyper::{body::Incoming, server::conn::http1, service::service_fn, Request, Response};
//! use std::convert::Infallible;
//!
//! async fn serve(listener: TcpListener) -> std::io::Result<()> {
//!     loop {
//!         let (stream, _peer) = listener.accept().await?;
//!         gmprt::spawn(async move {
//!             let hello = service_fn(|_req: Request<Incoming>| async {
//!                 Ok::<_, Infallible>(Response::new(String::from("hello\n")))
//!             });
//!             let conn = http1::Builder::new().timer(GmprtTimer).serve_connection(HyperIo::new(stream), hello);
//!             if let Err(e) = conn.await {
//!                 eprintln!("connection: {e}");
//!             }
//!         });
//!     }
//! }
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let rt = gmprt::Runtime::builder().procs(2).build()?;
//!     rt.block_on(async { serve(TcpListener::bind("127.0.0.1:8080")?).await })?;
//!     Ok(())
//! }
//! ```
//!
//! # Reading into hyper's buffer
//!
//! hyper hands a read an uninitialised buffer ([`::hyper::rt::ReadBufCursor`]); a futures-io
//! `poll_read` takes an initialised `&mut [u8]`. [`HyperIo`] reads into a per-thread 16 KiB
//! buffer and copies the bytes that came into hyper's with its safe `put_slice` (a request is
//! ~100 B: the copy is cheaper than initialising hyper's 8 KiB; see `SCRATCH`). Only when that
//! buffer is in use on the thread does it fall back to hyper's own safe
//! [`initialize_unfilled`](::hyper::rt::ReadBufCursor::initialize_unfilled), check the count
//! the reader returned against the slice, and advance the cursor: the one `unsafe` in this
//! module, whose precondition (the bytes are initialised) that check establishes.
//!
//! # Timers need a runtime
//!
//! A [`GmprtTimer`] sleep registers in the timer heap of the P that first polls it, so hyper's
//! connection futures that use one must be polled inside a gmprt runtime (a task, or
//! `Runtime::block_on`), as every gmprt timer must; outside one, its first poll panics with a
//! message saying so.

use crate::runtime::time::{sleep, sleep_until, Sleep};
use crate::runtime::Handle;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// I/O

/// A futures-io byte stream as hyper's I/O: implements [`::hyper::rt::Read`] for any
/// `T: futures_io::AsyncRead + Unpin` and [`::hyper::rt::Write`] for any
/// `T: futures_io::AsyncWrite + Unpin`.
///
/// Writes, flushes and vectored writes go to `T` as they are; hyper's `poll_shutdown` is
/// futures-io's `poll_close`. Reads go through an initialised slice (see the [module
/// docs](self#reading-into-hypers-buffer)).
///
/// ```
/// use gmprt::net::hyper::HyperIo;
/// use hyper::rt::{Read, ReadBuf};
/// use std::{io, pin::Pin, task::{Context, Poll}};
///
/// /// A futures-io reader holding a few bytes (futures-io itself has no in-memory stream).
/// struct Bytes(&'static [u8]);
/// impl futures_io::AsyncRead for Bytes {
///     fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
///         let n = self.0.len().min(buf.len());
///         buf[..n].copy_from_slice(&self.0[..n]);
///         self.0 = &self.0[n..];
///         Poll::Ready(Ok(n))
///     }
/// }
///
/// let mut io = HyperIo::new(Bytes(b"GET / HTTP/1.1\r\n"));
/// let mut storage = [std::mem::MaybeUninit::<u8>::uninit(); 8];   // hyper's buffers start uninitialised
/// let mut buf = ReadBuf::uninit(&mut storage);
/// let rt = gmprt::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(std::future::poll_fn(|cx| Pin::new(&mut io).poll_read(cx, buf.unfilled()))).unwrap();
/// assert_eq!(buf.filled(), b"GET / HT");
/// ```
#[derive(Debug)]
pub struct HyperIo<T> {
    inner: T,
    vectored: bool,
}

impl<T> HyperIo<T> {
    /// Wraps `inner`. hyper is told its writes are not vectored (it then copies a message's head
    /// and a small body into one buffer, one write); see [`HyperIo::vectored`].
    pub fn new(inner: T) -> HyperIo<T> {
        HyperIo { inner, vectored: false }
    }

    /// Tells hyper whether `T::poll_write_vectored` writes several buffers in one call (as a
    /// socket's `writev` does). futures-io cannot say so itself (its `AsyncWrite` has no
    /// `is_write_vectored`), and its default `poll_write_vectored` writes only the first
    /// non-empty buffer, so the default is `false`: hyper then flattens each message into one
    /// buffer before writing. Set `true` only for a `T` that overrides `poll_write_vectored`.
    ///
    /// ```
    /// use gmprt::net::hyper::HyperIo;
    /// use hyper::rt::Write;
    /// let io = HyperIo::new(Vec::<u8>::new()).vectored(true);   // any T; Vec is not futures-io
    /// assert!(io.is_vectored());
    /// ```
    pub fn vectored(mut self, vectored: bool) -> HyperIo<T> {
        self.vectored = vectored;
        self
    }

    /// Whether hyper is told that writes are vectored ([`HyperIo::vectored`]).
    pub fn is_vectored(&self) -> bool {
        self.vectored
    }

    /// The wrapped stream.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// The wrapped stream, mutably (e.g. to set socket options).
    pub fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// Unwraps the stream.
    ///
    /// ```
    /// use gmprt::net::hyper::HyperIo;
    /// assert_eq!(HyperIo::new(7).into_inner(), 7);
    /// ```
    pub fn into_inner(self) -> T {
        self.inner
    }
}

/// Bytes of the per-thread read buffer (below): hyper's first read buffer is 8 KiB and grows
/// for large bodies; 16 KiB covers the usual reads in one call.
const SCRATCH_LEN: usize = 16 * 1024;

std::thread_local! {
    /// Where reads land before they are copied into hyper's buffer. hyper hands out
    /// uninitialised memory and a futures-io read needs an initialised `&mut [u8]`: zeroing
    /// hyper's whole unfilled part on every read (8 KiB and more, even for a read that turns
    /// out to be `Pending`) was 1.8% of an HTTP server's CPU under wrk; copying the bytes that
    /// came (a request is ~100 B) costs a fraction of that, and one buffer per thread adds no
    /// memory per connection.
    static SCRATCH: std::cell::RefCell<Box<[u8]>> = std::cell::RefCell::new(vec![0; SCRATCH_LEN].into_boxed_slice());
}

/// A reader that claims more than it was given is broken; advancing by its count would expose
/// bytes past the slice. Refuse, as std's `BorrowedCursor` users do.
fn check_count(n: usize, len: usize) -> io::Result<()> {
    if n > len {
        return Err(io::Error::other(format!(
            "futures-io reader returned {n} bytes read into a {len}-byte buffer"
        )));
    }
    Ok(())
}

impl<T: futures_io::AsyncRead + Unpin> ::hyper::rt::Read for HyperIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ::hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let want = buf.remaining().min(SCRATCH_LEN);
        // The per-thread buffer, unless a read on this thread is already using it (a reader
        // that itself reads through a HyperIo): then hyper's own buffer, initialised.
        let scratch = SCRATCH.with(|s| {
            let Ok(mut s) = s.try_borrow_mut() else { return None };
            let dst = &mut s[..want];
            Some(Pin::new(&mut this.inner).poll_read(cx, dst).map(|r| {
                let n = r?;
                check_count(n, want)?;
                buf.put_slice(&dst[..n]);
                Ok(())
            }))
        });
        if let Some(r) = scratch {
            return r;
        }
        let dst = buf.initialize_unfilled();
        let len = dst.len();
        let n = ready!(Pin::new(&mut this.inner).poll_read(cx, dst))?;
        check_count(n, len)?;
        // SAFETY: `initialize_unfilled` initialised the whole unfilled part (`len` bytes), the
        // reader cannot de-initialise bytes through a `&mut [u8]`, and `n <= len` was checked.
        unsafe { buf.advance(n) };
        Poll::Ready(Ok(()))
    }
}

impl<T: futures_io::AsyncWrite + Unpin> ::hyper::rt::Write for HyperIo<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_close(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.vectored
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }
}

// ---------------------------------------------------------------------------------------------
// Executor

/// hyper's executor on gmprt: every future hyper hands it (an HTTP/2 connection's streams, a
/// client connection's background task) becomes a detached gmprt task.
///
/// [`GmprtExecutor::new`] spawns on whichever runtime is current where hyper calls `execute`
/// (hyper calls it while a connection is polled, so inside that connection's task): it panics
/// outside a runtime, as [`gmprt::spawn`](crate::spawn) does. [`GmprtExecutor::with_handle`]
/// spawns on one runtime from any thread. After that runtime has shut down, a future handed in
/// is dropped without running, as every spawn after shutdown is.
///
/// ```
/// use gmprt::net::hyper::GmprtExecutor;
/// use hyper::rt::Executor;
///
/// let rt = gmprt::Runtime::builder().procs(2).build().unwrap();
/// let got = rt.block_on(async {
///     let (tx, rx) = gmprt::runtime::chan::chan::<u32>(1);
///     GmprtExecutor::new().execute(async move { tx.send(42).await.unwrap() });
///     rx.recv().await
/// });
/// assert_eq!(got, Some(42));
/// ```
#[derive(Clone, Debug, Default)]
pub struct GmprtExecutor {
    handle: Option<Handle>,
}

impl GmprtExecutor {
    /// An executor that spawns on the runtime current at each `execute`.
    pub fn new() -> GmprtExecutor {
        GmprtExecutor { handle: None }
    }

    /// An executor that spawns on `handle`'s runtime, from any thread.
    ///
    /// ```
    /// use gmprt::net::hyper::GmprtExecutor;
    /// use hyper::rt::Executor;
    ///
    /// let rt = gmprt::Runtime::builder().procs(1).build().unwrap();
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// GmprtExecutor::with_handle(rt.handle()).execute(async move { tx.send(7).unwrap() });   // not in a task
    /// assert_eq!(rx.recv().unwrap(), 7);
    /// ```
    pub fn with_handle(handle: Handle) -> GmprtExecutor {
        GmprtExecutor { handle: Some(handle) }
    }
}

impl<F> ::hyper::rt::Executor<F> for GmprtExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    #[track_caller]
    fn execute(&self, fut: F) {
        // The JoinHandle is dropped: the task runs detached, as hyper expects.
        match &self.handle {
            Some(h) => drop(h.spawn(fut)),
            None => drop(crate::spawn(fut)),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Timer

/// hyper's timer on gmprt: its sleeps are gmprt [`Sleep`]s, in the per-P timer heaps, fired by
/// the scheduler like any task's `sleep` (never early; late by however long the M that should
/// fire it is busy). `reset` moves a sleep's deadline in place rather than allocating a new one.
///
/// Give it to a connection builder (`http1::Builder::new().timer(GmprtTimer)`) to enable hyper's
/// timeouts, e.g. `header_read_timeout`; the connection must then be polled inside a gmprt
/// runtime (see the [module docs](self#timers-need-a-runtime)).
///
/// ```
/// use gmprt::net::hyper::GmprtTimer;
/// use hyper::rt::Timer;
/// use std::time::{Duration, Instant};
///
/// let rt = gmprt::Runtime::builder().procs(1).build().unwrap();
/// let t0 = Instant::now();
/// rt.block_on(async {
///     let mut s = GmprtTimer.sleep(Duration::from_secs(3600));
///     GmprtTimer.reset(&mut s, Instant::now() + Duration::from_millis(1));   // an hour becomes 1 ms
///     s.await
/// });
/// assert!(t0.elapsed() >= Duration::from_millis(1));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct GmprtTimer;

impl ::hyper::rt::Timer for GmprtTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn ::hyper::rt::Sleep>> {
        Box::pin(GmprtSleep { inner: sleep(duration) })
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn ::hyper::rt::Sleep>> {
        Box::pin(GmprtSleep { inner: sleep_until(deadline) })
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn ::hyper::rt::Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<GmprtSleep>() {
            Some(s) => s.inner().reset(new_deadline),
            // Not one of ours (another timer's sleep): replace it, as hyper's default does.
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

/// A gmprt [`Sleep`] as a [`::hyper::rt::Sleep`] (the trait is hyper's and the type is the
/// runtime's, so neither crate can implement one for the other: this newtype does).
struct GmprtSleep {
    /// Structurally pinned: `Sleep` is `!Unpin` (its timer node's address is in the heap while
    /// registered); `GmprtSleep` is therefore `!Unpin` too, has no `Drop`, and never moves it.
    inner: Sleep,
}

impl GmprtSleep {
    fn inner(self: Pin<&mut Self>) -> Pin<&mut Sleep> {
        // SAFETY: structural pinning of `inner` (see the field): it is only reached through
        // this projection while pinned, and `GmprtSleep` neither moves it nor implements
        // `Drop` or `Unpin`.
        unsafe { self.map_unchecked_mut(|s| &mut s.inner) }
    }
}

impl Future for GmprtSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.inner().poll(cx)
    }
}

impl ::hyper::rt::Sleep for GmprtSleep {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that claims more bytes than the slice it got (a broken futures-io reader).
    struct Liar;

    impl futures_io::AsyncRead for Liar {
        fn poll_read(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
            Poll::Ready(Ok(buf.len() + 1))
        }
    }

    #[test]
    fn an_overlong_read_count_is_an_error_not_an_advance() {
        use ::hyper::rt::{Read, ReadBuf};
        let mut storage = [std::mem::MaybeUninit::<u8>::uninit(); 4];
        let mut buf = ReadBuf::uninit(&mut storage);
        let mut io = HyperIo::new(Liar);
        let waker = std::task::Waker::noop();
        let got = Pin::new(&mut io).poll_read(&mut Context::from_waker(waker), buf.unfilled());
        match got {
            Poll::Ready(Err(e)) => {
                assert!(e.to_string().contains("5 bytes read into a 4-byte buffer"), "{e}")
            }
            other => panic!("expected an error, got {other:?}"),
        }
        assert!(buf.filled().is_empty());
    }

    #[test]
    fn reset_keeps_our_sleep_and_replaces_a_foreign_one() {
        use ::hyper::rt::Timer;
        struct Foreign;
        impl Future for Foreign {
            type Output = ();
            fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
                Poll::Pending
            }
        }
        impl ::hyper::rt::Sleep for Foreign {}

        let at = Instant::now() + Duration::from_secs(60);
        let mut ours = GmprtTimer.sleep(Duration::from_secs(1));
        GmprtTimer.reset(&mut ours, at);
        let s = ours.as_mut().downcast_mut_pin::<GmprtSleep>().expect("still a GmprtSleep");
        assert_eq!(s.inner().deadline(), Some(at));

        let mut foreign: Pin<Box<dyn ::hyper::rt::Sleep>> = Box::pin(Foreign);
        GmprtTimer.reset(&mut foreign, at);
        let s = foreign.as_mut().downcast_mut_pin::<GmprtSleep>().expect("replaced by a GmprtSleep");
        assert_eq!(s.inner().deadline(), Some(at));
    }
}
