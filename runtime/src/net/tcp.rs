//! TCP: [`TcpListener`] and [`TcpStream`].

use crate::netpoll::desc::Dir;
use crate::netpoll::registration::Registration;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::AsRawFd;

/// A TCP socket server, listening for connections (Go's `net.Listener`).
#[derive(Debug)]
pub struct TcpListener {
    // Declared first: dropped (deregistered) before the socket closes.
    reg: Registration,
    inner: std::net::TcpListener,
}

impl TcpListener {
    /// Binds to `addr` and listens. Must be called inside a gmprt runtime.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        let mut last = None;
        for a in addr.to_socket_addrs()? {
            match bind_listener(a) {
                Ok(l) => return TcpListener::from_std(l),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address to bind to")))
    }

    /// Wraps a listener bound elsewhere (made non-blocking here).
    pub fn from_std(inner: std::net::TcpListener) -> io::Result<TcpListener> {
        inner.set_nonblocking(true)?;
        let reg = Registration::new(inner.as_raw_fd())?;
        Ok(TcpListener { reg, inner })
    }

    /// Accepts a connection (Go's `Accept`).
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (s, addr) = self.reg.io(Dir::Read, || self.inner.accept()).await?;
        Ok((TcpStream::from_std(s)?, addr))
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// A TCP connection (Go's `net.TCPConn`).
#[derive(Debug)]
pub struct TcpStream {
    reg: Registration,
    inner: std::net::TcpStream,
}

impl TcpStream {
    /// Connects to `addr` without blocking the M.
    pub async fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
        let sock = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None)?;
        sock.set_nonblocking(true)?;
        let reg = Registration::new(sock.as_raw_fd())?;
        match sock.connect(&addr.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {
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
            Err(e) => return Err(e),
        }
        Ok(TcpStream { reg, inner: sock.into() })
    }

    /// Wraps a connected stream (made non-blocking here).
    pub fn from_std(inner: std::net::TcpStream) -> io::Result<TcpStream> {
        inner.set_nonblocking(true)?;
        let reg = Registration::new(inner.as_raw_fd())?;
        Ok(TcpStream { reg, inner })
    }

    /// Reads into `buf`; `Ok(0)` at the end of the stream.
    pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.reg.io(Dir::Read, || (&self.inner).read(buf)).await
    }

    /// Writes from `buf`, returning how much was written.
    pub async fn write(&self, buf: &[u8]) -> io::Result<usize> {
        self.reg.io(Dir::Write, || (&self.inner).write(buf)).await
    }

    /// Writes all of `buf`.
    pub async fn write_all(&self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.write(buf).await? {
                0 => return Err(io::ErrorKind::WriteZero.into()),
                n => buf = &buf[n..],
            }
        }
        Ok(())
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
