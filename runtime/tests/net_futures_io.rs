//! The futures-io impls (net/io.rs), driven through futures-util's extension traits as generic
//! code would: `TcpStream`, `&TcpStream` and the halves.
#![cfg(all(unix, not(loom)))]

mod common;

use common::pair;
use futures_util::io::{AsyncReadExt, AsyncWriteExt};
use gmprt_runtime::Runtime;
use std::io::IoSlice;

#[test]
fn stream_and_ref_read_write_close() {
    let rt = Runtime::builder().procs(2).build().unwrap();
    rt.block_on(async {
        let (mut c, s, _l) = pair().await;
        // Owned stream: write, flush (a no-op), close (shuts down the writing side).
        AsyncWriteExt::write_all(&mut c, b"through the trait").await.unwrap();
        c.flush().await.unwrap();
        c.close().await.unwrap();
        // `&TcpStream`: read to the end (the close above is the end).
        let mut got = Vec::new();
        (&s).read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"through the trait");
        // The other direction still works after the close: it only shut down writing.
        AsyncWriteExt::write_all(&mut &s, b"reply").await.unwrap();
        let mut buf = [0u8; 5];
        AsyncReadExt::read_exact(&mut c, &mut buf).await.unwrap();
        assert_eq!(&buf, b"reply");
    });
}

/// A vectored write sends every slice (one `sendmsg`); the reader sees them in order.
#[test]
fn vectored_write() {
    let rt = Runtime::builder().procs(1).build().unwrap();
    rt.block_on(async {
        let (c, s, _l) = pair().await;
        let bufs = [IoSlice::new(b"one "), IoSlice::new(b""), IoSlice::new(b"two "), IoSlice::new(b"three")];
        let n = (&c).write_vectored(&bufs).await.unwrap();
        assert_eq!(n, 13, "loopback takes 13 bytes in one call");
        let mut got = [0u8; 13];
        s.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"one two three");
    });
}

/// `futures_util::io::copy` between the halves of two streams: an echo server written with
/// generic code, 256 KiB through it.
#[test]
fn copy_between_halves() {
    let rt = Runtime::builder().procs(2).build().unwrap();
    rt.block_on(async {
        let (c, s, _l) = pair().await;
        let (srd, mut swr) = s.into_split();
        let echo = gmprt_runtime::spawn(async move {
            let n = futures_util::io::copy(srd, &mut swr).await.unwrap();
            swr.close().await.unwrap();
            n
        });
        let (mut crd, mut cwr) = c.into_split();
        let data: Vec<u8> = (0..256 * 1024).map(|i: u32| (i % 253) as u8).collect();
        let expect = data.clone();
        let writer = gmprt_runtime::spawn(async move {
            AsyncWriteExt::write_all(&mut cwr, &data).await.unwrap();
            cwr.close().await.unwrap();
        });
        let mut got = Vec::new();
        crd.read_to_end(&mut got).await.unwrap();
        writer.await.unwrap();
        assert_eq!(echo.await.unwrap(), expect.len() as u64);
        assert!(got == expect);
    });
}

/// The borrowed halves implement the traits too.
#[test]
fn borrowed_halves() {
    let rt = Runtime::builder().procs(1).build().unwrap();
    rt.block_on(async {
        let (c, s, _l) = pair().await;
        let (mut rd, mut wr) = c.split();
        AsyncWriteExt::write_all(&mut wr, b"ping").await.unwrap();
        let mut b = [0u8; 4];
        s.read_exact(&mut b).await.unwrap();
        s.write_all(b"pong").await.unwrap();
        AsyncReadExt::read_exact(&mut rd, &mut b).await.unwrap();
        assert_eq!(&b, b"pong");
        wr.close().await.unwrap();
        assert_eq!(s.read(&mut b).await.unwrap(), 0);
    });
}
