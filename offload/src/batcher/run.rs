//! Steps 3 and 4 of the Batcher protocol (see the parent module): where a taken batch runs
//! ([`super::Placement`]), staging, the one run on a slot (or on the CPU), and the
//! scatter of results to the waiting futures with the batch's timeline.
use super::placement;
use super::trace::Marks;
use super::{BatchKernel, Out, Placement, Results, Shared, Taken};
use crate::backend::{Phases, Slot};
use crate::device::panic_message;
use crate::error::OffloadError;
use crate::model::CostModel;
use crate::timeline::{BatchTimeline, PlacementDecision, Side};
use parking_lot::Mutex;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::task::Waker;
use std::time::{Duration, Instant};

/// What the execute step hands the scatter step.
struct Executed<O> {
    /// The phase times, or the error every item of the batch gets.
    result: Result<crate::PhaseTimes, OffloadError>,
    /// Where it ran (`Gpu` also for a batch that failed before it ran).
    side: Side,
    launched: bool,
    decision: Option<PlacementDecision>,
    staging: Duration,
    /// When staging began (the slot and worker paths; the Ps path stages per chunk).
    stage_at: Instant,
    /// Outputs already gathered (the Ps path); otherwise they are read from the words.
    gathered: Option<Vec<O>>,
}

impl<K: BatchKernel> Shared<K> {
    /// Runs one taken batch: the execute step (placement, staging, the one run) and the
    /// scatter step (outputs to the entries, the timeline, `done`). Pushes the futures'
    /// wakers to `wake`; leaves `items` empty. Returns what the trace needs when tracing.
    pub(super) fn run(
        &self,
        kit: &mut Kit<K>,
        taken: Taken<K::Output>,
        wake: &mut Vec<Waker>,
    ) -> Option<Marks> {
        let n = kit.spare.len();
        let model = kit.model.as_deref().or(self.config.model.as_deref());
        let executed = self.execute(&mut *kit.slot, &mut kit.spare, &mut kit.cpu, model, &taken);
        // The spread's feedback (its module doc): how much longer than priced the device took.
        kit.late = match (kit.price.take(), &executed.result) {
            (Some(price), Ok(t)) if executed.side == Side::Gpu => {
                Some((t.h2d + t.kernel + t.d2h).saturating_sub(price.latency))
            }
            _ => None,
        };
        self.scatter(kit.index, kit.device, &mut *kit.slot, &kit.cpu, n, taken, executed, wake)
    }

    /// The execute step: where the batch runs, staging and the run, every panic contained.
    fn execute(
        &self,
        slot: &mut dyn Slot,
        items: &mut Vec<K::Item>,
        cpu: &mut CpuBuffers,
        model: Option<&CostModel>,
        taken: &Taken<K::Output>,
    ) -> Executed<K::Output> {
        let kernel = &self.kernel;
        let seq = taken.seq;
        let n = items.len();
        let (in_words, out_words) = (n * kernel.in_words(), n * kernel.out_words());
        let fail = |msg: String| OffloadError::Batch { batch: seq, kernel: kernel.name(), msg };
        let mut ex = Executed {
            result: Ok(crate::PhaseTimes::default()),
            side: Side::Gpu,
            launched: false,
            decision: None,
            staging: Duration::ZERO,
            stage_at: taken.closed_at,
            gathered: None,
        };
        // Where the batch runs is decided first: a batch for the Ps is staged chunk by chunk
        // (inside `run_on_ps`), one for the worker thread into the worker's own host buffers
        // (`cpu`), and only one for the device into the slot. A CPU-placed batch never touches
        // the slot: on CUDA its input staging is write-combined memory, which the host must
        // only write (a host read of it is uncached, 10-50x slower than ordinary memory).
        let (chose, predicted) = match self.place(n, model) {
            Ok(p) => p,
            Err(msg) => {
                let _ = catch_unwind(AssertUnwindSafe(|| items.clear()));
                ex.result = Err(fail(msg));
                return ex;
            }
        };
        ex.side = chose;
        ex.decision = predicted.map(|(predicted_gpu, predicted_cpu)| PlacementDecision {
            batch: seq,
            n,
            chose,
            predicted_gpu,
            predicted_cpu,
            measured: Duration::ZERO,
        });
        ex.launched = chose == Side::Gpu;
        if let (Side::Cpu, Some(rt)) = (chose, &self.cpu_rt) {
            let ran = catch_unwind(AssertUnwindSafe(|| run_on_ps(kernel, rt, items)));
            let _ = catch_unwind(AssertUnwindSafe(|| items.clear()));
            ex.result = match ran {
                Ok(Ok((outs, times))) => {
                    ex.gathered = Some(outs);
                    Ok(times)
                }
                Ok(Err(msg)) => Err(fail(msg)),
                Err(p) => Err(fail(format!("the CPU run panicked: {}", panic_message(&*p)))),
            };
            return ex;
        }
        let t_stage = Instant::now();
        ex.stage_at = t_stage;
        let staged = match chose {
            Side::Gpu => {
                catch_unwind(AssertUnwindSafe(|| kernel.stage(items, &mut slot.staging_in()[..in_words])))
                    .map(Ok)
            }
            Side::Cpu => catch_unwind(AssertUnwindSafe(|| {
                cpu.grow(kernel.name(), in_words, out_words)
                    .map(|()| kernel.stage(items, &mut cpu.input[..in_words]))
            })),
        };
        // The items are not needed any more; dropping them here keeps the spare Vec's
        // capacity for the next batch. A panicking Drop of an item is contained too (`clear`
        // sets the length to 0 before dropping).
        let _ = catch_unwind(AssertUnwindSafe(|| items.clear()));
        ex.staging = t_stage.elapsed();
        ex.result = match staged {
            Err(p) => Err(fail(format!("staging panicked: {}", panic_message(&*p)))),
            Ok(Err(msg)) => Err(fail(msg)),
            Ok(Ok(())) => {
                let ran = catch_unwind(AssertUnwindSafe(|| match chose {
                    Side::Gpu => slot.run(kernel, n, in_words, out_words, Phases::ALL),
                    Side::Cpu => run_cpu(kernel, n, cpu, in_words, out_words),
                }));
                match ran {
                    Ok(Ok(times)) => Ok(times),
                    Ok(Err(OffloadError::Batch { msg, .. })) => Err(fail(msg)),
                    Ok(Err(e)) => Err(fail(e.to_string())),
                    Err(p) => Err(fail(format!("the run panicked: {}", panic_message(&*p)))),
                }
            }
        };
        ex
    }

