//! Network I/O on the netpoller: Go's `net` package for gmprt tasks.
//!
//! Sockets are non-blocking and registered with the runtime's netpoller (`netpoll/`): an
//! operation that would block parks the task, never the M, and the M that polls the network
//! (in `findRunnable`, on its idle path, or sysmon) wakes it when the socket is ready.
//! Every type must be created inside a gmprt runtime (a task or `Runtime::block_on`).

mod tcp;

pub use tcp::{TcpListener, TcpStream};
