//! The cell heap: fresh memory for task cells, and the global free lists behind the per-P ones
//! (Go's `mheap` spans and `sched.gFree`, reduced to what stackless tasks need).
//!
//! # Why gmprt does not take cells from `malloc`
//! Spawning a million tasks that stay alive (until joined, or parked) needs ~150 MB of fresh
//! memory. Through glibc that memory came from each M's thread arena, which grows its heap one
//! page at a time with an `mprotect` call, and every new 4 KiB page then took a page fault:
//! `perf` put 25% of `million_tasks` (1 P, 2-core VM) in page faults and 11% in `mprotect`. On
//! many cores it is worse than the count says: `mprotect` changes the address space, so it takes
//! the process-wide mmap lock and its VMA write locks, which the other Ms' page faults wait on.
//!
//! # Protocol
//! * **Regions.** Address space is reserved [`REGION_BYTES`] at a time from the system
//!   allocator (one `mmap`). Reserving is free; memory becomes resident a chunk at a time, as
//!   Ps take chunks to carve (below), with no `mprotect` ever.
//! * **Populating.** A P that takes a fresh chunk of the region faults its 16 pages in with one
//!   `madvise(MADV_POPULATE_WRITE)` ([`populate`]), after the lock is released, instead of one
//!   page fault per 4 KiB as its cells are first written. The pages, their zeroing and their
//!   accounting are the same; what goes is 15 of every 16 traps into the kernel, each with its
//!   own VMA lookup and lock. Measured (`million_tasks`, 1M spawn + join, 2-core VM, 10
//!   alternating pairs): 0.96× the time at 1 P and 0.91× at 2 Ps, where the spawner is the
//!   bottleneck and paid every fault. A kernel without the advice (before Linux 5.14) refuses
//!   it, and the pages fault in as before.
//! * **Chunks.** A P carves cells by bumping a pointer through a [`Chunk`] of [`CHUNK_BYTES`]
//!   it owns, so a fresh cell costs no lock and no atomic. It takes a new chunk from the heap
//!   (under [`HEAP`]'s lock) once per ~480 cells of a typical 136-byte class.
//! * **Free lists.** A freed cell is never returned to the system allocator: it goes to its P's
//!   list (`cache.rs`), and lists that overflow spill [`BATCH`] blocks here; a P whose list is
//!   empty refills [`BATCH`] from here before it carves. Cells freed on a thread without a P
//!   (a `JoinHandle` dropped by a plain thread) come here one at a time.
//! * **Retirement.** A P that goes away (its runtime shut down) gives its lists and its chunk's
//!   tail back here, so the next runtime reuses them.
//!
//! # Invariant
//! Every block of a size class (`cache.rs`'s `class_of`) is memory of this heap, whichever
//! runtime carved it: any P, or the heap itself, may take it back. Larger or over-aligned cells
//! never enter it (they use the global allocator both ways).
//!
//! # What it costs
//! Cell memory is kept for the life of the process, as Go keeps dead Gs on `sched.gFree`: after
//! a spike of a million live tasks, ~140 MB stays reserved for the next spawns.
//!
//! # Why not huge pages
//! Advising regions `MADV_HUGEPAGE` was measured (`million_tasks`, 2-core VM): 1M spawn + join
//! took 142–156 ns per task in most runs against 165–184 ns with 4 KiB pages, but 1 run in 3 took
//! 250–437 ns, 60% of it in the kernel zeroing fresh 2 MiB pages (`clear_page_erms`) that the
//! machine had to find first. A spawn path whose cost depends on how fragmented the machine's
//! memory is does not belong in a runtime; a system configured with THP `always` still gets
//! them, by its administrator's choice.

