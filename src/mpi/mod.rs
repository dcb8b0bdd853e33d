//! MPI across machines (feature `mpi`): one gmprt runtime per rank, and the messages between
//! ranks sent from gmprt tasks without blocking a P (issue 29).
//!
//! [`Mpi::init`] starts MPI (rsmpi over the system's MPI; built and tested on Debian's Open MPI
//! 4.1) and owns it until it is dropped (`MPI_Finalize`). [`Mpi::comm`] hands out [`Comm`], a
//! `Copy + Send + Sync` handle that tasks use: [`Comm::send`], [`Comm::recv`], [`Comm::scatter`],
//! [`Comm::gather`], [`Comm::agree`] and [`Comm::ping_pong`], each an `async fn` that waits for
//! MPI in one of two ways ([`Wait`]):
//!
//! * [`Wait::HandOff`] — the blocking call (`MPI_Send`, `MPI_Recv`) inside
//!   [`gmprt::runtime::syscall`](crate::runtime::syscall), Go's `entersyscall`: the M gives up
//!   its P for the call, and sysmon hands the P to another M if the call lasts past a tick
//!   (20 µs), so the other tasks go on running. If the thread cap refuses the hand-off
//!   ([`ThreadLimit`](crate::runtime::ThreadLimit)), that one call falls back to polling (the
//!   closure comes back unrun, so nothing was sent twice), and [`wait_stats`] counts it. Off an
//!   M (`block_on`, a plain thread) the call just blocks its thread, which holds no P.
//! * [`Wait::Poll`] — the non-blocking call (`MPI_Isend`, `MPI_Irecv`) and a task that tests the
//!   request (`MPI_Test`, which also drives MPI's progress) and, between tests, yields its P for
//!   the first [`POLL_YIELDS`] tests, then parks on a timer, from [`POLL_PARK_MIN`] doubling to
//!   [`POLL_PARK_MAX`]. No thread is ever blocked in MPI.
//!
//! # Which one, and why (measured)
//!
//! Both were measured in the same run by `mpi_screener --calibrate` (2 ranks on the 2-core VM,
//! one core each, Open MPI's shared memory; round trips, medians, ranges over 3 runs; raw
//! output in `benches/results/mpi-2core-issue29.txt`, the table in the README's "Past one
//! machine"):
//!
//! | round trip | hand-off | poll |
//! |---|---|---|
//! | 8 B | 0.63 µs | 0.40–0.44 µs |
//! | 16 KiB | 6.5 µs | 6.4–104 µs |
//! | 128 KiB | 23 µs | 112–122 µs |
//! | 4 MiB | 662–716 µs | 871–1,277 µs |
//! | a 24 MB scatter | 1.42–1.48 ms | 1.79–1.81 ms |
//!
//! The default is [`Wait::HandOff`]. Polling wins only messages that complete within a few
//! yields: about 0.2 µs on a round trip, the cost of the hand-off. Any longer wait meets a timer
//! wake-up, 1.3× to 16× slower, and its yields and parks are knobs to tune. Hand-off costs an M
//! per blocked call, bounded by the thread cap (past it, the call polls), and a core while it
//! waits (Open MPI's blocking calls spin in its progress loop).
//!
//! # Collectives, and why they are point to point
//!
//! [`Comm::scatter`] and [`Comm::gather`] are linear: the root sends (or receives) one message
//! per other rank, in rank order. They are built on the same two calls as everything else, so
//! the two waits send the same messages and their comparison measures the waiting alone; with
//! 2 ranks, MPI's own `MPI_Scatterv` sends the same single message. A reduction is a
//! [`Comm::gather`] followed by a sum on the root in rank order: `MPI_Reduce` leaves the order of
//! a floating-point sum to the implementation, and the screener's results must equal a single
//! process's bit for bit.
//!
//! # A rank that fails: an error on every rank, never a hang
//!
//! A rank that fails must not simply leave: the others would wait for it forever in the next
//! call that needs it. The protocol:
//! 1. At each checkpoint every rank calls [`Comm::agree`] with its own outcome, even a rank that
//!    failed (it reports its error instead of skipping the collective). `agree` gathers the
//!    outcomes on rank 0 and sends the verdict back to every rank: `Ok`, or the first failed
//!    rank (in rank order) and its message, as [`MpiError::RankFailed`] on every rank. Every
//!    rank then stops with that error (the screener prints it and exits 1).
//! 2. A rank that cannot reach a checkpoint — it panicked — aborts the job: [`Mpi::init`]
//!    installs a panic hook that prints the panic, then calls `MPI_Abort` on the world, and
//!    `mpirun` stops every rank with a non-zero status. (A panic inside a task is therefore
//!    fatal to the job, not only to the task: a rank that lost a task cannot keep its part in
//!    the next collective.)
//! 3. A rank that dies (a signal) is seen by `mpirun`, which stops the others.
//!
//! Why step 1 cannot hang: `agree` is one message from each rank to rank 0 and one back, and
//! every rank enters it at the same checkpoint, the failed ones too, so every message a rank
//! waits for is sent. (The screener adds: a failure of one rank outside a checkpoint, such as
//! an MPI call that failed there, cannot wait for the others, which may be waiting for it; it
//! calls [`Mpi::abort`].)
//!
//! # Matching
//!
//! MPI matches a receive to a message by sender and tag, and two messages from one sender with
//! one tag arrive in the order sent (MPI-3.1 §3.5). Each call here uses its own tags, so a
//! scatter's messages never meet a gather's; but two calls of the same kind between the same
//! ranks must not run at the same time (from two tasks), or their messages could be matched
//! crosswise. One task per rank talking, as in the screener, keeps that by construction.
//!
//! # Threads: why MPI_THREAD_MULTIPLE, and why it is safe
//!
//! The runtime's Ms are several OS threads, and a task may run on any of them, so two tasks of
//! one rank, on two Ms, may call MPI at the same time. [`Mpi::init`] asks for
//! `MPI_THREAD_MULTIPLE` and refuses to go on with less ([`MpiError::ThreadLevel`]); Open MPI
//! 4.1.4 (Debian 12) grants it. Under it every MPI call may be made from any thread,
//! concurrently (MPI-3.1 §12.4); `MPI_Init_thread` and `MPI_Finalize` stay on the thread that
//! owns [`Mpi`] (it is neither `Send` nor `Sync`). A [`Comm`] holds no MPI handle: every call
//! names `MPI_COMM_WORLD` afresh.
mod comm;
mod pending;

