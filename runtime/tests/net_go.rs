//! Go's own `net` tests, ported (issue 23): `TestZeroByteRead`, the `TestAcceptTimeout`
//! family, the keep-alive and buffer setters, and a UDP socket after an ICMP error.
//!
//! Every wait is on an event (a task parked on a socket, read from the dump); the deadline
//! tests check which way an operation ended, never how long it took. Waits that a bug would
//! make endless are bounded by a timeout far above any real wait (it decides nothing when the
//! code is right).
#![cfg(all(unix, not(loom)))]

mod common;

use common::{pair, until_parked_on_net};
use futures_util::AsyncReadExt;
use gmprt_runtime::net::{TcpListener, TcpStream, UdpSocket};
use gmprt_runtime::time::timeout;
use gmprt_runtime::Runtime;
use std::io::ErrorKind;
use std::time::{Duration, Instant};

/// Far above any wait in these tests: only a bug reaches it.
const BOUND: Duration = Duration::from_secs(30);

fn rt() -> Runtime {
    Runtime::builder().procs(2).build().unwrap()
}

/// Go's `TestZeroByteRead`: a read of zero bytes on an idle connection returns `(0, nil)` at
/// once — before any readiness or deadline check — for every read form.
#[test]
fn zero_byte_read_returns_at_once() {
    rt().block_on(async {
        let (c, s, _l) = pair().await;
        let zero = |r: Result<std::io::Result<usize>, _>| r.expect("a zero-byte read parked").unwrap();
        assert_eq!(zero(timeout(BOUND, c.read(&mut [])).await), 0);
        assert_eq!(zero(timeout(BOUND, c.peek(&mut [])).await), 0);
        assert_eq!(zero(timeout(BOUND, AsyncReadExt::read(&mut &c, &mut [])).await), 0); // futures-io
                                                                                         // A read deadline in the past does not turn it into a timeout (Go checks neither).
        c.set_read_deadline(Some(Instant::now() - Duration::from_secs(1)));
        assert_eq!(zero(timeout(BOUND, c.read(&mut [])).await), 0);
        c.set_read_deadline(None);
        let (rd, _wr) = c.into_split();
        assert_eq!(zero(timeout(BOUND, rd.read(&mut [])).await), 0);
        assert_eq!(zero(timeout(BOUND, rd.peek(&mut [])).await), 0);
        // The connection still works: data sent after is read whole.
        s.write_all(b"after").await.unwrap();
        let mut got = [0u8; 5];
        rd.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"after");
    });
}

/// Go's `TestAcceptTimeout`: a deadline in the past times the accept out at once, even with a
/// connection queued (the deadline is checked first); a future one with nobody connecting
/// times out when it passes; cleared, the queued connection is accepted.
#[test]
fn accept_timeout() {
    rt().block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let _queued = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        for past in [Duration::from_secs(5), Duration::from_millis(50), Duration::ZERO] {
            l.set_deadline(Some(Instant::now() - past));
            let e = l.accept().await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
            assert!(e.to_string().contains("accept deadline exceeded"), "{e}");
        }
        l.set_deadline(None);
        assert!(l.deadline().is_none());
        let (_conn, _) = timeout(BOUND, l.accept()).await.expect("the queued connection").unwrap();

        // Nobody else connects: a deadline 20 ms ahead ends the parked accept.
        l.set_deadline(Some(Instant::now() + Duration::from_millis(20)));
        let e = timeout(BOUND, l.accept()).await.expect("the deadline woke the accept").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut);
    });
}

/// Go's `TestAcceptTimeoutMustReturn`: an accept already parked returns when its deadline is
/// moved into the past.
#[test]
fn accept_timeout_must_return() {
    rt().block_on(async {
        let l = std::sync::Arc::new(TcpListener::bind("127.0.0.1:0").unwrap());
        let l2 = l.clone();
        let accept = gmprt_runtime::spawn(async move { l2.accept().await.map(|_| ()) });
        until_parked_on_net(1).await;
        l.set_deadline(Some(Instant::now() - Duration::from_secs(1)));
        let e = timeout(BOUND, accept).await.expect("the parked accept returned").unwrap().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut);
    });
}

