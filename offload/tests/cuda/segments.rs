//! Black-Scholes by segment and on a selection: `[host]` against the CPU twins, `[gpu]` within the
//! segment tolerance.

use super::*;

/// A by-segment batch: 50,000 contracts in uneven segments (empty ones included), signed
/// positions; its staged input words, and the CPU twins' per-contract output words and sums.
struct BySegment {
    chain: Vec<Contract>,
    qty: Vec<f32>,
    offsets: Vec<u32>,
    input: Vec<u32>,
    cpu_out: Vec<u32>,
    cpu_sums: Vec<segmented::GreekSums>,
}

fn by_segment_batch() -> BySegment {
    let n = 50_000;
    let mut chain = black_scholes::synthetic_chain(n, 11);
    let qty: Vec<f32> = (0..n).map(|i| ((i % 21) as f32 - 10.0) * 100.0).collect();
    let (mut offsets, mut at) = (vec![0u32], 0);
    for len in [0, 1, 700, 3000, 31].iter().cycle() {
        at = (at + len).min(n);
        offsets.push(at as u32);
        if at == n {
            break;
        }
    }
    // Segments are underlyings: every contract of one at its first contract's spot (what
    // `BlackScholesSelected` prices from its one spot word per segment).
    for w in offsets.windows(2) {
        let (lo, hi) = (w[0] as usize, w[1] as usize);
        if lo < hi {
            let spot = chain[lo].spot;
            chain[lo..hi].iter_mut().for_each(|c| c.spot = spot);
        }
    }
    let job = BlackScholesBySegment { segments: offsets.len() - 1 };
    let mut input = vec![0u32; job.in_words(n)];
    black_scholes::stage_words(&chain, &mut input[..n * IN_WORDS]);
    for (w, q) in input[n * IN_WORDS..n * (IN_WORDS + 1)].iter_mut().zip(&qty) {
        *w = q.to_bits();
    }
    input[n * (IN_WORDS + 1)..].copy_from_slice(&offsets);
    let mut cpu_out = vec![0u32; n * OUT_WORDS];
    black_scholes::price_greeks_words(n, &input[..n * IN_WORDS], &mut cpu_out).expect("cpu pricing");
    let cols = segmented::BsCols::from_words(n, &cpu_out).expect("columns");
    let mut cpu_sums = vec![segmented::GreekSums::default(); job.segments];
    segmented::sum_by_segment(&cols, &qty, &offsets, &mut cpu_sums).expect("cpu sums");
    BySegment { chain, qty, offsets, input, cpu_out, cpu_sums }
}

/// Runs the batch on `backend`'s slot: the sums, copied back alone.
fn run_by_segment(backend: &dyn Backend, b: &BySegment) -> Vec<segmented::GreekSums> {
    let (n, job) = (b.chain.len(), BlackScholesBySegment { segments: b.offsets.len() - 1 });
    let mut slot = backend.new_slot(job.in_words(n), job.out_words(n)).expect("slot");
    slot.staging_in()[..b.input.len()].copy_from_slice(&b.input);
    job.run(slot.as_mut(), n).expect("by-segment run").0
}

pub(super) fn by_segment_on_host_equals_the_cpu_twins() {
    let b = by_segment_batch();
    // The Host slot runs the same two CPU twins: equal bit for bit.
    assert_eq!(run_by_segment(gmprt_offload::Device::host().backend(), &b), b.cpu_sums);
}

pub(super) fn by_segment_within_segment_tolerance(backend: &CudaBackend) {
    let b = by_segment_batch();
    let gpu = run_by_segment(backend, &b);
    let all: Vec<u32> = (0..gpu.len() as u32).collect();
    let worst = assert_within_segment_tolerance(&b, &gpu, &all);
    println!("by-segment: {} segments, worst |gpu - cpu| / tolerance {worst:.3}", gpu.len());
    // One block size, one summation order: a second run gives the same bits.
    assert_eq!(run_by_segment(backend, &b), gpu, "the device sums vary run to run");
}

