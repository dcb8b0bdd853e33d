//! Go's start-up raise of the open-file limit (`runtime/src/rlimit.rs`). Its own test binary:
//! it changes a process-wide limit.

/// After the first runtime is built, the soft limit is the hard one (capped at the kernel's
/// `fs.nr_open` when unlimited), unless the raise was refused, and the limit the process now
/// has is the one reported.
#[cfg(target_os = "linux")]
#[test]
fn the_first_runtime_raises_the_open_file_soft_limit_to_the_hard_one() {
    assert_eq!(gmprt_runtime::nofile_limit(), None, "nothing before a runtime is built");
    // Start from a low soft limit (as a shell's default 1024 would be), so there is
    // something to raise whatever this machine's defaults are.
    let (soft, hard) = proc_limits();
    let low = soft.min(hard).min(256);
    let want = libc::rlimit { rlim_cur: low as libc::rlim_t, rlim_max: hard as libc::rlim_t };
    // SAFETY: `setrlimit` only reads the `rlimit` behind the pointer, valid for the call;
    // lowering the soft limit needs no privilege.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) }, 0);
    assert_eq!(proc_limits().0, low);
    let _rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
    let l = gmprt_runtime::nofile_limit().expect("getrlimit works on Unix");
    assert_eq!((l.current, l.hard), proc_limits(), "reported = what the process has");
    assert_eq!(l.original, low, "{l:?}");
    assert!(l.current > l.original || low == hard, "raised: {l:?}");
    if l.hard != u64::MAX {
        // The hard limit is finite: the soft limit is raised to it (no privilege needed).
        assert_eq!(l.current, l.hard, "{l:?}");
    } else {
        let nr_open: u64 = std::fs::read_to_string("/proc/sys/fs/nr_open").unwrap().trim().parse().unwrap();
        assert_eq!(l.current, l.original.max(nr_open), "{l:?}");
    }
    // A second runtime changes nothing more.
    let _rt2 = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
    assert_eq!(gmprt_runtime::nofile_limit(), Some(l));
}

/// (soft, hard) from `/proc/self/limits` (read independently of the code under test): "Max open files  S  H  files".
#[cfg(target_os = "linux")]
fn proc_limits() -> (u64, u64) {
    let limits = std::fs::read_to_string("/proc/self/limits").expect("/proc/self/limits");
    let line = limits.lines().find(|l| l.starts_with("Max open files")).expect("open files line");
    let f: Vec<&str> = line.split_whitespace().collect();
    let parse = |s: &str| if s == "unlimited" { u64::MAX } else { s.parse().unwrap() };
    (parse(f[3]), parse(f[4]))
}
