//! [`Device`]: where offloaded work runs — a CUDA GPU through cudarc, the Host stand-in
//! ([`HostBackend`]) that plays the same pipeline on the CPU, or a GPU simulated from a
//! [`DeviceProfile`] ([`SimBackend`]: CPU compute, each phase paced to the profile's
//! prediction; see [`crate::sim`]).
//!
//! `GMPRT_DEVICE=simulated` chooses the simulated device with the H200 profile measured on the
//! first GPU run ([`DeviceProfile::measured_h200`]), or with the JSON profile at `GMPRT_PROFILE=path` when
//! that variable is set (an error naming the path if it cannot be loaded).
//!
//! Choosing ([`Device::detect`]): `GMPRT_DEVICE=host` forces Host, `GMPRT_DEVICE=cuda` forces
//! CUDA (an error if there is none), unset/empty/`auto` takes CUDA when
//! [`probe`](crate::cuda::probe) succeeds and the backend opens, else Host with the reason
//! kept ([`Device::reason`]) and shown by [`Device::describe`]. No GPU is never an error unless
//! one was demanded. Nothing here panics: a panic inside the CUDA probe or backend
//! constructor is caught and becomes the Host device's reason.
//!
//! The bulk helpers ([`Device::run_bulk`], [`Device::sgemm`], [`Device::pi_hits`],
//! [`Device::option_paths_sum`]) are one-shot calls for examples that time a whole problem
//! on the device; the [`Batcher`](crate::Batcher) is the path for many small submits.
use crate::backend::Backend;
use crate::cuda::{CudaBackend, FirstUse, SyncMode};
use crate::error::OffloadError;
use crate::host::HostBackend;
use crate::model::DeviceProfile;
use crate::pool::HostPool;
use crate::sim::SimBackend;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

mod bulk;
pub(crate) use bulk::paths_batch_shape;

/// The environment variable that forces a device: `host`, `cuda`, `simulated` or `auto`
/// (unset or empty: `auto`). Read by [`Device::detect`] (whose example sets it); its values
/// are those of [`Device::from_choice`].
pub const DEVICE_ENV: &str = "GMPRT_DEVICE";
/// With `GMPRT_DEVICE=simulated`: the path of a JSON [`DeviceProfile`] to simulate (default:
/// [`DeviceProfile::measured_h200`], measured on an H200).
///
/// ```
/// use gmprt_offload::model::DeviceProfile;
/// use gmprt_offload::{Device, DeviceKind, PROFILE_ENV};
///
/// // A profile saved to a file, then simulated through GMPRT_PROFILE.
/// let path = std::env::temp_dir().join(format!("gmprt-doc-profile-{}.json", std::process::id()));
/// let mut profile = DeviceProfile::published_h200();
/// profile.device = "my GPU".into();
/// profile.save(&path).unwrap();
/// // SAFETY (both blocks): a doctest runs in its own process, and no thread runs in this one
/// // (a simulated device starts none).
/// unsafe { std::env::set_var(PROFILE_ENV, &path) };
/// let d = Device::from_choice(Some("simulated")).unwrap();
/// std::fs::remove_file(&path).unwrap();
/// assert_eq!(d.kind(), DeviceKind::Simulated);
/// assert!(d.describe().starts_with("simulated from my GPU"), "{}", d.describe());
///
/// // A profile that cannot be loaded is an error naming the path, not a silent default.
/// unsafe { std::env::set_var(PROFILE_ENV, "/no/such/profile.json") };
/// let e = Device::from_choice(Some("simulated")).unwrap_err().to_string();
/// assert!(e.contains("GMPRT_PROFILE=/no/such/profile.json"), "{e}");
/// ```
pub const PROFILE_ENV: &str = "GMPRT_PROFILE";

/// Which kind of device a [`Device`] is.
///
/// ```
/// use gmprt_offload::model::DeviceProfile;
/// use gmprt_offload::{Device, DeviceKind};
///
/// assert_eq!(Device::host().kind(), DeviceKind::Host);
/// assert_eq!(Device::simulated(DeviceProfile::published_h100()).kind(), DeviceKind::Simulated);
/// // Displayed and serialised as `GMPRT_DEVICE` spells it.
/// assert_eq!(DeviceKind::Cuda.to_string(), "cuda");
/// assert_eq!(serde_json::to_string(&DeviceKind::Simulated).unwrap(), r#""simulated""#);
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    /// The CPU standing in for a GPU ([`HostBackend`]).
    Host,
    /// A CUDA GPU ([`CudaBackend`]).
    Cuda,
    /// A GPU simulated from a profile ([`SimBackend`]): CPU compute, profile-paced phases.
    Simulated,
}

