//! The matrix-multiply ladder, from the textbook triple loop to cuBLAS, C = A·B with N×N f32:
//!
//! 1. naive triple loop, one thread;
//! 2. one green task per row block (gmprt `parallel_for` over the Ps, a cache-blocked kernel);
//! 3. a well-kept Rust GEMM crate on all cores (see `gmprt_kernels::sgemm::sgemm_crate`);
//! 4. the device: cuBLAS on a GPU (timed by CUDA events, transfers shown apart), or the Host
//!    stand-in when there is none (then it is rung 3 again, labelled so); then the same at TF32
//!    and BF16 (the tensor cores on a GPU; on the Host the inputs rounded the same way), whose
//!    max rel err shows what the opt-in precision costs in accuracy.
//!
//! ```text
//! cargo run --release --example matmul_ladder -- [--n 1024] [--naive-max 1024] [--procs P] [--repeats 5]
//! ```
//! Every rung is checked against rung 3 (max relative error printed). Rungs 2-4 print the
//! median of `--repeats` timed runs after one untimed first run (rung 3's first run makes the
//! reference; rung 4's is reported apart, with its setup: the first call of a shape does host
//! work that a steady caller does not pay). Rung 4's "kernel" is device time, between two CUDA
//! events around the GEMM alone; the copies and the whole call's wall time are shown beside it.
use gmprt::kernels::precision::Precision;
use gmprt::kernels::sgemm::{sgemm_crate, sgemm_naive, sgemm_rows};
use gmprt::offload::{Device, DeviceKind};
use std::time::{Duration, Instant};

#[path = "common/mod.rs"]
mod common;
use clap::Parser;
use common::{check_fits, fail, positive, try_filled, try_vec, Cli, Procs, TooBig};

const NAME: &str = "matmul_ladder";

/// Rows per green task: 16 rows of C reuse each loaded panel of B 16 times, and N/16 tasks
/// (64 at N = 1024) balance well over any P count up to 16.
const ROWS_PER_TASK: usize = 16;

/// C = A·B with N×N f32 matrices, from the naive triple loop to green tasks per row block, a
/// GEMM crate and cuBLAS.
#[derive(Parser, Debug)]
#[command(name = NAME)]
struct Args {
    /// The matrices' side N
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = positive)]
    n: usize,
    /// The largest N the naive triple loop runs at (it is skipped above)
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = common::parse_count)]
    naive_max: usize,
    #[command(flatten)]
    procs: Procs,
    /// Timed runs of rungs 2-4 after their first run; each prints the median
    #[arg(long, value_name = "R", default_value_t = 5, value_parser = positive)]
    repeats: usize,
}

impl Cli for Args {}

/// The median of `r` values of `f` (`r` ≥ 1).
fn median_of<T>(r: usize, mut f: impl FnMut() -> T, key: impl Fn(&T) -> Duration) -> T {
    let mut v: Vec<T> = (0..r.max(1)).map(|_| f()).collect();
    v.sort_by_key(&key);
    v.swap_remove(v.len() / 2)
}

/// The matrices alive at once: A, B, the reference C and one more C.
const MATRICES: usize = 4;

/// Refuses, before anything is allocated, an `--n` whose matrices cannot fit in memory.
fn check_memory(n: usize) -> Result<(), TooBig> {
    let what = "an element of A, B, the reference C and C, in f32";
    check_fits(&format!("--n {n}"), n as u128 * n as u128, MATRICES * 4, what)
}

// In the `gmprt` command, which includes this file as a module, `main_from` is called instead.
#[allow(dead_code)]
fn main() {
    main_from(std::env::args_os().collect());
}

