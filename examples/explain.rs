//! Why a kernel runs where it runs: the cost model's per-phase breakdown of one batch (queue
//! wait, launch, H2D, kernel, D2H, GPU total; the CPU time on each P count), the steady-state
//! time per batch with 1 and 2 slots in flight (`CostModel::predict_pipeline`), the verdict in
//! plain words, the crossover batch size n* for host-resident and device-resident data, the
//! network crossover beside them (from which n scattering a batch to a second rank pays, over
//! shared memory — measured on the 2-core VM — 25 GbE and InfiniBand HDR — published figures —
//! with each rank at the profile's CPU time; `gmprt_offload::model::network`), and an SVG plot of
//! time against batch size (log-log) with n* marked and the scattered batch drawn per link.
//!
//! ```text
//! cargo run --release --example explain -- --kernel black-scholes --n 1000000
//!     [--device host|cuda|simulated|<profile.json>] [--resident] [--out DIR]
//!     [--calibrate-quick] [--verify]
//! cargo run --release --example explain -- --all --device simulated
//! ```
//! Kernels: `black-scholes` (n options), `saxpy` (n elements), `sgemm` (n is the matrix side
//! N), `monte-carlo` (n paths). `--all` explains every kernel at its default n and writes one
//! plot each. The plot goes to `<out>/explain-<kernel>.svg`, where `--out` defaults to the current
//! directory (the README's plots are made with `--out docs/img` from the repository's root).
//!
//! Where the numbers come from (`--device`):
//! * `simulated`, or the default when there is no GPU: the profile measured on one H200 with
//!   a 16-core Xeon (`offload/profiles/h200-measured-2026-11-27.json`, raw output in
//!   `benches/results/h200-2026-11-27b/`; the first run's, of 2026-11-26, with cache-resident
//!   CPU fits, is beside it); the published H100/H200 profiles stay in
//!   `offload/profiles/` (pass the path), and every line that quotes one says "published
//!   figures, not measured";
//! * `host`: measured now by `calibrate` on the Host stand-in device;
//! * `cuda`: measured now by `calibrate` on CUDA device 0 (the default when one is found);
//!   exit 2 with the reason if there is none;
//! * a path: a profile saved earlier as JSON (`DeviceProfile::save`).
//!
//! `--verify` then runs the kernel at n on this machine, on the device and on the CPU (as a
//! program calls it: Ps parked, operands from DRAM), and prints each phase predicted against
//! measured; a phase off by more than 25% makes the run exit 1.
//!
//! `--help` lists every flag; bad flags exit 2 with the reason. The plot is drawn by `explain/plot.rs`.
use gmprt::kernels::precision::Precision;
use gmprt::offload::calibrate::{calibrate, verify, CalibrateOptions, TOLERANCE};
use gmprt::offload::model::{
    sgemm_kernel_name, CostModel, Crossover, DeviceProfile, ItemBytes, NetworkLink, ProfileSource, Residency,
    Size,
};
use gmprt::offload::{Device, DeviceKind};
use std::error::Error;
use std::path::{Path, PathBuf};

#[path = "common/mod.rs"]
mod common;
#[path = "explain/format.rs"]
mod format;
#[path = "explain/plot.rs"]
mod plot;
use clap::builder::PossibleValue;
use clap::{ArgGroup, Parser, ValueEnum};
use common::{fail, positive, Cli};
use format::{crossover_words, link_tag, print_breakdown, residency_name, secs, size, tag, wrap};

const NAME: &str = "explain";

/// The kernels: the flag spelling, the profile's name, the default n and the plot's x range.
#[derive(Debug, Clone)]
struct Kernel {
    flag: &'static str,
    name: &'static str,
    default_n: usize,
    x_range: (f64, f64),
}

