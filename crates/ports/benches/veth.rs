//! Forwarding benchmark: frames enter veth `g0 -> f0`, one pinned thread receives them
//! on `f0` and sends them out of `f1`, the kernel delivers them to `s0`.
//! A generator thread pinned to the other core offers 60-byte frames as fast as it
//! can. Needs root; runs in its own namespace.
//!
//! `cargo bench -p ports --bench veth` (HAIRPIN_BENCH_SECS sets the duration, default 5;
//! HAIRPIN_RING=frames the per-frame ring).

#[path = "../tests/common/mod.rs"]
mod common;
mod harness;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{is_root, Netns};
use harness::{generate, kernel_rx, pin_to_cpu, thread_cpu, BURST};
use ports::{AfPacketPort, PortOptions, RingKind, SocketCounters};

fn forward(
    mut rx: AfPacketPort,
    mut tx: AfPacketPort,
    stop: Arc<AtomicBool>,
) -> (SocketCounters, SocketCounters, (f64, f64)) {
    pin_to_cpu(1);
    let mut scratch = vec![0u8; 65_536];
    while !stop.load(Ordering::Relaxed) {
        let n = rx.recv_burst(BURST, |frame| {
            if frame.vlan.is_none() {
                tx.send(frame.data);
            } else if let Some(len) = frame.copy_restored(&mut scratch) {
                tx.send(&scratch[..len]);
            }
        });
        if n > 0 {
            let _ = tx.flush();
        }
    }
    // Let the generator stop first, then drain what is left.
    std::thread::sleep(Duration::from_millis(50));
    while rx.recv_burst(BURST, |frame| {
        tx.send(frame.data);
    }) > 0
    {
        let _ = tx.flush();
    }
    let _ = tx.flush();
    (rx.stats(), tx.stats(), thread_cpu())
}

/// The ring kind chosen with HAIRPIN_RING=frames|blocks (default blocks).
fn ring_from_env() -> RingKind {
    match std::env::var("HAIRPIN_RING").as_deref() {
        Ok("frames") => RingKind::Frames,
        _ => RingKind::Blocks,
    }
}

fn main() {
    if !is_root("veth forwarding benchmark") {
        return;
    }
    let secs: f64 = std::env::var("HAIRPIN_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5.0);
    let ns = Netns::enter();
    ns.veth("g0", "f0");
    ns.veth("f1", "s0");
    let ring = ring_from_env();
    let opts = PortOptions {
        ring,
        ..PortOptions::default()
    };
    let gen_port = AfPacketPort::open("g0", &opts).expect("open g0");
    let rx = AfPacketPort::open("f0", &opts).expect("open f0");
    let tx = AfPacketPort::open("f1", &opts).expect("open f1");
    let (sink_before, sink_drop_before) = kernel_rx("s0");

    let stop_gen = Arc::new(AtomicBool::new(false));
    let stop_fwd = Arc::new(AtomicBool::new(false));
    let forwarder = {
        let stop = stop_fwd.clone();
        std::thread::spawn(move || forward(rx, tx, stop))
    };
    let generator = {
        let stop = stop_gen.clone();
        std::thread::spawn(move || generate(gen_port, stop))
    };
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop_gen.store(true, Ordering::Relaxed);
    let offered = generator.join().expect("generator");
    let elapsed = start.elapsed().as_secs_f64();
    stop_fwd.store(true, Ordering::Relaxed);
    let (fwd_rx, fwd_tx, (user, sys)) = forwarder.join().expect("forwarder");
    let (sink_after, sink_drop_after) = kernel_rx("s0");
    let (_, f0_drops) = kernel_rx("f0");
    let delivered = sink_after - sink_before;

    let mpps = |n: u64| n as f64 / elapsed / 1e6;
    println!(
        "veth forwarding, {ring:?} ring, {elapsed:.2} s, 60-byte frames, burst {BURST}, generator CPU 0, forwarder CPU 1"
    );
    println!(
        "  offered   (g0 tx)      {:>10}  {:.3} Mpps",
        offered.tx_packets,
        mpps(offered.tx_packets)
    );
    println!(
        "  received  (f0 rx)      {:>10}  {:.3} Mpps",
        fwd_rx.rx_packets,
        mpps(fwd_rx.rx_packets)
    );
    println!(
        "  forwarded (f1 tx)      {:>10}  {:.3} Mpps",
        fwd_tx.tx_packets,
        mpps(fwd_tx.tx_packets)
    );
    println!(
        "  delivered (s0 rx)      {:>10}  {:.3} Mpps",
        delivered,
        mpps(delivered)
    );
    println!(
        "  kernel drops: f0 rx ring full (tp_drops) {}, f0 netdev {}; s0 discards {} (no handler for the test EtherType: the sink, not a loss)",
        fwd_rx.rx_dropped,
        f0_drops,
        sink_drop_after - sink_drop_before
    );
    let per_mpkt = |t: f64| t / (fwd_tx.tx_packets.max(1) as f64 / 1e6);
    println!(
        "  forwarder CPU: user {user:.2} s, kernel {sys:.2} s; per million forwarded: user {:.3} s, kernel {:.3} s",
        per_mpkt(user),
        per_mpkt(sys)
    );
    println!(
        "  our drops: generator ring full {} (back-pressure), forwarder tx ring full {}, tx errors {}",
        offered.tx_dropped, fwd_tx.tx_dropped, fwd_tx.tx_errors
    );
    drop(ns);
}
