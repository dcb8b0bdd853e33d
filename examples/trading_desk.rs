//! A trading desk, end to end: ticks in over TCP, the book repriced where the cost model says,
//! risk per underlying, hedge orders out over TCP — every part a green task.
//!
//! ```text
//! cargo run --release --example trading_desk -- [--underlyings 500] [--contracts 1e6]
//!     [--ticks 20000] [--rate 4000] [--placement cpu|gpu|auto] [--sweep] [--feed ADDR]
//!     [--serve-feed ADDR] [--seed 7] [--json]
//! ```
//!
//! The source's architecture: "Go orchestrates (market data, APIs, risk engine, a GPU
//! dispatcher); CUDA executes the calculations". Here:
//! * **feed** (`desk/feed.rs`): a server task streams seeded random-walk ticks at a Poisson
//!   rate with bursts (or `--feed ADDR` reads another process's: `--serve-feed ADDR`); a
//!   handler task decodes them into per-underlying state and **conflates** when pricing falls
//!   behind, accounting for every sequence number;
//! * **risk** (this file): one task takes the underlyings that moved, reprices their contracts
//!   as one batch where `--placement` says (`desk/book.rs`; `auto` asks the cost model per
//!   batch, with the profile of this machine), sums Greeks per underlying with the segmented
//!   reduction kernel, and checks limits;
//! * **exotics** (`desk/exotics.rs`): a share of the contracts is path-dependent and valued by
//!   Monte Carlo (`option_paths`), by its own task off the fast path, where the placement says
//!   (on the device, one launch per batch: `Device::option_paths_sum_many`);
//! * **hedges** (`desk/gateway.rs`): a delta past its limit becomes an order to a loopback
//!   gateway that acks; while the gateway is away, orders wait in a bounded, netted queue.
//!
//! The report: tick → risk, tick → exotics valued and tick → ack latencies (p50/p99/p99.9),
//! full-book revaluations/s,
//! the feed's accounting, device busy fraction, `auto`'s decisions, and a check of the final
//! risk against an f64 reference. `--sweep` (`desk/sweep.rs`) raises the rate until p99 tick →
//! risk passes a budget, per placement. With `GMPRT_TRACE=FILE`, a tick's flow runs from the
//! feed socket to its risk update (and to the order's ack).

#[path = "desk/book.rs"]
mod book;
#[path = "desk/check.rs"]
mod check;
#[path = "common/mod.rs"]
mod common;
#[path = "desk/exotics.rs"]
mod exotics;
#[path = "desk/feed.rs"]
mod feed;
#[path = "desk/gateway.rs"]
mod gateway;
#[path = "desk/report.rs"]
mod report;
#[path = "desk/sweep.rs"]
mod sweep;

use book::{Book, Placement, Pricer};
use clap::Parser;
use common::{check_fits, fail, parse_count, positive, Cli, Procs, TooBig};
use feed::{Faults, FeedConfig, Handler, Market};
use gateway::Orders;
use gmprt::net::TcpListener;
use gmprt::offload::model::{CostModel, DeviceProfile, Residency};
use gmprt::offload::{Device, DeviceKind, PROFILE_ENV};
use gmprt::runtime::chan::chan;
use gmprt::runtime::Runtime;
use hdrhistogram::Histogram;
use report::{Check, Latency, PathsCheck, Report, Step, Sweep};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use sweep::sweep;

const NAME: &str = "trading_desk";

