//! The MPI screener (`examples/mpi_screener.rs`) under `mpirun`, 2 ranks on this machine
//! (loopback, oversubscribed): its Greeks equal one process's bit for bit, under both waits and
//! both scalings, and a rank that fails stops every rank with its error, never a hang.
//!
//! Needs the `mpi` feature and Open MPI's `mpirun` (`.ci/run` installs both). The example is
//! built first, by this test, with the test's own profile and target directory (`cargo build
//! --features mpi --example mpi_screener`): `cargo test --test mpi` does not build examples,
//! and an old binary would test old code. Each run has a deadline: a hang fails the test (the
//! job is killed) instead of hanging it.
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::Duration;

/// A run that takes longer than this has hung (the longest case takes about a second).
const DEADLINE: Duration = Duration::from_secs(120);

/// One `mpirun` at a time: the machine may have 2 cores, and each job runs 2 ranks.
static ONE_JOB: Mutex<()> = Mutex::new(());

/// The example's binary, built once per test process with this test's profile.
fn screener() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        // This test runs from <target>/<profile>/deps/.
        let exe = std::env::current_exe().expect("the test's own path");
        let profile_dir = exe.parent().and_then(Path::parent).expect("<target>/<profile>/deps/<test>");
        let target = profile_dir.parent().expect("<target>/<profile>");
        let profile = profile_dir.file_name().and_then(|p| p.to_str()).expect("a profile directory name");
        let mut build = Command::new(env!("CARGO"));
        build
            .args(["build", "--locked", "--features", "mpi", "--example", "mpi_screener", "--manifest-path"])
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .arg("--target-dir")
            .arg(target);
        match profile {
            "debug" => {}
            "release" => {
                build.arg("--release");
            }
            other => {
                build.args(["--profile", other]);
            }
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "building the mpi_screener example failed: {status}");
        profile_dir.join("examples").join("mpi_screener")
    })
}

/// `mpirun -np <ranks> mpi_screener <args>`, with its output, or a panic if it outlives
/// [`DEADLINE`] (after killing it).
fn mpirun(ranks: usize, args: &[&str]) -> Output {
    let bin = screener();
    let _one = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    let child = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", &ranks.to_string()])
        .arg(bin)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("mpirun: {e} (install Open MPI: apt-get install openmpi-bin libopenmpi-dev)")
        });
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(DEADLINE) {
        Ok(out) => out.expect("mpirun's output"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("mpirun -np {ranks} mpi_screener {args:?} hung: killed after {DEADLINE:?}");
        }
    }
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// The Greeks' bits a successful run printed, after checking it succeeded and passed its own
/// check against one process.
fn greek_bits(ranks: usize, args: &[&str]) -> String {
    greek_bits_and_output(ranks, args).0
}

/// [`greek_bits`], and the run's standard output.
fn greek_bits_and_output(ranks: usize, args: &[&str]) -> (String, String) {
    let o = mpirun(ranks, args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "-np {ranks} {args:?}: {}\n{out}\n{err}", o.status);
    assert!(out.contains("check: equal bit for bit to one process"), "{out}");
    for r in 0..ranks {
        assert!(out.contains(&format!("rank {r}: ")), "no line for rank {r}:\n{out}");
    }
    let ranks_word = if ranks == 1 { "rank" } else { "ranks" };
    assert!(out.contains(&format!("contracts on {ranks} {ranks_word} in")), "{out}");
    let bits = out
        .lines()
        .find_map(|l| l.strip_prefix("greeks as f64 bits: "))
        .unwrap_or_else(|| panic!("no bits line:\n{out}"))
        .to_string();
    (bits, out)
}

