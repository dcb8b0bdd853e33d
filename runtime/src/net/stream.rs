//! [`TcpStream`]: a TCP connection (Go's `net.TCPConn`).
//!
//! # Contract
//! * Every operation takes `&self`: one stream may be read by one task while another writes
//!   (as a Go `net.Conn` is shared by goroutines), and several tasks may even read (or write)
//!   at once — each parked one is woken by the socket's next readiness and retries
//!   (`netpoll/desc.rs`). Several writers' `write_all`s may interleave: Go serialises a
//!   conn's writes (its `fdMutex`), gmprt does not; give a stream one writer task, or guard
//!   it with a [`crate::sync::Mutex`].
//! * An operation that would block parks the task on the netpoller (never the M) and retries
//!   when the socket is ready; a read or write deadline (Go's `SetReadDeadline`) ends it with
//!   `TimedOut`. Futures are cancel-safe: dropping a pending `read` or `write` loses no data
//!   (an operation either completes within one poll or did nothing).
//! * Writes never raise `SIGPIPE`: plain writes use std's `send(MSG_NOSIGNAL)`, vectored ones
//!   `sendmsg(MSG_NOSIGNAL)` (std's vectored write is `writev`, which raises it). A write
//!   after the peer closed fails with `BrokenPipe` or `ConnectionReset`; a read after the end
//!   of the stream returns `Ok(0)`.
//! * Like Go, `connect` and `accept` set `TCP_NODELAY` (Nagle's algorithm off: small writes
//!   go out at once; [`TcpStream::set_nodelay`] turns it back on) and TCP keep-alive with a
//!   15 s period (a vanished peer is noticed; [`TcpStream::set_keepalive`],
//!   [`TcpStream::set_keepalive_period`]).
//! * Drop deregisters the socket from the netpoller, then closes it (field order).

