//! Writes never raise SIGPIPE, even with the signal at its default action (which kills the
//! process): Rust binaries ignore SIGPIPE at start-up, but a library cannot count on that (a C
//! host, `-Zon-broken-pipe=kill`). Plain writes are std's `send(MSG_NOSIGNAL)`; vectored ones
//! are `sendmsg(MSG_NOSIGNAL)` — std's `write_vectored` is `writev`, which raises it. Its own
//! binary: it changes a process-wide signal disposition.
#![cfg(all(target_os = "linux", not(loom)))]

mod common;

use common::pair;
use futures_util::io::AsyncWriteExt;
use gmprt_runtime::Runtime;
use std::io::{ErrorKind, IoSlice};

#[test]
fn writes_to_a_closed_peer_fail_without_sigpipe() {
    // SAFETY: restoring the default action of a signal; nothing else in this binary handles it.
    let old = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    assert_ne!(old, libc::SIG_ERR);
    let rt = Runtime::builder().procs(1).build().unwrap();
    rt.block_on(async {
        for vectored in [false, true] {
            let (c, s, _l) = pair().await;
            drop(s);
            // Until the peer's reset arrives the kernel may take the bytes; then EPIPE.
            let e = loop {
                let r = if vectored {
                    (&c).write_vectored(&[IoSlice::new(b"a"), IoSlice::new(b"b")]).await
                } else {
                    c.write(b"ab").await
                };
                match r {
                    Ok(_) => gmprt_runtime::yield_now().await,
                    Err(e) => break e,
                }
            };
            assert!(matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset), "{e:?}");
            // Once more after the error: the path that raises SIGPIPE on a dead connection.
            let again =
                if vectored { (&c).write_vectored(&[IoSlice::new(b"c")]).await } else { c.write(b"c").await };
            assert_eq!(again.unwrap_err().kind(), ErrorKind::BrokenPipe);
        }
    });
}