use std::alloc::{alloc, handle_alloc_error, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Number of size classes (`cache.rs`): 8-byte steps up to 512 bytes.
pub(crate) const BINS: usize = 64;
/// Blocks moved between a P's list and the heap at a time: Go's `gfput` spills a P's free Gs
/// down to 32 once it holds 64, and `gfget` refills 32 at a time. One lock per 32 cells.
pub(crate) const BATCH: usize = 32;
/// Alignment of a region: a 4 KiB page (the system allocator maps a region this large with its
/// own `mmap`, page-aligned anyway).
const PAGE: usize = 4 << 10;
/// Address space reserved at a time. A million live 136-byte cells take 3 regions; a small
/// program touches a few pages of its first. Reservation costs no memory.
pub(crate) const REGION_BYTES: usize = 64 << 20;
/// A P's bump chunk: ~480 cells of a 136-byte class per lock, and small enough that a P holds
/// little unused memory in its chunk's tail (16 Ps: at most 1 MiB).
pub(crate) const CHUNK_BYTES: usize = 64 << 10;

/// A bump-allocated stretch of a region: `[ptr, ptr + len)` not yet handed out.
pub(crate) struct Chunk {
    ptr: *mut u8,
    len: usize,
}

impl Chunk {
    /// An empty chunk (the first carve takes a real one).
    pub(crate) const EMPTY: Chunk = Chunk { ptr: std::ptr::null_mut(), len: 0 };

    /// Carves `size` bytes aligned to `align` (a power of two) off the front, if they fit.
    #[inline]
    pub(crate) fn carve(&mut self, size: usize, align: usize) -> Option<NonNull<u8>> {
        debug_assert!(align.is_power_of_two() && size > 0);
        if self.ptr.is_null() {
            return None;
        }
        let pad = self.ptr.align_offset(align);
        let need = pad.checked_add(size)?;
        if need > self.len {
            return None;
        }
        // SAFETY: `pad + size <= len`, so both pointers stay inside the chunk's region.
        let (cell, rest) = unsafe { (self.ptr.add(pad), self.ptr.add(need)) };
        self.ptr = rest;
        self.len -= need;
        NonNull::new(cell)
    }
}

// SAFETY: a chunk is a claim on unshared region memory; it moves with its owner (a P, or the
// heap under its lock) and only that owner carves it.
unsafe impl Send for Chunk {}

/// Free blocks of one size class. The pointers are owned memory of this heap.
struct FreeList(Vec<NonNull<u8>>);

// SAFETY: the blocks are plain memory owned by the heap; nobody else refers to them.
unsafe impl Send for FreeList {}

struct Heap {
    /// Global free lists, one per class (Go's `sched.gFree`).
    free: [FreeList; BINS],
    /// Chunk tails given back by retired Ps, reused before the region is carved again.
    spare: Vec<Chunk>,
    /// The uncarved rest of the newest region.
    region: Chunk,
    /// The heap's own chunk, for cells allocated without a P cache.
    shared: Chunk,
}

/// The process-wide heap. A lock, not a lock-free structure: it is taken once per [`BATCH`]
/// frees or refills, or per [`CHUNK_BYTES`] of fresh cells, by a P; per cell only by threads
/// without a P (or runtimes built with `task_cache(false)`).
static HEAP: Mutex<Heap> = Mutex::new(Heap {
    free: [const { FreeList(Vec::new()) }; BINS],
    spare: Vec::new(),
    region: Chunk::EMPTY,
    shared: Chunk::EMPTY,
});

/// Go's unlocked `sched.gFree` emptiness check: how many blocks each global list held at its
/// last change. Written under [`HEAP`]'s lock, read without it as a hint only: a stale zero
/// makes a P carve a fresh cell instead of reusing one, a stale non-zero costs one lock that
/// finds nothing. No decision needs it exact, so `Relaxed` both ways (nothing is published
/// through it: the blocks themselves move under the lock).
static AVAIL: [AtomicUsize; BINS] = [const { AtomicUsize::new(0) }; BINS];

fn heap() -> std::sync::MutexGuard<'static, Heap> {
    // Nothing under the lock can panic halfway through an update (pushes and pops of Vecs,
    // pointer arithmetic), so a poisoned heap is still consistent.
    HEAP.lock().unwrap_or_else(|e| e.into_inner())
}