/// Parses `args` (the program's name first) and runs the story: what `main` and the `gmprt`
/// command call. `--help` prints and exits 0; a bad command line prints why and exits 2.
pub fn main_from(args: Vec<std::ffi::OsString>) {
    let args: Args = common::parse_from(args);
    let (n, naive_max) = (args.n, args.naive_max);
    check_memory(n).unwrap_or_else(|e| fail(NAME, e));
    let device = Device::detect().unwrap_or_else(|e| fail("matmul_ladder: GMPRT_DEVICE", e));
    // First-use costs (CUDA modules, the Host pool's threads) before anything is timed.
    device.warm_up().unwrap_or_else(|e| fail("matmul_ladder: device warm-up", e));
    let rt = args.procs.gmprt().unwrap_or_else(|e| fail(NAME, e));
    let procs = rt.procs();
    println!("matmul_ladder: C = A·B, N = {n}, f32; {procs} procs; device {}", device.describe());

    // Deterministic inputs in [-1, 1).
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    };
    // Every matrix is reserved (checked above, `try_reserve_exact` here) and, for the outputs,
    // zero-filled before its rung's timer starts, so no page fault is timed as arithmetic.
    let (nn, asked) = (n * n, format!("--n {n}"));
    let matrix = || try_filled(nn, 0f32, &asked, "an f32 element").unwrap_or_else(|e| fail(NAME, e));
    let mut a = try_vec(nn, &asked, "an f32 element").unwrap_or_else(|e| fail(NAME, e));
    a.extend((0..nn).map(|_| next()));
    let mut bm = try_vec(nn, &asked, "an f32 element").unwrap_or_else(|e| fail(NAME, e));
    bm.extend((0..nn).map(|_| next()));
    let flops = 2.0 * (n as f64).powi(3);

    let reps = args.repeats;
    // Rung 3's first run makes the reference; its timed runs follow.
    let mut reference = matrix();
    sgemm_crate(n, n, n, &a, &bm, &mut reference, procs).unwrap();
    let mut c3 = matrix();
    let crate_t = median_of(
        reps,
        || {
            let t = Instant::now();
            sgemm_crate(n, n, n, &a, &bm, &mut c3, procs).unwrap();
            t.elapsed()
        },
        |d| *d,
    );

    println!("\n{:<46} {:>11} {:>10} {:>9} {:>10}", "rung", "time", "GFLOP/s", "× naive", "max rel err");
    let naive_secs = std::cell::Cell::new(None);
    let row = |name: &str, d: Duration, c: &[f32]| {
        let secs = d.as_secs_f64();
        let err = max_rel_err(c, &reference);
        let x = naive_secs.get().map_or("—".to_string(), |ns: f64| format!("{:.1}", ns / secs));
        println!("{name:<46} {:>9.2}ms {:>10.2} {:>9} {:>10.1e}", secs * 1e3, flops / secs / 1e9, x, err);
        secs
    };

    if n <= naive_max {
        let mut c = matrix();
        let t = Instant::now();
        sgemm_naive(n, n, n, &a, &bm, &mut c).unwrap();
        naive_secs.set(Some(row("1. naive triple loop, 1 thread", t.elapsed(), &c)));
    } else {
        println!("{:<46} skipped (N > --naive-max {naive_max})", "1. naive triple loop, 1 thread");
    }

    let mut c = matrix();
    let base = c.as_mut_ptr() as usize;
    let green = || {
        let t = Instant::now();
        rt.handle().parallel_for(n, ROWS_PER_TASK, |rows| {
            // SAFETY: chunks are disjoint row ranges of `c`, which outlives the call.
            let out = unsafe {
                std::slice::from_raw_parts_mut((base as *mut f32).add(rows.start * n), rows.len() * n)
            };
            sgemm_rows(n, n, n, &a, &bm, rows, out).unwrap();
        });
        t.elapsed()
    };
    green(); // the first run, untimed
    let green_t = median_of(reps, green, |d| *d);
    row(&format!("2. green task per {ROWS_PER_TASK} rows, {procs} procs"), green_t, &c);
    row(&format!("3. GEMM crate, {procs} threads"), crate_t, &c3);

    device_rungs(&device, Precision::Fp32, n, reps, &a, &bm, &matrix, &row);
    // Tensor-core precisions, opt-in (issue 27, item 3): faster on a GPU, less exact (the max
    // rel err column shows by how much); on the Host the inputs are rounded the same way.
    for p in [Precision::Tf32, Precision::Bf16] {
        device_rungs(&device, p, n, reps, &a, &bm, &matrix, &row);
    }
}

