//! Percentiles of latency samples, printed in microseconds.

use std::fmt;

/// p50, p90, p99 and max of a set of samples (nearest rank), in nanoseconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spread {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
}

impl Spread {
    pub fn of(samples: &mut [u64]) -> Self {
        samples.sort_unstable();
        let rank = |q: f64| {
            let i = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
            samples[i]
        };
        if samples.is_empty() {
            return Self::default();
        }
        Self {
            p50: rank(0.50),
            p90: rank(0.90),
            p99: rank(0.99),
            max: samples[samples.len() - 1],
        }
    }

    /// `name_p50=.. name_p90=.. name_p99=.. name_max=..` in microseconds, for scripts.
    pub fn fields(&self, name: &str) -> String {
        let us = |ns: u64| ns as f64 / 1000.0;
        format!(
            "{name}_p50={:.1} {name}_p90={:.1} {name}_p99={:.1} {name}_max={:.1}",
            us(self.p50),
            us(self.p90),
            us(self.p99),
            us(self.max)
        )
    }
}

impl fmt::Display for Spread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = |ns: u64| ns as f64 / 1000.0;
        write!(
            f,
            "p50 {:8.1}  p90 {:8.1}  p99 {:8.1}  max {:8.1} us",
            us(self.p50),
            us(self.p90),
            us(self.p99),
            us(self.max)
        )
    }
}
