//! One Batcher over several devices (`Batcher::spread`, issue 29): the split by speed, no item
//! lost or run twice, shutdown draining every device, and the refusals. Deterministic: the
//! split test prices batches at hours so this machine's clock never enters a decision, and
//! every other wait is on a future's result.
mod common;

use common::{saxpy_profile, transfer};
use gmprt_offload::model::{CostModel, DeviceProfile, LinFit};
use gmprt_offload::runtime::Runtime;
use gmprt_offload::{Batcher, BatcherConfig, Device, OffloadError, Placement, PricedDevice, Saxpy, Side};
use std::sync::Arc;
use std::time::Duration;

/// Long enough that no batch closes on its deadline while a test runs.
const LONG: Duration = Duration::from_secs(3600);

fn cfg(max_batch: usize, in_flight: usize) -> BatcherConfig {
    BatcherConfig { max_batch, max_delay: LONG, in_flight, ..BatcherConfig::default() }
}

/// SAXPY on a device whose launch costs an hour and whose kernel `secs_per_item` per element
/// (no copies): a model under which every batch ends hours after this test has.
fn hour_model(secs_per_item: f64) -> Arc<CostModel> {
    let none = transfer(0.0, 0.0, 0.0);
    let launch = 3600.0 * secs_per_item;
    Arc::new(CostModel::new(saxpy_profile(
        (0.0, launch),
        none.clone(),
        none,
        LinFit::known(0.0, secs_per_item),
        1e-9,
    )))
}

/// Each item's SAXPY, `2x + 1`, distinct per item: a lost item fails its own future, a
/// duplicated or misrouted one shows as a wrong value.
fn expected(i: usize) -> f32 {
    2.0 * i as f32 + 1.0
}

/// Two simulated devices, one twice as fast as the other (the published H100, and the same
/// card with every device-side time doubled): the fast one gets two batches for each of the
/// slow one's, and every item runs once. Deterministic, however loaded this machine is: the
/// models that *price* the batches say the same 1 : 2 in hours per batch, so `max(ready, now)`
/// is always `ready`, and each device has a kit for every batch it can get (10 each, 15
/// batches), so every close finds both free — the choice is the list schedule's alone (see
/// `batcher/spread.rs`). The devices themselves pace each batch to microseconds.
#[test]
fn a_device_twice_as_fast_gets_twice_the_items() {
    let h100 = DeviceProfile::published_h100();
    let fast = PricedDevice::new(Device::simulated(h100.clone()), hour_model(1.0));
    let slow = PricedDevice::new(Device::simulated(h100.slowed_by(2.0)), hour_model(2.0));
    let b = Batcher::spread(Saxpy { a: 2.0 }, &[fast, slow], cfg(64, 10)).unwrap();
    let rt = Runtime::builder().procs(2).build().unwrap();
    let n = 64 * 15;
    let items: Vec<(f32, f32)> = (0..n).map(|i| (i as f32, 1.0)).collect();
    let ys = rt.block_on(b.submit_many(items)).unwrap();
    assert_eq!(ys.len(), n);
    for (i, y) in ys.iter().enumerate() {
        assert_eq!(*y, expected(i), "item {i}");
    }
    let shares = b.shares();
    assert_eq!(shares.len(), 2);
    let (f, s) = (shares[0].items, shares[1].items);
    assert_eq!(f + s, n as u64, "every item ran once: {shares:?}");
    assert_eq!(shares[0].batches + shares[1].batches, b.stats().batches);
    assert_eq!((shares[0].batches, shares[1].batches), (10, 5), "{shares:?}");
    assert_eq!((f, s), (640, 320), "{shares:?}");
    // Each batch's timeline names the device that ran it, and they agree with the shares.
    let on_fast: usize = b.timelines().iter().filter(|t| t.device_index == 0).map(|t| t.n).sum();
    assert_eq!(on_fast as u64, f);
    assert!(b.report().device.contains(" + "), "{}", b.report().device);
}

