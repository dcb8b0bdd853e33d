//! The desk's book and its pricing: contracts grouped by underlying, repriced where the
//! placement says, and summed per underlying by the segmented-reduction kernel pair.
//!
//! # Layout
//! Contracts are sorted by underlying: underlying `u` owns contracts `offsets[u]..offsets[u+1]`
//! (a segment). The book is resident in column form (`Book`), a spot column included: a tick
//! rewrites only its underlying's spots, and a risk update reprices the segments of the
//! underlyings that moved and reduces them per segment: `Σ qty · (price, delta, gamma, vega,
//! theta, rho)` in f64 (`gmprt::kernels::segmented`). Only those sums leave the pricing step;
//! no per-contract output outlives it.
//!
//! # Placement
//! `cpu` prices a batch on the runtime's Ps (`parallel_for` over chunks of at most [`GRAIN`]
//! contracts of one segment, each chunk reduced at once into its segment's partial sums,
//! combined in chunk order), `gpu` on the device (the batch's input columns staged into a slot
//! sized for the book, then one run of `BlackScholesBySegment`: Black-Scholes and the
//! segmented sum both on the device, only the sums copied back; inside
//! `gmprt::runtime::syscall`, so the risk task's P moves on while the M waits),
//! and `auto` asks the cost model, per batch, which side it predicts faster for that many
//! contracts with the inputs on the host; each decision is kept with its predictions.

use gmprt::kernels::black_scholes::{
    kind_word, price_greeks, BsIn, BsResults, Contract, OptionKind, IN_WORDS,
};
use gmprt::kernels::monte_carlo::{mc_price, option_paths_sum};
use gmprt::kernels::segmented::{sum_by_segment, BsCols, GreekSums};
use gmprt::offload::jobs::{BlackScholesBySegment, BlackScholesSelected};
use gmprt::offload::model::{CostModel, Residency, Verdict};
use gmprt::offload::{Device, DeviceKind, Slot};
use gmprt::runtime::Runtime;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::feed::Rng;

/// The book: contract data by underlying, in columns.
#[derive(Default)]
pub struct Book {
    /// Segment bounds: underlying `u` owns `offsets[u]..offsets[u + 1]`.
    pub offsets: Vec<u32>,
    /// Strikes.
    pub strike: Vec<f32>,
    /// Years to expiry.
    pub t: Vec<f32>,
    /// Rates.
    pub rate: Vec<f32>,
    /// Volatilities.
    pub vol: Vec<f32>,
    /// Calls and puts (kind words, as the kernels read them).
    pub kind: Vec<u32>,
    /// Each contract's underlying's current spot (rewritten per segment as ticks arrive).
    pub spot: Vec<f32>,
    /// Position in shares of underlying (signed: long or short).
    pub qty: Vec<f32>,
    /// Per underlying, how many of its segment's first contracts are priced by Monte Carlo
    /// (the path-dependent share; their Greeks still come from Black-Scholes).
    pub mc: Vec<u32>,
}

impl Book {
    /// A seeded book of `contracts` spread evenly over `spots.len()` underlyings: strikes around
    /// the money, 1 month to 2 years, vols 15–60%, lots of ±1..10 × 100 shares.
    pub fn synthetic(spots: &[f64], contracts: usize, mc_share: f64, seed: u64) -> Book {
        let u = spots.len();
        let mut rng = Rng(seed ^ 0xB00C);
        let offsets: Vec<u32> = (0..=u).map(|i| (i * contracts / u) as u32).collect();
        let mut b = Book {
            offsets,
            strike: Vec::with_capacity(contracts),
            t: Vec::with_capacity(contracts),
            rate: Vec::with_capacity(contracts),
            vol: Vec::with_capacity(contracts),
            kind: Vec::with_capacity(contracts),
            spot: Vec::with_capacity(contracts),
            qty: Vec::with_capacity(contracts),
            mc: Vec::with_capacity(u),
        };
        for (und, &s) in spots.iter().enumerate() {
            let len = b.offsets[und + 1] - b.offsets[und];
            b.mc.push(((len as f64 * mc_share).round() as u32).min(len));
            for _ in b.offsets[und]..b.offsets[und + 1] {
                b.strike.push((s * (0.8 + 0.4 * rng.unit())) as f32);
                b.t.push((1.0 / 12.0 + 1.9 * rng.unit()) as f32);
                b.rate.push(0.03);
                b.vol.push((0.15 + 0.45 * rng.unit()) as f32);
                let kind = if rng.next_u64() & 1 == 0 { OptionKind::Call } else { OptionKind::Put };
                b.kind.push(kind_word(kind));
                b.spot.push(s as f32);
                let lots = 1 + (rng.next_u64() % 10) as i32;
                let sign = if rng.next_u64() & 1 == 0 { 1 } else { -1 };
                b.qty.push((sign * lots * 100) as f32);
            }
        }
        b
    }

