//! The engine behind [`select!`](crate::select): Go's `selectgo`, as a future.
//!
//! # How a select waits (see also "select" in the module doc of `chan`)
//!
//! A select that has to wait puts one waiter (slot) on every channel it selects on, all
//! sharing one [`SelToken`]. Whoever completes one of them must first *win the token* (a CAS
//! `WAITING → CLAIMED(arm)`, done under that channel's lock), so exactly one arm takes effect:
//! the others' counterparts lose the CAS and leave those slots alone. This is Go's
//! `selectDone` flag.
//!
//! Each poll that does not find the token claimed runs:
//!
//! 1. **Reset.** If the select has waiters from an earlier poll, take the token back
//!    (`WAITING → POLLING`; if that fails, an arm was claimed: report it) and remove every
//!    waiter. While the token says `POLLING`, counterparts skip the select's slots.
//! 2. **Phase A.** Visit the arms in a fresh uniformly random order (Go's `pollorder`); try
//!    each channel arm under its own channel's lock, poll each future arm (with no lock held).
//!    The first that is ready is chosen. So among the arms ready at once, each is chosen with
//!    equal probability. If none is ready and there is a `default` arm, it is chosen.
//!    **With a `default` arm and two or more channel arms**, phase A is replaced by one pass
//!    under every channel's lock at once (the future arms are polled first, lock-free): a
//!    select that chooses `default` must have seen every channel empty (or full) at one
//!    instant, as Go's `selectgo`, which locks all before it looks (`TestNonblockSelectRace`
//!    failed 1 run in 2 before). One channel arm keeps the phase A path: its look under its
//!    own lock is already one instant.
//! 3. **Phase B.** Lock every channel the select uses, in a global order (Go's `lockorder`,
//!    here by channel id; plain operations take one lock, so there is no deadlock), try the channel arms again in
//!    the same order, and if none is ready queue a waiter on each, set the token `WAITING`,
//!    and unlock. Doing the re-check and the queueing under all the locks at once means a
//!    counterpart that arrived at any time is either seen by the re-check or sees the select's
//!    `WAITING` waiters. In particular a counterpart that skipped a slot while the token said
//!    `POLLING` (step 1 or 2) queued itself before phase B took that channel's lock, so phase
//!    B finds it. Two selects meeting on a channel cannot both skip each other: their phase Bs
//!    are serialised by that channel's lock, and the later one finds the earlier one `WAITING`.
//!
//! Closing a channel claims the select through that arm (as Go's `closechan` does), so the
//! arm is reported: a `send` arm with its value back in `Err`, a `recv` arm with `None` — the
//! latter once the channel is drained (see "The protocol" in the module doc of `chan`: while a
//! value is promised to another receiver, a `recv` arm keeps waiting, as a plain `recv` does).
//! A select with a `default` arm never waits, so its `recv` arm on a closed channel answers
//! `None` at once even then (Go's non-blocking receive; `Op::nonblocking`).

use super::token::SelToken;
use super::waitq::Wakes;
use crate::loom::sync::{Mutex, MutexGuard};
use std::cell::Cell;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// The index `Select` returns when the `default` arm was chosen.
pub const DEFAULT: usize = usize::MAX;

/// At most this many arms in one `select!` (Go allows 65536; a macro needs a limit).
pub const MAX_ARMS: usize = 64;

// One declaration per invocation: the loom facade's `thread_local!` strips `const { .. }`
// from a single declaration only.
crate::loom::thread_local! {
    /// One spare token per thread, so a select in a loop does not allocate each time it waits.
    static SPARE_TOKEN: Cell<Option<Arc<SelToken>>> = const { Cell::new(None) };
}
crate::loom::thread_local! {
    /// xorshift64* state for `pollorder`; 0 until seeded.
    static RNG: Cell<u64> = const { Cell::new(0) };
}

fn new_token() -> Arc<SelToken> {
    let spare = if crate::loom::LOOM { None } else { SPARE_TOKEN.with(|s| s.take()) };
    match spare {
        Some(t) => {
            t.reset();
            t
        }
        None => Arc::new(SelToken::new()),
    }
}

fn recycle_token(mut t: Arc<SelToken>) {
    // Only a token no slot refers to any more may be reused (`get_mut` checks that).
    if !crate::loom::LOOM && Arc::get_mut(&mut t).is_some() {
        SPARE_TOKEN.with(|s| s.set(Some(t)));
    }
}

