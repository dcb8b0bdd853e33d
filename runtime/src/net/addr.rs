//! Addresses: [`ToSocketAddrs`] (what `connect` and `bind` take) and [`lookup_host`], the
//! resolver.
//!
//! # Contract
//! * Numeric addresses (`SocketAddr`, `"127.0.0.1:80"`, `"[::1]:80"`, `(IpAddr, port)`) are
//!   parsed in place: no system call, no thread.
//! * A host name (`"localhost:80"`, `("example.com", 443)`) is resolved by the system's
//!   resolver (`getaddrinfo`, through `std::net::ToSocketAddrs`), which blocks: it runs inside
//!   [`crate::syscall`], so the task's M gives up its P for the duration and the other tasks
//!   keep running — Go's cgo resolver does the same (a goroutine in a cgo call holds an M, not
//!   a P). When the runtime's thread cap refuses the hand-off ([`crate::ThreadLimit`]), the
//!   lookup fails with an error saying so instead of blocking a P.
//! * Errors name the host: `lookup nosuch.invalid:80: failed to lookup address information: ...`.

use super::error::host_error;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// Addresses that [`TcpStream::connect`](super::TcpStream::connect),
/// [`TcpListener::bind`](super::TcpListener::bind) and [`UdpSocket`](super::UdpSocket) accept:
/// a [`SocketAddr`] (or V4/V6), `(IpAddr, u16)`, a slice of addresses, or a `"host:port"`
/// string (or `(host, port)`), whose host name is resolved by [`lookup_host`].
///
/// Sealed: implemented here for those types only (like tokio's, unlike std's: std's trait
/// resolves host names by blocking the calling thread, which in a task would block a P).
///
/// ```
/// use gmprt_runtime::net::ToSocketAddrs;
/// use std::net::{Ipv4Addr, SocketAddr};
///
/// fn takes(_: impl ToSocketAddrs) {}
/// takes("127.0.0.1:80");
/// takes("localhost:80".to_string());
/// takes(("localhost", 80));
/// takes((Ipv4Addr::LOCALHOST, 80));
/// takes(SocketAddr::from(([127, 0, 0, 1], 80)));
/// takes(&[SocketAddr::from(([127, 0, 0, 1], 80))][..]);
/// ```
pub trait ToSocketAddrs: sealed::Sealed {}

pub(crate) mod sealed {
    /// What an address resolves to before any lookup.
    pub enum Addrs {
        /// Numeric: done.
        Done(Vec<std::net::SocketAddr>),
        /// A `"host:port"` for [`super::lookup_host`].
        Lookup(String),
    }

    /// The hidden method of [`super::ToSocketAddrs`].
    pub trait Sealed {
        /// The addresses, or the name to look up.
        fn to_addrs(&self) -> Addrs;
    }
}

use sealed::{Addrs, Sealed};

macro_rules! numeric {
    ($($t:ty),*) => {$(
        impl ToSocketAddrs for $t {}
        impl Sealed for $t {
            fn to_addrs(&self) -> Addrs {
                Addrs::Done(vec![SocketAddr::from(*self)])
            }
        }
    )*};
}

numeric!(SocketAddr, SocketAddrV4, SocketAddrV6, (IpAddr, u16), (Ipv4Addr, u16), (Ipv6Addr, u16));

impl ToSocketAddrs for &[SocketAddr] {}
impl Sealed for &[SocketAddr] {
    fn to_addrs(&self) -> Addrs {
        Addrs::Done(self.to_vec())
    }
}

impl ToSocketAddrs for str {}
impl Sealed for str {
    fn to_addrs(&self) -> Addrs {
        match self.parse::<SocketAddr>() {
            Ok(a) => Addrs::Done(vec![a]),
            Err(_) => Addrs::Lookup(self.to_owned()),
        }
    }
}

impl ToSocketAddrs for String {}
impl Sealed for String {
    fn to_addrs(&self) -> Addrs {
        self.as_str().to_addrs()
    }
}

impl ToSocketAddrs for (&str, u16) {}
impl Sealed for (&str, u16) {
    fn to_addrs(&self) -> Addrs {
        let (host, port) = *self;
        match host.parse::<IpAddr>() {
            Ok(ip) => Addrs::Done(vec![SocketAddr::new(ip, port)]),
            Err(_) => Addrs::Lookup(format!("{host}:{port}")),
        }
    }
}

impl ToSocketAddrs for (String, u16) {}
impl Sealed for (String, u16) {
    fn to_addrs(&self) -> Addrs {
        (self.0.as_str(), self.1).to_addrs()
    }
}

impl<T: ToSocketAddrs + ?Sized> ToSocketAddrs for &T {}
impl<T: Sealed + ?Sized> Sealed for &T {
    fn to_addrs(&self) -> Addrs {
        (**self).to_addrs()
    }
}

