//! Channel benches: gmprt's `chan` against tokio's `mpsc` (on tokio's multi-thread runtime)
//! and crossbeam-channel (on OS threads), in the same run, with the same number of workers.
//!
//! * `chan_ping_pong`: two tasks bounce a counter through two channels, `PING_PONGS` round
//!   trips per iteration. gmprt `chan(0)` (unbuffered, Go's rendezvous) against tokio
//!   `mpsc::channel(1)` (tokio has no unbuffered channel; capacity 1 is the closest) and
//!   crossbeam `bounded(0)` between the bench thread and one spawned `std` thread.
//! * `chan_throughput`: `PRODUCERS` producers send `MESSAGES` values in all through one
//!   channel of capacity 1024 to one consumer (the root). gmprt `chan(1024)`, tokio
//!   `mpsc::channel(1024)`, crossbeam `bounded(1024)` with `PRODUCERS` spawned `std` threads
//!   and the bench thread as the consumer.
//!
//! Like with like (see benches/README.md and benches/scheduler.rs): each async workload is
//! written once, generic over the runtime ([`Sched`]) and the channel ([`Channel`]); its root
//! is itself a spawned task on both runtimes, so every send and every wake comes from a worker
//! thread; runtimes are built once per benchmark function, outside the timed loop. The
//! crossbeam side spawns its threads inside the timed loop (there is no pool to reuse), which
//! costs it some tens of µs per iteration — about 1% here.
//!
//! * `chan_select` (gmprt alone; issue 24's before and after): `default_empty` (two empty
//!   channels, a select with a `default` that always takes it), `default_hit` (one holds a
//!   value), `default_contended` (`procs` tasks poll two channels a producer feeds) and `wait`
//!   (a select with no `default`, woken by a sender each round; `SELECTS / 10` rounds).
//!
//! Workers: env `BENCH_PROCS` (default 2): gmprt Ps, tokio worker threads. Every id carries
//! `procs=N`.
//!
//! Run: `cargo bench --bench chan` (about a minute); summarise: `python3 benches/summarize.py`.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::cell::OnceCell;
use std::future::Future;

#[path = "common/mod.rs"]
mod common;
use common::{config, gmprt_rt, procs, run_gmprt, run_tokio, tokio_rt, Gmprt, Sched, Tokio};

/// Round trips per iteration of `chan_ping_pong`.
const PING_PONGS: usize = 10_000;
/// `chan_throughput`: producers, and values sent in all per iteration.
const PRODUCERS: usize = 4;
const MESSAGES: usize = 100_000;
/// `chan_throughput`: channel capacity.
const THROUGHPUT_CAP: usize = 1024;

// ---------------------------------------------------------------------------------------------
// The two runtimes and their channels behind small interfaces

/// A bounded async channel.
trait Channel: 'static {
    /// The capacity `chan_ping_pong` uses: 0 (unbuffered) where the channel has it.
    const PING_CAP: usize;
    type Tx<T: Send + 'static>: Clone + Send + 'static;
    type Rx<T: Send + 'static>: Send + 'static;

    fn bounded<T: Send + 'static>(cap: usize) -> (Self::Tx<T>, Self::Rx<T>);
    fn send<T: Send + 'static>(tx: &Self::Tx<T>, v: T) -> impl Future<Output = ()> + Send + '_;
    fn recv<T: Send + 'static>(rx: &mut Self::Rx<T>) -> impl Future<Output = Option<T>> + Send + '_;
}

impl Channel for Gmprt {
    const PING_CAP: usize = 0;
    type Tx<T: Send + 'static> = gmprt::runtime::chan::Sender<T>;
    type Rx<T: Send + 'static> = gmprt::runtime::chan::Receiver<T>;

