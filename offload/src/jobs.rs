//! [`BatchKernel`]: what the [`Batcher`](crate::Batcher) needs to know about a kernel to
//! coalesce single items into batches — how many words an item takes, how to check one at
//! submit, how to write a batch of items into the staging buffer and how to read item `i`'s
//! result back — plus the kernels of this crate: [`BlackScholes`], [`Saxpy`], [`SmallSgemm`],
//! and one bulk job that is not item-wise, [`BlackScholesBySegment`].
//!
//! The word layout of a batch is the kernel's business: it must agree between
//! [`BatchKernel::stage`], [`Job::run_host`], [`CudaJob::launch_cuda`] and
//! [`BatchKernel::gather`]. The element-wise kernels use the column-major layout of
//! `gmprt_kernels` (column `c` of a batch of `n` is `words[c * n..(c + 1) * n]`); the batched
//! SGEMM stores each item's matrices contiguously (all A_i, then all B_i; all C_i out).
use crate::cuda::{self, CudaJob, LaunchCtx};
use crate::error::OffloadError;
use crate::job::Job;
use gmprt_kernels::black_scholes::{self, Contract, Greeks};
use gmprt_kernels::segmented::{self, GreekSums, AGG_WORDS};
use gmprt_kernels::{saxpy, sgemm, InvalidInput, KernelError};

/// A kernel the [`Batcher`](crate::Batcher) can feed one item at a time. It is a
/// [`CudaJob`] (and so a [`Job`]) because a Batcher's slots may be on any device.
///
/// For a batch of `n` items the Batcher gives [`stage`](BatchKernel::stage) an input slice of
/// exactly `n * in_words()` words and, after the run, reads each result with
/// [`gather`](BatchKernel::gather) from exactly `n * out_words()` output words. `n` is at
/// least 1 and at most the Batcher's `max_batch`.
///
/// What a Batcher does with a batch, by hand, on the host:
/// ```
/// use gmprt_offload::{BatchKernel, Job, Saxpy};
/// let k = Saxpy { a: 2.0 };
/// let items = [(1.0, 0.5), (2.0, 0.5), (3.0, 0.5)];
/// assert!(items.iter().enumerate().all(|(i, x)| k.validate(x, i).is_ok()));
/// let mut input = vec![0; items.len() * k.in_words()];
/// k.stage(&items, &mut input);
/// let mut output = vec![0; items.len() * k.out_words()];
/// k.run_host(items.len(), &input, &mut output).unwrap();
/// let ys: Vec<f32> = (0..items.len()).map(|i| k.gather(items.len(), &output, i)).collect();
/// assert_eq!(ys, [2.5, 4.5, 6.5]);
/// // A bad item fails alone, at submit, naming its field.
/// assert!(k.validate(&(f32::NAN, 0.0), 7).unwrap_err().to_string().contains('x'));
/// ```
pub trait BatchKernel: CudaJob + Send + Sync + 'static {
    /// What a task submits.
    type Item: Send + Sync + 'static;
    /// What the task gets back.
    type Output: Send + 'static;
    /// Input words per item (> 0).
    fn in_words(&self) -> usize;
    /// Output words per item (> 0).
    fn out_words(&self) -> usize;
    /// Checks one item at submit; `index` is reported in the error. The error names the
    /// offending field (e.g. `vol`), so a bad item fails alone instead of failing its batch.
    fn validate(&self, item: &Self::Item, index: usize) -> Result<(), OffloadError>;
    /// Writes `items` into `input` (`items.len() * in_words()` words) in the kernel's layout.
    fn stage(&self, items: &[Self::Item], input: &mut [u32]);
    /// Reads the result of item `i` of a batch of `n` from `output` (`n * out_words()` words).
    fn gather(&self, n: usize, output: &[u32], i: usize) -> Self::Output;
}

/// European Black-Scholes price and Greeks: [`Contract`] in, [`Greeks`] out
/// (`gmprt_kernels::black_scholes`, 6 words in, 6 out, column-major).
///
/// ```
/// use gmprt_offload::kernels::black_scholes::{Contract, OptionKind};
/// use gmprt_offload::{BatchKernel, BlackScholes, Job};
///
/// let k = BlackScholes;
/// assert_eq!((k.name(), k.in_words(), k.out_words()), ("black_scholes", 6, 6));
/// let call = Contract { spot: 100.0, strike: 100.0, t: 1.0, rate: 0.05, vol: 0.2, kind: OptionKind::Call };
/// let items = [call, Contract { kind: OptionKind::Put, ..call }];
/// let mut input = vec![0; 2 * k.in_words()];
/// k.stage(&items, &mut input);
/// let mut output = vec![0; 2 * k.out_words()];
/// k.run_host(2, &input, &mut output).unwrap();
/// // The closed form: 10.4506 for the call, 5.5735 for the put (put-call parity).
/// assert!((k.gather(2, &output, 0).price - 10.4506).abs() < 1e-3);
/// assert!((k.gather(2, &output, 1).price - 5.5735).abs() < 1e-3);
/// // A bad contract fails alone, at submit, naming its field.
/// let e = k.validate(&Contract { vol: 0.0, ..call }, 5).unwrap_err();
/// assert!(e.to_string().contains("item 5: vol = 0"), "{e}");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct BlackScholes;