const KERNELS: [Kernel; 4] = [
    Kernel { flag: "black-scholes", name: "black_scholes", default_n: 1_000_000, x_range: (1e1, 1e9) },
    Kernel { flag: "saxpy", name: "saxpy", default_n: 1_000_000, x_range: (1e1, 1e9) },
    Kernel { flag: "sgemm", name: "sgemm", default_n: 1024, x_range: (8.0, 16384.0) },
    Kernel { flag: "monte-carlo", name: "monte_carlo", default_n: 1_000_000, x_range: (1e2, 1e10) },
];

/// `--kernel` takes a kernel's flag spelling, or the profile's name as an alias.
impl ValueEnum for Kernel {
    fn value_variants<'a>() -> &'a [Self] {
        &KERNELS
    }
    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.flag).alias(self.name))
    }
}

/// Where the profile comes from.
#[derive(Debug, Clone)]
enum Source {
    /// CUDA when found (measured), else the H200 profile measured on the first GPU run.
    Auto,
    /// Calibrated now on the Host stand-in device.
    Host,
    /// Calibrated now on CUDA device 0.
    Cuda,
    /// The H200 profile measured on 2026-11-27 (`offload/profiles/h200-measured-2026-11-27.json`).
    Simulated,
    /// A profile saved earlier as JSON.
    File(PathBuf),
}

/// `--device`: a source's name, or a profile saved earlier as JSON.
fn parse_source(v: &str) -> Result<Source, String> {
    Ok(match v {
        "host" => Source::Host,
        "cuda" => Source::Cuda,
        "simulated" => Source::Simulated,
        "auto" => Source::Auto,
        p if p.ends_with(".json") || Path::new(p).is_file() => Source::File(PathBuf::from(p)),
        other => {
            return Err(format!("`{other}` is not host, cuda, simulated, auto or an existing profile file"))
        }
    })
}

/// The cost model's breakdown, verdict and crossover n* for one kernel (or --all), and an SVG
/// plot of time against batch size.
#[derive(Parser, Debug)]
#[command(name = NAME, group(ArgGroup::new("what").required(true).args(["kernel", "all"])))]
struct Args {
    /// The kernel to explain (required, unless --all)
    #[arg(long, value_enum, value_name = "K")]
    kernel: Option<Kernel>,
    /// Explain every kernel at its default n, one plot each
    #[arg(long, conflicts_with_all = ["kernel", "n"])]
    all: bool,
    /// Batch size: options, elements, the matrix side N (sgemm) or paths [default: the
    /// kernel's own: 1e6, N = 1024 for sgemm]
    #[arg(long, value_name = "N", value_parser = positive)]
    n: Option<usize>,
    /// Where the numbers come from: auto (CUDA measured if found, else the H200 profile
    /// measured on the first GPU run), host or cuda (calibrated now), simulated (that measured
    /// H200 profile), or a profile saved as JSON
    #[arg(
        long = "device",
        value_name = "host|cuda|simulated|auto|PROFILE.json",
        default_value = "auto",
        value_parser = parse_source
    )]
    source: Source,
    /// Break the batch down with its data already on the device (no transfers) [default: on
    /// the host, the GPU paying H2D and D2H]
    #[arg(long)]
    resident: bool,
    /// The folder the plots go to, created if missing (the default is the current directory,
    /// wherever the program runs; the README's plots are made with --out docs/img)
    #[arg(long, value_name = "DIR", default_value = ".")]
    out: PathBuf,
    /// Calibrate quickly: smaller sizes, fewer repeats (--device host or cuda)
    #[arg(long = "calibrate-quick")]
    quick: bool,
    /// Save the freshly calibrated profile as JSON (--device host or cuda) [default: not saved]
    #[arg(long = "save-profile", value_name = "FILE.json")]
    save: Option<PathBuf>,
    /// Then run the kernel at n on this machine, device and CPU, print each phase predicted
    /// against measured, and exit 1 if one is off by more than 25% (needs a device to run on:
    /// --device host, cuda, auto with a GPU, or a profile measured on this machine)
    #[arg(long, conflicts_with = "resident")]
    verify: bool,
    /// The precision SGEMM is priced at: fp32, or the tensor cores' tf32 or bf16 (opt-in; a
    /// profile has them when calibrated on CUDA)
    #[arg(long, value_name = "P", default_value = "fp32", value_parser = Precision::parse)]
    precision: Precision,
}

