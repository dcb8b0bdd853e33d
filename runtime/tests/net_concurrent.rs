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