impl Job for BlackScholes {
    fn name(&self) -> &'static str {
        "black_scholes"
    }
    fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
        black_scholes::price_greeks_words(n, input, output).map_err(|e| e.to_string())
    }
}

impl CudaJob for BlackScholes {
    fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
        cuda::launch_black_scholes(ctx, n)
    }

    /// One read of each input word and one write of each output word per contract (item).
    fn streams_io(&self) -> bool {
        true
    }
}

impl BatchKernel for BlackScholes {
    type Item = Contract;
    type Output = Greeks;
    fn in_words(&self) -> usize {
        black_scholes::IN_WORDS
    }
    fn out_words(&self) -> usize {
        black_scholes::OUT_WORDS
    }
    fn validate(&self, item: &Contract, index: usize) -> Result<(), OffloadError> {
        Ok(black_scholes::validate(item, index)?)
    }
    fn stage(&self, items: &[Contract], input: &mut [u32]) {
        black_scholes::stage_words(items, input)
    }
    fn gather(&self, n: usize, output: &[u32], i: usize) -> Greeks {
        black_scholes::gather_words(n, output, i)
    }
}

/// What a `*_words` kernel entry point returns, as [`Job::run_host`]'s result: kernels that
/// cannot fail return `()`, the others `Result<(), KernelError>`.
trait IntoRun {
    fn into_run(self) -> Result<(), String>;
}

impl IntoRun for () {
    fn into_run(self) -> Result<(), String> {
        Ok(())
    }
}

impl IntoRun for Result<(), KernelError> {
    fn into_run(self) -> Result<(), String> {
        self.map_err(|e| e.to_string())
    }
}

/// SAXPY with a fixed `a`: item `(x, y)` gives `a·x + y` (2 words in: column `x` then `y`;
/// 1 word out). `a`, `x` and `y` must be finite.
///
/// ```
/// use gmprt_offload::{BatchKernel, Device, Saxpy};
///
/// let k = Saxpy { a: 0.5 };
/// assert_eq!((k.in_words(), k.out_words()), (2, 1));
/// // Two items (x, y) = (2, 1) and (4, 1), staged as column x then column y.
/// let mut input = vec![0; 2 * k.in_words()];
/// k.stage(&[(2.0, 1.0), (4.0, 1.0)], &mut input);
/// let (out, _) = Device::host().run_bulk(&k, 2, &input, 4, 2, false).unwrap();
/// assert_eq!([k.gather(2, &out, 0), k.gather(2, &out, 1)], [2.0, 3.0]);
/// // `a` is checked with every item: the error names the field.
/// let e = Saxpy { a: f32::INFINITY }.validate(&(1.0, 1.0), 0).unwrap_err();
/// assert!(e.to_string().contains("a = inf"), "{e}");
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Saxpy {
    /// The scale applied to every `x`.
    pub a: f32,
}

/// `Err` naming `field` when `value` is not finite.
fn finite(field: &'static str, value: f32, index: usize) -> Result<(), OffloadError> {
    if value.is_finite() {
        Ok(())
    } else {
        Err(InvalidInput { field, index, value: f64::from(value), why: "must be finite" }.into())
    }
}

impl Job for Saxpy {
    fn name(&self) -> &'static str {
        "saxpy"
    }
    fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
        if input.len() != 2 * n || output.len() != n {
            return Err(format!(
                "saxpy over {n} items needs {} input and {n} output words, got {} and {}",
                2 * n,
                input.len(),
                output.len()
            ));
        }
        saxpy::saxpy_words(n, self.a, input, output).into_run()
    }
}

impl CudaJob for Saxpy {
    fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
        cuda::launch_saxpy(ctx, n, self.a)
    }

    /// One read of each input word (x, y) and one write of each output word per item.
    fn streams_io(&self) -> bool {
        true
    }
}

impl BatchKernel for Saxpy {
    type Item = (f32, f32);
    type Output = f32;
    fn in_words(&self) -> usize {
        2
    }
    fn out_words(&self) -> usize {
        1
    }
    fn validate(&self, &(x, y): &(f32, f32), index: usize) -> Result<(), OffloadError> {
        finite("a", self.a, index)?;
        finite("x", x, index)?;
        finite("y", y, index)
    }
    fn stage(&self, items: &[(f32, f32)], input: &mut [u32]) {
        let (xs, ys) = input.split_at_mut(items.len());
        for ((&(x, y), wx), wy) in items.iter().zip(xs).zip(ys) {
            *wx = x.to_bits();
            *wy = y.to_bits();
        }
    }
    fn gather(&self, _n: usize, output: &[u32], i: usize) -> f32 {
        f32::from_bits(output[i])
    }
}

