//! Several devices, one Batcher (`Batcher::spread`, issue 29): each batch goes to the device
//! its model predicts finishes it first, counting the work each device already has. The same
//! workload — `--tasks` green tasks submitting `--items` SAXPY items in bulk — runs on each
//! device alone and then on all of them, in one run, and the example prints items/s, what each
//! device ran, and what each device's model predicts (the steady-state rate of its pipeline).
//!
//! `--devices` lists the devices: simulated ones by profile (`h200`: the H200 measured on the
//! first GPU run, `h100`: published figures; `NAME/K`: the same card K times slower), or `all`:
//! every device [`Device::all`] finds (every GPU that opens; without one, the Host device),
//! priced by `--model FILE` or else the measured H200 profile. The default, `h200,h200/2`, is a
//! mixed pair that runs anywhere: the fast device should run about 2/3 of the items.
//!
//! A simulated device computes on this machine's CPU and paces each phase to its profile; where
//! the CPU takes longer than the profile predicts (2 cores, large batches), the run is bound by
//! the CPU, not by the simulated devices, and the measured rates say so.
//!
//! ```text
//! cargo run --release --example spread                      # h200 + a half-speed h200
//! cargo run --release --example spread -- --devices all     # every GPU of this machine
//! ```
use gmprt::offload::model::{CostModel, DeviceProfile, Residency};
use gmprt::offload::{Batcher, BatcherConfig, Device, PricedDevice, Saxpy};
use gmprt::runtime::Runtime;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;
use common::{count_in, positive};

#[derive(clap::Parser, Debug)]
#[command(
    name = "spread",
    about = "One Batcher over several devices: each batch to the device predicted to finish it first"
)]
struct Args {
    /// The devices: `all`, or a comma list of simulated profiles (`h200`, `h100`, `NAME/K` for K
    /// times slower)
    #[arg(long, value_name = "LIST", default_value = "h200,h200/2")]
    devices: String,
    /// Items (SAXPY elements) per run, written 1000000, 1_000_000 or 1e6
    #[arg(long, value_name = "N", default_value_t = 1 << 22, value_parser = positive)]
    items: usize,
    /// Green tasks sharing the items, each submitting its share at once (submit_many)
    #[arg(long, value_name = "T", default_value_t = 64, value_parser = positive)]
    tasks: usize,
    /// The Batcher's largest batch
    #[arg(long, value_name = "ITEMS", default_value_t = 4096, value_parser = count_in(1, gmprt::offload::batcher::MAX_BATCH_LIMIT))]
    max_batch: usize,
    /// Slots per device
    #[arg(long, value_name = "K", default_value_t = 2, value_parser = count_in(1, 32))]
    in_flight: usize,
    /// The profile that prices the devices of `--devices all` (JSON, as `gmprt calibrate`
    /// writes it); default: the H200 measured on the first GPU run
    #[arg(long, value_name = "PROFILE")]
    model: Option<std::path::PathBuf>,
}

impl common::Cli for Args {}

/// `h200`, `h100` or `NAME/K`: the simulated device and its profile; `Err` naming the entry.
fn simulated(entry: &str) -> Result<PricedDevice, String> {
    let (name, factor) = match entry.split_once('/') {
        Some((name, k)) => {
            let k: f64 = k
                .trim()
                .parse()
                .map_err(|_| format!("`{entry}`: the slowdown after `/` must be a number"))?;
            if !(k.is_finite() && k >= 1.0) {
                return Err(format!("`{entry}`: the slowdown after `/` must be a number of at least 1"));
            }
            (name.trim(), k)
        }
        None => (entry.trim(), 1.0),
    };
    let profile = match name {
        "h200" => DeviceProfile::measured_h200(),
        "h100" => DeviceProfile::published_h100(),
        other => return Err(format!("unknown device `{other}`: use h200, h100, NAME/K or all")),
    };
    let profile = if factor > 1.0 { profile.slowed_by(factor) } else { profile };
    Ok(PricedDevice::simulated(profile))
}

/// The devices `--devices` names (module doc); `Err` says what was wrong.
fn devices(a: &Args) -> Result<Vec<PricedDevice>, String> {
    if a.devices.trim() == "all" {
        let profile = match &a.model {
            Some(path) => {
                DeviceProfile::load(path).map_err(|e| format!("--model {}: {e}", path.display()))?
            }
            None => DeviceProfile::measured_h200(),
        };
        let model = Arc::new(CostModel::new(profile));
        let all = Device::all().map_err(|e| e.to_string())?;
        return Ok(all.into_iter().map(|d| PricedDevice::new(d, model.clone())).collect());
    }
    a.devices.split(',').map(simulated).collect()
}

