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