impl DeviceKind {
    /// `"host"`, `"cuda"` or `"simulated"`, as `GMPRT_DEVICE` spells it.
    ///
    /// ```
    /// use gmprt_offload::{Device, DeviceKind};
    ///
    /// assert_eq!(DeviceKind::Cuda.name(), "cuda");
    /// // The name chooses that kind again.
    /// for kind in [DeviceKind::Host, DeviceKind::Simulated] {
    ///     assert_eq!(Device::from_choice(Some(kind.name())).unwrap().kind(), kind);
    /// }
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Host => "host",
            DeviceKind::Cuda => "cuda",
            DeviceKind::Simulated => "simulated",
        }
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

enum Inner {
    Host(HostBackend),
    Cuda(CudaBackend),
    Sim(Box<SimBackend>),
}

/// A device to offload to. Cheap to clone (an `Arc` inside); every clone is the same device.
///
/// ```
/// use gmprt_offload::{Device, DeviceKind};
///
/// // As the examples choose: `GMPRT_DEVICE`, else CUDA when a GPU opens, else Host.
/// let device = Device::detect().unwrap();
/// println!("offloading to {}", device.describe());
/// // Only a Host device says why it stands in for a GPU.
/// assert_eq!(device.reason().is_some(), device.kind() == DeviceKind::Host);
/// let same = device.clone();
/// assert_eq!((same.kind(), same.describe()), (device.kind(), device.describe()));
/// ```
#[derive(Clone)]
pub struct Device {
    inner: Arc<Inner>,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device").field("kind", &self.kind()).field("describe", &self.describe()).finish()
    }
}

/// Runs `f`, turning a panic into `Err` with the panic's message (for the CUDA probe and
/// constructor, which must not take the process down when a driver misbehaves).
fn no_panic<T>(what: &str, f: impl FnOnce() -> Result<T, OffloadError>) -> Result<T, OffloadError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(OffloadError::NoDevice { reason: format!("{what} panicked: {}", panic_message(&*p)) }),
    }
}

/// The message of a caught panic payload.
pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

impl Device {
    /// Chooses the device from `GMPRT_DEVICE` (see the module docs): `Ok(Cuda)`, `Ok(Host)`
    /// or a simulated GPU (`simulated`), unless CUDA was forced and is missing
    /// (`Err(NoDevice)`), or the variable holds something else than `host`, `cuda`,
    /// `simulated`, `auto` or nothing (`Err(Config)`).
    ///
    /// ```
    /// use gmprt_offload::device::DEVICE_ENV;
    /// use gmprt_offload::{Device, DeviceKind};
    ///
    /// // SAFETY (both blocks): a doctest runs in its own process, and no thread runs in this
    /// // one (a Host device starts none).
    /// unsafe { std::env::set_var(DEVICE_ENV, "host") };
    /// let d = Device::detect().unwrap();
    /// assert_eq!((d.kind(), d.reason()), (DeviceKind::Host, Some("GMPRT_DEVICE=host")));
    ///
    /// unsafe { std::env::set_var(DEVICE_ENV, "tpu") };
    /// let e = Device::detect().unwrap_err().to_string();
    /// assert!(e.contains("must be `host`, `cuda`, `simulated` or `auto`") && e.contains("`tpu`"), "{e}");
    /// ```
    pub fn detect() -> Result<Device, OffloadError> {
        match std::env::var(DEVICE_ENV) {
            Ok(v) => Device::from_choice(Some(&v)),
            Err(std::env::VarError::NotPresent) => Device::from_choice(None),
            Err(std::env::VarError::NotUnicode(v)) => Err(OffloadError::Config(format!(
                "{DEVICE_ENV} must be `host`, `cuda`, `simulated` or `auto` (unset means auto); got a non-UTF-8 value {v:?}"
            ))),
        }
    }

