//! Batcher placement: `Cpu` never touches the device, `Gpu` always does, `Auto` follows a
//! hand-made cost model and logs each decision. The device is a simulated one whose transfers
//! take at least 2 ms, so a device run cannot hide in the timelines. No sleeps.
mod common;
use common::{saxpy_profile, transfer};
use gmprt_offload::model::{CostModel, DeviceProfile, LinFit};
use gmprt_offload::runtime::{spawn, Runtime};
use gmprt_offload::{Batcher, BatcherConfig, Device, OffloadError, Placement, Saxpy, Side};
use std::sync::Arc;
use std::time::Duration;

/// A profile whose saxpy costs `gpu_per_item` s/item on the device (plus 2 ms transfers and
/// 0.1 ms launch) and `cpu_per_item` s/item on one P.
fn profile(gpu_per_item: f64, cpu_per_item: f64) -> DeviceProfile {
    let t = transfer(1e-3, 1e-10, 1e-10);
    saxpy_profile((1e-5, 1e-4), t.clone(), t, LinFit::known(0.0, gpu_per_item), cpu_per_item)
}

/// Submits saxpy items 0..n from tasks and checks every result.
fn drive(b: &Batcher<Saxpy>, n: usize) {
    let rt = Runtime::builder().procs(2).build().unwrap();
    let b2 = b.clone();
    let ys: Vec<f32> = rt.block_on(async move {
        let hs: Vec<_> = (0..n)
            .map(|i| {
                let b = b2.clone();
                spawn(async move { b.submit((i as f32, 1.0)).await })
            })
            .collect();
        let mut ys = Vec::new();
        for h in hs {
            ys.push(h.await.unwrap().unwrap());
        }
        ys
    });
    for (i, y) in ys.iter().enumerate() {
        assert_eq!(*y, 2.0 * i as f32 + 1.0);
    }
}

fn cfg(placement: Placement, model: Option<DeviceProfile>) -> BatcherConfig {
    BatcherConfig {
        max_batch: 32,
        max_delay: Duration::from_micros(200),
        placement,
        model: model.map(|p| Arc::new(CostModel::new(p))),
        ..BatcherConfig::default()
    }
}

fn device() -> Device {
    Device::simulated(profile(1e-9, 1e-9))
}

#[test]
fn default_placement_is_the_device() {
    assert_eq!(BatcherConfig::default().placement, Placement::Gpu);
    assert!(BatcherConfig::default().model.is_none());
}

#[test]
fn cpu_placement_never_touches_the_device() {
    let b = Batcher::new(Saxpy { a: 2.0 }, &device(), cfg(Placement::Cpu, None)).unwrap();
    drive(&b, 100);
    let s = b.stats();
    assert_eq!((s.items, s.launches, s.bytes_h2d, s.bytes_d2h), (100, 0, 0, 0));
    assert_eq!(s.cpu_batches, s.batches);
    for t in b.timelines() {
        assert_eq!(t.placement, Side::Cpu);
        assert!(!t.launched && t.ok);
        assert_eq!((t.h2d, t.d2h), (Duration::ZERO, Duration::ZERO));
        assert!(t.predicted.is_none());
    }
    assert!(b.decisions().is_empty());
}

#[test]
fn gpu_placement_always_uses_the_device() {
    let b = Batcher::new(Saxpy { a: 2.0 }, &device(), cfg(Placement::Gpu, None)).unwrap();
    drive(&b, 100);
    let s = b.stats();
    assert_eq!((s.launches, s.cpu_batches), (s.batches, 0));
    for t in b.timelines() {
        assert_eq!(t.placement, Side::Gpu);
        assert!(t.launched && t.ok);
        assert!(t.h2d >= Duration::from_millis(1), "{:?}", t.h2d); // paced by the profile
    }
}

