//! `yield_now`: where a yielding task goes, and yields racing aborts and other wakers.

use super::*;

#[test]
fn yield_storm_across_procs() {
    const TASKS: usize = 200;
    const YIELDS: usize = 100;
    for procs in 1..=4 {
        let rt = rt(procs);
        let steps = Counters::new(TASKS);
        let hs: Vec<_> = (0..TASKS)
            .map(|i| {
                let steps = steps.clone();
                rt.spawn(async move {
                    for _ in 0..YIELDS {
                        steps.bump(i);
                        gmprt::yield_now().await;
                    }
                    i
                })
            })
            .collect();
        for (i, h) in hs.into_iter().enumerate() {
            assert_eq!(h.join(), Ok(i), "procs={procs}");
        }
        steps.assert_all(YIELDS, "steps");
        let st = rt.stats();
        // A yield costs exactly one extra poll: the wake during the poll re-queues the task
        // once, never twice.
        assert_eq!(st.polls, (TASKS * (YIELDS + 1)) as u64, "procs={procs} {st:?}");
        assert_eq!(st.spawned, TASKS as u64);
        assert_balanced(&st);
    }
}

#[test]
fn yield_now_goes_behind_queued_tasks() {
    // On one P, a yielding task goes to the tail of the local queue: every task queued before
    // it gets its first poll before any task gets its second.
    const TASKS: usize = 64;
    let rt = rt(1);
    let seq = Arc::new(AtomicUsize::new(0));
    let first = Counters::new(TASKS);
    let second = Counters::new(TASKS);
    let (f2, s2, seq2) = (first.clone(), second.clone(), seq.clone());
    rt.spawn(async move {
        let hs: Vec<_> = (0..TASKS)
            .map(|i| {
                let (first, second, seq) = (f2.clone(), s2.clone(), seq2.clone());
                gmprt::spawn(async move {
                    first.0[i].store(seq.fetch_add(1, SeqCst), SeqCst);
                    gmprt::yield_now().await;
                    second.0[i].store(seq.fetch_add(1, SeqCst), SeqCst);
                })
            })
            .collect();
        for h in hs {
            h.await.unwrap();
        }
    })
    .join()
    .unwrap();
    let last_first = (0..TASKS).map(|i| first.get(i)).max().unwrap();
    let first_second = (0..TASKS).map(|i| second.get(i)).min().unwrap();
    assert!(
        last_first < first_second,
        "a task's second poll (seq {first_second}) came before another task's first (seq {last_first})"
    );
}

/// A task's own `yield_now` re-queues it without a wake (the poll harness does it when the
/// poll ends); an abort that lands during that poll still wins: the task is cancelled, not
/// re-queued.
#[test]
fn abort_during_a_poll_that_yields() {
    for procs in [1, 2] {
        let rt = rt(procs);
        let latch = Latch::new();
        let drops = Counters::new(1);
        let (tx, rx) = mpsc::channel();
        let (l, d) = (latch.clone(), DropGuard::new(&drops, 0));
        let h = rt.spawn(async move {
            let _d = d;
            tx.send(()).unwrap();
            l.wait(); // the M is inside this poll while the test aborts
            loop {
                gmprt::yield_now().await;
            }
        });
        rx.recv().unwrap();
        h.abort();
        latch.release();
        assert_eq!(h.join(), Err(JoinError::Cancelled), "procs={procs}");
        assert_eq!(drops.get(0), 1, "procs={procs}");
        let st = rt.stats();
        assert_eq!((st.spawned, st.cancelled), (1, 1), "procs={procs} {st:?}");
        assert_balanced(&st);
    }
}

/// `yield_now` polled with a waker that is not its task's own (an executor inside the task)
/// wakes that waker at once, and asks nothing of the task: it is polled exactly once.
#[test]
fn yield_now_under_another_waker_wakes_that_waker() {
    struct Count(AtomicUsize);
    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, SeqCst);
        }
    }
    let rt = rt(1);
    let woken = rt
        .spawn(async {
            let count = Arc::new(Count(AtomicUsize::new(0)));
            let waker = Waker::from(count.clone());
            let mut y = std::pin::pin!(gmprt::yield_now());
            let mut cx = Context::from_waker(&waker);
            assert!(y.as_mut().poll(&mut cx).is_pending());
            let woken = count.0.load(SeqCst);
            assert!(y.as_mut().poll(&mut cx).is_ready());
            woken
        })
        .join()
        .unwrap();
    assert_eq!(woken, 1, "the foreign waker was not woken");
    let st = rt.stats();
    assert_eq!(st.polls, 1, "the task was re-queued for another waker's yield: {st:?}");
}