use super::addr::{resolve, ToSocketAddrs};
use super::error::op_error;
use super::split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, WriteHalf};
use crate::netpoll::desc::Dir;
use crate::netpoll::registration::Registration;
use std::io::{self, IoSlice, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// `send`'s flags for vectored writes: never `SIGPIPE` (Linux and the BSDs; macOS sockets
/// carry `SO_NOSIGPIPE`, set by socket2 and std at creation).
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd", target_os = "netbsd"))]
const NOSIGNAL: libc::c_int = libc::MSG_NOSIGNAL;
#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd", target_os = "netbsd")))]
const NOSIGNAL: libc::c_int = 0;

/// A TCP connection (Go's `net.TCPConn`), registered with the runtime's netpoller.
///
/// ```
/// use gmprt_runtime::net::{TcpListener, TcpStream};
///
/// let rt = gmprt_runtime::Runtime::builder().procs(2).build().unwrap();
/// rt.block_on(async {
///     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
///     let addr = listener.local_addr().unwrap();
///     // An echo server: one task per connection, as a Go server has a goroutine per conn.
///     gmprt_runtime::spawn(async move {
///         let (conn, _peer) = listener.accept().await.unwrap();
///         let mut buf = [0u8; 1024];
///         loop {
///             let n = conn.read(&mut buf).await.unwrap();
///             if n == 0 {
///                 break; // the client shut down its side
///             }
///             conn.write_all(&buf[..n]).await.unwrap();
///         }
///     });
///     let conn = TcpStream::connect(addr).await.unwrap();
///     conn.write_all(b"hello").await.unwrap();
///     let mut got = [0u8; 5];
///     conn.read_exact(&mut got).await.unwrap();
///     assert_eq!(&got, b"hello");
/// });
/// ```
#[derive(Debug)]
pub struct TcpStream {
    // Declared first: deregistered before the socket closes (a closed descriptor's number can
    // be reused at once by another socket, which must not inherit this registration).
    reg: Registration,
    inner: std::net::TcpStream,
    /// The peer, known at `connect` or `accept` (for errors, and after a reset).
    peer: Option<SocketAddr>,
}

impl TcpStream {
    /// Connects to `addr`, parking the task (not the M) while the handshake runs. A host name
    /// is resolved first ([`lookup_host`](super::lookup_host)); like Go's dialer, each address
    /// is tried in turn until one connects, and if none does the last error is returned, naming
    /// its address (`connect to 127.0.0.1:1: Connection refused (os error 111)`).
    ///
    /// ```
    /// # let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
    /// # rt.block_on(async {
    /// use gmprt_runtime::net::{TcpListener, TcpStream};
    /// let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    /// let port = listener.local_addr().unwrap().port();
    /// let conn = TcpStream::connect(("localhost", port)).await.unwrap();
    /// assert_eq!(conn.peer_addr().unwrap().port(), port);
    /// # });
    /// ```
    ///
    /// # Errors
    /// The resolver's; per address the OS's (`ConnectionRefused`, `TimedOut`, ...); and
    /// outside a gmprt runtime an error saying so.
    pub async fn connect(addr: impl ToSocketAddrs) -> io::Result<TcpStream> {
        let mut last = None;
        for a in resolve(&addr)? {
            match connect_one(a).await {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(op_error("connect to", Some(a), e)),
            }
        }
        Err(last.expect("resolve returns at least one address"))
    }

    /// Wraps a connected std stream: makes it non-blocking and registers it with the current
    /// runtime's netpoller. Its options (`TCP_NODELAY` included) are left as they are.
    ///
    /// # Errors
    /// Outside a gmprt runtime, or when the poller refuses it.
    pub fn from_std(inner: std::net::TcpStream) -> io::Result<TcpStream> {
        let peer = inner.peer_addr().ok();
        TcpStream::new(inner, peer)
    }

    /// Deregisters the stream and returns it as a blocking std stream (Go's `File`). Its
    /// deadlines are dropped.
    ///
    /// # Errors
    /// When the socket cannot be made blocking again.
    pub fn into_std(self) -> io::Result<std::net::TcpStream> {
        let TcpStream { reg, inner, .. } = self;
        drop(reg);
        inner.set_nonblocking(false)?;
        Ok(inner)
    }

    /// Registers a connected non-blocking-capable socket.
    pub(crate) fn new(inner: std::net::TcpStream, peer: Option<SocketAddr>) -> io::Result<TcpStream> {
        inner.set_nonblocking(true)?;
        let reg = Registration::new(inner.as_raw_fd())?;
        Ok(TcpStream { reg, inner, peer })
    }

    /// Wraps `e` with the operation and the peer.
    fn err(&self, op: &'static str, e: io::Error) -> io::Error {
        op_error(op, self.peer, e)
    }

    /// Reads into `buf`, returning how many bytes came; `Ok(0)` at the end of the stream (the
    /// peer shut down its writing side) or at once when `buf` is empty — before any readiness
    /// or deadline check, as Go's `Read` (its `TestZeroByteRead`).
    ///
    /// # Errors
    /// `ConnectionReset` and the other OS errors, `TimedOut` past the read deadline.
    pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        std::future::poll_fn(|cx| self.poll_read_priv(cx, buf)).await
    }

    /// Reads exactly `buf.len()` bytes.
    ///
    /// # Errors
    /// As [`read`](Self::read); `UnexpectedEof` when the stream ends first (how many bytes
    /// came is in the message; they are in `buf`).
    pub async fn read_exact(&self, buf: &mut [u8]) -> io::Result<()> {
        let mut have = 0;
        while have < buf.len() {
            match self.read(&mut buf[have..]).await? {
                0 => {
                    let e = io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("the stream ended after {have} of {} bytes", buf.len()),
                    );
                    return Err(self.err("read from", e));
                }
                n => have += n,
            }
        }
        Ok(())
    }

    /// Reads into `buf` without taking the bytes out of the socket (`MSG_PEEK`): the next read
    /// returns them again. An empty `buf` is `Ok(0)` at once, as for [`read`](Self::read).
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0); // as `read`: nothing to wait for
        }
        self.reg.io(Dir::Read, || self.inner.peek(buf)).await.map_err(|e| self.err("peek at", e))
    }

    /// Writes from `buf`, returning how many bytes the kernel took (at least one, unless `buf`
    /// is empty).
    ///
    /// # Errors
    /// `BrokenPipe` / `ConnectionReset` once the peer closed, `TimedOut` past the write
    /// deadline, and the other OS errors.
    pub async fn write(&self, buf: &[u8]) -> io::Result<usize> {
        std::future::poll_fn(|cx| self.poll_write_priv(cx, buf)).await
    }

    /// Writes all of `buf` (Go's `Write`, which loops until done).
    ///
    /// # Errors
    /// As [`write`](Self::write); on an error some prefix of `buf` may have been sent.
    pub async fn write_all(&self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.write(buf).await? {
                0 => return Err(self.err("write to", io::ErrorKind::WriteZero.into())),
                n => buf = &buf[n..],
            }
        }
        Ok(())
    }

    /// Shuts down the reading side, the writing side (Go's `CloseWrite`: the peer reads the
    /// end of the stream) or both. It does not close the socket; dropping the stream does.
    ///
    /// # Errors
    /// The OS's (`NotConnected` after a reset).
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.inner.shutdown(how).map_err(|e| self.err("shutdown", e))
    }

    /// The remote address (Go's `RemoteAddr`): the one connected to or accepted from, still
    /// known after a reset.
    ///
    /// # Errors
    /// Only for a stream from [`from_std`](Self::from_std) whose peer the OS no longer knows.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.peer.map_or_else(|| self.inner.peer_addr(), Ok)
    }

    /// The local address (Go's `LocalAddr`).
    ///
    /// # Errors
    /// The OS's.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// Sets `TCP_NODELAY` (true: Nagle's algorithm off, which is how `connect` and `accept`
    /// leave it, as Go's `SetNoDelay(true)` default).
    ///
    /// # Errors
    /// The OS's.
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.inner.set_nodelay(nodelay)
    }

    /// Whether `TCP_NODELAY` is set.
    ///
    /// # Errors
    /// The OS's.
    pub fn nodelay(&self) -> io::Result<bool> {
        self.inner.nodelay()
    }

    /// Turns TCP keep-alive on or off (Go's `SetKeepAlive`). `connect` and `accept` turn it on
    /// with a 15 s period, as Go's dialer and listener do; off, a peer that vanished without a
    /// FIN (its host crashed, a cable pulled) leaves an idle connection open for ever.
    ///
    /// ```
    /// # let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
    /// # rt.block_on(async {
    /// use gmprt_runtime::net::{TcpListener, TcpStream};
    /// use std::time::Duration;
    /// let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    /// let conn = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
    /// assert!(conn.keepalive().unwrap()); // Go's default
    /// conn.set_keepalive_period(Duration::from_secs(30)).unwrap();
    /// conn.set_keepalive(false).unwrap();
    /// assert!(!conn.keepalive().unwrap());
    /// # });
    /// ```
    ///
    /// # Errors
    /// The OS's.
    pub fn set_keepalive(&self, on: bool) -> io::Result<()> {
        socket2::SockRef::from(&self.inner).set_keepalive(on)
    }

    /// Whether TCP keep-alive is on (`SO_KEEPALIVE`).
    ///
    /// # Errors
    /// The OS's.
    pub fn keepalive(&self) -> io::Result<bool> {
        socket2::SockRef::from(&self.inner).keepalive()
    }

    /// Turns keep-alive on with a first probe after `period` of silence and one every
    /// `period` after that (Go's `SetKeepAlivePeriod`; the kernel counts whole seconds).
    ///
    /// # Errors
    /// `InvalidInput` for a period under one second (the kernel's unit: it would round to
    /// zero, which it refuses); the OS's.
    pub fn set_keepalive_period(&self, period: Duration) -> io::Result<()> {
        if period < Duration::from_secs(1) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("keep-alive period {period:?} is under the kernel's unit of one second"),
            ));
        }
        set_keepalive_period(&self.inner, period)
    }

    /// Sets the size of the socket's receive buffer (Go's `SetReadBuffer`, `SO_RCVBUF`; Linux
    /// doubles the value for its bookkeeping and caps it at `net.core.rmem_max`).
    ///
    /// # Errors
    /// The OS's.
    pub fn set_read_buffer(&self, bytes: usize) -> io::Result<()> {
        socket2::SockRef::from(&self.inner).set_recv_buffer_size(bytes)
    }

    /// The size of the receive buffer, as the kernel reports it (`SO_RCVBUF`).
    ///
    /// # Errors
    /// The OS's.
    pub fn read_buffer(&self) -> io::Result<usize> {
        socket2::SockRef::from(&self.inner).recv_buffer_size()
    }

    /// Sets the size of the socket's send buffer (Go's `SetWriteBuffer`, `SO_SNDBUF`; doubled
    /// and capped by Linux as the receive buffer).
    ///
    /// # Errors
    /// The OS's.
    pub fn set_write_buffer(&self, bytes: usize) -> io::Result<()> {
        socket2::SockRef::from(&self.inner).set_send_buffer_size(bytes)
    }

    /// The size of the send buffer, as the kernel reports it (`SO_SNDBUF`).
    ///
    /// # Errors
    /// The OS's.
    pub fn write_buffer(&self) -> io::Result<usize> {
        socket2::SockRef::from(&self.inner).send_buffer_size()
    }

    /// Sets the IP time-to-live of outgoing packets.
    ///
    /// # Errors
    /// The OS's.
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.inner.set_ttl(ttl)
    }

    /// The IP time-to-live of outgoing packets.
    ///
    /// # Errors
    /// The OS's.
    pub fn ttl(&self) -> io::Result<u32> {
        self.inner.ttl()
    }

    /// Sets `SO_LINGER` (Go's `SetLinger`): `Some(Duration::ZERO)` makes dropping the stream
    /// discard unsent data and reset the connection (the peer's next read or write fails with
    /// `ConnectionReset`); `None` (the default) closes in the background.
    ///
    /// # Errors
    /// The OS's.
    pub fn set_linger(&self, linger: Option<Duration>) -> io::Result<()> {
        socket2::SockRef::from(&self.inner).set_linger(linger)
    }

    /// The `SO_LINGER` setting.
    ///
    /// # Errors
    /// The OS's.
    pub fn linger(&self) -> io::Result<Option<Duration>> {
        socket2::SockRef::from(&self.inner).linger()
    }

    /// Sets the read deadline (Go's `SetReadDeadline`): once `at` has passed, reads (and
    /// peeks) fail with `TimedOut` — at once if it has passed already, and those parked when
    /// it passes are woken to fail. `None` clears it. A new deadline applies to the reads
    /// already parked: extending it lets them wait on.
    ///
    /// ```
    /// # let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
    /// # rt.block_on(async {
    /// use gmprt_runtime::net::{TcpListener, TcpStream};
    /// use std::time::{Duration, Instant};
    /// let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    /// let conn = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
    /// conn.set_read_deadline(Some(Instant::now() + Duration::from_millis(10)));
    /// let err = conn.read(&mut [0u8; 8]).await.unwrap_err(); // nobody writes
    /// assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    /// # });
    /// ```
    pub fn set_read_deadline(&self, at: Option<Instant>) {
        self.reg.set_deadline(Dir::Read, at);
    }

    /// Sets the write deadline (Go's `SetWriteDeadline`), as
    /// [`set_read_deadline`](Self::set_read_deadline) for writes: a write parked on a full
    /// send buffer when it passes fails with `TimedOut`.
    pub fn set_write_deadline(&self, at: Option<Instant>) {
        self.reg.set_deadline(Dir::Write, at);
    }

    /// Sets both deadlines (Go's `SetDeadline`).
    pub fn set_deadline(&self, at: Option<Instant>) {
        self.set_read_deadline(at);
        self.set_write_deadline(at);
    }

    /// The read deadline, if one is set.
    pub fn read_deadline(&self) -> Option<Instant> {
        self.reg.deadline(Dir::Read)
    }

    /// The write deadline, if one is set.
    pub fn write_deadline(&self) -> Option<Instant> {
        self.reg.deadline(Dir::Write)
    }

    /// Borrows the stream as a read half and a write half, for APIs that want the two
    /// directions as separate objects. (Every method takes `&self`, so the halves add no
    /// power: two tasks may share `&TcpStream` directly.)
    pub fn split(&self) -> (ReadHalf<'_>, WriteHalf<'_>) {
        (ReadHalf::new(self), WriteHalf::new(self))
    }

    /// Splits the stream into owned halves (sharing it through an `Arc`) that can move to two
    /// tasks. Dropping the write half shuts the writing side down (the peer reads the end of
    /// the stream); [`OwnedReadHalf::reunite`] puts them back together.
    ///
    /// ```
    /// # let rt = gmprt_runtime::Runtime::builder().procs(2).build().unwrap();
    /// # rt.block_on(async {
    /// use gmprt_runtime::net::{TcpListener, TcpStream};
    /// let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    /// let conn = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
    /// let (peer, _) = listener.accept().await.unwrap();
    /// let (rd, wr) = conn.into_split();
    /// let writer = gmprt_runtime::spawn(async move { wr.write_all(b"ping").await });
    /// let mut got = [0u8; 4];
    /// peer.read_exact(&mut got).await.unwrap();
    /// writer.await.unwrap().unwrap(); // the write half is dropped: its side is shut down
    /// assert_eq!(peer.read(&mut got).await.unwrap(), 0);
    /// peer.write_all(b"pong").await.unwrap();
    /// rd.read_exact(&mut got).await.unwrap();
    /// assert_eq!(&got, b"pong");
    /// # });
    /// ```
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        let s = Arc::new(self);
        (OwnedReadHalf::new(s.clone()), OwnedWriteHalf::new(s))
    }

    /// The read, as a poll (for `read` and the futures-io impls).
    ///
    /// An empty `buf` is `Ok(0)` at once, before any readiness or deadline check: there is
    /// nothing to wait for (std's `read` and Go's `TestZeroByteRead` say the same). Waiting
    /// would park an idle connection's reader for ever: a read that takes no bytes makes no
    /// progress for the readiness protocol to report.
    pub(crate) fn poll_read_priv(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let want = buf.len();
        self.reg
            .poll_stream_io(cx, Dir::Read, want, || (&self.inner).read(buf))
            .map_err(|e| self.err("read from", e))
    }

    /// The write, as a poll. std's `write` is `send(MSG_NOSIGNAL)` on Linux and the BSDs
    /// (checked: it returns `EPIPE` with `SIGPIPE` at its default action, where `writev`
    /// kills the process).
    pub(crate) fn poll_write_priv(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.reg
            .poll_stream_io(cx, Dir::Write, buf.len(), || (&self.inner).write(buf))
            .map_err(|e| self.err("write to", e))
    }

    /// A vectored write, as a poll: `sendmsg` with `MSG_NOSIGNAL` (not std's `writev`).
    pub(crate) fn poll_write_vectored_priv(
        &self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let sock = socket2::SockRef::from(&self.inner);
        let want = bufs.iter().map(|b| b.len()).sum();
        self.reg
            .poll_stream_io(cx, Dir::Write, want, || sock.send_vectored_with_flags(bufs, NOSIGNAL))
            .map_err(|e| self.err("write to", e))
    }

    /// `poll_close`: shuts the writing side down.
    pub(crate) fn shutdown_write(&self) -> io::Result<()> {
        self.shutdown(Shutdown::Write)
    }
}

