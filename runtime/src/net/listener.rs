//! [`TcpListener`]: a listening TCP socket (Go's `net.TCPListener`).
//!
//! # Contract
//! * `bind` listens with the kernel's `somaxconn` backlog (Go's `maxListenerBacklog`) and
//!   `SO_REUSEADDR` (Go sets it on listeners too: a restarted server can bind while old
//!   connections sit in `TIME_WAIT`).
//! * `accept` parks the task until a connection arrives; the stream it returns is
//!   registered with the same runtime, non-blocking, with `TCP_NODELAY` set (Go's default).
//!   An aborted handshake (`ECONNABORTED`) is skipped, as Go's `accept` does; other errors
//!   (`EMFILE`: out of descriptors) are returned, naming the listener. A server that must
//!   outlive them uses `accept_retrying` (Go's `net/http` back-off: 5 ms doubling to 1 s on
//!   `EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`).
//! * A deadline (`set_deadline`, Go's `SetDeadline`) is checked before readiness: past it,
//!   accept fails with `TimedOut` even with a connection queued.
//! * Drop deregisters, then closes.

use super::addr::{resolve, ToSocketAddrs};
use super::error::op_error;
use super::TcpStream;
use crate::netpoll::desc::Dir;
use crate::netpoll::registration::Registration;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// `accept_retrying`'s first wait after a temporary error, and its cap: Go's `net/http`
/// (`tempDelay`: 5 ms, doubled per failure in a row, at most 1 s) — long enough for a
/// connection's task to finish and free its descriptor, short enough not to be noticed.
const ACCEPT_RETRY_FIRST: Duration = Duration::from_millis(5);
const ACCEPT_RETRY_MAX: Duration = Duration::from_secs(1);

/// Whether an accept error passes by itself once the process frees resources: `EMFILE` and
/// `ENFILE` (out of descriptors: the connection stays queued in the kernel until one is
/// free), `ENOBUFS` and `ENOMEM` (out of socket buffers or memory), `ECONNABORTED` (the peer
/// gave up; [`TcpListener::accept`] already skips it). A server loop waits and accepts again
/// rather than ending ([`TcpListener::accept_retrying`] does).
///
/// ```
/// use gmprt_runtime::net::is_temporary_accept_error;
/// assert!(is_temporary_accept_error(&std::io::Error::from_raw_os_error(libc::EMFILE)));
/// assert!(!is_temporary_accept_error(&std::io::Error::from_raw_os_error(libc::EBADF)));
/// ```
pub fn is_temporary_accept_error(e: &io::Error) -> bool {
    let code = e.raw_os_error().or_else(|| e.get_ref()?.downcast_ref::<super::OpError>()?.raw_os_error());
    matches!(code, Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM | libc::ECONNABORTED))
}

/// A TCP socket server, listening for connections (Go's `net.TCPListener`).
///
/// ```
/// use gmprt_runtime::net::{TcpListener, TcpStream};
///
/// let rt = gmprt_runtime::Runtime::builder().procs(2).build().unwrap();
/// rt.block_on(async {
///     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
///     let addr = listener.local_addr().unwrap();
///     let client = gmprt_runtime::spawn(async move { TcpStream::connect(addr).await.unwrap() });
///     let (conn, peer) = listener.accept().await.unwrap();
///     let client = client.await.unwrap();
///     assert_eq!(peer, client.local_addr().unwrap());
///     assert_eq!(conn.peer_addr().unwrap(), peer);
/// });
/// ```
#[derive(Debug)]
pub struct TcpListener {
    // Declared first: deregistered before the socket closes.
    reg: Registration,
    inner: std::net::TcpListener,
}

