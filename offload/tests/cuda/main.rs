//! CUDA backend tests, run by a [libtest-mimic](https://docs.rs/libtest-mimic) harness
//! (`[[test]] name = "cuda" harness = false` in `offload/Cargo.toml`), so that every test
//! decides *at run time* whether it can run, and one that cannot is reported as **ignored**
//! with the reason — never as passed. The kind of each test is shown in brackets:
//! * `[nvrtc]` needs only libnvrtc (no GPU): every embedded `.cu` source must compile for
//!   sm_90- and sm_80-class PTX, and a compile error must come back with NVRTC's log;
//! * `[gpu]` needs a device (`cuda::probe(0)`, then `CudaBackend::new(0)`): every kernel
//!   against its CPU twin (and the f64 reference), exactly where the math is integer (π hits);
//!   all of them share one backend (one context, modules compiled once);
//! * `[host]` needs neither and always runs: the CPU twin against the `.cu` source's known
//!   answers, and `probe` agreeing with `CudaBackend::new` whether or not a GPU is there;
//! * `[harness]` checks this harness itself: it re-runs this binary on one `[gpu]` and one
//!   `[nvrtc]` test, with and without `GMPRT_REQUIRE_GPU`, and checks what is reported.
//!
//! What a skip looks like on a machine without a GPU (the reason is printed once to stderr
//! before the run, then on every skipped test's line, and the summary counts it):
//! ```text
//! cuda tests: no GPU here (no libcuda.so (CUDA driver library not found)): 12 [gpu] test(s) will be reported as ignored; GMPRT_REQUIRE_GPU=1 makes them fail
//! test [gpu] saxpy_matches_cpu ... ignored (no GPU: no libcuda.so (CUDA driver library not found))
//! test result: ok. 3 passed; 0 failed; 14 ignored; 0 measured; 0 filtered out
//! ```
//! A device that probes but cannot be opened (`CudaBackend::new` fails) is a failure, not a
//! skip: something is broken, not absent.
//!
//! `GMPRT_REQUIRE_GPU=1` makes every test that would be ignored **fail** with the same
//! reason (`[gpu]` tests without a GPU, `[nvrtc]` tests without libnvrtc), for runs where a
//! missing driver must not go unnoticed; unset, empty or `0` is the default. Any other value
//! fails those tests with a message naming the accepted values.
//!
//! On a GPU machine (libcuda.so from the driver, libnvrtc.so.13 on the loader's path, e.g.
//! the `nvidia-cuda-nvrtc` wheel's `cu13/lib` as `.ci/run` installs it):
//! ```text
//! GMPRT_REQUIRE_GPU=1 LD_LIBRARY_PATH=<dir of libnvrtc.so.13> cargo test --release -p gmprt-offload --test cuda
//! ```
//! CI (`.ci/run`) runs the `[nvrtc]` tests alone: `cargo test ... --test cuda nvrtc --
//! --nocapture`. Filters, `--exact`, `--skip`, `--list`, `--ignored` and `--test-threads` work as
//! with the built-in harness; libtest-mimic never captures output, so `--nocapture` is
//! accepted and changes nothing (test output always shows).
//!
//! This file is the harness (gates, trial constructors, `main`); the tests live beside it, one
//! file per concern: `sources.rs` (`[nvrtc]`, `[host]`, the device probe), `kernels.rs` (each
//! kernel against its twin), `slots.rs` (slot phases, mapped I/O, errors, launch costs),
//! `segments.rs` (Black-Scholes by segment), `jobs.rs` (the test jobs and shared helpers) and
//! `harness.rs` (the harness checking itself).
use gmprt_kernels::black_scholes::{self, tolerance, Contract, OptionKind, IN_WORDS, OUT_WORDS};
use gmprt_kernels::cuda::{CudaSource, ALL, CALIB, FN_COPY, FN_EMPTY};
use gmprt_kernels::segmented;
use gmprt_offload::backend::{Backend, Job, Phases, Slot};
use gmprt_offload::cuda::{self, nvrtc, CudaBackend, CudaJob, LaunchCtx};
use gmprt_offload::jobs::{BlackScholes, BlackScholesBySegment, BlackScholesSelected, Saxpy};
use gmprt_offload::OffloadError;
use libtest_mimic::{Arguments, Completion, Failed, Trial};
use std::process::{Command, ExitCode};
use std::sync::OnceLock;
use std::time::Duration;

mod harness;
mod jobs;
mod kernels;
mod segments;
mod slots;
mod sources;
use harness::*;
use jobs::*;
use kernels::*;
use segments::*;
use slots::*;
use sources::*;

/// The variable that turns a skipped (ignored) CUDA test into a failure.
const REQUIRE_ENV: &str = "GMPRT_REQUIRE_GPU";