/// A trading desk: feed, risk and hedges as green tasks, pricing placed by the cost model.
#[derive(Parser, Debug, Clone)]
#[command(name = NAME)]
struct Args {
    /// Underlyings
    #[arg(long, value_name = "U", default_value_t = 500, value_parser = positive)]
    underlyings: usize,
    /// Option contracts in the book, written 1000000, 1_000_000 or 1e6
    #[arg(long, value_name = "C", default_value_t = 1_000_000, value_parser = positive)]
    contracts: usize,
    /// Ticks the feed sends before it ends (sequence numbers, gaps included)
    #[arg(long, value_name = "N", default_value_t = 20_000, value_parser = positive)]
    ticks: usize,
    /// Mean ticks per second (Poisson, with bursts); 0 sends as fast as the desk reads
    #[arg(long, value_name = "R", default_value_t = 4000, value_parser = parse_count)]
    rate: usize,
    /// Where the book is priced
    #[arg(long, value_enum, default_value_t = Placement::Auto)]
    placement: Placement,
    /// Raise the rate until p99 tick -> risk passes --budget-us, for each placement
    #[arg(long)]
    sweep: bool,
    /// The p99 tick -> risk budget of --sweep, in µs
    #[arg(long, value_name = "US", default_value_t = 1000, value_parser = positive)]
    budget_us: usize,
    /// Seconds of feed per --sweep step (a step sends at least 2,000 ticks whatever its rate)
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    sweep_secs: f64,
    /// Read the feed from this address (a `--serve-feed` process) [default: none, the feed is
    /// served here]
    #[arg(long, value_name = "ADDR")]
    feed: Option<SocketAddr>,
    /// Only serve the feed on this address, once, then exit (for a desk started with --feed)
    /// [default: none, run the desk]
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["feed", "sweep"])]
    serve_feed: Option<SocketAddr>,
    /// Net delta (shares) per underlying past which a hedge order goes out
    #[arg(long, value_name = "SHARES", default_value_t = 100.0)]
    delta_limit: f64,
    /// Share of each underlying's contracts that is path-dependent, valued by Monte Carlo
    #[arg(long, value_name = "F", default_value_t = 0.0005)]
    mc_share: f64,
    /// Monte Carlo paths per path-dependent contract and revaluation
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = positive)]
    mc_paths: usize,
    /// Keep the whole book on the device (needs --placement gpu): a batch uploads the moved
    /// spots alone, reprices those underlyings there and copies back their sums
    #[arg(long)]
    resident: bool,
    /// Seed of the book and of the feed
    #[arg(long, value_name = "S", default_value_t = 7, value_parser = parse_count)]
    seed: usize,
    /// A device profile (JSON) for `auto` [default: GMPRT_PROFILE, else the measured H200 on
    /// CUDA, the simulated device's own, or the recorded 2-core VM for the Host device]
    #[arg(long, value_name = "FILE")]
    profile: Option<std::path::PathBuf>,
    #[command(flatten)]
    procs: Procs,
    /// Print the report as JSON
    #[arg(long)]
    json: bool,
    /// Test fault: every k-th tick carries a NaN spot
    #[arg(long, help_heading = "Fault injection (for tests)", value_name = "K", default_value_t = 0, value_parser = parse_count)]
    fault_malformed_every: usize,
    /// Test fault: every k-th sequence number is never sent
    #[arg(long, help_heading = "Fault injection (for tests)", value_name = "K", default_value_t = 0, value_parser = parse_count)]
    fault_gap_every: usize,
    /// Test fault: the feed closes the connection after every k frames
    #[arg(long, help_heading = "Fault injection (for tests)", value_name = "K", default_value_t = 0, value_parser = parse_count)]
    fault_disconnect_every: usize,
    /// Test fault: the gateway refuses its first k connections
    #[arg(long, help_heading = "Fault injection (for tests)", value_name = "K", default_value_t = 0, value_parser = parse_count)]
    fault_gateway_refuse: usize,
    /// Test fault: no gateway listens at all
    #[arg(long, help_heading = "Fault injection (for tests)")]
    fault_gateway_down: bool,
}

impl Cli for Args {
    fn check(&self) -> Result<(), String> {
        if !(self.delta_limit.is_finite() && self.delta_limit > 0.0) {
            return Err(format!("--delta-limit {}: must be a positive number of shares", self.delta_limit));
        }
        if !(self.sweep_secs.is_finite() && self.sweep_secs > 0.0) {
            return Err(format!("--sweep-secs {}: must be a positive number of seconds", self.sweep_secs));
        }
        if !(0.0..=1.0).contains(&self.mc_share) {
            return Err(format!(
                "--mc-share {}: must be a share of the contracts, from 0 to 1",
                self.mc_share
            ));
        }
        if self.resident && (self.placement != Placement::Gpu || self.sweep) {
            return Err(
                "--resident keeps the book on the device for every batch: it needs --placement gpu (and no --sweep)"
                    .to_string(),
            );
        }
        if self.contracts < self.underlyings {
            return Err(format!(
                "--contracts {} is fewer than --underlyings {}: every underlying needs a contract",
                self.contracts, self.underlyings
            ));
        }
        Ok(())
    }
}

