//! Tracing: a recorder of the whole run, written as Chrome trace-event JSON at shutdown.
//!
//! `GMPRT_TRACE=out.json` (or [`Builder::trace`](crate::Builder::trace)) makes the runtime
//! record a trace and write it to that path when it shuts down (`Runtime` drop); open it in
//! Perfetto (ui.perfetto.dev) or chrome://tracing. A write error is reported on stderr with
//! the path; it never panics.
//!
//! # What is in it
//!
//! Process `gmprt`: one lane per P (`P0`, `P1`, …), a `sysmon` lane and a lane per M while it
//! holds no P (`M3`). On a P lane: a slice per task poll (`task 7`, args: task id, `ready` or
//! `pending`; a poll that makes a blocking `syscall` is cut there: the part before is a
//! `pending` slice, the rest a slice on whatever lane the M has after the call); instants for
//! steals (`steal`, the victim), `runnext` hand-offs (the task put there), `syscall` (the P
//! enters its syscall state) and `retake` (sysmon took the P); a `timers` slice when an M fires
//! timers. On an M lane: the `syscall` slice of a blocking call, and `park` instants. `unpark`
//! instants sit on the lane of the thread that handed a P to a parked M (`startm`). Any other
//! thread that records (a `block_on` thread, a Batcher worker) gets a lane named after it, in
//! the process named by the first word of its name if it has a space (`offload saxpy slot 0`
//! goes to `offload`), else in `threads`.
//!
//! Flow arrows (`cat` `wake`) go from where a task was made runnable (its spawn, or the wake
//! in another task's poll, a timer firing, a Batcher worker's scatter) to its next poll. The
//! wake time is kept in the task's header (the same field the scheduling-latency sample uses),
//! so the flow id is derived from (task id, wake time) and nothing else is stored per wake.
//!
//! Other crates add their own lanes and events through [`current`] / [`Recorder`] (the
//! offload layer's Batcher does).
//!
//! # Cost
//!
//! With tracing off, each event point is one predictable branch on a field fixed at
//! start-up (`Shared::trace`), and no event value is built. With it on, an event is a clock
//! read and a push into the recording thread's own buffer (`recorder.rs`).
//!
//! # Files
//!
//! `recorder.rs` (buffers, lanes, clock, cap), `hooks.rs` (the scheduler's event points),
//! `chrome.rs` (the JSON writer), `check.rs` (the structure check).

mod check;
mod chrome;
pub(crate) mod hooks;
mod recorder;

pub use self::check::{check, CheckSummary};
pub use self::recorder::{Recorder, DEFAULT_MAX_EVENTS};

use crate::sched::context::with_current;
use crate::task::TaskId;

/// Event arguments: key/value pairs shown in the viewer's detail pane.
pub type Args = Vec<(&'static str, serde_json::Value)>;

/// A lane of a trace (a `(pid, tid)` row in the viewer), from [`Recorder::lane`] or
/// [`Recorder::here`]. Only meaningful for the recorder that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lane(pub(crate) u32);

impl Recorder {
    /// Writes the trace recorded so far as Chrome trace-event JSON (see `chrome.rs`): every
    /// lane named, flows only with both ends, the dropped-event count in `otherData`.
    pub fn write_json(&self, w: impl std::io::Write) -> std::io::Result<()> {
        chrome::write(self, w)
    }
}

/// The current runtime's recorder (inside a task or `block_on`), if it is tracing.
///
/// ```
/// let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
/// assert!(rt.block_on(async { gmprt_runtime::trace::current() }).is_none()); // not tracing
/// ```
pub fn current() -> Option<Recorder> {
    with_current(|cx| cx.and_then(|cx| cx.shared.trace.as_ref().map(|t| t.rec.clone())))
}

/// The task being polled on this thread, if any.
///
/// ```
/// let rt = gmprt_runtime::Runtime::builder().procs(1).build().unwrap();
/// let h = rt.spawn(async { gmprt_runtime::trace::current_task() });
/// let id = h.id();
/// assert_eq!(rt.block_on(h).unwrap(), Some(id));
/// assert_eq!(gmprt_runtime::trace::current_task(), None);
/// ```
pub fn current_task() -> Option<TaskId> {
    with_current(|cx| {
        let cx = cx?;
        let pid = cx.pid.get();
        if pid == usize::MAX {
            return None;
        }
        // Written by this very thread (the M holding the P) before the poll.
        cx.shared.allp[pid].current().map(|(id, _)| id)
    })
}
