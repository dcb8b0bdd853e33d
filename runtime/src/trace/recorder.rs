//! The recorder: per-thread event buffers, named lanes, one clock, a cap.
//!
//! # Buffers
//!
//! Each thread that records into a [`Recorder`] gets its own buffer, an
//! `Arc<Mutex<Vec<Event>>>` registered once in the recorder's list and cached in a
//! thread-local keyed by the recorder's id. Recording an event locks that buffer, which only
//! its own thread touches while the run goes on (the writer locks it once at the end), so the
//! lock is uncontended: one atomic swap in and out, no cache line shared with other threads.
//! The registry holds the buffers of threads that have exited, so nothing a thread recorded
//! is lost when it ends.
//!
//! # Merge
//!
//! [`Recorder::write_json`] locks every registered buffer in turn, copies their events out
//! and sorts them by timestamp (a stable sort: events of one thread at the same instant keep
//! their recording order, which is what makes a flow's end follow its slice). Events
//! recorded while the writer runs land either in its copy or after it; the runtime writes
//! after its threads are joined, so its trace is complete.
//!
//! # Clock
//!
//! One clock for everything: nanoseconds since the recorder's epoch (an [`Instant`] taken
//! when it was made; the runtime's timer epoch is the same instant), written as µs floats.
//! An `Instant` before the epoch maps to 0 ([`Recorder::at`] saturates).
//!
//! # Cap
//!
//! A recorder keeps at most `max_events` events (env `GMPRT_TRACE_MAX_EVENTS`, default
//! [`DEFAULT_MAX_EVENTS`]). Past it every event is counted in `dropped` instead of stored;
//! the writer puts the count in the trace's metadata and says it on stderr. The count of
//! stored events is one relaxed `fetch_add` per event: a counter no other memory depends on.

use super::{Args, Lane};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// Events a recorder keeps unless `GMPRT_TRACE_MAX_EVENTS` says otherwise: a million events
/// are ~100 MiB of memory and ~150 MB of JSON, about what chrome://tracing and Perfetto's
/// in-browser importer load without stalling; a 100k-task run with a few events per task fits.
pub const DEFAULT_MAX_EVENTS: usize = 1_000_000;

/// The first id [`Recorder::new_flow_id`] hands out has this bit set, so user flow ids never
/// equal the runtime's wake-flow ids, which are task ids (below 2^62 by far) mixed with time
/// and written as strings anyway (see `chrome.rs`).
const USER_FLOW_BASE: u64 = 1 << 40;

/// An event's name: static, owned, or a task id formatted at write time.
#[derive(Debug, Clone)]
pub(crate) enum Name {
    Static(&'static str),
    Owned(Box<str>),
    /// `task <id>`.
    Task(u64),
}

/// An event's args, kept cheap for the runtime's own events.
#[derive(Debug, Clone)]
pub(crate) enum EvArgs {
    None,
    Json(Args),
    /// A poll: the task and whether it finished.
    Poll {
        task: u64,
        ready: bool,
    },
    /// A task id.
    Task(u64),
    /// A steal's victim P.
    Victim(usize),
    /// A P id (syscall hand-off, retake).
    P(usize),
    /// An M id (park, unpark).
    M(usize),
}

/// What kind of trace event.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ph {
    /// A complete slice of this many ns.
    Slice(u64),
    Instant,
    /// A flow's start with a user id.
    FlowOut(u64),
    /// A flow's end with a user id (binds to the enclosing slice).
    FlowIn(u64),
    /// A runtime wake flow's start: (task, wake time).
    WakeOut(u64, u64),
    /// A runtime wake flow's end.
    WakeIn(u64, u64),
}

/// One recorded event.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub(crate) lane: u32,
    pub(crate) ts: u64,
    pub(crate) ph: Ph,
    pub(crate) name: Name,
    pub(crate) args: EvArgs,
}

type Buffer = Arc<Mutex<Vec<Event>>>;

/// The lane table: (process, thread) by lane index, and the index by names.
pub(crate) type Lanes = (Vec<(String, String)>, HashMap<(String, String), u32>);

pub(crate) struct Inner {
    /// Unique per recorder (keys the thread-local buffer cache).
    id: u64,
    pub(crate) epoch: Instant,
    /// Lane table: index = `Lane.0`; (process, thread).
    pub(crate) lanes: Mutex<Lanes>,
    buffers: Mutex<Vec<Buffer>>,
    stored: AtomicUsize,
    pub(crate) dropped: AtomicU64,
    pub(crate) max_events: usize,
    next_flow: AtomicU64,
}

