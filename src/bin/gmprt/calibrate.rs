//! `gmprt calibrate --save profile.json`: measures this machine's device profile with the
//! offload layer's `calibrate` (launch overhead, H2D/D2H, each kernel on the device and on
//! 1 … P cores), with a spinner meanwhile, and saves it for `gmprt explain --device FILE.json`.
use crate::{fail, spinner};
use gmprt::offload::calibrate::{calibrate, CalibrateOptions};
use gmprt::offload::{Device, DeviceKind};
use std::path::PathBuf;

/// Which device to calibrate.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// CUDA device 0 when one is found, else the Host stand-in (GMPRT_DEVICE decides as
    /// everywhere)
    Auto,
    /// The Host stand-in device (host memory, CPU threads)
    Host,
    /// CUDA device 0; an error when there is none
    Cuda,
}

/// `gmprt calibrate`'s flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where the profile is saved as JSON (required)
    #[arg(long, value_name = "FILE.json", required = true)]
    save: Option<PathBuf>,
    /// The device to measure
    #[arg(long, value_enum, value_name = "DEVICE", default_value_t = Which::Auto)]
    device: Which,
    /// A quick pass: smaller sizes, fewer repeats (seconds instead of up to a minute)
    #[arg(long)]
    quick: bool,
    /// Largest P count for the CPU fits [default: one per core]
    #[arg(long = "max-procs", value_name = "P", value_parser = clap::value_parser!(u32).range(1..=1024))]
    max_procs: Option<u32>,
    /// Print the saved profile as JSON
    #[arg(long)]
    json: bool,
}

/// Runs `gmprt calibrate`.
pub fn run(a: &Args) {
    let save = a.save.clone().expect("--save is required");
    let device = match a.device {
        Which::Host => Device::host(),
        Which::Cuda => Device::cuda(0).unwrap_or_else(|e| fail("gmprt calibrate: --device cuda", e)),
        Which::Auto => Device::detect().unwrap_or_else(|e| fail("gmprt calibrate: GMPRT_DEVICE", e)),
    };
    let mut opts = if a.quick { CalibrateOptions::quick() } else { CalibrateOptions::default() };
    if let Some(p) = a.max_procs {
        opts.max_procs = p as usize;
    }
    let what = format!(
        "calibrating {} on 1..={} Ps{}",
        device.describe(),
        opts.max_procs,
        if a.quick { ", quick" } else { "" }
    );
    let pb = spinner(&what);
    let t0 = std::time::Instant::now();
    let r = calibrate(&device, &opts);
    pb.finish_and_clear();
    let profile = r.unwrap_or_else(|e| fail(&format!("gmprt calibrate: {what}"), e));
    profile.save(&save).unwrap_or_else(|e| fail(&format!("gmprt calibrate: --save {}", save.display()), e));
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&profile).unwrap_or_else(|e| fail("gmprt calibrate: --json", e))
        );
        return;
    }
    println!("{what}: {:.1} s", t0.elapsed().as_secs_f64());
    println!("profile: {}", profile.label());
    if device.kind() != DeviceKind::Cuda {
        println!("(the Host stand-in: its \"transfers\" are memcpy and its engines share the CPU cores; a GPU's shape, not a GPU's figures)");
    }
    println!(
        "saved to {}; use it with `gmprt explain --kernel K --device {}`",
        save.display(),
        save.display()
    );
}
