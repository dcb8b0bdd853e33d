//! Blocks and results: the result entries of the items one lane accepted for one batch
//! ([`Block`]), what a finished block hands its futures ([`Results`]), and a batch a slot has
//! taken ([`Taken`]). Shared by the submit path (`accept`, `submit`, `many`), the take
//! (`worker`) and the scatter (`run`); their protocol is the parent module's (steps 1-4).
use crate::error::OffloadError;
use crate::timeline::CloseReason;
use parking_lot::Mutex;
use std::sync::{Arc, OnceLock};
use std::task::Waker;
use std::time::Instant;

/// The result entries of the items one lane accepted for one batch: shared by the worker
/// that runs the batch and those items' futures. Its lock is taken by the lane's submitters
/// (one P: uncontended), their futures' polls, and once by the worker's scatter.
pub(super) struct Block<O> {
    pub(super) state: Mutex<BlockState<O>>,
    /// Set once by the worker's scatter *before* it marks the block `done` under the lock:
    /// each `submit`'s output in a cell of its own, or the batch's failure. A woken future
    /// takes its output here without the block's lock, which every future of the block would
    /// otherwise take in turn from both Ms (perf: 64% of `Submit::poll`'s time).
    pub(super) results: OnceLock<Results<O>>,
}

/// What a finished block hands its futures (see [`Block::results`]).
pub(super) struct Results<O> {
    /// The batch the block ran in (for an internal error's message).
    pub(super) seq: u64,
    /// The error every item of a failed batch gets.
    pub(super) failure: Option<OffloadError>,
    /// Per entry, its output while not taken: `submit` entries only (a `submit_many` piece's
    /// outputs stay in its entry); empty for a failed batch. Each cell is locked by its own
    /// future only, so the lock is never contended.
    pub(super) outs: Box<[Mutex<Option<O>>]>,
}

impl<O> Results<O> {
    /// Entry `index`'s output (taken: a second call is an internal error), or the failure.
    pub(super) fn take(&self, index: usize) -> Result<O, OffloadError> {
        if let Some(e) = &self.failure {
            return Err(e.clone());
        }
        self.outs.get(index).and_then(|c| c.lock().take()).ok_or_else(|| OffloadError::Batch {
            batch: self.seq,
            kernel: "?",
            msg: "internal: result already taken".into(),
        })
    }
}

pub(super) struct BlockState<O> {
    /// The batch it was taken into (`None` while its lane is still open).
    pub(super) seq: Option<u64>,
    /// Until then, the batch it is expected in (the next to be taken when it was created):
    /// what a task dump shows while the batch is still open.
    pub(super) expect: u64,
    /// Set (with every output or the failure written) by the worker, under this lock.
    pub(super) done: bool,
    /// The error every item of a failed batch gets.
    pub(super) failure: Option<OffloadError>,
    /// One per submit (an item, or a slice of `submit_many`), in the lane's item order.
    pub(super) entries: Vec<Entry<O>>,
}

impl<O> Block<O> {
    pub(super) fn new(expect: u64) -> Arc<Block<O>> {
        Arc::new(Block {
            state: Mutex::new(BlockState {
                seq: None,
                expect,
                done: false,
                failure: None,
                entries: Vec::new(),
            }),
            results: OnceLock::new(),
        })
    }
}

impl<O> BlockState<O> {
    /// The batch number to show: its own once taken, else the expected one.
    pub(super) fn batch(&self) -> u64 {
        self.seq.unwrap_or(self.expect)
    }
}

pub(super) struct Entry<O> {
    pub(super) waker: Option<Waker>,
    /// When `submit` was called for it (its queue wait starts here).
    pub(super) submitted: Instant,
    pub(super) out: Out<O>,
}

/// An entry's output(s).
pub(super) enum Out<O> {
    /// One item's (`submit`): delivered in the block's [`Results`].
    One,
    /// `len` consecutive items' (a piece of `submit_many`), in order.
    Many { len: usize, outs: Vec<O> },
}

impl<O> Out<O> {
    pub(super) fn len(&self) -> usize {
        match self {
            Out::One => 1,
            Out::Many { len, .. } => *len,
        }
    }
}

/// A batch a worker has taken.
pub(super) struct Taken<O> {
    pub(super) seq: u64,
    /// The blocks of its items' entries, each with the index of its first item.
    pub(super) blocks: Vec<(Arc<Block<O>>, usize)>,
    pub(super) opened: Instant,
    pub(super) closed_at: Instant,
    pub(super) reason: CloseReason,
    /// The trace flow arrow from its first item's `submit` (tracing only).
    pub(super) flow: Option<u64>,
}

/// An accepted entry: its block and its index there.
pub(super) type Piece<O> = (Arc<Block<O>>, usize);
