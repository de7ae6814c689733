//! What Hairpin's tests share. A test that needs something this machine may lack (root for
//! network namespaces, a built XDP program, the daemon binary, `ovs-ofctl`) calls
//! [`cannot_run`] when it is missing, and returns:
//!
//! - with `HAIRPIN_TEST_STRICT=1` (set by `scripts/test.sh`, so in CI) the test fails, naming
//!   what it lacks: a test that cannot run never passes quietly;
//! - otherwise it prints `SKIPPED test: reason` and, when `HAIRPIN_TEST_SKIP_LOG` names a
//!   file, appends the same line there, so a test run can count what it skipped.
//!
//! Benchmarks share [`process_cpu_seconds`] and, with the feature `flow-mods`, the flow-mods
//! of the ingest benchmarks (module `flow_mods`).

use std::io::Write;

#[cfg(feature = "flow-mods")]
pub mod flow_mods;

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

/// User + system CPU time of this process, in seconds (from /proc/self/stat, in clock ticks of
/// 10 ms), so that a loaded machine's waiting does not count as the benchmark's cost; 0 where
/// it cannot be read.
pub fn process_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Fields after the command name: state is index 0, utime 11, stime 12.
    (ticks(11) + ticks(12)) / 100.0
}
