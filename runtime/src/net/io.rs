//! futures-io's [`AsyncRead`] and [`AsyncWrite`] for the TCP types, so that generic code
//! (codecs, `futures::io::copy`, hyper through an adapter) runs on them.
//!
//! # Contract
//! * [`TcpStream`], `&TcpStream` and the read halves implement `AsyncRead`; [`TcpStream`],
//!   `&TcpStream` and the write halves implement `AsyncWrite`. Each `poll_*` is the matching
//!   inherent operation as a poll (same parking, deadlines, errors); the inherent `async fn`s
//!   need no trait in scope.
//! * `poll_write_vectored` sends all the slices in one `sendmsg(MSG_NOSIGNAL)`.
//! * `poll_flush` does nothing (a TCP socket has no user-space buffer): `Ok(())`.
//! * `poll_close` shuts down the writing side (the peer reads the end of the stream); the
//!   socket stays open for reading until dropped.
//! * A waker is kept per task, so several tasks may poll one `&TcpStream` at once
//!   (`netpoll/desc.rs`).

use super::split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, WriteHalf};
use super::TcpStream;
use futures_io::{AsyncRead, AsyncWrite};
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};

/// `AsyncRead` for a type that can lend its stream.
macro_rules! async_read {
    ($t:ty, |$s:ident| $stream:expr) => {
        impl AsyncRead for $t {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut [u8],
            ) -> Poll<io::Result<usize>> {
                let $s = &*self;
                $stream.poll_read_priv(cx, buf)
            }
        }
    };
}

/// `AsyncWrite` for a type that can lend its stream.
macro_rules! async_write {
    ($t:ty, |$s:ident| $stream:expr) => {
        impl AsyncWrite for $t {
            fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
                let $s = &*self;
                $stream.poll_write_priv(cx, buf)
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                let $s = &*self;
                $stream.poll_write_vectored_priv(cx, bufs)
            }

            fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Ok(()))
            }

            fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                let $s = &*self;
                Poll::Ready($stream.shutdown_write())
            }
        }
    };
}

async_read!(TcpStream, |s| s);
async_read!(&TcpStream, |s| *s);
async_read!(ReadHalf<'_>, |s| s.stream());
async_read!(OwnedReadHalf, |s| s.stream());

async_write!(TcpStream, |s| s);
async_write!(&TcpStream, |s| *s);
async_write!(WriteHalf<'_>, |s| s.stream());
async_write!(OwnedWriteHalf, |s| s.stream());