impl TcpListener {
    /// Binds to `addr` and listens (Go's `net.Listen("tcp", addr)`). A host name is resolved
    /// first and each address tried in turn; the last failure is returned, naming its
    /// address (`bind 127.0.0.1:8080: Address already in use (os error 98)`). Port 0 picks a
    /// free port ([`local_addr`](Self::local_addr) says which).
    ///
    /// # Errors
    /// The resolver's, the OS's (`AddrInUse`, `PermissionDenied`, ...), and outside a gmprt
    /// runtime an error saying so.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        let mut last = None;
        for a in resolve(&addr)? {
            match bind_listener(a).and_then(TcpListener::from_std) {
                Ok(l) => return Ok(l),
                Err(e) => last = Some(op_error("bind", Some(a), e)),
            }
        }
        Err(last.expect("resolve returns at least one address"))
    }

    /// Wraps a listener bound elsewhere: makes it non-blocking and registers it with the
    /// current runtime's netpoller.
    ///
    /// # Errors
    /// Outside a gmprt runtime, or when the poller refuses it.
    pub fn from_std(inner: std::net::TcpListener) -> io::Result<TcpListener> {
        inner.set_nonblocking(true)?;
        let reg = Registration::new(inner.as_raw_fd())?;
        Ok(TcpListener { reg, inner })
    }

    /// Deregisters the listener and returns it as a blocking std listener.
    ///
    /// # Errors
    /// When the socket cannot be made blocking again.
    pub fn into_std(self) -> io::Result<std::net::TcpListener> {
        let TcpListener { reg, inner } = self;
        drop(reg);
        inner.set_nonblocking(false)?;
        Ok(inner)
    }

    /// Accepts a connection (Go's `Accept`): the stream and the peer's address.
    ///
    /// # Errors
    /// The OS's (`EMFILE` when the process is out of descriptors), naming the listener.
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        std::future::poll_fn(|cx| self.poll_accept(cx)).await
    }

    /// [`accept`](Self::accept) as a poll, for hand-written futures and servers: `Pending`
    /// parks the task until a connection may be waiting.
    ///
    /// # Errors
    /// As [`accept`](Self::accept).
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(TcpStream, SocketAddr)>> {
        let r = self.reg.poll_io(cx, Dir::Read, || loop {
            match self.inner.accept() {
                // The peer gave up between its SYN and our accept: take the next (Go does).
                Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => continue,
                r => return r,
            }
        });
        r.map(|r| {
            let (s, peer) = r?;
            // Go's defaults on accepted connections too (`newTCPConn`); a failure leaves the
            // OS's default, as in Go.
            super::stream::set_go_defaults(&s);
            Ok((TcpStream::new(s, Some(peer))?, peer))
        })
        .map_err(|e: io::Error| {
            let e = match e.kind() {
                // The registration's deadline error speaks of reads; a listener's is Go's
                // `SetDeadline` on accepts.
                io::ErrorKind::TimedOut => {
                    io::Error::new(io::ErrorKind::TimedOut, "accept deadline exceeded (set_deadline)")
                }
                _ => e,
            };
            op_error("accept on", self.inner.local_addr().ok(), e)
        })
    }

    /// Accepts a connection, riding out the errors a server recovers from by waiting (Go's
    /// `net/http` `Server.Serve` loop): out of descriptors (`EMFILE`, `ENFILE`), out of
    /// buffers or memory (`ENOBUFS`, `ENOMEM`) — see [`is_temporary_accept_error`]. For each
    /// it calls `on_retry(&error, delay)` (log it: nothing is dropped silently), sleeps
    /// `delay` — 5 ms, doubling to 1 s, as Go — and tries again; the connection that could
    /// not be taken stays queued in the kernel and is accepted once a descriptor is free. Any
    /// other error (a deadline, a closed runtime) is returned.
    ///
    /// ```
    /// # let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
    /// # rt.block_on(async {
    /// use gmprt_runtime::net::{TcpListener, TcpStream};
    /// let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    /// let _client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
    /// let (conn, peer) = listener
    ///     .accept_retrying(|e, delay| eprintln!("accept: {e}; retrying in {delay:?}"))
    ///     .await
    ///     .unwrap();
    /// assert_eq!(conn.peer_addr().unwrap(), peer);
    /// # });
    /// ```
    ///
    /// # Errors
    /// As [`accept`](Self::accept), less the temporary ones.
    pub async fn accept_retrying(
        &self,
        mut on_retry: impl FnMut(&io::Error, Duration),
    ) -> io::Result<(TcpStream, SocketAddr)> {
        let mut delay = ACCEPT_RETRY_FIRST;
        loop {
            match self.accept().await {
                Err(e) if is_temporary_accept_error(&e) => {
                    on_retry(&e, delay);
                    crate::time::sleep(delay).await;
                    delay = (delay * 2).min(ACCEPT_RETRY_MAX);
                }
                r => return r,
            }
        }
    }

    /// Sets the deadline for accepts (Go's `TCPListener.SetDeadline`): once `at` has passed,
    /// `accept` fails with `TimedOut` — at once, even with a connection queued (the deadline
    /// is checked first, as Go's), and an accept parked when it passes is woken to fail.
    /// `None` clears it; a new deadline applies to the accepts already parked.
    ///
    /// ```
    /// # let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
    /// # rt.block_on(async {
    /// use gmprt_runtime::net::TcpListener;
    /// use std::time::{Duration, Instant};
    /// let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    /// listener.set_deadline(Some(Instant::now() + Duration::from_millis(10)));
    /// let err = listener.accept().await.unwrap_err(); // nobody connects
    /// assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    /// # });
    /// ```
    pub fn set_deadline(&self, at: Option<Instant>) {
        self.reg.set_deadline(Dir::Read, at);
    }

    /// The accept deadline, if one is set.
    pub fn deadline(&self) -> Option<Instant> {
        self.reg.deadline(Dir::Read)
    }

    /// The address it listens on.
    ///
    /// # Errors
    /// The OS's.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// Sets the IP time-to-live of the packets of accepted connections.
    ///
    /// # Errors
    /// The OS's.
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.inner.set_ttl(ttl)
    }

    /// The IP time-to-live.
    ///
    /// # Errors
    /// The OS's.
    pub fn ttl(&self) -> io::Result<u32> {
        self.inner.ttl()
    }
}

impl AsRawFd for TcpListener {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.as_raw_fd()
    }
}

impl AsFd for TcpListener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inner.as_fd()
    }
}

/// Go's `maxListenerBacklog`: the kernel's `somaxconn` (std's listeners use 128, which a burst
/// of connects overflows: the dropped SYNs are retried after a second).
fn backlog() -> i32 {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(4096)
}

fn bind_listener(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    let s = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None)?;
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    s.listen(backlog())?;
    Ok(s.into())
}
