//! Per-P free lists of task cells: Go's `p.gFree`, for stackless tasks.
//!
//! A task cell is allocated when a task is spawned and freed when its last reference goes.
//! Go keeps dead Gs on a per-P free list so `newproc` rarely reaches the allocator; gmprt does
//! the same with cell memory. Cells of different future types have different sizes, so the
//! cache keeps one list per 16-byte size class up to 512 bytes; a cell's memory is always
//! requested as its class's full size (`CLASS_BYTES · (bin + 1) − CHUNK_OVERHEAD`, align 16),
//! which makes any two blocks of one class interchangeable.
//!
//! * `alloc_cell` — on the spawning M, with its P's cache: pop a block of the class, else ask
//!   the global allocator.
//! * `free_cell` — wherever the last reference drops: if this thread is an M holding a P, push
//!   the block onto that P's list (up to `PER_BIN`); otherwise return it to the allocator.
//!
//! Only the M holding a P touches its cache (through its `Context`), so no synchronisation is
//! needed. Whether this pays is measured, not assumed: `Builder::task_cache(false)` turns it
//! off, and `benches/README.md` records the comparison.

use crate::sched::context::with_current;
use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

/// Granularity of size classes: the allocator's own (glibc rounds every chunk to 16 bytes),
/// so rounding a cell up to its class costs no memory at all. (32-byte classes were measured
/// to add 16 bytes per parked task in `million_tasks --park`.)
const CLASS_BYTES: usize = 16;
/// Bytes glibc's malloc keeps in front of every chunk it hands out (the chunk's size word), so
/// a request of n bytes takes a chunk of `round_up(n + 8, 16)`. A class therefore requests 8
/// bytes less than a multiple of 16: the largest request that still fits the same chunk. (With
/// requests of `16 · k` every class took a chunk 16 bytes larger than the cell needed: a
/// 168-byte cell requested 176 bytes and got a 192-byte chunk; it now requests 168 and gets
/// 176. `million_tasks --park`: 209 → 193 bytes per parked task; the header cuts of `core.rs`
/// then took that cell to 136 bytes and a 144-byte chunk: 160 bytes per parked task.)
const CHUNK_OVERHEAD: usize = 8;
/// Number of classes: cells up to 512 bytes are cached; larger futures go straight to the
/// allocator (they are rare, and a large block parked in a cache is memory held for nothing).
const BINS: usize = 32;
/// Blocks kept per class per P: Go keeps up to 64 free Gs per P before moving them to the
/// global list. 64 blocks in each of the 32 classes (16..512 B) bound a P's cache at 528 KiB,
/// typically far less: a workload uses a handful of classes.
const PER_BIN: usize = 64;
/// Alignment of cached blocks; cells needing more bypass the cache.
const ALIGN: usize = 16;

/// The per-P cache (lives in `Processor`).
pub(crate) struct CellCache {
    bins: [Vec<NonNull<u8>>; BINS],
    enabled: bool,
}

// SAFETY: the cache owns the blocks it holds (plain memory); it moves with its P between Ms.
unsafe impl Send for CellCache {}

/// The layout a class requests: `CLASS_BYTES · (bin + 1) − CHUNK_OVERHEAD` bytes, align 16.
#[inline]
fn class_layout(bin: usize) -> Layout {
    debug_assert!(bin < BINS);
    // Cannot fail: the size is at most 504 and the alignment is a power of two.
    Layout::from_size_align(CLASS_BYTES * (bin + 1) - CHUNK_OVERHEAD, ALIGN).expect("class layout")
}

/// The class of a layout and the layout actually requested from the allocator: the smallest
/// class whose request holds `layout.size()`.
#[inline]
fn class_of(layout: Layout) -> Option<(usize, Layout)> {
    let size = layout.size();
    if layout.align() > ALIGN || size > CLASS_BYTES * BINS - CHUNK_OVERHEAD || size == 0 {
        return None;
    }
    // The smallest bin with CLASS_BYTES · (bin + 1) − CHUNK_OVERHEAD ≥ size.
    let bin = (size + CHUNK_OVERHEAD - 1) / CLASS_BYTES;
    let l = class_layout(bin);
    debug_assert!(l.size() >= size && l.size() - size < CLASS_BYTES);
    Some((bin, l))
}

