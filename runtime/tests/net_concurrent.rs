//! One socket used by several tasks at once: Go lets goroutines share a `net.Conn`, and gmprt's
//! net types take `&self` for the same reason.
#![cfg(all(unix, not(loom)))]

use gmprt_runtime::dump::{TaskState, WaitReason};
use gmprt_runtime::net::{TcpListener, TcpStream};
use gmprt_runtime::{Handle, Runtime};
use std::sync::Arc;
use std::time::Duration;

/// Tasks parked on a socket now (from the dump: an event, not a sleep).
fn parked_on_net() -> usize {
    let d = Handle::try_current().expect("in the runtime").dump();
    d.tasks
        .iter()
        .filter(|t| t.state == TaskState::Parked && matches!(t.wait, WaitReason::Net { .. }))
        .count()
}

/// Yields until `n` tasks are parked on a socket.
async fn until_parked_on_net(n: usize) {
    while parked_on_net() != n {
        gmprt_runtime::yield_now().await;
    }
}

/// Two tasks read one socket, both parked before any data comes; each byte written wakes a
/// reader. With one waker slot per direction (the netpoller's first version), the second
/// park replaced the first task's waker and the first never ran again (the second byte sat in
/// the socket: 6 runs out of 6 failed here).
#[test]
fn two_readers_one_socket() {
    let rt = Runtime::builder().procs(2).build().unwrap();
    let (first, second) = rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (s, _) = l.accept().await.unwrap();
        let s = Arc::new(s);
        let (tx, rx) = gmprt_runtime::chan::chan::<u8>(2);
        for i in 0..2 {
            let (s, tx) = (s.clone(), tx.clone());
            gmprt_runtime::spawn(async move {
                let mut b = [0u8; 1];
                assert_eq!(s.read(&mut b).await.unwrap(), 1);
                tx.send(b[0]).await.unwrap();
            });
            until_parked_on_net(i + 1).await;
        }
        c.write_all(&[1]).await.unwrap();
        let first = rx.recv().await;
        c.write_all(&[2]).await.unwrap();
        // The guard only turns a hang into a failure; nothing is timed.
        let second = gmprt_runtime::time::timeout(Duration::from_secs(30), rx.recv()).await;
        (first, second.ok().flatten())
    });
    assert_eq!(first, Some(1));
    assert_eq!(second, Some(2), "the first reader was never woken for the second byte");
}

/// The owned halves in two tasks at once: one streams 1 MiB out while the other reads the
/// echo back (both directions full at once, so each side parks on both directions in turn).
/// Dropping the write half shuts down its side: the echo server sees the end and closes.
#[test]
fn owned_halves_in_two_tasks() {
    let rt = Runtime::builder().procs(2).build().unwrap();
    rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = gmprt_runtime::spawn(async move {
            let (s, _) = l.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let mut total = 0;
            loop {
                let n = s.read(&mut buf).await.unwrap();
                if n == 0 {
                    return total;
                }
                s.write_all(&buf[..n]).await.unwrap();
                total += n;
            }
        });
        let (rd, wr) = TcpStream::connect(addr).await.unwrap().into_split();
        const LEN: usize = 1 << 20;
        let data: Vec<u8> = (0..LEN).map(|i| (i % 251) as u8).collect();
        let expect = data.clone();
        let writer = gmprt_runtime::spawn(async move {
            for chunk in data.chunks(10_000) {
                wr.write_all(chunk).await.unwrap();
            }
            // `wr` dropped here: its side shuts down.
        });
        let reader = gmprt_runtime::spawn(async move {
            let mut got = Vec::with_capacity(LEN);
            let mut buf = vec![0u8; 8192];
            loop {
                let n = rd.read(&mut buf).await.unwrap();
                if n == 0 {
                    return got;
                }
                got.extend_from_slice(&buf[..n]);
            }
        });
        writer.await.unwrap();
        assert_eq!(server.await.unwrap(), LEN);
        assert!(reader.await.unwrap() == expect, "the echo differs");
    });
}