pub use comm::{Comm, AGREE_MESSAGE_BYTES};

use mpi::collective::CommunicatorCollectives;
use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::Threading;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

pub use mpi::Tag;

/// Tests of a polled request that yield the P before the task starts to park between tests:
/// 64 yields cover a small message's round trip on a busy P (a few µs each) without a timer.
pub const POLL_YIELDS: u32 = 64;
/// The first park between two tests, after [`POLL_YIELDS`] yields.
pub const POLL_PARK_MIN: Duration = Duration::from_micros(20);
/// The longest park between two tests: a message that completes during a park waits at most
/// this long to be noticed.
pub const POLL_PARK_MAX: Duration = Duration::from_millis(1);

/// How a [`Comm`] call waits for MPI (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Wait {
    /// The blocking MPI call inside [`gmprt::runtime::syscall`](crate::runtime::syscall): the P
    /// is handed off for the call.
    HandOff,
    /// The non-blocking MPI call, tested by the task, which yields and then parks between tests.
    Poll,
}

impl Default for Wait {
    /// [`Wait::HandOff`]: from 16 KiB up, its round trips are 1.3× to 16× shorter than
    /// polling's, whose waits meet timer wake-ups; polling saves about 0.2 µs on messages
    /// under 1 KiB (the module docs have the table).
    fn default() -> Wait {
        Wait::HandOff
    }
}

impl std::str::FromStr for Wait {
    type Err = String;
    /// `handoff` or `poll`.
    fn from_str(s: &str) -> Result<Wait, String> {
        match s {
            "handoff" => Ok(Wait::HandOff),
            "poll" => Ok(Wait::Poll),
            other => Err(format!("`{other}` is not a wait: write handoff or poll")),
        }
    }
}

impl fmt::Display for Wait {
    /// `handoff` or `poll`, as [`str::parse`] reads them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Wait::HandOff => "handoff",
            Wait::Poll => "poll",
        })
    }
}

/// What went wrong, on this rank or (`RankFailed`) on another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MpiError {
    /// MPI was initialised already in this process (rsmpi allows one `Universe`).
    AlreadyInitialized,
    /// MPI granted a thread level below `MPI_THREAD_MULTIPLE`, which the runtime's Ms need.
    ThreadLevel {
        /// What MPI granted.
        granted: String,
    },
    /// A rank outside `0..size`, or a message to oneself.
    BadRank {
        /// The rank asked for.
        rank: usize,
        /// The world's size.
        size: usize,
    },
    /// A message longer than MPI's count (`i32::MAX` elements).
    TooLong {
        /// Elements asked for.
        len: usize,
    },
    /// A receive got another number of elements than its buffer holds.
    Count {
        /// From which rank.
        from: usize,
        /// The elements expected.
        expected: usize,
        /// The elements that came.
        got: usize,
    },
    /// The arguments do not fit the call (counts that do not sum to the data, a missing root
    /// buffer).
    Args(String),
    /// A rank reported a failure at an [`Comm::agree`] checkpoint: every rank gets this.
    RankFailed {
        /// The first failed rank, in rank order.
        rank: usize,
        /// Its error.
        message: String,
    },
}