    fn bounded<T: Send + 'static>(cap: usize) -> (Self::Tx<T>, Self::Rx<T>) {
        gmprt::runtime::chan::chan(cap)
    }
    async fn send<T: Send + 'static>(tx: &Self::Tx<T>, v: T) {
        if tx.send(v).await.is_err() {
            panic!("gmprt channel closed early");
        }
    }
    fn recv<T: Send + 'static>(rx: &mut Self::Rx<T>) -> impl Future<Output = Option<T>> + Send + '_ {
        rx.recv()
    }
}

impl Channel for Tokio {
    const PING_CAP: usize = 1;
    type Tx<T: Send + 'static> = tokio::sync::mpsc::Sender<T>;
    type Rx<T: Send + 'static> = tokio::sync::mpsc::Receiver<T>;

    fn bounded<T: Send + 'static>(cap: usize) -> (Self::Tx<T>, Self::Rx<T>) {
        tokio::sync::mpsc::channel(cap)
    }
    async fn send<T: Send + 'static>(tx: &Self::Tx<T>, v: T) {
        if tx.send(v).await.is_err() {
            panic!("tokio channel closed early");
        }
    }
    fn recv<T: Send + 'static>(rx: &mut Self::Rx<T>) -> impl Future<Output = Option<T>> + Send + '_ {
        rx.recv()
    }
}

// ---------------------------------------------------------------------------------------------
// Workloads, each written once

/// The root (ping) and one spawned task (pong) pass a counter back and forth `n` times.
async fn ping_pong<S: Sched + Channel>(n: usize) -> u64 {
    let (ping_tx, mut ping_rx) = S::bounded::<u64>(S::PING_CAP);
    let (pong_tx, mut pong_rx) = S::bounded::<u64>(S::PING_CAP);
    let pong = S::spawn(async move {
        while let Some(v) = S::recv(&mut ping_rx).await {
            S::send(&pong_tx, v + 1).await;
        }
    });
    let mut v = 0;
    for _ in 0..n {
        S::send(&ping_tx, v).await;
        v = S::recv(&mut pong_rx).await.expect("pong answers");
    }
    drop(ping_tx);
    pong.await.unwrap();
    v
}

/// `producers` tasks send `messages` values in all into one channel; the root receives them.
async fn throughput<S: Sched + Channel>(producers: usize, messages: usize, cap: usize) -> u64 {
    let (tx, mut rx) = S::bounded::<u64>(cap);
    let per = messages / producers;
    for p in 0..producers {
        let tx = tx.clone();
        drop(S::spawn(async move {
            for i in 0..per {
                S::send(&tx, (p * per + i) as u64).await;
            }
        }));
    }
    drop(tx);
    let mut sum = 0;
    while let Some(v) = S::recv(&mut rx).await {
        sum += v;
    }
    sum
}

/// `ping_pong` on OS threads: the calling thread pings, one spawned thread pongs.
fn ping_pong_crossbeam(n: usize) -> u64 {
    let (ping_tx, ping_rx) = crossbeam_channel::bounded::<u64>(0);
    let (pong_tx, pong_rx) = crossbeam_channel::bounded::<u64>(0);
    let pong = std::thread::spawn(move || {
        while let Ok(v) = ping_rx.recv() {
            pong_tx.send(v + 1).unwrap();
        }
    });
    let mut v = 0;
    for _ in 0..n {
        ping_tx.send(v).unwrap();
        v = pong_rx.recv().unwrap();
    }
    drop(ping_tx);
    pong.join().unwrap();
    v
}

