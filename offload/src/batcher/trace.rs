//! The Batcher's lanes in the runtime's trace (issue 14 §1): for each batch, on its slot's
//! lane, one `batch #k` span holding its queue wait, staging, H2D, kernel, D2H, scatter and
//! wake slices; beside it, on a `… model` lane, the cost model's predicted phases of the same
//! batch starting when its run started, so a misprediction is visible as slices of other
//! lengths; and a flow arrow from the submitting task to the batch.
//!
//! # Lanes
//!
//! A slot's lane *is* its worker thread's lane ([`Recorder::here`] called on the worker
//! thread, which is named `offload slot <i> (<kernel>)`): the runtime draws a flow arrow for
//! every wake-up from the waker's lane to the woken task's next poll, so the arrows of a
//! batch's wake-ups leave its `wake` slice. The model lane is a named lane of the same
//! process, `slot <i> (<kernel>) model`.
//!
//! # What is recorded, and what is sampled
//!
//! Every batch is recorded (a batch costs a dozen events, and batches are few: a million
//! items in batches of 4096 are 256 batches). Items are not: one flow arrow per batch, from
//! the `submit` of its **first** item (the one that opened it, on the lane of the task or
//! thread that called `submit`) to the start of the batch's span. The batch's `n` arg says how
//! many items it holds; the other `n − 1` submits are not drawn (a 1M-item run would
//! otherwise add 2M events).
//!
//! # Layout, and where it cannot be exact
//!
//! * `queue wait`: from the batch's opening (its first item's arrival) to its start (taken
//!   by this slot). A batch opens while the slot may still run the previous one, and slices
//!   on one lane must nest, so the slice starts at the later of the opening and the end of
//!   the slot's previous batch; its `queue_wait_us` arg is always the whole wait.
//! * `stage`, then `h2d`, `kernel`, `d2h` laid end to end from the run's start (the device's
//!   own durations: CUDA events on a GPU), then `scatter` (results written), then `wake` (the
//!   items' wakers called: the runtime's wake arrows leave here). A device phase that would
//!   run past the scatter's start (device clocks against the host's) is clipped to it.
//! * The model twin (only with a [`CostModel`] in the config): `launch`, `h2d`, `kernel`,
//!   `d2h` predicted for `n` items with inputs on the host, from the run's start, inside a
//!   `batch #k (model)` span; for a CPU-placed batch, one `cpu` slice of the predicted CPU
//!   time. Should the previous twin still be running then (a prediction longer than the
//!   measured run), the twin starts when it ends, and its `delayed_us` arg says by how much.
//!   A model that cannot price the kernel leaves an instant `model: cannot price` instead.
//!
//! # The recorder's lifetime
//!
//! The Batcher holds a clone of the runtime's recorder; the runtime writes the trace when it
//! is dropped. Batches run after that are recorded into a trace already written, and so are
//! not in the file: shut a traced Batcher down before dropping its runtime (as the parent
//! module advises anyway), and the file has every batch.
//!
//! # Cost
//!
//! With tracing off (no recorder when the Batcher was created) the Batcher does nothing of
//! this: one branch per batch on the worker and one per opened batch on the submit path.
//!
//! # Example
//!
//! ```
//! use gmprt_offload::runtime::Runtime;
//! use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
//!
//! let path = std::env::temp_dir().join(format!("gmprt-offload-trace-doc-{}.json", std::process::id()));
//! {
//!     let rt = Runtime::builder().procs(2).trace(&path).build().unwrap();
//!     // Made inside the traced runtime, the Batcher records into its trace.
//!     let cfg = BatcherConfig::default();
//!     let b = rt.block_on(async { Batcher::new(Saxpy { a: 2.0 }, &Device::host(), cfg).unwrap() });
//!     rt.block_on(b.submit_many(vec![(1.0, 1.0); 10])).unwrap();
//!     b.shutdown(); // before the runtime writes its trace, at drop
//! }
//! let text = std::fs::read_to_string(&path).unwrap();
//! std::fs::remove_file(&path).ok();
//! // The batch's span and its phases, on a slot worker's lane.
//! for name in ["batch #0", "queue wait", "stage", "scatter", "wake"] {
//!     assert!(text.contains(&format!("\"{name}\"")), "no {name:?} in the trace");
//! }
//! assert!(text.contains("offload slot ") && text.contains(" (saxpy)"));
//! ```
use crate::backend::PhaseTimes;
use crate::model::duration as secs;
use crate::model::{CostModel, Residency};
use crate::timeline::{CloseReason, Side};
use gmprt_runtime::trace::{Lane, Recorder};
use serde_json::json;
use std::time::{Duration, Instant};

