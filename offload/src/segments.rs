//! The segment jobs, [`BlackScholesBySegment`] and [`BlackScholesSelected`] (re-exported from
//! `jobs`): their word layouts, their host runs and the run of a by-segment batch on a slot.
//! Their CUDA launches are in `cuda::launch`, which reads the layouts from here; the
//! `CudaJob` impls that call those launches are in `jobs`. Kept apart from `jobs` so that the
//! launches and the jobs do not depend on each other.
use crate::error::OffloadError;
use crate::job::Job;
use gmprt_kernels::black_scholes;
use gmprt_kernels::segmented::{self, GreekSums, AGG_WORDS};
use gmprt_kernels::KernelError;

/// Black-Scholes priced and summed per segment in one run, so only the sums come back: a
/// book sorted by underlying, each underlying's contracts one segment, reduced to
/// `Σ qty · (price, delta, gamma, vega, theta, rho)` in f64 (`gmprt_kernels::segmented`; on
/// CUDA the kernel pair's `gmprt_greeks_segment_sum`). The trading desk's device path.
///
/// Word layouts for a batch of `n` contracts in `segments` segments:
/// * **input** ([`in_words`](Self::in_words)): the Black-Scholes input columns (`IN_WORDS`
///   × n, stride n, as `black_scholes::stage_words` writes them), then `qty` (n f32 words),
///   then `offsets` (segments + 1 words: 0, non-decreasing, n last);
/// * **output** ([`out_words`](Self::out_words)): the sums first
///   ([`sum_words`](Self::sum_words): `AGG_WORDS` f64 per segment, segment-major, each as its
///   low then high 32 bits), then `OUT_WORDS` × n words of scratch for the per-contract
///   outputs, which never leave the device: [`run`](Self::run) copies back the sums only.
///
/// ```
/// use gmprt_offload::jobs::BlackScholesBySegment;
/// use gmprt_offload::kernels::black_scholes::{stage_words, synthetic_chain, IN_WORDS};
/// use gmprt_offload::Device;
///
/// // 5 contracts in 2 segments (0..2 and 2..5), 100 of each held.
/// let chain = synthetic_chain(5, 3);
/// let job = BlackScholesBySegment { segments: 2 };
/// let mut slot = Device::host().backend().new_slot(job.in_words(5), job.out_words(5)).unwrap();
/// let input = &mut slot.staging_in()[..job.in_words(5)];
/// stage_words(&chain, &mut input[..5 * IN_WORDS]);
/// input[5 * IN_WORDS..6 * 5 + 5].copy_from_slice(&[100f32.to_bits(); 5]);
/// input[7 * 5..].copy_from_slice(&[0, 2, 5]);
/// let (sums, _times) = job.run(slot.as_mut(), 5).unwrap();
/// assert_eq!(sums.len(), 2);
/// assert!(sums[0].price > 0.0 && sums[1].price > 0.0); // long options are worth something
/// // Offsets that do not end at n are refused by the run, with the reason.
/// slot.staging_in()[7 * 5 + 2] = 4;
/// assert!(job.run(slot.as_mut(), 5).unwrap_err().to_string().contains("last offset"));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct BlackScholesBySegment {
    /// Segments in the batch.
    pub segments: usize,
}

