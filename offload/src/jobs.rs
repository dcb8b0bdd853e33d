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
pub use crate::segments::{BlackScholesBySegment, BlackScholesSelected};
use gmprt_kernels::black_scholes::{self, Contract, Greeks};
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

impl CudaJob for BlackScholesBySegment {
    fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
        cuda::launch_black_scholes_by_segment(ctx, n, self.segments)
    }
}

impl CudaJob for BlackScholesSelected {
    fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
        cuda::launch_black_scholes_selected(ctx, n, self.segments, self.selected)
    }
}