/// Memory per contract while the desk runs: its static columns (5 words, kind, qty), a
/// batch's input and output columns (12 words) and staging words (12): ~128 bytes.
const BYTES_PER_CONTRACT: usize = 128;

fn check_memory(a: &Args) -> Result<(), TooBig> {
    let what = "a contract's static data and its share of the pricing buffers";
    check_fits(&format!("--contracts {}", a.contracts), a.contracts as u128, BYTES_PER_CONTRACT, what)
}

// In the `gmprt` command, which includes this file as a module, `main_from` is called instead.
#[allow(dead_code)]
fn main() {
    main_from(std::env::args_os().collect());
}

/// Parses `args` (the program's name first) and runs the desk: what `main` and the `gmprt`
/// command call. `--help` prints and exits 0; a bad command line prints why and exits 2.
pub fn main_from(args: Vec<std::ffi::OsString>) {
    let a: Args = common::parse_from(args);
    check_memory(&a).unwrap_or_else(|e| fail(NAME, e));
    let rt = a.procs.gmprt().unwrap_or_else(|e| fail(NAME, e));
    let spots = starting_spots(a.underlyings, a.seed as u64);
    if let Some(addr) = a.serve_feed {
        let cfg = feed_config(&a, &spots, a.rate as f64, a.ticks as u64);
        let served = rt.block_on(async move {
            let l = TcpListener::bind(addr).map_err(|e| format!("--serve-feed {addr}: {e}"))?;
            println!("{NAME}: serving {} ticks on {}", cfg.ticks, l.local_addr().map_err(|e| e.to_string())?);
            feed::serve(l, cfg).await.map_err(|e| e.to_string())
        });
        match served {
            Ok(n) => println!("{NAME}: feed sent in full over {n} connection(s)"),
            Err(e) => fail(NAME, e),
        }
        return;
    }
    let device = Device::detect().unwrap_or_else(|e| fail("trading_desk: GMPRT_DEVICE", e));
    device.warm_up().unwrap_or_else(|e| fail("trading_desk: device warm-up", e));
    let (profile, profile_from) = choose_profile(&a, &device).unwrap_or_else(|e| fail(NAME, e));
    let book = Mutex::new(Book::synthetic(&spots, a.contracts, a.mc_share, a.seed as u64));
    let desk = Desk { args: a.clone(), book, spots, device, model: CostModel::new(profile), profile_from };
    if a.sweep {
        let s = sweep(&rt, &desk);
        let shape = {
            let b = desk.book.lock().unwrap();
            (b.underlyings(), b.len())
        };
        report::print_sweep(&s, shape, a.json);
        return;
    }
    let r = desk.run(&rt, a.placement, a.rate as f64, a.ticks as u64, true).unwrap_or_else(|e| fail(NAME, e));
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r).unwrap_or_else(|e| fail(NAME, e)));
    } else {
        report::print_report(&r);
    }
    if r.check.worst_ratio > 1.0 {
        eprintln!("{NAME}: the final risk disagrees with the f64 reference: {}", r.check.worst_at);
        std::process::exit(1);
    }
    if r.paths_check.worst_z > PATHS_Z_LIMIT {
        eprintln!("{NAME}: the Monte Carlo values disagree with Black-Scholes: {}", r.paths_check.worst_at);
        std::process::exit(1);
    }
}

/// Starting spots, U[50, 150).
fn starting_spots(u: usize, seed: u64) -> Vec<f64> {
    let mut rng = feed::Rng(seed ^ 0x5907);
    (0..u).map(|_| 50.0 + 100.0 * rng.unit()).collect()
}

/// A burst of 50 ticks arrives at once every 1,000 ticks: news, an index move, the open.
const BURST_EVERY: u64 = 1000;
/// Ticks in a burst.
const BURST_LEN: u64 = 50;

fn feed_config(a: &Args, spots: &[f64], rate: f64, ticks: u64) -> FeedConfig {
    FeedConfig {
        spots: spots.to_vec(),
        ticks,
        rate,
        burst_every: BURST_EVERY,
        burst_len: BURST_LEN,
        seed: a.seed as u64,
        faults: Faults {
            malformed_every: a.fault_malformed_every as u64,
            gap_every: a.fault_gap_every as u64,
            disconnect_every: a.fault_disconnect_every as u64,
        },
    }
}

