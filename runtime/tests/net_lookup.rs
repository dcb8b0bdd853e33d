//! `lookup_host` and connecting by name: numeric addresses are parsed in place, names go
//! through `syscall` (Go's cgo resolver), a refused hand-off says why.
#![cfg(all(unix, not(loom)))]

use gmprt_runtime::net::{lookup_host, lookup_ip, TcpListener, TcpStream};
use gmprt_runtime::Runtime;
use std::io::ErrorKind;
use std::net::SocketAddr;

#[test]
fn localhost() {
    let rt = Runtime::builder().procs(1).build().unwrap();
    let addrs = rt.block_on(rt.spawn(async { lookup_host("localhost:80").await })).unwrap().unwrap();
    assert!(!addrs.is_empty());
    assert!(addrs.iter().all(|a| a.ip().is_loopback() && a.port() == 80), "{addrs:?}");
}

/// From a task, a name costs one `syscall` (the P handed off for the resolver's call); a
/// numeric address costs none.
#[test]
fn only_names_use_a_syscall() {
    let rt = Runtime::builder().procs(1).build().unwrap();
    let (before, numeric, after_numeric, after_name) = rt
        .block_on(rt.spawn(async {
            let h = gmprt_runtime::Handle::try_current().unwrap();
            let before = h.stats().syscalls;
            let numeric = lookup_host("127.0.0.1:9").await.unwrap();
            let after_numeric = h.stats().syscalls;
            lookup_host("localhost:9").await.unwrap();
            (before, numeric, after_numeric, h.stats().syscalls)
        }))
        .unwrap();
    assert_eq!(numeric, ["127.0.0.1:9".parse::<SocketAddr>().unwrap()]);
    assert_eq!(after_numeric, before);
    assert_eq!(after_name, before + 1);
    // IPv6 literals too, bracketed.
    let v6 = rt.block_on(lookup_host("[::1]:443")).unwrap();
    assert_eq!(v6, ["[::1]:443".parse::<SocketAddr>().unwrap()]);
}

/// Go's `LookupHost("localhost")`: a bare host resolves (port 0); `connect` and `bind` still
/// want the port and say so, naming the host.
#[test]
fn a_bare_host_resolves_and_connect_wants_a_port() {
    let rt = Runtime::builder().procs(1).build().unwrap();
    rt.block_on(async {
        let addrs = lookup_host("localhost").await.unwrap();
        assert!(
            !addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback() && a.port() == 0),
            "{addrs:?}"
        );
        assert_eq!(lookup_host("::1").await.unwrap(), ["[::1]:0".parse().unwrap()]);
        let ips = lookup_ip("localhost").await.unwrap();
        assert!(!ips.is_empty() && ips.iter().all(|ip| ip.is_loopback()), "{ips:?}");
        let unique: std::collections::HashSet<_> = ips.iter().collect();
        assert_eq!(unique.len(), ips.len(), "lookup_ip lists each address once: {ips:?}");
        let e = TcpStream::connect("localhost").await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().starts_with("lookup localhost: "), "{e}");
        let e = lookup_ip("nosuch.invalid").await.unwrap_err();
        assert!(e.to_string().starts_with("lookup nosuch.invalid: "), "{e}");
    });
}

/// A 100 KB host name is not copied whole into the error: its head and its length.
#[test]
fn a_huge_host_name_is_cut_in_the_error() {
    let rt = Runtime::builder().procs(1).build().unwrap();
    let host = format!("{}:80", "a".repeat(100_000));
    let e = rt.block_on(lookup_host(&host)).unwrap_err();
    let msg = e.to_string();
    assert!(msg.len() < 1_000, "the message is {} bytes", msg.len());
    assert!(msg.contains("(100003 bytes)"), "{}", &msg[..msg.len().min(400)]);
}

/// With the thread cap reached (one M, which runs the task), `syscall` refuses the hand-off
/// and the lookup fails saying so, instead of blocking the only P in the resolver.
#[test]
fn thread_limit_refuses_a_name_lookup() {
    let rt = Runtime::builder().procs(1).max_threads(1).build().unwrap();
    let r = rt.block_on(rt.spawn(async {
        let numeric = lookup_host("127.0.0.1:80").await; // needs no thread
        (numeric, lookup_host("localhost:80").await)
    }));
    let (numeric, named) = r.unwrap();
    assert!(numeric.is_ok());
    let e = named.unwrap_err();
    let msg = e.to_string();
    assert!(msg.starts_with("lookup localhost:80: gmprt: 1 OS threads in use"), "{msg}");
    assert!(msg.contains("max_threads"), "{msg}");
}

/// `connect("localhost:PORT")` with the listener on 127.0.0.1 only: whichever order the
/// resolver gives (`::1` first is common), each address is tried until one connects.
#[test]
fn connect_by_name_tries_each_address() {
    let rt = Runtime::builder().procs(2).build().unwrap();
    rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let c = TcpStream::connect(format!("localhost:{port}")).await.unwrap();
        assert_eq!(c.peer_addr().unwrap(), SocketAddr::from(([127, 0, 0, 1], port)));
        let c = TcpStream::connect(("localhost", port)).await.unwrap();
        assert_eq!(c.peer_addr().unwrap().port(), port);
        // Binding by name works the same way.
        let l2 = TcpListener::bind("localhost:0").unwrap();
        assert!(l2.local_addr().unwrap().ip().is_loopback());
    });
}

/// Every address refused: the error is the last one's, naming it.
#[test]
fn connect_by_name_all_refused() {
    let rt = Runtime::builder().procs(1).build().unwrap();
    rt.block_on(async {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addrs = lookup_host(&format!("localhost:{port}")).await.unwrap();
        let e = TcpStream::connect(("localhost", port)).await.unwrap_err();
        let last = addrs.last().unwrap();
        assert!(e.to_string().starts_with(&format!("connect to {last}: ")), "{e} (tried {addrs:?})");
    });
}

/// Go's dialer order: the addresses in turn, the first that connects wins (here the second,
/// after a refusal), whatever the resolver of this machine returns for "localhost".
#[test]
fn connect_tries_each_address_in_turn() {
    let rt = Runtime::builder().procs(1).build().unwrap();
    rt.block_on(async {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let open = l.local_addr().unwrap();
        let c = TcpStream::connect(&[closed, open][..]).await.unwrap();
        assert_eq!(c.peer_addr().unwrap(), open);
        let e = TcpStream::connect(&[open, closed][..]).await.map(|_| ());
        assert!(e.is_ok(), "the first one connects: {e:?}");
    });
}
