//! `[harness]`: the harness checks itself: a child run of one test is judged by its exit code and
//! summary line, and a missing GPU or NVRTC is reported as ignored, or failed under `GMPRT_REQUIRE_GPU=1`.

use super::*;

/// Whether a child run of one test passed: judged by its exit code and summary line, and that
/// the test's own `line` (`test [kind] name ... `) is there. Not by `"{line}ok"`: a passing test
/// may print between its `... ` and its `ok` — the GPU probe prints the device it found — so
/// that literal never matched on a real GPU (the first H200 run's one failure).
fn child_passed(code: Option<i32>, text: &str, line: &str) -> bool {
    code == Some(0) && text.contains(line) && text.contains(" 1 passed; 0 failed;")
}

/// `[harness]`: the pass check against the child output the first H200 run recorded
/// (`benches/results/h200-2026-11-26/stages.tar.xz`, `1-correct/test-offload-cuda.txt`), where
/// the old literal check failed; and against a failed and an ignored run.
pub(super) fn child_pass_check_reads_a_probe_that_prints() -> Result<(), Failed> {
    let line = format!("test [gpu] {GPU_PROBE_TEST} ... ");
    let h200 = format!(
        "\nrunning 1 test\n{line}cuda:0 NVIDIA H200 (sm_90, driver 13.0, sync auto; libcuda 13.0 \
         (/usr/local/nvidia/lib64/libcuda.so.580.159.04)); 132 SMs\nok\n\n\
         test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 19 filtered out; finished in 0.00s\n"
    );
    let failed = format!("{line}FAILED\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored;\n");
    let ignored =
        format!("{line}ignored (no GPU: none)\n\ntest result: ok. 0 passed; 0 failed; 1 ignored;\n");
    let verdicts = [
        child_passed(Some(0), &h200, &line),
        child_passed(Some(101), &failed, &line),
        child_passed(Some(0), &ignored, &line),
        child_passed(Some(0), &h200, "test [gpu] another_test ... "),
    ];
    if verdicts == [true, false, false, false] {
        Ok(())
    } else {
        Err(format!("pass / fail / ignored / other test judged {verdicts:?}").into())
    }
}

/// `[harness]`: re-runs this binary on one `[gpu]` and one `[nvrtc]` test and checks that a
/// missing GPU (NVRTC) is reported as ignored with the reason, that `GMPRT_REQUIRE_GPU=1` makes
/// it a failure (exit status 101) with the reason, that a bad value of the variable fails,
/// and that where the GPU (NVRTC) is present the test passes either way.
pub(super) fn harness_reports_skips() -> Result<(), Failed> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let run = |test: &str, require: Option<&str>| -> Result<(Option<i32>, String), Failed> {
        let mut cmd = Command::new(&exe);
        cmd.args(["--exact", test, "--color", "never", "--test-threads", "1"]);
        match require {
            Some(v) => cmd.env(REQUIRE_ENV, v),
            None => cmd.env_remove(REQUIRE_ENV),
        };
        let out = cmd.output().map_err(|e| format!("running {}: {e}", exe.display()))?;
        let text =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        Ok((out.status.code(), text))
    };
    let check = |ok: bool, what: &str, text: &str| -> Result<(), Failed> {
        if ok {
            Ok(())
        } else {
            Err(format!("{what}; the child's output was:\n{text}").into())
        }
    };
    let listed = Command::new(&exe).arg("--list").output().map_err(|e| format!("--list: {e}"))?;
    let list = String::from_utf8_lossy(&listed.stdout);
    check(
        list.contains(&format!("[gpu] {GPU_PROBE_TEST}: test"))
            && list.contains(&format!("[nvrtc] {NVRTC_PROBE_TEST}: test")),
        "--list must name each test with its kind",
        &list,
    )?;

    let gates = [
        ("gpu", GPU_PROBE_TEST, "no GPU", gpu().map(|_| ())),
        ("nvrtc", NVRTC_PROBE_TEST, "no NVRTC", nvrtc_gate()),
    ];
    for (kind, test, what, gate) in gates {
        let line = format!("test [{kind}] {test} ... ");
        let (code, text) = run(test, None)?;
        match &gate {
            Ok(()) => check(
                child_passed(code, &text, &line),
                &format!("{test} must pass where its {kind} is present"),
                &text,
            )?,
            Err(Gate::Missing(reason)) => check(
                code == Some(0)
                    && text.contains(&format!("{line}ignored ({what}: {reason})"))
                    && text.contains(" 0 passed; 0 failed; 1 ignored;"),
                &format!("without {REQUIRE_ENV}, {test} must be reported as ignored with the reason"),
                &text,
            )?,
            Err(Gate::Broken(_)) => {
                check(code == Some(101), &format!("{test} must fail on a broken {kind}"), &text)?
            }
        }
        let (code, text) = run(test, Some("1"))?;
        match &gate {
            Ok(()) => check(
                code == Some(0) && text.contains(" 1 passed;"),
                &format!("{test} must pass under {REQUIRE_ENV}=1 where its {kind} is present"),
                &text,
            )?,
            Err(Gate::Missing(reason) | Gate::Broken(reason)) => check(
                code == Some(101)
                    && text.contains(&format!("{line}FAILED"))
                    && text.contains(reason.as_str())
                    && text.contains(" 0 passed; 1 failed;"),
                &format!("under {REQUIRE_ENV}=1, {test} must fail with the reason"),
                &text,
            )?,
        }
        if gate.is_err() {
            let (code, text) = run(test, Some("yes"))?;
            check(
                code == Some(101) && text.contains(&format!("{REQUIRE_ENV} must be 1")),
                &format!("{REQUIRE_ENV}=yes must fail {test}, naming the accepted values"),
                &text,
            )?;
        }
    }
    Ok(())
}