/// The profile `auto` prices with, and where it came from.
fn choose_profile(a: &Args, device: &Device) -> Result<(DeviceProfile, String), String> {
    let load =
        |p: &std::path::Path| DeviceProfile::load(p).map_err(|e| format!("profile {}: {e}", p.display()));
    if let Some(p) = &a.profile {
        return Ok((load(p)?, p.display().to_string()));
    }
    if let Some(p) = std::env::var_os(PROFILE_ENV) {
        let p = std::path::PathBuf::from(p);
        return Ok((load(&p)?, format!("{PROFILE_ENV}={}", p.display())));
    }
    Ok(match device.kind() {
        DeviceKind::Cuda => {
            (DeviceProfile::measured_h200(), "the H200 measured on 2026-11-27 (built in)".into())
        }
        DeviceKind::Simulated => {
            let p = device.sim_backend().expect("a simulated device has its profile").profile().clone();
            (p, "the simulated device's own".into())
        }
        _ => {
            let json = include_str!("../offload/profiles/host-2core-vm.json");
            let p = DeviceProfile::from_json(json).map_err(|e| e.to_string())?;
            (p, "offload/profiles/host-2core-vm.json (the recorded 2-core VM; pass --profile for this machine's)".into())
        }
    })
}

/// Everything a run needs that outlives it.
struct Desk {
    args: Args,
    /// Taken by a run's risk task, given back at its end.
    book: Mutex<Book>,
    spots: Vec<f64>,
    device: Device,
    model: CostModel,
    profile_from: String,
}

/// Gamma (per share of underlying) past which a breach is reported: gamma cannot be hedged
/// with shares, so the desk only counts it (10,000 shares of delta per unit of spot move).
const GAMMA_LIMIT: f64 = 10_000.0;
/// The largest |z| of a Monte Carlo value against Black-Scholes that passes: 5 standard
/// errors (a correct estimator exceeds it with probability 6e-7 per underlying).
const PATHS_Z_LIMIT: f64 = 5.0;
/// Reconnects in a row before the feed handler gives up.
const FEED_RETRIES: u32 = 8;
/// Gateway attempts after the feed ended before pending orders are reported, not sent.
const GATEWAY_FINAL_TRIES: u32 = 3;

