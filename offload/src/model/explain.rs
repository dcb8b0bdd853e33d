//! The cost model's answers in plain words: [`CostModel::explain`] (a batch's breakdown, the
//! verdict, two pipelines, streaming and the crossover, one line each) and
//! [`CostModel::explain_pipeline`]. What `gmprt explain` prints and the examples quote.
//!
//! It reads the model and never prices anything itself: every figure comes from
//! [`CostModel::predict`], [`CostModel::predict_pipeline`] or [`CostModel::crossover`].
use super::cost::{Breakdown, CostModel, Pipeline, Residency, Verdict};
use super::crossover::Crossover;
use super::units::{ps, rate, secs};

impl CostModel {
    /// A pipeline prediction in plain words (one line).
    ///
    /// ```
    /// use gmprt_offload::model::{CostModel, DeviceProfile, Residency};
    /// let m = CostModel::new(DeviceProfile::published_h100());
    /// let p = m.predict_pipeline("saxpy", 1e6, 2, Residency::Host).unwrap();
    /// assert_eq!(
    ///     m.explain_pipeline(&p),
    ///     "Pipeline, 2 in flight: one batch's latency 249.76 µs, steady state 155.45 µs per batch \
    ///      (6.43 G elements/s), bound by H2D."
    /// );
    /// ```
    pub fn explain_pipeline(&self, p: &Pipeline) -> String {
        format!(
            "Pipeline, {} in flight: one batch's latency {}, steady state {} per batch ({}/s), bound by {}.",
            p.in_flight,
            secs(p.latency),
            secs(p.per_batch),
            rate(p.throughput(), self.profile.kernel(&p.kernel).map_or("items", |k| k.unit.as_str())),
            p.bound_by
        )
    }
    /// The breakdown and verdict in plain words (a few lines).
    ///
    /// ```
    /// use gmprt_offload::model::{CostModel, DeviceProfile, Residency};
    /// let m = CostModel::new(DeviceProfile::published_h100());
    /// let b = m.predict("black_scholes", 1e6, Residency::Host, 0.0).unwrap();
    /// let e = m.explain(&b);
    /// // Phases, CPU times, verdict, two pipelines, streaming, crossover: one line each.
    /// assert_eq!(e.lines().count(), 7, "{e}");
    /// assert!(e.contains("Verdict: CPU on 8 Ps, 1.50x faster than the GPU end to end."), "{e}");
    /// assert!(e.contains("Crossover: never — PCIe-bound"), "{e}");
    /// ```
    pub fn explain(&self, b: &Breakdown) -> String {
        let phases = [
            ("queue wait", b.queue_wait),
            ("launch", b.launch),
            ("H2D", b.h2d),
            ("kernel", b.kernel_time),
            ("D2H", b.d2h),
        ];
        let (dom, dom_t) =
            phases.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap_or(("kernel", 0.0));
        let share = if b.gpu_total > 0.0 { 100.0 * dom_t / b.gpu_total } else { 0.0 };
        let res = match b.residency {
            Residency::Host => "inputs on the host",
            Residency::Device => "data already on the device",
            Residency::Pageable => "inputs in pageable host memory",
        };
        let res = if b.mapped_io { format!("{res}, mapped I/O: no copies") } else { res.to_string() };
        let mut out = format!(
            "{} n = {} ({res}): GPU {} = launch {} + H2D {} + kernel {} + D2H {} + queue {}; {dom} dominates ({share:.0}%).\n",
            b.kernel,
            b.n,
            secs(b.gpu_total),
            secs(b.launch),
            secs(b.h2d),
            secs(b.kernel_time),
            secs(b.d2h),
            secs(b.queue_wait)
        );
        let cpu: Vec<String> = b.cpu.iter().map(|(p, t)| format!("{p}P {}", secs(*t))).collect();
        out += &format!("CPU: {}.\n", cpu.join(", "));
        out += &match b.verdict {
            Verdict::Gpu { speedup } => {
                format!("Verdict: GPU, {speedup:.2}x faster than the best CPU P count.\n")
            }
            Verdict::Cpu { procs, speedup } => {
                format!("Verdict: CPU on {}, {speedup:.2}x faster than the GPU end to end.\n", ps(procs))
            }
        };
        for in_flight in [1, 2] {
            if let Ok(p) = self.predict_pipeline(&b.kernel, b.n, in_flight, b.residency) {
                out += &self.explain_pipeline(&p);
                out.push('\n');
            }
        }
        // The verdict above is for one batch; a stream of them is judged by the time per batch.
        let best = b.cpu.iter().copied().min_by(|x, y| x.1.total_cmp(&y.1));
        if let (Ok(p), Some((procs, cpu))) = (self.predict_pipeline(&b.kernel, b.n, 2, b.residency), best) {
            out += &if p.per_batch <= cpu {
                format!(
                    "Streaming (2 in flight): GPU, {} per batch against {} on {}.\n",
                    secs(p.per_batch),
                    secs(cpu),
                    ps(procs)
                )
            } else {
                format!(
                    "Streaming (2 in flight): CPU on {}, {} per batch against the GPU's {}.\n",
                    ps(procs),
                    secs(cpu),
                    secs(p.per_batch)
                )
            };
        }
        out += &match self.crossover(&b.kernel, b.residency) {
            Ok(Crossover::At { n }) => format!("Crossover: the GPU wins from n = {n:.0} on."),
            Ok(Crossover::Always) => "Crossover: the GPU wins at every size.".to_string(),
            Ok(Crossover::Never { reason, wins_below: Some(_) }) => {
                format!("Crossover: none, the GPU loses at large n — {reason}.")
            }
            Ok(Crossover::Never { reason, .. }) => format!("Crossover: never — {reason}."),
            Err(e) => format!("Crossover: unknown ({e})."),
        };
        out
    }
}
