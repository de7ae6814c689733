//! The one monotonic clock shared by the switch core and the datapath threads, so flow
//! durations, idle timeouts (compared with the datapath's last-hit stamps) and meters agree.

use std::sync::OnceLock;
use std::time::Instant;

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds since the process's clock epoch (never 0, so 0 can mean "never").
pub fn now_ns() -> u64 {
    u64::try_from(epoch().elapsed().as_nanos()).unwrap_or(u64::MAX) + 1
}

/// `(seconds, nanoseconds)` from `since_ns` to `now_ns`, as OpenFlow durations are reported.
pub fn duration(since_ns: u64, now_ns: u64) -> (u32, u32) {
    let elapsed = now_ns.saturating_sub(since_ns);
    let secs = u32::try_from(elapsed / 1_000_000_000).unwrap_or(u32::MAX);
    (secs, (elapsed % 1_000_000_000) as u32)
}
