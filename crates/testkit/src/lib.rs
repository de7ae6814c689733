//! What Hairpin's tests share. A test that needs something this machine may lack (root for
//! network namespaces, a built XDP program, the daemon binary, `ovs-ofctl`) calls
//! [`cannot_run`] when it is missing, and returns:
//!
//! - with `HAIRPIN_TEST_STRICT=1` (set by `scripts/test.sh`, so in CI) the test fails, naming
//!   what it lacks: a test that cannot run never passes quietly;
//! - otherwise it prints `SKIPPED test: reason` and, when `HAIRPIN_TEST_SKIP_LOG` names a
//!   file, appends the same line there, so a test run can count what it skipped.

use std::io::Write;

/// Whether tests that cannot run must fail (`HAIRPIN_TEST_STRICT=1`).
pub fn strict() -> bool {
    std::env::var("HAIRPIN_TEST_STRICT").is_ok_and(|v| v == "1")
}

/// Reports that `test` cannot run because `missing`; panics in strict mode.
pub fn cannot_run(test: &str, missing: &str) {
    let line = format!("SKIPPED {test}: {missing}");
    assert!(
        !strict(),
        "{test} cannot run: {missing} (HAIRPIN_TEST_STRICT=1)"
    );
    eprintln!("{line}");
    if let Some(path) = std::env::var_os("HAIRPIN_TEST_SKIP_LOG") {
        if let Ok(mut log) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(log, "{line}");
        }
    }
}

/// `Some(value)`, or `None` after [`cannot_run`] with `missing` (for `let ... else`).
pub fn require<T>(test: &str, value: Option<T>, missing: &str) -> Option<T> {
    if value.is_none() {
        cannot_run(test, missing);
    }
    value
}

/// Whether this process runs as root; [`cannot_run`] when it does not.
pub fn root(test: &str) -> bool {
    // SAFETY: geteuid reads the process's credentials and has no side effects.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        cannot_run(test, "needs root (network namespaces, raw sockets)");
    }
    root
}