impl CellCache {
    pub(crate) fn new(enabled: bool) -> Self {
        CellCache { bins: Default::default(), enabled }
    }

    /// Number of cached blocks (for tests).
    #[allow(dead_code)]
    pub(crate) fn len(&self) -> usize {
        self.bins.iter().map(Vec::len).sum()
    }
}

impl Drop for CellCache {
    fn drop(&mut self) {
        for (bin, v) in self.bins.iter_mut().enumerate() {
            let l = class_layout(bin);
            for p in v.drain(..) {
                // SAFETY: every cached block was allocated with exactly this class layout.
                unsafe { dealloc(p.as_ptr(), l) };
            }
        }
    }
}

/// Memory for a cell of `layout`, from `cache` when it has a block of the class.
pub(crate) fn alloc_cell(layout: Layout, cache: Option<&mut CellCache>) -> NonNull<u8> {
    let (req, bin) = match class_of(layout) {
        Some((bin, l)) => (l, Some(bin)),
        None => (layout, None),
    };
    if let (Some(bin), Some(c)) = (bin, cache) {
        if let Some(p) = c.bins[bin].pop() {
            return p;
        }
    }
    // SAFETY: `req` has a non-zero size (a cell always contains its header).
    NonNull::new(unsafe { alloc(req) }).unwrap_or_else(|| handle_alloc_error(req))
}

/// Frees a cell's memory (already dropped in place): onto the current P's cache if this thread
/// holds one and the class list has room, else to the allocator.
///
/// # Safety
/// `ptr` came from [`alloc_cell`] with the same `layout` and is no longer used.
pub(crate) unsafe fn free_cell(ptr: NonNull<u8>, layout: Layout) {
    let Some((bin, req)) = class_of(layout) else {
        // SAFETY: allocated by alloc_cell with `layout` itself (no class).
        unsafe { dealloc(ptr.as_ptr(), layout) };
        return;
    };
    let cached = with_current(|cx| {
        let Some(cx) = cx else { return false };
        let Ok(mut guard) = cx.p.try_borrow_mut() else { return false };
        let Some(p) = guard.as_mut() else { return false };
        let c = &mut p.cache;
        if c.enabled && c.bins[bin].len() < PER_BIN {
            c.bins[bin].push(ptr);
            true
        } else {
            false
        }
    });
    if !cached {
        // SAFETY: allocated with the class layout `req`.
        unsafe { dealloc(ptr.as_ptr(), req) };
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn classes_round_up_and_bypass_large_or_overaligned() {
        let l = |s, a| Layout::from_size_align(s, a).unwrap();
        let class = |s, a| class_of(l(s, a)).map(|c| (c.0, c.1.size()));
        assert_eq!(class(1, 8), Some((0, 8)));
        assert_eq!(class(8, 8), Some((0, 8)));
        assert_eq!(class(9, 8), Some((1, 24)));
        assert_eq!(class(24, 8), Some((1, 24)));
        assert_eq!(class(25, 8), Some((2, 40)));
        // A 168-byte cell requests 168 (a 176-byte glibc chunk), not 176 (a 192-byte one).
        assert_eq!(class(168, 8), Some((10, 168)));
        assert_eq!(class(176, 16), Some((11, 184)));
        assert_eq!(class(504, 16), Some((31, 504)));
        assert!(class_of(l(505, 8)).is_none());
        assert!(class_of(l(64, 64)).is_none());
    }

    #[test]
    fn cache_reuses_blocks_of_a_class() {
        let mut c = CellCache::new(true);
        let l = Layout::from_size_align(100, 8).unwrap();
        let a = alloc_cell(l, Some(&mut c));
        let (bin, _) = class_of(l).unwrap();
        c.bins[bin].push(a);
        let b = alloc_cell(Layout::from_size_align(104, 8).unwrap(), Some(&mut c));
        assert_eq!(a, b, "a block of the same class is reused");
        assert_eq!(c.len(), 0);
        c.bins[bin].push(b); // freed by the cache's Drop
    }
}
