//! GPUs are throughput machines, not latency machines (SEEDS story 3), measured: on this CPU,
//! and on its GPU where there is one.
//!
//! ```text
//! cargo run --release --example latency_ladder -- [--steps N] [--dram-bytes B] [--round-trips R] [--reps R] [--json]
//! ```
//!
//! The ladder: how long one step takes when each step needs the one before it.
//! * **FMA**: a chain of dependent fused multiply-adds, `x = x·a + b` (with the FMA unit where the
//!   CPU has one, else a multiply then an add, and the output says which).
//! * **Loads**: a pointer chase. Each 64-byte line of a buffer holds the index of the next line
//!   to read, in one random cycle through every line (Sattolo's shuffle), so no prefetcher can
//!   guess the next address and every load waits for the one before it. The buffer is sized to
//!   half of each cache level this CPU reports (`/sys/devices/system/cpu/cpu0/cache`), then to
//!   `--dram-bytes` (at least 4× the last-level cache is what puts it in DRAM). Past the TLB's
//!   reach a load also waits for a page walk, as a real program's would; transparent huge pages
//!   are asked for (`madvise`) and shorten that where the kernel grants them.
//! * **Core to core**: two threads pinned to two CPUs bounce one cache line (a counter each
//!   increments in turn); half a round trip is the time for a write on one core to be seen by
//!   a load on another.
//!
//! Beside each rung, the figures the story quotes for a CPU and a GPU (an article's, labelled:
//! not measured here), and then Little's law, which is why the GPU still wins on a million
//! independent items: to keep a memory system busy, `latency × bandwidth` bytes must be in
//! flight. One core's streaming read (measured here) keeps a handful of lines in flight; the
//! H200's device copy (its measured profile) needs tens of thousands. A chain of dependent
//! steps has one in flight, whatever the machine, so it runs at the latency, and the table
//! says, rung by rung, which side that favours (the last line names any rung where the GPU's
//! figure is not above the CPU's).
//!
//! Where a CUDA device opens (not under `GMPRT_DEVICE=host`), the same rungs run on it: one GPU
//! thread doing the FMA chain and the chase (`kernels/cuda/latency.cu`, through
//! `CudaBackend::{fma_chain, chase}`: event-timed, after an untimed lap), with 128-byte lines
//! (the GPU's L1 line) in buffers of 16 KiB (in an SM's L1), 8 MiB (in the 50-60 MB L2 of an
//! H100 or H200) and 1 GiB (past it: device memory), over a tenth of `--steps` for the loads
//! (a device-memory load is several times a CPU's); and the counterpart of core to core: two
//! one-thread blocks on two SMs bounce one word through the L2, the only level SMs share
//! (`CudaBackend::sm_ping_pong`, `--round-trips` of them). Without a GPU, the GPU column is the
//! article's alone, and the output says why.
//!
//! `--help` lists every flag; bad flags exit 2 with the reason.

#[path = "common/mod.rs"]
mod common;
#[path = "latency_ladder/probes.rs"]
mod probes;
use clap::Parser;
use common::{count_in, fail, positive, Cli};
use probes::{chase, chase_buffer, fma_chain, measure_gpu, median_ns, ping_pong, two_cpus};
use std::ffi::OsString;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

const NAME: &str = "latency_ladder";

/// Where the sysfs cache description of CPU 0 lives (Linux).
const SYS_CACHE: &str = "/sys/devices/system/cpu/cpu0/cache";

/// One rung of the story's ladder, as its article quotes it: ns on a CPU, ns on a GPU.
/// (It also quotes a register read, 0.3 against 5.2 ns: no rung here, as a register read cannot
/// be timed on its own.)
const ARTICLE: [(&str, f64, f64); 4] =
    [("FMA", 1.0, 5.2), ("L1", 1.0, 25.0), ("L2", 2.5, 260.0), ("DRAM", 63.0, 520.0)];
/// The article's thread-to-thread latency across CPU cores (between GPU SMs it names no direct
/// mechanism).
const ARTICLE_CORE_TO_CORE_NS: f64 = 59.0;

