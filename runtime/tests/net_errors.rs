//! The net types' errors: each says what happened and keeps the OS's kind (net/error.rs).
//! Every wait here is on an event (a socket state, a task parked in the dump); the deadline
//! tests check which way an operation ended, never how long it took.
#![cfg(all(unix, not(loom)))]

mod common;

use common::{pair, parked_on_net, until_parked_on_net};
use gmprt_runtime::net::{OpError, TcpListener, TcpStream, UdpSocket};
use gmprt_runtime::Runtime;
use std::future::Future as _;
use std::io::ErrorKind;
use std::net::{Shutdown, SocketAddr};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

fn rt() -> Runtime {
    Runtime::builder().procs(2).build().unwrap()
}

fn op_of(e: &std::io::Error) -> &OpError {
    e.get_ref().and_then(|e| e.downcast_ref::<OpError>()).expect("an OpError inside")
}

/// A loopback address nobody listens on: a port bound, noted and closed.
fn closed_port() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

#[test]
fn connect_refused_names_the_address() {
    rt().block_on(async {
        let addr = closed_port();
        let e = TcpStream::connect(addr).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
        let msg = e.to_string();
        assert!(msg.starts_with(&format!("connect to {addr}: Connection refused")), "{msg}");
        assert_eq!(op_of(&e).raw_os_error(), Some(libc::ECONNREFUSED));
    });
}

#[test]
fn bind_in_use_names_the_address() {
    rt().block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let e = TcpListener::bind(addr).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AddrInUse);
        let msg = e.to_string();
        assert!(msg.starts_with(&format!("bind {addr}: Address already in use")), "{msg}");

        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        let uaddr = u.local_addr().unwrap();
        let e = UdpSocket::bind(uaddr).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AddrInUse);
        assert!(e.to_string().starts_with(&format!("bind {uaddr}: ")), "{e}");
    });
}

/// The peer sets `SO_LINGER` to zero and closes: the kernel sends a reset.
#[test]
fn reset_by_the_peer() {
    rt().block_on(async {
        let (c, s, _l) = pair().await;
        let peer = c.peer_addr().unwrap();
        s.set_linger(Some(Duration::ZERO)).unwrap();
        assert_eq!(s.linger().unwrap(), Some(Duration::ZERO));
        drop(s);
        // Parked or not when the reset arrives, the read ends with it.
        let e = c.read(&mut [0u8; 16]).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ConnectionReset);
        assert!(e.to_string().starts_with(&format!("read from {peer}: ")), "{e}");
        // The peer address is still known after the reset (the kernel no longer has it).
        assert_eq!(c.peer_addr().unwrap(), peer);
    });
}

/// A read parked when the reset arrives is woken by it.
#[test]
fn reset_wakes_a_parked_reader() {
    rt().block_on(async {
        let (c, s, _l) = pair().await;
        let reader = gmprt_runtime::spawn(async move { c.read(&mut [0u8; 16]).await });
        until_parked_on_net(1).await;
        s.set_linger(Some(Duration::ZERO)).unwrap();
        drop(s);
        assert_eq!(reader.await.unwrap().unwrap_err().kind(), ErrorKind::ConnectionReset);
    });
}

#[test]
fn read_after_the_peer_closed_is_eof_and_a_write_fails() {
    rt().block_on(async {
        let (c, s, _l) = pair().await;
        s.write_all(b"last words").await.unwrap();
        drop(s);
        let mut buf = [0u8; 10];
        c.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"last words");
        assert_eq!(c.read(&mut buf).await.unwrap(), 0);
        assert_eq!(c.read(&mut buf).await.unwrap(), 0, "EOF again, as std");
        // The first write may still be taken by the kernel; the peer answers it with a reset,
        // after which writes fail. (No SIGPIPE: tests/net_sigpipe.rs.)
        let e = loop {
            match c.write(b"anyone?").await {
                Ok(_) => gmprt_runtime::yield_now().await,
                Err(e) => break e,
            }
        };
        assert!(matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset), "{e:?}");
        assert!(e.to_string().starts_with("write to 127.0.0.1:"), "{e}");
    });
}

#[test]
fn read_exact_short_is_unexpected_eof() {
    rt().block_on(async {
        let (c, s, _l) = pair().await;
        s.write_all(b"abc").await.unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        let mut buf = [0u8; 8];
        let e = c.read_exact(&mut buf).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnexpectedEof);
        assert!(e.to_string().contains("after 3 of 8 bytes"), "{e}");
        assert_eq!(&buf[..3], b"abc");
    });
}

