//! [`Comm`], the world as tasks see it: point to point ([`Comm::send`], [`Comm::recv`]), the
//! linear collectives built on them ([`Comm::scatter`], [`Comm::gather`]), the failure check
//! ([`Comm::agree`]) and the round-trip probe ([`Comm::ping_pong`]). Each call waits the way its
//! [`Wait`] says: the blocking MPI call handed off through [`syscall`], or the non-blocking one
//! tested by `poll`. The protocols (which wait and why, linear collectives, a failed rank,
//! tag matching) are the parent module's.
use super::pending::Pending;
use super::{MpiError, Wait, FALLBACKS, HANDOFFS, PARKS, POLL_PARK_MAX, POLL_PARK_MIN, POLL_YIELDS, TESTS};
use crate::runtime::{syscall, time::sleep, yield_now};
use mpi::datatype::Equivalence;
use mpi::point_to_point::{Destination, Source, Status};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::Tag;
use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Tags of the calls built on send and receive, so that one call's messages never match
/// another's.
const TAG_SCATTER: Tag = 1_000_001;
const TAG_GATHER: Tag = 1_000_002;
const TAG_AGREE: Tag = 1_000_003;
const TAG_VERDICT: Tag = 1_000_004;
const TAG_PING: Tag = 1_000_005;

/// The longest failure message [`Comm::agree`] carries (longer ones are cut, on a character
/// boundary).
pub const AGREE_MESSAGE_BYTES: usize = 1024;

/// The world, for tasks: `Copy + Send + Sync`, and holds no MPI handle (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Comm {
    pub(super) rank: usize,
    pub(super) size: usize,
    pub(super) wait: Wait,
}

impl Comm {
    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Ranks in the world.
    pub fn size(&self) -> usize {
        self.size
    }

    /// How this handle's calls wait.
    pub fn wait(&self) -> Wait {
        self.wait
    }

    /// The same world, waiting the `wait` way.
    pub fn with_wait(self, wait: Wait) -> Comm {
        Comm { wait, ..self }
    }

    fn peer(&self, rank: usize) -> Result<i32, MpiError> {
        if rank >= self.size || rank == self.rank {
            return Err(MpiError::BadRank { rank, size: self.size });
        }
        Ok(rank as i32)
    }

    /// Sends `buf` to rank `to` with `tag`, and gives the buffer back.
    ///
    /// # Errors
    /// [`MpiError::BadRank`] for `to` outside the world or this rank; [`MpiError::TooLong`].
    pub async fn send<T>(&self, to: usize, tag: Tag, buf: Vec<T>) -> Result<Vec<T>, MpiError>
    where
        T: Equivalence + Send + Sync + Clone + 'static,
    {
        let len = buf.len();
        let buf = Arc::new(buf);
        self.send_part(to, tag, &buf, 0..len).await?;
        // Every request on it has completed, so this is the last reference (no copy).
        Ok(Arc::try_unwrap(buf).unwrap_or_else(|shared| shared.as_ref().clone()))
    }

    /// Sends `buf[range]` to rank `to` with `tag`: a part of a buffer, without copying it.
    async fn send_part<T>(
        &self,
        to: usize,
        tag: Tag,
        buf: &Arc<Vec<T>>,
        range: Range<usize>,
    ) -> Result<(), MpiError>
    where
        T: Equivalence + Send + Sync + Clone + 'static,
    {
        let to = self.peer(to)?;
        count(range.len())?;
        if range.end > buf.len() {
            return Err(MpiError::Args(format!("send: part {range:?} of a buffer of {}", buf.len())));
        }
        if self.wait == Wait::HandOff {
            let part = &buf[range.clone()];
            let sent = syscall(|| SimpleCommunicator::world().process_at_rank(to).send_with_tag(part, tag));
            match sent {
                Ok(()) => {
                    HANDOFFS.fetch_add(1, Relaxed);
                    return Ok(());
                }
                Err(_refused) => {
                    FALLBACKS.fetch_add(1, Relaxed);
                }
            }
        }
        poll(Pending::send(buf.clone(), range, to, tag)).await;
        Ok(())
    }

    /// Receives from rank `from` with `tag` into `buf`, whose length is the element count
    /// expected, and returns it filled.
    ///
    /// # Errors
    /// [`MpiError::BadRank`], [`MpiError::TooLong`], and [`MpiError::Count`] when a shorter
    /// message came (a longer one is MPI's truncation error, fatal to the job under MPI's
    /// default error handler: `mpirun` stops every rank).
    pub async fn recv<T>(&self, from: usize, tag: Tag, mut buf: Vec<T>) -> Result<Vec<T>, MpiError>
    where
        T: Equivalence + Send + Sync + Clone + 'static,
    {
        let src = self.peer(from)?;
        count(buf.len())?;
        let status = if self.wait == Wait::HandOff {
            let got = syscall(|| {
                SimpleCommunicator::world().process_at_rank(src).receive_into_with_tag(&mut buf[..], tag)
            });
            match got {
                Ok(status) => {
                    HANDOFFS.fetch_add(1, Relaxed);
                    Some(status)
                }
                Err(_refused) => {
                    FALLBACKS.fetch_add(1, Relaxed);
                    None
                }
            }
        } else {
            None
        };
        let status = match status {
            Some(s) => s,
            None => {
                let (b, s) = poll(Pending::recv(buf, src, tag)).await;
                buf = b.unwrap_or_default(); // a receive's `Pending` always gives its buffer back
                s
            }
        };
        let got = status.count(T::equivalent_datatype()) as usize;
        if got != buf.len() {
            return Err(MpiError::Count { from, expected: buf.len(), got });
        }
        Ok(buf)
    }