/// Dependent steps one at a time: FMA, loads from each cache level and DRAM, core to core.
#[derive(Parser, Debug)]
#[command(name = NAME)]
pub struct Args {
    /// Dependent steps (loads, FMAs) per run
    #[arg(long, value_name = "N", default_value_t = 2_000_000, value_parser = positive)]
    steps: usize,
    /// The largest pointer-chase buffer, in bytes: the DRAM rung [default: 4x the last-level
    /// cache, at least 256 MiB: past every cache]
    #[arg(long, value_name = "BYTES", value_parser = count_in(4096, usize::MAX))]
    dram_bytes: Option<usize>,
    /// Round trips of one cache line between two cores, per run
    #[arg(long, value_name = "R", default_value_t = 200_000, value_parser = positive)]
    round_trips: usize,
    /// Runs per figure; the median is kept
    #[arg(long, value_name = "R", default_value_t = 5, value_parser = count_in(1, 1000))]
    reps: usize,
    /// Print the figures as JSON instead of text
    #[arg(long)]
    json: bool,
}

impl Cli for Args {}

/// One data (or unified) cache level of CPU 0, from sysfs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CacheLevel {
    /// 1, 2, 3.
    pub level: u32,
    /// Its size in bytes.
    pub bytes: usize,
}

/// A size as sysfs writes it (`48K`, `2048K`, `32M`, `1G`, or plain bytes), in bytes.
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1 << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>().ok()?.checked_mul(mult)
}

/// The data and unified cache levels under `dir` (`SYS_CACHE`'s layout: `index*/{level,type,size}`),
/// by level, one per level; empty when the directory cannot be read.
pub fn cache_levels(dir: &Path) -> Vec<CacheLevel> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let read = |p: &Path, f: &str| std::fs::read_to_string(p.join(f)).ok().map(|s| s.trim().to_string());
    let mut levels: Vec<CacheLevel> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("index")))
        .filter(|p| read(p, "type").is_some_and(|t| t == "Data" || t == "Unified"))
        .filter_map(|p| {
            Some(CacheLevel {
                level: read(&p, "level")?.parse().ok()?,
                bytes: parse_size(&read(&p, "size")?)?,
            })
        })
        .collect();
    levels.sort_by_key(|c| c.level);
    levels.dedup_by_key(|c| c.level);
    levels
}

/// One rung measured here.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Rung {
    /// `FMA`, `L1`, `L2`, `L3`, `DRAM`.
    pub name: String,
    /// The pointer chase's buffer (0 for the FMA rung).
    pub bytes: usize,
    /// ns per dependent step (the median run's).
    pub ns: f64,
    /// The article's CPU figure for this rung, where it quotes one (ns).
    pub article_cpu_ns: Option<f64>,
    /// The article's GPU figure for this rung, where it quotes one (ns).
    pub article_gpu_ns: Option<f64>,
    /// This rung measured on the GPU (ns per step), when a device was measured.
    pub gpu_ns: Option<f64>,
    /// The GPU chase's buffer for this rung (0: none, or the FMA rung).
    pub gpu_bytes: usize,
}

/// What the story measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    /// The cache levels sysfs reported (empty: none; the chase then guesses 32 KiB, 1 MiB, 8 MiB).
    pub caches: Vec<CacheLevel>,
    /// What ran the FMA chain.
    pub fma_kind: &'static str,
    /// The ladder, FMA first, DRAM last.
    pub rungs: Vec<Rung>,
    /// The two CPUs of the core-to-core figure and half a round trip in ns, when the process
    /// may run on two CPUs.
    pub core_to_core: Option<(usize, usize, f64)>,
    /// A write on one GPU SM seen by another (half a round trip through the L2, two one-thread
    /// blocks), ns, when a GPU was measured and its two blocks ran at once.
    pub sm_to_sm_ns: Option<f64>,
    /// The GPU measured (its description), or why none was.
    pub gpu: Result<String, String>,
    /// One core's streaming read of the DRAM buffer, bytes per second.
    pub stream_bytes_per_s: f64,
    /// Little's law for one core: DRAM latency × its streaming bandwidth, in 64-byte lines.
    pub cpu_lines_in_flight: f64,
    /// The H200's device copy (read + write), bytes per second, from its measured profile.
    pub gpu_bytes_per_s: f64,
    /// Little's law for the H200 at the DRAM latency measured on the GPU, or else the
    /// article's, in 64-byte lines.
    pub gpu_lines_in_flight: f64,
}

