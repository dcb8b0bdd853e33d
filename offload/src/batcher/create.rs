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

    /// As [`Batcher::new`], with the slots (and the memory check) from `backend` instead of
    /// `device`'s own; `device` still names the device in reports and timelines. For tests
    /// that watch what the Batcher does with its slots.
    pub(crate) fn with_backend(
        kernel: K,
        device: &Device,
        backend: &dyn crate::Backend,
        config: BatcherConfig,
    ) -> Result<Batcher<K>, OffloadError> {
        config.validate()?;
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
        // Memory, all of it, before any of it is allocated (see "Memory" in the module docs).
        let need = MemoryNeed {
            slots: config.in_flight,
            items: config.max_batch,
            in_words: iw,
            out_words: ow,
            queues: config.in_flight + lanes,
            item_bytes: std::mem::size_of::<K::Item>() + std::mem::size_of::<Entry<K::Output>>(),
        };
        let who = format!(
            "Batcher of {} (max_batch {}, in_flight {}) on {}",
            kernel.name(),
            config.max_batch,
            config.in_flight,
            device.describe()
        );
        let context = |e: OffloadError| match e {
            OffloadError::Config(m) => OffloadError::Config(format!("{who}: {m}")),
            e => e,
        };
        backend.check_memory(&need).map_err(context)?;
        let mut spares = Vec::with_capacity(config.in_flight);
        for _ in 0..config.in_flight {
            spares.push(item_queue(config.max_batch).map_err(context)?);
        }
        let mut slots = Vec::with_capacity(config.in_flight);
        for index in 0..config.in_flight {
            let slot = backend.new_slot(in_words, out_words).map_err(|e| match e {
                OffloadError::Config(m) => {
                    OffloadError::Config(format!("{who}: slot {index} of {}: {m}", config.in_flight))
                }
                e => e,
            })?;
            slots.push(slot);
        }
        let cpu_rt = config.runtime.clone().or_else(gmprt_runtime::Handle::try_current);
        let trace = gmprt_runtime::trace::current().or_else(|| cpu_rt.as_ref()?.trace_recorder());
        let shared = Arc::new_cyclic(|me| Shared {
            me: me.clone(),
            stage: stage::Stage::new(lanes, config.max_batch),
            cpu_rt,
            kernel,
            device: device.clone(),
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
            }),
            work: Condvar::new(),
            next_batch: AtomicU64::new(0),
            served: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
            rejected_invalid: AtomicU64::new(0),
            rejected_closed: AtomicU64::new(0),
            log: Mutex::new(TimelineLog::default()),
            item_latency: (0..config.in_flight).map(|_| Mutex::default()).collect(),
            workers: Mutex::new(Vec::with_capacity(config.in_flight)),
            trace,
            quiet: std::sync::atomic::AtomicBool::new(false),
            quiescence: Mutex::new(None),
            slots_run_on_caller: backend.runs_on_caller(),
            kits: Mutex::new(
                slots
                    .into_iter()
                    .zip(spares)
                    .enumerate()
                    .map(|(index, (slot, spare))| worker::Kit {
                        index,
                        slot,
                        spare,
                        cpu: Default::default(),
                        inline_trace: None,
                    })
                    .collect(),
            ),
            quiescence_tried: std::sync::atomic::AtomicBool::new(false),
        });
        shared.register_quiescent();
        let owner = Arc::new(Owner { shared: shared.clone() });
        for index in 0..config.in_flight {
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