/// A cheap per-thread random number (xorshift64*), seeded once per thread from std's
/// randomly keyed hasher (deterministically under loom, whose models must replay).
fn fastrand() -> u64 {
    RNG.with(|r| {
        let mut x = r.get();
        if x == 0 {
            x = if crate::loom::LOOM {
                0x9E37_79B9_7F4A_7C15
            } else {
                use std::hash::{BuildHasher, Hasher};
                std::collections::hash_map::RandomState::new().build_hasher().finish() | 1
            };
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        r.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    })
}

/// A uniformly random permutation of `0..N` (Fisher–Yates; Go's `pollorder`).
pub(crate) fn poll_order<const N: usize>() -> [usize; N] {
    let mut order = [0; N];
    for (i, o) in order.iter_mut().enumerate() {
        *o = i;
    }
    for i in (1..N).rev() {
        let j = (fastrand() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// A channel's lock with its place in the lock order (the channel's unique id).
pub(crate) type OrderedLock<'x> = (u64, &'x Mutex<()>);

/// The channel locks a select holds during phase B, each once, taken in id order.
pub(crate) struct HeldLocks<'s, 'x> {
    held: &'s [Option<(u64, MutexGuard<'x, ()>)>],
}

impl<'x> HeldLocks<'_, 'x> {
    /// The guard of the lock of channel `id`, which this select must hold.
    ///
    /// # Panics
    /// If it does not (a bug in `select`).
    pub(crate) fn guard_of(&self, id: u64) -> &MutexGuard<'x, ()> {
        self.held
            .iter()
            .flatten()
            .find(|(k, _)| *k == id)
            .map(|(_, g)| g)
            .expect("select: a channel arm's lock is not among the locks held in phase B")
    }
}