/// What the worker measured of one batch, for its trace.
pub(super) struct Marks {
    pub(super) seq: u64,
    pub(super) n: usize,
    /// The index of the device that ran it (`Batcher::spread`; 0 with one device).
    pub(super) device: usize,
    pub(super) reason: CloseReason,
    pub(super) side: Side,
    pub(super) ok: bool,
    /// The first item's arrival.
    pub(super) opened: Instant,
    /// Taken by the slot.
    pub(super) start: Instant,
    /// Staging began (= the run's start on the Ps path, which stages per chunk).
    pub(super) stage: Instant,
    pub(super) staging: Duration,
    pub(super) times: PhaseTimes,
    pub(super) scatter: Instant,
    pub(super) scatter_len: Duration,
    /// The flow arrow from the first item's submit, if one was drawn.
    pub(super) flow: Option<u64>,
}

/// One slot worker's trace lanes (created on the worker thread).
pub(super) struct SlotTrace {
    rec: Recorder,
    lane: Lane,
    /// The model lane's name, and the lane once made.
    model_lane: (String, Option<Lane>),
    /// End (trace ns) of this slot's previous batch span and model span (`u64::MAX` on an
    /// inline lane: every span starts at its batch's close).
    prev_end: u64,
    prev_model_end: u64,
}

/// `d` in microseconds, as a JSON number (args read in µs, as the trace's timestamps), from
/// whole nanoseconds so it prints as `0.17`, not `0.16999999999999998`.
fn us(d: Duration) -> serde_json::Value {
    json!(d.as_nanos() as f64 / 1e3)
}

impl SlotTrace {
    /// The calling worker thread's lane (the thread is named by [`worker_name`]) and its
    /// model twin lane, `slot <index> (<kernel>) model` (made at the first twin drawn).
    pub(super) fn new(rec: &Recorder, index: usize, kernel: &str) -> SlotTrace {
        let lane = rec.here();
        let model_lane = (format!("slot {index} ({kernel}) model"), None);
        SlotTrace { rec: rec.clone(), lane, model_lane, prev_end: 0, prev_model_end: 0 }
    }

    /// The lane of a batch run inline on an M (`worker::close_inline`): the P it runs on. Its
    /// span starts where the batch closed — that lane holds the submitters' polls before it.
    /// One per kit, kept across its inline runs (`Kit::inline_trace`): its model lane,
    /// `slot <index> (<kernel>) inline model`, is apart from the workers' model lanes, and its
    /// `prev_model_end` carries over, so the kit's twins never overlap one another there.
    pub(super) fn inline(rec: &Recorder, index: usize, kernel: &str) -> SlotTrace {
        let mut t = SlotTrace::new(rec, index, kernel);
        t.model_lane.0 = format!("slot {index} ({kernel}) inline model");
        t.prev_end = u64::MAX;
        t
    }

    /// Before an inline run: the batch lane is the lane of the P this thread holds now, and
    /// the span starts where the batch closes (that lane holds the submitters' polls before).
    pub(super) fn move_here(&mut self) {
        self.lane = self.rec.here();
        self.prev_end = u64::MAX;
    }