impl Desk {
    /// One run of the desk at `rate` ticks/s for `ticks` sequence numbers.
    fn run(
        &self,
        rt: &Runtime,
        placement: Placement,
        rate: f64,
        ticks: u64,
        revalue: bool,
    ) -> Result<Report, String> {
        let a = &self.args;
        let mut book = std::mem::take(&mut *self.book.lock().unwrap());
        let u = book.underlyings();
        for (i, s) in self.spots.iter().enumerate() {
            book.set_spot(i as u32, *s as f32);
        }
        let mut pricer =
            Pricer::new(self.device.clone(), self.model.clone(), placement, rt.procs(), a.mc_paths as u64);
        pricer.resident = a.resident;
        let exotics_pricer =
            Pricer::new(self.device.clone(), self.model.clone(), placement, rt.procs(), a.mc_paths as u64);
        let spots = self.spots.clone();
        let cfg = feed_config(a, &self.spots, rate, ticks);
        let feed_addr = a.feed;
        let (refuse, down, limit) = (a.fault_gateway_refuse as u64, a.fault_gateway_down, a.delta_limit);
        let t0 = Instant::now();
        // The risk engine is a task like the others (the block_on thread only waits for it).
        let task = rt.spawn(async move {
            // The gateway: a loopback server that acks (or, as a fault, none at all).
            let gw = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("gateway bind: {e}"))?;
            let gw_addr = gw.local_addr().map_err(|e| e.to_string())?;
            let gw_stop = Arc::new(AtomicBool::new(false));
            if down {
                drop(gw); // nothing listens there: every connect is refused
            } else {
                let stop = gw_stop.clone();
                gmprt::go(move || async move {
                    gateway::serve_gateway(gw, refuse, stop).await;
                });
            }
            // The feed: served here, or read from another process.
            let addr = match feed_addr {
                Some(addr) => addr,
                None => {
                    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("feed bind: {e}"))?;
                    let addr = l.local_addr().map_err(|e| e.to_string())?;
                    gmprt::go(move || async move {
                        if let Err(e) = feed::serve(l, cfg).await {
                            eprintln!("{NAME}: feed server: {e}");
                        }
                    });
                    addr
                }
            };
            let market = Arc::new(Mutex::new(Market::new(spots.clone())));
            let orders = Arc::new(Mutex::new(Orders::new(u)));
            let (wake_tx, wake_rx) = chan::<()>(1);
            let (order_tx, order_rx) = chan::<()>(1);
            let done = Arc::new(AtomicBool::new(false));
            let ack_us = Arc::new(Mutex::new(Histogram::<u64>::new(3).expect("3 significant figures")));
            let sender = gmprt::spawn(gateway::send_orders(
                gw_addr,
                orders.clone(),
                order_rx,
                done.clone(),
                GATEWAY_FINAL_TRIES,
                ack_us.clone(),
            ));
            // The starting risk: the whole book at the starting spots, and its hedges.
            let all: Vec<u32> = (0..u as u32).collect();
            pricer.prepare(&book)?;
            let mut risk = pricer.reprice(&book, &all)?;
            // The path-dependent share is valued by its own task, off the fast path.
            let (exotics, exotics_wake) = exotics::Exotics::new(u);
            let valuation = gmprt::spawn(exotics::run(
                book.path_dependent(),
                exotics_pricer,
                exotics.clone(),
                exotics_wake,
            ));
            let start = Instant::now();
            let mut gamma_breaches = 0;
            let opening: Vec<_> = all.iter().map(|&x| (x, start, gateway::NO_TICK)).collect();
            gateway::hedge(&risk, &opening, &orders, limit);
            let _ = order_tx.try_send(());
            let handler = gmprt::spawn(
                Handler { addr, market: market.clone(), wake: wake_tx, max_retries: FEED_RETRIES }.run(),
            );
            let mut risk_us = Histogram::<u64>::new(3).expect("3 significant figures");
            let mut updates = 0u64;
            let rec = gmprt::runtime::trace::current();
            loop {
                let (taken, ended) = {
                    let mut m = market.lock().unwrap();
                    (m.take_dirty(), m.total.is_some())
                };
                if taken.is_empty() {
                    if ended {
                        break;
                    }
                    if handler.is_finished() {
                        // The handler gave up (its error is reported below) without the end.
                        break;
                    }
                    let _ = gmprt::runtime::time::timeout(Duration::from_millis(50), wake_rx.recv()).await;
                    continue;
                }
                for (u, s, _) in &taken {
                    book.set_spot(*u, *s as f32);
                }
                let unds: Vec<u32> = taken.iter().map(|(u, _, _)| *u).collect();
                let t_batch = rec.as_ref().map(|r| r.now());
                let sums = pricer.reprice(&book, &unds)?;
                let now = Instant::now();
                updates += 1;
                let mut moved = Vec::with_capacity(taken.len());
                for ((u, _, p), s) in taken.iter().zip(sums) {
                    risk[*u as usize] = s;
                    let _ = risk_us.record(now.duration_since(p.first_arrival).as_micros().max(1) as u64);
                    if s.gamma.abs() > GAMMA_LIMIT {
                        gamma_breaches += 1;
                    }
                    moved.push((*u, p.first_arrival, p.seq));
                }
                for (u, spot, p) in &taken {
                    if book.mc[*u as usize] > 0 {
                        exotics.moved(*u, *spot as f32, p.first_arrival);
                    }
                }
                let hedged = gateway::hedge(&risk, &moved, &orders, limit);
                if let (Some(r), Some(t)) = (&rec, t_batch) {
                    // On the desk's own lane: the risk task's poll is cut by the syscall
                    // hand-off of a device batch, so its M lane would not hold this slice.
                    let l = r.lane("desk", "risk engine");
                    let end = r.now();
                    let mid = t + (end - t) / 2;
                    let args = vec![("underlyings", unds.len().into()), ("hedges", hedged.len().into())];
                    r.slice(l, "risk update", t, end, args);
                    for (_, _, seq) in &moved {
                        r.flow_in(l, feed::flow_id(*seq), mid);
                    }
                    for seq in &hedged {
                        r.flow_out(l, gateway::order_flow_id(*seq), mid);
                    }
                }
                if !hedged.is_empty() {
                    let _ = order_tx.try_send(());
                }
                gmprt::yield_now().await;
            }
            let handler_result = handler.await.map_err(|e| format!("feed handler: {e}"))?;
            exotics.finish();
            let valued = valuation.await.map_err(|e| format!("exotics valuation: {e}"))??;
            // Release: the sender's Acquire load sees every order queued before this.
            done.store(true, Ordering::Release);
            let _ = order_tx.try_send(());
            sender.await.map_err(|e| format!("order sender: {e}"))?;
            gw_stop.store(true, Ordering::Release);
            let m = market.lock().unwrap();
            let acct = m.acct.clone();
            let total = m.total.unwrap_or(m.expect);
            drop(m);
            let o = orders.lock().unwrap();
            let stats = o.stats.clone();
            drop(o);
            let ack = Latency::of(&ack_us.lock().unwrap());
            Ok::<_, String>((
                (risk, valued),
                book,
                acct,
                total,
                stats,
                Latency::of(&risk_us),
                ack,
                updates,
                gamma_breaches,
                pricer,
                handler_result,
            ))
        });
        let out = rt.block_on(task).map_err(|e| format!("risk task: {e}"))?;
        let (
            (risk, valued),
            book,
            acct,
            total,
            stats,
            tick_to_risk,
            tick_to_ack,
            updates,
            gamma,
            mut pricer,
            handler,
        ) = out?;
        let wall = t0.elapsed();
        handler.map_err(|e| format!("the feed ended early: {e}"))?;
        let (worst_ratio, worst_at) = check::check_against_reference(&book, &risk, pricer.used_cuda());
        let (worst_z, z_at) = check::check_paths(&valued.book, &valued.values);
        let mc_value: f64 = valued.values.iter().map(|v| v.value).sum();
        let mc_contracts = valued.book.len() as u64;
        let fraction = |d: Duration| d.as_secs_f64() / wall.as_secs_f64();
        let (busy_risk, busy_exotics) = (fraction(pricer.device_busy), fraction(valued.pricer.device_busy));
        let repriced = pricer.contracts[0] + pricer.contracts[1];
        let revals = if revalue { pricer.full_book_rate(rt, &book)? } else { f64::NAN };
        let contracts = book.len();
        *self.book.lock().unwrap() = book;
        let mut totals = [0.0f64; 6];
        for s in &risk {
            for (t, v) in totals.iter_mut().zip(s.to_array()) {
                *t += v;
            }
        }

        Ok(Report {
            placement,
            device: self.device.describe(),
            profile: self.profile_from.clone(),
            procs: rt.procs(),
            underlyings: u,
            contracts,
            rate,
            wall_s: wall.as_secs_f64(),
            tick_to_risk,
            tick_to_ack,
            risk_updates: updates,
            contracts_repriced: repriced,
            full_book_revaluations_per_s: revals,
            feed: acct,
            feed_total: total,
            orders: stats,
            device_busy_fraction: busy_risk + busy_exotics,
            device_busy_risk: busy_risk,
            device_busy_exotics: busy_exotics,
            resident: pricer.resident,
            resident_upload_bytes: 4 * pricer.resident_words,
            batches_cpu: pricer.batches[0],
            batches_gpu: pricer.batches[1],
            auto_decisions: pricer.decided,
            decisions: pricer.decisions,
            gamma_breaches: gamma,
            totals,
            check: Check { worst_ratio, worst_at },
            mc_contracts,
            mc_paths: valued.pricer.mc_paths,
            mc_batches_cpu: valued.pricer.mc_batches[0],
            mc_batches_gpu: valued.pricer.mc_batches[1],
            tick_to_exotics: Latency::of(&valued.latency),
            mc_decisions: valued.pricer.decisions,
            mc_value,
            paths_check: PathsCheck { worst_z, worst_at: z_at },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_contract() {
        common::testing::cli_contract::<Args>(NAME);
    }

    #[test]
    fn nonsense_is_refused_before_anything_runs() {
        use clap::error::ErrorKind;
        let e = common::testing::parse_error::<Args>(
            &[NAME, "--underlyings", "10", "--contracts", "5"],
            ErrorKind::ArgumentConflict,
            2,
        );
        assert!(e.contains("every underlying needs a contract"), "{e}");
        let e = common::testing::parse_error::<Args>(
            &[NAME, "--delta-limit", "-1"],
            ErrorKind::ArgumentConflict,
            2,
        );
        assert!(e.contains("--delta-limit"), "{e}");
        let big = Args::try_parse_from([NAME, "--contracts", "1e18", "--underlyings", "1"]).unwrap();
        common::testing::assert_too_big(check_memory(&big), "--contracts 1000000000000000000");
    }
}
