//! [`TcpListener`]: a listening TCP socket (Go's `net.TCPListener`).
//!
//! # Contract
//! * `bind` listens with the kernel's `somaxconn` backlog (Go's `maxListenerBacklog`) and
//!   `SO_REUSEADDR` (Go sets it on listeners too: a restarted server can bind while old
//!   connections sit in `TIME_WAIT`).
//! * `accept` parks the task until a connection arrives; the stream it returns is
//!   registered with the same runtime, non-blocking, with `TCP_NODELAY` set (Go's default).
//!   An aborted handshake (`ECONNABORTED`) is skipped, as Go's `accept` does; other errors
//!   (`EMFILE`: out of descriptors) are returned, naming the listener.
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
            // Go's default on accepted connections too; a failure leaves the OS's default.
            let _ = s.set_nodelay(true);
            Ok((TcpStream::new(s, Some(peer))?, peer))
        })
        .map_err(|e| op_error("accept on", self.inner.local_addr().ok(), e))
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
