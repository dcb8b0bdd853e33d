//! Networking on gmprt (issue 16): the netpoller's TCP and UDP types, and [`hyper`], which runs
//! hyper 1.x — the Rust HTTP implementation — on gmprt tasks.
//!
//! Go's `net` package blocks a goroutine on a socket and lets the netpoller wake it; gmprt's net
//! types do the same for a task: a read that would block parks the task, never its M, and the
//! poller makes it runnable again when the socket is ready. They implement futures-io's
//! `AsyncRead`/`AsyncWrite`, which is all [`hyper::HyperIo`] needs to carry HTTP over them.

pub use gmprt_runtime::net::*;

pub mod hyper;
