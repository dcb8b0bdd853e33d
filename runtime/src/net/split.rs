//! The halves of a [`TcpStream`]: borrowed ([`TcpStream::split`]) and owned
//! ([`TcpStream::into_split`]).
//!
//! # Contract
//! * A read half reads, a write half writes; each has its direction's deadline and the
//!   stream's addresses. They are views: the stream's operations already take `&self`, so
//!   the halves exist for APIs that want the directions as two objects (and to move the
//!   owned ones to two tasks).
//! * The owned halves share the stream through an `Arc`. Dropping the [`OwnedWriteHalf`]
//!   shuts down the writing side (the peer reads the end of the stream), since a task left
//!   with the read half could not; the socket closes when both halves are gone.
//!   [`OwnedReadHalf::reunite`] gives the stream back without shutting anything down.

use super::TcpStream;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

/// The reading half of a borrowed [`TcpStream`] ([`TcpStream::split`]).
#[derive(Debug, Clone, Copy)]
pub struct ReadHalf<'a>(&'a TcpStream);

/// The writing half of a borrowed [`TcpStream`] ([`TcpStream::split`]).
#[derive(Debug, Clone, Copy)]
pub struct WriteHalf<'a>(&'a TcpStream);

/// The reading half of a [`TcpStream`] split by [`TcpStream::into_split`]: movable to
/// another task.
#[derive(Debug)]
pub struct OwnedReadHalf {
    stream: Arc<TcpStream>,
}

/// The writing half of a [`TcpStream`] split by [`TcpStream::into_split`]: movable to another
/// task. Dropping it shuts the writing side down.
#[derive(Debug)]
pub struct OwnedWriteHalf {
    stream: Arc<TcpStream>,
    /// False once `reunite` took the stream back.
    shutdown_on_drop: bool,
}

impl<'a> ReadHalf<'a> {
    pub(crate) fn new(s: &'a TcpStream) -> Self {
        ReadHalf(s)
    }

    /// The stream.
    pub(crate) fn stream(&self) -> &'a TcpStream {
        self.0
    }
}

impl<'a> WriteHalf<'a> {
    pub(crate) fn new(s: &'a TcpStream) -> Self {
        WriteHalf(s)
    }

    /// The stream.
    pub(crate) fn stream(&self) -> &'a TcpStream {
        self.0
    }
}

impl OwnedReadHalf {
    pub(crate) fn new(stream: Arc<TcpStream>) -> Self {
        OwnedReadHalf { stream }
    }

    /// The stream.
    pub(crate) fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// Puts the halves back together into the stream (nothing is shut down).
    ///
    /// ```
    /// # let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
    /// # rt.block_on(async {
    /// use gmprt_runtime::net::{TcpListener, TcpStream};
    /// let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    /// let conn = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
    /// let (rd, wr) = conn.into_split();
    /// let conn = rd.reunite(wr).unwrap();
    /// conn.write_all(b"still open").await.unwrap();
    /// # });
    /// ```
    ///
    /// # Errors
    /// [`ReuniteError`], holding both halves, when they come from different streams.
    pub fn reunite(self, mut other: OwnedWriteHalf) -> Result<TcpStream, ReuniteError> {
        if !Arc::ptr_eq(&self.stream, &other.stream) {
            return Err(ReuniteError(self, other));
        }
        other.shutdown_on_drop = false;
        drop(other);
        // The halves are the only owners (neither is `Clone`) and the write half is gone.
        Ok(Arc::try_unwrap(self.stream).expect("a split stream has exactly two halves"))
    }
}

impl OwnedWriteHalf {
    pub(crate) fn new(stream: Arc<TcpStream>) -> Self {
        OwnedWriteHalf { stream, shutdown_on_drop: true }
    }

    /// The stream.
    pub(crate) fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// Puts the halves back together; see [`OwnedReadHalf::reunite`].
    ///
    /// # Errors
    /// [`ReuniteError`] when they come from different streams.
    pub fn reunite(self, other: OwnedReadHalf) -> Result<TcpStream, ReuniteError> {
        other.reunite(self)
    }
}