    /// Underlyings.
    pub fn underlyings(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Contracts.
    pub fn len(&self) -> usize {
        self.qty.len()
    }

    /// Contract `i` at `spot`.
    pub fn contract(&self, i: usize, spot: f32) -> Contract {
        let kind =
            if self.kind[i] == kind_word(OptionKind::Call) { OptionKind::Call } else { OptionKind::Put };
        Contract { spot, strike: self.strike[i], t: self.t[i], rate: self.rate[i], vol: self.vol[i], kind }
    }

    /// Segment `u`'s contracts.
    pub fn segment(&self, u: u32) -> std::ops::Range<usize> {
        self.offsets[u as usize] as usize..self.offsets[u as usize + 1] as usize
    }

    /// The path-dependent share alone: a book of each underlying's Monte Carlo contracts (its
    /// segments are all Monte Carlo), for the task that values them off the fast path.
    pub fn path_dependent(&self) -> Book {
        let mut b = Book { offsets: vec![0], ..Book::default() };
        for u in 0..self.underlyings() {
            let start = self.offsets[u] as usize;
            for i in start..start + self.mc[u] as usize {
                b.strike.push(self.strike[i]);
                b.t.push(self.t[i]);
                b.rate.push(self.rate[i]);
                b.vol.push(self.vol[i]);
                b.kind.push(self.kind[i]);
                b.spot.push(self.spot[i]);
                b.qty.push(self.qty[i]);
            }
            b.mc.push(self.mc[u]);
            b.offsets.push(b.qty.len() as u32);
        }
        b
    }

    /// Moves underlying `u`'s contracts to `spot`.
    pub fn set_spot(&mut self, u: u32, spot: f32) {
        let r = self.segment(u);
        self.spot[r].fill(spot);
    }

    /// Underlying `u`'s spot (every contract of its segment is at it), or 1.0 when it has no
    /// contracts (a placeholder nothing prices: the resident kernel reads one word per
    /// underlying, and a valid one keeps its input checks simple).
    pub fn underlying_spot(&self, u: u32) -> f32 {
        let r = self.segment(u);
        if r.is_empty() {
            1.0
        } else {
            self.spot[r.start]
        }
    }

    /// The kernels' input columns over `r`.
    fn input(&self, r: std::ops::Range<usize>) -> BsIn<'_> {
        BsIn {
            spot: &self.spot[r.clone()],
            strike: &self.strike[r.clone()],
            t: &self.t[r.clone()],
            rate: &self.rate[r.clone()],
            vol: &self.vol[r.clone()],
            kind: &self.kind[r],
        }
    }
}

/// Where a batch was priced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// The runtime's Ps.
    Cpu,
    /// The device (the Host stand-in where there is no GPU).
    Gpu,
    /// Per batch, the side the cost model predicts faster.
    Auto,
}

/// One `auto` decision.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Decision {
    /// The kernel: `black_scholes`, or `monte_carlo` (its size in paths).
    pub kernel: &'static str,
    /// Contracts in the batch.
    pub contracts: usize,
    /// The side chosen.
    pub side: Placement,
    /// Predicted CPU time on the runtime's Ps, µs.
    pub cpu_us: f64,
    /// Predicted device time end to end (launch, copies, kernel), µs.
    pub gpu_us: f64,
}