#[test]
fn auto_without_a_model_is_a_config_error() {
    match Batcher::new(Saxpy { a: 2.0 }, &device(), cfg(Placement::Auto, None)) {
        Err(OffloadError::Config(m)) => assert!(m.contains("model"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(cfg(Placement::Auto, None).validate(), Err(OffloadError::Config(_))));
}

#[test]
fn auto_with_a_model_that_lacks_the_kernel_is_a_config_error() {
    let mut p = profile(1e-9, 1e-9);
    p.kernels[0].name = "black_scholes".into();
    match Batcher::new(Saxpy { a: 2.0 }, &device(), cfg(Placement::Auto, Some(p))) {
        Err(OffloadError::Config(m)) => assert!(m.contains("saxpy"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn auto_picks_the_gpu_when_it_is_hugely_faster() {
    // Device: 0.1 ms launch + 2 ms transfers + 1 ns/item; CPU: 1 s/item.
    let p = profile(1e-9, 1.0);
    let b =
        Batcher::new(Saxpy { a: 2.0 }, &Device::simulated(p.clone()), cfg(Placement::Auto, Some(p))).unwrap();
    drive(&b, 64);
    let ds = b.decisions();
    assert!(!ds.is_empty());
    for d in &ds {
        assert_eq!(d.chose, Side::Gpu);
        assert!(d.predicted_gpu < d.predicted_cpu);
        assert!(d.measured >= d.predicted_gpu.mul_f64(0.99), "{d:?}"); // paced ≥ predicted
    }
    assert_eq!(b.stats().cpu_batches, 0);
    let r = b.report().to_string();
    assert!(r.contains("model error"), "{r}");
    assert!(r.contains("cost-model decisions"), "{r}");
}

#[test]
fn auto_picks_the_cpu_when_the_gpu_is_hugely_slower() {
    // Device: 1 s/item; CPU: 1 ns/item.
    let p = profile(1.0, 1e-9);
    let b =
        Batcher::new(Saxpy { a: 2.0 }, &Device::simulated(p.clone()), cfg(Placement::Auto, Some(p))).unwrap();
    drive(&b, 64);
    let ds = b.decisions();
    assert!(!ds.is_empty());
    for d in &ds {
        assert_eq!(d.chose, Side::Cpu);
        assert!(d.predicted_cpu < d.predicted_gpu);
        assert!(d.measured > Duration::ZERO);
        assert!(d.rel_error().is_some());
    }
    let s = b.stats();
    assert_eq!(
        (s.launches, s.cpu_batches, s.decisions, s.decisions_cpu),
        (0, s.batches, s.batches, s.batches)
    );
    let r = b.report();
    let e = r.model_error.expect("model error over the decisions");
    assert_eq!(e.count, ds.len());
    assert!(e.max >= e.median);
    assert!(r.to_string().contains("model error"));
}

/// A kernel (y = x + 1) that records which threads ran its chunks.
struct Where(std::sync::Mutex<std::collections::HashSet<String>>);

impl gmprt_offload::Job for Where {
    fn name(&self) -> &'static str {
        "where"
    }
    fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
        let name = std::thread::current().name().unwrap_or("?").to_string();
        self.0.lock().unwrap().insert(name);
        for i in 0..n {
            output[i] = input[i] + 1;
        }
        Ok(())
    }
}

impl gmprt_offload::cuda::CudaJob for Where {
    fn launch_cuda(&self, _: &mut gmprt_offload::cuda::LaunchCtx<'_>, _: usize) -> Result<(), OffloadError> {
        Err(OffloadError::Config("no CUDA version".into()))
    }
}

impl gmprt_offload::BatchKernel for Where {
    type Item = u32;
    type Output = u32;
    fn in_words(&self) -> usize {
        1
    }
    fn out_words(&self) -> usize {
        1
    }
    fn validate(&self, _: &u32, _: usize) -> Result<(), OffloadError> {
        Ok(())
    }
    fn stage(&self, items: &[u32], input: &mut [u32]) {
        input.copy_from_slice(items);
    }
    fn gather(&self, _n: usize, output: &[u32], i: usize) -> u32 {
        output[i]
    }
}

#[test]
fn cpu_placement_runs_on_the_runtimes_ps() {
    // A Batcher made inside a runtime runs CPU batches as chunks on that runtime's Ps (its Ms
    // are named "pm-<i>"), never on the slot's worker thread, and keeps the items' order.
    let rt = Runtime::builder().procs(2).thread_name("pm").build().unwrap();
    let n = 4096u32;
    let (b, ys) = rt.block_on(async move {
        let cfg = BatcherConfig { max_batch: 1024, max_delay: Duration::ZERO, ..cfg(Placement::Cpu, None) };
        let b = Batcher::new(Where(Default::default()), &Device::host(), cfg).unwrap();
        let hs: Vec<_> = (0..n)
            .map(|i| {
                let b = b.clone();
                spawn(async move { b.submit(i).await })
            })
            .collect();
        let mut ys = Vec::new();
        for h in hs {
            ys.push(h.await.unwrap().unwrap());
        }
        (b, ys)
    });
    assert!(ys.iter().enumerate().all(|(i, &y)| y == i as u32 + 1), "results out of order");
    let threads = b.kernel().0.lock().unwrap().clone();
    assert!(!threads.is_empty() && threads.iter().all(|t| t.starts_with("pm-")), "chunks ran on {threads:?}");
    assert_eq!(b.stats().launches, 0);
}