/// A trace recorder: the built-in trace implementor. Cheap to clone (an `Arc`).
///
/// ```
/// use gmprt_runtime::trace::Recorder;
/// let rec = Recorder::new();
/// let lane = rec.lane("offload", "slot 0");
/// let t0 = rec.now();
/// rec.slice(lane, "kernel", t0, t0 + 1_000, vec![("n", serde_json::json!(4096))]);
/// let mut out = Vec::new();
/// rec.write_json(&mut out).unwrap();
/// let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
/// gmprt_runtime::trace::check(&v).unwrap();
/// ```
#[derive(Clone)]
pub struct Recorder(pub(crate) Arc<Inner>);

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("events", &self.0.stored.load(Relaxed).min(self.0.max_events))
            .field("dropped", &self.0.dropped.load(Relaxed))
            .finish()
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}

static RECORDER_IDS: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's buffers: (recorder id, buffer, this thread's own lane once named).
    static LOCAL: RefCell<Vec<(u64, Buffer, Option<Lane>)>> = const { RefCell::new(Vec::new()) };
}

impl Recorder {
    /// A standalone recorder with the default cap (for tests and tools; a runtime built with
    /// `Builder::trace` makes its own).
    pub fn new() -> Recorder {
        Recorder::with_capacity(DEFAULT_MAX_EVENTS)
    }

    /// A recorder that keeps at most `max_events` events and counts the rest as dropped.
    pub fn with_capacity(max_events: usize) -> Recorder {
        Recorder(Arc::new(Inner {
            id: RECORDER_IDS.fetch_add(1, Relaxed),
            epoch: Instant::now(),
            lanes: Mutex::new((Vec::new(), HashMap::new())),
            buffers: Mutex::new(Vec::new()),
            stored: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            max_events,
            next_flow: AtomicU64::new(USER_FLOW_BASE),
        }))
    }

    /// The recorder's epoch: time 0 of its clock.
    pub(crate) fn epoch(&self) -> Instant {
        self.0.epoch
    }

    /// Nanoseconds on the trace clock.
    #[inline]
    pub fn now(&self) -> u64 {
        self.at(Instant::now())
    }