/// Checks device sums of the segments `sel` (in that order) against the CPU twins' within
/// `segment_tolerance` (CPU math against CUDA math); returns the worst error / tolerance.
fn assert_within_segment_tolerance(b: &BySegment, gpu: &[segmented::GreekSums], sel: &[u32]) -> f64 {
    let n = b.chain.len();
    let cols = segmented::BsCols::from_words(n, &b.cpu_out).expect("columns");
    let mut tol = vec![segmented::GreekSums::default(); b.offsets.len() - 1];
    segmented::segment_tolerance(
        &b.chain,
        &cols,
        &b.qty,
        &b.offsets,
        &tolerance::CPU_MATH,
        &tolerance::CUDA_MATH,
        &mut tol,
    )
    .expect("tolerance");
    let mut worst = 0f64;
    let mut failures = Vec::new();
    for (g, &s) in gpu.iter().zip(sel) {
        let (c, t) = (b.cpu_sums[s as usize], tol[s as usize]);
        for (k, ((g, c), t)) in g.to_array().iter().zip(c.to_array()).zip(t.to_array()).enumerate() {
            let ratio = if t > 0.0 {
                (g - c).abs() / t
            } else if *g == c {
                0.0
            } else {
                f64::INFINITY
            };
            worst = worst.max(ratio);
            if ratio > 1.0 && failures.len() < 10 {
                failures.push(format!(
                    "segment {s} output {}: gpu {g} cpu {c} (tolerance {t:e})",
                    tolerance::OUTPUT_NAMES[k]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    worst
}

/// Some segments of the batch, out of order and with a repeat: empty ones, the longest, the last.
fn selection(b: &BySegment) -> Vec<u32> {
    let segments = b.offsets.len() as u32 - 1;
    vec![segments - 1, 0, 3, 2, 3, 1, segments / 2]
}

/// Runs `sel` of the batch on `backend`'s slot with [`BlackScholesSelected`]: the whole batch
/// staged (as a resident book would be), only the selected segments priced and summed.
fn run_selected(backend: &dyn Backend, b: &BySegment, sel: &[u32]) -> Vec<segmented::GreekSums> {
    let n = b.chain.len();
    let job = BlackScholesSelected { segments: b.offsets.len() - 1, selected: sel.len() };
    let mut slot = backend.new_slot(job.in_words(n), job.out_words()).expect("slot");
    // The per-contract spot column is not read: zero it, so a kernel that read it would fail.
    slot.staging_in()[..b.input.len()].copy_from_slice(&b.input);
    slot.staging_in()[..n].fill(0);
    // Each segment's spot (1.0 for an empty one, which is never read).
    let at = job.spots_at(n);
    for (k, w) in b.offsets.windows(2).enumerate() {
        let spot = if w[0] < w[1] { b.chain[w[0] as usize].spot } else { 1.0 };
        slot.staging_in()[at + k] = spot.to_bits();
    }
    slot.staging_in()[at + job.segments..job.in_words(n)].copy_from_slice(sel);
    let all = gmprt_offload::Phases { h2d: true, kernel: true, d2h: true };
    slot.run(&job, n, job.in_words(n), job.out_words(), all).expect("selected run");
    job.gather(slot.staging_out())
}

pub(super) fn selected_on_host_equals_the_cpu_twins() {
    let b = by_segment_batch();
    let sel = selection(&b);
    let want: Vec<_> = sel.iter().map(|&s| b.cpu_sums[s as usize]).collect();
    // Each selected segment priced as its own batch and summed in index order: bit for bit.
    assert_eq!(run_selected(gmprt_offload::Device::host().backend(), &b, &sel), want);
}

pub(super) fn selected_within_segment_tolerance(backend: &CudaBackend) {
    let b = by_segment_batch();
    let sel = selection(&b);
    let gpu = run_selected(backend, &b, &sel);
    let worst = assert_within_segment_tolerance(&b, &gpu, &sel);
    println!(
        "selected: {} of {} segments, worst |gpu - cpu| / tolerance {worst:.3}",
        sel.len(),
        b.offsets.len() - 1
    );
}