    /// The scatter step: every entry's output (or the batch's failure) into its block, the
    /// per-item latency and the timeline recorded, then `done` set and the wakers taken —
    /// recorded before `done`, so once any future of the batch resolves its timeline is
    /// visible in `stats()`/`timelines()`.
    #[allow(clippy::too_many_arguments)] // the two steps' hand-over, spelled out
    fn scatter(
        &self,
        slot_index: usize,
        device_index: usize,
        slot: &mut dyn Slot,
        cpu: &CpuBuffers,
        n: usize,
        taken: Taken<K::Output>,
        ex: Executed<K::Output>,
        wake: &mut Vec<Waker>,
    ) -> Option<Marks> {
        let kernel = &self.kernel;
        let seq = taken.seq;
        let (in_words, out_words) = (n * kernel.in_words(), n * kernel.out_words());
        let fail = |msg: String| OffloadError::Batch { batch: seq, kernel: kernel.name(), msg };
        let t_scatter = Instant::now();
        let mut failure = ex.result.as_ref().err().cloned();
        // Per block, each entry's output cell (`submit` entries; `None` for a slice's piece,
        // whose outputs go into its entry).
        let mut cells: Vec<Vec<Mutex<Option<K::Output>>>> = taken.blocks.iter().map(|_| Vec::new()).collect();
        if failure.is_none() {
            let mut outs = ex.gathered.map(Vec::into_iter);
            let side = ex.side;
            let written = catch_unwind(AssertUnwindSafe(|| {
                // The words only when the outputs were not gathered already (the Ps path).
                let words: &[u32] = match (&outs, side) {
                    (Some(_), _) => &[],
                    (None, Side::Gpu) => &slot.staging_out()[..out_words],
                    (None, Side::Cpu) => &cpu.output[..out_words],
                };
                let mut next = |i: usize| match &mut outs {
                    Some(it) => it.next(),
                    None => Some(kernel.gather(n, words, i)),
                };
                for ((block, base), cells) in taken.blocks.iter().zip(cells.iter_mut()) {
                    let mut st = block.state.lock();
                    let mut i = *base;
                    cells.reserve_exact(st.entries.len());
                    for e in st.entries.iter_mut() {
                        cells.push(Mutex::new(match &mut e.out {
                            Out::One => next(i),
                            Out::Many { len, outs } => {
                                outs.extend((i..i + *len).filter_map(&mut next));
                                None
                            }
                        }));
                        i += e.out.len();
                    }
                }
            }));
            if let Err(p) = written {
                failure = Some(fail(format!("gather panicked: {}", panic_message(&*p))));
            }
        }
        let ok = failure.is_none();
        let scatter = t_scatter.elapsed();
        // Per-item latency (see the `latency` module): this slot's histograms, a leaf lock
        // only this worker takes on the hot path, once per batch.
        {
            let mut lat = self.item_latency[slot_index].lock();
            let delivered = t_scatter + scatter;
            for (block, _) in &taken.blocks {
                let st = block.state.lock();
                lat.record_batch(
                    taken.closed_at,
                    delivered,
                    st.entries.iter().map(|e| (e.submitted, e.out.len())),
                );
            }
        }
        let times = ex.result.unwrap_or_default();
        let mut decision = ex.decision;
        if let Some(d) = &mut decision {
            d.measured = times.h2d + times.kernel + times.d2h;
        }
        let on_device = ex.side == Side::Gpu && ok;
        self.shares[device_index]
            .add(n, if on_device { times.h2d + times.kernel + times.d2h } else { Duration::ZERO });
        self.log.lock().record(BatchTimeline {
            batch: seq,
            n,
            closed_by: taken.reason,
            start: taken.closed_at.saturating_duration_since(self.created),
            queue_wait: taken.closed_at.saturating_duration_since(taken.opened),
            staging: ex.staging,
            h2d: times.h2d,
            kernel: times.kernel,
            d2h: times.d2h,
            scatter,
            bytes_h2d: if on_device { (in_words * 4) as u64 } else { 0 },
            bytes_d2h: if on_device { (out_words * 4) as u64 } else { 0 },
            device: self.devices[device_index].kind(),
            device_index,
            slot: slot_index,
            launched: ex.launched,
            ok,
            placement: ex.side,
            predicted: decision,
        });
        for ((block, _), cells) in taken.blocks.iter().zip(cells) {
            // The results first, then `done` under the lock: a future that finds `done` finds
            // them; one that finds neither registers its waker, which this loop then takes.
            let outs = if ok { cells.into_boxed_slice() } else { Box::default() };
            let _first = block.results.set(Results { seq, failure: failure.clone(), outs });
            let mut st = block.state.lock();
            st.failure = failure.clone();
            st.done = true;
            wake.extend(st.entries.iter_mut().filter_map(|e| e.waker.take()));
        }
        self.trace.as_ref().map(|_| Marks {
            seq,
            n,
            device: device_index,
            reason: taken.reason,
            side: ex.side,
            ok,
            opened: taken.opened,
            start: taken.closed_at,
            stage: ex.stage_at,
            staging: ex.staging,
            times,
            scatter: t_scatter,
            scatter_len: scatter,
            flow: taken.flow,
        })
    }
}