/// Many small independent products C = A·B of one shape (A m×k, B k×n, row-major): item
/// `(A, B)` gives `C` (m·n). A batch is one batched launch (cuBLAS strided-batched on CUDA).
/// Layout: input words are all A_i (`count·m·k`) then all B_i (`count·k·n`); output words are
/// all C_i (`count·m·n`), each matrix contiguous.
///
/// ```
/// use gmprt_offload::{BatchKernel, Device, SmallSgemm};
///
/// let k = SmallSgemm { m: 2, n: 2, k: 2 };
/// assert_eq!((k.in_words(), k.out_words()), (8, 4));
/// let b = vec![5.0, 6.0, 7.0, 8.0];
/// let items = vec![(vec![1.0, 0.0, 0.0, 1.0], b.clone()), (vec![1.0, 2.0, 3.0, 4.0], b)];
/// let mut input = vec![0; 2 * k.in_words()];
/// k.stage(&items, &mut input);
/// let (out, _) = Device::host().run_bulk(&k, 2, &input, 16, 8, false).unwrap();
/// assert_eq!(k.gather(2, &out, 0), [5.0, 6.0, 7.0, 8.0]); // I·B
/// assert_eq!(k.gather(2, &out, 1), [19.0, 22.0, 43.0, 50.0]);
/// // A matrix of the wrong shape fails alone, at submit.
/// let e = k.validate(&(vec![1.0; 3], vec![0.0; 4]), 0).unwrap_err();
/// assert!(e.to_string().contains("a has 3 elements, the shape needs 4"), "{e}");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmallSgemm {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B.
    pub k: usize,
}

impl Job for SmallSgemm {
    fn name(&self) -> &'static str {
        "sgemm_batched"
    }
    fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
        sgemm::sgemm_batched_words(n, self.m, self.n, self.k, input, output).into_run()
    }
}

impl CudaJob for SmallSgemm {
    fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
        cuda::launch_sgemm_batched(ctx, n, self.m, self.n, self.k)
    }
    /// The first batch of this shape on a slot's stream runs its GEMM once untimed first
    /// (`cuda::warm_sgemm_batched`; issue 27).
    fn prepare_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
        cuda::warm_sgemm_batched(ctx, n, self.m, self.n, self.k)
    }
}

impl BatchKernel for SmallSgemm {
    type Item = (Vec<f32>, Vec<f32>);
    type Output = Vec<f32>;
    fn in_words(&self) -> usize {
        self.m.saturating_mul(self.k).saturating_add(self.k.saturating_mul(self.n))
    }
    fn out_words(&self) -> usize {
        self.m.saturating_mul(self.n)
    }
    fn validate(&self, (a, b): &(Vec<f32>, Vec<f32>), index: usize) -> Result<(), OffloadError> {
        // Saturating, as `in_words`: a shape past `usize` cannot match any Vec's length.
        let (am, bm) = (self.m.saturating_mul(self.k), self.k.saturating_mul(self.n));
        if a.len() != am {
            return Err(KernelError::Shape { what: "a", expected: am, got: a.len() }.into());
        }
        if b.len() != bm {
            return Err(KernelError::Shape { what: "b", expected: bm, got: b.len() }.into());
        }
        // Every element finite, as Saxpy's and Black-Scholes' fields (a NaN would poison a
        // whole row of C); the error names the matrix, not the element's position.
        for (field, m) in [("a", a), ("b", b)] {
            if let Some(&v) = m.iter().find(|v| !v.is_finite()) {
                finite(field, v, index)?;
            }
        }
        Ok(())
    }
    fn stage(&self, items: &[(Vec<f32>, Vec<f32>)], input: &mut [u32]) {
        let (am, bm) = (self.m * self.k, self.k * self.n);
        let (a_words, b_words) = input.split_at_mut(items.len() * am);
        for (i, (a, b)) in items.iter().enumerate() {
            for (w, x) in a_words[i * am..(i + 1) * am].iter_mut().zip(a) {
                *w = x.to_bits();
            }
            for (w, x) in b_words[i * bm..(i + 1) * bm].iter_mut().zip(b) {
                *w = x.to_bits();
            }
        }
    }
    fn gather(&self, _n: usize, output: &[u32], i: usize) -> Vec<f32> {
        let cm = self.m * self.n;
        output[i * cm..(i + 1) * cm].iter().map(|&w| f32::from_bits(w)).collect()
    }
}

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

impl CudaJob for BlackScholesBySegment {
    fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
        cuda::launch_black_scholes_by_segment(ctx, n, self.segments)
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

impl CudaJob for BlackScholesSelected {
    fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
        cuda::launch_black_scholes_selected(ctx, n, self.segments, self.selected)
    }
}