/// One attempt of `connect`: a non-blocking socket, `connect`, then registered; the task parks
/// until the socket is writable and reads the outcome (Go's `fd.connect`).
///
/// Registered **after** `connect` started, as Go's `netFD.connect` (`pfd.Init` after the
/// `connect` call) and mio: a TCP socket that has not started connecting is in `TCP_CLOSE`,
/// which the kernel reports as `EPOLLOUT | EPOLLHUP`, and a netpoller that looked in that
/// window took the hang-up for a final EOF — 200 idle readers then left one M spinning on
/// `recv` → `EAGAIN` for ever (issue 23; `tests/net_errors.rs`, `idle_connected_readers_park`).
/// In `SYN_SENT` the kernel reports nothing until the handshake ends, either way.
async fn connect_one(addr: SocketAddr) -> io::Result<TcpStream> {
    let sock = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None)?;
    sock.set_nonblocking(true)?;
    let in_progress = match sock.connect(&addr.into()) {
        Ok(()) => false,
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => true,
        Err(e) => return Err(e),
    };
    let reg = Registration::new(sock.as_raw_fd())?;
    if in_progress {
        // Writable means the handshake ended: connected (a peer address), or failed
        // (SO_ERROR). Neither yet: spurious readiness, wait again.
        reg.io(Dir::Write, || match sock.peer_addr() {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => match sock.take_error()? {
                Some(e) => Err(e),
                None => Err(io::ErrorKind::WouldBlock.into()),
            },
            Err(e) => Err(e),
        })
        .await?;
    }
    let inner: std::net::TcpStream = sock.into();
    set_go_defaults(&inner);
    Ok(TcpStream { reg, inner, peer: Some(addr) })
}

