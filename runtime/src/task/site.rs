//! Spawn sites, interned: a task records where it was spawned as a 16-bit index, packed with
//! its 48-bit id into one header word (`Header::ident`), instead of an 8-byte
//! `&'static Location` of its own. Issue 25 asked for a parked task of at most 176 bytes; this
//! is one of the four 8-byte cuts that got it there (`core.rs`'s tests list them).
//!
//! Protocol:
//! * [`intern`] gives a location its index. The first time a thread sees a location it takes
//!   the table's lock, looks the location up by address, and appends it if new: the slot is
//!   written (`Release`) before the index is handed out. Later spawns from the same site hit a
//!   small per-thread cache (a direct-mapped array of [`CACHE_SLOTS`]), so a spawn pays a
//!   thread-local read and one compare, no lock and no shared write.
//! * [`lookup`] reads a slot (`Acquire`, pairing with that `Release`). Any thread may call it:
//!   a dump, sysmon's long-poll report. A slot, once written, never changes, so an index read
//!   from any header always names the location it was interned for.
//! * Index 0 is "unknown". It is what a task gets if a process spawns from more than
//!   [`MAX_SITES`] distinct places (each `spawn`/`go` call in the source is one place, so that
//!   takes generated code); such tasks dump as `<unknown: more than 65535 spawn sites>`.
//!
//! The table is process-wide, not per runtime: locations are `'static`, and two runtimes
//! spawning from one line share its index. It lives in zeroed static memory (512 KiB of
//! address space, touched only as far as it is used: 8 bytes per distinct site).
//!
//! Plain std atomics under loom too: a diagnostic no protocol decision reads.

use std::collections::HashMap;
use std::panic::Location;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

/// Distinct spawn sites a process can record (index 0 is reserved for "unknown").
pub(crate) const MAX_SITES: usize = (1 << 16) - 1;

/// Per-thread cache entries. 64: a program's hot spawn sites are a handful, and a miss costs
/// one uncontended lock and a map lookup.
const CACHE_SLOTS: usize = 64;

/// Slot i holds the location of index i (null: not yet handed out). Slot 0 stays null.
static SLOTS: [AtomicPtr<Location<'static>>; MAX_SITES + 1] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_SITES + 1];

/// The writers' side: index by address, and the next free index.
static TABLE: Mutex<Option<HashMap<usize, u16>>> = Mutex::new(None);

std::thread_local! {
    /// (location address, index) pairs, direct-mapped by address.
    static CACHE: [std::cell::Cell<(usize, u16)>; CACHE_SLOTS] =
        const { [const { std::cell::Cell::new((0, 0)) }; CACHE_SLOTS] };
}

/// The index of `loc` (0 if the table is full). Any thread.
#[inline]
pub(crate) fn intern(loc: &'static Location<'static>) -> u16 {
    let addr = std::ptr::from_ref(loc) as usize;
    // Locations are at least 4-aligned: skip the low bits that never vary.
    let slot = (addr >> 3) % CACHE_SLOTS;
    // `try_with`: a spawn from a thread-local destructor at thread exit skips the cache.
    if let Ok(Some(idx)) = CACHE.try_with(|c| {
        let (a, i) = c[slot].get();
        (a == addr).then_some(i)
    }) {
        return idx;
    }
    let idx = intern_slow(loc, addr);
    let _ = CACHE.try_with(|c| c[slot].set((addr, idx)));
    idx
}

#[cold]
fn intern_slow(loc: &'static Location<'static>, addr: usize) -> u16 {
    let mut table = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    let map = table.get_or_insert_with(HashMap::new);
    if let Some(&idx) = map.get(&addr) {
        return idx;
    }
    let next = map.len() + 1;
    if next > MAX_SITES {
        return 0;
    }
    // Release: pairs with `lookup`'s Acquire, so a reader that finds the pointer sees the
    // location it points to (a `'static`, but written by the compiler: the pairing is for form).
    SLOTS[next].store(std::ptr::from_ref(loc).cast_mut(), Ordering::Release);
    let idx = next as u16;
    map.insert(addr, idx);
    idx
}

/// The location interned as `idx`, or `None` for index 0 (or an index not handed out, which
/// no header holds). Any thread.
pub(crate) fn lookup(idx: u16) -> Option<&'static Location<'static>> {
    // Acquire: pairs with the Release in `intern_slow`.
    let p = SLOTS[idx as usize].load(Ordering::Acquire);
    // SAFETY: a non-null slot holds a `&'static Location` (written once by `intern_slow`).
    (!p.is_null()).then(|| unsafe { &*p })
}

/// `idx`'s location as `file:line:col`, or the reason there is none.
pub(crate) fn describe(idx: u16) -> String {
    match lookup(idx) {
        Some(l) => l.to_string(),
        None => format!("<unknown: more than {MAX_SITES} spawn sites>"),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[track_caller]
    fn here() -> &'static Location<'static> {
        Location::caller()
    }

    #[test]
    fn a_site_keeps_its_index_and_reads_back() {
        let (a, b) = (here(), here());
        let (ia, ib) = (intern(a), intern(b));
        assert_ne!(ia, 0);
        assert_ne!(ia, ib, "two call sites, two indices");
        assert_eq!(intern(a), ia, "the cache returns the same index");
        assert_eq!(lookup(ia).map(|l| l.line()), Some(a.line()));
        assert_eq!(lookup(ib).map(|l| l.line()), Some(b.line()));
        // Another thread (a cold cache) gets the same index from the table.
        let other = std::thread::spawn(move || intern(a)).join().unwrap();
        assert_eq!(other, ia);
        assert!(describe(0).contains("unknown"));
    }
}
