//! Issue 23, case 3: a server's accept loop outlives `EMFILE` (Go's `net/http` back-off).
//!
//! Its own test binary: it lowers the process's soft open-file limit, which every test in a
//! binary would share. Nothing here depends on timing: the limit is restored from the retry
//! callback itself (the event that says the server hit it), and the connections were queued
//! in the kernel before the limit was lowered.
#![cfg(all(target_os = "linux", not(loom)))]

use gmprt_runtime::net::{is_temporary_accept_error, TcpListener};
use gmprt_runtime::Runtime;
use std::time::Duration;

const CLIENTS: usize = 8;

fn nofile() -> libc::rlimit {
    let mut l = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit into the struct it is given.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) }, 0);
    l
}

fn set_soft_nofile(soft: u64) {
    let l = libc::rlimit { rlim_cur: soft, rlim_max: nofile().rlim_max };
    // SAFETY: setrlimit reads the struct it is given.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &l) }, 0, "{}", std::io::Error::last_os_error());
}

fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").unwrap().count() as u64
}

#[test]
fn accept_retrying_rides_out_emfile() {
    // Built first: the first runtime raises the soft limit to the hard one (rlimit.rs).
    let rt = Runtime::builder().procs(2).build().unwrap();
    let restore: u64 = nofile().rlim_cur;
    rt.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // The clients connect from blocking std sockets: the kernel completes each handshake
        // and queues it for accept, whatever the server's limit later.
        let clients: Vec<_> = (0..CLIENTS).map(|_| std::net::TcpStream::connect(addr).unwrap()).collect();
        // Room for two accepted connections (read_dir's own descriptor is in the count).
        set_soft_nofile(open_fds() + 1);

        let mut retries = Vec::new();
        let mut accepted = Vec::new();
        for _ in 0..CLIENTS {
            let (s, peer) = listener
                .accept_retrying(|e, delay| {
                    retries.push((e.to_string(), is_temporary_accept_error(e), delay));
                    // The server has hit the limit: free descriptors, as finishing
                    // connections would.
                    set_soft_nofile(restore);
                })
                .await
                .unwrap();
            assert_eq!(s.peer_addr().unwrap(), peer);
            accepted.push(s);
        }
        set_soft_nofile(restore);
        assert_eq!(accepted.len(), CLIENTS, "every queued connection accepted");
        assert_eq!(retries.len(), 1, "one EMFILE, then the limit was restored: {retries:?}");
        let (msg, temporary, delay) = &retries[0];
        assert!(temporary, "{msg}");
        assert!(msg.starts_with(&format!("accept on {addr}: Too many open files")), "{msg}");
        assert_eq!(*delay, Duration::from_millis(5), "Go's first back-off");
        drop(clients);
    });
}

/// What counts as temporary: Go's list, and nothing that would make a server spin.
#[test]
fn temporary_accept_errors() {
    for code in [libc::EMFILE, libc::ENFILE, libc::ENOBUFS, libc::ENOMEM, libc::ECONNABORTED] {
        assert!(is_temporary_accept_error(&std::io::Error::from_raw_os_error(code)), "{code}");
    }
    for code in [libc::EBADF, libc::EINVAL, libc::ENOTSOCK] {
        assert!(!is_temporary_accept_error(&std::io::Error::from_raw_os_error(code)), "{code}");
    }
    assert!(!is_temporary_accept_error(&std::io::ErrorKind::TimedOut.into()));
}
