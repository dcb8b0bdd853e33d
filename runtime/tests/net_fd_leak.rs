//! No descriptor is leaked: 10,000 connections (connect, write, echo, read, drop) leave the
//! process with the descriptors it had, and a runtime dropped while a task is parked on a
//! socket forever closes that socket, runs the task's destructor and frees its poller.
//! Counts come from `/proc/self/fd`, so the tests of this binary run one at a time.
#![cfg(all(target_os = "linux", not(loom)))]

mod common;

use common::{fd_count, socket_count, until_parked_on_net};
use gmprt_runtime::net::{TcpListener, TcpStream};
use gmprt_runtime::Runtime;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

/// The tests count the whole process's descriptors: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const CONNS: usize = 10_000;

#[test]
fn ten_thousand_connections_leak_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before_rt = fd_count();
    let rt = Runtime::builder().procs(2).build().unwrap();
    // Each live connection holds two descriptors here (both ends are in this process): keep
    // a batch well inside the soft limit, which the runtime raised to the hard one.
    let limit = gmprt_runtime::nofile_limit().map_or(1024, |l| l.current.min(1 << 20) as usize);
    let batch = ((limit.saturating_sub(before_rt + 64)) / 4).clamp(16, 1000);
    let (during, registered_during) = rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let baseline = fd_count();
        let (done_tx, done_rx) = gmprt_runtime::chan::chan::<()>(CONNS);
        let server = gmprt_runtime::spawn(async move {
            for _ in 0..CONNS {
                let (s, _) = l.accept().await.unwrap();
                let done_tx = done_tx.clone();
                gmprt_runtime::spawn(async move {
                    let mut buf = [0u8; 16];
                    loop {
                        match s.read(&mut buf).await.unwrap() {
                            0 => break,
                            n => s.write_all(&buf[..n]).await.unwrap(),
                        }
                    }
                    drop(s);
                    done_tx.send(()).await.unwrap();
                });
            }
            l // kept open until every connection was accepted
        });
        let mut started = 0;
        while started < CONNS {
            let n = batch.min(CONNS - started);
            let clients: Vec<_> = (started..started + n)
                .map(|i| {
                    gmprt_runtime::spawn(async move {
                        let c = TcpStream::connect(addr).await.unwrap();
                        let msg = (i as u64).to_le_bytes();
                        c.write_all(&msg).await.unwrap();
                        let mut got = [0u8; 8];
                        c.read_exact(&mut got).await.unwrap();
                        assert_eq!(got, msg);
                    })
                })
                .collect();
            for c in clients {
                c.await.unwrap();
            }
            started += n;
        }
        let l = server.await.unwrap();
        for _ in 0..CONNS {
            done_rx.recv().await.unwrap();
        }
        let h = gmprt_runtime::Handle::try_current().unwrap();
        let registered = h.stats().net_fds;
        drop(l);
        assert_eq!(fd_count(), baseline - 1, "every connection's descriptors closed (the listener too)");
        (baseline, registered)
    });
    assert_eq!(registered_during, 1, "only the listener is still registered");
    assert!(during > before_rt, "the poller's descriptors exist while the runtime does");
    drop(rt);
    assert_eq!(fd_count(), before_rt, "the runtime's poller closed with it");
}

/// Sets its flag when dropped: the task's future was destroyed.
struct OnDrop(Arc<AtomicBool>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.store(true, SeqCst);
    }
}

/// A task parked in `read` forever and one parked in `accept` forever; the runtime is dropped
/// under them: no hang, both futures destroyed, every descriptor closed, the poller freed.
#[test]
fn runtime_shutdown_with_tasks_parked_on_sockets() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (before, sockets_before) = (fd_count(), socket_count());
    let (read_dropped, accept_dropped) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let rt = Runtime::builder().procs(2).build().unwrap();
    let client = rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (s, _) = l.accept().await.unwrap();
        let flag = OnDrop(read_dropped.clone());
        gmprt_runtime::spawn(async move {
            let _flag = flag;
            let mut buf = [0u8; 8];
            let r = s.read(&mut buf).await; // nobody writes
            unreachable!("the read returned: {r:?}");
        });
        let flag = OnDrop(accept_dropped.clone());
        gmprt_runtime::spawn(async move {
            let _flag = flag;
            let r = l.accept().await; // nobody else connects
            unreachable!("the accept returned: {r:?}");
        });
        until_parked_on_net(2).await;
        c // the client end outlives the runtime (a socket kept past shutdown)
    });
    drop(rt);
    assert!(read_dropped.load(SeqCst), "the task parked in read was not destroyed");
    assert!(accept_dropped.load(SeqCst), "the task parked in accept was not destroyed");
    // Left: the client end only (the server end and the listener closed with their tasks).
    // It keeps the runtime's shared state, and so its poller, until it goes.
    assert_eq!(socket_count(), sockets_before + 1);
    drop(client);
    assert_eq!(fd_count(), before, "the runtime's poller was freed (no task or socket kept it)");
}
