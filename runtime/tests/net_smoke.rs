//! Smoke test of the netpoller through TCP: an echo over loopback with many clients.
#![cfg(all(unix, not(loom)))]

use gmprt_runtime::net::{TcpListener, TcpStream};
use gmprt_runtime::Runtime;

#[test]
fn echo_many_clients() {
    for procs in [1, 2] {
        let rt = Runtime::builder().procs(procs).build().unwrap();
        rt.block_on(async {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let server = gmprt_runtime::spawn(async move {
                for _ in 0..200 {
                    let (s, _) = l.accept().await.unwrap();
                    gmprt_runtime::spawn(async move {
                        let mut buf = [0u8; 64];
                        loop {
                            let n = s.read(&mut buf).await.unwrap();
                            if n == 0 {
                                break;
                            }
                            s.write_all(&buf[..n]).await.unwrap();
                        }
                    });
                }
            });
            let clients: Vec<_> = (0..200u32)
                .map(|i| {
                    gmprt_runtime::spawn(async move {
                        let s = TcpStream::connect(addr).await.unwrap();
                        let msg = i.to_le_bytes();
                        for _ in 0..10 {
                            s.write_all(&msg).await.unwrap();
                            let mut got = [0u8; 4];
                            let mut have = 0;
                            while have < 4 {
                                have += s.read(&mut got[have..]).await.unwrap();
                            }
                            assert_eq!(got, msg);
                        }
                    })
                })
                .collect();
            for c in clients {
                c.await.unwrap();
            }
            server.await.unwrap();
        });
        let st = rt.stats();
        eprintln!("procs {procs}: {st:?}");
    }
}