/// Whether `GMPRT_REQUIRE_GPU` asks for a GPU; `Err` names a value that is neither.
fn require_gpu() -> Result<bool, String> {
    match std::env::var(REQUIRE_ENV) {
        Err(std::env::VarError::NotPresent) => Ok(false),
        Ok(v) if v.trim().is_empty() || v.trim() == "0" => Ok(false),
        Ok(v) if v.trim() == "1" => Ok(true),
        Ok(v) => Err(format!("{REQUIRE_ENV} must be 1 (require a GPU and NVRTC) or 0 / unset, got {v:?}")),
        Err(e) => Err(format!("{REQUIRE_ENV} must be 1 or 0 / unset: {e}")),
    }
}

/// Why a test cannot run here.
#[derive(Clone, Debug)]
enum Gate {
    /// What it needs is absent (no driver, no device, no libnvrtc): a skip, reported as
    /// ignored — or a failure under `GMPRT_REQUIRE_GPU=1`.
    Missing(String),
    /// What it needs is present but broken (the device probes, the backend does not open):
    /// always a failure.
    Broken(String),
}

/// The shared backend, or why there is none. Probed and opened once per process.
fn gpu() -> Result<&'static CudaBackend, Gate> {
    static B: OnceLock<Result<CudaBackend, Gate>> = OnceLock::new();
    let b = B.get_or_init(|| match cuda::probe(0) {
        Err(reason) => Err(Gate::Missing(reason)),
        Ok(()) => CudaBackend::new(0)
            .map_err(|e| Gate::Broken(format!("cuda::probe(0) passed but CudaBackend::new(0) failed: {e}"))),
    });
    b.as_ref().map_err(Clone::clone)
}

/// libnvrtc, or why it cannot be used: absent is a skip; present but refused (a stub, or
/// another CUDA major than 13 found by cudarc's fallback) is a failure.
fn nvrtc_gate() -> Result<(), Gate> {
    nvrtc::available().map_err(|why| {
        if why.starts_with("no libnvrtc") {
            Gate::Missing(why)
        } else {
            Gate::Broken(why)
        }
    })
}

/// The outcome of a test that cannot run: ignored with `what: reason`, or (under
/// `GMPRT_REQUIRE_GPU=1`, or when broken) a failure naming the reason.
fn cannot_run(what: &str, gate: Gate) -> Result<Completion, Failed> {
    match (gate, require_gpu()) {
        (Gate::Broken(msg), _) => Err(msg.into()),
        (Gate::Missing(_), Err(bad)) => Err(bad.into()),
        (Gate::Missing(reason), Ok(true)) => Err(format!("{REQUIRE_ENV}=1 and {what}: {reason}").into()),
        (Gate::Missing(reason), Ok(false)) => Ok(Completion::ignored_with(format!("{what}: {reason}"))),
    }
}

/// A `[gpu]` test: runs `f` on the shared backend, or is ignored (or fails) without one.
fn gpu_test(name: &'static str, f: fn(&CudaBackend)) -> Trial {
    Trial::ignorable_test(name, move || match gpu() {
        Ok(b) => {
            f(b);
            Ok(Completion::Completed)
        }
        Err(gate) => cannot_run("no GPU", gate),
    })
    .with_kind("gpu")
}

/// An `[nvrtc]` test: runs `f` where libnvrtc loads, or is ignored (or fails) elsewhere.
fn nvrtc_test(name: &'static str, f: fn()) -> Trial {
    Trial::ignorable_test(name, move || match nvrtc_gate() {
        Ok(()) => {
            f();
            Ok(Completion::Completed)
        }
        Err(gate) => cannot_run("no NVRTC", gate),
    })
    .with_kind("nvrtc")
}

/// A `[host]` test: needs neither a GPU nor NVRTC, always runs.
fn host_test(name: &'static str, f: fn()) -> Trial {
    Trial::test(name, move || {
        f();
        Ok(())
    })
    .with_kind("host")
}

