//! Ping round-trip time between two host namespaces through a busy-polling
//! forwarder of two AF_PACKET ports, and between two hosts on a direct veth cable.
//! Needs root. `cargo bench -p ports --bench latency` (HAIRPIN_PINGS sets the
//! count, default 200; HAIRPIN_BLOCK_TIMEOUT_MS the ports' block timeout;
//! HAIRPIN_RING=frames the per-frame ring).

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use std::process::Command;

use common::{is_root, HostNs, Netns};
use ports::{AfPacketPort, PortOptions, RingKind};

fn relay(from: &mut AfPacketPort, to: &mut AfPacketPort, scratch: &mut [u8]) {
    if from.recv_burst(64, |frame| {
        if let Some(len) = frame.copy_restored(scratch) {
            to.send(&scratch[..len]);
        }
    }) > 0
    {
        let _ = to.flush();
    }
}

/// Pings `target` from `host` and returns the sorted RTTs in milliseconds.
fn ping(host: &HostNs, target: &str, count: usize) -> Vec<f64> {
    let out = host
        .exec(&[
            "ping",
            "-n",
            "-i",
            "0.005",
            "-c",
            &count.to_string(),
            target,
        ])
        .output()
        .expect("ping");
    let mut rtts: Vec<f64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            l.split("time=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect();
    rtts.sort_by(f64::total_cmp);
    rtts
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(index).copied().unwrap_or(f64::NAN)
}

fn report(label: &str, rtts: &[f64], count: usize) {
    println!(
        "  {label:<28} replies {:>4}/{count}  p50 {:.3} ms  p99 {:.3} ms  max {:.3} ms",
        rtts.len(),
        percentile(rtts, 0.5),
        percentile(rtts, 0.99),
        rtts.last().copied().unwrap_or(f64::NAN)
    );
}

fn ip(args: &[&str]) {
    let ok = Command::new("ip")
        .args(args)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "ip {args:?} failed");
}

/// Two hosts on one direct veth cable: the baseline without any switch.
fn direct_pair(prefix: &str) -> (HostNs, HostNs) {
    let c = HostNs {
        name: format!("{prefix}-hc"),
    };
    let d = HostNs {
        name: format!("{prefix}-hd"),
    };
    for host in [&c, &d] {
        ip(&["netns", "add", &host.name]);
        ip(&["-n", &host.name, "link", "set", "lo", "up"]);
    }
    ip(&[
        "-n", &c.name, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns",
        &d.name,
    ]);
    for (host, addr) in [(&c, "10.79.0.1/24"), (&d, "10.79.0.2/24")] {
        ip(&["-n", &host.name, "addr", "add", addr, "dev", "eth0"]);
        ip(&["-n", &host.name, "link", "set", "eth0", "up"]);
    }
    (c, d)
}

/// The ring kind chosen with HAIRPIN_RING=frames|blocks (default blocks).
fn ring_from_env() -> RingKind {
    match std::env::var("HAIRPIN_RING").as_deref() {
        Ok("frames") => RingKind::Frames,
        _ => RingKind::Blocks,
    }
}

fn main() {
    if !is_root("latency benchmark") {
        return;
    }
    let count: usize = std::env::var("HAIRPIN_PINGS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let timeout: u32 = std::env::var("HAIRPIN_BLOCK_TIMEOUT_MS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let ns = Netns::enter();
    let host_a = ns.host("ha", "sa", "10.78.0.1/24");
    let _host_b = ns.host("hb", "sb", "10.78.0.2/24");
    let ring = ring_from_env();
    let opts = PortOptions {
        block_timeout_ms: timeout,
        ring,
        ..PortOptions::default()
    };
    let mut a = AfPacketPort::open("sa", &opts).expect("open sa");
    let mut b = AfPacketPort::open("sb", &opts).expect("open sb");
    let stop = Arc::new(AtomicBool::new(false));
    let forwarder = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut scratch = vec![0u8; 2048];
            while !stop.load(Ordering::Relaxed) {
                relay(&mut a, &mut b, &mut scratch);
                relay(&mut b, &mut a, &mut scratch);
            }
        })
    };
    println!(
        "ping RTT, {count} pings 5 ms apart, {ring:?} ring, block timeout {timeout} ms, busy-polling forwarder"
    );
    let (direct, _peer) = direct_pair(&ns.name);
    ping(&direct, "10.79.0.2", 3);
    report(
        "direct veth (baseline)",
        &ping(&direct, "10.79.0.2", count),
        count,
    );
    ping(&host_a, "10.78.0.2", 3);
    report(
        "through two AF_PACKET ports",
        &ping(&host_a, "10.78.0.2", count),
        count,
    );
    stop.store(true, Ordering::Relaxed);
    forwarder.join().expect("forwarder");
}