impl Cli for Args {
    fn check(&self) -> Result<(), String> {
        let calibrates = matches!(self.source, Source::Host | Source::Cuda);
        if self.quick && matches!(self.source, Source::Simulated | Source::File(_)) {
            return Err("--calibrate-quick only applies when calibrating (--device host or cuda)".into());
        }
        if self.save.is_some() && !calibrates {
            return Err("--save-profile saves a calibrated profile: use it with --device host or cuda".into());
        }
        if self.verify && matches!(self.source, Source::Simulated) {
            return Err("--verify runs the kernel, so it needs a device to run on: --device host, cuda, \
                        auto or a profile file, not simulated"
                .into());
        }
        Ok(())
    }
}

/// Measures a profile on `device`, or exits 2 saying why not.
fn measure(device: &Device, quick: bool) -> DeviceProfile {
    let max_procs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let what = format!(
        "{NAME}: calibrating on {} (1..{max_procs} Ps{})",
        device.describe(),
        if quick { ", quick" } else { "" }
    );
    eprintln!("{what} ...");
    // Calibration takes seconds to a minute: a spinner on stderr meanwhile (indicatif hides it
    // when stderr is not a terminal).
    let pb = indicatif::ProgressBar::new_spinner().with_message(what);
    // 100 ms: smooth enough to show life, rare enough to cost nothing.
    pb.enable_steady_tick(std::time::Duration::from_millis(100));
    let r = calibrate(device, &CalibrateOptions { max_procs, repeats: 3, quick, progress: true });
    pb.finish_and_clear();
    r.unwrap_or_else(|e| fail(&format!("{NAME}: calibrating on {}", device.describe()), e.to_string()))
}

/// The profile, and a note on why it was chosen (for the default).
fn profile(a: &Args) -> (DeviceProfile, Option<String>) {
    match &a.source {
        Source::Simulated => (DeviceProfile::measured_h200(), None),
        Source::Host => (measure(&Device::host(), a.quick), None),
        Source::Cuda => {
            let d =
                Device::cuda(0).unwrap_or_else(|e| fail(&format!("{NAME}: --device cuda"), e.to_string()));
            (measure(&d, a.quick), None)
        }
        Source::File(p) => (
            DeviceProfile::load(p).unwrap_or_else(|e| fail(&format!("{NAME}: --device"), e.to_string())),
            None,
        ),
        Source::Auto => {
            let d =
                Device::detect().unwrap_or_else(|e| fail(&format!("{NAME}: GMPRT_DEVICE"), e.to_string()));
            if d.kind() == DeviceKind::Cuda {
                (measure(&d, a.quick), Some(format!("a GPU was found ({}); measured it", d.describe())))
            } else {
                let why = d.reason().unwrap_or("no GPU").to_string();
                (
                    DeviceProfile::measured_h200(),
                    Some(format!(
                        "no GPU to measure ({why}); using the profile measured on an H200 \
                         (offload/profiles/h200-measured-2026-11-27.json)"
                    )),
                )
            }
        }
    }
}