/// Go's keep-alive period for dialed and accepted connections (`net.defaultTCPKeepAlive`,
/// 15 s): the first probe after 15 s of silence, then one every 15 s — a peer that vanished
/// (unplugged, its host crashed) is noticed in about two minutes instead of the kernel's two
/// hours, and a NAT on the path keeps the connection's mapping.
pub(crate) const KEEPALIVE_PERIOD: Duration = Duration::from_secs(15);

/// Go's defaults for a new connection (`newTCPConn` and the dialer's / listener's
/// `KeepAlive`): `TCP_NODELAY` on (no Nagle delay) and keep-alive on with
/// [`KEEPALIVE_PERIOD`]. A failure leaves the OS's default, as in Go.
pub(crate) fn set_go_defaults(s: &std::net::TcpStream) {
    let _ = s.set_nodelay(true);
    let _ = set_keepalive_period(s, KEEPALIVE_PERIOD);
}

/// Keep-alive on, first probe after `period` of silence and one every `period` after (Go's
/// `setKeepAlivePeriod`: idle time and interval alike).
fn set_keepalive_period(s: &std::net::TcpStream, period: Duration) -> io::Result<()> {
    let ka = socket2::TcpKeepalive::new().with_time(period);
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd", target_os = "macos"))]
    let ka = ka.with_interval(period);
    socket2::SockRef::from(s).set_tcp_keepalive(&ka)
}

impl AsRawFd for TcpStream {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.as_raw_fd()
    }
}

impl AsFd for TcpStream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inner.as_fd()
    }
}
