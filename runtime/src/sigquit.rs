//! Go's SIGQUIT dump: with `Builder::dump_on_sigquit(true)` (or `GMPRT_SIGQUIT_DUMP=1`), a
//! SIGQUIT (`kill -QUIT <pid>`, Ctrl-\ in a terminal) prints every live runtime's task dump
//! ([`crate::dump`]) on stderr. Unlike Go, the program keeps running afterwards: the dump is
//! for looking, not for ending a stuck process (Ctrl-C still does that).
//!
//! Protocol: the first runtime that asks installs the handler once per process, through
//! `signal-hook`'s iterator (its handler only writes to a pipe, which is async-signal-safe;
//! the dump itself runs on the `gmprt-sigquit` thread, where locks and allocation are fine).
//! Runtimes register a `Weak` reference, so a dropped runtime is skipped and pruned, never
//! kept alive. The handler stays installed for the life of the process, as Go's does.

use crate::sched::Shared;
use signal_hook::consts::SIGQUIT;
use signal_hook::iterator::Signals;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, Weak};

/// Runtimes that asked for SIGQUIT dumps.
static RUNTIMES: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());
/// Whether the handler thread runs (set under `RUNTIMES`' lock, so it starts once).
static STARTED: Mutex<bool> = Mutex::new(false);
/// SIGQUITs handled so far (each printed every live runtime's dump).
static DUMPS: AtomicU64 = AtomicU64::new(0);

/// Registers `shared` for SIGQUIT dumps, installing the handler on first use.
pub(crate) fn register(shared: &Arc<Shared>) -> std::io::Result<()> {
    let mut started = STARTED.lock().unwrap_or_else(|e| e.into_inner());
    if !*started {
        let mut signals = Signals::new([SIGQUIT])?;
        std::thread::Builder::new().name("gmprt-sigquit".into()).spawn(move || {
            for _ in signals.forever() {
                dump_all();
            }
        })?;
        *started = true;
    }
    RUNTIMES.lock().unwrap_or_else(|e| e.into_inner()).push(Arc::downgrade(shared));
    Ok(())
}

fn dump_all() {
    let mut list = RUNTIMES.lock().unwrap_or_else(|e| e.into_inner());
    list.retain(|w| w.strong_count() > 0);
    for (i, w) in list.iter().enumerate() {
        if let Some(shared) = w.upgrade() {
            let d = shared.dump();
            eprintln!(
                "gmprt: SIGQUIT: runtime {i} ({} procs), {} tasks listed\n\n{d}",
                shared.procs(),
                d.tasks.len()
            );
        }
    }
    // Relaxed: a count for callers that wait for a dump; the output above is on stderr.
    DUMPS.fetch_add(1, Relaxed);
}

/// How many SIGQUITs have been answered with dumps in this process (0 until a runtime built
/// with `Builder::dump_on_sigquit(true)` receives one).
pub fn sigquit_dumps() -> u64 {
    DUMPS.load(Relaxed)
}
