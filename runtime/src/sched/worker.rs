//! M — the worker thread loop: `schedule` → `findRunnable` → run, Go's `schedule()`.
//!
//! An M runs tasks only while it holds a P (in its [`Context`]). Its loop:
//! 1. `find_runnable`: once every 61 ticks the network (without blocking) and the global
//!    queue first; then the local `runnext`
//!    and queue; then a batch from the global queue; then the network without blocking (if
//!    tasks wait on sockets); then, if allowed to spin (`2·nmspinning < busy Ps`), stealing;
//!    else the idle path of `idle.rs` (release the P, recheck, then block in `netpoll` if
//!    tasks wait on sockets and no other M does, else park).
//! 2. If it was spinning, stop spinning and `wakep` (see `idle.rs`, step 2).
//! 3. Run the task with the P *not* borrowed, so the task can spawn onto it.
//!
//! Shutdown: every loop iteration checks the flag; a parked M is woken by
//! `wake_all_for_shutdown`. On exit the M returns its P to the idle list, where shutdown
//! drains its queues.

use super::context::{enter, Context};
use super::idle::{MPark, Seen, WakeFrom};
use super::processor::{Processor, GLOBAL_CHECK_TICKS};
use super::syscall::P_RUNNING;
use super::Shared;
use crate::loom::sync::atomic::{fence, Ordering::Relaxed, Ordering::SeqCst};
use crate::task::Notified;
use std::sync::Arc;

/// Per-M state that is not shared.
struct M {
    spinning: bool,
    park: Arc<MPark>,
}

/// The body of an M thread. `p`: a P handed over by `startm` (None: park first).
pub(crate) fn m_main(shared: Arc<Shared>, mid: usize, p: Option<Box<Processor>>, spinning: bool) {
    let cx = Context::new(shared.clone(), mid);
    let _guard = enter(&cx);
    let mut m = M { spinning, park: Arc::new(MPark::default()) };
    match p {
        Some(p) => cx.set_p(Some(p)),
        None => match shared.stopm(&m.park, 0) {
            Some((p, sp)) => {
                cx.set_p(Some(p));
                m.spinning = sp;
            }
            None => return,
        },
    }
    while let Some(task) = find_runnable(&shared, &cx, &mut m) {
        if m.spinning {
            // Go's resetspinning.
            m.spinning = false;
            shared.nmspinning.fetch_sub(1, SeqCst);
            shared.wakep(WakeFrom::Spinner);
        }
        let ps = &shared.allp[cx.pid.get()];
        ps.stats.polls.bump();
        // Relaxed: read by sysmon's report and by this thread's `trace::current_task`.
        ps.curtask.store(task.header().ident, Relaxed);
        task.run();
        // `syscall` may have moved us to another P, or (at shutdown) left us without one.
        match cx.pid.get() {
            usize::MAX => match shared.stopm(&m.park, 0) {
                Some((p, sp)) => {
                    cx.set_p(Some(p));
                    m.spinning = sp;
                }
                None => break,
            },
            pid => shared.allp[pid].curtask.store(0, Relaxed),
        }
    }
    if m.spinning {
        shared.nmspinning.fetch_sub(1, SeqCst);
    }
    if let Some(p) = cx.take_p() {
        let mut s = shared.sched.lock();
        shared.pidleput(&mut s, p);
    }
}