    /// Scatters `data` from `root`: rank `r` gets `counts[r]` elements, in rank order (rank 0
    /// the first `counts[0]`, …). The root passes `Some(data)` and every rank the same
    /// `counts`. A rank other than the root receives its part into `recv`, resized to its
    /// count only if it has another length (pass the last scatter's buffer back in to reuse its
    /// memory: a fresh buffer's pages are faulted in during the receive), and gets it back. The
    /// root's own part stays where it is, in `data` (`MPI_IN_PLACE`): the root gets `recv` back
    /// untouched. Linear: the root sends one message per other rank, in rank order, each a
    /// range of `data`, not a copy (module docs).
    ///
    /// # Errors
    /// [`MpiError::Args`] when `counts` does not have one count per rank, or does not sum to
    /// the root's data, or the root has no data; the errors of [`Comm::send`] / [`Comm::recv`].
    pub async fn scatter<T>(
        &self,
        root: usize,
        data: Option<Arc<Vec<T>>>,
        counts: &[usize],
        mut recv: Vec<T>,
    ) -> Result<Vec<T>, MpiError>
    where
        T: Equivalence + Send + Sync + Clone + Default + 'static,
    {
        self.check_root(root)?;
        self.check_counts("scatter", counts)?;
        if self.rank != root {
            if recv.len() != counts[self.rank] {
                recv.resize(counts[self.rank], T::default());
            }
            return self.recv(root, TAG_SCATTER, recv).await;
        }
        let data = data.ok_or_else(|| MpiError::Args("scatter: the root passes the data".into()))?;
        let total: usize = counts.iter().sum();
        if total != data.len() {
            return Err(MpiError::Args(format!(
                "scatter: the counts sum to {total}, the root's data has {}",
                data.len()
            )));
        }
        let mut at = 0;
        for (r, &c) in counts.iter().enumerate() {
            if r != root {
                self.send_part(r, TAG_SCATTER, &data, at..at + c).await?;
            }
            at += c;
        }
        Ok(recv)
    }

    /// Gathers every rank's part on `root`: rank `r` passes its `counts[r]` elements (every
    /// rank the same `counts`); the root gets the parts in rank order (its own included), the
    /// others `None`. Linear: the root receives one message per other rank, in rank order.
    ///
    /// # Errors
    /// [`MpiError::Args`] for a root outside the world, `counts` without one count per rank, or
    /// a part of another length than its count; those of [`Comm::send`] / [`Comm::recv`]
    /// ([`MpiError::Count`] when a rank sent another length).
    pub async fn gather<T>(
        &self,
        root: usize,
        mine: Vec<T>,
        counts: &[usize],
    ) -> Result<Option<Vec<Vec<T>>>, MpiError>
    where
        T: Equivalence + Send + Sync + Clone + Default + 'static,
    {
        self.check_root(root)?;
        self.check_counts("gather", counts)?;
        if mine.len() != counts[self.rank] {
            return Err(MpiError::Args(format!(
                "gather: rank {} passed {} elements, its count is {}",
                self.rank,
                mine.len(),
                counts[self.rank]
            )));
        }
        if self.rank != root {
            self.send(root, TAG_GATHER, mine).await?;
            return Ok(None);
        }
        let mut all = Vec::with_capacity(self.size);
        let mut mine = Some(mine);
        for (r, &c) in counts.iter().enumerate() {
            if r == root {
                all.push(mine.take().unwrap_or_default());
            } else {
                all.push(self.recv(r, TAG_GATHER, vec![T::default(); c]).await?);
            }
        }
        Ok(Some(all))
    }

