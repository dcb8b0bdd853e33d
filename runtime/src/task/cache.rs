//! Per-P free lists of task cells: Go's `p.gFree`, for stackless tasks.
//!
//! A task cell is allocated when a task is spawned and freed when its last reference goes.
//! Go keeps dead Gs on a per-P free list so `newproc` rarely reaches the allocator; gmprt does
//! the same with cell memory. Cells of different future types have different sizes, so the
//! cache keeps one list per 8-byte size class up to 512 bytes (`class_of`); every block of a
//! class has the class's full size and alignment, so any two are interchangeable.
//!
//! * `alloc_cell` — on the spawning M, with its P's cache: pop a block of the class; else
//!   refill [`BATCH`] from the global lists (`heap.rs`); else carve a fresh one from the P's
//!   chunk with no lock at all.
//! * `free_cell` — wherever the last reference drops: if this thread is an M holding a P, push
//!   the block onto that P's list, spilling down to [`BATCH`] once it holds [`PER_BIN`];
//!   otherwise hand it to the global lists.
//!
//! Only the M holding a P touches its cache (through its `Context`), so no synchronisation is
//! needed. Class-size cells never go back to the system allocator (see `heap.rs` for why and
//! what that costs); larger or over-aligned futures use it both ways. Whether the per-P layer
//! pays is measured, not assumed: `Builder::task_cache(false)` sends every class-size cell
//! through the global lists' lock instead, and `benches/README.md` records the comparison.

use super::heap::{self, Chunk, BATCH, BINS};
use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

/// Granularity of size classes: 8 bytes, the alignment of nearly every future. Cells are
/// carved from chunks, not taken from `malloc`, so there is no chunk header to round around:
/// a 136-byte cell takes 136 bytes (it took a 144-byte glibc chunk).
const CLASS_BYTES: usize = 8;
/// Blocks kept per class per P before spilling: Go keeps up to 64 free Gs per P. 64 blocks in
/// each class a workload uses (typically a handful) bound a P's cache to a few KiB per class.
const PER_BIN: usize = 64;
/// Largest alignment a class block has: blocks whose size is a multiple of 16 are carved
/// 16-aligned, the rest 8-aligned. Cells needing more bypass the cache.
const ALIGN: usize = 16;

/// The per-P cache (lives in `Processor`).
pub(crate) struct CellCache {
    bins: [Vec<NonNull<u8>>; BINS],
    /// Where this P carves fresh cells (no lock: only the P's owner touches it).
    chunk: Chunk,
    enabled: bool,
}

// SAFETY: the cache owns the blocks it holds (plain memory); it moves with its P between Ms.
unsafe impl Send for CellCache {}

/// A class's block size and alignment: `CLASS_BYTES · (bin + 1)` bytes, aligned to 16 when
/// that is a multiple of 16, else to 8.
#[inline]
fn class_shape(bin: usize) -> (usize, usize) {
    debug_assert!(bin < BINS);
    let size = CLASS_BYTES * (bin + 1);
    (size, if size.is_multiple_of(ALIGN) { ALIGN } else { CLASS_BYTES })
}

/// The class of a layout: the smallest class whose blocks are at least as large and as aligned.
#[inline]
fn class_of(layout: Layout) -> Option<usize> {
    let (size, align) = (layout.size(), layout.align());
    if align > ALIGN || size > CLASS_BYTES * BINS || size == 0 {
        return None;
    }
    // 16-aligned cells need a class whose size is a multiple of 16 (only those are carved
    // 16-aligned); the rest round up to the next 8 bytes.
    let step = align.max(CLASS_BYTES);
    let bin = size.div_ceil(step) * step / CLASS_BYTES - 1;
    debug_assert!({
        let (s, a) = class_shape(bin);
        s >= size && a >= align && s - size < step
    });
    Some(bin)
}

impl CellCache {
    pub(crate) fn new(enabled: bool) -> Self {
        CellCache { bins: [const { Vec::new() }; BINS], chunk: Chunk::EMPTY, enabled }
    }

    /// Number of cached blocks (for tests).
    #[allow(dead_code)]
    pub(crate) fn len(&self) -> usize {
        self.bins.iter().map(Vec::len).sum()
    }
}

impl Drop for CellCache {
    /// A retired P gives its blocks and its chunk's tail to the global lists.
    fn drop(&mut self) {
        heap::retire(&mut self.bins, std::mem::replace(&mut self.chunk, Chunk::EMPTY));
    }
}

/// Memory for a cell of `layout`, from `cache` when the spawning thread holds a P.
pub(crate) fn alloc_cell(layout: Layout, cache: Option<&mut CellCache>) -> NonNull<u8> {
    let Some(bin) = class_of(layout) else {
        // SAFETY: `layout` has a non-zero size (a cell always contains its header).
        return NonNull::new(unsafe { alloc(layout) }).unwrap_or_else(|| handle_alloc_error(layout));
    };
    let (size, align) = class_shape(bin);
    let Some(c) = cache.filter(|c| c.enabled) else {
        return heap::alloc_one(bin, size, align);
    };
    if let Some(p) = c.bins[bin].pop() {
        return p;
    }
    if heap::refill(bin, &mut c.bins[bin]) > 0 {
        if let Some(p) = c.bins[bin].pop() {
            return p;
        }
    }
    loop {
        if let Some(p) = c.chunk.carve(size, align) {
            return p;
        }
        c.chunk = heap::take_chunk();
    }
}