/// Prices batches of the book where the placement says, and keeps what it did.
pub struct Pricer {
    /// The device `gpu` batches run on.
    pub device: Device,
    /// Its slot, created at the first device batch.
    pub slot: Option<Box<dyn Slot>>,
    /// The model `auto` asks.
    pub model: CostModel,
    /// The placement.
    pub placement: Placement,
    /// Ps the CPU side uses.
    pub procs: usize,
    /// Batches priced on each side (cpu, gpu).
    pub batches: [u64; 2],
    /// Contracts priced on each side.
    pub contracts: [u64; 2],
    /// Device time (copies and kernel) of the `gpu` batches.
    pub device_busy: Duration,
    /// Time spent pricing and reducing, both sides.
    pub pricing: Duration,
    /// `auto`'s decisions: the first few in full, then counts only.
    pub decisions: Vec<Decision>,
    /// `auto` decisions made.
    pub decided: u64,
    /// Monte Carlo: paths per contract, batches and contracts on each side (cpu, gpu).
    pub mc_paths: u64,
    pub mc_batches: [u64; 2],
    pub mc_contracts: [u64; 2],
    /// `--resident`: the whole book stays on the device (`gpu` placement only); a batch
    /// uploads the moved underlyings' spots and list, and reprices those underlyings there.
    pub resident: bool,
    /// Resident: whether the book is on the device yet (uploaded once, at the first batch).
    resident_up: bool,
    /// Resident: input words uploaded after the first full upload (spots and lists).
    pub resident_words: u64,
}

/// A Monte Carlo valuation of an underlying's path-dependent share: `Σ qty · price` and its
/// variance `Σ qty² · std_error²` (the paths of different contracts are independent).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct McValue {
    /// Position-weighted value.
    pub value: f64,
    /// Its variance.
    pub variance: f64,
}

