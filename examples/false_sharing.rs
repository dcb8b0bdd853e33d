//! False sharing, measured: per-P counters packed into one cache line against the same
//! counters padded apart.
//!
//! ```text
//! cargo run --release --example false_sharing -- [--procs P] [--increments N] [--reps R] [--json]
//! ```
//! One task per P increments its own counter `N` times (one writer per counter, a relaxed load
//! and store, as a per-P statistic is kept). Nothing is shared in the program's logic, yet when
//! the counters sit side by side (8 bytes apart, 8 per 64-byte line) every store invalidates the
//! line in the other cores' caches, and the line bounces between them. Padding each counter to
//! its own line removes the traffic. Three layouts run in the same process:
//! * `packed`: `[AtomicU64; P]`, 8 bytes apart;
//! * `padded 64`: each counter `#[repr(align(64))]`, one x86-64 / AArch64 cache line apart;
//! * `padded 128`: each counter `#[repr(align(128))]`. Intel's L2 "adjacent cache line"
//!   (spatial) prefetcher fetches 64-byte lines in 128-byte-aligned pairs, so two counters in
//!   neighbouring lines can still pull each other's line; this is why `crossbeam_utils::CachePadded`
//!   is 128 bytes on x86-64. On a machine without that prefetcher 64 and 128 measure the same.
//!
//! The figure is ns per increment as each P sees it (the layout's median wall time over `N`),
//! and the ratio packed / padded. With one P there is nobody to share with: the ratio is ~1.
//! The `overlap` column says how many counting tasks ran at once on average: on a machine
//! whose other load leaves one core free, they run one after another and the ratio falls to
//! ~1 too, which the output then says.
//!
//! `--help` lists every flag; bad flags exit 2 with the reason.

#[path = "common/mod.rs"]
mod common;
use clap::Parser;
use common::{count_in, fail, positive, Cli, Procs};
use std::ffi::OsString;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

const NAME: &str = "false_sharing";

/// Per-P counters packed in one cache line against padded to 64 and 128 bytes: ns per
/// increment and the ratio.
#[derive(Parser, Debug)]
#[command(name = NAME)]
pub struct Args {
    #[command(flatten)]
    procs: Procs,
    /// Increments each P makes to its own counter, per run
    #[arg(long, value_name = "N", default_value_t = 20_000_000, value_parser = positive)]
    increments: usize,
    /// Runs per layout, interleaved; the median is kept
    #[arg(long, value_name = "R", default_value_t = 5, value_parser = count_in(1, 1000))]
    reps: usize,
    /// Print the figures as JSON instead of text
    #[arg(long)]
    json: bool,
}

impl Cli for Args {}

/// One counter alone on a 64-byte cache line (the line size of x86-64 and most AArch64 cores).
#[repr(align(64))]
#[derive(Default)]
pub struct Pad64(pub AtomicU64);

/// One counter alone on a 128-byte block: also clear of the adjacent-line prefetcher's pair.
#[repr(align(128))]
#[derive(Default)]
pub struct Pad128(pub AtomicU64);

/// A set of per-P counters in some layout.
pub trait Counters: Send + Sync + 'static {
    /// The layout's name in the table.
    const LAYOUT: &'static str;
    /// `n` counters at zero.
    fn new(n: usize) -> Self;
    /// Counter `i`.
    fn at(&self, i: usize) -> &AtomicU64;
}

impl Counters for Vec<AtomicU64> {
    const LAYOUT: &'static str = "packed (8 B apart)";
    fn new(n: usize) -> Self {
        (0..n).map(|_| AtomicU64::new(0)).collect()
    }
    fn at(&self, i: usize) -> &AtomicU64 {
        &self[i]
    }
}

impl Counters for Vec<Pad64> {
    const LAYOUT: &'static str = "padded to 64 B";
    fn new(n: usize) -> Self {
        (0..n).map(|_| Pad64::default()).collect()
    }
    fn at(&self, i: usize) -> &AtomicU64 {
        &self[i].0
    }
}

impl Counters for Vec<Pad128> {
    const LAYOUT: &'static str = "padded to 128 B";
    fn new(n: usize) -> Self {
        (0..n).map(|_| Pad128::default()).collect()
    }
    fn at(&self, i: usize) -> &AtomicU64 {
        &self[i].0
    }
}