/// 2 ranks against 1, both waits, both scalings, on the CPU and on the device: the same bits. The book (3 × 16,384 + 4,000
/// contracts) does not divide evenly into the ranks' chunks, so the shares differ.
#[test]
fn two_ranks_equal_one_process_bit_for_bit() {
    let n = "53152";
    let one = greek_bits(1, &["--contracts", n, "--repeats", "1"]);
    for wait in ["handoff", "poll"] {
        let (two, out) = greek_bits_and_output(2, &["--contracts", n, "--repeats", "2", "--wait", wait]);
        assert_eq!(two, one, "--wait {wait}");
        // The screener's own check that a task waiting in MPI leaves its P free (it would hang
        // otherwise), and with the hand-off refused by a thread cap.
        assert!(out.contains(&format!("left its P free: checked on 1 P, wait {wait}")), "{out}");
        if wait == "handoff" {
            assert!(
                out.contains(
                    "thread cap 1 (the hand-off is refused: it polls; the runtime warns above that it could not start a worker thread) (rank 0: 0 hand-offs, 2 fallbacks"
                ),
                "{out}"
            );
        }
    }
    // Weak scaling: 26,576 contracts per rank is the same book on 2 ranks.
    let weak = greek_bits(2, &["--contracts", "26576", "--scaling", "weak", "--repeats", "1"]);
    assert_eq!(weak, one);
    // Priced on each rank's device (the Host device here, CUDA on a GPU machine): 2 ranks equal
    // one process pricing on its device.
    let device = ["--contracts", n, "--repeats", "1", "--price", "device"];
    assert_eq!(greek_bits(2, &device), greek_bits(1, &device));
    // Another seed is another book: the comparison can fail.
    assert_ne!(greek_bits(1, &["--contracts", n, "--repeats", "1", "--seed", "8"]), one);
}

/// A rank that reports a failure at the checkpoint after pricing: every rank stops with that
/// rank's error (rank 0 adds that all stopped) and the job exits 1, under both waits,
/// whichever rank fails.
#[test]
fn a_failed_rank_stops_every_rank_with_its_error() {
    for (failed, wait) in [("1", "handoff"), ("0", "poll"), ("1", "poll")] {
        let o = mpirun(2, &["--contracts", "40000", "--fail-rank", failed, "--wait", wait]);
        let (out, err) = text(&o);
        assert!(!o.status.success(), "--fail-rank {failed} succeeded:\n{out}\n{err}");
        let why = format!("rank {failed} failed: injected failure (--fail-rank {failed})");
        for want in [
            format!("mpi_screener: rank 0: stopping: {why}"),
            format!("mpi_screener: rank 1: stopping: {why}"),
            format!("mpi_screener: every rank (all 2) stopped at the same checkpoint: {why}"),
        ] {
            assert!(err.contains(&want), "{want:?} is missing:\n{err}");
        }
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(!out.contains("total:"), "no total after a failure:\n{out}");
    }
}

/// A rank that panics cannot reach the checkpoint: its panic hook aborts every rank, and
/// mpirun exits non-zero naming the abort.
#[test]
fn a_panicking_rank_aborts_every_rank() {
    let o = mpirun(2, &["--contracts", "40000", "--fail-rank", "1", "--fail-how", "panic"]);
    let (out, err) = text(&o);
    assert!(!o.status.success(), "{out}\n{err}");
    assert!(err.contains("injected panic (--fail-rank 1 --fail-how panic)"), "{err}");
    assert!(err.contains("rank 1: panicked; aborting every rank (MPI_Abort)"), "{err}");
    assert!(!out.contains("total:"), "{out}");
}

/// A command line no rank can run is refused by every rank, with the reason.
#[test]
fn a_rank_that_does_not_exist_is_a_clear_error() {
    let o = mpirun(2, &["--contracts", "1000", "--fail-rank", "2"]);
    let (out, err) = text(&o);
    assert!(!o.status.success(), "{out}\n{err}");
    assert!(err.contains("--fail-rank 2: there are only 2 ranks (0..1)"), "{err}");
}

/// `--calibrate` measures the link both ways and prints the network crossover per link.
#[test]
fn calibrate_fits_the_link_and_prints_the_crossovers() {
    let o = mpirun(2, &["--contracts", "100000", "--repeats", "1", "--calibrate"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    for want in
        ["handoff", "poll", "link, hand-off: measured here", "network crossover", "InfiniBand HDR", "25 GbE"]
    {
        assert!(out.contains(want), "{want:?} missing:\n{out}");
    }
}