impl<K: BatchKernel> Shared<K> {
    /// Where a batch of `n` runs, with `model`'s (GPU, CPU) predictions under `Auto` (the
    /// kit's device's model when the Batcher spreads, else `config.model`).
    /// `Err` (failing the batch) if the model cannot price it or panics.
    fn place(
        &self,
        n: usize,
        model: Option<&CostModel>,
    ) -> Result<(Side, Option<(Duration, Duration)>), String> {
        match (self.config.placement, model) {
            (Placement::Cpu, _) => Ok((Side::Cpu, None)),
            (Placement::Gpu, _) => Ok((Side::Gpu, None)),
            (Placement::Auto, None) => Err("placement Auto without a cost model".into()),
            (Placement::Auto, Some(model)) => {
                let procs = self.cpu_rt.as_ref().map_or(1, |rt| rt.procs());
                match catch_unwind(AssertUnwindSafe(|| {
                    placement::decide(
                        model,
                        self.kernel.name(),
                        n,
                        self.kernel.out_words(),
                        procs,
                        self.config.in_flight,
                    )
                })) {
                    Ok(Ok((side, gpu, cpu))) => Ok((side, Some((gpu, cpu)))),
                    Ok(Err(e)) => Err(format!("the cost model could not place the batch: {e}")),
                    Err(p) => Err(format!("the cost model panicked: {}", panic_message(&*p))),
                }
            }
        }
    }
}

/// One chunk of a CPU-placed batch: its first item's index and its outputs (or why it failed).
type ChunkResult<O> = (usize, Result<Vec<O>, String>);

