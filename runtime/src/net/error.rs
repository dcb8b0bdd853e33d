//! The errors of network operations: Go's `net.OpError`, as an [`io::Error`].
//!
//! # Contract
//! Every error a net type returns is an [`io::Error`] whose kind is the OS error's kind
//! (`ConnectionRefused`, `ConnectionReset`, `BrokenPipe`, `AddrInUse`, `TimedOut` for a
//! deadline, ...) and whose message says what was being done and to which address:
//! `connect to 127.0.0.1:1: Connection refused (os error 111)`,
//! `bind 127.0.0.1:8080: Address already in use (os error 98)`. The payload is an
//! [`OpError`], which keeps the original error (its OS code: [`OpError::raw_os_error`]).
//! Reading after the peer closed is not an error: `Ok(0)`, as std.

use std::fmt;
use std::io;
use std::net::SocketAddr;

/// What a failed network operation was doing, where, and why (Go's `net.OpError`): the
/// payload of the [`io::Error`]s the net types return.
///
/// ```
/// use gmprt_runtime::net::{OpError, TcpListener, TcpStream};
/// use std::io::ErrorKind;
///
/// let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(async {
///     // A port nobody listens on: bind one, note it, close it.
///     let addr = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
///     let err = TcpStream::connect(addr).await.unwrap_err();
///     assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
///     assert!(err.to_string().starts_with(&format!("connect to {addr}: ")));
///     let op = err.get_ref().and_then(|e| e.downcast_ref::<OpError>()).unwrap();
///     assert_eq!((op.op(), op.addr()), ("connect to", Some(addr)));
///     assert_eq!(op.raw_os_error(), Some(libc::ECONNREFUSED));
/// });
/// ```
#[derive(Debug)]
pub struct OpError {
    op: &'static str,
    addr: Option<SocketAddr>,
    host: Option<String>,
    source: io::Error,
}

impl OpError {
    /// The operation: `"connect to"`, `"bind"`, `"accept on"`, `"read from"`, `"write to"`,
    /// `"send to"`, `"recv from"`, `"lookup"`, ...
    pub fn op(&self) -> &'static str {
        self.op
    }

    /// The address it was done to (the peer, or the local address of a listener or an
    /// unconnected socket), when there is one.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// The OS error code (`errno`) behind it, if the OS reported one (a deadline does not).
    pub fn raw_os_error(&self) -> Option<i32> {
        self.source.raw_os_error()
    }

    /// The error it wraps.
    pub(crate) fn into_source(self) -> io::Error {
        self.source
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.addr, &self.host) {
            (Some(a), _) => write!(f, "{} {a}: {}", self.op, self.source),
            (None, Some(h)) => write!(f, "{} {h}: {}", self.op, self.source),
            (None, None) => write!(f, "{}: {}", self.op, self.source),
        }
    }
}

impl std::error::Error for OpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Wraps `e` as an [`OpError`] for `op` on `addr`, keeping its kind.
pub(crate) fn op_error(op: &'static str, addr: Option<SocketAddr>, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), OpError { op, addr, host: None, source: e })
}

/// The longest host name an error quotes whole: DNS allows 253 bytes, so a longer one is a
/// mistake (a 100 KB string from a bad config), quoted by its head and its length.
const HOST_IN_ERROR_MAX: usize = 256;

/// Wraps `e` as an [`OpError`] for `op` on a host name (`"example.com:80"`), keeping its kind.
/// A name over [`HOST_IN_ERROR_MAX`] bytes is cut there, with its length said.
pub(crate) fn host_error(op: &'static str, host: &str, e: io::Error) -> io::Error {
    let host = if host.len() > HOST_IN_ERROR_MAX {
        let mut cut = HOST_IN_ERROR_MAX;
        while !host.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}... ({} bytes)", &host[..cut], host.len())
    } else {
        host.to_owned()
    };
    io::Error::new(e.kind(), OpError { op, addr: None, host: Some(host), source: e })
}
