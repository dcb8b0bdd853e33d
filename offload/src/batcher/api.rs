//! The Batcher's public API after construction: submits, flush, shutdown, and what it reports
//! (occupancy, stats, timelines, the report).
use super::*;

impl<K: BatchKernel> Batcher<K> {
    pub(super) fn shared(&self) -> &Arc<Shared<K>> {
        &self.owner.shared
    }

    /// Submits one item; the future resolves to its output once its batch has run.
    ///
    /// The item is validated now (an invalid one resolves at once to `Err(Invalid)` or
    /// `Err(Kernel)` naming the field, and never enters a batch), and is accepted now if the
    /// open batch has room — so items are batched in the order `submit` was called. Otherwise
    /// (backpressure: the open batch is full and every slot busy) the future holds the item
    /// and waits its turn, without blocking the thread. After shutdown: `Err(Closed)`.
    /// Dropping the future after acceptance does not withdraw the item; its output is
    /// dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::runtime::Runtime;
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, OffloadError, Saxpy};
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), BatcherConfig::default()).unwrap();
    /// let (ok, bad) = rt.block_on(async { (b.submit((1.0, 2.0)).await, b.submit((f32::NAN, 2.0)).await) });
    /// assert_eq!(ok.unwrap(), 4.0);
    /// match bad {
    ///     Err(OffloadError::Invalid(e)) => assert_eq!(e.field, "x"), // never entered a batch
    ///     other => panic!("{other:?}"),
    /// }
    /// assert_eq!((b.stats().items, b.stats().rejected_invalid), (1, 1));
    /// ```
    pub fn submit(&self, item: K::Item) -> Submit<K> {
        let submitted = Instant::now();
        let shared = self.shared();
        if let Err(e) = shared.kernel.validate(&item, 0) {
            shared.rejected_invalid.fetch_add(1, Ordering::Relaxed);
            return Submit { state: SubmitState::Failed(Some(e)) };
        }
        let mut item = Some(item);
        let w = shared.stage.word();
        if !w.closed() && !w.has_room(1, shared.config.max_batch) {
            // No room now (the admission would refuse it): queue at the first poll without
            // touching the lane.
            return Submit {
                state: SubmitState::Waiting { shared: shared.clone(), item, ticket: None, submitted },
            };
        }
        match shared.enter_one(None, &mut item, submitted, false) {
            Ok((block, index)) => Submit { state: SubmitState::Accepted { block, index } },
            Err(EnterError::Refused(stage::Refused::Closed)) => {
                shared.rejected_closed.fetch_add(1, Ordering::Relaxed);
                Submit { state: SubmitState::Failed(Some(OffloadError::Closed)) }
            }
            Err(EnterError::Memory(e)) => Submit { state: SubmitState::Failed(Some(e)) },
            // Backpressure: the future queues for room on its first poll.
            Err(EnterError::Refused(stage::Refused::NoRoom)) => Submit {
                state: SubmitState::Waiting { shared: shared.clone(), item, ticket: None, submitted },
            },
        }
    }

    /// Submits a whole slice of items (a book of contracts) as one future: it resolves to
    /// every output in order once the last piece has run, or to the first error. The slice
    /// enters in as few pieces as room allows, each one entry with one wake (see
    /// [`SubmitMany`]); with `max_batch` at least the slice's length and a free Batcher, it is
    /// one piece in one batch. Every item is validated first (an invalid one fails the whole
    /// call, naming its index, before any enters).
    ///
    /// ```
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    ///
    /// let rt = gmprt_offload::runtime::Runtime::builder().procs(2).build().unwrap();
    /// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), BatcherConfig::default()).unwrap();
    /// let book: Vec<(f32, f32)> = (0..3000).map(|i| (i as f32, 1.0)).collect();
    /// let ys = rt.block_on(b.submit_many(book)).unwrap();
    /// assert_eq!(ys.len(), 3000);
    /// assert_eq!(ys[2999], 2.0 * 2999.0 + 1.0);
    /// ```
    pub fn submit_many(&self, items: Vec<K::Item>) -> SubmitMany<K> {
        SubmitMany::new(self.shared(), items)
    }

    /// Closes the open batch now (if it holds any item) instead of at its deadline. It runs
    /// as soon as a slot is free. Does not wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::runtime::Runtime;
    /// use gmprt_offload::{Batcher, BatcherConfig, CloseReason, Device, Saxpy};
    /// use std::time::Duration;
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let cfg = BatcherConfig { max_delay: Duration::from_secs(60), ..BatcherConfig::default() };
    /// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), cfg).unwrap();
    /// let y = b.submit((3.0, 1.0)); // in the open batch, which would wait 60 s for more
    /// b.flush();
    /// assert_eq!(rt.block_on(y).unwrap(), 7.0);
    /// assert_eq!(b.timelines()[0].closed_by, CloseReason::Flush);
    /// ```
    pub fn flush(&self) {
        let shared = self.shared();
        let mut c = shared.central.lock();
        if shared.stage.word().open() > 0 {
            c.flush = true;
            shared.work.notify_one();
        }
    }

    /// Stops accepting items: later submits (and submits still waiting for room) get
    /// `Err(Closed)`; every accepted item still runs and gets its result (the open batch is
    /// closed at once). Then waits for the slot workers: on return every worker thread has
    /// exited and every slot (with its buffers) is dropped — a wait bounded by the batches
    /// already accepted. On a runtime M the wait hands the P off (`syscall`); on a slot
    /// worker thread it does not wait (see "Shutdown waits for the workers" in the module
    /// docs). Idempotent. Dropping the last clone does the same.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::runtime::Runtime;
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, OffloadError, Saxpy};
    /// use std::time::Duration;
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let cfg = BatcherConfig { max_delay: Duration::from_secs(60), ..BatcherConfig::default() };
    /// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), cfg).unwrap();
    /// let accepted = b.submit((1.0, 1.0));
    /// b.shutdown(); // closes the open batch at once, runs it, joins the workers
    /// assert_eq!(b.stats().closed_shutdown, 1);
    /// assert_eq!(rt.block_on(accepted).unwrap(), 3.0); // accepted items still get their result
    /// assert_eq!(rt.block_on(b.submit((1.0, 1.0))), Err(OffloadError::Closed));
    /// b.shutdown(); // idempotent
    /// ```
    pub fn shutdown(&self) {
        self.shared().shutdown();
    }

    /// Whether [`shutdown`](Batcher::shutdown) has happened.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    ///
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), BatcherConfig::default()).unwrap();
    /// let b2 = b.clone();
    /// assert!(!b2.is_closed());
    /// b.shutdown(); // one clone shuts down them all
    /// assert!(b2.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.shared().stage.word().closed()
    }

    /// The kernel.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    ///
    /// let b = Batcher::new(Saxpy { a: 2.5 }, &Device::host(), BatcherConfig::default()).unwrap();
    /// assert_eq!(b.kernel(), &Saxpy { a: 2.5 });
    /// ```
    pub fn kernel(&self) -> &K {
        &self.shared().kernel
    }

    /// The device.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, DeviceKind, Saxpy};
    ///
    /// let sim = Device::simulated(DeviceProfile::published_h100());
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &sim, BatcherConfig::default()).unwrap();
    /// assert_eq!(b.device().kind(), DeviceKind::Simulated);
    /// assert_eq!(b.report().device, sim.describe());
    /// ```
    pub fn device(&self) -> &Device {
        &self.shared().devices[0]
    }

    /// Every device it runs on: the one of [`Batcher::new`], or those given to
    /// [`Batcher::spread`] in their order.
    ///
    /// ```
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    ///
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), BatcherConfig::default()).unwrap();
    /// assert_eq!(b.devices().len(), 1);
    /// assert_eq!(b.devices()[0].kind_name(), "host");
    /// ```
    pub fn devices(&self) -> &[Device] {
        &self.shared().devices
    }

    /// What each device ran, in [`Batcher::devices`] order: batches, items and device time.
    /// Once every submit has resolved, the items add up to `stats().items`.
    ///
    /// ```
    /// use gmprt_offload::runtime::Runtime;
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), BatcherConfig::default()).unwrap();
    /// rt.block_on(b.submit_many(vec![(1.0, 1.0); 100])).unwrap();
    /// let shares = b.shares();
    /// assert_eq!((shares.len(), shares[0].items), (1, 100));
    /// assert_eq!(shares[0].batches, b.stats().batches);
    /// ```
    pub fn shares(&self) -> Vec<DeviceShare> {
        let s = self.shared();
        s.shares.iter().zip(s.devices.iter()).map(|(c, d)| c.share(d)).collect()
    }

    /// The configuration as it was given to [`Batcher::new`] (a `runtime: None` stays `None`
    /// even when the Batcher picked up the caller's runtime for its CPU batches).
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    ///
    /// let cfg = BatcherConfig { max_batch: 64, in_flight: 1, ..BatcherConfig::default() };
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), cfg.clone()).unwrap();
    /// assert_eq!(b.config(), cfg);
    /// ```
    pub fn config(&self) -> BatcherConfig {
        self.shared().config.clone()
    }

    /// The cost model's decisions still in the timeline ring (`Placement::Auto` only), oldest
    /// first: both predictions, the side chosen and its measured time.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::model::{CostModel, DeviceProfile};
    /// use gmprt_offload::runtime::Runtime;
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Placement, Saxpy, Side};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let model = Arc::new(CostModel::new(DeviceProfile::published_h100()));
    /// let cfg = BatcherConfig {
    ///     placement: Placement::Auto,
    ///     model: Some(model),
    ///     max_delay: Duration::from_secs(60),
    ///     ..BatcherConfig::default()
    /// };
    /// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), cfg).unwrap();
    /// let y = b.submit((1.0, 1.0));
    /// b.flush();
    /// assert_eq!(rt.block_on(y).unwrap(), 3.0);
    /// // One item: tens of µs through PCIe and back against about 1 µs on one core.
    /// let d = b.decisions();
    /// assert_eq!(d.len(), 1);
    /// assert_eq!((d[0].n, d[0].chose), (1, Side::Cpu));
    /// assert!(d[0].predicted_cpu < d[0].predicted_gpu);
    /// ```
    pub fn decisions(&self) -> Vec<PlacementDecision> {
        self.shared().log.lock().timelines().iter().filter_map(|t| t.predicted).collect()
    }

    /// The current load.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    /// use std::time::Duration;
    ///
    /// let cfg = BatcherConfig { max_delay: Duration::from_secs(60), ..BatcherConfig::default() };
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), cfg).unwrap();
    /// let _y = b.submit((1.0, 1.0));
    /// let _z = b.submit((2.0, 1.0));
    /// let o = b.occupancy();
    /// assert_eq!((o.open_items, o.waiting, o.closed), (2, 0, false));
    /// b.shutdown(); // the open batch is taken and run
    /// let o = b.occupancy();
    /// assert_eq!((o.open_items, o.busy_slots, o.closed), (0, 0, true));
    /// ```
    pub fn occupancy(&self) -> Occupancy {
        let s = self.shared();
        let c = s.central.lock();
        let w = s.stage.word();
        Occupancy {
            open_items: w.open(),
            waiting: c.waiters.len(),
            reserved: w.reserved(),
            busy_slots: s.busy.load(Ordering::Relaxed),
            closed: w.closed(),
        }
    }

    /// Aggregates over every finished batch. A batch is counted before any of its futures
    /// resolves, so once every submit has resolved the stats include all of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::runtime::Runtime;
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let cfg = BatcherConfig { max_batch: 4, ..BatcherConfig::default() };
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), cfg).unwrap();
    /// rt.block_on(b.submit_many(vec![(1.0, 1.0); 10])).unwrap();
    /// let s = b.stats();
    /// assert_eq!((s.items, s.failed_items, s.failed_batches), (10, 0, 0));
    /// assert!(s.batches >= 3 && s.max_n <= 4);
    /// assert_eq!(s.launches, s.batches); // one launch per batch
    /// ```
    pub fn stats(&self) -> BatcherStats {
        self.shared().with_rejections(self.shared().log.lock().stats())
    }

    /// How many slot workers are parked with nothing open and no deadline to watch (they spun,
    /// then watched for `max_delay`, and nothing opened): the next batch to open wakes one.
    /// While a worker watches instead, opening a batch wakes nobody. A snapshot, for seeing
    /// what the Batcher's threads do (and for tests that must reach that state).
    ///
    /// ```
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    /// use std::time::Duration;
    ///
    /// let cfg = BatcherConfig { max_delay: Duration::from_millis(1), in_flight: 2, ..BatcherConfig::default() };
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), cfg).unwrap();
    /// while b.parked_workers() < 2 {
    ///     std::thread::yield_now(); // both idle workers park once their watch ends
    /// }
    /// b.shutdown();
    /// assert_eq!(b.parked_workers(), 0);
    /// ```
    pub fn parked_workers(&self) -> usize {
        self.shared().central.lock().parked
    }

    /// How many times a submit woke an idle slot worker: an admission that filled a batch, or
    /// that opened one while no worker watched an older batch's deadline (every idle worker
    /// parked: see [`Batcher::parked_workers`]). Each is a futex call on the submitting thread
    /// and another thread to schedule — the cost a server whose requests come more than
    /// `max_delay` apart pays per batch, even when its runtime closes the batch on quiescence.
    ///
    /// ```
    /// use gmprt_offload::runtime::{spawn, Runtime};
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    /// use std::time::Duration;
    ///
    /// let rt = Runtime::builder().procs(1).build().unwrap();
    /// let cfg = BatcherConfig { max_delay: Duration::from_millis(1), in_flight: 1, ..BatcherConfig::default() };
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), cfg).unwrap();
    /// while b.parked_workers() < 1 {
    ///     std::thread::yield_now(); // the idle worker parks once its watch ends
    /// }
    /// let b2 = b.clone();
    /// let y = rt.block_on(async move { spawn(async move { b2.submit((2.0, 1.0)).await }).await.unwrap() });
    /// assert_eq!(y.unwrap(), 3.0);
    /// assert_eq!(b.submit_wakes(), 1); // the batch's first item woke the parked worker
    /// b.shutdown();
    /// ```
    pub fn submit_wakes(&self) -> u64 {
        self.shared().central.lock().submit_wakes
    }

    /// The last (up to [`TIMELINE_CAPACITY`](crate::timeline::TIMELINE_CAPACITY)) batches'
    /// timelines, oldest first (in completion order).
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::runtime::Runtime;
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, DeviceKind, Saxpy};
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let cfg = BatcherConfig { max_batch: 4, ..BatcherConfig::default() };
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), cfg).unwrap();
    /// rt.block_on(b.submit_many(vec![(1.0, 1.0); 10])).unwrap();
    /// let ts = b.timelines();
    /// assert_eq!(ts.iter().map(|t| t.n).sum::<usize>(), 10);
    /// assert!(ts.iter().all(|t| t.ok && t.launched && t.n <= 4 && t.device == DeviceKind::Host));
    /// ```
    pub fn timelines(&self) -> Vec<BatchTimeline> {
        self.shared().log.lock().timelines()
    }

    /// A printable summary: per-phase median, p99 and totals, items per batch, launches,
    /// bytes moved, transfer vs kernel share, the device, and each item's submit → result
    /// latency split into queue wait and batch time (p50 / p99 / p99.9 / max over every item
    /// batched so far). Serialisable (`serde`) for machine-readable output.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::runtime::Runtime;
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy};
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), BatcherConfig::default()).unwrap();
    /// rt.block_on(b.submit_many(vec![(1.0, 1.0); 100])).unwrap();
    /// let r = b.report();
    /// assert_eq!((r.kernel, r.stats.items), ("saxpy", 100));
    /// assert_eq!(r.device, Device::host().describe());
    /// assert!(r.to_string().starts_with("batcher report: kernel saxpy on host ("));
    /// ```
    pub fn report(&self) -> Report {
        let s = self.shared();
        let names: Vec<String> = s.devices.iter().map(Device::describe).collect();
        let mut r = s.log.lock().report(s.kernel.name(), names.join(" + "));
        r.stats = s.with_rejections(r.stats);
        (r.latency, r.queue_wait, r.batch_time) = s.item_latency().summaries();
        r
    }
}

impl<K: BatchKernel> Shared<K> {
    /// Every slot's per-item latency merged.
    fn item_latency(&self) -> latency::ItemLatency {
        let mut all = latency::ItemLatency::default();
        for slot in self.item_latency.iter() {
            all.merge(&slot.lock());
        }
        all
    }

    /// `stats` with the refusal counters filled in.
    fn with_rejections(&self, mut stats: BatcherStats) -> BatcherStats {
        stats.rejected_invalid = self.rejected_invalid.load(Ordering::Relaxed);
        stats.rejected_closed = self.rejected_closed.load(Ordering::Relaxed);
        stats
    }
}
