//! [`UdpSocket`]: datagrams (Go's `net.UDPConn`).
//!
//! # Contract
//! * Every operation takes `&self`: one socket may send from one task and receive in another.
//! * `send`/`recv` need a peer set by [`UdpSocket::connect`] (which only filters and sets the
//!   default destination: UDP has no handshake); `send_to`/`recv_from` work either way.
//! * A receive parks the task until a datagram arrives; a datagram larger than the buffer is
//!   truncated to it (the rest is lost, as with every UDP API). A send parks only while the
//!   socket's send buffer is full.
//! * Deadlines as [`TcpStream`](super::TcpStream)'s: `TimedOut` once passed.
//! * Errors name the operation and the address; on a connected socket an earlier datagram's
//!   ICMP "port unreachable" comes back as `ConnectionRefused` from a later `recv` or `send`.
//! * Drop deregisters, then closes.

use super::addr::{resolve, ToSocketAddrs};
use super::error::op_error;
use crate::netpoll::desc::Dir;
use crate::netpoll::registration::Registration;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::time::Instant;

/// A UDP socket (Go's `net.UDPConn`), registered with the runtime's netpoller.
///
/// ```
/// use gmprt_runtime::net::UdpSocket;
///
/// let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(async {
///     let a = UdpSocket::bind("127.0.0.1:0").unwrap();
///     let b = UdpSocket::bind("127.0.0.1:0").unwrap();
///     a.send_to(b"ping", b.local_addr().unwrap()).await.unwrap();
///     let mut buf = [0u8; 16];
///     let (n, from) = b.recv_from(&mut buf).await.unwrap();
///     assert_eq!((&buf[..n], from), (&b"ping"[..], a.local_addr().unwrap()));
/// });
/// ```
#[derive(Debug)]
pub struct UdpSocket {
    // Declared first: deregistered before the socket closes.
    reg: Registration,
    inner: std::net::UdpSocket,
}

impl UdpSocket {
    /// Binds to `addr` (Go's `net.ListenUDP`); each resolved address is tried in turn, and the
    /// last failure is returned naming its address. Port 0 picks a free port.
    ///
    /// # Errors
    /// The resolver's, the OS's (`AddrInUse`, ...), and outside a gmprt runtime an error
    /// saying so.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        let mut last = None;
        for a in resolve(&addr)? {
            match std::net::UdpSocket::bind(a).and_then(UdpSocket::from_std) {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(op_error("bind", Some(a), e)),
            }
        }
        Err(last.expect("resolve returns at least one address"))
    }

    /// Wraps a std socket: makes it non-blocking and registers it with the current runtime.
    ///
    /// # Errors
    /// Outside a gmprt runtime, or when the poller refuses it.
    pub fn from_std(inner: std::net::UdpSocket) -> io::Result<UdpSocket> {
        inner.set_nonblocking(true)?;
        let reg = Registration::new(inner.as_raw_fd())?;
        Ok(UdpSocket { reg, inner })
    }

    /// Deregisters the socket and returns it as a blocking std socket.
    ///
    /// # Errors
    /// When the socket cannot be made blocking again.
    pub fn into_std(self) -> io::Result<std::net::UdpSocket> {
        let UdpSocket { reg, inner } = self;
        drop(reg);
        inner.set_nonblocking(false)?;
        Ok(inner)
    }

    /// Sets the default destination of [`send`](Self::send) and the only source
    /// [`recv`](Self::recv) accepts (Go's `DialUDP`). A host name is resolved first; the
    /// first address that the OS accepts is used.
    ///
    /// # Errors
    /// The resolver's and the OS's, naming the address.
    pub async fn connect(&self, addr: impl ToSocketAddrs) -> io::Result<()> {
        let mut last = None;
        for a in resolve(&addr)? {
            match self.inner.connect(a) {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(op_error("connect to", Some(a), e)),
            }
        }
        Err(last.expect("resolve returns at least one address"))
    }

    /// Sends `buf` as one datagram to the connected peer; returns its length.
    ///
    /// # Errors
    /// `NotConnected` without a peer, `ConnectionRefused` after the peer's port was found
    /// closed, `TimedOut` past the write deadline, the OS's others.
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.reg.io(Dir::Write, || self.inner.send(buf)).await.map_err(|e| self.err("send to", None, e))
    }

    /// Receives one datagram from the connected peer into `buf`; returns its length (cut to
    /// `buf`'s).
    ///
    /// # Errors
    /// As [`send`](Self::send), with the read deadline.
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.reg.io(Dir::Read, || self.inner.recv(buf)).await.map_err(|e| self.err("recv from", None, e))
    }

    /// Sends `buf` as one datagram to `target`.
    ///
    /// # Errors
    /// The OS's (naming `target`), `TimedOut` past the write deadline.
    pub async fn send_to(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        self.reg
            .io(Dir::Write, || self.inner.send_to(buf, target))
            .await
            .map_err(|e| self.err("send to", Some(target), e))
    }

    /// Receives one datagram into `buf`: its length (cut to `buf`'s) and its sender.
    ///
    /// # Errors
    /// The OS's, `TimedOut` past the read deadline.
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.reg
            .io(Dir::Read, || self.inner.recv_from(buf))
            .await
            .map_err(|e| op_error("recv on", self.inner.local_addr().ok(), e))
    }

    /// Wraps `e` with `op` and the address: `addr`, else the peer, else the local address.
    fn err(&self, op: &'static str, addr: Option<SocketAddr>, e: io::Error) -> io::Error {
        let addr = addr.or_else(|| self.inner.peer_addr().ok()).or_else(|| self.inner.local_addr().ok());
        op_error(op, addr, e)
    }

    /// The connected peer's address.
    ///
    /// # Errors
    /// `NotConnected` when no peer is set.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.peer_addr()
    }

    /// The local address.
    ///
    /// # Errors
    /// The OS's.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// Sets `SO_BROADCAST`: whether datagrams may go to a broadcast address.
    ///
    /// # Errors
    /// The OS's.
    pub fn set_broadcast(&self, on: bool) -> io::Result<()> {
        self.inner.set_broadcast(on)
    }

    /// Whether `SO_BROADCAST` is set.
    ///
    /// # Errors
    /// The OS's.
    pub fn broadcast(&self) -> io::Result<bool> {
        self.inner.broadcast()
    }

    /// Sets the IP time-to-live of outgoing datagrams.
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

    /// Sets the read deadline: receives fail with `TimedOut` once it has passed (see
    /// [`TcpStream::set_read_deadline`](super::TcpStream::set_read_deadline)).
    pub fn set_read_deadline(&self, at: Option<Instant>) {
        self.reg.set_deadline(Dir::Read, at);
    }

    /// Sets the write deadline: sends fail with `TimedOut` once it has passed.
    pub fn set_write_deadline(&self, at: Option<Instant>) {
        self.reg.set_deadline(Dir::Write, at);
    }

    /// Sets both deadlines.
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
}

impl AsRawFd for UdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.as_raw_fd()
    }
}

impl AsFd for UdpSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inner.as_fd()
    }
}
