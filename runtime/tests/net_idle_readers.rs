//! Issue 23, case 1: idle readers on connected sockets park, and the runtime goes quiet.
//!
//! Before the fix, `connect` registered its socket with the netpoller before calling
//! `connect()`. A TCP socket that has not started connecting is in `TCP_CLOSE`, which epoll
//! reports as `EPOLLOUT | EPOLLHUP`; a poll in that window took the hang-up for a final EOF,
//! the `recv` said `EAGAIN`, the clear removed the readiness bit but not the final one, and the
//! read loop tried again inside the same poll, for ever: a worker at 100% CPU, and a `drop` of
//! the runtime that never returned. It showed in 4 of 5 runs with 200 connections.
//!
//! Its own test binary: it reads the CPU time of the whole process (`/proc/self/stat`), which
//! other tests running beside it in one binary would add to.
//!
//! No timing decides a pass: the test waits for an event (every reader parked on its socket,
//! read from the dump) and for `drop` to return; the bounds on those waits (60 s) only turn a
//! hang into a failure. The CPU check allows half a core over an idle window (`IDLE_WINDOW`):
//! an idle runtime uses about none, a spinning M a whole core, and a busy machine only gives it
//! less.
#![cfg(all(target_os = "linux", not(loom)))]

use gmprt_runtime::dump::{TaskState, WaitReason};
use gmprt_runtime::net::TcpStream;
use gmprt_runtime::Runtime;
use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const CONNS: usize = 200;
const ROUNDS: usize = 20;
/// How long a wait for an event may take before the test calls it a hang.
const HANG: Duration = Duration::from_secs(60);
/// How long the runtime's CPU time is watched once every reader is parked: 250 ms, 25 clock
/// ticks of `/proc/self/stat` at the usual 100 Hz. A spinning M, once it spins, spins for ever
/// (the bug above), so a longer window would not catch more rounds: with 1 s the test took 30 s
/// in CI, with 250 ms 17 s on the same 2-core VM.
const IDLE_WINDOW: Duration = Duration::from_millis(250);

/// User + system CPU time of this process so far (`/proc/self/stat`, fields 14 and 15).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The command name (field 2) is in parentheses and may hold spaces: split after it.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    // `rest` starts at field 3, so fields 14 and 15 are at indices 11 and 12.
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    // SAFETY: sysconf reads a constant of the system; no memory is passed.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_millis(ticks * 1000 / hz)
}

/// Tasks parked on a socket's read side (a connect parks on its write side).
fn parked_readers(rt: &Runtime) -> usize {
    rt.dump()
        .tasks
        .iter()
        .filter(|t| t.state == TaskState::Parked && matches!(t.wait, WaitReason::Net { write: false, .. }))
        .count()
}

#[test]
fn idle_connected_readers_park_and_the_runtime_drops() {
    for round in 0..ROUNDS {
        // The peer: a plain thread that accepts every connection and holds it, never writing.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        // Room in the accept queue for every connection at once. std listens with a backlog
        // of 128: the 200 connects overflowed it before the acceptor thread ran, the kernel
        // dropped the extra SYNs and their clients sent them again only after TCP's 1-s
        // initial retransmission timeout, so a round waited ~1 s for its connections (the
        // binary took 13-16 s on the 2-core VM, 5 s with room for them all).
        // A second listen() on a listening socket only changes its backlog (listen(2)).
        // SAFETY: the descriptor is the listener's own, open for this whole scope; no memory
        // is passed.
        let rc = unsafe { libc::listen(listener.as_raw_fd(), 2 * CONNS as libc::c_int) };
        assert_eq!(rc, 0, "listen: {}", std::io::Error::last_os_error());
        let addr = listener.local_addr().unwrap();
        let (held_tx, held_rx) = mpsc::channel();
        let (all_tx, all_rx) = mpsc::channel();
        let acceptor = std::thread::spawn(move || {
            let held: Vec<_> = (0..CONNS).map(|_| listener.accept().unwrap().0).collect();
            all_tx.send(()).unwrap();
            held_rx.recv().ok(); // hold them until the round is over
            drop(held);
        });

        // One task per connection that connects and then reads: while the first readers are
        // parked (an M blocked in the netpoller), the later ones register their sockets —
        // the window in which the old `connect` showed the poller a hang-up.
        let rt = Runtime::builder().procs(2).build().unwrap();
        let readers: Vec<_> = (0..CONNS)
            .map(|_| {
                rt.spawn(async move {
                    let s = TcpStream::connect(addr).await.unwrap();
                    let mut buf = [0u8; 16];
                    s.read(&mut buf).await
                })
            })
            .collect();

        let quiet = (|| {
            all_rx.recv_timeout(HANG).map_err(|_| "the connections were not all made".to_string())?;
            let start = Instant::now();
            while parked_readers(&rt) < CONNS {
                if start.elapsed() > HANG {
                    return Err(format!(
                        "only {} of {CONNS} idle readers parked on their sockets",
                        parked_readers(&rt)
                    ));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let before = cpu_time();
            std::thread::sleep(IDLE_WINDOW);
            let used = cpu_time() - before;
            if used >= IDLE_WINDOW / 2 {
                return Err(format!("the idle runtime used {used:?} of CPU in {IDLE_WINDOW:?}"));
            }
            Ok(())
        })();
        if let Err(e) = quiet {
            // A spinning M would keep the runtime's drop from returning: leak it, and fail.
            std::mem::forget(readers);
            std::mem::forget(rt);
            panic!("round {round}: {e}");
        }

        // Every reader stays parked (the peer never writes); the drop cancels them and must
        // return. Done on a helper thread, so a hang fails the test instead of stopping it.
        let (done_tx, done_rx) = mpsc::channel();
        std::thread::spawn(move || {
            drop(readers);
            drop(rt);
            done_tx.send(()).unwrap();
        });
        done_rx
            .recv_timeout(HANG)
            .unwrap_or_else(|_| panic!("round {round}: dropping the runtime did not return"));
        held_tx.send(()).unwrap();
        acceptor.join().unwrap();
    }
}
