//! How batches close, and that every item gets its own result: many tasks at 1 and 2 Ps, the
//! deadline, a zero delay, `flush`, full batches, shutdown and dropping the last clone.

use super::*;

fn many_tasks(procs: usize) {
    let rt = rt(procs);
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(16, Duration::from_micros(300), 2)).unwrap();
    let (tasks, per_task) = (64u32, 50u32);
    let b2 = b.clone();
    rt.block_on(async move {
        let handles: Vec<_> = (0..tasks)
            .map(|t| {
                let b = b2.clone();
                gmprt_offload::runtime::spawn(async move {
                    if t % 2 == 0 {
                        // One at a time: each item waits for its own result.
                        for i in 0..per_task {
                            let x = t * 1000 + i;
                            assert_eq!(b.submit(x).await, Ok(mix(x)), "task {t} item {i}");
                        }
                    } else {
                        // All at once, then collect.
                        let futs: Vec<_> = (0..per_task).map(|i| b.submit(t * 1000 + i)).collect();
                        for (i, f) in futs.into_iter().enumerate() {
                            let x = t * 1000 + i as u32;
                            assert_eq!(f.await, Ok(mix(x)), "task {t} item {i}");
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.await.expect("task");
        }
    });
    let tl = b.timelines();
    assert!(tl.iter().all(|t| t.n >= 1 && t.n <= 16), "a batch exceeded max_batch");
    assert_eq!(tl.iter().map(|t| t.n).sum::<usize>(), (tasks * per_task) as usize);
    assert!(tl.iter().all(|t| t.ok && t.launched && t.device == DeviceKind::Host && t.slot < 2));
    assert!(tl.iter().all(|t| t.bytes_h2d == 4 * t.n as u64 && t.bytes_d2h == 4 * t.n as u64));
    let s = b.stats();
    assert_eq!(
        (s.items, s.failed_items, s.batches, s.launches),
        ((tasks * per_task) as u64, 0, tl.len() as u64, tl.len() as u64)
    );
}

#[test]
fn many_tasks_get_their_own_results_procs_2() {
    many_tasks(2);
}

#[test]
fn many_tasks_get_their_own_results_procs_1() {
    many_tasks(1);
}

#[test]
fn lone_item_closes_at_deadline() {
    let delay = Duration::from_millis(20);
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(1000, delay, 2)).unwrap();
    let rt = rt(1);
    let f = b.submit(7);
    assert_eq!(rt.block_on(f), Ok(mix(7)));
    let tl = b.timelines();
    assert_eq!(tl.len(), 1);
    assert_eq!((tl[0].n, tl[0].closed_by), (1, CloseReason::Deadline));
    assert!(tl[0].queue_wait >= delay, "queue_wait {:?} < max_delay {delay:?}", tl[0].queue_wait);
}

#[test]
fn zero_delay_closes_at_once() {
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(1000, Duration::ZERO, 1)).unwrap();
    assert_eq!(rt(1).block_on(b.submit(3)), Ok(mix(3)));
}

/// `max_delay = 0` on a runtime: the batch a task opens closes once the tasks already
/// runnable on its P have run (the `closer` module), not at the first item. With one P, a
/// root task spawns 100 submitters (all runnable before any runs): one launch of 100 items.
#[test]
fn zero_delay_batches_the_tasks_runnable_when_it_opened() {
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(1000, Duration::ZERO, 2)).unwrap();
    let rt = rt(1);
    let b2 = b.clone();
    let outs = rt.block_on(async move {
        gmprt_offload::runtime::spawn(async move {
            let hs: Vec<_> = (0..100u32)
                .map(|x| {
                    let b = b2.clone();
                    gmprt_offload::runtime::spawn(async move { b.submit(x).await })
                })
                .collect();
            let mut outs = Vec::new();
            for h in hs {
                outs.push(h.await.expect("task").expect("item"));
            }
            outs
        })
        .await
        .expect("root")
    });
    assert_eq!(outs, (0..100).map(mix).collect::<Vec<_>>());
    let tl = b.timelines();
    assert_eq!(
        tl.iter().map(|t| t.n).collect::<Vec<_>>(),
        vec![100],
        "one batch of every runnable task's item"
    );
    // Released by the closer (a `Deadline` close with `max_delay = 0`), or taken on the M that
    // found the runtime quiescent right after: the same batch either way.
    assert!(matches!(tl[0].closed_by, CloseReason::Deadline | CloseReason::Quiescent), "{:?}", tl[0]);
}

/// The closer lives on the runtime that first opened a batch; once that runtime is gone,
/// batches close at once (submits from a plain thread) and the next task on another runtime
/// starts a new closer. Nothing waits for the dead one.
#[test]
fn zero_delay_survives_the_closers_runtime() {
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(1000, Duration::ZERO, 1)).unwrap();
    let one = |rt: &Runtime, x: u32| {
        let b = b.clone();
        rt.block_on(async move { gmprt_offload::runtime::spawn(async move { b.submit(x).await }).await })
            .expect("task")
    };
    let rt1 = rt(1);
    assert_eq!(one(&rt1, 1), Ok(mix(1)));
    drop(rt1);
    let rt2 = rt(1);
    // `block_on` polls on this thread, not an M: no closer is started from here.
    assert_eq!(rt2.block_on(b.submit(2)), Ok(mix(2)));
    assert_eq!(one(&rt2, 3), Ok(mix(3)));
    assert_eq!(b.stats().items, 3);
}