fn article(name: &str) -> (Option<f64>, Option<f64>) {
    ARTICLE.iter().find(|r| r.0 == name).map_or((None, None), |r| (Some(r.1), Some(r.2)))
}

/// The DRAM rung's buffer: `asked`, or 4x the largest cache and at least 256 MiB.
pub fn dram_bytes(asked: Option<usize>, caches: &[CacheLevel]) -> usize {
    asked
        .unwrap_or_else(|| caches.iter().map(|c| c.bytes.saturating_mul(4)).max().unwrap_or(0).max(256 << 20))
}

/// Runs the ladder with `a`'s sizes; `caches` is what sysfs reported (or nothing).
pub fn measure(a: &Args, caches: Vec<CacheLevel>) -> Result<Outcome, String> {
    let mut rungs = Vec::new();
    fma_chain(a.steps.min(100_000)); // warm-up: the clock ramps, the code is paged in
    let (runs, fma_kind): (Vec<Duration>, Vec<&str>) = (0..a.reps)
        .map(|_| {
            let (t, _, kind) = fma_chain(a.steps);
            (t, kind)
        })
        .unzip();
    let (cpu, gpu) = article("FMA");
    rungs.push(Rung {
        name: "FMA".into(),
        bytes: 0,
        ns: median_ns(runs, a.steps as u64),
        article_cpu_ns: cpu,
        article_gpu_ns: gpu,
        gpu_ns: None,
        gpu_bytes: 0,
    });

    // Half of each level, so the buffer stays in it beside whatever else the process holds.
    let guessed =
        [(1, 32 << 10), (2, 1 << 20), (3, 8 << 20)].map(|(level, bytes)| CacheLevel { level, bytes });
    let levels = if caches.is_empty() { guessed.to_vec() } else { caches.clone() };
    let mut sizes: Vec<(String, usize)> =
        levels.iter().map(|c| (format!("L{}", c.level), (c.bytes / 2).max(64))).collect();
    let dram_bytes = dram_bytes(a.dram_bytes, &caches);
    // A level whose buffer would not be smaller than the DRAM one is no rung below it.
    sizes.retain(|&(_, b)| b < dram_bytes);
    sizes.push(("DRAM".into(), dram_bytes));
    let asked = format!("--dram-bytes {dram_bytes}");
    let mut dram = Vec::new();
    for (name, bytes) in sizes {
        let lines = chase_buffer(bytes / 64, &asked)?;
        chase(&lines, lines.len().min(a.steps)); // warm-up: one pass brings it into its level
        let runs = (0..a.reps).map(|_| chase(&lines, a.steps).0).collect();
        let (cpu, gpu) = article(&name);
        rungs.push(Rung {
            name,
            bytes: lines.len() * 64,
            ns: median_ns(runs, a.steps as u64),
            article_cpu_ns: cpu,
            article_gpu_ns: gpu,
            gpu_ns: None,
            gpu_bytes: 0,
        });
        dram = lines;
    }

    // One core streaming through the DRAM buffer in order: one word of every 64-byte line, so
    // every line comes in from memory (the bytes moved are the lines').
    let words = dram.len();
    let runs: Vec<Duration> = (0..a.reps)
        .map(|_| {
            let t0 = Instant::now();
            black_box(dram.iter().fold(0usize, |s, l| s.wrapping_add(l.next)));
            t0.elapsed()
        })
        .collect();
    let stream_bytes_per_s = (words * 64) as f64 / (median_ns(runs, 1) * 1e-9);
    let dram_ns = rungs.last().map_or(0.0, |r| r.ns);
    let cpu_lines_in_flight = dram_ns * 1e-9 * stream_bytes_per_s / 64.0;

    drop(dram);

    let mut sm_to_sm_ns = None;
    let gpu = measure_gpu(a.steps, a.round_trips, a.reps).map(|g| {
        for (name, bytes, ns) in g.rungs {
            if let Some(r) = rungs.iter_mut().find(|r| r.name == name) {
                (r.gpu_ns, r.gpu_bytes) = (Some(ns), bytes);
            }
        }
        sm_to_sm_ns = g.sm_to_sm_ns;
        g.device
    });
    let h200 = gmprt::offload::model::DeviceProfile::measured_h200();
    // The fit's slope is seconds per byte copied; each byte is read once and written once.
    let gpu_bytes_per_s = h200.device_copy().map_or(0.0, |f| 2.0 / f.slope);
    let gpu_dram_ns = rungs.last().and_then(|r| r.gpu_ns).or(article("DRAM").1).unwrap_or(0.0);
    let gpu_lines_in_flight = gpu_dram_ns * 1e-9 * gpu_bytes_per_s / 64.0;

    let core_to_core = two_cpus().map(|cpus| {
        ping_pong(cpus, a.round_trips.min(1000)); // warm-up: both threads started and pinned
        let runs = (0..a.reps).map(|_| ping_pong(cpus, a.round_trips)).collect();
        (cpus.0, cpus.1, median_ns(runs, 2 * a.round_trips as u64))
    });
    Ok(Outcome {
        caches,
        fma_kind: fma_kind[0],
        rungs,
        core_to_core,
        sm_to_sm_ns,
        gpu,
        stream_bytes_per_s,
        cpu_lines_in_flight,
        gpu_bytes_per_s,
        gpu_lines_in_flight,
    })
}

