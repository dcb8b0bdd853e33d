//! Helpers shared by the offload integration tests (each test binary includes this module with
//! `mod common;`, so not every binary uses every item).
#![allow(dead_code)]

use gmprt_offload::model::{
    CpuFit, DeviceProfile, KernelProfile, LinFit, ProfileSource, Size, TransferProfile,
};

/// Host ↔ device copies taking `latency` s plus `pinned` (`pageable`) s per byte.
pub fn transfer(latency: f64, pinned: f64, pageable: f64) -> TransferProfile {
    TransferProfile {
        pinned: LinFit::known(latency, pinned),
        pageable: LinFit::known(latency, pageable),
        pinned_samples: vec![],
        pageable_samples: vec![],
    }
}

/// A hand-made profile (labelled published, "made up for the test") of a device whose one
/// kernel is SAXPY (8 B in, 4 B out per element): `launch` is (`launch_enqueue`,
/// `launch_sync`), `device` the kernel's fit on the device, `cpu_per_item` its seconds per
/// element on one P.
pub fn saxpy_profile(
    launch: (f64, f64),
    h2d: TransferProfile,
    d2h: TransferProfile,
    device: LinFit,
    cpu_per_item: f64,
) -> DeviceProfile {
    DeviceProfile {
        device: "test GPU".into(),
        kind: "published".into(),
        driver: "-".into(),
        date: "2025-01-01".into(),
        cpu: "test CPU".into(),
        procs: 1,
        source: ProfileSource::Published { citation: "made up for the test".into() },
        launch_enqueue: launch.0,
        launch_sync: launch.1,
        h2d,
        d2h,
        kernels: vec![KernelProfile {
            name: "saxpy".into(),
            unit: "elements".into(),
            size: Size::Items { in_bytes: 8.0, out_bytes: 4.0, out_fixed: 0.0 },
            device,
            device_samples: vec![],
            cpu: vec![CpuFit { procs: 1, fit: LinFit::known(0.0, cpu_per_item), samples: vec![] }],
            cpu_resident: vec![],
            mapped: None,
        }],
        cpu_timing: Default::default(),
        launch_round_trip: None,
    }
}
