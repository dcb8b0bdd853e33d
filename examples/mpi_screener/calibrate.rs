//! `mpi_screener --calibrate`: ping-pongs and the book's scatter under both waits, the link
//! fitted from them and the network crossover; and [`p_stays_free`], the check by events that a
//! task waiting in MPI leaves its P free, which `run` makes on ranks 0 and 1 after pricing.

use super::*;

/// Tags of [`p_stays_free`]'s two messages.
const TAG_GO: gmprt::mpi::Tag = 7;
const TAG_REPLY: gmprt::mpi::Tag = 8;

/// Proves, by events, that a task waiting in MPI does not hold its P: on rank 1, a runtime of
/// one P runs task A, which waits for a message from rank 0, and task B, which tells rank 0 to
/// send it — once A has started to wait. Rank 0 sends only when told. If A's wait held the only
/// P, B could never run and the job would hang (the tests' deadline catches that). With
/// `cap`, rank 1's runtime may start only that many threads, so the hand-off is refused and
/// the call polls instead (counted in `wait_stats().fallbacks`). Ranks 0 and 1 only.
pub(super) fn p_stays_free(comm: Comm, cap: Option<usize>) -> Result<String, MpiError> {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    let mut b = Runtime::builder().procs(1);
    if let Some(c) = cap {
        b = b.max_threads(c);
    }
    let rt = b.build().map_err(|e| MpiError::Args(format!("a 1-P runtime: {e}")))?;
    let before = wait_stats();
    if comm.rank() == 0 {
        on_task(&rt, async move {
            comm.recv(1, TAG_GO, vec![0u8; 1]).await?;
            comm.send(1, TAG_REPLY, vec![1u8; 1]).await.map(drop)
        })?;
    } else {
        let waiting = Arc::new(AtomicBool::new(false));
        let w = waiting.clone();
        let a = rt.spawn(async move {
            // SeqCst store, read by B below: B sends only after A has begun its wait.
            w.store(true, SeqCst);
            comm.recv(0, TAG_REPLY, vec![0u8; 1]).await
        });
        let b = rt.spawn(async move {
            while !waiting.load(SeqCst) {
                gmprt::yield_now().await;
            }
            comm.send(0, TAG_GO, vec![1u8; 1]).await
        });
        rt.block_on(async move {
            b.await.expect("task B")?;
            a.await.expect("task A").map(drop)
        })?;
    }
    let after = wait_stats();
    Ok(format!(
        "a task waiting in MPI left its P free: checked on 1 P, wait {}{} (rank 0: {} hand-offs, {} fallbacks, {} tests)",
        comm.wait(),
        cap.map_or(String::new(), |c| {
            format!(
                ", thread cap {c} (the hand-off is refused: it polls; the runtime warns above that it could \
                 not start a worker thread)"
            )
        }),
        after.handoffs - before.handoffs,
        after.fallbacks - before.fallbacks,
        after.tests - before.tests
    ))
}