/// Two simulated devices, one twice as slow as the other (every device-side time of the
/// published H100 doubled), paced for real: submits accepted before a shutdown all get their
/// result, from whichever device ran them, and shutdown returns with every device's slots
/// drained and dropped.
#[test]
fn shutdown_drains_every_device_and_loses_nothing() {
    let h100 = DeviceProfile::published_h100();
    let devices = [PricedDevice::simulated(h100.clone()), PricedDevice::simulated(h100.slowed_by(2.0))];
    let b = Batcher::spread(Saxpy { a: 2.0 }, &devices, cfg(16, 2)).unwrap();
    let n = 400;
    let futs: Vec<_> = (0..n).map(|i| b.submit((i as f32, 1.0))).collect();
    b.shutdown();
    assert!(b.is_closed());
    let rt = Runtime::builder().procs(2).build().unwrap();
    assert_eq!(rt.block_on(b.submit((1.0, 1.0))), Err(OffloadError::Closed));
    let mut accepted = 0u64;
    for (i, f) in futs.into_iter().enumerate() {
        let accepted_here = f.is_accepted();
        match rt.block_on(f) {
            Ok(y) => {
                assert_eq!(y, expected(i), "item {i}");
                accepted += 1;
            }
            Err(OffloadError::Closed) => assert!(!accepted_here, "accepted item {i} was refused"),
            Err(e) => panic!("item {i}: {e}"),
        }
    }
    assert!(accepted > 0);
    let shares = b.shares();
    assert_eq!(shares.iter().map(|s| s.items).sum::<u64>(), accepted, "{shares:?}");
    assert!(shares.iter().all(|s| s.device.starts_with("simulated from")), "{shares:?}");
    assert_eq!(b.occupancy().busy_slots, 0);
}

/// Under `Placement::Auto`, each batch is priced against the CPU with the model of the device
/// the spread chose (no `config.model` needed): one item on a device an hour away runs on the
/// CPU.
#[test]
fn auto_placement_prices_with_the_chosen_devices_model() {
    let devices = [
        PricedDevice::new(Device::host(), hour_model(1.0)),
        PricedDevice::new(Device::host(), hour_model(2.0)),
    ];
    let config = BatcherConfig { placement: Placement::Auto, ..cfg(4, 1) };
    let b = Batcher::spread(Saxpy { a: 2.0 }, &devices, config).unwrap();
    let rt = Runtime::builder().procs(2).build().unwrap();
    let y = b.submit((3.0, 1.0));
    b.flush();
    assert_eq!(rt.block_on(y), Ok(7.0));
    let d = b.decisions();
    assert_eq!((d.len(), d[0].chose), (1, Side::Cpu), "{d:?}");
    assert!(d[0].predicted_gpu > Duration::from_secs(3600), "{d:?}");
}

/// Bad input is refused with what was wrong: no device, more slots than the limit, a model
/// that cannot price the kernel (naming the device).
#[test]
fn spread_refuses_what_it_cannot_run() {
    let e = Batcher::spread(Saxpy { a: 1.0 }, &[], BatcherConfig::default()).unwrap_err();
    assert!(e.to_string().contains("at least one device"), "{e}");
    let two = [
        PricedDevice::new(Device::host(), hour_model(1.0)),
        PricedDevice::new(Device::host(), hour_model(2.0)),
    ];
    let e = Batcher::spread(Saxpy { a: 1.0 }, &two, cfg(4, 40)).unwrap_err();
    assert!(e.to_string().contains("in_flight 40 on each of 2 devices is 80 slots; at most 64"), "{e}");
    let mut no_saxpy = DeviceProfile::published_h100();
    no_saxpy.kernels.retain(|k| k.name != "saxpy");
    let blind = PricedDevice::new(Device::host(), Arc::new(CostModel::new(no_saxpy)));
    let e = Batcher::spread(Saxpy { a: 1.0 }, &[two[0].clone(), blind], cfg(4, 1)).unwrap_err();
    let e = e.to_string();
    assert!(e.contains("device 1 (host") && e.contains("no kernel `saxpy`"), "{e}");
    // One device is `Batcher::new` on it, its model standing in for `config.model`.
    let one = Batcher::spread(
        Saxpy { a: 1.0 },
        &two[..1],
        BatcherConfig { placement: Placement::Auto, ..cfg(4, 1) },
    );
    assert_eq!(one.unwrap().devices().len(), 1);
}