#[test]
fn deadline_in_the_past_fails_at_once() {
    rt().block_on(async {
        let (c, s, _l) = pair().await;
        s.write_all(b"data waiting").await.unwrap();
        c.set_read_deadline(Some(Instant::now()));
        assert!(c.read_deadline().is_some());
        // Even with data waiting: Go's rule is that a passed deadline fails every read.
        let e = c.read(&mut [0u8; 4]).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut);
        assert!(e.to_string().contains("read deadline exceeded"), "{e}");
        let e = c.peek(&mut [0u8; 4]).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut);
        c.set_write_deadline(Some(Instant::now()));
        assert_eq!(c.write(b"x").await.unwrap_err().kind(), ErrorKind::TimedOut);
        // Cleared: the data is still there.
        c.set_deadline(None);
        assert_eq!((c.read_deadline(), c.write_deadline()), (None, None));
        let mut buf = [0u8; 12];
        c.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"data waiting");
    });
}

/// A read parks with a far deadline; the deadline is moved near; the read must be seen parked
/// again (re-armed on the new deadline) and then fail with `TimedOut` when it passes. If this
/// machine is so slow that the near deadline passed before the read parked again, the read
/// failed on the immediate path instead: the test retries with a wider margin, so it always
/// ends having seen the parked path.
#[test]
fn deadline_passing_wakes_a_parked_read() {
    let rt = rt();
    rt.block_on(async {
        for margin_ms in [20, 200, 2_000, 20_000] {
            let (c, _s, _l) = pair().await;
            let c = Arc::new(c);
            c.set_read_deadline(Some(Instant::now() + Duration::from_secs(3600)));
            let reader = {
                let c = c.clone();
                gmprt_runtime::spawn(async move { c.read(&mut [0u8; 4]).await })
            };
            until_parked_on_net(1).await;
            c.set_read_deadline(Some(Instant::now() + Duration::from_millis(margin_ms)));
            // Either parked again (the path under test) or done (the margin was too short).
            while parked_on_net() == 0 && !reader.is_finished() {
                gmprt_runtime::yield_now().await;
            }
            let parked_again = !reader.is_finished();
            let e = reader.await.unwrap().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
            if parked_again {
                return;
            }
        }
        panic!("the read never parked again before its deadline, even with a 20 s margin");
    });
}

/// A read parked with no deadline (it parks without the deadline's lock) still sees one set
/// while it waits: `set_deadline` wakes it, it parks again under the deadline's timer, and
/// fails with `TimedOut` when that passes (`Registration::poll_ready`; loom:
/// `deadline_set_while_a_reader_parks_procs1`).
#[test]
fn deadline_set_on_a_read_parked_without_one() {
    rt().block_on(async {
        let (c, _s, _l) = pair().await; // the server side never writes
        let c = Arc::new(c);
        let reader = {
            let c = c.clone();
            gmprt_runtime::spawn(async move { c.read(&mut [0u8; 4]).await })
        };
        until_parked_on_net(1).await;
        c.set_read_deadline(Some(Instant::now() + Duration::from_millis(10)));
        let e = reader.await.unwrap().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
    });
}

/// Moving a parked read's deadline later wakes it; it parks again under the new deadline and
/// the old one no longer applies: once the old one has passed, data still reaches the read.
/// The move must come before the old deadline (read off the clock after the move: an order of
/// events, not a duration); on a machine too slow for that, it retries with a wider margin.
#[test]
fn moving_the_deadline_later_rearms() {
    rt().block_on(async {
        for margin_ms in [30, 300, 3_000, 30_000] {
            let (c, s, _l) = pair().await;
            let c = Arc::new(c);
            let old = Instant::now() + Duration::from_millis(margin_ms);
            c.set_read_deadline(Some(old));
            let reader = {
                let c = c.clone();
                gmprt_runtime::spawn(async move {
                    let mut buf = [0u8; 5];
                    c.read_exact(&mut buf).await.map(|()| buf)
                })
            };
            // Parked, or already timed out (first polled after the old deadline): try wider.
            while parked_on_net() == 0 && !reader.is_finished() {
                gmprt_runtime::yield_now().await;
            }
            if reader.is_finished() {
                continue;
            }
            c.set_read_deadline(Some(Instant::now() + Duration::from_secs(3600)));
            if Instant::now() >= old {
                // The old deadline may have fired first: end this reader (EOF or TimedOut)
                // so that it cannot be counted in the next round, and try wider.
                drop(s);
                let _ = reader.await;
                continue;
            }
            // The old deadline passing is the event waited for (not a measurement).
            gmprt_runtime::time::sleep_until(old + Duration::from_millis(1)).await;
            assert!(!reader.is_finished(), "the read ended on the old deadline: {:?}", reader.await);
            s.write_all(b"hello").await.unwrap();
            assert_eq!(&reader.await.unwrap().unwrap(), b"hello");
            return;
        }
        panic!("could not move the deadline before the old one passed, even with a 30 s margin");
    });
}

