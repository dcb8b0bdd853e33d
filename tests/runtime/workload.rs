//! A representative workload (spawns, joins, channels, yields) for procs 1..=8.

use super::*;

/// An async mailbox with one receiver (enough for ping-pong).
#[derive(Default)]
struct Mailbox {
    inner: Mutex<(std::collections::VecDeque<u64>, Option<Waker>)>,
}

impl Mailbox {
    fn send(&self, v: u64) {
        let w = {
            let mut g = self.inner.lock().unwrap();
            g.0.push_back(v);
            g.1.take()
        };
        if let Some(w) = w {
            w.wake();
        }
    }
    fn recv(self: &Arc<Self>) -> impl Future<Output = u64> + Send + 'static {
        let me = self.clone();
        std::future::poll_fn(move |cx| {
            let mut g = me.inner.lock().unwrap();
            match g.0.pop_front() {
                Some(v) => Poll::Ready(v),
                None => {
                    g.1 = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
    }
}

fn representative_workload(procs: usize) {
    let rt = rt(procs);
    const PAIRS: usize = 32;
    const ROUNDS: u64 = 50;
    let drops = Counters::new(PAIRS * 2);
    let total = rt.block_on(async {
        let mut hs = Vec::new();
        for p in 0..PAIRS {
            let (a, b) = (Arc::new(Mailbox::default()), Arc::new(Mailbox::default()));
            let (a2, b2) = (a.clone(), b.clone());
            let dping = DropGuard::new(&drops, 2 * p);
            let dpong = DropGuard::new(&drops, 2 * p + 1);
            // ping: sends 0, expects back +1, sends that, ...
            hs.push(gmprt::spawn(async move {
                let _d = dping;
                let mut v = 0;
                for _ in 0..ROUNDS {
                    b2.send(v);
                    v = a2.recv().await;
                }
                v
            }));
            hs.push(gmprt::spawn(async move {
                let _d = dpong;
                let mut last = 0;
                for r in 0..ROUNDS {
                    let v = b.recv().await;
                    if r % 8 == 0 {
                        gmprt::yield_now().await;
                    }
                    last = v + 1;
                    a.send(last);
                }
                last
            }));
        }
        // Plus a spawn tree and a yield storm running alongside.
        let visits = Counters::new(tree_nodes(4, 3));
        let tree = gmprt::spawn(joined_tree(0, 4, 3, visits.clone()));
        let storm: Vec<_> = (0..64u64)
            .map(|i| {
                gmprt::spawn(async move {
                    for _ in 0..20 {
                        gmprt::yield_now().await;
                    }
                    i
                })
            })
            .collect();
        let mut total = 0;
        for h in hs {
            total += h.await.unwrap();
        }
        assert_eq!(tree.await.unwrap(), 81);
        visits.assert_all(1, "tree visits");
        for (i, h) in storm.into_iter().enumerate() {
            assert_eq!(h.await.unwrap(), i as u64);
        }
        total
    });
    assert_eq!(total, 2 * PAIRS as u64 * ROUNDS, "procs={procs}");
    drops.assert_all(1, "future drops");
    let st = rt.stats();
    assert_eq!(st.procs, procs);
    assert_eq!(st.local_queue_lens.len(), procs);
    // The tree's root is a task here too.
    assert_eq!(st.spawned, (2 * PAIRS + tree_nodes(4, 3) + 64) as u64, "procs={procs} {st:?}");
    assert_balanced(&st);
    let h = rt.handle();
    drop(rt);
    assert_shut_down(&h.stats());
}

#[test]
fn representative_workload_procs_1_to_8() {
    for procs in 1..=8 {
        representative_workload(procs);
    }
}