#[test]
fn flush_closes_the_open_batch() {
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(1000, LONG, 2)).unwrap();
    let futs: Vec<_> = (0..3).map(|x| b.submit(x)).collect();
    assert!(futs.iter().all(|f| f.is_accepted()));
    b.flush();
    let rt = rt(2);
    for (x, f) in futs.into_iter().enumerate() {
        assert_eq!(rt.block_on(f), Ok(mix(x as u32)));
    }
    let tl = b.timelines();
    assert_eq!(tl.len(), 1);
    assert_eq!((tl[0].n, tl[0].closed_by), (3, CloseReason::Flush));
    // A flush with nothing open is a no-op.
    b.flush();
    assert_eq!(b.stats().batches, 1);
}

#[test]
fn full_batches_close_as_full() {
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(4, LONG, 2)).unwrap();
    let rt = rt(2);
    for g in 0..3u32 {
        // The previous group's batch was taken, so all 4 are accepted and fill one batch.
        let futs: Vec<_> = (0..4).map(|i| b.submit(g * 4 + i)).collect();
        for (i, f) in futs.into_iter().enumerate() {
            assert_eq!(rt.block_on(f), Ok(mix(g * 4 + i as u32)));
        }
    }
    let tl = b.timelines();
    assert_eq!(tl.len(), 3);
    assert!(tl.iter().all(|t| t.n == 4 && t.closed_by == CloseReason::Full));
}

#[test]
fn shutdown_flushes_and_loses_nothing() {
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(1000, LONG, 2)).unwrap();
    let n = 500u32;
    let futs: Vec<_> = (0..n).map(|x| b.submit(x)).collect();
    assert!(futs.iter().all(|f| f.is_accepted()));
    b.shutdown();
    assert!(b.is_closed());
    assert_eq!(rt(2).block_on(b.submit(1)), Err(OffloadError::Closed));
    let rt = rt(2);
    for (x, f) in futs.into_iter().enumerate() {
        assert_eq!(rt.block_on(f), Ok(mix(x as u32)));
    }
    let tl = b.timelines();
    assert_eq!(tl.iter().map(|t| t.n).sum::<usize>(), n as usize);
    assert_eq!(tl[0].closed_by, CloseReason::Shutdown);
    b.shutdown(); // idempotent
    assert_eq!(b.occupancy().open_items, 0);
    let s = b.stats();
    assert_eq!((s.items, s.rejected_closed, s.closed_shutdown), (n as u64, 1, 1), "every submit is counted");
}

#[test]
fn dropping_the_last_clone_flushes() {
    let b = Batcher::new(Mix::default(), &Device::host(), cfg(1000, LONG, 2)).unwrap();
    let b2 = b.clone();
    let futs: Vec<_> = (0..100).map(|x| b.submit(x)).collect();
    drop(b);
    assert!(!b2.is_closed(), "a clone is still alive");
    drop(b2);
    let rt = rt(1);
    for (x, f) in futs.into_iter().enumerate() {
        assert_eq!(rt.block_on(f), Ok(mix(x as u32)));
    }
}