/// Resolves `host` (`"name:port"`, `"127.0.0.1:80"`, `"[::1]:80"`, or a bare `"name"` /
/// address as Go's `net.LookupHost` takes, which gives port 0) to its socket addresses, in
/// the resolver's order (tokio's `lookup_host`; [`lookup_ip`] gives the bare addresses). A
/// numeric address is parsed in place; a name is resolved by the system's resolver inside
/// [`crate::syscall`] (module doc): the task's M blocks, its P does not. Works outside a
/// runtime too (it then simply blocks the calling thread).
///
/// ```
/// let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(async {
///     let addrs = gmprt_runtime::net::lookup_host("localhost:80").await.unwrap();
///     assert!(addrs.iter().all(|a| a.ip().is_loopback() && a.port() == 80));
///     let numeric = gmprt_runtime::net::lookup_host("[::1]:8080").await.unwrap();
///     assert_eq!(numeric, ["[::1]:8080".parse().unwrap()]);
///     let bare = gmprt_runtime::net::lookup_host("localhost").await.unwrap(); // Go's form
///     assert!(bare.iter().all(|a| a.ip().is_loopback() && a.port() == 0));
/// });
/// ```
///
/// # Errors
/// The resolver's (kind and message kept, the host named: `lookup nosuch.invalid:80: ...`;
/// a name longer than 256 bytes is cut in the message, its length said), and an error naming
/// the thread cap when [`crate::syscall`] refuses ([`crate::ThreadLimit`]).
pub async fn lookup_host(host: &str) -> io::Result<Vec<SocketAddr>> {
    lookup_any(host)
}

/// `lookup` that also takes a bare host (an address, or a name without a port: port 0).
/// Only for the lookup functions: `connect` and `bind` still want the port said.
fn lookup_any(host: &str) -> io::Result<Vec<SocketAddr>> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, 0)]);
    }
    if host.parse::<SocketAddr>().is_err() && !host.contains(':') {
        return lookup(&format!("{host}:0")).map_err(|e| {
            // Name the host as the caller wrote it, not with the port added here.
            let inner = e.into_inner().and_then(|e| e.downcast::<super::OpError>().ok());
            match inner {
                Some(op) => host_error("lookup", host, op.into_source()),
                None => io::Error::other(format!("lookup {host}: failed")),
            }
        });
    }
    lookup(host)
}

/// The IP addresses of a host name (Go's `net.LookupIP`; `"localhost"`, `"example.com"`,
/// or an address, returned as it is), in the resolver's order, without repeats (the system
/// resolver lists an address once per socket type).
///
/// ```
/// # let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
/// # rt.block_on(async {
/// let ips = gmprt_runtime::net::lookup_ip("localhost").await.unwrap();
/// assert!(!ips.is_empty() && ips.iter().all(|ip| ip.is_loopback()));
/// # });
/// ```
///
/// # Errors
/// As [`lookup_host`].
pub async fn lookup_ip(host: &str) -> io::Result<Vec<IpAddr>> {
    let mut ips = Vec::new();
    for a in lookup_any(host)? {
        if !ips.contains(&a.ip()) {
            ips.push(a.ip());
        }
    }
    Ok(ips)
}

/// [`lookup_host`]'s body, for the synchronous callers (`bind`): it never awaits.
pub(crate) fn lookup(host: &str) -> io::Result<Vec<SocketAddr>> {
    if let Ok(a) = host.parse::<SocketAddr>() {
        return Ok(vec![a]);
    }
    let res = crate::syscall(|| std::net::ToSocketAddrs::to_socket_addrs(host).map(Vec::from_iter));
    match res {
        Ok(Ok(addrs)) => Ok(addrs),
        Ok(Err(e)) => Err(host_error("lookup", host, e)),
        Err(limit) => Err(host_error("lookup", host, io::Error::other(limit.to_string()))),
    }
}

/// `addr`'s socket addresses: numeric ones at once, a host name through [`lookup`]. Never
/// empty: a lookup that finds nothing is an error naming the host.
pub(crate) fn resolve(addr: &(impl ToSocketAddrs + ?Sized)) -> io::Result<Vec<SocketAddr>> {
    let (addrs, host) = match addr.to_addrs() {
        Addrs::Done(a) => (a, None),
        Addrs::Lookup(h) => (lookup(&h)?, Some(h)),
    };
    if addrs.is_empty() {
        let e = io::Error::new(io::ErrorKind::InvalidInput, "no addresses to use");
        return Err(match host {
            Some(h) => host_error("lookup", &h, e),
            None => e,
        });
    }
    Ok(addrs)
}
