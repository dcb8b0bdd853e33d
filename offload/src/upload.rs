//! Partial uploads of resident data: which copies [`Slot::upload`](crate::backend::Slot::upload)
//! makes for a set of word ranges.
//!
//! Data that stays on the device between runs (a resident book, say) changes a little per run:
//! a caller stages the changed words and names their ranges. Each range could be one copy, but
//! on CUDA each copy is a driver call of a few µs, so a tick that moved 500 adjacent segments
//! paid 500 calls for what is one contiguous span. Every backend therefore copies the ranges'
//! [`upload_plan`]: sorted, with touching or overlapping ranges merged, so a simulated device
//! prices the copies the CUDA one makes.
use crate::error::OffloadError;
use std::ops::Range;

/// The copies [`Slot::upload`](crate::backend::Slot::upload) makes for `ranges` on a slot of
/// `in_words` input words: the ranges sorted, and those that touch or overlap merged into one,
/// empty ones dropped — every backend's one plan, so a simulated device prices the copies the
/// CUDA one makes. Merging is exact: every copy reads the same staging snapshot, so words
/// covered twice get the same value either way, and no word outside the ranges is copied (a
/// gap between two ranges may hold, on the device, what no staging word holds any more). A
/// range past the slot's input is an error naming it.
///
/// Called by backends only (each `upload` starts with it).
pub(crate) fn upload_plan(
    ranges: &[Range<usize>],
    in_words: usize,
) -> Result<Vec<Range<usize>>, OffloadError> {
    if let Some(r) = ranges.iter().find(|r| r.start > r.end || r.end > in_words) {
        return Err(OffloadError::Config(format!(
            "upload range {r:?} is not within the slot's {in_words} input words"
        )));
    }
    let mut sorted: Vec<_> = ranges.iter().filter(|r| !r.is_empty()).cloned().collect();
    sorted.sort_unstable_by_key(|r| r.start);
    let mut plan: Vec<Range<usize>> = Vec::with_capacity(sorted.len());
    for r in sorted {
        match plan.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => plan.push(r),
        }
    }
    debug_assert!(plan.windows(2).all(|w| w[0].end < w[1].start), "merged runs are apart");
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::upload_plan;

    #[test]
    fn touching_and_overlapping_ranges_merge_and_gaps_stay() {
        // Adjacent segments in any order, an overlap, an empty range, and a separate list.
        let plan = upload_plan(&[10..20, 0..10, 20..30, 25..28, 5..5, 40..44], 50).unwrap();
        assert_eq!(plan, [0..30, 40..44]);
        // A gap of one word is not copied.
        assert_eq!(upload_plan(&[0..2, 3..4], 4).unwrap(), [0..2, 3..4]);
        assert!(upload_plan(&[], 4).unwrap().is_empty());
        let e = upload_plan(&[0..2, 3..5], 4).unwrap_err().to_string();
        assert!(e.contains("upload range 3..5 is not within the slot's 4 input words"), "{e}");
    }
}
