//! [`Builder`]: a runtime's configuration (arguments, then `GMPRT_*` variables, then defaults),
//! checked before anything starts, and [`Builder::build`], which creates the Ps, prestarts the
//! Ms and starts sysmon. Every refusal is a [`BuildError`] naming what was wrong.

use super::Runtime;
use crate::sched::{Config, Shared};
use crate::trace::hooks::RtTrace;
use crate::trace::Recorder;
use std::fmt;
use std::time::Duration;

/// Why a runtime could not be built.
#[derive(Debug)]
pub enum BuildError {
    /// `procs` was zero (from the builder or `GMPRT_MAXPROCS`).
    ZeroProcs {
        /// Where the zero came from.
        source: &'static str,
    },
    /// `GMPRT_MAXPROCS` or `GMPRT_SCHEDTRACE` was not a number.
    BadEnv {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// An M thread could not be started.
    Thread(std::io::Error),
    /// `max_threads` is below `procs`: every P needs an M.
    MaxThreads {
        /// The cap asked for.
        max_threads: usize,
        /// The number of Ps.
        procs: usize,
    },
    /// The trace file cannot be created: found when the runtime is built, not when the run
    /// that was to be traced has ended.
    Trace {
        /// Who named it: `"GMPRT_TRACE"` or `"Builder::trace"`.
        source: &'static str,
        /// The path.
        path: std::path::PathBuf,
        /// The OS's error.
        error: std::io::Error,
    },
}

/// Go's default `SetMaxThreads`.
pub const DEFAULT_MAX_THREADS: usize = 10_000;

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::ZeroProcs { source } => {
                write!(f, "procs must be at least 1 (got 0 from {source}); like GOMAXPROCS, it counts the Ps that run tasks")
            }
            BuildError::BadEnv { var, value } => write!(f, "{var}={value:?} is not a whole number"),
            BuildError::Thread(e) => write!(f, "could not start a worker thread: {e}"),
            BuildError::MaxThreads { max_threads, procs } => write!(
                f,
                "max_threads ({max_threads}) must be at least procs ({procs}): every P needs an M to run on"
            ),
            BuildError::Trace { source, path, error } => {
                write!(f, "{source}={}: cannot create the trace file: {error}", path.display())
            }
        }
    }
}

impl std::error::Error for BuildError {}

/// Configures and starts a [`Runtime`].
///
/// ```
/// let rt = gmprt_runtime::Runtime::builder().procs(2).thread_name("worker").build().unwrap();
/// assert_eq!(rt.block_on(async { 40 + 2 }), 42);
/// ```
#[derive(Default)]
pub struct Builder {
    procs: Option<usize>,
    thread_name: Option<String>,
    stack_size: Option<usize>,
    schedtrace: Option<Duration>,
    trace: Option<std::path::PathBuf>,
    task_cache: Option<bool>,
    max_threads: Option<usize>,
    detect_deadlock: Option<bool>,
    dump_on_sigquit: Option<bool>,
    /// loom models only: Ms started by `build` (default `procs`).
    #[cfg(loom)]
    loom_prestart_ms: Option<usize>,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("procs", &self.procs)
            .field("thread_name", &self.thread_name)
            .field("schedtrace", &self.schedtrace)
            .field("trace", &self.trace)
            .finish()
    }
}

impl Builder {
    /// A builder with defaults: procs from `GMPRT_MAXPROCS`, else the available parallelism.
    pub fn new() -> Self {
        Builder::default()
    }

    /// Number of Ps (GOMAXPROCS). Overrides `GMPRT_MAXPROCS`. Zero is an error at `build`.
    pub fn procs(mut self, n: usize) -> Self {
        self.procs = Some(n);
        self
    }