impl BlackScholesBySegment {
    /// Input words for `n` contracts: `n · (IN_WORDS + 1) + segments + 1`.
    pub fn in_words(&self, n: usize) -> usize {
        n * (black_scholes::IN_WORDS + 1) + self.segments + 1
    }
    /// Output words the sums take: `2 · AGG_WORDS · segments`.
    pub fn sum_words(&self) -> usize {
        2 * AGG_WORDS * self.segments
    }
    /// Output words for `n` contracts: the sums and the scratch columns.
    pub fn out_words(&self, n: usize) -> usize {
        self.sum_words() + n * black_scholes::OUT_WORDS
    }
    /// The sums in `words` (at least [`sum_words`](Self::sum_words) of them).
    pub fn gather(&self, words: &[u32]) -> Vec<GreekSums> {
        let f = |k: usize| f64::from_bits(u64::from(words[2 * k]) | (u64::from(words[2 * k + 1]) << 32));
        (0..self.segments)
            .map(|s| GreekSums::from_array(std::array::from_fn(|c| f(s * AGG_WORDS + c))))
            .collect()
    }
    /// The input of `n` contracts (at least [`in_words`](Self::in_words) words, checked by the
    /// caller) as its parts: the Black-Scholes columns, `qty`, `offsets`, and what follows.
    fn split_input<'a>(&self, n: usize, input: &'a [u32]) -> (&'a [u32], &'a [f32], &'a [u32], &'a [u32]) {
        let (bs_in, rest) = input.split_at(n * black_scholes::IN_WORDS);
        let (qty, rest) = rest.split_at(n);
        let (offsets, rest) = rest.split_at(self.segments + 1);
        (bs_in, bytemuck::cast_slice(qty), offsets, rest)
    }
    /// Runs a batch of `n` contracts already staged in `slot`'s input: upload and both
    /// kernels over the whole output, then a copy back of the sums alone. Returns the sums and
    /// the phases' times (the kernel's covers both launches).
    pub fn run(
        &self,
        slot: &mut dyn crate::Slot,
        n: usize,
    ) -> Result<(Vec<GreekSums>, crate::PhaseTimes), OffloadError> {
        let (iw, ow) = (self.in_words(n), self.out_words(n));
        let run = crate::Phases { h2d: true, kernel: true, d2h: false };
        let mut t = slot.run(self, n, iw, ow, run)?;
        let back = crate::Phases { h2d: false, kernel: false, d2h: true };
        t.d2h = slot.run(self, n, iw, self.sum_words(), back)?.d2h;
        Ok((self.gather(slot.staging_out()), t))
    }
}

/// The segment jobs' buffer check: at least `iw` input and `ow` output words, or the shape
/// error, its `what` naming the buffer and the job (`names`: input's, output's).
fn check_words(
    names: [&'static str; 2],
    iw: usize,
    ow: usize,
    input: &[u32],
    output: &[u32],
) -> Result<(), String> {
    for (what, expected, got) in [(names[0], iw, input.len()), (names[1], ow, output.len())] {
        if got < expected {
            return Err(KernelError::Shape { what, expected, got }.to_string());
        }
    }
    Ok(())
}

/// Writes `sums` as word pairs (low, then high 32 bits) from `words[0]`: what
/// [`BlackScholesBySegment::gather`] reads.
fn put_sums(sums: &[f64], words: &mut [u32]) {
    for (w, v) in words.chunks_exact_mut(2).zip(sums) {
        let bits = v.to_bits();
        w[0] = bits as u32;
        w[1] = (bits >> 32) as u32;
    }
}

impl Job for BlackScholesBySegment {
    fn name(&self) -> &'static str {
        "black_scholes_by_segment"
    }
    fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
        let (sw, ow) = (self.sum_words(), self.out_words(n));
        let names = ["input words (black_scholes_by_segment)", "output words (black_scholes_by_segment)"];
        check_words(names, self.in_words(n), ow, input, output)?;
        let (bs_in, qty, offsets, _) = self.split_input(n, input);
        let (sums_w, scratch) = output[..ow].split_at_mut(sw);
        black_scholes::price_greeks_words(n, bs_in, scratch).map_err(|e| e.to_string())?;
        let mut sums = vec![0f64; AGG_WORDS * self.segments];
        segmented::sum_by_segment_words(n, scratch, qty, offsets, &mut sums).map_err(|e| e.to_string())?;
        put_sums(&sums, sums_w);
        Ok(())
    }
}

