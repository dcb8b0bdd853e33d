//! Building a Batcher: the config and memory checks, the slots (kits) and the worker threads
//! (see "Memory" and "Thread model" in the parent module).
use super::*;

/// An empty item `Vec` with room for `max_batch` items, or `Err(Config)` naming its bytes
/// and the memory available when the allocator refuses (never an abort).
fn item_queue<I>(max_batch: usize) -> Result<Vec<I>, OffloadError> {
    let mut v = Vec::new();
    v.try_reserve_exact(max_batch).map_err(|e| {
        OffloadError::Config(format!(
            "cannot allocate an item queue of {max_batch} items × {} B ({e}); {}; lower max_batch or in_flight",
            std::mem::size_of::<I>(),
            host_available()
        ))
    })?;
    Ok(v)
}

/// A device of the Batcher being built: the device, the backend its slots come from, and its
/// model (several devices only).
pub(super) type Member<'a> = (&'a Device, &'a dyn crate::Backend, Option<Arc<crate::model::CostModel>>);

impl<K: BatchKernel> Batcher<K> {
    /// A Batcher of `kernel` on `device`: checks `config`, creates `in_flight` slots with room
    /// for `max_batch` items each, and starts one worker thread per slot.
    ///
    /// `Err(Config)` for an out-of-range config, a kernel with zero words per item, a slot
    /// too large, a configuration whose memory does not fit (checked before anything is
    /// allocated: the message names the bytes needed, how they are made up, and the bytes
    /// available; see "Memory" in the module docs), an allocation refused, or a thread that
    /// cannot start; the backend's error if a slot cannot be made.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::{Batcher, BatcherConfig, Device, Saxpy, SmallSgemm};
    ///
    /// let b = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), BatcherConfig::default()).unwrap();
    /// assert_eq!(b.device().kind_name(), "host");
    /// // Refused before anything is allocated: a config out of range...
    /// let cfg = BatcherConfig { in_flight: 0, ..BatcherConfig::default() };
    /// let e = Batcher::new(Saxpy { a: 1.0 }, &Device::host(), cfg).unwrap_err();
    /// assert!(e.to_string().contains("in_flight must be in 1..=64"), "{e}");
    /// // ...or a kernel with no words per item.
    /// let e = Batcher::new(SmallSgemm { m: 0, n: 0, k: 0 }, &Device::host(), BatcherConfig::default());
    /// let e = e.unwrap_err().to_string();
    /// assert!(e.contains("kernel sgemm_batched has 0 input and 0 output words per item"), "{e}");
    /// ```
    pub fn new(kernel: K, device: &Device, config: BatcherConfig) -> Result<Batcher<K>, OffloadError> {
        Self::with_backend(kernel, device, device.backend(), config)
    }

    /// One Batcher over several devices: `in_flight` kits (slots and workers) on each of
    /// `devices`, and each batch closes into the device its model predicts finishes it first,
    /// counting the work each already has (the `spread` module's list scheduling: idle devices
    /// give the fastest; under load each gets batches in proportion to its speed). Everything
    /// else — admission, placement on the CPU, scatter, shutdown draining every device — is
    /// [`Batcher::new`]'s. One device is [`Batcher::new`] on it (its model then serves
    /// [`Placement::Auto`] when `config.model` is `None`).
    ///
    /// `Err(Config)` for no devices, more than [`IN_FLIGHT_LIMIT`] kits in all, a model that
    /// cannot price `kernel`, and everything [`Batcher::new`] refuses, naming the device.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// use gmprt_offload::runtime::Runtime;
    /// use gmprt_offload::{Batcher, BatcherConfig, PricedDevice, Saxpy};
    ///
    /// let rt = Runtime::builder().procs(2).build().unwrap();
    /// let devices = [
    ///     PricedDevice::simulated(DeviceProfile::published_h200()),
    ///     PricedDevice::simulated(DeviceProfile::published_h100()),
    /// ];
    /// let b = Batcher::spread(Saxpy { a: 2.0 }, &devices, BatcherConfig::default()).unwrap();
    /// let ys = rt.block_on(b.submit_many(vec![(1.0, 1.0); 5000])).unwrap();
    /// assert!(ys.iter().all(|&y| y == 3.0));
    /// let shares = b.shares();
    /// assert_eq!(shares.iter().map(|s| s.items).sum::<u64>(), 5000);
    /// assert!(Batcher::spread(Saxpy { a: 2.0 }, &[], BatcherConfig::default()).is_err());
    /// ```
    pub fn spread(
        kernel: K,
        devices: &[PricedDevice],
        config: BatcherConfig,
    ) -> Result<Batcher<K>, OffloadError> {
        match devices {
            [] => Err(OffloadError::Config("Batcher::spread needs at least one device".into())),
            [one] => {
                let config =
                    BatcherConfig { model: config.model.or_else(|| Some(one.model.clone())), ..config };
                Self::new(kernel, &one.device, config)
            }
            many => {
                let members: Vec<Member<'_>> =
                    many.iter().map(|m| (&m.device, m.device.backend(), Some(m.model.clone()))).collect();
                Self::build(kernel, &members, config)
            }
        }
    }