/// One layout's figure.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Figure {
    /// The layout.
    pub layout: &'static str,
    /// Bytes between neighbouring counters.
    pub stride: usize,
    /// Median wall time of a run over the increments each P makes.
    pub ns_per_increment: f64,
    /// This layout's time over the packed layout's (1.0 for packed).
    pub vs_packed: f64,
    /// Tasks running at once on average in the median run (see `one_run`): near `procs`, the
    /// counters were written concurrently; near 1, the machine ran them one after another.
    pub overlap: f64,
}

/// What the story measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    /// Ps (one task, one counter each).
    pub procs: usize,
    /// Increments per P per run.
    pub increments: usize,
    /// Packed, padded 64, padded 128.
    pub figures: Vec<Figure>,
    /// Packed over padded-to-64 time: how much slower false sharing makes an increment.
    pub ratio_packed_over_padded64: f64,
}

/// Bytes between counter 0 and counter 1 of a layout.
pub fn stride<C: Counters>() -> usize {
    let c = C::new(2);
    c.at(1) as *const AtomicU64 as usize - c.at(0) as *const AtomicU64 as usize
}

/// One run: `procs` tasks, each making `n` increments to its own counter, started together.
/// Returns the wall time from the first task's start to the last task's end, and how many
/// tasks ran at once on average (the tasks' own times summed over that span: `procs` when they
/// all overlapped, 1 when a busy machine ran them one after another, which hides the effect).
/// Every counter ends at `n` (checked: one writer per counter loses nothing).
fn one_run<C: Counters>(rt: &gmprt::Runtime, n: usize) -> Result<(Duration, f64), String> {
    let procs = rt.procs();
    let counters = Arc::new(C::new(procs));
    let ready = Arc::new(AtomicUsize::new(0));
    let c = counters.clone();
    let t = rt.block_on(async move {
        let hs: Vec<_> = (0..procs)
            .map(|i| {
                let (c, ready) = (c.clone(), ready.clone());
                gmprt::spawn(async move {
                    // Start together: each task waits (yielding its P) until all have begun,
                    // so that the increments overlap. Relaxed: only a count, no data is
                    // published through it.
                    ready.fetch_add(1, Relaxed);
                    while ready.load(Relaxed) < procs {
                        gmprt::yield_now().await;
                    }
                    let t0 = Instant::now();
                    let mine = c.at(i);
                    for _ in 0..n {
                        // One writer per counter: a relaxed load and store, the way a per-P
                        // statistic is bumped (no read-modify-write lock is needed).
                        mine.store(mine.load(Relaxed) + 1, Relaxed);
                    }
                    (t0, Instant::now())
                })
            })
            .collect();
        let mut span: Option<(Instant, Instant)> = None;
        let mut busy = Duration::ZERO;
        for h in hs {
            let (a, b) = h.await.expect("a counting task failed");
            busy += b - a;
            span = Some(span.map_or((a, b), |(s, e)| (s.min(a), e.max(b))));
        }
        let span = span.map(|(s, e)| e - s).unwrap_or_default();
        (span, busy.as_secs_f64() / span.as_secs_f64().max(1e-12))
    });
    for i in 0..procs {
        let got = counters.at(i).load(Relaxed);
        if got != n as u64 {
            return Err(format!("counter {i} is {got}, expected {n}"));
        }
    }
    Ok(t)
}

/// The run of median time (with its overlap).
fn median(mut v: Vec<(Duration, f64)>) -> (Duration, f64) {
    v.sort_by_key(|r| r.0);
    v[v.len() / 2]
}

/// Runs the story on `rt`: the three layouts, interleaved run by run so that a noisy moment on
/// a busy machine falls on all of them.
pub fn measure(rt: &gmprt::Runtime, increments: usize, reps: usize) -> Result<Outcome, String> {
    let mut runs: [Vec<(Duration, f64)>; 3] = Default::default();
    // One warm-up of each: thread start-up, first-touch pages.
    one_run::<Vec<AtomicU64>>(rt, increments.min(100_000))?;
    one_run::<Vec<Pad64>>(rt, increments.min(100_000))?;
    for _ in 0..reps {
        runs[0].push(one_run::<Vec<AtomicU64>>(rt, increments)?);
        runs[1].push(one_run::<Vec<Pad64>>(rt, increments)?);
        runs[2].push(one_run::<Vec<Pad128>>(rt, increments)?);
    }
    let [a, b, c] = runs.map(|r| {
        let (t, overlap) = median(r);
        (t.as_secs_f64() * 1e9 / increments as f64, overlap)
    });
    let layouts = [
        (<Vec<AtomicU64> as Counters>::LAYOUT, stride::<Vec<AtomicU64>>(), a),
        (<Vec<Pad64> as Counters>::LAYOUT, stride::<Vec<Pad64>>(), b),
        (<Vec<Pad128> as Counters>::LAYOUT, stride::<Vec<Pad128>>(), c),
    ];
    let figures = layouts
        .into_iter()
        .map(|(layout, stride, (ns, overlap))| Figure {
            layout,
            stride,
            ns_per_increment: ns,
            vs_packed: ns / a.0,
            overlap,
        })
        .collect();
    let (a, b) = (a.0, b.0);
    Ok(Outcome { procs: rt.procs(), increments, figures, ratio_packed_over_padded64: a / b })
}