/// A book that stays on the device, repriced segment by segment at one spot per segment: only
/// the contracts of the `selected` segments listed in the input are priced, each at its
/// segment's spot, and only their sums are written
/// (`gmprt_kernels::segmented::price_and_sum_selected_words`; on CUDA one launch of
/// `gmprt_black_scholes_segment_sums`, pricing and summing in one pass). Segments are
/// underlyings. The trading desk's `--resident` path: the book goes up once; per tick one spot
/// word per underlying and the list of moved segments go up (`Slot::upload`, one contiguous
/// range of `4 × (segments + selected)` bytes), and the moved segments' sums come back.
///
/// Word layouts for a book of `n` contracts in `segments` segments:
/// * **input** ([`in_words`](Self::in_words)): [`BlackScholesBySegment`]'s input (columns,
///   `qty`, `offsets`; the per-contract spot column is not read), then `segments` spots (f32,
///   one per segment; those of the selected non-empty segments positive and finite), then the
///   `selected` segment ids (u32, each below `segments`); [`spots_at`](Self::spots_at) gives
///   where the spots start;
/// * **output** ([`out_words`](Self::out_words)): `AGG_WORDS` f64 per selected segment, in the
///   order listed, each as its low then high 32 bits.
///
/// ```
/// use gmprt_offload::jobs::{BlackScholesBySegment, BlackScholesSelected};
/// use gmprt_offload::kernels::black_scholes::{stage_words, synthetic_chain, IN_WORDS};
/// use gmprt_offload::{Device, Phases};
///
/// // 5 contracts in 2 segments (0..2 and 2..5), 100 of each held; segment 1 selected.
/// let (all, one) = (BlackScholesBySegment { segments: 2 }, BlackScholesSelected { segments: 2, selected: 1 });
/// let spots = [95.0f32, 105.0];
/// let mut chain = synthetic_chain(5, 3);
/// for (i, c) in chain.iter_mut().enumerate() {
///     c.spot = spots[(i >= 2) as usize]; // every contract of a segment at its spot
/// }
/// let mut slot = Device::host().backend().new_slot(one.in_words(5), all.out_words(5)).unwrap();
/// let input = slot.staging_in();
/// stage_words(&chain, &mut input[..5 * IN_WORDS]);
/// input[5 * IN_WORDS..5 * IN_WORDS + 5].copy_from_slice(&[100f32.to_bits(); 5]); // qty
/// input[7 * 5..7 * 5 + 3].copy_from_slice(&[0, 2, 5]); // offsets
/// let at = one.spots_at(5);
/// input[at..at + 2].copy_from_slice(&spots.map(f32::to_bits)); // the spots
/// input[at + 2] = 1; // the selection: segment 1
/// let (every, _) = all.run(slot.as_mut(), 5).unwrap();
/// let run = Phases { h2d: true, kernel: true, d2h: true };
/// slot.run(&one, 5, one.in_words(5), one.out_words(), run).unwrap();
/// assert_eq!(one.gather(slot.staging_out()), [every[1]]);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct BlackScholesSelected {
    /// Segments in the book.
    pub segments: usize,
    /// Segments listed for this run.
    pub selected: usize,
}

impl BlackScholesSelected {
    /// Input words for a book of `n` contracts: [`BlackScholesBySegment`]'s, the spots, the list.
    pub fn in_words(&self, n: usize) -> usize {
        self.spots_at(n) + self.segments + self.selected
    }
    /// Where the per-segment spots start in the input (the list follows them): the end of
    /// [`BlackScholesBySegment`]'s input.
    pub fn spots_at(&self, n: usize) -> usize {
        BlackScholesBySegment { segments: self.segments }.in_words(n)
    }
    /// Output words: the selected segments' sums.
    pub fn out_words(&self) -> usize {
        BlackScholesBySegment { segments: self.selected }.sum_words()
    }
    /// The selected segments' sums in `words`, in the order listed.
    pub fn gather(&self, words: &[u32]) -> Vec<GreekSums> {
        BlackScholesBySegment { segments: self.selected }.gather(words)
    }
}

impl Job for BlackScholesSelected {
    fn name(&self) -> &'static str {
        "black_scholes_selected"
    }
    fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
        let names = ["input words (black_scholes_selected)", "output words (black_scholes_selected)"];
        check_words(names, self.in_words(n), self.out_words(), input, output)?;
        let (bs_in, qty, offsets, rest) =
            BlackScholesBySegment { segments: self.segments }.split_input(n, input);
        let (spots, sel) = rest[..self.segments + self.selected].split_at(self.segments);
        let mut sums = vec![0f64; AGG_WORDS * self.selected];
        let spots: &[f32] = bytemuck::cast_slice(spots);
        segmented::price_and_sum_selected_words(n, bs_in, qty, offsets, spots, sel, &mut sums)
            .map_err(|e| e.to_string())?;
        put_sums(&sums, output);
        Ok(())
    }
}
