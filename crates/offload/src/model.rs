//! The `model` backend: a profile's hardware tables emulated in front of the software
//! pipeline, inside the datapath thread. A packet the hardware image decides leaves at once,
//! limited to the profile's line rate per output port; a packet that falls to software goes
//! through the slow path's rate limit (HP's `software-rate`, a CPU port's bandwidth) and only
//! then into the pipeline, so the cliff of seed 004 section 5.2 (941 against 14 Mbit/s)
//! shows up on veth. Counters are merged as the hardware counts (see [`HwImage::count`]).
//!
//! Limits are per datapath thread (the daemon runs one by default).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use dataplane::batch::{PacketBatch, PacketSink};
use dataplane::counters::Shard;
use dataplane::key::FlowKey;
use dataplane::shared::Shared;

use crate::image::Verdict;
use crate::profile::SlowPath;
use crate::sink::Offload;

/// A token bucket: `rate` tokens per second, holding at most `burst`.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last_ns: u64,
}

impl TokenBucket {
    /// A bucket that holds 10 ms of its rate (at least `min_burst`).
    pub fn new(rate: f64, min_burst: f64) -> Self {
        let burst = (rate / 100.0).max(min_burst);
        TokenBucket {
            rate,
            burst,
            tokens: burst,
            last_ns: 0,
        }
    }

    /// Takes `n` tokens if there are that many.
    pub fn take(&mut self, now_ns: u64, n: f64) -> bool {
        if self.last_ns != 0 {
            let dt = now_ns.saturating_sub(self.last_ns) as f64 / 1e9;
            self.tokens = (self.tokens + dt * self.rate).min(self.burst);
        }
        self.last_ns = now_ns;
        if self.tokens >= n {
            self.tokens -= n;
            true
        } else {
            false
        }
    }
}

/// What the model's hardware did, for operators.
#[derive(Debug, Default)]
pub struct ModelCounters {
    /// Packets decided in hardware and sent (or dropped by their rule).
    pub decided: AtomicU64,
    /// Packets decided in hardware but over an output port's line rate.
    pub line_rate_drops: AtomicU64,
    /// Packets sent to software.
    pub punted: AtomicU64,
    /// Packets sent to software over the slow path's rate, dropped.
    pub slow_path_drops: AtomicU64,
}

/// One datapath thread's hardware stage.
pub struct ModelStage {
    offload: Arc<Offload>,
    pub counters: Arc<ModelCounters>,
    slow_pps: Option<TokenBucket>,
    slow_bits: Option<TokenBucket>,
    line_rate_bps: Option<f64>,
    line: HashMap<u32, TokenBucket>,
    key: FlowKey,
}

impl ModelStage {
    pub fn new(offload: Arc<Offload>, counters: Arc<ModelCounters>) -> Self {
        let profile = Arc::clone(&offload.profile);
        let SlowPath { pps, mbps } = profile.slow_path;
        ModelStage {
            slow_pps: pps.map(|p| TokenBucket::new(f64::from(p), 1.0)),
            slow_bits: mbps.map(|m| TokenBucket::new(f64::from(m) * 1e6, 12_000.0 * 8.0)),
            line_rate_bps: (profile.line_rate_mbps > 0)
                .then(|| f64::from(profile.line_rate_mbps) * 1e6),
            offload,
            counters,
            line: HashMap::new(),
            key: FlowKey::default(),
        }
    }

    /// Runs `batch` through the hardware: decided packets go to `sink`, the rest that the slow
    /// path lets through are copied into `to_software` for the pipeline. `batch` is left as
    /// it was (the caller clears it).
    pub fn run(
        &mut self,
        now_ns: u64,
        shard: Shard,
        shared: &Shared,
        batch: &PacketBatch,
        sink: &mut impl PacketSink,
        to_software: &mut PacketBatch,
    ) {
        let image = self.offload.image.load();
        for i in 0..batch.len() {
            let Some((in_port, frame)) = batch.packet(i) else {
                continue;
            };
            let bytes = frame.len() as u64;
            let verdict = match dataplane::parse::parse(frame, in_port, &mut self.key) {
                Ok(()) => image.classify(&self.key),
                Err(_) => Verdict::Punt,
            };
            match verdict {
                Verdict::Decided { path, len } => {
                    let outputs = image.count(shard, shared, in_port, &path[..len], bytes);
                    self.counters.decided.fetch_add(1, Relaxed);
                    for &port in outputs {
                        if self.line_allows(now_ns, port, bytes) {
                            sink.output(port, frame);
                        } else {
                            self.counters.line_rate_drops.fetch_add(1, Relaxed);
                        }
                    }
                }
                Verdict::Punt => {
                    let bits = (bytes * 8) as f64;
                    let allowed = self.slow_pps.as_mut().is_none_or(|b| b.take(now_ns, 1.0))
                        && self.slow_bits.as_mut().is_none_or(|b| b.take(now_ns, bits));
                    if allowed && to_software.push(in_port, frame) {
                        self.counters.punted.fetch_add(1, Relaxed);
                    } else {
                        self.counters.slow_path_drops.fetch_add(1, Relaxed);
                    }
                }
            }
        }
    }

    fn line_allows(&mut self, now_ns: u64, port: u32, bytes: u64) -> bool {
        let Some(rate) = self.line_rate_bps else {
            return true;
        };
        self.line
            .entry(port)
            .or_insert_with(|| TokenBucket::new(rate, 64_000.0 * 8.0))
            .take(now_ns, (bytes * 8) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_passes_its_rate() {
        let mut b = TokenBucket::new(2000.0, 1.0);
        let mut passed = 0;
        // 10 000 packets offered evenly over one second.
        for i in 0..10_000u64 {
            if b.take(1_000_000_000 + i * 100_000, 1.0) {
                passed += 1;
            }
        }
        assert!((2000..=2030).contains(&passed), "{passed}");
    }
}