    /// The checkpoint of the module docs: every rank passes its own outcome; every rank gets
    /// `Ok` if all ranks passed `Ok`, else [`MpiError::RankFailed`] naming the first failed
    /// rank and its message (cut to [`AGREE_MESSAGE_BYTES`]). Every rank must call it at the
    /// same point, a failed rank included.
    ///
    /// # Errors
    /// [`MpiError::RankFailed`]; those of [`Comm::send`] / [`Comm::recv`].
    pub async fn agree(&self, outcome: Result<(), String>) -> Result<(), MpiError> {
        // A report is [failed: 0 or 1][the text, zero-padded]; the verdict is the same with
        // the failed rank's number (8 bytes, little-endian) after the flag.
        let report = encode(&outcome);
        let verdict = if self.rank == 0 {
            let mut first = outcome.is_err().then_some((0usize, report));
            for r in 1..self.size {
                let got = self.recv(r, TAG_AGREE, vec![0u8; 1 + AGREE_MESSAGE_BYTES]).await?;
                if first.is_none() && got[0] != 0 {
                    first = Some((r, got));
                }
            }
            let mut v = vec![0u8; 9 + AGREE_MESSAGE_BYTES];
            if let Some((r, report)) = &first {
                v[0] = 1;
                v[1..9].copy_from_slice(&(*r as u64).to_le_bytes());
                v[9..].copy_from_slice(&report[1..]);
            }
            for r in 1..self.size {
                self.send(r, TAG_VERDICT, v.clone()).await?;
            }
            v
        } else {
            self.send(0, TAG_AGREE, report).await?;
            self.recv(0, TAG_VERDICT, vec![0u8; 9 + AGREE_MESSAGE_BYTES]).await?
        };
        if verdict[0] == 0 {
            return Ok(());
        }
        let mut rank = [0u8; 8];
        rank.copy_from_slice(&verdict[1..9]);
        Err(MpiError::RankFailed { rank: u64::from_le_bytes(rank) as usize, message: text(&verdict[9..]) })
    }

    /// Round trips of `bytes`-byte messages between rank 0 and rank `peer`, `repeats` times
    /// after one untimed warm-up: rank 0 sends and waits for the echo, `peer` echoes. Rank 0
    /// gets the round-trip times, `peer` an empty list; other ranks must not call it.
    ///
    /// # Errors
    /// [`MpiError::BadRank`] when called on a rank other than 0 and `peer`, or with `peer` 0;
    /// those of [`Comm::send`] / [`Comm::recv`].
    pub async fn ping_pong(
        &self,
        peer: usize,
        bytes: usize,
        repeats: usize,
    ) -> Result<Vec<Duration>, MpiError> {
        if peer == 0 || peer >= self.size || (self.rank != 0 && self.rank != peer) {
            return Err(MpiError::BadRank { rank: peer, size: self.size });
        }
        let mut buf = vec![0u8; bytes];
        let mut times = Vec::with_capacity(repeats);
        for i in 0..=repeats {
            if self.rank == 0 {
                let t = Instant::now();
                buf = self.send(peer, TAG_PING, buf).await?;
                buf = self.recv(peer, TAG_PING, buf).await?;
                if i > 0 {
                    times.push(t.elapsed());
                }
            } else {
                buf = self.recv(0, TAG_PING, buf).await?;
                buf = self.send(0, TAG_PING, buf).await?;
            }
        }
        Ok(times)
    }

    fn check_counts(&self, call: &str, counts: &[usize]) -> Result<(), MpiError> {
        if counts.len() != self.size {
            return Err(MpiError::Args(format!(
                "{call}: {} counts for a world of {} ranks",
                counts.len(),
                self.size
            )));
        }
        Ok(())
    }

    fn check_root(&self, root: usize) -> Result<(), MpiError> {
        if root >= self.size {
            return Err(MpiError::Args(format!("root {root} is outside the world of {} ranks", self.size)));
        }
        Ok(())
    }
}

/// MPI counts are `i32`.
fn count(len: usize) -> Result<i32, MpiError> {
    i32::try_from(len).map_err(|_| MpiError::TooLong { len })
}

/// An outcome as [`Comm::agree`]'s message: a flag byte, then the error's text, zero-padded.
fn encode(outcome: &Result<(), String>) -> Vec<u8> {
    let mut w = vec![0u8; 1 + AGREE_MESSAGE_BYTES];
    if let Err(e) = outcome {
        w[0] = 1;
        let t = cut(e, AGREE_MESSAGE_BYTES);
        w[1..1 + t.len()].copy_from_slice(t.as_bytes());
    }
    w
}

/// The zero-padded text of a report or verdict.
fn text(w: &[u8]) -> String {
    String::from_utf8_lossy(w).trim_end_matches('\u{0}').to_string()
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Tests `p` until it completes: yields for the first [`POLL_YIELDS`] tests, then parks on a
/// timer between tests, from [`POLL_PARK_MIN`] doubling to [`POLL_PARK_MAX`].
async fn poll<T: Equivalence + Send + Sync + 'static>(mut p: Pending<T>) -> (Option<Vec<T>>, Status) {
    let mut tests = 0u32;
    let mut park = POLL_PARK_MIN;
    loop {
        TESTS.fetch_add(1, Relaxed);
        if let Some(done) = p.try_finish() {
            return done;
        }
        tests += 1;
        if tests < POLL_YIELDS {
            yield_now().await;
        } else {
            PARKS.fetch_add(1, Relaxed);
            sleep(park).await;
            park = (park * 2).min(POLL_PARK_MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agree_messages_round_trip_and_cut_on_characters() {
        assert_eq!(encode(&Ok(()))[0], 0);
        let w = encode(&Err("device failed".into()));
        assert_eq!((w[0], text(&w[1..]).as_str()), (1, "device failed"));
        let long = "é".repeat(AGREE_MESSAGE_BYTES); // 2 bytes each
        let w = encode(&Err(long));
        assert_eq!(text(&w[1..]).chars().count(), AGREE_MESSAGE_BYTES / 2);
        assert_eq!(cut("aé", 2), "a");
    }
}
