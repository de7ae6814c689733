//! Parser throughput: ns per packet over batches of 256 packets, at each parse depth.
//!
//! Run: `cargo bench -p dataplane --bench parse`. Prints the best of many short trials per
//! case (the machine is shared, so the minimum is the least disturbed figure) and the median.

use std::hint::black_box;
use std::time::Instant;

use dataplane::key::{FlowKey, ParseDepth};
use dataplane::parse::{parse_to, ParseStats};

const BATCH: usize = 256;
const ROUNDS: usize = 200;
const TRIALS: usize = 101;

fn ipv4_udp(i: u32, vlan: bool) -> Vec<u8> {
    let mut p = vec![0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0a];
    if vlan {
        p.extend_from_slice(&[0x81, 0x00, 0x00, 0x64]);
    }
    p.extend_from_slice(&[0x08, 0x00, 0x45, 0x00, 0x00, 46, 0, 0, 0, 0, 64, 17, 0, 0]);
    p.extend_from_slice(&[10, 0, 0, 1]);
    p.extend_from_slice(&(0x0a00_0000 | (i & 0xffff)).to_be_bytes());
    p.extend_from_slice(&(1024 + (i % 4096) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 53, 0, 26, 0, 0]);
    p.resize(if vlan { 68 } else { 64 }, 0);
    p
}

fn ipv6_tcp(i: u32) -> Vec<u8> {
    let mut p = vec![0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0a, 0x86, 0xdd];
    p.extend_from_slice(&[0x60, 0, 0, 0, 0, 20, 6, 64]);
    p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0]);
    p.extend_from_slice(&i.to_be_bytes());
    p.extend_from_slice(&(1024 + (i % 4096) as u16).to_be_bytes());
    p.extend_from_slice(&[
        0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0,
    ]);
    p
}

/// Parses each batch into `keys_per_batch` keys (BATCH: one key per packet, as a pipeline
/// keeping a batch of keys does; 1: the parser alone with its key hot in L1).
fn bench(name: &str, frames: &[Vec<u8>], depth: ParseDepth, keys_per_batch: usize) -> f64 {
    let mut keys = vec![FlowKey::default(); keys_per_batch];
    let mut stats = ParseStats::default();
    let mut trials = Vec::with_capacity(TRIALS);
    for _ in 0..TRIALS {
        let start = Instant::now();
        for _ in 0..ROUNDS {
            if let [key] = keys.as_mut_slice() {
                for frame in frames {
                    stats.record(parse_to(black_box(frame), 1, depth, key));
                }
            } else {
                for (frame, key) in frames.iter().zip(keys.iter_mut()) {
                    stats.record(parse_to(black_box(frame), 1, depth, key));
                }
            }
            black_box(&mut keys);
        }
        trials.push(start.elapsed().as_nanos() as f64 / (ROUNDS * BATCH) as f64);
    }
    trials.sort_by(f64::total_cmp);
    let (best, median) = (trials[0], trials[TRIALS / 2]);
    assert_eq!(
        stats.malformed(),
        0,
        "{name}: bench frames must parse cleanly"
    );
    println!(
        "{name:<28} {depth:<5?} {keys_per_batch:>4} {best:>7.2} {median:>7.2} {:>7.1}",
        1000.0 / best
    );
    best
}

fn main() {
    let udp: Vec<_> = (0..BATCH as u32).map(|i| ipv4_udp(i, false)).collect();
    let vlan: Vec<_> = (0..BATCH as u32).map(|i| ipv4_udp(i, true)).collect();
    let tcp6: Vec<_> = (0..BATCH as u32).map(ipv6_tcp).collect();
    println!("parse: best of {TRIALS} trials, {ROUNDS} rounds of {BATCH}-packet batches");
    println!(
        "{:<28} {:<5} {:>4} {:>7} {:>7} {:>7}",
        "frames", "depth", "keys", "best ns", "med ns", "Mpps"
    );
    for keys in [BATCH, 1] {
        for depth in [ParseDepth::L2, ParseDepth::L3, ParseDepth::L4] {
            bench("eth/ipv4/udp 64B", &udp, depth, keys);
            bench("eth/802.1q/ipv4/udp 68B", &vlan, depth, keys);
            bench("eth/ipv6/tcp 74B", &tcp6, depth, keys);
        }
    }
}
