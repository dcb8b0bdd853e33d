//! `RwMutex` (issue 24): Go's writer preference, batches of readers, cancellation.

use super::*;

// ---------------------------------------------------------------------------------------------
// RwMutex (issue 24): Go's writer preference, batches of readers, cancellation
// ---------------------------------------------------------------------------------------------

fn poll_noop<F: Future + Unpin>(f: &mut F) -> std::task::Poll<F::Output> {
    Pin::new(f).poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
}

/// A reader that arrives while a writer waits queues behind it (Go: "later RLock calls block
/// until the writer has acquired and released the lock"); when the writer leaves, every reader
/// queued before the next writer goes in together; the next writer waits for them.
#[test]
fn rwmutex_writer_preference_and_reader_batches() {
    use gmprt::runtime::sync::RwMutex;
    let m = RwMutex::new(0u32);
    let r0 = m.try_read().unwrap();
    let mut w1 = Box::pin(m.write());
    assert!(poll_noop(&mut w1).is_pending(), "a writer waits for the reader");
    assert!(m.try_read().is_none(), "a new reader does not pass a waiting writer");
    let mut r1 = Box::pin(m.read());
    let mut r2 = Box::pin(m.read());
    assert!(poll_noop(&mut r1).is_pending() && poll_noop(&mut r2).is_pending());
    let mut w2 = Box::pin(m.write());
    let mut r3 = Box::pin(m.read());
    assert!(poll_noop(&mut w2).is_pending() && poll_noop(&mut r3).is_pending());
    drop(r0);
    let mut g1 = match poll_noop(&mut w1) {
        std::task::Poll::Ready(g) => g,
        _ => panic!("the writer gets the lock when the reader leaves"),
    };
    *g1 += 1;
    assert!(poll_noop(&mut r1).is_pending(), "readers wait while the writer holds it");
    drop(g1);
    let (g_r1, g_r2) = match (poll_noop(&mut r1), poll_noop(&mut r2)) {
        (std::task::Poll::Ready(a), std::task::Poll::Ready(b)) => (a, b),
        _ => panic!("both readers queued before w2 go in together"),
    };
    assert_eq!((*g_r1, *g_r2), (1, 1));
    assert!(poll_noop(&mut w2).is_pending(), "w2 waits for the batch");
    assert!(poll_noop(&mut r3).is_pending(), "r3 queued behind w2");
    drop((g_r1, g_r2));
    let g2 = match poll_noop(&mut w2) {
        std::task::Poll::Ready(g) => g,
        _ => panic!("w2 next"),
    };
    drop(g2);
    assert!(poll_noop(&mut r3).is_ready());
}

/// A waiting writer that is dropped lets the readers queued behind it in, though a read lock
/// is still held; a dropped future that had been granted the lock gives it back.
#[test]
fn rwmutex_cancellation() {
    use gmprt::runtime::sync::RwMutex;
    let m = RwMutex::new(());
    let r0 = m.try_read().unwrap();
    let mut w = Box::pin(m.write());
    assert!(poll_noop(&mut w).is_pending());
    let mut r1 = Box::pin(m.read());
    assert!(poll_noop(&mut r1).is_pending());
    drop(w);
    let g1 = match poll_noop(&mut r1) {
        std::task::Poll::Ready(g) => g,
        _ => panic!("the reader behind the cancelled writer goes in"),
    };
    drop((g1, r0));
    // Granted, then dropped before it was polled: the grant is given back.
    let r = m.try_read().unwrap();
    let mut w = Box::pin(m.write());
    assert!(poll_noop(&mut w).is_pending());
    drop(r); // grants w
    drop(w); // never took it
    assert!(m.try_write().is_some(), "the grant came back");
}

/// Many tasks: writers are alone, readers never see a write half done.
#[test]
fn rwmutex_readers_and_writers_on_tasks() {
    use gmprt::runtime::sync::RwMutex;
    let rt = gmprt::Runtime::builder().procs(2).build().unwrap();
    let m = Arc::new(RwMutex::new((0u64, 0u64)));
    let writers_in = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        let mut tasks = Vec::new();
        for i in 0..64 {
            let (m, writers_in) = (m.clone(), writers_in.clone());
            tasks.push(gmprt::spawn(async move {
                for _ in 0..50 {
                    if i % 4 == 0 {
                        let mut g = m.write().await;
                        assert_eq!(writers_in.fetch_add(1, SeqCst), 0, "two writers at once");
                        g.0 += 1;
                        yield_now().await;
                        g.1 += 1;
                        writers_in.fetch_sub(1, SeqCst);
                    } else {
                        let g = m.read().await;
                        assert_eq!(writers_in.load(SeqCst), 0, "a reader beside a writer");
                        assert_eq!(g.0, g.1, "a write seen half done");
                        yield_now().await;
                    }
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    assert_eq!(*m.read_blocking(), (16 * 50, 16 * 50));
}