/// Runs a CPU-placed batch on `rt`'s Ps: `items` cut into about four chunks per P (enough to
/// balance uneven Ps, few enough that each chunk's fixed cost is small), each chunk staged into
/// its own words, run with [`Job::run_host`](crate::Job::run_host) and gathered — a small
/// batch of its own, so any kernel splits without a chunking API. Allocates per chunk, not
/// per item. Returns the outputs in item order and the wall time as the kernel phase.
fn run_on_ps<K: BatchKernel>(
    kernel: &K,
    rt: &gmprt_runtime::Handle,
    items: &[K::Item],
) -> Result<(Vec<K::Output>, crate::PhaseTimes), String> {
    let n = items.len();
    let grain = n.div_ceil(4 * rt.procs()).max(1);
    let done: Mutex<Vec<ChunkResult<K::Output>>> = Mutex::new(Vec::new());
    let t = Instant::now();
    rt.parallel_for(n, grain, |r| {
        let chunk = &items[r.clone()];
        let m = chunk.len();
        let mut input = vec![0u32; m * kernel.in_words()];
        let mut output = vec![0u32; m * kernel.out_words()];
        kernel.stage(chunk, &mut input);
        let res = kernel
            .run_host(m, &input, &mut output)
            .map(|()| (0..m).map(|i| kernel.gather(m, &output, i)).collect());
        done.lock().push((r.start, res));
    });
    let kernel_time = t.elapsed();
    let mut chunks = done.into_inner();
    chunks.sort_unstable_by_key(|(start, _)| *start);
    let mut outs = Vec::with_capacity(n);
    for (_, res) in chunks {
        outs.extend(res?);
    }
    Ok((outs, crate::PhaseTimes { kernel: kernel_time, ..Default::default() }))
}

/// What running one batch needs besides the batch (the `worker` module's doc, "Kits").
pub(super) struct Kit<K: BatchKernel> {
    /// The slot's index (its timelines' `slot`, its latency histogram).
    pub(super) index: usize,
    /// Its device's index in `Shared::devices`.
    pub(super) device: usize,
    /// Its device's model when the Batcher spreads over several (`Placement::Auto` prices
    /// with it); `None`: `config.model`.
    pub(super) model: Option<std::sync::Arc<crate::model::CostModel>>,
    pub(super) slot: Box<dyn Slot>,
    /// The empty item `Vec` (capacity `max_batch`) the lanes' items are moved into.
    pub(super) spare: Vec<K::Item>,
    /// Host buffers of CPU-placed batches run where the kit runs (allocated at the first one).
    pub(super) cpu: CpuBuffers,
    /// Its trace lanes for inline runs (tracing only; made at the first one).
    pub(super) inline_trace: Option<super::trace::SlotTrace>,
    /// The batch's price on this device when the spread chose it (set at the close).
    pub(super) price: Option<super::spread::Price>,
    /// How much longer than `price` the batch ran on the device (set by the run, taken back
    /// to the spread when the kit comes home).
    pub(super) late: Option<std::time::Duration>,
}

/// The worker thread's own input and output words for CPU-placed batches when the Batcher
/// has no runtime: ordinary host memory, grown (fallibly) at the first such batch and reused.
/// Never the slot's staging, which on CUDA is write-combined and must not be read by the host.
#[derive(Default)]
pub(super) struct CpuBuffers {
    input: Vec<u32>,
    output: Vec<u32>,
}

impl CpuBuffers {
    /// Grows the buffers to at least `in_words` and `out_words`; `Err` naming the buffer when
    /// the allocator refuses (the batch fails with it, never an abort).
    fn grow(&mut self, kernel: &str, in_words: usize, out_words: usize) -> Result<(), String> {
        for (buf, words, what) in
            [(&mut self.input, in_words, "input"), (&mut self.output, out_words, "output")]
        {
            if buf.len() < words {
                buf.try_reserve_exact(words - buf.len()).map_err(|e| {
                    format!("cannot allocate the CPU {what} buffer of {words} words for {kernel} ({e})")
                })?;
                buf.resize(words, 0);
            }
        }
        Ok(())
    }
}

/// Runs a CPU-placed batch: [`Job::run_host`](crate::Job::run_host) over the staged words in
/// `cpu` (grown by the caller) on this (the worker's) thread, timed as the kernel phase.
fn run_cpu<K: BatchKernel>(
    kernel: &K,
    n: usize,
    cpu: &mut CpuBuffers,
    in_words: usize,
    out_words: usize,
) -> Result<crate::PhaseTimes, OffloadError> {
    let t = Instant::now();
    kernel
        .run_host(n, &cpu.input[..in_words], &mut cpu.output[..out_words])
        .map_err(|msg| OffloadError::Batch { batch: 0, kernel: kernel.name(), msg })?;
    Ok(crate::PhaseTimes { kernel: t.elapsed(), ..Default::default() })
}
