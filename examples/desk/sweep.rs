//! `--sweep`: the rate at which the desk still holds its latency budget, per placement. From
//! `--rate` the rate doubles while p99 tick → risk stays within `--budget-us`; when `--rate`
//! itself misses, it halves until a rate holds. Each step is a full run of the desk
//! (`Desk::run`) at that rate.

use super::*;

/// Rates from `--rate` doubling up to this many steps (at 4,000/s: up to 512,000/s).
const SWEEP_STEPS: u32 = 8;
/// The fewest ticks a sweep step sends (`--sweep-secs` of feed, at least this many): enough for
/// a p99 to rest on 20 ticks.
const SWEEP_MIN_TICKS: u64 = 2000;
/// When even `--rate` misses the budget, halvings tried below it (at 4,000/s: down to 500/s,
/// where a step's 2,000 ticks take 4 s): a slower machine still gets a rate, not a blank.
const SWEEP_HALVINGS: u32 = 3;

/// The sweep's search for one placement, from the outcomes so far (`held`, in the order run:
/// whether each rate kept p99 tick -> risk within the budget): the next rate to run, or `None`
/// when the search is over. Up by doubling from `start` while each rate holds (at most
/// [`SWEEP_STEPS`] rates); when `start` itself misses, down by halving until one holds (at most
/// [`SWEEP_HALVINGS`]), then stop: the rate above that one was already missed.
fn sweep_next(start: f64, held: &[bool]) -> Option<f64> {
    let (&first, &last) = (held.first()?, held.last()?);
    let n = held.len() as u32;
    if first {
        (last && n < SWEEP_STEPS).then(|| start * f64::from(1u32 << n))
    } else {
        (!last && n <= SWEEP_HALVINGS).then(|| start / f64::from(1u32 << n))
    }
}

pub(super) fn sweep(rt: &Runtime, desk: &Desk) -> Sweep {
    let budget = desk.args.budget_us as u64;
    let mut steps = Vec::new();
    let mut best = Vec::new();
    for placement in [Placement::Cpu, Placement::Gpu, Placement::Auto] {
        let mut top = 0.0;
        let start = desk.args.rate.max(1) as f64;
        let (mut rate, mut held) = (start, Vec::new());
        loop {
            let ticks = ((rate * desk.args.sweep_secs) as u64).max(SWEEP_MIN_TICKS);
            let r = desk.run(rt, placement, rate, ticks, false).unwrap_or_else(|e| fail(NAME, e));
            let sustained = r.tick_to_risk.p99_us <= budget;
            steps.push(Step {
                placement,
                rate,
                p99_us: r.tick_to_risk.p99_us,
                conflated_share: r.feed.conflated as f64 / r.feed_total.max(1) as f64,
                sustained,
            });
            if !desk.args.json {
                println!(
                    "  sweep {placement:?} at {rate:>9.0} ticks/s: p99 tick -> risk {:>7} µs, {:.1}% conflated, {:.2} s{}",
                    r.tick_to_risk.p99_us,
                    100.0 * r.feed.conflated as f64 / r.feed_total.max(1) as f64,
                    r.wall_s,
                    if sustained { "" } else { "  (past the budget)" }
                );
            }
            if sustained {
                top = rate;
            }
            held.push(sustained);
            match sweep_next(start, &held) {
                Some(next) => rate = next,
                None => break,
            }
        }
        best.push((placement, top));
    }
    let rate_of = |p: Placement| best.iter().find(|b| b.0 == p).map_or(0.0, |b| b.1);
    let better = rate_of(Placement::Cpu).max(rate_of(Placement::Gpu));
    let auto = rate_of(Placement::Auto);
    // NaN (null in JSON; the report says why) when neither held the budget at any rate tried.
    let auto_vs_best = if better > 0.0 { auto / better } else { f64::NAN };
    // At half the sustained rate, against the model's time for one tick's worth of pricing.
    let (u, c) = {
        let b = desk.book.lock().unwrap();
        (b.underlyings(), b.len())
    };
    let per_tick = (c / u) as f64;
    let predicted_us = |n: f64| {
        desk.model.predict("black_scholes", n, Residency::Host, 0.0).map_or(f64::NAN, |b| {
            let cpu =
                b.cpu.iter().filter(|(p, _)| *p <= rt.procs()).map(|c| c.1).fold(f64::INFINITY, f64::min);
            cpu.min(b.gpu_total) * 1e6
        })
    };
    let predicted_tick_us = predicted_us(per_tick);
    let predicted_burst_us = predicted_us(per_tick * BURST_LEN as f64);
    let half = (auto.max(desk.args.rate as f64) / 2.0).max(1.0);
    let ticks = ((half * desk.args.sweep_secs) as u64).max(SWEEP_MIN_TICKS);
    let r = desk.run(rt, Placement::Auto, half, ticks, false).unwrap_or_else(|e| fail(NAME, e));
    Sweep {
        budget_us: desk.args.budget_us,
        start_rate: desk.args.rate as f64,
        steps,
        best,
        auto_vs_best,
        half_rate_p99_us: r.tick_to_risk.p99_us,
        predicted_tick_us,
        predicted_burst_us,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_doubles_while_rates_hold_and_halves_below_a_missed_start() {
        let rates = |held: &[bool]| -> Vec<f64> {
            (1..=held.len()).map_while(|k| sweep_next(4000.0, &held[..k])).collect()
        };
        // Every rate holds: 4,000 then 7 doublings (SWEEP_STEPS rates in all), then stop.
        let all = [true; 8];
        assert_eq!(rates(&all), [8e3, 16e3, 32e3, 64e3, 128e3, 256e3, 512e3]);
        assert_eq!(sweep_next(4000.0, &all), None);
        // Up until a miss, then stop.
        assert_eq!(rates(&[true, true, false]), [8e3, 16e3]);
        assert_eq!(sweep_next(4000.0, &[true, true, false]), None);
        // The start misses: halve until one holds, then stop.
        assert_eq!(rates(&[false, false, true]), [2e3, 1e3]);
        assert_eq!(sweep_next(4000.0, &[false, false, true]), None);
        // Nothing holds: the start and SWEEP_HALVINGS halvings, then stop.
        let none = [false; 4];
        assert_eq!(rates(&none), [2e3, 1e3, 500.0]);
        assert_eq!(sweep_next(4000.0, &none), None);
        assert_eq!(sweep_next(4000.0, &[]), None);
    }
}