/// Explains one kernel at size n: prints the table, verdict and crossovers, writes the plot.
fn explain(model: &CostModel, k: &Kernel, n: usize, resident: bool, out: &Path) -> Result<PathBuf, String> {
    let p = &model.profile;
    let t = tag(p);
    let kp = p.kernel(k.name).map_err(|e| e.to_string())?;
    let unit = kp.unit.clone();
    let chosen = if resident { Residency::Device } else { Residency::Host };
    let other = if resident { Residency::Host } else { Residency::Device };
    let b = model.predict(k.name, n as f64, chosen, 0.0).map_err(|e| e.to_string())?;
    println!();
    if b.mapped_io {
        // Within the kernel's mapped fit: the slot skips both copies (cuda::MAPPED_IO_MAX_BYTES).
        println!("{}: n = {n} {unit}, host-resident, mapped I/O (no copies: the kernel reads and writes pinned host memory) [{t}]", k.flag);
    } else {
        println!("{}: n = {n} {unit}, {} [{t}]", k.flag, residency_name(chosen));
    }
    if k.flag == "sgemm" {
        let p = match k.name {
            "sgemm_tf32" => "TF32 (tensor cores; inputs rounded to 10 mantissa bits, FP32 sums)",
            "sgemm_bf16" => "BF16 (tensor cores; inputs rounded to 7 mantissa bits, FP32 sums)",
            _ => "FP32",
        };
        println!("  priced at {p} [{t}]");
    }
    print_breakdown(&b, &t);
    if p.source == ProfileSource::Measured {
        if let Some(r) = &p.launch_round_trip {
            println!(
                "  launch + sync, driver floor: spin {}, blocking {}; the slots (sync {}) {} [{t}]",
                secs(r.spin),
                secs(r.blocking),
                r.sync_mode,
                secs(p.launch_sync)
            );
        }
        println!("  CPU timed {} [{t}]", p.cpu_timing.describe());
        let x = kp.size.work(n as f64);
        for c in &kp.cpu_resident {
            let what = format!("CPU on {} P, resident", c.procs);
            println!(
                "  {what:<22} {:>12}   [{t}; cache-resident best case, not priced]",
                secs(c.fit.eval(x))
            );
        }
    }
    // A stream of batches: with 2+ slots in flight copies overlap kernels (the model's pipeline).
    for in_flight in [1, 2] {
        let pl = model.predict_pipeline(k.name, n as f64, in_flight, chosen).map_err(|e| e.to_string())?;
        let what = format!("per batch, {in_flight} in flight");
        println!("  {what:<22} {:>12}   [{t}] (bound by {})", secs(pl.per_batch), pl.bound_by);
    }
    // The model's own words (the breakdown sentence, the CPU times, the verdict); the
    // crossovers for both residencies follow.
    for line in model.explain(&b).lines().filter(|l| !l.starts_with("Crossover")) {
        println!("  {line} [{t}]");
    }
    let mut cross = Vec::new();
    for r in [chosen, other] {
        let c = model.crossover(k.name, r).map_err(|e| e.to_string())?;
        println!("  crossover, {}: {} [{t}]", residency_name(r), crossover_words(&c, &unit));
        cross.push((r, c));
    }
    // The network's crossover beside the PCIe one: from which n scattering a batch to a second
    // rank pays, each rank computing at the profile's best CPU time.
    let net = network_crossovers(model, k);
    if let Some((procs, bytes)) = net_basis(model, k) {
        println!(
            "  network crossover, the batch scattered to a 2nd rank (each rank's CPU on {procs} Ps; {} B in, {} B out \
             per {}; model::network):",
            bytes.in_bytes,
            bytes.out_bytes,
            unit.trim_end_matches('s')
        );
    }
    for (link, c) in &net {
        let words = match c {
            Crossover::At { n } => format!("pays from n* = {} {unit} on", size(*n)),
            Crossover::Always => "pays at every size".to_string(),
            Crossover::Never { reason, .. } => format!("never pays: {reason}"),
        };
        println!("    {}: {words}", link.describe());
    }
    let path = out.join(format!("explain-{}.svg", k.flag));
    plot::plot(model, k, n as f64, &unit, &cross, &net, &path)
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    println!("  plot: {} [{t}]", path.display());
    Ok(path)
}

/// What the network crossover assumes for an item kernel: the Ps of the profile's largest CPU
/// fit, and the bytes per item each way (the profile's; a fixed output per launch is left out).
/// `None` for SGEMM, whose batches are not scattered item by item.
fn net_basis(model: &CostModel, k: &Kernel) -> Option<(usize, ItemBytes)> {
    let kp = model.profile.kernel(k.name).ok()?;
    let Size::Items { in_bytes, out_bytes, .. } = kp.size else { return None };
    let procs = kp.cpu.iter().map(|c| c.procs).max()?;
    Some((procs, ItemBytes { in_bytes, out_bytes }))
}