fn bytes(b: usize) -> String {
    match b {
        0 => "-".into(),
        b if b >= 1 << 20 => format!("{:.0} MiB", b as f64 / (1 << 20) as f64),
        b => format!("{:.0} KiB", b as f64 / 1024.0),
    }
}

fn opt(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v}"))
}

/// The figures, in words.
pub fn print(o: &Outcome, steps: usize) {
    match o.caches.as_slice() {
        [] => println!("caches: not reported by {SYS_CACHE}; the chase guesses 32 KiB, 1 MiB, 8 MiB"),
        c => println!(
            "caches of CPU 0 ({SYS_CACHE}): {}",
            c.iter().map(|c| format!("L{} {}", c.level, bytes(c.bytes))).collect::<Vec<_>>().join(", ")
        ),
    }
    println!("one dependent step at a time ({steps} steps per run; FMA: {}):", o.fma_kind);
    println!(
        "{:<6} {:>10} {:>9} {:>12} {:>10} {:>9} {:>12}",
        "rung", "CPU buffer", "CPU ns", "article CPU", "GPU buffer", "GPU ns", "article GPU"
    );
    for r in &o.rungs {
        println!(
            "{:<6} {:>10} {:>9.2} {:>12} {:>10} {:>9} {:>12}",
            r.name,
            bytes(r.bytes),
            r.ns,
            opt(r.article_cpu_ns),
            bytes(r.gpu_bytes),
            r.gpu_ns.map_or("-".into(), |v| format!("{v:.2}")),
            opt(r.article_gpu_ns)
        );
    }
    match &o.gpu {
        Ok(device) => {
            println!("GPU: {device}, one thread (the article's figures are quoted, not measured here)")
        }
        Err(why) => {
            println!("GPU rungs not measured ({why}); the article's figures are quoted, not measured here")
        }
    }
    let llc = o.caches.iter().map(|c| c.bytes).max().unwrap_or(0);
    if let Some(d) = o.rungs.last().filter(|d| d.bytes < 4 * llc) {
        println!(
            "note: the DRAM buffer ({}) is under 4x the last-level cache ({}): part of it may still hit in that \
             cache; a larger --dram-bytes puts it past",
            bytes(d.bytes),
            bytes(llc)
        );
    }
    match o.core_to_core {
        Some((a, b, ns)) => println!(
            "core to core: a write on CPU {a} seen by a load on CPU {b} in {ns:.1} ns (half a round trip; \
             the article: {ARTICLE_CORE_TO_CORE_NS} ns across cores, and no direct path between GPU SMs)"
        ),
        None => println!("core to core: this process may run on one CPU only, nothing to bounce between"),
    }
    match (&o.gpu, o.sm_to_sm_ns) {
        (Ok(_), Some(ns)) => println!(
            "SM to SM: a write on one GPU SM seen by another in {ns:.1} ns (half a round trip through the L2, \
             their only shared level: no direct path, as the article says)"
        ),
        (Ok(_), None) => println!("SM to SM: no figure (the two blocks did not run at once)"),
        (Err(_), _) => {}
    }
    let gpu_dram = o.rungs.last().and_then(|r| r.gpu_ns);
    // Rungs where the GPU's figure (measured, else the article's) is not above this CPU's.
    let gpu_not_slower: Vec<&str> = o
        .rungs
        .iter()
        .filter(|r| r.gpu_ns.or(r.article_gpu_ns).is_some_and(|g| g <= r.ns))
        .map(|r| r.name.as_str())
        .collect();
    let verdict = if gpu_not_slower.is_empty() {
        "where this CPU is ahead at every rung".to_string()
    } else {
        format!("where this CPU is ahead at every rung but {}", gpu_not_slower.join(", "))
    };
    println!(
        "Little's law: one core streams {:.1} GB/s from DRAM at {:.0} ns a load, so it keeps {:.0} lines of 64 B \
         in flight (its fill buffers and prefetchers); the H200 copies at {:.0} GB/s (its measured profile) and at \
         {:.0} ns a load ({}) needs {:.0} lines in flight. A dependent chain has one in flight on either, so it \
         runs at the latency, {verdict}; only many independent items fill a GPU.",
        o.stream_bytes_per_s / 1e9,
        o.rungs.last().map_or(0.0, |r| r.ns),
        o.cpu_lines_in_flight,
        o.gpu_bytes_per_s / 1e9,
        gpu_dram.or(article("DRAM").1).unwrap_or(0.0),
        if gpu_dram.is_some() { "measured on this GPU" } else { "the article's" },
        o.gpu_lines_in_flight
    );
}

