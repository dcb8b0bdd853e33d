//! `parallel_for`: every index exactly once, from inside a task and from outside, with one P,
//! panics re-raised after all chunks ran, borrowed output buffers written in place.
mod common;

use common::{quiet_expected_panics, EXPECTED};
use gmprt::runtime::{parallel_for, Runtime};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};

fn rt(procs: usize) -> Runtime {
    Runtime::builder().procs(procs).build().unwrap()
}

fn counts(n: usize) -> Vec<AtomicU32> {
    (0..n).map(|_| AtomicU32::new(0)).collect()
}

fn assert_once(c: &[AtomicU32]) {
    for (i, x) in c.iter().enumerate() {
        assert_eq!(x.load(Relaxed), 1, "index {i} ran {} times", x.load(Relaxed));
    }
}

#[test]
fn from_outside_each_index_once() {
    for procs in [1, 2, 4] {
        let rt = rt(procs);
        for (len, grain) in [(0, 3), (1, 1), (10, 3), (1000, 7), (4096, 4096), (5000, 64)] {
            let c = counts(len);
            rt.handle().parallel_for(len, grain, |r| {
                assert!(r.len() <= grain && !r.is_empty());
                for i in r {
                    c[i].fetch_add(1, Relaxed);
                }
            });
            assert_once(&c);
        }
    }
}

#[test]
fn from_a_task_with_one_p_finishes() {
    // With one P the caller's M is the only one: it must run every chunk itself.
    let rt = rt(1);
    let out = rt.block_on(rt.spawn(async {
        let mut out = vec![0u64; 10_000];
        let ptr = std::sync::Mutex::new(&mut out);
        parallel_for(10_000, 100, |r| {
            let mut g = ptr.lock().unwrap();
            for i in r {
                g[i] = i as u64 * 2;
            }
        });
        out
    }));
    let out = out.unwrap();
    assert!(out.iter().enumerate().all(|(i, &v)| v == i as u64 * 2));
}

#[test]
fn writes_disjoint_chunks_of_a_borrowed_buffer() {
    let rt = rt(2);
    let mut out = vec![0f32; 100_003];
    {
        // Each chunk owns a disjoint sub-slice: hand them out through raw parts.
        let base = out.as_mut_ptr() as usize;
        rt.handle().parallel_for(100_003, 1000, |r| {
            // SAFETY: chunks are disjoint ranges of `out`, which outlives the call.
            let s = unsafe { std::slice::from_raw_parts_mut((base as *mut f32).add(r.start), r.len()) };
            for (k, v) in s.iter_mut().enumerate() {
                *v = (r.start + k) as f32;
            }
        });
    }
    assert!(out.iter().enumerate().all(|(i, &v)| v == i as f32));
}

#[test]
fn all_ps_take_part() {
    // A chunk waits until a second thread has entered the loop, so it finishes only if two
    // Ms run chunks at once (synchronised on the event, no sleeps).
    let rt = rt(2);
    let entered = AtomicUsize::new(0);
    let threads = std::sync::Mutex::new(std::collections::HashSet::new());
    rt.handle().parallel_for(2, 1, |_| {
        threads.lock().unwrap().insert(std::thread::current().id());
        entered.fetch_add(1, Relaxed);
        while entered.load(Relaxed) < 2 {
            std::hint::spin_loop();
        }
    });
    assert_eq!(threads.lock().unwrap().len(), 2);
}

#[test]
fn panic_is_reraised_after_every_chunk_ran() {
    quiet_expected_panics();
    let rt = rt(2);
    let c = counts(100);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.handle().parallel_for(100, 10, |r| {
            for i in r.clone() {
                c[i].fetch_add(1, Relaxed);
            }
            if r.start == 50 {
                panic!("{EXPECTED} chunk 50");
            }
        })
    }));
    let msg = r.unwrap_err().downcast::<String>().unwrap();
    assert!(msg.contains("chunk 50"));
    assert_once(&c);
}

#[test]
#[should_panic(expected = "grain must be at least 1")]
fn zero_grain_is_a_clear_error() {
    rt(1).handle().parallel_for(10, 0, |_| {});
}
