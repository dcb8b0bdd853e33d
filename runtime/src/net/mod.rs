//! Network I/O on the netpoller: Go's `net` package for gmprt tasks.
//!
//! | Go                                   | here                                               |
//! |--------------------------------------|----------------------------------------------------|
//! | `net.Listen("tcp", addr)`, `Accept`  | [`TcpListener::bind`], [`TcpListener::accept`]     |
//! | `net/http`'s accept loop (back-off on `EMFILE`) | [`TcpListener::accept_retrying`]    |
//! | `TCPListener.SetDeadline`            | [`TcpListener::set_deadline`]                      |
//! | `SetKeepAlive`, `SetReadBuffer`, ... | [`TcpStream::set_keepalive`], [`TcpStream::set_read_buffer`], ... |
//! | `net.Dial("tcp", addr)`              | [`TcpStream::connect`]                             |
//! | `conn.Read` / `conn.Write`           | [`TcpStream::read`] / [`TcpStream::write_all`]     |
//! | `SetReadDeadline`, `SetWriteDeadline`| [`TcpStream::set_read_deadline`], ...              |
//! | `CloseWrite`                         | [`TcpStream::shutdown`]`(Shutdown::Write)`         |
//! | `net.ListenUDP`, `ReadFrom`, `WriteTo` | [`UdpSocket`]                                    |
//! | `net.LookupHost` (cgo resolver)      | [`lookup_host`] (through [`crate::syscall`])       |
//! | `net.LookupIP`                       | [`lookup_ip`]                                      |
//! | `net.OpError`                        | [`OpError`], inside an [`std::io::Error`]          |
//!
//! # Contract
//! * **Inside a runtime.** Every socket is registered with the netpoller of the runtime it
//!   is created in, so it must be created inside one (a task or `Runtime::block_on`);
//!   elsewhere creation fails with an error saying so. It may be used from any task of that
//!   runtime and from its `block_on`.
//! * **Parks the task, never the M.** Sockets are non-blocking: an operation that would block
//!   parks the task on its descriptor (`netpoll/`), and an M that polls the network (in
//!   `findRunnable`, on its idle path, or sysmon) makes it runnable when the socket is ready.
//!   A host-name lookup is the exception Go also makes: it blocks the M inside
//!   [`crate::syscall`], which hands the P to another M.
//! * **`&self` everywhere.** One socket may be read by one task while another writes, as Go's
//!   conns are shared by goroutines; the async methods need no trait in scope, and the TCP
//!   types also implement futures-io's `AsyncRead`/`AsyncWrite` (`io.rs`).
//! * **Errors** are `io::Error`s with the OS's kind and a message naming the operation and
//!   the address ([`OpError`]); deadlines give `TimedOut`; writes never raise `SIGPIPE`; a
//!   read after the peer closed gives `Ok(0)`.
//! * **Drop** deregisters the socket from the netpoller, then closes it. At runtime shutdown
//!   every registered socket is marked closed (its operations fail) and the tasks parked on
//!   sockets are woken and dropped with the rest, so their sockets close too.
//!
//! Differences from Go, said plainly: a conn's concurrent writes are not serialised (Go's
//! `fdMutex` makes each `Write` atomic against the others: give a stream one writer, or a
//! [`crate::sync::Mutex`]). TCP keep-alive is on by default with Go's 15 s period.

mod addr;
mod error;
mod io;
mod listener;
mod split;
mod stream;
mod udp;

pub use addr::{lookup_host, lookup_ip, ToSocketAddrs};
pub use error::OpError;
pub use listener::{is_temporary_accept_error, TcpListener};
pub use split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
pub use stream::TcpStream;
pub use udp::UdpSocket;
