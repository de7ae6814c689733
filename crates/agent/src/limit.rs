//! The packet-in limit of a connection (Open vSwitch's `controller_rate_limit` and
//! `controller_burst_limit`): a token bucket checked by the thread that delivers a packet-in,
//! under the connection's outbox lock, with integer arithmetic and no allocation. A storm of
//! table misses then costs each controller at most `rate` packet-ins a second after a burst
//! of `burst`, however fast the misses come; the rest are dropped and counted.

/// A packet-in rate and burst, per connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketInLimit {
    /// Packet-ins per second in the long run.
    pub rate: u32,
    /// Packet-ins a connection may receive at once after a quiet spell.
    pub burst: u32,
}

impl PacketInLimit {
    /// The burst Open vSwitch picks when none is given: a quarter of the rate, 25 at least.
    pub fn default_burst(rate: u32) -> u32 {
        (rate / 4).max(25)
    }
}

/// Credit is kept in nanoseconds of waiting: one packet-in costs `1e9 / rate` of it.
#[derive(Clone, Debug)]
pub(crate) struct TokenBucket {
    cost_ns: u64,
    cap_ns: u64,
    credit_ns: u64,
    last_ns: u64,
}

impl TokenBucket {
    /// A full bucket.
    pub(crate) fn new(limit: PacketInLimit) -> Self {
        let cost_ns = 1_000_000_000 / u64::from(limit.rate.max(1));
        let cap_ns = cost_ns.saturating_mul(u64::from(limit.burst.max(1)));
        Self {
            cost_ns,
            cap_ns,
            credit_ns: cap_ns,
            last_ns: 0,
        }
    }

    /// Takes one packet-in's worth of credit at time `now_ns`, if there is that much.
    pub(crate) fn admit(&mut self, now_ns: u64) -> bool {
        let earned = now_ns.saturating_sub(self.last_ns);
        self.last_ns = self.last_ns.max(now_ns);
        self.credit_ns = self.credit_ns.saturating_add(earned).min(self.cap_ns);
        if self.credit_ns >= self.cost_ns {
            self.credit_ns -= self.cost_ns;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000_000;

    fn admitted(bucket: &mut TokenBucket, from_ns: u64, until_ns: u64, step_ns: u64) -> u64 {
        (from_ns..until_ns)
            .step_by(step_ns as usize)
            .filter(|&t| bucket.admit(t))
            .count() as u64
    }

    #[test]
    fn a_burst_then_the_rate_however_fast_packets_come() {
        let mut bucket = TokenBucket::new(PacketInLimit {
            rate: 1000,
            burst: 50,
        });
        // A million misses a second for two seconds: the burst, then 1000 a second.
        let got = admitted(&mut bucket, SECOND, 3 * SECOND, 1_000);
        assert!((2000..=2051).contains(&got), "{got}");
        // A quiet second refills the burst and no more.
        let got = admitted(&mut bucket, 4 * SECOND, 4 * SECOND + 1_000, 10);
        assert_eq!(got, 50);
    }

    #[test]
    fn packets_slower_than_the_rate_all_pass() {
        let mut bucket = TokenBucket::new(PacketInLimit {
            rate: 100,
            burst: 1,
        });
        assert_eq!(admitted(&mut bucket, SECOND, 2 * SECOND, SECOND / 50), 50);
    }

    #[test]
    fn a_clock_going_backwards_earns_nothing() {
        let mut bucket = TokenBucket::new(PacketInLimit { rate: 10, burst: 1 });
        assert!(bucket.admit(5 * SECOND));
        assert!(!bucket.admit(SECOND));
        assert!(!bucket.admit(5 * SECOND));
        assert!(bucket.admit(5 * SECOND + SECOND / 10));
    }

    #[test]
    fn the_default_burst_is_open_vswitchs() {
        assert_eq!(PacketInLimit::default_burst(1000), 250);
        assert_eq!(PacketInLimit::default_burst(40), 25);
    }
}