/// Rung 4 at `precision`: a first call (its wall reported), then the median of `reps` calls.
#[allow(clippy::too_many_arguments)]
fn device_rungs(
    device: &Device,
    precision: Precision,
    n: usize,
    reps: usize,
    a: &[f32],
    bm: &[f32],
    matrix: &dyn Fn() -> Vec<f32>,
    row: &dyn Fn(&str, Duration, &[f32]) -> f64,
) {
    let mut c = matrix();
    let mut call = || {
        let t = Instant::now();
        device.sgemm_with(precision, n, n, n, a, bm, &mut c).map(|ph| (ph, t.elapsed()))
    };
    match call() {
        Err(e) => println!("4. device failed: {e}"),
        Ok((_, first_wall)) => {
            // The timed runs; one that fails ends the rung with its error.
            let runs: Result<Vec<_>, _> = (0..reps).map(|_| call()).collect();
            match runs {
                Err(e) => println!("4. device failed on a repeat: {e}"),
                Ok(runs) => {
                    let med = |f: &dyn Fn(&(gmprt::offload::PhaseTimes, Duration)) -> Duration| {
                        let mut v: Vec<Duration> = runs.iter().map(f).collect();
                        v.sort();
                        v[v.len() / 2]
                    };
                    let p = precision.name().to_uppercase();
                    if device.kind() == DeviceKind::Cuda {
                        row(
                            &format!("4. cuBLAS {p}, kernel (device time, events)"),
                            med(&|r| r.0.kernel),
                            &c,
                        );
                        row(
                            &format!("4. cuBLAS {p} incl. H2D + D2H"),
                            med(&|r| r.0.h2d + r.0.kernel + r.0.d2h),
                            &c,
                        );
                        row(&format!("4. cuBLAS {p}, wall of the call"), med(&|r| r.1), &c);
                        row(&format!("4. cuBLAS {p}, first call's wall (incl. setup)"), first_wall, &c);
                    } else if precision == Precision::Fp32 {
                        row("4. device = Host (no GPU): GEMM crate again", med(&|r| r.0.kernel), &c);
                    } else {
                        row(&format!("4. Host, inputs rounded to {p}, then FP32"), med(&|r| r.0.kernel), &c);
                    }
                }
            }
        }
    }
}

fn max_rel_err(c: &[f32], r: &[f32]) -> f64 {
    let scale = r.iter().fold(0f32, |m, x| m.max(x.abs())).max(f32::MIN_POSITIVE) as f64;
    c.iter().zip(r).map(|(x, y)| (*x as f64 - *y as f64).abs() / scale).fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::try_parse_from;

    #[test]
    fn cli() {
        common::testing::cli_contract::<Args>(NAME);
        let a: Args = try_parse_from([NAME]).unwrap();
        assert_eq!((a.n, a.naive_max, a.procs.n, a.repeats), (1024, 1024, None, 5));
        let a: Args = try_parse_from([NAME, "--n", "4_096", "--naive-max", "5e2", "--procs", "2"]).unwrap();
        assert_eq!((a.n, a.naive_max, a.procs.n), (4096, 500, Some(2)));
    }

    #[test]
    fn matrices_that_cannot_fit_are_a_clear_error() {
        // N² overflows usize here; the check counts in u128.
        let a: Args = try_parse_from([NAME, "--n", "1e10"]).unwrap();
        common::testing::assert_too_big(check_memory(a.n), "--n 10000000000");
        let msg = check_memory(a.n).unwrap_err().to_string();
        assert!(msg.contains("100000000000000000000 × 16 bytes"), "{msg}");
        assert!(check_memory(64).is_ok());
    }
}