/// The borrowed halves, one per task, on one stream, over a request/response exchange.
#[test]
fn borrowed_halves_and_shared_stream() {
    let rt = Runtime::builder().procs(2).build().unwrap();
    rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = Arc::new(TcpStream::connect(l.local_addr().unwrap()).await.unwrap());
        let (s, _) = l.accept().await.unwrap();
        let s = Arc::new(s);
        // Server: a reader task and a writer task on one stream (`&self` everywhere).
        let (tx, rx) = gmprt_runtime::chan::chan::<u32>(0);
        let sr = s.clone();
        let server_reader = gmprt_runtime::spawn(async move {
            let (rd, _) = sr.split();
            let mut b = [0u8; 4];
            for _ in 0..100 {
                rd.read_exact(&mut b).await.unwrap();
                tx.send(u32::from_le_bytes(b)).await.unwrap();
            }
        });
        let sw = s.clone();
        let server_writer = gmprt_runtime::spawn(async move {
            let (_, wr) = sw.split();
            while let Some(v) = rx.recv().await {
                wr.write_all(&(v * 2).to_le_bytes()).await.unwrap();
            }
        });
        let (rd, wr) = c.split();
        for i in 0..100u32 {
            wr.write_all(&i.to_le_bytes()).await.unwrap();
            let mut b = [0u8; 4];
            rd.read_exact(&mut b).await.unwrap();
            assert_eq!(u32::from_le_bytes(b), 2 * i);
        }
        server_reader.await.unwrap();
        server_writer.await.unwrap();
        assert_eq!(rd.peer_addr().unwrap(), wr.peer_addr().unwrap());
        assert_eq!(rd.local_addr().unwrap(), c.local_addr().unwrap());
    });
}

#[test]
fn reunite() {
    let rt = Runtime::builder().procs(1).build().unwrap();
    rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let (r1, w1) = TcpStream::connect(addr).await.unwrap().into_split();
        let (r2, w2) = TcpStream::connect(addr).await.unwrap().into_split();
        let gmprt_runtime::net::ReuniteError(r1, w2) = r1.reunite(w2).unwrap_err();
        let c1 = w1.reunite(r1).unwrap();
        let c2 = r2.reunite(w2).unwrap();
        // Neither was shut down by the reunion.
        let (s1, _) = l.accept().await.unwrap();
        let (s2, _) = l.accept().await.unwrap();
        for (c, s) in [(&c1, &s1), (&c2, &s2)] {
            let mut b = [0u8; 2];
            c.write_all(b"ok").await.unwrap();
            s.read_exact(&mut b).await.unwrap();
            s.write_all(&b).await.unwrap();
            c.read_exact(&mut b).await.unwrap();
            assert_eq!(&b, b"ok");
        }
    });
}

/// Many tasks write to one stream at once (each a whole message per `write_all`, small enough
/// that the kernel takes it in one piece) while one task reads: every message arrives.
#[test]
fn many_writers_one_stream() {
    let rt = Runtime::builder().procs(2).build().unwrap();
    rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = Arc::new(TcpStream::connect(l.local_addr().unwrap()).await.unwrap());
        let (s, _) = l.accept().await.unwrap();
        let writers: Vec<_> = (0..64u32)
            .map(|i| {
                let c = c.clone();
                gmprt_runtime::spawn(async move {
                    for j in 0..50u32 {
                        c.write_all(&(i * 1000 + j).to_le_bytes()).await.unwrap();
                    }
                })
            })
            .collect();
        let mut seen = vec![0u32; 64];
        let mut b = [0u8; 4];
        for _ in 0..64 * 50 {
            s.read_exact(&mut b).await.unwrap();
            let v = u32::from_le_bytes(b);
            let (i, j) = ((v / 1000) as usize, v % 1000);
            assert_eq!(j, seen[i], "writer {i}'s messages out of order");
            seen[i] += 1;
        }
        for w in writers {
            w.await.unwrap();
        }
    });
}