/// `--calibrate`: ping-pongs and the scatter under both waits (medians, same run), the link
/// fitted from the hand-off ping-pong, and the network crossover per link.
pub(super) fn calibrate(
    rt: &Runtime,
    comm: Comm,
    plan: &Plan,
    book: Option<Arc<Vec<u32>>>,
    word_counts: &[usize],
    compute: Duration,
    my_m: usize,
) -> Result<(), MpiError> {
    let (rank, size) = (comm.rank(), comm.size());
    if size < 2 {
        if rank == 0 {
            println!("--calibrate: one rank, no link to measure (run with mpirun -np 2)");
        }
        return Ok(());
    }
    let mut rows: Vec<(usize, [Duration; 2])> = Vec::new();
    let waits = [Wait::HandOff, Wait::Poll];
    for &bytes in &PING_SIZES {
        let repeats = if bytes <= 16 << 10 {
            200
        } else if bytes <= 1 << 20 {
            40
        } else {
            10
        };
        let mut med = [Duration::ZERO; 2];
        for (i, w) in waits.iter().enumerate() {
            let c = comm.with_wait(*w);
            if rank <= 1 {
                let times = on_task(rt, async move { c.ping_pong(1, bytes, repeats).await })?;
                med[i] = median(times);
            }
        }
        rows.push((bytes, med));
    }
    // The book's scatter under each wait, 5 times each, alternating.
    let mut scatter = [Vec::new(), Vec::new()];
    let mut recv: Vec<u32> = Vec::new(); // reused, as in the runs above
    for _ in 0..5 {
        for (i, w) in waits.iter().enumerate() {
            let c = comm.with_wait(*w);
            let (data, counts, buf) = (book.clone(), word_counts.to_vec(), std::mem::take(&mut recv));
            let (t, buf) = on_task(rt, async move {
                c.agree(Ok(())).await?; // start together
                let t = Instant::now();
                let buf = c.scatter(0, data, &counts, buf).await?;
                c.agree(Ok(())).await?; // until the last rank has its share
                Ok::<_, MpiError>((t.elapsed(), buf))
            })?;
            scatter[i].push(t);
            if rank != 0 {
                recv = buf;
            }
        }
    }
    if rank != 0 {
        return Ok(());
    }
    let book_bytes = plan.n * IN_WORDS * 4;
    println!("\n--calibrate: round trips between ranks 0 and 1 (medians), and the book's scatter");
    println!("{:>10} {:>16} {:>16}", "bytes", "handoff", "poll");
    for (bytes, m) in &rows {
        println!("{bytes:>10} {:>13.2} µs {:>13.2} µs", m[0].as_secs_f64() * 1e6, m[1].as_secs_f64() * 1e6);
    }
    let sc = [median(scatter[0].clone()), median(scatter[1].clone())];
    println!(
        "{:>10} {:>16} {:>16}   (the book's scatter to {} ranks, with a checkpoint after; medians of 5)",
        book_bytes,
        ms(sc[0]),
        ms(sc[1]),
        size
    );
    let on = "this machine, Open MPI shared memory between 2 ranks (mpi_screener --calibrate)";
    let samples = |i: usize| -> Vec<PingPong> {
        rows.iter().map(|(b, m)| PingPong { bytes: *b as f64, round_trip_s: m[i].as_secs_f64() }).collect()
    };
    let measured = match NetworkLink::fit(&samples(0), "measured here (hand-off)", on) {
        Ok(l) => l,
        Err(e) => {
            println!("link: could not fit ({e})");
            return Ok(());
        }
    };
    if let Ok(p) = NetworkLink::fit(&samples(1), "measured here (poll)", on) {
        println!("link, poll: {}", p.describe());
    }
    println!("link, hand-off: {}", measured.describe());
    // The network crossover for this kernel at this rank's measured rate.
    let per = compute.as_secs_f64() / my_m.max(1) as f64;
    // The sums come back per chunk: 48 B per CHUNK contracts.
    let bytes = ItemBytes { in_bytes: (IN_WORDS * 4) as f64, out_bytes: 48.0 / CHUNK as f64 };
    println!(
        "network crossover: scattering a batch of Black-Scholes contracts to a second rank pays from n* on \
         (rank 0 prices {:.1} ns per contract, measured above; 24 B in per contract, 48 B of sums back per chunk)",
        per * 1e9
    );
    for link in std::iter::once(measured).chain(NetworkLink::presets()) {
        let c = link.scatter_crossover(2, bytes, |n| per * n);
        let what = match c {
            Ok(Crossover::At { n }) => format!("n* = {n:.0} contracts"),
            Ok(Crossover::Always) => "at every size".into(),
            Ok(Crossover::Never { reason, .. }) => format!("never: {reason}"),
            Err(e) => format!("unknown: {e}"),
        };
        println!("  {}: {what}\n      {}", link.label, link.describe());
    }
    Ok(())
}