    /// As [`Device::detect`] with the value of `GMPRT_DEVICE` given: `None`, `""` or `"auto"`
    /// detect, `"host"` forces Host, `"cuda"` forces CUDA device 0, `"simulated"` simulates
    /// the profile at `GMPRT_PROFILE` (a JSON file; `Err` naming the path if it cannot be
    /// loaded) or else the H200 measured on the first GPU run (case and surrounding spaces
    /// ignored). Anything
    /// else is `Err(Config)` naming the accepted values.
    ///
    /// Where CUDA may be chosen (`auto`, `cuda`), `GMPRT_CUDA_SYNC` is validated first: a bad
    /// value is `Err(Config)` on every machine, GPU or not, rather than a silent Host.
    ///
    /// ```
    /// use gmprt_offload::{Device, DeviceKind, OffloadError, PROFILE_ENV};
    ///
    /// assert_eq!(Device::from_choice(Some(" Host ")).unwrap().kind(), DeviceKind::Host);
    /// // Without GMPRT_PROFILE, `simulated` is the H200 measured on the first GPU run.
    /// // SAFETY: a doctest runs in its own process, and no thread runs in this one yet (Host
    /// // devices start none; `auto` below comes after).
    /// unsafe { std::env::remove_var(PROFILE_ENV) };
    /// let sim = Device::from_choice(Some("simulated")).unwrap();
    /// assert!(sim.describe().starts_with("simulated from NVIDIA H200"), "{}", sim.describe());
    /// // `auto` with no usable GPU is Host with the reason, never an error.
    /// let auto = Device::from_choice(Some("auto")).unwrap();
    /// match auto.kind() {
    ///     DeviceKind::Cuda => assert_eq!(auto.reason(), None),
    ///     _ => assert!(auto.reason().unwrap().starts_with("no CUDA: "), "{auto:?}"),
    /// }
    /// let e = Device::from_choice(Some("gpu")).unwrap_err();
    /// assert!(matches!(&e, OffloadError::Config(m) if m.contains("got `gpu`")), "{e}");
    /// ```
    pub fn from_choice(choice: Option<&str>) -> Result<Device, OffloadError> {
        let choice = choice.map(|c| c.trim().to_ascii_lowercase());
        match choice.as_deref() {
            None | Some("") | Some("auto") => {
                SyncMode::from_env()?;
                Ok(Device::auto())
            }
            Some("host") => Ok(Device::host_because(Some(format!("{DEVICE_ENV}=host")))),
            Some("cuda") => {
                SyncMode::from_env()?;
                Device::cuda(0)
            }
            Some("simulated") => match std::env::var_os(PROFILE_ENV) {
                Some(path) if !path.is_empty() => {
                    let path = std::path::PathBuf::from(path);
                    let profile = DeviceProfile::load(&path).map_err(|e| {
                        OffloadError::Config(format!(
                            "{DEVICE_ENV}=simulated: cannot load the profile {PROFILE_ENV}={}: {e}",
                            path.display()
                        ))
                    })?;
                    Ok(Device::simulated(profile))
                }
                _ => Ok(Device::simulated(DeviceProfile::measured_h200())),
            },
            Some(other) => Err(OffloadError::Config(format!(
                "{DEVICE_ENV} must be `host`, `cuda`, `simulated` or `auto` (unset means auto); got `{other}`"
            ))),
        }
    }

    /// CUDA device 0 if usable, else Host with the reason.
    fn auto() -> Device {
        match Device::cuda(0) {
            Ok(d) => d,
            Err(OffloadError::NoDevice { reason }) => {
                Device::host_because(Some(format!("no CUDA: {reason}")))
            }
            Err(e) => Device::host_because(Some(format!("no CUDA: {e}"))),
        }
    }

    /// The Host device, chosen by the caller (no reason recorded).
    ///
    /// ```
    /// use gmprt_offload::{Device, DeviceKind};
    ///
    /// let d = Device::host();
    /// assert_eq!((d.kind(), d.reason()), (DeviceKind::Host, None));
    /// let threads = gmprt_offload::pool::host_threads();
    /// assert_eq!(d.describe(), format!("host ({threads} threads)"));
    /// ```
    pub fn host() -> Device {
        Device::host_because(None)
    }

    /// The Host device with the reason it stands in for a GPU.
    ///
    /// ```
    /// use gmprt_offload::Device;
    ///
    /// let d = Device::host_because(Some("no GPU on this runner".into()));
    /// assert_eq!(d.reason(), Some("no GPU on this runner"));
    /// assert!(d.describe().ends_with(" threads; no GPU on this runner)"), "{}", d.describe());
    /// ```
    pub fn host_because(reason: Option<String>) -> Device {
        Device { inner: Arc::new(Inner::Host(HostBackend::new(reason))) }
    }