impl Heap {
    /// Publishes class `bin`'s list length to [`AVAIL`]; called under the lock after every
    /// change of the list.
    fn publish(&self, bin: usize) {
        // Relaxed: a hint (see AVAIL); the blocks themselves move under the lock.
        AVAIL[bin].store(self.free[bin].0.len(), Ordering::Relaxed);
    }

    /// A chunk to carve: a spare tail if one is left (its pages already touched: `false`),
    /// else [`CHUNK_BYTES`] of the region never touched yet (`true`).
    fn chunk(&mut self) -> (Chunk, bool) {
        if let Some(c) = self.spare.pop() {
            return (c, false);
        }
        if self.region.len < CHUNK_BYTES {
            self.region = new_region();
        }
        let ptr = self.region.ptr;
        // SAFETY: the region has at least CHUNK_BYTES left (just checked or just reserved).
        self.region.ptr = unsafe { ptr.add(CHUNK_BYTES) };
        self.region.len -= CHUNK_BYTES;
        (Chunk { ptr, len: CHUNK_BYTES }, true)
    }
}

/// Reserves a new region: [`REGION_BYTES`], page-aligned.
fn new_region() -> Chunk {
    // Cannot fail: both are powers of two and the size is far below isize::MAX.
    let layout = Layout::from_size_align(REGION_BYTES, PAGE).expect("region layout");
    // SAFETY: the layout has a non-zero size.
    let ptr = unsafe { alloc(layout) };
    if ptr.is_null() {
        handle_alloc_error(layout);
    }
    Chunk { ptr, len: REGION_BYTES }
}

/// A new chunk for a P whose chunk cannot hold the next cell (the old tail is dropped: at most
/// one cell's size, under 1% of a chunk).
pub(crate) fn take_chunk() -> Chunk {
    let (chunk, fresh) = heap().chunk();
    // Outside the lock: a P populating its chunk holds up no other P's refill.
    if fresh {
        populate(&chunk);
    }
    chunk
}

/// Faults in every page of `chunk`, a fresh chunk of a region that the caller owns, in one
/// system call (module doc, "Populating"). Best effort: on a refusal (a kernel before 5.14
/// answers `EINVAL`) each page faults in on first touch, as it would have anyway.
#[cfg(all(target_os = "linux", not(loom)))]
fn populate(chunk: &Chunk) {
    // Regions are page-aligned and chunks a whole number of pages, as the advice requires.
    debug_assert!((chunk.ptr as usize).is_multiple_of(PAGE) && chunk.len.is_multiple_of(PAGE));
    // SAFETY: `[ptr, ptr + len)` is mapped memory of a region this heap reserved, owned by the
    // caller and not yet handed out. MADV_POPULATE_WRITE only faults its pages in as a write
    // would; it changes neither their contents (fresh, so zero) nor the mapping.
    let rc = unsafe { libc::madvise(chunk.ptr.cast(), chunk.len, libc::MADV_POPULATE_WRITE) };
    // A refusal costs nothing but the call: see above.
    let _ = rc;
}

/// Elsewhere (and under loom) pages fault in on first touch.
#[cfg(not(all(target_os = "linux", not(loom))))]
fn populate(_chunk: &Chunk) {}

/// Moves up to [`BATCH`] free blocks of class `bin` onto `to` (a P's list); returns how many.
pub(crate) fn refill(bin: usize, to: &mut Vec<NonNull<u8>>) -> usize {
    // Relaxed: a hint (see AVAIL). While a spawn-heavy program grows its live set, the global
    // lists are empty, and this keeps every spawn off the lock.
    if AVAIL[bin].load(Ordering::Relaxed) == 0 {
        return 0;
    }
    let mut h = heap();
    let from = &mut h.free[bin].0;
    let n = from.len().min(BATCH);
    to.extend(from.drain(from.len() - n..));
    h.publish(bin);
    n
}