/// Locks each distinct lock of `locks` in id order (Go's `lockorder`; Go sorts by address,
/// which would make loom's executions differ from one another).
fn lock_all<'x, const N: usize>(
    locks: &[Option<OrderedLock<'x>>; N],
) -> [Option<(u64, MutexGuard<'x, ()>)>; N] {
    let mut sorted = *locks;
    // `None`s (future arms) sort first; they are skipped below.
    sorted.sort_unstable_by_key(|s| s.map(|(id, _)| id));
    let mut guards: [Option<(u64, MutexGuard<'x, ()>)>; N] = std::array::from_fn(|_| None);
    let mut n = 0;
    let mut last = None;
    for (id, lock) in sorted.into_iter().flatten() {
        if last != Some(id) {
            guards[n] = Some((id, lock.lock()));
            n += 1;
            last = Some(id);
        }
    }
    guards
}

/// What a [`Select`] asks of one arm (the macro routes it to the arm's `handle` method).
#[doc(hidden)]
pub struct Op<'o, 'x> {
    pub(crate) kind: OpKind<'o, 'x>,
    /// The select has a `default` arm, so it never waits: a `recv` arm on a closed channel
    /// with nothing left for it completes (Go's non-blocking receive), even while a value is
    /// promised to another receiver.
    pub(crate) nonblocking: bool,
}

pub(crate) enum OpKind<'o, 'x> {
    /// Report the channel's lock (a future arm leaves `None`).
    Lock(&'o mut Option<OrderedLock<'x>>),
    /// Phase A: complete now if possible, taking the channel lock; a future arm polls.
    TryNow(&'o Waker),
    /// Phase B: complete now if possible; the lock is among `HeldLocks`.
    TryLocked(&'o HeldLocks<'o, 'x>, &'o mut Wakes),
    /// Phase B: queue a waiter for arm `arm`, sharing `token`.
    Register { held: &'o HeldLocks<'o, 'x>, token: &'o Arc<SelToken>, arm: usize, waker: &'o Waker },
    /// Take the waiter back, if any. `keep`: the token was claimed through this arm, so finish
    /// the operation (the select reports it); otherwise undo whatever a claim did.
    Release { keep: bool },
}

/// The future behind `select!`: resolves to the index of the chosen arm (or [`DEFAULT`]);
/// the chosen arm holds its result. `F` dispatches an [`Op`] to arm `k`.
#[doc(hidden)]
#[must_use = "a select does nothing unless awaited"]
pub struct Select<'x, F, const N: usize>
where
    F: FnMut(usize, &mut Op<'_, 'x>) -> bool,
{
    arms: F,
    default: bool,
    token: Option<Arc<SelToken>>,
    finished: bool,
    _locks: PhantomData<&'x Mutex<()>>,
}

/// Builds the select future (called by `select!`).
#[doc(hidden)]
pub fn select<'x, F, const N: usize>(default: bool, arms: F) -> Select<'x, F, N>
where
    F: FnMut(usize, &mut Op<'_, 'x>) -> bool,
{
    const { assert!(N <= MAX_ARMS, "select!: at most 64 arms") };
    Select { arms, default, token: None, finished: false, _locks: PhantomData }
}

impl<'x, F, const N: usize> Select<'x, F, N>
where
    F: FnMut(usize, &mut Op<'_, 'x>) -> bool,
{
    fn run(&mut self, k: usize, kind: OpKind<'_, 'x>) -> bool {
        (self.arms)(k, &mut Op { kind, nonblocking: self.default })
    }

    /// Step 2' (a `default` arm, two or more channel arms): the future arms are polled first,
    /// with no lock held, in `order`; then every channel is locked at once (`lock_all`, the
    /// lock order of phase B) and the channel arms tried in `order`. The first that is ready
    /// is chosen; `None` means `default`. Between the locking and the unlocking no channel of
    /// the select changes, so "no arm ready" held at one instant for all of them.
    fn poll_locked_nonblocking(
        &mut self,
        cx: &mut Context<'_>,
        order: &[usize; N],
        locks: &[Option<OrderedLock<'x>>; N],
    ) -> Option<usize> {
        for &k in order.iter().filter(|&&k| locks[k].is_none()) {
            if self.run(k, OpKind::TryNow(cx.waker())) {
                return Some(k);
            }
        }
        let mut wakes = Wakes::new();
        let chosen = {
            let guards = lock_all(locks);
            let held = HeldLocks { held: &guards };
            order
                .iter()
                .copied()
                .filter(|&k| locks[k].is_some())
                .find(|&k| self.run(k, OpKind::TryLocked(&held, &mut wakes)))
        };
        // The wakes (a sender refilled into the buffer, a receiver handed a value) go out
        // with no lock held, as everywhere.
        wakes.fire();
        chosen
    }

    /// Takes back every waiter (`claimed`: the arm whose token was won, if any).
    fn release_all(&mut self, claimed: Option<usize>, keep: bool) {
        for k in 0..N {
            self.run(k, OpKind::Release { keep: keep && claimed == Some(k) });
        }
    }
}

// `Select` is never pin-projected: arms are reached through `F`, which holds references.
impl<'x, F, const N: usize> Unpin for Select<'x, F, N> where F: FnMut(usize, &mut Op<'_, 'x>) -> bool {}

impl<'x, F, const N: usize> Future for Select<'x, F, N>
where
    F: FnMut(usize, &mut Op<'_, 'x>) -> bool,
{
    type Output = usize;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        let this = self.get_mut();
        assert!(!this.finished, "select polled after it completed");
        // A select that is not yet waiting spends coop budget, like a channel operation.
        if this.token.is_none() && crate::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }

        // 1. Reset (or report the arm a counterpart completed).
        if let Some(token) = &this.token {
            match token.begin_poll() {
                Ok(()) => this.release_all(None, false),
                Err(k) => {
                    this.release_all(Some(k), true);
                    this.finished = true;
                    return Poll::Ready(k);
                }
            }
        }

        let order = poll_order::<N>();
        let mut locks: [Option<OrderedLock<'x>>; N] = [None; N];
        for (k, lock) in locks.iter_mut().enumerate() {
            this.run(k, OpKind::Lock(lock));
        }

        // 2'. With a `default` arm and two or more channel arms: decide under every lock at
        // once (Go's `selectgo` locks all its channels before it looks at any). Phase A looks
        // at one channel at a time, so between two of its looks a value can move from the
        // channel it has yet to look at to the one it has looked at, and it would choose
        // `default` although some arm was ready at every instant (Go's
        // `TestNonblockSelectRace`). With one channel arm, phase A's look under that one lock
        // is already a single instant: it stays the lock-free-of-others fast path.
        if this.default && locks.iter().flatten().count() >= 2 {
            let chosen = this.poll_locked_nonblocking(cx, &order, &locks);
            this.finished = true;
            return Poll::Ready(chosen.unwrap_or(DEFAULT));
        }

        // 2. Phase A: first ready arm in a random order.
        for &k in &order {
            if this.run(k, OpKind::TryNow(cx.waker())) {
                this.finished = true;
                return Poll::Ready(k);
            }
        }
        if this.default {
            this.finished = true;
            return Poll::Ready(DEFAULT);
        }

        // 3. Phase B: re-check and wait, under all the locks.
        if locks.iter().all(Option::is_none) {
            // Only future arms: they have registered their wakers when polled.
            return Poll::Pending;
        }
        let mut wakes = Wakes::new();
        let chosen = {
            let guards = lock_all(&locks);
            let held = HeldLocks { held: &guards };
            let mut chosen = None;
            for &k in order.iter().filter(|&&k| locks[k].is_some()) {
                if this.run(k, OpKind::TryLocked(&held, &mut wakes)) {
                    chosen = Some(k);
                    break;
                }
            }
            if chosen.is_none() {
                let token = this.token.get_or_insert_with(new_token).clone();
                for &k in order.iter().filter(|&&k| locks[k].is_some()) {
                    this.run(k, OpKind::Register { held: &held, token: &token, arm: k, waker: cx.waker() });
                }
                token.set_waiting();
            }
            chosen
        };
        wakes.fire();
        match chosen {
            Some(k) => {
                this.finished = true;
                Poll::Ready(k)
            }
            None => {
                // Waiting. Only when every arm is a channel arm is the wait gmprt's alone; a
                // future arm recorded its own reason when polled (or left "unknown").
                if locks.iter().all(Option::is_some) {
                    crate::task::wait::set(crate::task::wait::SELECT, N as u64, 0);
                }
                Poll::Pending
            }
        }
    }
}

impl<'x, F, const N: usize> Drop for Select<'x, F, N>
where
    F: FnMut(usize, &mut Op<'_, 'x>) -> bool,
{
    fn drop(&mut self) {
        let Some(token) = self.token.take() else { return };
        if !self.finished {
            // Cancelled while waiting: take the token back so that no arm can be claimed from
            // now on. If one was claimed already, undo it: a `recv` arm passes its reservation
            // to the next receiver; a `send` arm's value was delivered and stays delivered.
            let _claimed = token.begin_poll();
            self.release_all(None, false);
        }
        recycle_token(token);
    }
}