/// The figures, in words.
pub fn print(o: &Outcome) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "{} Ps ({cores} cores), one task and one counter each, {} increments per P per run",
        o.procs, o.increments
    );
    println!("{:<20} {:>8} {:>12} {:>10} {:>8}", "layout", "stride", "ns/incr", "vs packed", "overlap");
    for f in &o.figures {
        println!(
            "{:<20} {:>6} B {:>12.2} {:>10.2} {:>8.2}",
            f.layout, f.stride, f.ns_per_increment, f.vs_packed, f.overlap
        );
    }
    println!(
        "false sharing: packed counters are {:.1}x slower per increment than padded ones{}",
        o.ratio_packed_over_padded64,
        if o.procs < 2 || cores < 2 {
            " (one P or one core: nothing to share with, ~1x expected)"
        } else {
            ""
        }
    );
    let least = o.figures.iter().map(|f| f.overlap).fold(f64::INFINITY, f64::min);
    if o.procs >= 2 && least < 1.5 {
        println!(
            "note: in some layout's median run the counting tasks overlapped only {least:.2}x (of {}): other load \
             on this machine ran them largely one after another, which hides false sharing; an idle machine \
             shows it better",
            o.procs
        );
    }
}

/// Parses `args` (the program's name first) and runs the story; what `main` and `gmprt tour`
/// call. A bad command line prints its error and exits 2 (`--help` prints and exits 0).
pub fn main_from(args: Vec<OsString>) {
    let a: Args = common::parse_from(args);
    let rt = a.procs.gmprt().unwrap_or_else(|e| fail(NAME, e));
    match measure(&rt, a.increments, a.reps) {
        Ok(o) if a.json => {
            println!("{}", serde_json::to_string_pretty(&o).unwrap_or_else(|e| fail(NAME, e)))
        }
        Ok(o) => print(&o),
        Err(e) => fail(NAME, e),
    }
}

#[allow(dead_code)]
fn main() {
    main_from(std::env::args_os().collect());
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::try_parse_from;

    #[test]
    fn cli() {
        common::testing::cli_contract::<Args>(NAME);
        let a: Args = try_parse_from([NAME]).unwrap();
        assert_eq!((a.procs.n, a.increments, a.reps, a.json), (None, 20_000_000, 5, false));
        let a: Args = try_parse_from([NAME, "--procs", "3", "--increments", "1e3", "--json"]).unwrap();
        assert_eq!((a.procs.n, a.increments, a.json), (Some(3), 1000, true));
    }

    #[test]
    fn padding_puts_counters_a_line_apart() {
        assert_eq!(stride::<Vec<AtomicU64>>(), 8);
        assert_eq!(stride::<Vec<Pad64>>(), 64);
        assert_eq!(stride::<Vec<Pad128>>(), 128);
        assert_eq!(std::mem::align_of::<Pad64>(), 64);
        assert_eq!(std::mem::size_of::<Pad64>(), 64);
        // Packed: 8 counters share one 64-byte line (when the first starts a line).
        assert_eq!(8 * std::mem::size_of::<AtomicU64>(), 64);
    }

    #[test]
    fn every_counter_counts_every_increment() {
        let rt = gmprt::Runtime::builder().procs(2).build().unwrap();
        let o = measure(&rt, 10_000, 1).unwrap();
        assert_eq!(o.figures.len(), 3);
        assert_eq!(o.figures.iter().map(|f| f.stride).collect::<Vec<_>>(), [8, 64, 128]);
        assert_eq!(o.figures[0].vs_packed, 1.0);
    }
}