/// Moves every block of `from` beyond the first `keep` into the heap's list of class `bin`.
pub(crate) fn spill(bin: usize, from: &mut Vec<NonNull<u8>>, keep: usize) {
    if from.len() > keep {
        let mut h = heap();
        h.free[bin].0.extend(from.drain(keep..));
        h.publish(bin);
    }
}

/// One cell of class `bin` (`size` bytes, aligned to `align`) for a caller without a P list:
/// a free block if there is one, else carved from the heap's shared chunk.
pub(crate) fn alloc_one(bin: usize, size: usize, align: usize) -> NonNull<u8> {
    let mut h = heap();
    if let Some(p) = h.free[bin].0.pop() {
        h.publish(bin);
        return p;
    }
    loop {
        if let Some(p) = h.shared.carve(size, align) {
            return p;
        }
        // Under the lock, so not populated: a P-less caller takes a cell at a time.
        h.shared = h.chunk().0;
    }
}

/// Takes back one block of class `bin` from a caller without a P list.
///
/// # Safety
/// `ptr` is a block of class `bin` from this heap (carved or listed) that nobody uses any more.
pub(crate) unsafe fn free_one(bin: usize, ptr: NonNull<u8>) {
    let mut h = heap();
    h.free[bin].0.push(ptr);
    h.publish(bin);
}

/// A retired P's lists and chunk, given back for reuse.
pub(crate) fn retire(lists: &mut [Vec<NonNull<u8>>; BINS], chunk: Chunk) {
    let mut h = heap();
    for (bin, v) in lists.iter_mut().enumerate() {
        h.free[bin].0.append(v);
        h.publish(bin);
    }
    if chunk.len >= CHUNK_BYTES / 8 {
        h.spare.push(chunk);
    }
}

/// Free blocks the heap holds in class `bin` (for tests).
#[cfg(all(test, not(loom)))]
pub(crate) fn free_len(bin: usize) -> usize {
    heap().free[bin].0.len()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn carve_aligns_bumps_and_refuses_what_does_not_fit() {
        let mut buf = vec![0u128; 8]; // 128 bytes, 16-aligned
        let base = buf.as_mut_ptr().cast::<u8>();
        let mut c = Chunk { ptr: base, len: 128 };
        let a = c.carve(24, 8).unwrap();
        assert_eq!(a.as_ptr(), base);
        // The next 16-aligned cell skips 8 bytes of padding.
        let b = c.carve(32, 16).unwrap();
        assert_eq!(b.as_ptr() as usize - base as usize, 32);
        assert_eq!(c.len, 128 - 64);
        assert!(c.carve(65, 8).is_none(), "65 bytes do not fit in 64");
        assert_eq!(c.len, 64, "a refused carve takes nothing");
        assert!(c.carve(64, 8).is_some());
        let mut empty = Chunk::EMPTY;
        assert!(empty.carve(8, 8).is_none());
    }

    #[test]
    fn regions_are_page_aligned_and_chunks_tile_them() {
        let mut h = Heap {
            free: [const { FreeList(Vec::new()) }; BINS],
            spare: Vec::new(),
            region: Chunk::EMPTY,
            shared: Chunk::EMPTY,
        };
        let (a, fresh_a) = h.chunk();
        assert!(fresh_a, "the first chunk is carved from a new region");
        assert_eq!(a.ptr as usize % PAGE, 0);
        let (b, _) = h.chunk();
        assert_eq!(b.ptr as usize - a.ptr as usize, CHUNK_BYTES);
        h.spare.push(Chunk { ptr: a.ptr, len: 100 });
        let (spare, fresh) = h.chunk();
        assert_eq!(spare.len, 100, "a spare tail is reused before the region");
        assert!(!fresh, "a spare tail has been touched: it is not populated again");
        // The region is leaked on purpose (the heap never returns memory).
    }
}