/// `throughput` on OS threads: `producers` spawned threads, the calling thread consumes.
fn throughput_crossbeam(producers: usize, messages: usize, cap: usize) -> u64 {
    let (tx, rx) = crossbeam_channel::bounded::<u64>(cap);
    let per = messages / producers;
    let threads: Vec<_> = (0..producers)
        .map(|p| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for i in 0..per {
                    tx.send((p * per + i) as u64).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    let sum = rx.iter().sum();
    for t in threads {
        t.join().unwrap();
    }
    sum
}

// ---------------------------------------------------------------------------------------------
// Benchmark plumbing

/// Benches one async workload on gmprt and tokio, then `$threads` (the crossbeam version), in
/// one group. `$check` validates one untimed run's output on each.
macro_rules! three {
    ($c:expr, $group:expr, $elements:expr, |$s:ident| $root:expr, $threads:expr, $check:expr) => {{
        let procs = procs();
        let id = format!("procs={procs}");
        let mut g = $c.benchmark_group($group);
        g.throughput(Throughput::Elements($elements as u64));
        {
            type $s = Gmprt;
            let cell = OnceCell::new();
            g.bench_function(BenchmarkId::new("gmprt", &id), |b| {
                let rt = cell.get_or_init(|| {
                    let rt = gmprt_rt(procs);
                    ($check)(run_gmprt(&rt, $root));
                    rt
                });
                b.iter(|| black_box(run_gmprt(rt, $root)))
            });
        }
        {
            type $s = Tokio;
            let cell = OnceCell::new();
            g.bench_function(BenchmarkId::new("tokio", &id), |b| {
                let rt = cell.get_or_init(|| {
                    let rt = tokio_rt(procs);
                    ($check)(run_tokio(&rt, $root));
                    rt
                });
                b.iter(|| black_box(run_tokio(rt, $root)))
            });
        }
        // OS threads: not bounded by `procs`; the id says so.
        ($check)($threads);
        g.bench_function(BenchmarkId::new("crossbeam", "os-threads"), |b| b.iter(|| black_box($threads)));
        g.finish();
    }};
}

fn bench_ping_pong(c: &mut Criterion) {
    let n = PING_PONGS;
    let check = |v: u64| assert_eq!(v, n as u64);
    three!(c, "chan_ping_pong", n, |S| ping_pong::<S>(n), ping_pong_crossbeam(n), check);
}

fn bench_throughput(c: &mut Criterion) {
    let (p, m, cap) = (PRODUCERS, MESSAGES, THROUGHPUT_CAP);
    let expect = (m as u64) * (m as u64 - 1) / 2;
    let check = |v: u64| assert_eq!(v, expect);
    three!(c, "chan_throughput", m, |S| throughput::<S>(p, m, cap), throughput_crossbeam(p, m, cap), check);
}

// ---------------------------------------------------------------------------------------------
// `select!`: what a non-blocking select costs (issue 24 made it decide under every lock)

/// Selects per iteration of each `chan_select` workload.
const SELECTS: usize = 100_000;

/// One task, two empty channels: `SELECTS` selects with a `default`, every one choosing it —
/// the all-arms-empty path (before issue 24: one lock at a time; after: both locks at once).
async fn select_default_empty(n: usize) -> u64 {
    use gmprt::runtime::select;
    let (_a_tx, a) = gmprt::runtime::chan::chan::<u64>(1);
    let (_b_tx, b) = gmprt::runtime::chan::chan::<u64>(1);
    let mut defaults = 0;
    for _ in 0..n {
        select! {
            v = recv(a) => drop(black_box(v)),
            v = recv(b) => drop(black_box(v)),
            default => defaults += 1,
        }
    }
    defaults
}

/// One task: a value into `a`, then a select with a `default` that takes it.
async fn select_default_hit(n: usize) -> u64 {
    use gmprt::runtime::select;
    let (a_tx, a) = gmprt::runtime::chan::chan::<u64>(1);
    let (_b_tx, b) = gmprt::runtime::chan::chan::<u64>(1);
    let mut sum = 0;
    for i in 0..n {
        a_tx.try_send(i as u64).unwrap();
        select! {
            v = recv(a) => sum += v.unwrap(),
            v = recv(b) => drop(black_box(v)),
            default => unreachable!("a holds a value"),
        }
    }
    sum
}

/// `procs` tasks poll two shared channels with non-blocking selects while a producer keeps
/// them fed: the contended case, where taking both locks at once could cost the most.
async fn select_default_contended(n: usize, pollers: usize) -> u64 {
    use gmprt::runtime::select;
    let (a_tx, a) = gmprt::runtime::chan::chan::<u64>(64);
    let (b_tx, b) = gmprt::runtime::chan::chan::<u64>(64);
    let per = n / pollers;
    let producer = gmprt::spawn(async move {
        let mut i = 0u64;
        loop {
            let tx = if i.is_multiple_of(2) { &a_tx } else { &b_tx };
            if tx.send(i).await.is_err() {
                return;
            }
            i += 1;
        }
    });
    let tasks: Vec<_> = (0..pollers)
        .map(|_| {
            let (a, b) = (a.clone(), b.clone());
            gmprt::spawn(async move {
                let mut got = 0u64;
                for _ in 0..per {
                    select! {
                        v = recv(a) => got += v.is_some() as u64,
                        v = recv(b) => got += v.is_some() as u64,
                        default => gmprt::yield_now().await,
                    }
                }
                got
            })
        })
        .collect();
    let mut got = 0;
    for t in tasks {
        got += t.await.unwrap();
    }
    a.close();
    b.close();
    producer.await.unwrap();
    black_box(got);
    (per * pollers) as u64
}

/// A select that waits: the root sends on `a` or `b` in turn, a task selects on both and
/// answers on `c` (the path issue 24 left alone: phase A, then phase B under all locks).
async fn select_wait(n: usize) -> u64 {
    use gmprt::runtime::select;
    let (a_tx, a) = gmprt::runtime::chan::chan::<u64>(0);
    let (b_tx, b) = gmprt::runtime::chan::chan::<u64>(0);
    let (c_tx, c) = gmprt::runtime::chan::chan::<u64>(0);
    let echo = gmprt::spawn(async move {
        loop {
            let v = select! {
                v = recv(a) => v,
                v = recv(b) => v,
            };
            match v {
                Some(v) => c_tx.send(v + 1).await.unwrap(),
                None => return,
            }
        }
    });
    let mut sum = 0;
    for i in 0..n {
        let tx = if i.is_multiple_of(2) { &a_tx } else { &b_tx };
        tx.send(i as u64).await.unwrap();
        sum += c.recv().await.unwrap();
    }
    drop((a_tx, b_tx));
    echo.await.unwrap();
    sum
}

fn bench_select(c: &mut Criterion) {
    let procs = procs();
    let id = format!("procs={procs}");
    let rt = gmprt_rt(procs);
    let n = SELECTS;
    let mut g = c.benchmark_group("chan_select");
    g.throughput(Throughput::Elements(n as u64));
    assert_eq!(run_gmprt(&rt, select_default_empty(n)), n as u64);
    g.bench_function(BenchmarkId::new("default_empty", &id), |b| {
        b.iter(|| run_gmprt(&rt, select_default_empty(n)))
    });
    assert_eq!(run_gmprt(&rt, select_default_hit(n)), (n as u64) * (n as u64 - 1) / 2);
    g.bench_function(BenchmarkId::new("default_hit", &id), |b| {
        b.iter(|| run_gmprt(&rt, select_default_hit(n)))
    });
    g.bench_function(BenchmarkId::new("default_contended", &id), |b| {
        b.iter(|| run_gmprt(&rt, select_default_contended(n, procs)))
    });
    let rounds = n / 10;
    g.throughput(Throughput::Elements(rounds as u64)); // one select per round
    assert_eq!(run_gmprt(&rt, select_wait(rounds)), (rounds as u64) * (rounds as u64 + 1) / 2);
    g.bench_function(BenchmarkId::new("wait", &id), |b| b.iter(|| run_gmprt(&rt, select_wait(rounds))));
    g.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_ping_pong, bench_throughput, bench_select
}
criterion_main!(benches);
