//! OpenFlow 1.3 meters (section 5.7): one token bucket per band; every packet entering the
//! meter is measured by every band, and of the bands whose rate the packet exceeds, the one
//! with the highest rate applies (drop or DSCP remark).
//!
//! Buckets count in units that make refill an integer product: micro-bits for kbps meters
//! (rate kbit/s x ns = micro-bits) and nano-packets for pktps meters. The clock is the
//! caller's (`now_ns`), so rates are testable with a synthetic clock. `apply` takes `&self`:
//! bucket state sits behind a small uncontended mutex, counters are atomics.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// The virtual meter on packet-ins (spec 1.3.5 section 7.3.4.4, OFPM_CONTROLLER): every
/// packet-in passes it before it is buffered and sent, whichever flow or table miss raised it.
pub const CONTROLLER: u32 = 0xffff_fffe;

/// `OFPMF_*` flags.
pub mod flags {
    /// Rates in kbit/s.
    pub const KBPS: u16 = 1 << 0;
    /// Rates in packets/s.
    pub const PKTPS: u16 = 1 << 1;
    /// Use the bands' burst sizes.
    pub const BURST: u16 = 1 << 2;
    /// Collect statistics (always collected here; kept for the wire).
    pub const STATS: u16 = 1 << 3;
}

/// What a band does to a packet that exceeds its rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BandKind {
    /// `OFPMBT_DROP`.
    Drop,
    /// `OFPMBT_DSCP_REMARK`: raise the drop precedence by `prec_level`.
    DscpRemark {
        /// Drop-precedence levels to add.
        prec_level: u8,
    },
}

/// One meter band.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Band {
    /// Action on exceeding packets.
    pub kind: BandKind,
    /// Rate in kbit/s or packets/s (per the meter flags).
    pub rate: u32,
    /// Burst in kbit or packets; used when the meter has [`flags::BURST`].
    pub burst: u32,
}

/// A meter's configuration (`ofp_meter_mod` without the command).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeterConfig {
    /// [`flags`] bits.
    pub flags: u16,
    /// Bands, any order.
    pub bands: Vec<Band>,
}

/// Why a configuration is invalid; maps to `OFPMMFC_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MeterConfigError {
    /// Unknown flag bits or both/neither of KBPS and PKTPS: `OFPMMFC_BAD_FLAGS`.
    BadFlags,
    /// A band rate of 0: `OFPMMFC_BAD_RATE`.
    BadRate,
    /// A zero burst with [`flags::BURST`]: `OFPMMFC_BAD_BURST`.
    BadBurst,
}

impl MeterConfig {
    /// Checks the configuration as OpenFlow requires before a meter is installed.
    pub fn validate(&self) -> Result<(), MeterConfigError> {
        let known = flags::KBPS | flags::PKTPS | flags::BURST | flags::STATS;
        let unit = self.flags & (flags::KBPS | flags::PKTPS);
        if self.flags & !known != 0 || unit == 0 || unit == flags::KBPS | flags::PKTPS {
            return Err(MeterConfigError::BadFlags);
        }
        if self.bands.iter().any(|b| b.rate == 0) {
            return Err(MeterConfigError::BadRate);
        }
        if self.flags & flags::BURST != 0 && self.bands.iter().any(|b| b.burst == 0) {
            return Err(MeterConfigError::BadBurst);
        }
        Ok(())
    }

    fn is_pktps(&self) -> bool {
        self.flags & flags::PKTPS != 0
    }
}

/// What the meter does to a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MeterVerdict {
    /// No band applies.
    Pass,
    /// A drop band applies.
    Drop,
    /// A DSCP-remark band applies (see [`increase_drop_precedence`]).
    RemarkDscp {
        /// Drop-precedence levels to add.
        prec_level: u8,
    },
}

/// Per-band counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BandStats {
    /// Packets this band applied to.
    pub packets: u64,
    /// Bytes this band applied to.
    pub bytes: u64,
}

/// Meter counters (`ofp_meter_stats` less flow_count, which the core knows).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MeterStats {
    /// Packets that entered the meter.
    pub packets: u64,
    /// Bytes that entered the meter.
    pub bytes: u64,
    /// Time since the meter was created.
    pub duration_ns: u64,
    /// One per band, in configuration order.
    pub bands: Vec<BandStats>,
}

