//! How the host waits for the GPU: the context's scheduling flag, a setting
//! (`GMPRT_CUDA_SYNC=spin|blocking|auto`, default `auto`).
//!
//! * `spin` (`CU_CTX_SCHED_SPIN`): a waiting thread polls the GPU — the lowest wake-up latency
//!   (a few µs less per synchronisation), one core busy for the whole wait;
//! * `blocking` (`CU_CTX_SCHED_BLOCKING_SYNC`): a waiting thread sleeps in the driver until
//!   an interrupt wakes it — its core is free for the runtime's workers, the wake-up costs
//!   some µs;
//! * `auto` (`CU_CTX_SCHED_AUTO`): the driver's heuristic (spin while there are fewer active
//!   contexts than cores, else yield).
//!
//! The flag belongs to the device's primary context: [`CudaBackend::new`](super::CudaBackend::new)
//! sets it with `cuDevicePrimaryCtxSetFlags` before retaining the context (cudarc 0.19's
//! `CudaContext::new` takes no flags), and [`CudaBackend::launch_costs`](super::CudaBackend::launch_costs)
//! switches it for its measurement with `cuCtxSetFlags` (CUDA ≥ 12.1) and restores it. The flag is
//! per device per process (the primary context is shared): a second backend opened on the
//! same device with another mode changes it for the first too, so open one mode per process. A
//! slot's end-of-run event follows the setting: `CU_EVENT_BLOCKING_SYNC` for `blocking` and
//! `auto` (the slot's worker thread sleeps — the behaviour before this setting existed), a
//! plain event for `spin` (the worker spins, per the context flag).
use crate::error::OffloadError;
use cudarc::driver::sys::CUctx_flags;

/// The environment variable holding the [`SyncMode`]: `spin`, `blocking` or `auto`.
///
/// # Examples
///
/// ```
/// use gmprt_offload::cuda::{SyncMode, SYNC_ENV};
///
/// assert_eq!(SYNC_ENV, "GMPRT_CUDA_SYNC");
/// // A bad value's error names the variable.
/// assert!(SyncMode::parse("fast").unwrap_err().to_string().contains(SYNC_ENV));
/// ```
pub const SYNC_ENV: &str = "GMPRT_CUDA_SYNC";

/// How a host thread waits for the GPU (see the module docs).
///
/// # Examples
///
/// ```
/// use gmprt_offload::SyncMode;
///
/// // Unset means the driver's heuristic.
/// assert_eq!(SyncMode::default(), SyncMode::Auto);
/// // Every mode reads back from its name and its context flag.
/// for mode in [SyncMode::Spin, SyncMode::Blocking, SyncMode::Auto] {
///     assert_eq!(SyncMode::parse(&mode.to_string()).unwrap(), mode);
///     assert_eq!(SyncMode::from_ctx_flags(mode.ctx_flags()), Some(mode));
/// }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SyncMode {
    /// Poll the GPU (`CU_CTX_SCHED_SPIN`).
    Spin,
    /// Sleep until woken (`CU_CTX_SCHED_BLOCKING_SYNC`).
    Blocking,
    /// The driver's heuristic (`CU_CTX_SCHED_AUTO`).
    #[default]
    Auto,
}