/// The `[gpu]` and `[nvrtc]` tests the harness check re-runs (cheap: no kernel launch, one
/// tiny compile).
const GPU_PROBE_TEST: &str = "device_describes_itself";
const NVRTC_PROBE_TEST: &str = "nvrtc_reports_compile_errors_with_the_log";

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let trials = vec![
        nvrtc_test("nvrtc_compiles_every_source", nvrtc_compiles_every_source),
        nvrtc_test(NVRTC_PROBE_TEST, nvrtc_reports_compile_errors_with_the_log),
        host_test(
            "cpu_pi_hits_match_the_cuda_source_known_answers",
            cpu_pi_hits_match_the_cuda_source_known_answers,
        ),
        host_test("probe_and_new_never_panic_and_agree", probe_and_new_never_panic_and_agree),
        gpu_test(GPU_PROBE_TEST, device_describes_itself),
        gpu_test("black_scholes_matches_cpu_and_f64_reference", black_scholes_matches_cpu_and_f64_reference),
        gpu_test("black_scholes_edge_contracts_stay_finite", black_scholes_edge_contracts_stay_finite),
        gpu_test("saxpy_matches_cpu", saxpy_matches_cpu),
        gpu_test("pi_hits_equal_cpu_exactly", pi_hits_equal_cpu_exactly),
        gpu_test(
            "option_paths_agree_with_cpu_and_black_scholes",
            option_paths_agree_with_cpu_and_black_scholes,
        ),
        gpu_test(
            "option_paths_batch_equals_one_launch_per_contract",
            option_paths_batch_equals_one_launch_per_contract,
        ),
        host_test(
            "black_scholes_by_segment_on_host_equals_the_cpu_twins",
            by_segment_on_host_equals_the_cpu_twins,
        ),
        gpu_test("black_scholes_by_segment_within_segment_tolerance", by_segment_within_segment_tolerance),
        host_test(
            "black_scholes_selected_on_host_equals_the_cpu_twins",
            selected_on_host_equals_the_cpu_twins,
        ),
        gpu_test("black_scholes_selected_within_segment_tolerance", selected_within_segment_tolerance),
        gpu_test("sgemm_matches_cpu", sgemm_matches_cpu),
        gpu_test("sgemm_tf32_and_bf16_within_their_tolerance", sgemm_tf32_and_bf16_within_their_tolerance),
        gpu_test("sgemm_batched_on_a_slot_matches_cpu", sgemm_batched_on_a_slot_matches_cpu),
        gpu_test("slot_resident_runs_time_each_phase_alone", slot_resident_runs_time_each_phase_alone),
        gpu_test(
            "small_runs_map_their_io_and_agree_with_copies",
            small_runs_map_their_io_and_agree_with_copies,
        ),
        gpu_test("slot_errors_leave_it_usable", slot_errors_leave_it_usable),
        gpu_test("two_slots_on_two_threads_stay_independent", two_slots_on_two_threads_stay_independent),
        gpu_test("calibration_kernels_run", calibration_kernels_run),
        gpu_test("launch_costs_are_finite_and_positive", launch_costs_are_finite_and_positive),
        gpu_test("latency_kernels_follow_the_chain", latency_kernels_follow_the_chain),
        gpu_test("first_use_is_paid_before_any_timed_run", first_use_is_paid_before_any_timed_run),
        gpu_test("loaded_libraries_name_cuda_13_paths", loaded_libraries_name_cuda_13_paths),
        Trial::test("skips_are_ignored_with_the_reason_and_required_gpu_fails", harness_reports_skips)
            .with_kind("harness"),
        Trial::test("child_pass_check_reads_a_probe_that_prints", child_pass_check_reads_a_probe_that_prints)
            .with_kind("harness"),
    ];
    if !args.list {
        announce_skips(&args, &trials);
    }
    libtest_mimic::run(&args, trials).exit_code()
}

/// Says once, on stderr before the run, which selected tests will be skipped and why.
fn announce_skips(args: &Arguments, trials: &[Trial]) {
    let selected =
        |kind: &str| trials.iter().filter(|t| t.kind() == kind && !args.is_filtered_out(t)).count();
    let then = match require_gpu() {
        Ok(false) => format!("will be reported as ignored; {REQUIRE_ENV}=1 makes them fail"),
        Ok(true) => format!("will FAIL ({REQUIRE_ENV}=1)"),
        Err(bad) => format!("will FAIL: {bad}"),
    };
    let (gpus, nvrtcs) = (selected("gpu"), selected("nvrtc"));
    if gpus > 0 {
        match gpu() {
            Err(Gate::Missing(reason)) => {
                eprintln!("cuda tests: no GPU here ({reason}): {gpus} [gpu] test(s) {then}")
            }
            Err(Gate::Broken(msg)) => eprintln!("cuda tests: {msg}: {gpus} [gpu] test(s) will FAIL"),
            Ok(b) => eprintln!("cuda tests: {gpus} [gpu] test(s) run on {}", b.describe()),
        }
    }
    if nvrtcs > 0 {
        match nvrtc_gate() {
            Err(Gate::Missing(reason) | Gate::Broken(reason)) => {
                eprintln!("cuda tests: no NVRTC here ({reason}): {nvrtcs} [nvrtc] test(s) {then}")
            }
            Ok(()) => match nvrtc::version() {
                Ok((major, minor)) => {
                    eprintln!("cuda tests: {nvrtcs} [nvrtc] test(s) run with NVRTC {major}.{minor}")
                }
                Err(e) => {
                    eprintln!("cuda tests: libnvrtc loads but {e}: {nvrtcs} [nvrtc] test(s) will say more")
                }
            },
        }
    }
}