/// The seed of contract `i`'s paths: fixed per contract, so each revaluation draws the same
/// paths (common random numbers: a value moves with the spot, not with the draw).
fn path_seed(i: usize) -> u64 {
    (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5EED
}

impl Pricer {
    /// A pricer for `placement` on `device` (its slot made by [`Pricer::prepare`]), with
    /// `procs` Ps on the CPU side and `mc_paths` paths per Monte Carlo contract.
    pub fn new(
        device: Device,
        model: CostModel,
        placement: Placement,
        procs: usize,
        mc_paths: u64,
    ) -> Pricer {
        Pricer {
            device,
            slot: None,
            model,
            placement,
            procs,
            batches: [0; 2],
            contracts: [0; 2],
            device_busy: Duration::ZERO,
            pricing: Duration::ZERO,
            decisions: Vec::new(),
            decided: 0,
            mc_paths,
            mc_batches: [0; 2],
            mc_contracts: [0; 2],
            resident: false,
            resident_up: false,
            resident_words: 0,
        }
    }
}

/// `auto` decisions kept in full (the report shows them; the counters cover the rest).
const DECISIONS_KEPT: usize = 16;
/// Contracts per `parallel_for` chunk: 4,096 contracts' inputs and outputs are 192 KiB, a
/// core's L2, and about 15 µs of pricing at ~300 M contracts/s per core.
const GRAIN: usize = 4096;

impl Pricer {
    /// Reprices every contract of the underlyings in `unds` (their spots already set in the
    /// book) and returns their position-weighted sums, in the order of `unds`.
    pub fn reprice(&mut self, book: &Book, unds: &[u32]) -> Result<Vec<GreekSums>, String> {
        let t0 = Instant::now();
        let n: usize = unds.iter().map(|&u| book.segment(u).len()).sum();
        let side = self.side("black_scholes", n, n as f64)?;
        let sums = match side {
            Placement::Gpu if self.resident => self.price_resident(book, unds)?,
            Placement::Gpu => self.price_on_device(book, unds, n)?,
            _ => price_on_ps(book, unds)?,
        };
        let k = (side == Placement::Gpu) as usize;
        self.batches[k] += 1;
        self.contracts[k] += n as u64;
        self.pricing += t0.elapsed();
        Ok(sums)
    }

    /// Values the path-dependent share of the underlyings in `unds` by Monte Carlo
    /// (`option_paths`, `mc_paths` paths per contract), where the placement says; one
    /// [`McValue`] per underlying, in the order of `unds`.
    pub fn reprice_paths(&mut self, book: &Book, unds: &[u32]) -> Result<Vec<McValue>, String> {
        let items: Vec<(usize, usize)> = unds
            .iter()
            .enumerate()
            .flat_map(|(k, &u)| {
                let start = book.segment(u).start;
                (start..start + book.mc[u as usize] as usize).map(move |i| (k, i))
            })
            .collect();
        let mut out = vec![McValue::default(); unds.len()];
        if items.is_empty() {
            return Ok(out);
        }
        let t0 = Instant::now();
        // option_paths draws 4 paths per block.
        let blocks = self.mc_paths.div_ceil(4);
        let side = self.side("monte_carlo", items.len(), (items.len() as u64 * 4 * blocks) as f64)?;
        let contract = |i: usize| book.contract(i, book.spot[i]);
        let sums: Vec<(f64, f64)> = if side == Placement::Gpu {
            let device = &self.device;
            let seeds: Vec<u64> = items.iter().map(|&(_, i)| path_seed(i)).collect();
            let contracts: Vec<Contract> = items.iter().map(|&(_, i)| contract(i)).collect();
            // One hand-off and one launch for the whole batch (`gmprt_option_paths_batch`).
            let run = gmprt::runtime::syscall(|| {
                let (sums, t) =
                    device.option_paths_sum_many(&seeds, &contracts, blocks).map_err(|e| e.to_string())?;
                Ok::<_, String>((sums, t.h2d + t.kernel + t.d2h))
            })
            .map_err(|e| format!("device launch: {e}"))?;
            let (sums, busy) = run?;
            self.device_busy += busy;
            sums
        } else {
            let slots: Vec<Mutex<(f64, f64)>> = items.iter().map(|_| Mutex::new((0.0, 0.0))).collect();
            gmprt::runtime::parallel_for(items.len(), 1, |js| {
                for j in js {
                    let i = items[j].1;
                    *slots[j].lock().unwrap() = option_paths_sum(path_seed(i), &contract(i), 0, blocks);
                }
            });
            slots.into_iter().map(|m| m.into_inner().unwrap()).collect()
        };
        for (&(k, i), (sum, sum_sq)) in items.iter().zip(sums) {
            let p = mc_price(sum, sum_sq, 4 * blocks);
            let q = book.qty[i] as f64;
            out[k].value += q * p.price;
            out[k].variance += q * q * p.std_error * p.std_error;
        }
        let k = (side == Placement::Gpu) as usize;
        self.mc_batches[k] += 1;
        self.mc_contracts[k] += items.len() as u64;
        self.pricing += t0.elapsed();
        Ok(out)
    }

    /// The side batch of `n` contracts goes to.
    fn side(&mut self, kernel: &'static str, n: usize, size: f64) -> Result<Placement, String> {
        if self.placement != Placement::Auto {
            return Ok(self.placement);
        }
        let b = self.model.predict(kernel, size, Residency::Host, 0.0).map_err(|e| e.to_string())?;
        // The CPU time on the Ps this runtime has (the profile's fits per P count, the closest
        // count at or below ours), against the device end to end.
        let cpu = b.cpu.iter().filter(|(p, _)| *p <= self.procs).max_by_key(|(p, _)| *p).or(b.cpu.first());
        let side = match (cpu, b.verdict) {
            (Some(&(_, t)), _) => {
                if t <= b.gpu_total {
                    Placement::Cpu
                } else {
                    Placement::Gpu
                }
            }
            (None, Verdict::Cpu { .. }) => Placement::Cpu,
            (None, Verdict::Gpu { .. }) => Placement::Gpu,
        };
        self.decided += 1;
        if self.decisions.len() < DECISIONS_KEPT {
            self.decisions.push(Decision {
                kernel,
                contracts: n,
                side,
                cpu_us: cpu.map_or(f64::NAN, |c| c.1 * 1e6),
                gpu_us: b.gpu_total * 1e6,
            });
        }
        Ok(side)
    }

    /// One bulk launch of the batch on the device: the segments' input columns staged and
    /// copied in, the outputs copied out and reduced per segment.
    fn price_on_device(&mut self, book: &Book, unds: &[u32], n: usize) -> Result<Vec<GreekSums>, String> {
        self.prepare(book)?;
        let job = BlackScholesBySegment { segments: unds.len() };
        let slot = self.slot.as_mut().expect("prepared");
        // Staged straight into the slot's input (write-only memory on CUDA: never read back):
        // the segments' input columns, their positions, and the batch's segment offsets.
        stage_segments(&mut slot.staging_in()[..job.in_words(n)], book, unds, n);
        // Blocking device work goes through the syscall hand-off: this M waits, the P moves on.
        let run = gmprt::runtime::syscall(|| job.run(slot.as_mut(), n))
            .map_err(|e| format!("device launch: {e}"))?;
        let (sums, times) = run.map_err(|e| format!("device launch: {e}"))?;
        self.device_busy += times.h2d + times.kernel + times.d2h;
        Ok(sums)
    }

    /// Resident (`--resident`): the whole book went to the device once, with every
    /// underlying as a segment; a batch writes every underlying's spot (one word each) and the
    /// moved underlyings' list into the staging and uploads those words alone (`Slot::upload`:
    /// one copy of `4 × (underlyings + moved)` bytes), reprices the moved underlyings'
    /// contracts where they live, each at its underlying's spot, and sums them per underlying
    /// in one launch (`BlackScholesSelected`), and copies back their sums alone. Returns the
    /// sums of `unds`, in that order.
    fn price_resident(&mut self, book: &Book, unds: &[u32]) -> Result<Vec<GreekSums>, String> {
        self.prepare(book)?;
        let (c, u) = (book.len(), book.underlyings());
        let job = BlackScholesSelected { segments: u, selected: unds.len() };
        let (at, iw) = (job.spots_at(c), job.in_words(c));
        let slot = self.slot.as_mut().expect("prepared");
        let first = !self.resident_up;
        let words = slot.staging_in();
        if first {
            let all: Vec<u32> = (0..u as u32).collect();
            stage_segments(&mut words[..at], book, &all, c);
        }
        // Every underlying's spot, then the list: one contiguous range after the book.
        for (w, m) in words[at..at + u].iter_mut().zip(0..u as u32) {
            *w = book.underlying_spot(m).to_bits();
        }
        words[at + u..iw].copy_from_slice(unds);
        let ranges = [if first { 0..iw } else { at..iw }];
        self.resident_up = true;
        let uploaded: u64 = if first { 0 } else { ranges[0].len() as u64 };
        let run = gmprt::runtime::syscall(|| {
            // The moved spots and the list first, then the moved segments priced where they live.
            let up = slot.upload(&ranges)?;
            let after = gmprt::offload::Phases { h2d: false, kernel: true, d2h: true };
            let mut t = slot.run(&job, c, iw, job.out_words(), after)?;
            t.h2d = up;
            Ok::<_, gmprt::offload::OffloadError>(t)
        })
        .map_err(|e| format!("device launch: {e}"))?;
        let times = run.map_err(|e| format!("device launch: {e}"))?;
        self.device_busy += times.h2d + times.kernel + times.d2h;
        self.resident_words += uploaded;
        Ok(job.gather(slot.staging_out()))
    }

    /// Creates the device slot, unless the placement never uses the device: one slot for the
    /// desk's life, sized for the whole book, so staging (pinned on CUDA) and device buffers
    /// are allocated and first touched once, before any tick is timed.
    pub fn prepare(&mut self, book: &Book) -> Result<(), String> {
        if self.slot.is_some() || self.placement == Placement::Cpu {
            return Ok(());
        }
        let (c, u) = (book.len(), book.underlyings());
        let (job, all) =
            (BlackScholesBySegment { segments: u }, BlackScholesSelected { segments: u, selected: u });
        // Resident: the book and a list of up to every underlying in, their sums out (no
        // scratch columns); else a batch of up to the whole book, with its scratch.
        let (iw, ow) = if self.resident {
            (all.in_words(c), all.out_words())
        } else {
            (job.in_words(c), job.out_words(c))
        };
        let mut slot = (self.device.backend().new_slot(iw, ow))
            .map_err(|e| format!("device slot for {c} contracts: {e}"))?;
        // Touch the staging pages now (a write: staging is write-only on CUDA).
        slot.staging_in().fill(0);
        self.slot = Some(slot);
        Ok(())
    }

    /// True when a batch may have run on a CUDA device (its math allowance differs).
    pub fn used_cuda(&self) -> bool {
        self.device.kind() == DeviceKind::Cuda && self.batches[1] > 0
    }
}

/// Stages the segments of `unds` (`n` contracts in all), in that order, into `words` in
/// `BlackScholesBySegment`'s layout: the input columns, the positions, the segment offsets.
/// `words` is a slot's staging (write-only on CUDA: never read back).
fn stage_segments(words: &mut [u32], book: &Book, unds: &[u32], n: usize) {
    let (cols, tail) = words.split_at_mut(n * IN_WORDS);
    let (qty, offsets) = tail.split_at_mut(n);
    offsets[0] = 0;
    let mut at = 0;
    for (k, &u) in unds.iter().enumerate() {
        let r = book.segment(u);
        let len = r.len();
        let inputs: [&[f32]; 5] = [
            &book.spot[r.clone()],
            &book.strike[r.clone()],
            &book.t[r.clone()],
            &book.rate[r.clone()],
            &book.vol[r.clone()],
        ];
        for (c, col) in inputs.iter().enumerate() {
            for (w, v) in cols[c * n + at..c * n + at + len].iter_mut().zip(col.iter()) {
                *w = v.to_bits();
            }
        }
        cols[5 * n + at..5 * n + at + len].copy_from_slice(&book.kind[r.clone()]);
        for (w, q) in qty[at..at + len].iter_mut().zip(&book.qty[r]) {
            *w = q.to_bits();
        }
        at += len;
        offsets[k + 1] = at as u32;
    }
}

/// Prices the segments of `unds` on the runtime's Ps: `parallel_for` over chunks of at most
/// [`GRAIN`] contracts of one segment; each chunk prices into its own scratch columns and
/// reduces them at once; a segment's partial sums are then added in chunk order.
fn price_on_ps(book: &Book, unds: &[u32]) -> Result<Vec<GreekSums>, String> {
    let mut chunks = Vec::new(); // (index into unds, contract range)
    for (k, &u) in unds.iter().enumerate() {
        let r = book.segment(u);
        let mut at = r.start;
        while at < r.end {
            let end = (at + GRAIN).min(r.end);
            chunks.push((k, at..end));
            at = end;
        }
    }
    let partial: Vec<Mutex<Result<GreekSums, String>>> =
        chunks.iter().map(|_| Mutex::new(Ok(GreekSums::default()))).collect();
    gmprt::runtime::parallel_for(chunks.len(), 1, |js| {
        let mut out = BsResults::zeroed(GRAIN);
        for j in js {
            let r = chunks[j].1.clone();
            let len = r.len();
            out.price.truncate(len);
            out.price.resize(len, 0.0);
            for col in [&mut out.delta, &mut out.gamma, &mut out.vega, &mut out.theta, &mut out.rho] {
                col.truncate(len);
                col.resize(len, 0.0);
            }
            let mut one = [GreekSums::default()];
            let res = price_greeks(&book.input(r.clone()), &mut out.as_out())
                .and_then(|()| sum_by_segment(&BsCols::from(&out), &book.qty[r], &[0, len as u32], &mut one))
                .map(|()| one[0])
                .map_err(|e| format!("pricing contracts {:?}: {e}", chunks[j].1));
            *partial[j].lock().unwrap() = res;
        }
    });
    let mut sums = vec![[0.0f64; 6]; unds.len()];
    for ((k, _), p) in chunks.iter().zip(partial) {
        let p = p.into_inner().unwrap()?.to_array();
        for (s, v) in sums[*k].iter_mut().zip(p) {
            *s += v;
        }
    }
    Ok(sums.into_iter().map(GreekSums::from_array).collect())
}

impl Pricer {
    /// Full-book revaluations per second with the run's placement: 3 timed revaluations of every
    /// contract after one untimed.
    pub fn full_book_rate(&mut self, rt: &Runtime, book: &Book) -> Result<f64, String> {
        let all: Vec<u32> = (0..book.underlyings() as u32).collect();
        rt.block_on(async {
            self.reprice(book, &all)?;
            let t = Instant::now();
            const REPS: u32 = 3;
            for _ in 0..REPS {
                self.reprice(book, &all)?;
            }
            Ok(REPS as f64 / t.elapsed().as_secs_f64())
        })
    }
}