impl SyncMode {
    /// `"spin"`, `"blocking"` or `"auto"`, as `GMPRT_CUDA_SYNC` spells it.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::SyncMode;
    ///
    /// assert_eq!(SyncMode::Blocking.name(), "blocking");
    /// // `Display` writes the same name.
    /// assert_eq!(format!("sync {}", SyncMode::Spin), "sync spin");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            SyncMode::Spin => "spin",
            SyncMode::Blocking => "blocking",
            SyncMode::Auto => "auto",
        }
    }

    /// Parses a `GMPRT_CUDA_SYNC` value: `spin`, `blocking` (also `blocking_sync`, `block`),
    /// `auto` or empty (auto); case and surrounding spaces ignored. Anything else is
    /// `Err(Config)` naming the variable, the value and the accepted values.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::{OffloadError, SyncMode};
    ///
    /// assert_eq!(SyncMode::parse(" Blocking_Sync ").unwrap(), SyncMode::Blocking);
    /// assert_eq!(SyncMode::parse("").unwrap(), SyncMode::Auto);
    /// match SyncMode::parse("yield") {
    ///     Err(OffloadError::Config(m)) => {
    ///         assert!(m.starts_with("GMPRT_CUDA_SYNC must be `spin`, `blocking` or `auto`"), "{m}");
    ///         assert!(m.ends_with("got `yield`"), "{m}");
    ///     }
    ///     other => panic!("{other:?}"),
    /// }
    /// ```
    pub fn parse(value: &str) -> Result<SyncMode, OffloadError> {
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(SyncMode::Auto),
            "spin" => Ok(SyncMode::Spin),
            "blocking" | "blocking_sync" | "block" => Ok(SyncMode::Blocking),
            _ => Err(OffloadError::Config(format!(
                "{SYNC_ENV} must be `spin`, `blocking` or `auto` (unset means auto); got `{value}`"
            ))),
        }
    }

    /// The mode `GMPRT_CUDA_SYNC` asks for (unset: `auto`); `Err(Config)` on a bad value.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::cuda::{SyncMode, SYNC_ENV};
    ///
    /// // SAFETY (every block below): a doctest runs in its own process, and this one starts
    /// // no thread.
    /// unsafe { std::env::remove_var(SYNC_ENV) };
    /// assert_eq!(SyncMode::from_env().unwrap(), SyncMode::Auto);
    /// unsafe { std::env::set_var(SYNC_ENV, "SPIN") };
    /// assert_eq!(SyncMode::from_env().unwrap(), SyncMode::Spin);
    /// unsafe { std::env::set_var(SYNC_ENV, "sometimes") };
    /// assert!(SyncMode::from_env().unwrap_err().to_string().contains("got `sometimes`"));
    /// ```
    pub fn from_env() -> Result<SyncMode, OffloadError> {
        match std::env::var(SYNC_ENV) {
            Ok(v) => SyncMode::parse(&v),
            Err(std::env::VarError::NotPresent) => Ok(SyncMode::Auto),
            Err(std::env::VarError::NotUnicode(v)) => Err(OffloadError::Config(format!(
                "{SYNC_ENV} must be `spin`, `blocking` or `auto`; got a non-UTF-8 value {v:?}"
            ))),
        }
    }

    /// The context scheduling flag for this mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::SyncMode;
    ///
    /// // CUDA's CU_CTX_SCHED_AUTO, CU_CTX_SCHED_SPIN and CU_CTX_SCHED_BLOCKING_SYNC.
    /// assert_eq!(SyncMode::Auto.ctx_flags(), 0);
    /// assert_eq!(SyncMode::Spin.ctx_flags(), 1);
    /// assert_eq!(SyncMode::Blocking.ctx_flags(), 4);
    /// ```
    pub fn ctx_flags(self) -> u32 {
        match self {
            SyncMode::Spin => CUctx_flags::CU_CTX_SCHED_SPIN as u32,
            SyncMode::Blocking => CUctx_flags::CU_CTX_SCHED_BLOCKING_SYNC as u32,
            SyncMode::Auto => CUctx_flags::CU_CTX_SCHED_AUTO as u32,
        }
    }

    /// The mode of a context's flags (`cuCtxGetFlags`); `None` for `CU_CTX_SCHED_YIELD`.
    /// Bits outside the scheduling mask are ignored.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::SyncMode;
    ///
    /// assert_eq!(SyncMode::from_ctx_flags(4), Some(SyncMode::Blocking));
    /// // CU_CTX_MAP_HOST (0x08) beside the scheduling bits does not matter.
    /// assert_eq!(SyncMode::from_ctx_flags(0x08 | 1), Some(SyncMode::Spin));
    /// // CU_CTX_SCHED_YIELD (2) has no SyncMode.
    /// assert_eq!(SyncMode::from_ctx_flags(2), None);
    /// ```
    pub fn from_ctx_flags(flags: u32) -> Option<SyncMode> {
        let sched = flags & CUctx_flags::CU_CTX_SCHED_MASK as u32;
        [SyncMode::Spin, SyncMode::Blocking, SyncMode::Auto].into_iter().find(|m| m.ctx_flags() == sched)
    }
}

impl std::fmt::Display for SyncMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
