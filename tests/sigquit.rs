//! Go's SIGQUIT dump: a runtime built with `dump_on_sigquit(true)` answers SIGQUIT with a
//! task dump on stderr and keeps running. Its own test binary: the handler is process-wide.
//! Without the handler, SIGQUIT's default action would end this process (the test fails).

use gmprt::runtime::chan::chan;
use gmprt::runtime::dump::{sigquit_dumps, TaskState};
use gmprt::runtime::Runtime;

#[test]
fn sigquit_prints_a_dump_and_the_program_keeps_running() {
    let rt = Runtime::builder().procs(2).dump_on_sigquit(true).build().unwrap();
    let (tx, rx) = chan::<u32>(0);
    let h = rt.spawn(async move { rx.recv().await });
    // Wait (on the dump's own view) until the task is parked, so the dump has a line for it.
    while !rt.dump().tasks.iter().any(|t| t.id == Some(h.id()) && t.state == TaskState::Parked) {
        std::thread::yield_now();
    }
    let before = sigquit_dumps();
    let status = std::process::Command::new("kill")
        .args(["-QUIT", &std::process::id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
    // The handler thread counts each dump it printed: wait for ours.
    while sigquit_dumps() == before {
        std::thread::yield_now();
    }
    // Still running: the task completes normally.
    rt.block_on(async move { tx.send(7).await.unwrap() });
    assert_eq!(rt.block_on(h).unwrap(), Some(7));
}