impl Drop for OwnedWriteHalf {
    fn drop(&mut self) {
        if self.shutdown_on_drop {
            // Nothing to report to: a reset connection has no writing side left to shut.
            let _ = self.stream.shutdown_write();
        }
    }
}

/// The two halves given to `reunite` came from different streams; here they are back.
#[derive(Debug)]
pub struct ReuniteError(pub OwnedReadHalf, pub OwnedWriteHalf);

impl fmt::Display for ReuniteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tried to reunite the halves of two different TCP streams")
    }
}

impl std::error::Error for ReuniteError {}

/// The read half's methods: [`TcpStream`]'s, for the reading direction.
macro_rules! read_methods {
    () => {
        /// Reads into `buf`; `Ok(0)` at the end of the stream. See [`TcpStream::read`].
        ///
        /// # Errors
        /// As [`TcpStream::read`].
        pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
            self.stream().read(buf).await
        }

        /// Reads exactly `buf.len()` bytes. See [`TcpStream::read_exact`].
        ///
        /// # Errors
        /// As [`TcpStream::read_exact`].
        pub async fn read_exact(&self, buf: &mut [u8]) -> io::Result<()> {
            self.stream().read_exact(buf).await
        }

        /// Reads without consuming. See [`TcpStream::peek`].
        ///
        /// # Errors
        /// As [`TcpStream::peek`].
        pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
            self.stream().peek(buf).await
        }

        /// Sets the stream's read deadline. See [`TcpStream::set_read_deadline`].
        pub fn set_read_deadline(&self, at: Option<Instant>) {
            self.stream().set_read_deadline(at)
        }

        /// The remote address. See [`TcpStream::peer_addr`].
        ///
        /// # Errors
        /// As [`TcpStream::peer_addr`].
        pub fn peer_addr(&self) -> io::Result<SocketAddr> {
            self.stream().peer_addr()
        }

        /// The local address.
        ///
        /// # Errors
        /// The OS's.
        pub fn local_addr(&self) -> io::Result<SocketAddr> {
            self.stream().local_addr()
        }
    };
}

/// The write half's methods: [`TcpStream`]'s, for the writing direction.
macro_rules! write_methods {
    () => {
        /// Writes from `buf`. See [`TcpStream::write`].
        ///
        /// # Errors
        /// As [`TcpStream::write`].
        pub async fn write(&self, buf: &[u8]) -> io::Result<usize> {
            self.stream().write(buf).await
        }

        /// Writes all of `buf`. See [`TcpStream::write_all`].
        ///
        /// # Errors
        /// As [`TcpStream::write_all`].
        pub async fn write_all(&self, buf: &[u8]) -> io::Result<()> {
            self.stream().write_all(buf).await
        }

        /// Shuts the writing side down (Go's `CloseWrite`): the peer reads the end of the
        /// stream.
        ///
        /// # Errors
        /// As [`TcpStream::shutdown`].
        pub fn shutdown(&self) -> io::Result<()> {
            self.stream().shutdown_write()
        }

        /// Sets the stream's write deadline. See [`TcpStream::set_write_deadline`].
        pub fn set_write_deadline(&self, at: Option<Instant>) {
            self.stream().set_write_deadline(at)
        }

        /// The remote address. See [`TcpStream::peer_addr`].
        ///
        /// # Errors
        /// As [`TcpStream::peer_addr`].
        pub fn peer_addr(&self) -> io::Result<SocketAddr> {
            self.stream().peer_addr()
        }

        /// The local address.
        ///
        /// # Errors
        /// The OS's.
        pub fn local_addr(&self) -> io::Result<SocketAddr> {
            self.stream().local_addr()
        }
    };
}

impl ReadHalf<'_> {
    read_methods!();
}

impl OwnedReadHalf {
    read_methods!();
}

impl WriteHalf<'_> {
    write_methods!();
}

impl OwnedWriteHalf {
    write_methods!();
}
