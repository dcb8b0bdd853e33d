//! Go's start-up raise of the open-file limit: the first [`Runtime`](crate::Runtime) built in a
//! process sets the soft `RLIMIT_NOFILE` to the hard one, once.
//!
//! Why: a runtime whose tasks are mostly waiting on sockets holds one descriptor per
//! connection, and the usual soft limit (1024) stops a server at a thousand clients while the
//! hard limit (often 524,288 or more) allows hundreds of times that. Go does the same in its
//! `syscall` package's init (since Go 1.19), silently keeping the old limit when the raise is
//! refused; so does this.
//!
//! Rules, as Go's on Linux: only the soft limit moves, and only up; a hard limit of
//! `RLIM_INFINITY` is capped at `/proc/sys/fs/nr_open` (the kernel refuses more); a refused
//! `setrlimit` leaves the limit as it was. Unlike Go ≥ 1.21, processes spawned afterwards
//! inherit the raised soft limit (std's `Command` has no hook to restore it without `unsafe`
//! `pre_exec`); a program that starts `select(2)`-based children can lower it with
//! `setrlimit` itself. Under `--cfg loom` nothing is changed.
use std::sync::OnceLock;

/// The process's open-file limits as the first runtime found and left them.
///
/// ```
/// let _rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
/// if let Some(l) = gmprt_runtime::nofile_limit() {
///     assert!(l.current >= l.original, "never lowered");
///     assert!(l.current <= l.hard, "never past the hard limit");
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NofileLimit {
    /// The soft limit before the raise.
    pub original: u64,
    /// The soft limit now (the hard limit, unless the raise was refused).
    pub current: u64,
    /// The hard limit (`u64::MAX` for unlimited).
    pub hard: u64,
}

static LIMIT: OnceLock<Option<NofileLimit>> = OnceLock::new();

/// What the raise did: `None` before any runtime was built in this process, off Unix, or if
/// `getrlimit` failed. See the module docs.
pub fn nofile_limit() -> Option<NofileLimit> {
    LIMIT.get().copied().flatten()
}

/// Raises the soft limit to the hard one (first call per process only); `Builder::build`'s
/// first step.
pub(crate) fn raise_nofile() {
    LIMIT.get_or_init(raise);
}

#[cfg(all(unix, not(loom)))]
fn raise() -> Option<NofileLimit> {
    let get = || {
        let mut l = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: `getrlimit` writes one `rlimit` through the pointer, which is valid and
        // exclusively ours for the call.
        (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) } == 0).then_some(l)
    };
    let before = get()?;
    let mut target = before.rlim_max;
    if target == libc::RLIM_INFINITY {
        // The kernel refuses a soft limit above fs.nr_open.
        target = std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(before.rlim_cur);
    }
    if before.rlim_cur < target {
        let want = libc::rlimit { rlim_cur: target, rlim_max: before.rlim_max };
        // SAFETY: `setrlimit` only reads the `rlimit` behind the pointer, valid for the call.
        // A refusal (EPERM, EINVAL) changes nothing; the limit is read back below either way.
        let _refused = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } != 0;
    }
    let after = get().unwrap_or(before);
    #[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux, not on every Unix
    let wide = |v: libc::rlim_t| if v == libc::RLIM_INFINITY { u64::MAX } else { v as u64 };
    Some(NofileLimit {
        original: wide(before.rlim_cur),
        current: wide(after.rlim_cur),
        hard: wide(after.rlim_max),
    })
}

#[cfg(not(all(unix, not(loom))))]
fn raise() -> Option<NofileLimit> {
    None
}
