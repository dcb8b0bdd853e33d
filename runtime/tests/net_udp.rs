//! UDP over loopback: unconnected and connected round trips, and a sender and a receiver task
//! sharing one socket.
#![cfg(all(unix, not(loom)))]

use gmprt_runtime::net::UdpSocket;
use gmprt_runtime::Runtime;
use std::sync::Arc;

#[test]
fn round_trip_send_to_recv_from() {
    let rt = Runtime::builder().procs(2).build().unwrap();
    rt.block_on(async {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let saddr = server.local_addr().unwrap();
        let echo = gmprt_runtime::spawn(async move {
            let mut buf = [0u8; 64];
            for _ in 0..100 {
                let (n, from) = server.recv_from(&mut buf).await.unwrap();
                server.send_to(&buf[..n], from).await.unwrap();
            }
        });
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut buf = [0u8; 64];
        for i in 0..100u32 {
            client.send_to(&i.to_le_bytes(), saddr).await.unwrap();
            let (n, from) = client.recv_from(&mut buf).await.unwrap();
            assert_eq!((&buf[..n], from), (&i.to_le_bytes()[..], saddr));
        }
        echo.await.unwrap();
    });
}

#[test]
fn connected_send_recv() {
    let rt = Runtime::builder().procs(1).build().unwrap();
    rt.block_on(async {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(a.peer_addr().unwrap_err().kind(), std::io::ErrorKind::NotConnected);
        a.connect(b.local_addr().unwrap()).await.unwrap();
        b.connect(a.local_addr().unwrap().to_string()).await.unwrap();
        assert_eq!(a.peer_addr().unwrap(), b.local_addr().unwrap());
        a.send(b"hello").await.unwrap();
        let mut buf = [0u8; 3];
        // Truncated to the buffer, as every UDP API.
        assert_eq!(b.recv(&mut buf).await.unwrap(), 3);
        assert_eq!(&buf, b"hel");
        b.send(b"back").await.unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(a.recv(&mut buf).await.unwrap(), 4);
        a.set_broadcast(true).unwrap();
        assert!(a.broadcast().unwrap());
        a.set_ttl(7).unwrap();
        assert_eq!(a.ttl().unwrap(), 7);
    });
}

/// A receiver task parked on the socket while another task sends from the same socket.
#[test]
fn sender_and_receiver_tasks_share_a_socket() {
    let rt = Runtime::builder().procs(2).build().unwrap();
    rt.block_on(async {
        let a = Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let baddr = b.local_addr().unwrap();
        let echo = gmprt_runtime::spawn(async move {
            let mut buf = [0u8; 8];
            for _ in 0..200 {
                let (n, from) = b.recv_from(&mut buf).await.unwrap();
                b.send_to(&buf[..n], from).await.unwrap();
            }
        });
        // One datagram in flight at a time (the receiver acknowledges each through a
        // channel), so a full loopback queue cannot drop any.
        let (ack, acked) = gmprt_runtime::chan::chan::<()>(0);
        let ra = a.clone();
        let receiver = gmprt_runtime::spawn(async move {
            let mut sum = 0u64;
            let mut buf = [0u8; 8];
            for _ in 0..200 {
                let (n, _) = ra.recv_from(&mut buf).await.unwrap();
                sum += u64::from(u32::from_le_bytes(buf[..n].try_into().unwrap()));
                ack.send(()).await.unwrap();
            }
            sum
        });
        for i in 0..200u32 {
            a.send_to(&i.to_le_bytes(), baddr).await.unwrap();
            acked.recv().await.unwrap();
        }
        echo.await.unwrap();
        assert_eq!(receiver.await.unwrap(), (0..200u64).sum::<u64>());
    });
}
