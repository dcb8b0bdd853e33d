//! One Batcher over several devices ([`Batcher::spread`](super::Batcher::spread)): which device
//! runs each batch.
//!
//! A batch that leaves the host goes where the model predicts it *finishes* first, counting
//! what each device already has to do — the list scheduling of heterogeneous-computing
//! runtimes (StarPU's `dmda`, HEFT), with each device priced by its own [`CostModel`].
//!
//! # Protocol
//! Per device `d` the Batcher keeps `ready[d]`: when the work it was given is predicted to be
//! done, on the Batcher's clock (time since `new`). Under `central`, a worker about to close a
//! batch of `n` items at time `now` prices it on every device with that device's model and
//! data in host memory (the items are in host memory whichever device runs them, so each is
//! charged its own H2D and D2H link):
//!
//! * `start[d] = max(ready[d], now)` — a device with nothing queued starts now;
//! * `finish[d] = start[d] + latency[d](n)` — one batch's H2D + launch + kernel + D2H;
//! * it chooses `argmin finish` (ties to the lower index, the order the caller listed them):
//!   * **a lone batch** (not full, no submit waiting for room: nothing queued behind it) over
//!     every device. If the winner has no free kit, the worker waits for one (the batch stays
//!     open and may grow) and decides again when woken: a kit returns only on a worker's
//!     thread, and that worker takes again at once, so the batch is never stranded;
//!   * **under load** (the batch is full, or submits wait for room) over the devices with a
//!     free kit. Waiting for a faster device's kit would leave a free device idle while the
//!     queue behind grows: the choice is greedy per batch, and a device's backlog is capped
//!     at its `in_flight` kits, so a device more than twice as slow would never be chosen and
//!     the stream would run at the fast device's rate alone.
//! * Only when it takes the kit does it commit `ready[d] = start[d] + per_batch[d](n)`, where
//!   `per_batch` is the pipeline's steady-state time per batch with `in_flight` slots
//!   ([`CostModel::predict_pipeline`]): what the batch costs the device's engines once copies
//!   overlap kernels.
//! * A batch that ran longer than predicted moves `ready[d]` on by the difference (never
//!   back: a device that ran early simply starts its next batch at `now`), so a device slower
//!   than its model is given less, not a growing queue.
//!
//! What this gives: with the devices idle, each batch goes to the device that runs it soonest
//! (latency); under load, every device with a free kit works, and with kits to spare the
//! batches go in proportion to the devices' predicted speeds — two devices, one twice as
//! fast, get 2/3 and 1/3 of them (the list schedule; StarPU's `dmda`, HEFT); with kits the
//! limit, in proportion to how fast each returns its kits, which is its real speed.
//!
//! Why no item is lost or run twice: the choice only says *which* free kit a close takes;
//! closing, running and scattering are the Batcher's one protocol (parent module), the same
//! for one device or many. Kits of every device sit in the one free list; shutdown retires
//! them once all `in_flight × devices` are home.
use crate::model::{duration as secs, profile_kernel_name, CostModel, Residency};
use crate::{Device, OffloadError};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

/// One device of a Batcher spread over several ([`Batcher::spread`]): the device and the
/// model that prices a batch on it.
///
/// ```
/// use gmprt_offload::model::DeviceProfile;
/// use gmprt_offload::PricedDevice;
///
/// let p = PricedDevice::simulated(DeviceProfile::published_h100());
/// assert_eq!(p.device.kind_name(), "simulated");
/// assert_eq!(p.model.profile.device, "NVIDIA H100 SXM (published)");
/// ```
///
/// [`Batcher::spread`]: super::Batcher::spread
#[derive(Clone, Debug)]
pub struct PricedDevice {
    /// The device the batches run on.
    pub device: Device,
    /// Its cost model: its own profile (link, launch, kernels), calibrated on that device.
    pub model: Arc<CostModel>,
}

impl PricedDevice {
    /// `device` priced by `model`.
    pub fn new(device: Device, model: Arc<CostModel>) -> PricedDevice {
        PricedDevice { device, model }
    }

    /// A device simulated from `profile` ([`Device::simulated`]), priced by the same profile.
    pub fn simulated(profile: crate::model::DeviceProfile) -> PricedDevice {
        let model = Arc::new(CostModel::new(profile.clone()));
        PricedDevice { device: Device::simulated(profile), model }
    }
}

