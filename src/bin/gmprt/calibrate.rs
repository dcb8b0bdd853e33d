//! `gmprt calibrate --save profile.json`: measures this machine's device profile with the
//! offload layer's `calibrate` (launch overhead, H2D/D2H, each kernel on the device and on
//! 1 … P cores), with a spinner meanwhile, and saves it for `gmprt explain --device FILE.json`.
//! The file is opened before measuring (a bad path fails at once, not after a minute of
//! work), and if the write fails anyway the profile is printed to stdout rather than lost.
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

/// Opens `path` for the profile before anything is measured, so a bad path costs nothing: the
/// file is created if it is not there (and removed again by [`Target::abandon`] if nothing is
/// written), but not truncated until the profile is ready.
struct Target {
    file: std::fs::File,
    path: PathBuf,
    created: bool,
}

impl Target {
    fn open(path: PathBuf) -> std::io::Result<Target> {
        let created = !path.exists();
        let file = std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(&path)?;
        Ok(Target { file, path, created })
    }

    /// Replaces the file's content with `text`.
    fn write(&mut self, text: &str) -> std::io::Result<()> {
        use std::io::Write;
        self.file.set_len(0)?;
        self.file.write_all(text.as_bytes())?;
        self.file.sync_all()
    }

    /// Nothing will be written: remove the file if this run created it.
    fn abandon(&self) {
        if self.created {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Runs `gmprt calibrate`.
pub fn run(a: &Args) {
    let save = a.save.clone().expect("--save is required");
    let mut target = Target::open(save.clone()).unwrap_or_else(|e| {
        fail(&format!("gmprt calibrate: --save {}", save.display()), format!("{e} (nothing was measured)"))
    });
    let device = match a.device {
        Which::Host => Ok(Device::host()),
        Which::Cuda => Device::cuda(0).map_err(|e| ("gmprt calibrate: --device cuda", e)),
        Which::Auto => Device::detect().map_err(|e| ("gmprt calibrate: GMPRT_DEVICE", e)),
    };
    let device = device.unwrap_or_else(|(what, e)| {
        target.abandon();
        fail(what, e)
    });
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
    let profile = match r {
        Ok(p) => p,
        Err(e) => {
            target.abandon();
            fail(&format!("gmprt calibrate: {what}"), e)
        }
    };
    if let Err(e) = target.write(&profile.to_json()) {
        // The measurement is not lost: it goes to stdout, to be saved by hand.
        println!("{}", profile.to_json());
        fail(
            &format!("gmprt calibrate: --save {}", save.display()),
            format!("{e}; the profile was printed to stdout instead"),
        );
    }
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