/// Parses `args` (the program's name first) and runs the story; what `main` and `gmprt tour`
/// call. A bad command line prints its error and exits 2 (`--help` prints and exits 0).
pub fn main_from(args: Vec<OsString>) {
    let a: Args = common::parse_from(args);
    match measure(&a, cache_levels(Path::new(SYS_CACHE))) {
        Ok(o) if a.json => {
            println!("{}", serde_json::to_string_pretty(&o).unwrap_or_else(|e| fail(NAME, e)))
        }
        Ok(o) => print(&o, a.steps),
        Err(e) => fail(NAME, e),
    }
}

#[allow(dead_code)]
fn main() {
    main_from(std::env::args_os().collect());
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::try_parse_from;

    #[test]
    fn cli() {
        common::testing::cli_contract::<Args>(NAME);
        let a: Args = try_parse_from([NAME]).unwrap();
        assert_eq!(
            (a.steps, a.dram_bytes, a.round_trips, a.reps, a.json),
            (2_000_000, None, 200_000, 5, false)
        );
        let a: Args = try_parse_from([NAME, "--steps", "1e3", "--dram-bytes", "1e6", "--json"]).unwrap();
        assert_eq!((a.steps, a.dram_bytes, a.json), (1000, Some(1_000_000), true));
        assert!(try_parse_from::<Args, _, _>([NAME, "--dram-bytes", "100"]).is_err());
    }

    #[test]
    fn sysfs_sizes_parse() {
        assert_eq!(parse_size("48K"), Some(48 << 10));
        assert_eq!(parse_size("2048K\n"), Some(2 << 20));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size(""), None);
    }

    #[test]
    fn cache_levels_keep_data_and_unified_by_level() {
        let dir = std::env::temp_dir().join(format!("gmprt-latency-ladder-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (i, level, kind, size) in [
            (0, "1", "Data", "48K"),
            (1, "1", "Instruction", "32K"),
            (2, "2", "Unified", "2048K"),
            (3, "3", "Unified", "105M"),
        ] {
            let d = dir.join(format!("index{i}"));
            std::fs::create_dir_all(&d).unwrap();
            for (f, v) in [("level", level), ("type", kind), ("size", size)] {
                std::fs::write(d.join(f), format!("{v}\n")).unwrap();
            }
        }
        let got = cache_levels(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            got,
            [(1, 48 << 10), (2, 2 << 20), (3, 105 << 20)].map(|(level, bytes)| CacheLevel { level, bytes })
        );
        assert!(cache_levels(Path::new("/no/such/dir")).is_empty());
    }

    #[test]
    fn the_dram_rung_is_past_every_cache() {
        let caches = [(1, 48 << 10), (3, 105 << 20)].map(|(level, bytes)| CacheLevel { level, bytes });
        assert_eq!(dram_bytes(None, &caches), 420 << 20);
        assert_eq!(dram_bytes(None, &caches[..1]), 256 << 20);
        assert_eq!(dram_bytes(None, &[]), 256 << 20);
        assert_eq!(dram_bytes(Some(4096), &caches), 4096);
    }

    #[test]
    fn the_chase_is_one_cycle_through_every_line() {
        for n in [1, 2, 3, 64, 1000] {
            let lines = chase_buffer(n, "test").unwrap();
            let mut seen = vec![false; n];
            let mut p = 0;
            for _ in 0..n {
                assert!(!seen[p], "line {p} visited twice in a cycle of {n}");
                seen[p] = true;
                p = lines[p].next;
            }
            assert_eq!(p, 0, "the chase returns to its start after {n} steps");
            assert_eq!(chase(&lines, n).1, 0);
        }
    }

    #[test]
    fn a_buffer_too_big_for_memory_is_a_clear_error() {
        let e = chase_buffer(usize::MAX / 64, "--dram-bytes 18446744073709551615").err().unwrap();
        assert!(e.contains("--dram-bytes") && e.contains("cannot fit in memory"), "{e}");
    }

    #[test]
    fn a_small_ladder_has_every_rung() {
        let a: Args = try_parse_from([
            NAME,
            "--steps",
            "2000",
            "--dram-bytes",
            "65536",
            "--round-trips",
            "100",
            "--reps",
            "1",
        ])
        .unwrap();
        let levels = [(1, 8192), (2, 16384)].map(|(level, bytes)| CacheLevel { level, bytes }).to_vec();
        let o = measure(&a, levels.clone()).unwrap();
        let names: Vec<&str> = o.rungs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["FMA", "L1", "L2", "DRAM"]);
        assert_eq!(o.rungs.iter().map(|r| r.bytes).collect::<Vec<_>>(), [0, 4096, 8192, 65536]);
        assert!(o.rungs.iter().all(|r| r.ns > 0.0 && r.ns.is_finite()));
        assert!(o.gpu_bytes_per_s > 1e12, "the H200 profile's device copy: {}", o.gpu_bytes_per_s);
        // A DRAM buffer no larger than a level's drops that level: the rungs only go down.
        let small: Args =
            try_parse_from([NAME, "--steps", "100", "--dram-bytes", "8192", "--reps", "1"]).unwrap();
        let names: Vec<String> =
            measure(&small, levels.clone()).unwrap().rungs.into_iter().map(|r| r.name).collect();
        assert_eq!(names, ["FMA", "L1", "DRAM"]);
        if two_cpus().is_some() {
            assert!(o.core_to_core.is_some_and(|(a, b, ns)| a != b && ns > 0.0));
        }
        print(&o, a.steps);
    }
}