    /// As [`Batcher::new`], with the slots (and the memory check) from `backend` instead of
    /// `device`'s own; `device` still names the device in reports and timelines. For tests
    /// that watch what the Batcher does with its slots.
    pub(crate) fn with_backend(
        kernel: K,
        device: &Device,
        backend: &dyn crate::Backend,
        config: BatcherConfig,
    ) -> Result<Batcher<K>, OffloadError> {
        Self::build(kernel, &[(device, backend, None)], config)
    }

    /// The one constructor body: `in_flight` kits on each member (device, the backend its slots
    /// come from, and its model when there are several).
    fn build(kernel: K, members: &[Member<'_>], config: BatcherConfig) -> Result<Batcher<K>, OffloadError> {
        debug_assert!(!members.is_empty());
        // Several devices: `Placement::Auto` prices with each kit's own model, so the first
        // device's stands in for `config.model` in the check that Auto has one.
        let mut checked = config.clone();
        if members.len() > 1 && checked.model.is_none() {
            checked.model = members[0].2.clone();
        }
        checked.validate()?;
        let kit_count = config.in_flight * members.len();
        if kit_count > IN_FLIGHT_LIMIT {
            return Err(OffloadError::Config(format!(
                "in_flight {} on each of {} devices is {kit_count} slots; at most {IN_FLIGHT_LIMIT} in all",
                config.in_flight,
                members.len()
            )));
        }
        let (iw, ow) = (kernel.in_words(), kernel.out_words());
        if iw == 0 || ow == 0 {
            return Err(OffloadError::Config(format!(
                "kernel {} has {iw} input and {ow} output words per item; both must be > 0",
                kernel.name()
            )));
        }
        if let (Placement::Auto, Some(model)) = (config.placement, &config.model) {
            placement::check_model(model, kernel.name())?;
        }
        let spread = match members.len() {
            1 => None,
            _ => Some(spread::Spread::new(members, kernel.name())?),
        };
        let slot_words = |per: usize, what: &str| {
            match config.max_batch.checked_mul(per) {
            Some(w) if w <= SLOT_WORDS_LIMIT => Ok(w),
            _ => Err(OffloadError::Config(format!(
                "max_batch {} x {per} {what} words per item of {} exceeds the {SLOT_WORDS_LIMIT}-word slot limit; \
                 lower max_batch",
                config.max_batch,
                kernel.name()
            ))),
        }
        };
        let (in_words, out_words) = (slot_words(iw, "input")?, slot_words(ow, "output")?);
        // One lane per P of the runtime that will submit (the configured one, else the
        // caller's, else one per CPU), plus one for everyone else (see the `stage` module).
        let procs = config
            .runtime
            .as_ref()
            .map(|h| h.procs())
            .or_else(|| gmprt_runtime::Handle::try_current().map(|h| h.procs()))
            .unwrap_or_else(crate::pool::host_threads);
        let lanes = procs + 1;
        // Memory, all of it, before any of it is allocated (see "Memory" in the module docs):
        // each device's slots against the memory they live in; the lanes' queues counted with
        // the first device.
        let who = |device: &Device| {
            format!(
                "Batcher of {} (max_batch {}, in_flight {}) on {}",
                kernel.name(),
                config.max_batch,
                config.in_flight,
                device.describe()
            )
        };
        let context = |device: &Device, e: OffloadError| match e {
            OffloadError::Config(m) => OffloadError::Config(format!("{}: {m}", who(device))),
            e => e,
        };
        for (d, (device, backend, _)) in members.iter().enumerate() {
            let need = MemoryNeed {
                slots: config.in_flight,
                items: config.max_batch,
                in_words: iw,
                out_words: ow,
                queues: config.in_flight + if d == 0 { lanes } else { 0 },
                item_bytes: std::mem::size_of::<K::Item>() + std::mem::size_of::<Entry<K::Output>>(),
            };
            backend.check_memory(&need).map_err(|e| context(device, e))?;
        }
        let mut kits = Vec::with_capacity(kit_count);
        for (d, (device, backend, model)) in members.iter().enumerate() {
            for i in 0..config.in_flight {
                let spare = item_queue(config.max_batch).map_err(|e| context(device, e))?;
                let slot = backend.new_slot(in_words, out_words).map_err(|e| match e {
                    OffloadError::Config(m) => OffloadError::Config(format!(
                        "{}: slot {i} of {}: {m}",
                        who(device),
                        config.in_flight
                    )),
                    e => e,
                })?;
                kits.push(run::Kit {
                    index: kits.len(),
                    device: d,
                    model: model.clone(),
                    slot,
                    spare,
                    cpu: Default::default(),
                    inline_trace: None,
                    price: None,
                    late: None,
                });
            }
        }
        let cpu_rt = config.runtime.clone().or_else(gmprt_runtime::Handle::try_current);
        let trace = gmprt_runtime::trace::current().or_else(|| cpu_rt.as_ref()?.trace_recorder());
        let shared = Arc::new_cyclic(|me| Shared {
            me: me.clone(),
            stage: stage::Stage::new(lanes, config.max_batch),
            cpu_rt,
            kernel,
            devices: members.iter().map(|(d, _, _)| (*d).clone()).collect(),
            config: config.clone(),
            created: Instant::now(),
            central: Mutex::new(Central {
                waiters: VecDeque::new(),
                next_ticket: 0,
                opened: None,
                flush: false,
                flow: None,
                closer: closer::Closer::default(),
                kits_retired: false,
                spread,
                watching: 0,
                parked: 0,
                submit_wakes: 0,
            }),
            work: Condvar::new(),
            next_batch: AtomicU64::new(0),
            served: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
            rejected_invalid: AtomicU64::new(0),
            rejected_closed: AtomicU64::new(0),
            log: Mutex::new(TimelineLog::default()),
            item_latency: (0..kit_count).map(|_| Mutex::default()).collect(),
            workers: Mutex::new(Vec::with_capacity(kit_count)),
            trace,
            quiet: std::sync::atomic::AtomicBool::new(false),
            quiescence: Mutex::new(None),
            // Inline runs on a quiescent M need the one device's slots to compute on the
            // caller (the Host device); with several devices the spread chooses, on a worker.
            slots_run_on_caller: members.len() == 1 && members[0].1.runs_on_caller(),
            kits: Mutex::new(kits),
            kit_count,
            shares: members.iter().map(|_| Default::default()).collect(),
            quiescence_tried: std::sync::atomic::AtomicBool::new(false),
        });
        shared.register_quiescent();
        let owner = Arc::new(Owner { shared: shared.clone() });
        for index in 0..kit_count {
            let s = shared.clone();
            let spawned = std::thread::Builder::new()
                .name(trace::worker_name(index, s.kernel.name()))
                .spawn(move || s.worker(index));
            match spawned {
                Ok(handle) => shared.workers.lock().push(handle),
                Err(e) => {
                    // Dropping `owner` shuts the already started workers down and joins them.
                    return Err(OffloadError::Config(format!(
                        "cannot start batcher worker thread {index}: {e}"
                    )));
                }
            }
        }
        Ok(Batcher { owner })
    }
}