/// The network crossover of `k` for each link of `NetworkLink::presets` (2 ranks, each
/// computing at the profile's CPU time on its most Ps); empty for SGEMM.
fn network_crossovers(model: &CostModel, k: &Kernel) -> Vec<(NetworkLink, Crossover)> {
    let Some((procs, bytes)) = net_basis(model, k) else { return Vec::new() };
    NetworkLink::presets()
        .into_iter()
        .filter_map(|link| {
            let c =
                link.scatter_crossover(2, bytes, |x| model.cpu_time(k.name, x, procs).unwrap_or(f64::NAN));
            c.ok().map(|c| (link, c))
        })
        .collect()
}

// In the `gmprt` command, which includes this file as a module, `main_from` is called instead.
#[allow(dead_code)]
fn main() {
    main_from(std::env::args_os().collect());
}

/// Parses `args` (the program's name first) and runs the story: what `main` and the `gmprt`
/// command call. `--help` prints and exits 0; a bad command line prints why and exits 2.
pub fn main_from(args: Vec<std::ffi::OsString>) {
    let a: Args = common::parse_from(args);
    let (profile, why) = profile(&a);
    if let Some(path) = &a.save {
        profile.save(path).unwrap_or_else(|e| fail(&format!("{NAME}: --save-profile"), e.to_string()));
        println!("{NAME}: profile saved to {} ({})", path.display(), profile.label());
    }
    let t = tag(&profile);
    println!("{NAME}: profile {} [{t}]", profile.label());
    if let Some(why) = why {
        println!("{NAME}: {why}");
    }
    if let ProfileSource::Published { citation } = &profile.source {
        println!("{NAME}: figures from {citation} [{t}]");
    }
    let model = CostModel::new(profile);
    // SGEMM is priced at the asked precision (`sgemm`, `sgemm_tf32`, `sgemm_bf16`).
    let priced = |k: &Kernel| -> Kernel {
        let name = if k.name == "sgemm" { sgemm_kernel_name(a.precision) } else { k.name };
        Kernel { name, ..k.clone() }
    };
    let todo: Vec<(Kernel, usize)> = if a.all {
        KERNELS.iter().map(|k| (priced(k), k.default_n)).collect()
    } else {
        let k = a.kernel.as_ref().expect("clap requires --kernel or --all");
        vec![(priced(k), a.n.unwrap_or(k.default_n))]
    };
    let mut failed = false;
    for (k, n) in &todo {
        let (k, n) = (k, *n);
        if let Err(e) = explain(&model, k, n, a.resident, &a.out) {
            eprintln!("{NAME}: {}: {e}", k.flag);
            failed = true;
        }
    }
    if a.verify {
        let device = verify_device(&a);
        for (k, n) in &todo {
            println!();
            println!(
                "{NAME} --verify: {} at n = {n} on {} and on the CPU, this machine:",
                k.flag,
                device.describe()
            );
            match verify(&device, &model, k.name, *n, 5) {
                Ok(checks) => {
                    for c in &checks {
                        println!("  {c}");
                    }
                    let off: Vec<&str> =
                        checks.iter().filter(|c| !c.passes()).map(|c| c.phase.as_str()).collect();
                    if off.is_empty() {
                        println!("  every checked phase within ±{:.0}% of the model", TOLERANCE * 100.0);
                    } else {
                        eprintln!("{NAME}: {}: {} off by more than 25% (see above)", k.flag, off.join(", "));
                        failed = true;
                    }
                }
                Err(e) => {
                    eprintln!("{NAME}: --verify {}: {e}", k.flag);
                    failed = true;
                }
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}

/// The device `--verify` runs on: the one calibrated, or the one this machine has for a
/// profile file or `auto`; exits 2 when that is a stand-in for a GPU profile.
fn verify_device(a: &Args) -> Device {
    let d = match a.source {
        Source::Host => Device::host(),
        Source::Cuda => {
            Device::cuda(0).unwrap_or_else(|e| fail(&format!("{NAME}: --verify on cuda"), e.to_string()))
        }
        Source::Auto | Source::File(_) => {
            Device::detect().unwrap_or_else(|e| fail(&format!("{NAME}: GMPRT_DEVICE"), e.to_string()))
        }
        Source::Simulated => unreachable!("Args::check refuses --verify with simulated"),
    };
    if matches!(a.source, Source::Auto) && d.kind() != DeviceKind::Cuda {
        fail(
            &format!("{NAME}: --verify"),
            "no GPU here, and the default profile was measured on an H200: use --device host to \
             calibrate this machine's Host device and verify that"
                .to_string(),
        );
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::error::ErrorKind;
    use common::testing::{cli_contract, parse_error};
    use common::try_parse_from;

    /// `--verify` runs the kernel: the simulated device is refused, and `--resident` too (the
    /// check prices host-resident data, as a Batcher's batch is).
    #[test]
    fn verify_needs_a_device_to_run_on() {
        let e =
            try_parse_from::<Args, _, _>([NAME, "--kernel", "saxpy", "--device", "simulated", "--verify"])
                .unwrap_err()
                .to_string();
        assert!(e.contains("--verify runs the kernel"), "{e}");
        let e = try_parse_from::<Args, _, _>([
            NAME,
            "--kernel",
            "saxpy",
            "--device",
            "host",
            "--verify",
            "--resident",
        ])
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ArgumentConflict);
        let a: Args = try_parse_from([NAME, "--kernel", "saxpy", "--device", "host", "--verify"]).unwrap();
        assert!(a.verify);
    }

    /// `--precision` picks the SGEMM the model prices; FP32 by default, a bad name exits 2.
    #[test]
    fn precision_picks_the_sgemm_priced() {
        let a: Args = try_parse_from([NAME, "--kernel", "sgemm"]).unwrap();
        assert_eq!(a.precision, Precision::Fp32);
        let a: Args = try_parse_from([NAME, "--kernel", "sgemm", "--precision", "bf16"]).unwrap();
        assert_eq!(sgemm_kernel_name(a.precision), "sgemm_bf16");
        let e = try_parse_from::<Args, _, _>([NAME, "--kernel", "sgemm", "--precision", "fp16"]).unwrap_err();
        assert!(e.to_string().contains("fp32, tf32 or bf16"), "{e}");
    }

    #[test]
    fn cli() {
        cli_contract::<Args>(NAME);
        let a: Args = try_parse_from([NAME, "--kernel", "black_scholes", "--n", "1e6"]).unwrap();
        assert_eq!((a.kernel.map(|k| k.flag), a.n), (Some("black-scholes"), Some(1_000_000)));
        assert!(matches!(a.source, Source::Auto) && a.out == Path::new("."));
        let a: Args = try_parse_from([NAME, "--all", "--device", "simulated"]).unwrap();
        assert!(a.all && matches!(a.source, Source::Simulated));
        for (args, kind) in [
            (&[NAME][..], ErrorKind::MissingRequiredArgument),
            (&[NAME, "--all", "--kernel", "saxpy"], ErrorKind::ArgumentConflict),
            (&[NAME, "--all", "--n", "10"], ErrorKind::ArgumentConflict),
            (&[NAME, "--kernel", "fft"], ErrorKind::InvalidValue),
            (&[NAME, "--all", "--device", "gpu"], ErrorKind::ValueValidation),
            (&[NAME, "--all", "--device", "simulated", "--calibrate-quick"], ErrorKind::ArgumentConflict),
            (&[NAME, "--all", "--save-profile", "p.json"], ErrorKind::ArgumentConflict),
        ] {
            parse_error::<Args>(args, kind, 2);
        }
    }
}