/// Go's `TestAcceptTimeoutMustNotReturn`: after a past deadline is replaced by none, an accept
/// parks (it does not time out) and takes the next connection.
#[test]
fn accept_timeout_must_not_return() {
    rt().block_on(async {
        let l = std::sync::Arc::new(TcpListener::bind("127.0.0.1:0").unwrap());
        let addr = l.local_addr().unwrap();
        l.set_deadline(Some(Instant::now() - Duration::from_secs(1)));
        l.set_deadline(None);
        let l2 = l.clone();
        let accept = gmprt_runtime::spawn(async move { l2.accept().await.map(|(_, peer)| peer) });
        until_parked_on_net(1).await; // parked, not timed out
        let c = TcpStream::connect(addr).await.unwrap();
        let peer = timeout(BOUND, accept).await.expect("accepted").unwrap().unwrap();
        assert_eq!(peer, c.local_addr().unwrap());
    });
}

/// Go's dialer and listener turn keep-alive on (15 s) for every connection; the setters change
/// it (`SetKeepAlive`, `SetKeepAlivePeriod`, `SetReadBuffer`, `SetWriteBuffer`).
#[test]
fn keepalive_is_on_by_default_and_the_setters_work() {
    rt().block_on(async {
        let (c, s, _l) = pair().await;
        for (who, conn) in [("dialed", &c), ("accepted", &s)] {
            assert!(conn.keepalive().unwrap(), "{who}: keep-alive off");
            let sock = socket2::SockRef::from(conn);
            assert_eq!(sock.tcp_keepalive_time().unwrap(), Duration::from_secs(15), "{who}");
            assert_eq!(sock.tcp_keepalive_interval().unwrap(), Duration::from_secs(15), "{who}");
        }
        c.set_keepalive_period(Duration::from_secs(40)).unwrap();
        assert_eq!(socket2::SockRef::from(&c).tcp_keepalive_time().unwrap(), Duration::from_secs(40));
        let e = c.set_keepalive_period(Duration::from_millis(10)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        c.set_keepalive(false).unwrap();
        assert!(!c.keepalive().unwrap());

        c.set_read_buffer(64 * 1024).unwrap();
        c.set_write_buffer(64 * 1024).unwrap();
        // Linux doubles the value it is given (its bookkeeping), within its caps.
        assert!(c.read_buffer().unwrap() >= 64 * 1024, "{}", c.read_buffer().unwrap());
        assert!(c.write_buffer().unwrap() >= 64 * 1024, "{}", c.write_buffer().unwrap());
    });
}

/// A connected UDP socket whose peer's port is closed: the ICMP error reaches a parked
/// `recv` as `EPOLLERR`, which returns it, and the `recv` after that must park (the error
/// was taken; the kernel says `WouldBlock`). Before issue 23's fix the error's final bit stayed
/// and that `recv` tried again for ever inside one poll, never parking.
#[test]
fn udp_recv_parks_after_an_icmp_error() {
    rt().block_on(async {
        let closed = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let u = std::sync::Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
        u.connect(closed).await.unwrap();
        let recv = |u: std::sync::Arc<UdpSocket>| {
            gmprt_runtime::spawn(async move {
                let mut buf = [0u8; 16];
                u.recv(&mut buf).await
            })
        };
        // Parked first, so the error comes to it through the netpoller (EPOLLERR).
        let first = recv(u.clone());
        timeout(BOUND, until_parked_on_net(1)).await.expect("the first recv parks");
        u.send(b"anyone?").await.unwrap();
        let e = timeout(BOUND, first).await.expect("the ICMP error").unwrap().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "{e}");
        // Now nobody sends: the next recv parks (the bug spun here instead, never parking).
        let second = recv(u.clone());
        timeout(BOUND, until_parked_on_net(1)).await.expect("the recv after the error parks");
        // Ended by a deadline, so the test leaves nothing parked.
        u.set_read_deadline(Some(Instant::now() - Duration::from_secs(1)));
        let e = timeout(BOUND, second).await.unwrap().unwrap().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut);
    });
}