    /// Name prefix of M threads (default `gmprt-m`); each gets `-<m id>` appended.
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        self.thread_name = Some(name.into());
        self
    }

    /// Stack size of M threads (default: std's).
    pub fn thread_stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Prints Go's schedtrace line to stderr every `every` (overrides `GMPRT_SCHEDTRACE`).
    /// Zero turns it off (as `GMPRT_SCHEDTRACE=0` does); a period past the end of time never
    /// prints.
    pub fn schedtrace(mut self, every: Duration) -> Self {
        self.schedtrace = Some(every);
        self
    }

    /// Keeps freed task memory on per-P free lists for the next spawn, as Go keeps dead Gs
    /// (default on; see `task/cache.rs` and the measurement in `benches/README.md`). Off, every
    /// cell of up to 512 bytes is taken from and given back to the process-wide cell heap
    /// (`task/heap.rs`) under its lock; cell memory never returns to the system allocator
    /// either way.
    pub fn task_cache(mut self, on: bool) -> Self {
        self.task_cache = Some(on);
        self
    }

    /// Cap on OS threads running Ms (Go's `debug.SetMaxThreads`, default 10,000). Blocking
    /// calls that would need more get `Err(ThreadLimit)` from `syscall`; zero is an error.
    pub fn max_threads(mut self, n: usize) -> Self {
        self.max_threads = Some(n);
        self
    }

    /// Whether `block_on` reports Go's "all goroutines are asleep - deadlock!" (with a task
    /// dump) instead of hanging when nothing can wake the program — every runtime of the
    /// process counted, with its check on or off (default on, off in loom models; overrides
    /// `GMPRT_DEADLOCK`, where `0` turns it off). See [`crate::dump`] for what the check can and cannot see:
    /// turn it off in a program whose plain OS threads keep channel ends or a `Handle` to use
    /// while every task waits.
    pub fn detect_deadlock(mut self, on: bool) -> Self {
        self.detect_deadlock = Some(on);
        self
    }

    /// Go's SIGQUIT dump: a SIGQUIT prints every live runtime's task dump on stderr, and the
    /// program keeps running (overrides `GMPRT_SIGQUIT_DUMP`, where `1` turns it on; default
    /// off, since it replaces SIGQUIT's default action for the whole process). Unix only;
    /// elsewhere it does nothing. See [`crate::dump::sigquit_dumps`].
    pub fn dump_on_sigquit(mut self, on: bool) -> Self {
        self.dump_on_sigquit = Some(on);
        self
    }

    /// Records a trace of the whole run and writes it to `path` as Chrome trace-event JSON
    /// when the runtime shuts down (overrides `GMPRT_TRACE`; see [`crate::trace`]). At most
    /// `GMPRT_TRACE_MAX_EVENTS` events are kept (default [`crate::trace::DEFAULT_MAX_EVENTS`]);
    /// the rest are counted and the count is reported.
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("gmprt-doc-trace-{}.json", std::process::id()));
    /// let rt = gmprt_runtime::Runtime::builder().procs(1).trace(&path).build().unwrap();
    /// rt.block_on(async { gmprt_runtime::spawn(async { 1 }).await.unwrap() });
    /// drop(rt); // writes the trace
    /// let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    /// assert!(gmprt_runtime::trace::check(&v).unwrap().slices > 0);
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn trace(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.trace = Some(path.into());
        self
    }

    /// loom models only (`--cfg loom`): how many Ms `build` starts up front (default `procs`,
    /// as in every other build). Each M is a loom thread and loom allows 5 per model, each one
    /// multiplying the interleavings; with fewer, `startm` starts the rest on demand through
    /// the real `newm` path (as Go does; `build` prestarts only to surface errors early).
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn loom_prestart_ms(mut self, n: usize) -> Self {
        self.loom_prestart_ms = Some(n);
        self
    }

    fn env_usize(var: &'static str) -> Result<Option<usize>, BuildError> {
        match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => {
                v.trim().parse().map(Some).map_err(|_| BuildError::BadEnv { var, value: v })
            }
            _ => Ok(None),
        }
    }

    /// Starts the runtime: `procs` Ps and `procs` M threads (which park until there is work).
    /// The first build in a process also raises the open-file soft limit to the hard one, as
    /// Go does at start-up (see [`nofile_limit`](crate::nofile_limit)).
    pub fn build(self) -> Result<Runtime, BuildError> {
        // Go's start-up raise of the open-file soft limit, once per process (`rlimit` module).
        crate::rlimit::raise_nofile();
        let procs = match self.procs {
            Some(0) => return Err(BuildError::ZeroProcs { source: "Builder::procs" }),
            Some(n) => n,
            None => match Self::env_usize("GMPRT_MAXPROCS")? {
                Some(0) => return Err(BuildError::ZeroProcs { source: "GMPRT_MAXPROCS" }),
                Some(n) => n,
                None => std::thread::available_parallelism().map_or(1, |n| n.get()),
            },
        };
        let schedtrace = match self.schedtrace {
            Some(d) => Some(d).filter(|d| !d.is_zero()),
            None => Self::env_usize("GMPRT_SCHEDTRACE")?
                .filter(|&ms| ms > 0)
                .map(|ms| Duration::from_millis(ms as u64)),
        };
        #[cfg(loom)]
        let prestart = self.loom_prestart_ms.unwrap_or(procs).min(procs);
        #[cfg(not(loom))]
        let prestart = procs;
        let max_threads = self.max_threads.unwrap_or(DEFAULT_MAX_THREADS);
        if max_threads < procs {
            return Err(BuildError::MaxThreads { max_threads, procs });
        }
        let name = self.thread_name.unwrap_or_else(|| "gmprt-m".to_string());
        let path = match self.trace {
            Some(p) => Some(("Builder::trace", p)),
            None => std::env::var_os("GMPRT_TRACE")
                .filter(|v| !v.is_empty())
                .map(|v| ("GMPRT_TRACE", std::path::PathBuf::from(v))),
        };
        let trace = match path {
            None => None,
            Some((source, path)) => {
                let max = match Self::env_usize("GMPRT_TRACE_MAX_EVENTS")? {
                    Some(n) => n,
                    None => crate::trace::DEFAULT_MAX_EVENTS,
                };
                // Created now: a typo in the path fails the build, not the end of the run
                // whose trace it would lose. Written at shutdown.
                let file = std::fs::File::create(&path).map_err(|error| BuildError::Trace {
                    source,
                    path: path.clone(),
                    error,
                })?;
                Some(RtTrace::new(Recorder::with_capacity(max), procs, path, file))
            }
        };
        let (shared, ps) = Shared::new(Config {
            procs,
            thread_name: name,
            stack_size: self.stack_size,
            trace,
            task_cache: self.task_cache.unwrap_or(true),
            max_threads,
            // Off by default under loom: the models explore the scheduler's own protocols, and
            // the check's scans (every owned-list shard, every timer heap, under loom locks)
            // would multiply their state space for a diagnostic they do not model.
            detect_deadlock: match self.detect_deadlock {
                Some(on) => on,
                None => !crate::loom::LOOM && Self::env_usize("GMPRT_DEADLOCK")? != Some(0),
            },
        });
        {
            let mut s = shared.sched.lock();
            for p in ps {
                shared.pidleput(&mut s, p);
            }
        }
        let rt = Runtime { shared: shared.clone(), monitor: None };
        // Start the Ms up front so thread-creation failures surface here; they park at once.
        {
            let mut s = shared.sched.lock();
            for _ in 0..prestart {
                shared.newm(&mut s, None, false).map_err(BuildError::Thread)?;
            }
        }
        #[allow(unused_mut)]
        let mut rt = rt;
        #[cfg(loom)]
        let _ = schedtrace;
        // sysmon: syscall retake, long-poll reports, schedtrace (not under loom: models
        // explore the scheduler's own protocols, and sysmon only adds timing-driven noise).
        #[cfg(any(loom, not(unix)))]
        let _ = self.dump_on_sigquit;
        #[cfg(all(unix, not(loom)))]
        {
            let on = match self.dump_on_sigquit {
                Some(on) => on,
                None => Self::env_usize("GMPRT_SIGQUIT_DUMP")?.is_some_and(|v| v != 0),
            };
            if on {
                crate::sigquit::register(&shared).map_err(BuildError::Thread)?;
            }
        }
        #[cfg(not(loom))]
        {
            rt.monitor = Some(crate::sched::sysmon::start(shared, schedtrace).map_err(BuildError::Thread)?);
        }
        Ok(rt)
    }
}
