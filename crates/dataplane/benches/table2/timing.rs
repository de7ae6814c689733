//! How the datapath benchmarks time their work. The machine is shared by other jobs, so
//! throughput is packets per second *of CPU time the datapath thread got* (Linux schedstat):
//! what one dedicated core does. Wall-clock time is kept beside it.

use std::time::{Duration, Instant};

/// CPU time this thread has run, in ns.
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// One timed slice.
pub struct Slice {
    pub packets: u64,
    pub cpu_s: f64,
    pub wall_s: f64,
}

impl Slice {
    /// Packets per CPU-second, in millions.
    pub fn mpps(&self) -> f64 {
        self.packets as f64 / self.cpu_s / 1e6
    }
}

/// Runs `step` (which handles one batch and returns its packets) for `dur`, timing it; the
/// wall-clock time stands in for the CPU time where schedstat cannot be read.
pub fn slice(dur: Duration, mut step: impl FnMut() -> u64) -> Slice {
    let start = Instant::now();
    let cpu_start = thread_cpu_ns();
    let mut packets = 0;
    loop {
        for _ in 0..16 {
            packets += step();
        }
        if start.elapsed() >= dur {
            break;
        }
    }
    let wall_s = start.elapsed().as_secs_f64();
    let cpu_s = match (cpu_start, thread_cpu_ns()) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
        _ => wall_s,
    };
    Slice {
        packets,
        cpu_s,
        wall_s,
    }
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The machine's load averages (1, 5 and 15 minutes), printed with the figures.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