    /// Records one batch whose wakers were all called by `woken`.
    pub(super) fn batch(
        &mut self,
        m: &Marks,
        woken: Instant,
        model: Option<&CostModel>,
        kernel: &str,
        procs: usize,
    ) {
        let r = &self.rec;
        let at = |i: Instant| r.at(i);
        let (opened, start) = (at(m.opened), at(m.start));
        let span_start = opened.max(self.prev_end).min(start);
        let scatter = at(m.scatter);
        let scatter_end = at(m.scatter + m.scatter_len).max(scatter);
        let end = at(woken).max(scatter_end);
        let name = format!("batch #{}", m.seq);
        r.slice(
            self.lane,
            name,
            span_start,
            end,
            vec![
                ("batch", json!(m.seq)),
                ("n", json!(m.n)),
                ("device", json!(m.device)),
                ("closed_by", json!(m.reason.name())),
                ("placement", json!(m.side.name())),
                ("ok", json!(m.ok)),
            ],
        );
        if let Some(id) = m.flow {
            r.flow_in(self.lane, id, span_start);
        }
        r.slice(
            self.lane,
            "queue wait",
            span_start,
            start,
            vec![("queue_wait_us", us(m.start.saturating_duration_since(m.opened)))],
        );
        let stage = at(m.stage).max(start);
        let run = at(m.stage + m.staging).clamp(stage, scatter);
        r.slice(self.lane, "stage", stage, run, vec![("n", json!(m.n))]);
        let mut t = run;
        for (phase, d) in [("h2d", m.times.h2d), ("kernel", m.times.kernel), ("d2h", m.times.d2h)] {
            if d.is_zero() {
                continue;
            }
            let e = (t + d.as_nanos() as u64).min(scatter);
            r.slice(self.lane, phase, t, e, vec![("us", us(d))]);
            t = e;
        }
        r.slice(self.lane, "scatter", scatter, scatter_end, vec![("n", json!(m.n))]);
        r.slice(self.lane, "wake", scatter_end, end, vec![("n", json!(m.n))]);
        self.prev_end = end;
        if let Some(model) = model {
            self.model_twin(m, run, model, kernel, procs);
        }
    }

    /// The model's prediction of batch `m`, from `run` (trace ns) on the model lane.
    fn model_twin(&mut self, m: &Marks, run: u64, model: &CostModel, kernel: &str, procs: usize) {
        let r = &self.rec;
        let lane = *self.model_lane.1.get_or_insert_with(|| r.lane("offload", &self.model_lane.0));
        let name = crate::model::profile_kernel_name(kernel);
        let phases: Result<Vec<(&'static str, Duration)>, String> = match m.side {
            Side::Gpu => model
                .predict(name, m.n as f64, Residency::Host, 0.0)
                .map(|b| {
                    vec![
                        ("launch", secs(b.launch)),
                        ("h2d", secs(b.h2d)),
                        ("kernel", secs(b.kernel_time)),
                        ("d2h", secs(b.d2h)),
                    ]
                })
                .map_err(|e| e.to_string()),
            Side::Cpu => model
                .cpu_time(name, m.n as f64, procs)
                .map(|s| vec![("cpu", secs(s))])
                .map_err(|e| e.to_string()),
        };
        let phases = match phases {
            Ok(p) => p,
            Err(e) => {
                r.instant(
                    lane,
                    "model: cannot price",
                    run.max(self.prev_model_end),
                    vec![("error", json!(e))],
                );
                return;
            }
        };
        let start = run.max(self.prev_model_end);
        let total: Duration = phases.iter().map(|(_, d)| *d).sum();
        let measured = m.times.h2d + m.times.kernel + m.times.d2h;
        let end = start + (total.as_nanos() as u64).max(1);
        r.slice(
            lane,
            format!("batch #{} (model)", m.seq),
            start,
            end,
            vec![
                ("batch", json!(m.seq)),
                ("n", json!(m.n)),
                ("predicted_us", us(total)),
                ("measured_us", us(measured)),
                ("delayed_us", json!((start - run) as f64 / 1e3)),
            ],
        );
        let mut t = start;
        for (phase, d) in phases {
            if d.is_zero() {
                continue;
            }
            let e = (t + d.as_nanos() as u64).min(end);
            r.slice(lane, phase, t, e, vec![("us", us(d))]);
            t = e;
        }
        self.prev_model_end = end;
    }
}

/// The name of slot `index`'s worker thread, hence of its lane: `offload slot 0 (saxpy)`
/// (the runtime puts a thread named with a space into the process named by its first word).
pub(super) fn worker_name(index: usize, kernel: &str) -> String {
    format!("offload slot {index} ({kernel})")
}

/// On the submit path, for the first item of a batch: a flow arrow's start on the calling
/// task's (or thread's) lane, and its id for the batch.
pub(super) fn submit_flow(rec: &Recorder) -> u64 {
    let id = rec.new_flow_id();
    rec.flow_out(rec.here(), id, rec.now());
    id
}
