//! Helpers shared by the net tests (each test file includes what it needs).
#![allow(dead_code)]

use gmprt_runtime::dump::{TaskState, WaitReason};
use gmprt_runtime::net::{TcpListener, TcpStream};
use gmprt_runtime::Handle;

/// Tasks parked on a socket now, from the dump: the tests wait for this event, never sleep.
pub fn parked_on_net() -> usize {
    let d = Handle::try_current().expect("inside the runtime").dump();
    d.tasks
        .iter()
        .filter(|t| t.state == TaskState::Parked && matches!(t.wait, WaitReason::Net { .. }))
        .count()
}

/// Yields until exactly `n` tasks are parked on sockets.
pub async fn until_parked_on_net(n: usize) {
    while parked_on_net() != n {
        gmprt_runtime::yield_now().await;
    }
}

/// A connected pair over loopback: (client, server side), and the listener.
pub async fn pair() -> (TcpStream, TcpStream, TcpListener) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    let (s, _) = l.accept().await.unwrap();
    (c, s, l)
}

/// Open descriptors of this process (`/proc/self/fd`; the listing's own descriptor is in
/// every count alike).
pub fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd").count()
}

/// Open sockets of this process (`/proc/self/fd` entries that link to `socket:[...]`).
pub fn socket_count() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|l| l.to_string_lossy().starts_with("socket:"))
        .count()
}