/// Several tasks parked on one direction all see the deadline (the timer wakes every waiter,
/// not only the task that armed it).
#[test]
fn deadline_wakes_every_parked_reader() {
    rt().block_on(async {
        let (c, _s, _l) = pair().await;
        let c = Arc::new(c);
        c.set_read_deadline(Some(Instant::now() + Duration::from_secs(3600)));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let c = c.clone();
                gmprt_runtime::spawn(async move { c.read(&mut [0u8; 1]).await })
            })
            .collect();
        until_parked_on_net(3).await;
        c.set_read_deadline(Some(Instant::now() + Duration::from_millis(10)));
        for r in readers {
            assert_eq!(r.await.unwrap().unwrap_err().kind(), ErrorKind::TimedOut);
        }
    });
}

/// A write parked on a full send buffer fails when its deadline passes.
#[test]
fn write_deadline_ends_a_blocked_write() {
    rt().block_on(async {
        let (c, _s, _l) = pair().await; // the server side never reads
        c.set_write_deadline(Some(Instant::now() + Duration::from_millis(20)));
        let chunk = vec![7u8; 1 << 16];
        let e = loop {
            if let Err(e) = c.write(&chunk).await {
                break e;
            }
        };
        assert_eq!(e.kind(), ErrorKind::TimedOut);
        assert!(e.to_string().contains("write deadline exceeded"), "{e}");
    });
}

#[test]
fn udp_recv_deadline() {
    rt().block_on(async {
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        u.set_read_deadline(Some(Instant::now() + Duration::from_millis(10)));
        let e = u.recv_from(&mut [0u8; 8]).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut);
        assert!(e.to_string().starts_with(&format!("recv on {}: ", u.local_addr().unwrap())), "{e}");
        u.set_deadline(None);
        assert_eq!((u.read_deadline(), u.write_deadline()), (None, None));
    });
}

const OUTSIDE: &str = "not inside a gmprt runtime";

#[test]
fn sockets_outside_a_runtime_say_so() {
    let e = TcpListener::bind("127.0.0.1:0").unwrap_err();
    assert!(e.to_string().contains(OUTSIDE), "{e}");
    let e = UdpSocket::bind("127.0.0.1:0").unwrap_err();
    assert!(e.to_string().contains(OUTSIDE), "{e}");
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = std_listener.local_addr().unwrap();
    let std_stream = std::net::TcpStream::connect(addr).unwrap();
    let e = TcpStream::from_std(std_stream).unwrap_err();
    assert!(e.to_string().contains(OUTSIDE), "{e}");
    let e = TcpListener::from_std(std_listener).unwrap_err();
    assert!(e.to_string().contains(OUTSIDE), "{e}");
    // `connect` registers its socket before its first wait: one poll, anywhere, says so.
    let mut fut = std::pin::pin!(TcpStream::connect(addr));
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(Err(e)) => {
            assert!(e.to_string().starts_with(&format!("connect to {addr}: {OUTSIDE}")), "{e}")
        }
        other => panic!("expected the error at once, got {other:?}"),
    }
}

/// A socket kept past its runtime's shutdown fails with an error saying so.
#[test]
fn socket_after_its_runtime_shut_down() {
    let rt = rt();
    let (c, _s, _l) = rt.block_on(pair());
    drop(rt);
    let rt2 = Runtime::builder().procs(1).build().unwrap();
    let e = rt2.block_on(c.read(&mut [0u8; 4])).unwrap_err();
    assert!(e.to_string().contains("runtime has shut down"), "{e}");
}

/// Data and the peer's FIN queued together: a read returns the data (short, which clears the
/// read readiness: the buffer was drained), and the next read must still see the EOF — the
/// FIN's event may have come before that clear, and no other comes (the closed state is final
/// in `netpoll/desc.rs`). The reader parks first, so the netpoller takes the events of the
/// write and the shutdown, together or apart, while it wakes; over many rounds some reads
/// come after both. A lost EOF would park the read forever, so it is bounded by a timeout far
/// above any wait here (the bound decides nothing when the EOF is seen).
#[test]
fn eof_after_a_short_read_is_seen() {
    rt().block_on(async {
        for round in 0..300 {
            let (c, s, _l) = pair().await;
            let server = gmprt_runtime::spawn(async move {
                let mut buf = [0u8; 4096];
                let n = s.read(&mut buf).await.unwrap();
                let mut got = buf[..n].to_vec();
                loop {
                    let r = gmprt_runtime::time::timeout(Duration::from_secs(30), s.read(&mut buf)).await;
                    match r.map_err(|_| format!("the EOF was lost after {got:?} (round {round})"))?.unwrap() {
                        0 => return Ok::<_, String>(got),
                        n => got.extend_from_slice(&buf[..n]),
                    }
                }
            });
            until_parked_on_net(1).await;
            c.write_all(b"0123456789").await.unwrap();
            c.shutdown(Shutdown::Write).unwrap();
            assert_eq!(server.await.unwrap().unwrap(), b"0123456789", "round {round}");
            drop(c);
        }
    });
}