    /// A GPU simulated from `profile` (see [`crate::sim`]): computes on the CPU, paces every
    /// phase to the profile's prediction, and says `simulated from <profile label>` in
    /// [`Device::describe`].
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// use gmprt_offload::{Device, DeviceKind};
    ///
    /// let h200 = DeviceProfile::published_h200();
    /// let d = Device::simulated(h200.clone());
    /// assert_eq!((d.kind(), d.reason()), (DeviceKind::Simulated, None));
    /// assert!(d.describe().starts_with(&format!("simulated from {}", h200.label())));
    /// // It computes what the Host device computes; only the times are the profile's.
    /// let mut c = [0.0; 4];
    /// d.sgemm(2, 2, 2, &[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], &mut c).unwrap();
    /// assert_eq!(c, [19.0, 22.0, 43.0, 50.0]);
    /// ```
    pub fn simulated(profile: DeviceProfile) -> Device {
        Device { inner: Arc::new(Inner::Sim(Box::new(SimBackend::new(profile)))) }
    }

    /// The simulated backend, when this is a simulated device.
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// use gmprt_offload::Device;
    ///
    /// let d = Device::simulated(DeviceProfile::published_h100());
    /// assert_eq!(d.sim_backend().unwrap().profile().device, "NVIDIA H100 SXM (published)");
    /// assert!(Device::host().sim_backend().is_none());
    /// ```
    pub fn sim_backend(&self) -> Option<&SimBackend> {
        match &*self.inner {
            Inner::Sim(s) => Some(s),
            _ => None,
        }
    }

    /// CUDA device `ordinal`: [`probe`](crate::cuda::probe) then [`CudaBackend::new`].
    /// `Err(NoDevice)` with the reason when the probe fails; the backend's error when opening
    /// fails. Never panics.
    ///
    /// Runs with or without a GPU (without one, the error says why):
    /// ```
    /// use gmprt_offload::{Device, DeviceKind, OffloadError};
    ///
    /// match Device::cuda(0) {
    ///     Ok(gpu) => {
    ///         assert_eq!(gpu.kind(), DeviceKind::Cuda);
    ///         assert!(gpu.describe().starts_with("cuda:0 "), "{}", gpu.describe());
    ///     }
    ///     Err(OffloadError::NoDevice { reason }) => assert!(!reason.is_empty()),
    ///     Err(e) => panic!("a GPU is there but does not open: {e}"),
    /// }
    /// // A device past the last one is `NoDevice`, GPU or not.
    /// assert!(matches!(Device::cuda(1 << 20), Err(OffloadError::NoDevice { .. })));
    /// ```
    pub fn cuda(ordinal: usize) -> Result<Device, OffloadError> {
        no_panic("CUDA probe", || {
            crate::cuda::probe(ordinal).map_err(|reason| OffloadError::NoDevice { reason })
        })?;
        let backend = no_panic("opening the CUDA device", || CudaBackend::new(ordinal))?;
        Ok(Device { inner: Arc::new(Inner::Cuda(backend)) })
    }

    /// Host, Cuda or Simulated.
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// use gmprt_offload::{Device, DeviceKind};
    ///
    /// assert_eq!(Device::host().kind(), DeviceKind::Host);
    /// assert_eq!(Device::simulated(DeviceProfile::published_h100()).kind(), DeviceKind::Simulated);
    /// ```
    pub fn kind(&self) -> DeviceKind {
        match &*self.inner {
            Inner::Host(_) => DeviceKind::Host,
            Inner::Cuda(_) => DeviceKind::Cuda,
            Inner::Sim(_) => DeviceKind::Simulated,
        }
    }