/// One run on `devices`: items/s, and the Batcher's shares.
fn run(
    a: &Args,
    rt: &Runtime,
    devices: &[PricedDevice],
) -> Result<(f64, f64, Vec<gmprt::offload::DeviceShare>), String> {
    let cfg = BatcherConfig {
        max_batch: a.max_batch,
        in_flight: a.in_flight,
        max_delay: Duration::from_micros(200),
        runtime: Some(rt.handle()),
        ..BatcherConfig::default()
    };
    let b = Batcher::spread(Saxpy { a: 2.0 }, devices, cfg).map_err(|e| e.to_string())?;
    let per = a.items.div_ceil(a.tasks);
    let t = Instant::now();
    let b2 = b.clone();
    let (items, items_a) = (a.items, a.tasks);
    let ok = rt.block_on(async move {
        let hs: Vec<_> = (0..items_a)
            .map(|k| {
                let b = b2.clone();
                gmprt::spawn(async move {
                    let lo = (k * per).min(items);
                    let hi = ((k + 1) * per).min(items);
                    let xs: Vec<(f32, f32)> = (lo..hi).map(|i| ((i % 1024) as f32, 1.0)).collect();
                    let ys = b.submit_many(xs).await?;
                    Ok::<bool, gmprt::offload::OffloadError>(
                        ys.iter().enumerate().all(|(j, &y)| y == 2.0 * ((lo + j) % 1024) as f32 + 1.0),
                    )
                })
            })
            .collect();
        let mut ok = true;
        for h in hs {
            ok &= h.await.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
        }
        Ok::<bool, String>(ok)
    })?;
    let secs = t.elapsed().as_secs_f64();
    if !ok {
        return Err("a result differs from 2x + 1".into());
    }
    let shares = b.shares();
    b.shutdown();
    Ok((a.items as f64 / secs, secs, shares))
}

fn main() {
    let a: Args = common::parse();
    let devices = devices(&a).unwrap_or_else(|e| common::fail("spread: --devices", e));
    let procs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let rt = Runtime::builder().procs(procs).build().unwrap_or_else(|e| common::fail("spread: runtime", e));
    println!(
        "spread: {} SAXPY items from {} tasks, max_batch {}, in_flight {} per device, {procs} procs",
        a.items, a.tasks, a.max_batch, a.in_flight
    );
    let predicted = |d: &PricedDevice| {
        d.model
            .predict_pipeline("saxpy", a.max_batch as f64, a.in_flight, Residency::Host)
            .map_or(0.0, |p| p.throughput())
    };
    println!("{:<4} {:>14} {:>14}  device", "run", "items/s", "model items/s");
    let mut alone = Vec::new();
    for (i, d) in devices.iter().enumerate() {
        let (rate, _, _) =
            run(&a, &rt, std::slice::from_ref(d)).unwrap_or_else(|e| common::fail("spread", e));
        alone.push(rate);
        println!("{:<4} {:>14.3e} {:>14.3e}  {}", i, rate, predicted(d), d.device.describe());
    }
    let (rate, wall, shares) = run(&a, &rt, &devices).unwrap_or_else(|e| common::fail("spread", e));
    let model_sum: f64 = devices.iter().map(predicted).sum();
    println!("{:<4} {:>14.3e} {:>14.3e}  all {} (spread)", "all", rate, model_sum, devices.len());
    println!("what each device ran in the spread run:");
    for (d, s) in shares.iter().enumerate() {
        println!(
            "  {d}: {:>9} items ({:>5.1}%) in {:>5} batches, device phases {:>5.1}% of the run",
            s.items,
            100.0 * s.items as f64 / a.items as f64,
            s.batches,
            100.0 * s.device_time.as_secs_f64() / wall
        );
    }
    println!(
        "(device phases: H2D + kernel + D2H summed over its slots, which overlap, so up to in_flight x 100%;\n\
         well under 100% means the host — submits, staging, scatter — not the devices, bounds the run:\n\
         a second device pays only once the first is saturated)"
    );
    let best = alone.iter().cloned().fold(0.0, f64::max);
    println!(
        "spread / fastest alone: {:.2}x (the models' ideal: {:.2}x)",
        rate / best,
        model_sum / devices.iter().map(predicted).fold(0.0, f64::max)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::testing::cli_contract;
    use common::try_parse_from;

    #[test]
    fn cli() {
        cli_contract::<Args>("spread");
        let a: Args = try_parse_from(["spread"]).unwrap();
        assert_eq!(
            (a.devices.as_str(), a.items, a.max_batch, a.in_flight),
            ("h200,h200/2", 1 << 22, 4096, 2)
        );
        assert!(try_parse_from::<Args, _, _>(["spread", "--in-flight", "0"]).is_err());
    }

    #[test]
    fn device_lists_parse_and_bad_ones_say_why() {
        let a =
            |s: &str| Args { devices: s.into(), items: 1, tasks: 1, max_batch: 1, in_flight: 1, model: None };
        let d = devices(&a("h200, h100/3")).unwrap();
        assert_eq!(d.len(), 2);
        assert!(d[1].model.profile.device.ends_with("at 1/3 speed"), "{}", d[1].model.profile.device);
        assert!(devices(&a("tpu")).unwrap_err().contains("unknown device `tpu`"));
        assert!(devices(&a("h200/0.5")).unwrap_err().contains("at least 1"));
        assert!(devices(&a("h200/x")).unwrap_err().contains("must be a number"));
        assert!(!devices(&a("all")).unwrap().is_empty());
    }

    #[test]
    fn a_small_run_counts_every_item_once() {
        let a = Args {
            devices: "h100,h100/2".into(),
            items: 5000,
            tasks: 7,
            max_batch: 256,
            in_flight: 1,
            model: None,
        };
        let rt = Runtime::builder().procs(2).build().unwrap();
        let (rate, _, shares) = run(&a, &rt, &devices(&a).unwrap()).unwrap();
        assert!(rate > 0.0);
        assert_eq!(shares.iter().map(|s| s.items).sum::<u64>(), 5000);
    }
}
