//! The cost of the packet-in limit where it runs: a datapath thread delivering a batch of 32
//! encoded packet-ins to one connection's outbox. Three cases: no limit (every packet-in
//! written), a limit high enough to admit all of them (the bucket's cost on top of the
//! write), and a storm the limit drops (what a table-miss flood costs per packet-in).
//!
//! Run: `cargo bench -p agent --bench packet_in_limit`. Prints ns per packet-in: the median
//! of many short trials with the spread (min..max), and the best beside it.

use std::hint::black_box;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::Instant;

use agent::limit::PacketInLimit;
use agent::outbox::{EventKind, Filter, Outbox};

const BATCH: usize = 32;
const ROUNDS: usize = 2_000;
const TRIALS: usize = 51;
/// A 64-byte frame's packet-in (header, fields, match with in_port, pad, frame).
const PACKET_IN_LEN: usize = 100;

fn bench(name: &str, limit: Option<PacketInLimit>) {
    let (ours, mut peer) = UnixStream::pair().unwrap();
    ours.set_nonblocking(true).unwrap();
    peer.set_nonblocking(true).unwrap();
    let outbox = Outbox::new(1, ours.as_raw_fd());
    outbox.set_filter(Filter {
        negotiated: true,
        ..Filter::new()
    });
    if let Some(limit) = limit {
        outbox.set_packet_in_limit(limit);
    }
    // Distinct bytes per message, as the datapath's differ.
    let wire: Vec<u8> = (0..BATCH * PACKET_IN_LEN).map(|i| (i * 7) as u8).collect();
    let marks: Vec<_> = (1..=BATCH)
        .map(|i| (EventKind::PacketIn, ofp::OFPR_NO_MATCH, i * PACKET_IN_LEN))
        .collect();
    let mut picked = Vec::new();
    let mut sink = vec![0u8; 1 << 20];
    let mut trials = Vec::with_capacity(TRIALS);
    for _ in 0..TRIALS {
        let start = Instant::now();
        for _ in 0..ROUNDS {
            outbox.events(black_box(&wire), &marks, &mut picked);
            // The controller reads what arrived, outside the timing's point but inside its
            // loop: a socket that filled up would turn the writes into queueing.
            while let Ok(n) = peer.read(&mut sink) {
                if n == 0 {
                    break;
                }
            }
        }
        trials.push(start.elapsed().as_nanos() as f64 / (ROUNDS * BATCH) as f64);
    }
    trials.sort_by(f64::total_cmp);
    println!(
        "{name:<34} {:>7.1} ns/packet-in (spread {:.1}..{:.1}, best {:.1}); limited {}",
        trials[TRIALS / 2],
        trials[0],
        trials[TRIALS - 1],
        trials[0],
        outbox.limited()
    );
}

fn main() {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load {}", load.trim());
    bench("no limit", None);
    let all = PacketInLimit {
        rate: u32::MAX,
        burst: u32::MAX,
    };
    bench("limit admitting every packet-in", Some(all));
    let storm = PacketInLimit { rate: 1, burst: 1 };
    bench("limit dropping a storm", Some(storm));
}