/// Go's `findRunnable`. Returns the next task (the M holds a P in `cx`), or `None` at shutdown
/// (the M may or may not hold a P).
fn find_runnable(shared: &Shared, cx: &Context, m: &mut M) -> Option<Notified> {
    loop {
        if shared.is_shutdown() {
            return None;
        }
        // An M back from a blocking call waits for a P: give it ours and park (syscall.rs).
        if shared.nsyscall_waiters.load(Relaxed) > 0 {
            handoff_to_syscall_waiter(shared, cx, m);
            if cx.pid.get() == usize::MAX {
                match shared.stopm(&m.park, 0) {
                    Some((p, spinning)) => {
                        cx.set_p(Some(p));
                        m.spinning = spinning;
                    }
                    None => return None,
                }
            }
            continue;
        }
        // Due timers of our P first (Go's checkTimers); the tasks they wake land on our P. Not
        // under the P borrow: waking puts tasks on it. The clock it read is this round's.
        cx.round_now.set(shared.check_timers(cx.pid.get()).0);
        // Fairness for the network: once every 61 ticks, poll it before the queues (tokio's
        // `event_interval`, also 61; Go polls only once the queues are empty, and relies on
        // sysmon's 10 ms poll otherwise). A P whose queue never empties — a burst of a
        // thousand spawned clients — would else leave an acceptor's readiness unread until
        // sysmon, while connections overflow the listener's backlog. The woken tasks go to
        // the tail of this P's queue (`netpoll_ready_here`). Not under the P borrow: waking
        // queues them on it.
        let tick = cx.p.borrow().as_ref().map_or(1, |p| p.schedtick);
        if tick.is_multiple_of(GLOBAL_CHECK_TICKS) {
            shared.netpoll_nonblocking();
        }
        {
            let mut guard = cx.p.borrow_mut();
            let p = guard.as_mut().expect("M in find_runnable without a P");
            // Fairness: once in a while look at the global queue first.
            if p.schedtick.is_multiple_of(GLOBAL_CHECK_TICKS) {
                if let Some(t) = p.globrunqget_one(shared) {
                    p.schedtick = p.schedtick.wrapping_add(1);
                    return Some(t);
                }
            }
            if let Some((t, inherit)) = p.runqget(shared) {
                if !inherit {
                    p.schedtick = p.schedtick.wrapping_add(1);
                }
                return Some(t);
            }
            if let Some(t) = p.globrunqget(shared) {
                p.schedtick = p.schedtick.wrapping_add(1);
                return Some(t);
            }
        }
        // No network poll here, unlike Go's `findRunnable` (netpoll(0) before stealing): a task
        // already queued on another P has waited longer than any event not yet read, and an M
        // that polls first keeps serving fresh events while a P whose M the OS descheduled holds
        // its queue (netpoll/mod.rs, "Steal before polling"). The network is read on the 61st
        // tick above, by the M that blocks in netpoll on the idle path below, and by sysmon.
        {
            let mut guard = cx.p.borrow_mut();
            let p = guard.as_mut().expect("M in find_runnable without a P");
            // Spin (steal) only if few Ms are spinning: at most busy Ps / 2 (`try_spin`).
            if m.spinning || shared.try_spin(false) {
                m.spinning = true;
                if let Some(t) = p.steal_work(shared) {
                    p.schedtick = p.schedtick.wrapping_add(1);
                    return Some(t);
                }
            }
        }

        // Before giving up the P: due timers anywhere (a P whose M is stuck in a long poll).
        if shared.run_all_timers() {
            continue;
        }

        // The idle path (idle.rs, step 3).
        let p = cx.take_p().expect("M without a P");
        {
            let mut s = shared.sched.lock();
            if !shared.injector.is_empty() && !shared.is_shutdown() {
                drop(s);
                cx.set_p(Some(p));
                continue;
            }
            shared.pidleput(&mut s, p);
        }
        if m.spinning {
            m.spinning = false;
            shared.nmspinning.fetch_sub(1, SeqCst);
        }
        // Pairs with the fence in `wakep`: either we see the submitter's task below, or it sees
        // our npidle/nmspinning updates above.
        fence(SeqCst);
        // After the fence, like the queues: a timer added off an M is followed by `wakep`.
        let next_timer = shared.next_timer_when();
        let timer_due = next_timer != 0 && next_timer <= shared.now_nanos();
        let seen = if timer_due { Some(Seen::Timer) } else { shared.work_seen() };
        if let Some(seen) = seen {
            let p = {
                let mut s = shared.sched.lock();
                shared.pidleget_spinning(&mut s)
            };
            if let Some(p) = p {
                cx.set_p(Some(p));
                shared.external_stats.rearms.bump_shared();
                // Checked again where the decision lands: was that P running after all?
                if let Seen::Runnext { pid } = seen {
                    if shared.allp[pid].status.load(SeqCst) == P_RUNNING {
                        shared.external_stats.rearms_runnext_only.bump_shared();
                    }
                }
                // Spinning now (`pidleget_spinning` counted it), whether or not we were: the
                // work may be on another P, which only stealing reaches. Over the cap we take
                // no P at all: a non-spinning M with a P would loop here (release the P, see
                // the work, take the P) for as long as the counted spinners do not run.
                m.spinning = true;
                continue;
            }
            // Another M took the idle P, or half the busy Ps have a spinning M: they will find
            // the work (idle.rs, step 3).
        }
        // Quiescent (nothing queued, no M running on a P) with a hook pending: take a P
        // back and run it there, then look again for the tasks it made runnable (quiesce.rs).
        if let Some(hook) = shared.quiescent_hook() {
            let p = shared.pidleget_unless_shutdown(&mut shared.sched.lock());
            if let Some(p) = p {
                cx.set_p(Some(p));
                shared.external_stats.quiescent_runs.bump_shared();
                // A hook is library code: its panic is reported and the M runs on.
                if let Err(e) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook.run())) {
                    let msg =
                        e.downcast_ref::<&str>().copied().or(e.downcast_ref::<String>().map(String::as_str));
                    eprintln!("gmprt: a quiescence hook panicked: {}", msg.unwrap_or("(not a string)"));
                }
                continue;
            }
            // Another M took the last idle P: it runs on, and goes through this check itself.
        }
        // Tasks wait on sockets and no M polls: this one blocks in netpoll, until the earliest
        // timer (netpoll/mod.rs, step 2).
        if shared.netpoll_claim() {
            // One more look, now that we hold the claim: a `startm` that left its P to an idle
            // M (idle.rs, step 5) after our last look broke the netpoller, but that break may
            // have been read by a poll that ran before our claim. It put the P back before it
            // broke, so either this look sees the P and the work, or its break comes after our
            // claim and wakes the poll below (no poll but ours reads the break while we hold it).
            if shared.npidle.load(SeqCst) > 0 && shared.work_seen().is_some() {
                let p = shared.pidleget_spinning(&mut shared.sched.lock());
                if let Some(p) = p {
                    shared.netpoll_unclaim();
                    cx.set_p(Some(p));
                    shared.external_stats.rearms.bump_shared();
                    m.spinning = true;
                    continue;
                }
                // Another M took the P, or the spinning cap is full: they find the work.
            }
            let ws = shared.netpoll_blocked(next_timer);
            // Go's order: a P first, then the woken tasks onto it; without one (every P busy,
            // or shutdown), the global queue, where the busy Ps find them.
            let p = shared.pidleget_unless_shutdown(&mut shared.sched.lock());
            if let Some(p) = p {
                cx.set_p(Some(p));
                if ws.is_empty() {
                    // A timer fell due (or a break): as after a timed park, spinning if the cap
                    // allows; either way it fires due timers anywhere before going idle.
                    m.spinning = shared.try_spin(false);
                } else {
                    shared.netpoll_ready_here(ws);
                }
                continue;
            }
            if !ws.is_empty() {
                shared.external_stats.netpoll_no_p.bump_shared();
                crate::injectglist(ws);
            }
            // Every P is busy (they take the woken tasks from the global queue), or shutdown.
            if shared.is_shutdown() {
                return None;
            }
        }
        // Park; until the earliest timer if there is one.
        match shared.stopm(&m.park, next_timer) {
            Some((p, spinning)) => {
                cx.set_p(Some(p));
                m.spinning = spinning;
            }
            None => return None,
        }
    }
}

/// Gives this M's P to the first M waiting to return from a syscall, if one still waits.
fn handoff_to_syscall_waiter(shared: &Shared, cx: &Context, m: &mut M) {
    let mut s = shared.sched.lock();
    if s.syscall_waiters.is_empty() {
        return;
    }
    if m.spinning {
        m.spinning = false;
        shared.nmspinning.fetch_sub(1, SeqCst);
    }
    let p = cx.take_p().expect("M in find_runnable holds a P");
    // pidleput serves the first syscall waiter before the idle list.
    shared.pidleput(&mut s, p);
}