/// Frees a cell's memory (already dropped in place): onto `cache` (the current P's, when the
/// freeing thread holds one) if it is enabled, else to the global lists; cells outside the
/// classes go back to the allocator.
///
/// # Safety
/// `ptr` came from [`alloc_cell`] with the same `layout` and is no longer used.
pub(crate) unsafe fn free_cell(ptr: NonNull<u8>, layout: Layout, cache: Option<&mut CellCache>) {
    let Some(bin) = class_of(layout) else {
        // SAFETY: allocated by alloc_cell with `layout` itself (no class).
        unsafe { dealloc(ptr.as_ptr(), layout) };
        return;
    };
    match cache.filter(|c| c.enabled) {
        Some(c) => {
            c.bins[bin].push(ptr);
            if c.bins[bin].len() >= PER_BIN {
                heap::spill(bin, &mut c.bins[bin], BATCH);
            }
        }
        // SAFETY: a class block (the caller's contract), no longer used.
        None => unsafe { heap::free_one(bin, ptr) },
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn classes_round_up_and_bypass_large_or_overaligned() {
        let l = |s, a| Layout::from_size_align(s, a).unwrap();
        let class = |s, a| class_of(l(s, a)).map(|b| (b, class_shape(b)));
        assert_eq!(class(1, 1), Some((0, (8, 8))));
        assert_eq!(class(8, 8), Some((0, (8, 8))));
        assert_eq!(class(9, 8), Some((1, (16, 16))));
        assert_eq!(class(17, 8), Some((2, (24, 8))));
        // A 136-byte cell takes 136 bytes (glibc gave it a 144-byte chunk).
        assert_eq!(class(136, 8), Some((16, (136, 8))));
        // A 16-aligned one rounds to a multiple of 16, whose blocks are carved 16-aligned.
        assert_eq!(class(136, 16), Some((17, (144, 16))));
        assert_eq!(class(512, 16), Some((63, (512, 16))));
        assert!(class_of(l(513, 8)).is_none());
        assert!(class_of(l(64, 32)).is_none());
    }

    #[test]
    fn cache_reuses_blocks_of_a_class_and_carves_aligned_fresh_ones() {
        // Classes smaller than any task cell (72-byte header), which no concurrent test's tasks
        // spill into or take from the global lists.
        let mut c = CellCache::new(true);
        let l = Layout::from_size_align(20, 4).unwrap();
        let a = alloc_cell(l, Some(&mut c));
        let bin = class_of(l).unwrap();
        c.bins[bin].push(a);
        let b = alloc_cell(Layout::from_size_align(24, 8).unwrap(), Some(&mut c));
        assert_eq!(a, b, "a block of the same class is reused");
        assert_eq!(c.len(), 0);
        let l16 = Layout::from_size_align(40, 16).unwrap();
        for _ in 0..1000 {
            let p = alloc_cell(l16, Some(&mut c));
            assert_eq!(p.as_ptr() as usize % 16, 0, "a 16-aligned cell is carved 16-aligned");
            c.bins[class_of(l16).unwrap()].push(p);
        }
        c.bins[bin].push(b); // given back to the heap by the cache's Drop
    }

    #[test]
    fn a_full_list_spills_to_the_heap_and_an_empty_one_refills_from_it() {
        // A class smaller than any task cell (a cell holds a 72-byte header), so no task of a
        // concurrent test touches the heap's list for it.
        let l = Layout::from_size_align(56, 8).unwrap();
        let bin = class_of(l).unwrap();
        let mut c = CellCache::new(true);
        let blocks: Vec<_> = (0..PER_BIN).map(|_| alloc_cell(l, Some(&mut c))).collect();
        let before = heap::free_len(bin);
        for (i, p) in blocks.into_iter().enumerate() {
            c.bins[bin].push(p);
            if c.bins[bin].len() >= PER_BIN {
                heap::spill(bin, &mut c.bins[bin], BATCH);
            }
            assert!(c.bins[bin].len() < PER_BIN, "after {} frees the list is bounded", i + 1);
        }
        assert_eq!(heap::free_len(bin), before + PER_BIN - BATCH);
        let kept = std::mem::take(&mut c.bins[bin]);
        let p = alloc_cell(l, Some(&mut c));
        assert_eq!(c.bins[bin].len(), BATCH - 1, "an empty list refills a batch");
        assert_eq!(heap::free_len(bin), before + PER_BIN - 2 * BATCH);
        c.bins[bin].push(p);
        c.bins[bin].extend(kept); // given back to the heap by the cache's Drop
    }
}