/// What one device of a Batcher ran ([`Batcher::shares`]): every batch that finished there,
/// counted before its futures resolve (as [`Batcher::stats`]).
///
/// [`Batcher::shares`]: super::Batcher::shares
/// [`Batcher::stats`]: super::Batcher::stats
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeviceShare {
    /// The device's [`Device::describe`].
    pub device: String,
    /// Batches that ran on its slots (the device or, placed on the CPU, beside it).
    pub batches: u64,
    /// Their items.
    pub items: u64,
    /// The device phases of those that ran on the device (H2D + kernel + D2H).
    pub device_time: Duration,
}

/// One device's counters behind [`DeviceShare`]: `Relaxed`, as they order nothing and are
/// read as a snapshot.
#[derive(Default)]
pub(super) struct ShareCounters {
    batches: AtomicU64,
    items: AtomicU64,
    device_ns: AtomicU64,
}

impl ShareCounters {
    /// A finished batch of `n` items that kept the device busy for `device_time`.
    pub(super) fn add(&self, n: usize, device_time: Duration) {
        self.batches.fetch_add(1, Relaxed);
        self.items.fetch_add(n as u64, Relaxed);
        self.device_ns.fetch_add(u64::try_from(device_time.as_nanos()).unwrap_or(u64::MAX), Relaxed);
    }

    /// The snapshot, named after `device`.
    pub(super) fn share(&self, device: &Device) -> DeviceShare {
        DeviceShare {
            device: device.describe(),
            batches: self.batches.load(Relaxed),
            items: self.items.load(Relaxed),
            device_time: Duration::from_nanos(self.device_ns.load(Relaxed)),
        }
    }
}

/// A batch of `n` priced on one device: its latency and its cost to the device's engines.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Price {
    pub(super) latency: Duration,
    pub(super) per_batch: Duration,
}

/// The per-device state of the choice (module doc), kept under `central`.
pub(super) struct Spread {
    models: Box<[Arc<CostModel>]>,
    /// `ready[d]`, as time since the Batcher's creation.
    ready: Box<[Duration]>,
    /// What the last [`Spread::choose`] priced, for the commit (and the timeline).
    priced: Vec<Price>,
    /// Which devices had a free kit at the last [`Spread::choose`] (kept to reuse its room).
    free: Vec<bool>,
}

