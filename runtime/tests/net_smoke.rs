//! Smoke test of the netpoller through TCP: an echo over loopback with many clients, on one
//! P and on two, then the netpoller's books: no socket still registered, no waiter counted.
#![cfg(all(unix, not(loom)))]

use gmprt_runtime::net::{TcpListener, TcpStream};
use gmprt_runtime::Runtime;

const CLIENTS: u32 = 200;

#[test]
fn echo_many_clients() {
    for procs in [1, 2] {
        let rt = Runtime::builder().procs(procs).build().unwrap();
        rt.block_on(async {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let server = gmprt_runtime::spawn(async move {
                let mut conns = Vec::new();
                for _ in 0..CLIENTS {
                    let (s, _) = l.accept().await.unwrap();
                    conns.push(gmprt_runtime::spawn(async move {
                        let mut buf = [0u8; 64];
                        loop {
                            let n = s.read(&mut buf).await.unwrap();
                            if n == 0 {
                                break;
                            }
                            s.write_all(&buf[..n]).await.unwrap();
                        }
                    }));
                }
                conns
            });
            let clients: Vec<_> = (0..CLIENTS)
                .map(|i| {
                    gmprt_runtime::spawn(async move {
                        let s = TcpStream::connect(addr).await.unwrap();
                        let msg = i.to_le_bytes();
                        for _ in 0..10 {
                            s.write_all(&msg).await.unwrap();
                            let mut got = [0u8; 4];
                            s.read_exact(&mut got).await.unwrap();
                            assert_eq!(got, msg);
                        }
                    })
                })
                .collect();
            for c in clients {
                c.await.unwrap();
            }
            for conn in server.await.unwrap() {
                conn.await.unwrap();
            }
        });
        let st = rt.stats();
        eprintln!("procs {procs}: {st:?}");
        // Every socket was dropped (deregistered) and every parked waker was taken back.
        assert_eq!((st.net_fds, st.net_waiters), (0, 0), "procs {procs}");
    }
}

/// One P, one M, and that M blocked in the netpoller (a reader waits on a socket): a spawn from
/// outside finds the P idle and no parked M. It starts no second thread: the M in the netpoller
/// holds no P and is woken to run the task (`sched/idle.rs`, step 5), counted in
/// `startm_deferred`. Go's `startm` would start a thread for it, and the runtime used to: a third
/// M for two Ps left cores idle under HTTP (benches/README.md, "No third M").
///
/// No timing decides a pass. With one P and no blocking call, every start for queued tasks that
/// finds no parked M is deferred, so `threads == 1` holds after every spawn whatever the
/// interleaving; each task's result is awaited. Each spawn first waits for the event that makes
/// a deferral likely (the P idle and the M blocked in the netpoller again since the last task,
/// read from `stats()`), but the M can still be on its way out of a poll that a pending break
/// ended at that moment, and then take the P first: that spawn defers nothing. So the test
/// spawns until it has seen 3 deferrals (at most 1,000 tasks; a spawn almost always defers).
/// The waits spin on that event alone, with no clock (as `tests/common`'s `wait_until`).
#[test]
fn a_spawn_while_the_only_m_polls_starts_no_thread() {
    const DEFERRALS: u64 = 3;
    let rt = Runtime::builder().procs(1).build().unwrap();
    // A reader parked on a socket that never gets data: the only M's idle path is the netpoller.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let reader = rt.spawn(async move {
        let s = TcpStream::connect(addr).await.unwrap();
        let mut b = [0u8; 1];
        s.read(&mut b).await.unwrap()
    });
    let (peer, _) = listener.accept().unwrap();
    let (mut blocks, mut seen) = (0, 0);
    for i in 0..1000u64 {
        let deferred = loop {
            let st = rt.stats();
            if st.net_waiters == 1 && st.idle_procs == 1 && st.netpoll_blocks > blocks {
                blocks = st.netpoll_blocks;
                break st.startm_deferred;
            }
            std::thread::yield_now();
        };
        assert_eq!(rt.block_on(rt.spawn(async move { i })).unwrap(), i);
        let st = rt.stats();
        assert_eq!((st.threads, st.startm_no_m), (1, 0), "a thread was started for the task: {st:?}");
        assert!(st.startm_deferred <= deferred + 1, "one spawn, one wakep: {st:?}");
        seen += st.startm_deferred - deferred;
        if seen == DEFERRALS {
            break;
        }
    }
    assert_eq!(seen, DEFERRALS, "too few spawns found the M in the netpoller");
    // The reader is still served: one byte from the peer ends it.
    std::io::Write::write_all(&mut &peer, b"x").unwrap();
    assert_eq!(rt.block_on(reader).unwrap(), 1);
}