impl fmt::Display for MpiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MpiError::AlreadyInitialized => write!(f, "MPI is initialised already in this process"),
            MpiError::ThreadLevel { granted } => write!(
                f,
                "MPI granted the thread level {granted}, below MPI_THREAD_MULTIPLE, which gmprt's Ms need \
                 (they call MPI from several threads); use an MPI built with thread support"
            ),
            MpiError::BadRank { rank, size } => {
                write!(f, "rank {rank} is not another rank of this world of {size}")
            }
            MpiError::TooLong { len } => {
                write!(f, "a message of {len} elements is longer than MPI's count allows ({})", i32::MAX)
            }
            MpiError::Count { from, expected, got } => {
                write!(f, "expected {expected} elements from rank {from}, got {got}")
            }
            MpiError::Args(why) => f.write_str(why),
            MpiError::RankFailed { rank, message } => write!(f, "rank {rank} failed: {message}"),
        }
    }
}

impl std::error::Error for MpiError {}

/// Counts of how this process's [`Comm`] calls waited (all ranks count their own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaitStats {
    /// Blocking calls run inside `syscall` (P handed off).
    pub handoffs: u64,
    /// Hand-offs refused by the thread cap, which polled instead.
    pub fallbacks: u64,
    /// `MPI_Test` calls of polled requests.
    pub tests: u64,
    /// Timer parks between two tests.
    pub parks: u64,
}

static HANDOFFS: AtomicU64 = AtomicU64::new(0);
static FALLBACKS: AtomicU64 = AtomicU64::new(0);
static TESTS: AtomicU64 = AtomicU64::new(0);
static PARKS: AtomicU64 = AtomicU64::new(0);
/// Set by `Mpi::drop` before `MPI_Finalize`: the panic hook must not call MPI after it.
static FINALIZED: AtomicBool = AtomicBool::new(false);

/// This process's [`WaitStats`] so far (Relaxed counters: a snapshot, not a synchronisation).
pub fn wait_stats() -> WaitStats {
    WaitStats {
        handoffs: HANDOFFS.load(Relaxed),
        fallbacks: FALLBACKS.load(Relaxed),
        tests: TESTS.load(Relaxed),
        parks: PARKS.load(Relaxed),
    }
}

/// MPI in this process, from `MPI_Init_thread` to `MPI_Finalize` (on drop). Neither `Send` nor
/// `Sync`: it stays on the thread that initialised MPI, as MPI requires for finalising.
pub struct Mpi {
    _universe: Universe,
    rank: usize,
    size: usize,
}

impl Mpi {
    /// Initialises MPI with `MPI_THREAD_MULTIPLE` and installs the panic hook of the module
    /// docs (a panic anywhere in this process prints, then aborts every rank).
    ///
    /// # Errors
    /// [`MpiError::AlreadyInitialized`], or [`MpiError::ThreadLevel`] when MPI grants less
    /// than `MPI_THREAD_MULTIPLE` (MPI is finalised again before returning).
    pub fn init() -> Result<Mpi, MpiError> {
        let (universe, granted) =
            mpi::initialize_with_threading(Threading::Multiple).ok_or(MpiError::AlreadyInitialized)?;
        if granted != Threading::Multiple {
            return Err(MpiError::ThreadLevel { granted: format!("{granted:?}") });
        }
        let world = universe.world();
        let (rank, size) = (world.rank() as usize, world.size() as usize);
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            if !FINALIZED.load(Relaxed) {
                eprintln!("rank {rank}: panicked; aborting every rank (MPI_Abort), since this one cannot take part in the next collective");
                SimpleCommunicator::world().abort(70);
            }
        }));
        Ok(Mpi { _universe: universe, rank, size })
    }

    /// This process's rank in the world.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Ranks in the world.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The MPI library's own version string (`MPI_Get_library_version`), first line.
    pub fn library(&self) -> String {
        mpi::environment::library_version()
            .map(|v| v.split(['\n', ',']).next().unwrap_or("").trim().to_string())
            .unwrap_or_else(|_| "unknown MPI".into())
    }

    /// A handle for tasks, waiting the `wait` way.
    pub fn comm(&self, wait: Wait) -> Comm {
        Comm { rank: self.rank, size: self.size, wait }
    }

    /// Waits until every rank has called it (`MPI_Barrier`), blocking this thread: for the
    /// thread that owns MPI, outside the runtime (a task uses [`Comm::agree`]).
    pub fn barrier(&self) {
        SimpleCommunicator::world().barrier();
    }

    /// Stops every rank now (`MPI_Abort` with `code`), for an error that cannot wait for a
    /// checkpoint.
    pub fn abort(&self, code: i32) -> ! {
        SimpleCommunicator::world().abort(code)
    }
}

impl Drop for Mpi {
    fn drop(&mut self) {
        FINALIZED.store(true, Relaxed);
    }
}

impl fmt::Debug for Mpi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mpi").field("rank", &self.rank).field("size", &self.size).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_parse_and_print() {
        for w in [Wait::HandOff, Wait::Poll] {
            assert_eq!(w.to_string().parse::<Wait>(), Ok(w));
        }
        assert!("spin".parse::<Wait>().unwrap_err().contains("handoff or poll"));
        assert_eq!(Wait::default(), Wait::HandOff);
    }
}