impl Spread {
    /// The state for `members` (2 or more, each with its model), all idle. `Err(Config)` when
    /// a member has no model or its model cannot price `kernel` (checked once here, so a close
    /// never fails on it).
    pub(super) fn new(members: &[super::create::Member<'_>], kernel: &str) -> Result<Spread, OffloadError> {
        debug_assert!(members.len() >= 2, "one device needs no spread");
        let mut models = Vec::with_capacity(members.len());
        for (d, (device, _, model)) in members.iter().enumerate() {
            let in_spread = |e: String| {
                OffloadError::Config(format!("Batcher::spread: device {d} ({}): {e}", device.describe()))
            };
            let model = model.clone().ok_or_else(|| in_spread("no cost model to price it".into()))?;
            super::placement::check_model(&model, kernel).map_err(|e| in_spread(e.to_string()))?;
            models.push(model);
        }
        Ok(Spread {
            models: models.into(),
            ready: vec![Duration::ZERO; members.len()].into(),
            priced: Vec::with_capacity(members.len()),
            free: vec![false; members.len()],
        })
    }

    /// Under `central`, at `now` (time since creation): the device a batch of `n` items of
    /// `kernel` (`out_words` output words each) should close into, per the module doc, or
    /// `None` to wait for a kit of a busy device that finishes it sooner. `free_kits`: the
    /// devices of the free kits; `saturated`: more work waits behind this batch ("under load"
    /// in the module doc). A model that fails to price (each was checked at `new`) makes its
    /// device a last resort rather than failing the batch.
    pub(super) fn choose(
        &mut self,
        kernel: &str,
        (n, out_words, in_flight): (usize, usize, usize),
        now: Duration,
        free_kits: impl Iterator<Item = usize>,
        saturated: bool,
    ) -> Option<usize> {
        self.free.fill(false);
        for d in free_kits {
            self.free[d] = true;
        }
        self.priced.clear();
        for model in self.models.iter() {
            self.priced.push(
                price(model, kernel, n, out_words, in_flight)
                    .unwrap_or(Price { latency: Duration::MAX, per_batch: Duration::MAX }),
            );
        }
        decide(&self.ready, &self.priced, now, &self.free, saturated)
    }

    /// Under `central`: the batch priced by the last [`Spread::choose`] closed into a kit of
    /// device `d` at `now`; its work is added to `d`'s queue. Returns the batch's price there.
    pub(super) fn commit(&mut self, d: usize, now: Duration) -> Price {
        let p = self.priced[d];
        self.ready[d] = self.ready[d].max(now).saturating_add(p.per_batch);
        p
    }

    /// A batch on device `d` ran `late` longer than its predicted latency: `ready[d]` moves on
    /// by as much (module doc).
    pub(super) fn ran_late(&mut self, d: usize, late: Duration) {
        self.ready[d] = self.ready[d].saturating_add(late);
    }
}

/// A batch of `n` items of `kernel` on the device `model` describes, its data in host memory.
fn price(
    model: &CostModel,
    kernel: &str,
    n: usize,
    out_words: usize,
    in_flight: usize,
) -> Result<Price, OffloadError> {
    let size = super::placement::model_size(model, kernel, n, out_words);
    let p = model.predict_pipeline(profile_kernel_name(kernel), size, in_flight.max(1), Residency::Host)?;
    Ok(Price { latency: secs(p.latency), per_batch: secs(p.per_batch) })
}

/// The rule (module doc), a pure function so the split it gives is checked exactly: the
/// earliest finish `max(ready[d], now) + latency[d]`, ties to the lower index — over every
/// device when the batch is all there is (`None` when that device has no free kit: wait for
/// it), over the devices with a free kit when work is queued behind it (`None` only when none
/// has one).
pub(super) fn decide(
    ready: &[Duration],
    priced: &[Price],
    now: Duration,
    free: &[bool],
    saturated: bool,
) -> Option<usize> {
    debug_assert!(ready.len() == priced.len() && free.len() == priced.len());
    let finish = |d: usize| ready[d].max(now).saturating_add(priced[d].latency);
    let best = (0..ready.len()).filter(|&d| free[d] || !saturated).min_by_key(|&d| (finish(d), d))?;
    free[best].then_some(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    const BOTH: [bool; 2] = [true, true];

    /// The list schedule: batches closing with every device free, one device priced twice as
    /// fast as the other, get two batches there for each one on the slow device; with the
    /// devices idle, every batch goes to the fast one.
    #[test]
    fn list_schedule_splits_by_speed_and_prefers_the_fast_device_when_idle() {
        let priced =
            [Price { latency: ms(10), per_batch: ms(10) }, Price { latency: ms(20), per_batch: ms(20) }];
        let mut ready = [Duration::ZERO; 2];
        let mut got = [0usize; 2];
        for _ in 0..300 {
            let d = decide(&ready, &priced, Duration::ZERO, &BOTH, true).unwrap();
            ready[d] += priced[d].per_batch;
            got[d] += 1;
        }
        assert_eq!(got, [200, 100]);
        let now = ms(10_000);
        assert_eq!(decide(&ready, &priced, now, &BOTH, false), Some(0));
        // The fast device busy for 15 ms more: 25 ms there against 20 ms on the slow one.
        assert_eq!(decide(&[now + ms(15), now], &priced, now, &BOTH, false), Some(1));
        // Busy for 5 ms: waiting for it (15 ms) beats the idle slow device (20 ms).
        assert_eq!(decide(&[now + ms(5), now], &priced, now, &BOTH, false), Some(0));
        // Ties go to the lower index.
        assert_eq!(decide(&[now + ms(10), now], &priced, now, &BOTH, false), Some(0));
    }

    /// A batch that is all there is waits for a faster device with no free kit; one with work
    /// queued behind it takes the free device (waiting would idle it while the queue grows),
    /// and waits only when no device has a free kit.
    #[test]
    fn a_lone_batch_waits_for_the_faster_device_a_queued_one_does_not() {
        let priced =
            [Price { latency: ms(10), per_batch: ms(5) }, Price { latency: ms(20), per_batch: ms(10) }];
        let now = ms(100);
        let fast_busy = [false, true];
        assert_eq!(decide(&[now + ms(5), now], &priced, now, &fast_busy, false), None);
        assert_eq!(decide(&[now + ms(5), now], &priced, now, &fast_busy, true), Some(1));
        assert_eq!(decide(&[now, now], &priced, now, &[false, false], true), None);
        assert_eq!(decide(&[now, now], &priced, now, &[false, false], false), None);
        // Free and faster: taken either way.
        assert_eq!(decide(&[now, now], &priced, now, &BOTH, true), Some(0));
    }
}