    /// An `Instant` on the trace clock (0 for instants before the epoch).
    #[inline]
    pub fn at(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.0.epoch).as_nanos() as u64
    }

    /// The lane named `thread` in the group `process`; the same names give the same lane.
    pub fn lane(&self, process: &str, thread: &str) -> Lane {
        let mut g = lock(&self.0.lanes);
        let (table, index) = &mut *g;
        if let Some(&i) = index.get(&(process.to_string(), thread.to_string())) {
            return Lane(i);
        }
        let i = table.len() as u32;
        table.push((process.to_string(), thread.to_string()));
        index.insert((process.to_string(), thread.to_string()), i);
        Lane(i)
    }

    /// The calling thread's lane: its P's lane on an M of the runtime this recorder traces
    /// (`M<n>` between Ps), else a lane named after the thread. A thread named with a space
    /// (`offload saxpy slot 0`) goes into the process named by its first word (`offload`),
    /// beside the lanes named that way; others into `threads`.
    pub fn here(&self) -> Lane {
        if let Some(l) = crate::sched::context::with_current(|cx| {
            let cx = cx?;
            let t = cx.shared.trace.as_ref().filter(|t| Arc::ptr_eq(&t.rec.0, &self.0))?;
            let pid = cx.pid.get();
            Some(if pid != usize::MAX { t.p_lanes[pid] } else { self.m_lane(cx.mid) })
        }) {
            return l;
        }
        let named = || {
            let cur = std::thread::current();
            let name = cur.name().map_or_else(|| format!("{:?}", cur.id()), str::to_string);
            match name.split_once(' ') {
                Some((first, _)) => self.lane(first, &name),
                None => self.lane("threads", &name),
            }
        };
        // Cached per thread; looked up by name when the thread-local is gone (thread exit).
        self.with_local(|_, lane| *lane.get_or_insert_with(named)).unwrap_or_else(named)
    }

    /// The lane of M `mid` (an M holding no P).
    pub(crate) fn m_lane(&self, mid: usize) -> Lane {
        if mid == usize::MAX {
            return self.here_thread();
        }
        self.lane("gmprt", &format!("M{mid}"))
    }

    fn here_thread(&self) -> Lane {
        let name = std::thread::current().name().unwrap_or("thread").to_string();
        self.lane("threads", &name)
    }

    /// A complete slice `[start_ns, end_ns]` on `lane` (an end before the start is clamped).
    pub fn slice<'a>(
        &self,
        lane: Lane,
        name: impl Into<Cow<'a, str>>,
        start_ns: u64,
        end_ns: u64,
        args: Args,
    ) {
        let ph = Ph::Slice(end_ns.saturating_sub(start_ns));
        self.push(Event { lane: lane.0, ts: start_ns, ph, name: owned(name.into()), args: json(args) });
    }

    /// An instant event on `lane`.
    pub fn instant<'a>(&self, lane: Lane, name: impl Into<Cow<'a, str>>, at_ns: u64, args: Args) {
        self.push(Event {
            lane: lane.0,
            ts: at_ns,
            ph: Ph::Instant,
            name: owned(name.into()),
            args: json(args),
        });
    }

    /// The start of flow `id` on `lane` (draw it inside a slice of that lane, or it dangles
    /// in some viewers).
    pub fn flow_out(&self, lane: Lane, id: u64, at_ns: u64) {
        self.push(Event {
            lane: lane.0,
            ts: at_ns,
            ph: Ph::FlowOut(id),
            name: Name::Static("flow"),
            args: EvArgs::None,
        });
    }

    /// The end of flow `id` on `lane`, bound to the slice of that lane enclosing `at_ns`.
    pub fn flow_in(&self, lane: Lane, id: u64, at_ns: u64) {
        self.push(Event {
            lane: lane.0,
            ts: at_ns,
            ph: Ph::FlowIn(id),
            name: Name::Static("flow"),
            args: EvArgs::None,
        });
    }

    /// A flow id no other call returns, and never equal to a runtime wake flow's id.
    pub fn new_flow_id(&self) -> u64 {
        self.0.next_flow.fetch_add(1, Relaxed)
    }

    /// Events stored so far (at most the cap).
    pub fn events(&self) -> usize {
        self.0.stored.load(Relaxed).min(self.0.max_events)
    }

    /// Events not stored because the cap was reached.
    pub fn dropped(&self) -> u64 {
        self.0.dropped.load(Relaxed)
    }

    /// Records one event into the calling thread's buffer, or counts it as dropped.
    #[inline]
    pub(crate) fn push(&self, ev: Event) {
        // Relaxed: a count, read for the cap only; no other memory is published through it.
        if self.0.stored.fetch_add(1, Relaxed) >= self.0.max_events {
            self.0.dropped.fetch_add(1, Relaxed);
            return;
        }
        if self.with_local(|buf, _| lock(buf).push(ev)).is_none() {
            // Recorded from a thread-local's destructor after this thread's buffer list was
            // destroyed: nowhere to put it; counted like the cap's drops.
            self.0.dropped.fetch_add(1, Relaxed);
        }
    }

    /// Runs `f` on this thread's buffer for this recorder (registering it on first use);
    /// `None` if the thread-local is already destroyed (at thread exit).
    fn with_local<R>(&self, f: impl FnOnce(&Buffer, &mut Option<Lane>) -> R) -> Option<R> {
        let id = self.0.id;
        LOCAL
            .try_with(|l| {
                let mut l = l.borrow_mut();
                let i = match l.iter().position(|e| e.0 == id) {
                    Some(i) => i,
                    None => {
                        // Forget buffers of recorders that are gone (only our clone is left).
                        l.retain(|e| Arc::strong_count(&e.1) > 1);
                        let buf: Buffer = Arc::default();
                        lock(&self.0.buffers).push(buf.clone());
                        l.push((id, buf, None));
                        l.len() - 1
                    }
                };
                let (_, buf, lane) = &mut l[i];
                f(buf, lane)
            })
            .ok()
    }

    /// Every event recorded so far, sorted by time (stable: one thread's order at equal times).
    pub(crate) fn merged(&self) -> Vec<Event> {
        let bufs: Vec<Buffer> = lock(&self.0.buffers).clone();
        let mut all = Vec::new();
        for b in bufs {
            all.extend(lock(&b).iter().cloned());
        }
        all.sort_by_key(|e| e.ts);
        all
    }

    /// The lane table: (process, thread) per lane index.
    pub(crate) fn lane_names(&self) -> Vec<(String, String)> {
        lock(&self.0.lanes).0.clone()
    }
}

/// Locks, ignoring poisoning: a panic while pushing leaves a valid `Vec`.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn owned(c: Cow<'_, str>) -> Name {
    Name::Owned(c.into_owned().into_boxed_str())
}

fn json(a: Args) -> EvArgs {
    if a.is_empty() {
        EvArgs::None
    } else {
        EvArgs::Json(a)
    }
}