    /// `"host"`, `"cuda"` or `"simulated"`: [`DeviceKind::name`] of [`Device::kind`].
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// use gmprt_offload::Device;
    ///
    /// assert_eq!(Device::host().kind_name(), "host");
    /// assert_eq!(Device::simulated(DeviceProfile::published_h100()).kind_name(), "simulated");
    /// ```
    pub fn kind_name(&self) -> &'static str {
        self.kind().name()
    }

    /// Why this is the Host device (e.g. `no CUDA: no libcuda.so`, `GMPRT_DEVICE=host`);
    /// `None` for CUDA, a simulated device, or a Host chosen with [`Device::host`].
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// use gmprt_offload::Device;
    ///
    /// assert_eq!(Device::from_choice(Some("host")).unwrap().reason(), Some("GMPRT_DEVICE=host"));
    /// assert_eq!(Device::host().reason(), None);
    /// assert_eq!(Device::simulated(DeviceProfile::published_h100()).reason(), None);
    /// ```
    pub fn reason(&self) -> Option<&str> {
        match &*self.inner {
            Inner::Host(h) => h.reason(),
            Inner::Cuda(_) | Inner::Sim(_) => None,
        }
    }

    /// One line naming the device, e.g. `host (2 threads; no CUDA: no libcuda.so)` or
    /// `cuda:0 NVIDIA H200 (...)`, or `simulated from <profile label> (...)`.
    ///
    /// ```
    /// use gmprt_offload::Device;
    ///
    /// let d = Device::host_because(Some("no CUDA: test".into()));
    /// let threads = gmprt_offload::pool::host_threads();
    /// assert_eq!(d.describe(), format!("host ({threads} threads; no CUDA: test)"));
    /// ```
    pub fn describe(&self) -> String {
        self.backend().describe()
    }

    /// The backend that makes slots.
    ///
    /// ```
    /// use gmprt_offload::backend::host_available;
    /// use gmprt_offload::{Backend, Device, MemoryNeed, Phases, Saxpy};
    ///
    /// let device = Device::host();
    /// let backend = device.backend();
    /// assert_eq!(backend.describe(), device.describe());
    /// // Memory is checked before slots are made: 2 slots of 1024 SAXPY items (2 words in, 1 out).
    /// let need = MemoryNeed { slots: 2, items: 1024, in_words: 2, out_words: 1, queues: 0, item_bytes: 0 };
    /// backend.check_memory(&need).unwrap();
    /// let mut slot = backend.new_slot(2 * 1024, 1024).unwrap();
    /// slot.staging_in()[..2].copy_from_slice(&[3.0f32.to_bits(), 1.0f32.to_bits()]);
    /// slot.run(&Saxpy { a: 2.0 }, 1, 2, 1, Phases::ALL).unwrap();
    /// assert_eq!(f32::from_bits(slot.staging_out()[0]), 7.0);
    /// // A need past the memory available is refused (when the OS says what is available).
    /// let huge = MemoryNeed { items: 1 << 50, ..need };
    /// assert_eq!(backend.check_memory(&huge).is_err(), host_available().bytes.is_ok());
    /// ```
    pub fn backend(&self) -> &dyn Backend {
        match &*self.inner {
            Inner::Host(h) => h,
            Inner::Cuda(c) => c,
            Inner::Sim(s) => &**s,
        }
    }

    /// The CUDA backend, when this is a CUDA device.
    ///
    /// ```
    /// use gmprt_offload::Device;
    ///
    /// assert!(Device::host().cuda_backend().is_none());
    /// // With a GPU:
    /// if let Ok(gpu) = Device::cuda(0) {
    ///     assert_eq!(gpu.cuda_backend().unwrap().ordinal(), 0);
    /// }
    /// ```
    pub fn cuda_backend(&self) -> Option<&CudaBackend> {
        match &*self.inner {
            Inner::Cuda(c) => Some(c),
            Inner::Host(_) | Inner::Sim(_) => None,
        }
    }

    /// Pays the device's first-use costs now, before anything is timed: on CUDA,
    /// [`CudaBackend::warm_up`] (every module compiled and loaded, the one-shot operations'
    /// cuBLAS handle created; each slot also warms itself when it is created, so a
    /// [`Batcher`](crate::Batcher), [`Device::run_bulk`] or a calibration never times a
    /// compile). Host and simulated devices start the [`HostPool`]'s threads (so the first
    /// bulk helper does not time their start) and report no costs: `Ok(None)`.
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// use gmprt_offload::Device;
    ///
    /// assert_eq!(Device::host().warm_up().unwrap(), None);
    /// assert_eq!(Device::simulated(DeviceProfile::published_h100()).warm_up().unwrap(), None);
    /// ```
    pub fn warm_up(&self) -> Result<Option<FirstUse>, OffloadError> {
        match &*self.inner {
            Inner::Cuda(c) => c.warm_up().map(Some),
            Inner::Host(_) | Inner::Sim(_) => {
                HostPool::global();
                Ok(None)
            }
        }
    }

    /// The first-use costs paid so far (NVRTC compile, module load, cuBLAS handles), on
    /// CUDA; `None` on Host and simulated devices.
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// use gmprt_offload::Device;
    ///
    /// assert_eq!(Device::host().first_use(), None);
    /// assert_eq!(Device::simulated(DeviceProfile::published_h100()).first_use(), None);
    /// ```
    pub fn first_use(&self) -> Option<FirstUse> {
        self.cuda_backend().map(CudaBackend::first_use)
    }
}

// A Device is shared by Batcher worker threads: it must be Send + Sync.
const _: fn() = || {
    fn is<T: Send + Sync>() {}
    is::<Device>();
};