#[derive(Clone, Copy)]
struct TokenBucket {
    tokens: u64,
    last_ns: u64,
}

struct BandState {
    band: Band,
    /// Tokens added per elapsed nanosecond (the band rate).
    per_ns: u64,
    /// Bucket capacity in tokens.
    capacity: u64,
    packets: AtomicU64,
    bytes: AtomicU64,
}

/// Tokens one packet-unit costs: one packet (pktps), one bit (kbps).
const NANO: u64 = 1_000_000_000;
const MICRO: u64 = 1_000_000;
/// Largest frame the datapath handles, used as the minimum default burst.
const MAX_FRAME_BITS: u64 = 9216 * 8;

/// A meter: bands, their buckets and counters.
pub struct Meter {
    config: MeterConfig,
    pktps: bool,
    created_ns: u64,
    bands: Vec<BandState>,
    buckets: Mutex<Vec<TokenBucket>>,
    packets: AtomicU64,
    bytes: AtomicU64,
}

impl Meter {
    /// A meter whose clock starts at 0 (`duration` counts from there).
    pub fn new(config: MeterConfig) -> Self {
        Self::new_at(config, 0)
    }

    /// A meter created at `now_ns` on the datapath clock. Buckets start full. Without
    /// [`flags::BURST`] the burst is 100 ms of the band's rate, but at least one packet
    /// (pktps) or one maximum-size frame (kbps), so a low rate still passes packets.
    pub fn new_at(config: MeterConfig, now_ns: u64) -> Self {
        let pktps = config.is_pktps();
        let use_burst = config.flags & flags::BURST != 0;
        let bands: Vec<BandState> = config
            .bands
            .iter()
            .map(|&band| {
                let rate = u64::from(band.rate);
                let capacity = if pktps {
                    let burst = if use_burst {
                        u64::from(band.burst)
                    } else {
                        (rate / 10).max(1)
                    };
                    burst.saturating_mul(NANO)
                } else {
                    let burst_bits = if use_burst {
                        u64::from(band.burst).saturating_mul(1000)
                    } else {
                        (rate * 100).max(MAX_FRAME_BITS)
                    };
                    burst_bits.saturating_mul(MICRO)
                };
                BandState {
                    band,
                    per_ns: rate,
                    capacity,
                    packets: AtomicU64::new(0),
                    bytes: AtomicU64::new(0),
                }
            })
            .collect();
        let buckets = bands
            .iter()
            .map(|b| TokenBucket {
                tokens: b.capacity,
                last_ns: now_ns,
            })
            .collect();
        Self {
            config,
            pktps,
            created_ns: now_ns,
            bands,
            buckets: Mutex::new(buckets),
            packets: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &MeterConfig {
        &self.config
    }

    /// Measures one packet of `pkt_len` bytes arriving at `now_ns` and says what to do.
    pub fn apply(&self, now_ns: u64, pkt_len: usize) -> MeterVerdict {
        let len = pkt_len as u64;
        self.packets.fetch_add(1, Relaxed);
        self.bytes.fetch_add(len, Relaxed);
        let cost = if self.pktps {
            NANO
        } else {
            len.saturating_mul(8 * MICRO)
        };
        let mut chosen: Option<&BandState> = None;
        {
            let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
            for (state, bucket) in self.bands.iter().zip(buckets.iter_mut()) {
                let elapsed = now_ns.saturating_sub(bucket.last_ns);
                bucket.last_ns = bucket.last_ns.max(now_ns);
                let refill = u128::from(elapsed) * u128::from(state.per_ns);
                let room = u128::from(state.capacity - bucket.tokens.min(state.capacity));
                bucket.tokens += u64::try_from(refill.min(room)).unwrap_or(0);
                if bucket.tokens >= cost {
                    bucket.tokens -= cost;
                } else if chosen.is_none_or(|c| state.band.rate > c.band.rate) {
                    chosen = Some(state);
                }
            }
        }
        match chosen {
            None => MeterVerdict::Pass,
            Some(state) => {
                state.packets.fetch_add(1, Relaxed);
                state.bytes.fetch_add(len, Relaxed);
                match state.band.kind {
                    BandKind::Drop => MeterVerdict::Drop,
                    BandKind::DscpRemark { prec_level } => MeterVerdict::RemarkDscp { prec_level },
                }
            }
        }
    }

    /// Counters at `now_ns`.
    pub fn stats(&self, now_ns: u64) -> MeterStats {
        MeterStats {
            packets: self.packets.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
            duration_ns: now_ns.saturating_sub(self.created_ns),
            bands: self
                .bands
                .iter()
                .map(|b| BandStats {
                    packets: b.packets.load(Relaxed),
                    bytes: b.bytes.load(Relaxed),
                })
                .collect(),
        }
    }
}

/// Applies a DSCP-remark band: for an Assured Forwarding code point (AFxy, RFC 2597) raises
/// the drop precedence y by `prec_level`, up to 3; other code points are left unchanged.
pub fn increase_drop_precedence(dscp: u8, prec_level: u8) -> u8 {
    let class = dscp >> 3;
    let prec = (dscp >> 1) & 3;
    if !(1..=4).contains(&class) || prec == 0 || dscp & 1 != 0 {
        return dscp;
    }
    let new_prec = prec.saturating_add(prec_level).min(3);
    (class << 3) | (new_prec << 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    const SEC: u64 = 1_000_000_000;

    fn meter(flags: u16, bands: &[(BandKind, u32, u32)]) -> Meter {
        let bands = bands
            .iter()
            .map(|&(kind, rate, burst)| Band { kind, rate, burst })
            .collect();
        let config = MeterConfig { flags, bands };
        assert_eq!(config.validate(), Ok(()));
        Meter::new(config)
    }

    /// Sends `n` packets of `len` bytes evenly at `pps`; returns (pass, drop, remark).
    fn drive(m: &Meter, start: u64, n: u64, pps: u64, len: usize) -> (u64, u64, u64) {
        let mut out = (0, 0, 0);
        for i in 0..n {
            match m.apply(start + i * SEC / pps, len) {
                MeterVerdict::Pass => out.0 += 1,
                MeterVerdict::Drop => out.1 += 1,
                MeterVerdict::RemarkDscp { .. } => out.2 += 1,
            }
        }
        out
    }

    fn near(got: u64, want: u64, tolerance: u64) -> bool {
        got.abs_diff(want) <= tolerance
    }

    #[test]
    fn pktps_drop_band_limits_to_rate_plus_burst() {
        let m = meter(flags::PKTPS | flags::BURST, &[(BandKind::Drop, 1000, 10)]);
        let (pass, drop, _) = drive(&m, 0, 10_000, 2000, 64);
        // 5 s at 2000 pps against 1000 pps: 5000 conform plus the 10-packet burst.
        assert!(near(pass, 5010, 2), "pass {pass}");
        assert_eq!(pass + drop, 10_000);
        let s = m.stats(5 * SEC);
        assert_eq!(
            (s.packets, s.bytes, s.duration_ns),
            (10_000, 640_000, 5 * SEC)
        );
        assert_eq!(
            s.bands[0],
            BandStats {
                packets: drop,
                bytes: drop * 64
            }
        );
    }

    #[test]
    fn below_rate_everything_passes() {
        let m = meter(flags::PKTPS | flags::BURST, &[(BandKind::Drop, 1000, 1)]);
        assert_eq!(drive(&m, 0, 5000, 999, 64), (5000, 0, 0));
    }

    #[test]
    fn kbps_counts_bits() {
        // 1000 kbit/s with 125-byte (1000-bit) packets is 1000 packets/s.
        let m = meter(flags::KBPS | flags::BURST, &[(BandKind::Drop, 1000, 10)]);
        let (pass, _, _) = drive(&m, 0, 12_000, 4000, 125);
        // 3 s: 3000 packets of rate plus a 10 kbit (10-packet) burst.
        assert!(near(pass, 3010, 2), "pass {pass}");
    }

    #[test]
    fn highest_exceeded_band_applies() {
        let bands = [
            (BandKind::DscpRemark { prec_level: 1 }, 500, 5),
            (BandKind::Drop, 1000, 5),
        ];
        let m = meter(flags::PKTPS | flags::BURST, &bands);
        // 800 pps: only the 500 pps remark band is exceeded.
        let (pass, drop, remark) = drive(&m, 0, 8000, 800, 100);
        assert_eq!(drop, 0);
        assert!(
            near(pass, 5005, 3) && near(remark, 2995, 3),
            "{pass} {remark}"
        );
        // Then 1500 pps: 500/s exceed the drop band, which wins over remark.
        let (pass, drop, remark) = drive(&m, 10 * SEC, 15_000, 1500, 100);
        assert!(near(drop, 5000, 10), "drop {drop}");
        assert!(near(pass + remark, 10_000, 10));
        assert!(near(pass, 5000, 10), "pass {pass}");
    }

    #[test]
    fn default_burst_admits_low_rates_and_idle_refills() {
        let m = meter(flags::PKTPS, &[(BandKind::Drop, 1, 0)]);
        assert_eq!(m.apply(0, 60), MeterVerdict::Pass);
        assert_eq!(m.apply(1, 60), MeterVerdict::Drop);
        assert_eq!(m.apply(SEC + 1, 60), MeterVerdict::Pass);
        // A clock stepping back does not add tokens.
        assert_eq!(m.apply(SEC / 2, 60), MeterVerdict::Drop);
        let k = meter(flags::KBPS, &[(BandKind::Drop, 8, 0)]);
        assert_eq!(
            k.apply(0, 9000),
            MeterVerdict::Pass,
            "one jumbo frame fits the default burst"
        );
    }

    #[test]
    fn concurrent_apply_keeps_counters_consistent() {
        let m = Arc::new(meter(
            flags::PKTPS | flags::BURST,
            &[(BandKind::Drop, 100, 100)],
        ));
        let handles: Vec<_> = (0..2)
            .map(|t| {
                let m = Arc::clone(&m);
                std::thread::spawn(move || drive(&m, t, 10_000, 1_000_000, 64))
            })
            .collect();
        let mut total = (0, 0);
        for h in handles {
            let (p, d, _) = h.join().unwrap_or_default();
            total = (total.0 + p, total.1 + d);
        }
        let s = m.stats(0);
        assert_eq!(s.packets, 20_000);
        assert_eq!(s.bands[0].packets, total.1);
        assert!(
            total.0 >= 100 && total.0 <= 102,
            "burst plus ~10 ms of rate: {}",
            total.0
        );
    }

    #[test]
    fn validation() {
        let cfg = |flags, rate, burst| MeterConfig {
            flags,
            bands: vec![Band {
                kind: BandKind::Drop,
                rate,
                burst,
            }],
        };
        assert_eq!(
            cfg(flags::KBPS | flags::PKTPS, 1, 1).validate(),
            Err(MeterConfigError::BadFlags)
        );
        assert_eq!(
            cfg(flags::STATS, 1, 1).validate(),
            Err(MeterConfigError::BadFlags)
        );
        assert_eq!(
            cfg(flags::KBPS | 0x40, 1, 1).validate(),
            Err(MeterConfigError::BadFlags)
        );
        assert_eq!(
            cfg(flags::KBPS, 0, 1).validate(),
            Err(MeterConfigError::BadRate)
        );
        assert_eq!(
            cfg(flags::KBPS | flags::BURST, 1, 0).validate(),
            Err(MeterConfigError::BadBurst)
        );
        assert_eq!(cfg(flags::KBPS | flags::STATS, 1, 0).validate(), Ok(()));
    }

    #[test]
    fn dscp_remark_raises_af_drop_precedence() {
        // AF11 = 10, AF12 = 12, AF13 = 14; AF41 = 34.
        assert_eq!(increase_drop_precedence(10, 1), 12);
        assert_eq!(increase_drop_precedence(10, 5), 14);
        assert_eq!(increase_drop_precedence(34, 1), 36);
        assert_eq!(increase_drop_precedence(46, 1), 46, "EF is not AF");
        assert_eq!(increase_drop_precedence(0, 1), 0);
    }
}
