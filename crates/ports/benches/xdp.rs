//! AF_XDP versus AF_PACKET forwarding on the same veth topology: frames enter veth
//! `g0 -> f0`, one thread pinned to CPU 1 receives them on `f0` and sends them out of
//! `f1`, the kernel delivers them to `s0`. A generator pinned to CPU 0 offers 60-byte
//! frames through AF_PACKET as fast as it can. Each forwarder runs in a fresh
//! namespace, one after the other. Needs root.
//!
//! `cargo bench -p ports --bench xdp` (HAIRPIN_BENCH_SECS sets each run's duration,
//! default 5).

#[path = "../tests/common/mod.rs"]
mod common;
mod harness;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{is_root, Netns};
use harness::{generate, kernel_rx, pin_to_cpu, thread_cpu, BURST};
use ports::{AfPacketPort, PacketPort, PortOptions, SocketCounters, XdpOptions, XdpPort};

fn forward<P: PacketPort>(
    mut rx: P,
    mut tx: P,
    stop: Arc<AtomicBool>,
) -> (SocketCounters, SocketCounters, (f64, f64)) {
    pin_to_cpu(1);
    let pass = |rx: &mut P, tx: &mut P| {
        let n = rx.recv_burst(BURST, |frame| {
            tx.send(frame.data);
        });
        if n > 0 {
            let _ = tx.flush();
        }
        n
    };
    while !stop.load(Ordering::Relaxed) {
        pass(&mut rx, &mut tx);
    }
    // The generator has stopped: drain what is left.
    std::thread::sleep(Duration::from_millis(50));
    while pass(&mut rx, &mut tx) > 0 {}
    let _ = tx.flush();
    (rx.stats(), tx.stats(), thread_cpu())
}

struct Run {
    elapsed: f64,
    offered: u64,
    received: u64,
    forwarded: u64,
    delivered: u64,
    rx_dropped: u64,
    tx_dropped: u64,
    cpu: (f64, f64),
}

/// Builds the topology in a fresh namespace, opens the forwarder's ports with `open`,
/// and runs generator and forwarder for `secs`.
fn run<P: PacketPort + Send + 'static>(
    secs: f64,
    open: impl Fn(&str) -> std::io::Result<P>,
) -> std::io::Result<Run> {
    let ns = Netns::enter();
    ns.veth("g0", "f0");
    ns.veth("f1", "s0");
    let gen_port = AfPacketPort::open("g0", &PortOptions::default())?;
    let rx = open("f0")?;
    let tx = open("f1")?;
    let sink_before = kernel_rx("s0").0;
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
    let (fwd_rx, fwd_tx, cpu) = forwarder.join().expect("forwarder");
    let delivered = kernel_rx("s0").0 - sink_before;
    drop(ns);
    Ok(Run {
        elapsed,
        offered: offered.tx_packets,
        received: fwd_rx.rx_packets,
        forwarded: fwd_tx.tx_packets,
        delivered,
        rx_dropped: fwd_rx.rx_dropped,
        tx_dropped: fwd_tx.tx_dropped,
        cpu,
    })
}

fn report(name: &str, run: &Run) {
    let mpps = |n: u64| n as f64 / run.elapsed / 1e6;
    let per_mpkt = |t: f64| t / (run.forwarded.max(1) as f64 / 1e6);
    let (user, sys) = run.cpu;
    println!("{name}: {:.2} s", run.elapsed);
    println!(
        "  offered {:.3} Mpps, received {:.3} Mpps, forwarded {:.3} Mpps, delivered {:.3} Mpps",
        mpps(run.offered),
        mpps(run.received),
        mpps(run.forwarded),
        mpps(run.delivered)
    );
    println!(
        "  forwarder rx_dropped {}, tx_dropped {}; CPU per million forwarded: user {:.3} s, kernel {:.3} s",
        run.rx_dropped,
        run.tx_dropped,
        per_mpkt(user),
        per_mpkt(sys)
    );
}

fn main() {
    if !is_root("AF_XDP versus AF_PACKET benchmark") {
        return;
    }
    let secs: f64 = std::env::var("HAIRPIN_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5.0);
    println!(
        "veth forwarding g0 -> f0 => f1 -> s0, 60-byte frames, burst {BURST}, generator (AF_PACKET) CPU 0, forwarder CPU 1"
    );
    match run(secs, |ifname| {
        AfPacketPort::open(ifname, &PortOptions::default())
    }) {
        Ok(r) => report("AF_PACKET (TPACKET_V3)", &r),
        Err(e) => println!("AF_PACKET: could not run: {e}"),
    }
    match run(secs, |ifname| XdpPort::open(ifname, &XdpOptions::default())) {
        Ok(r) => report("AF_XDP (generic mode, copy)", &r),
        Err(e) => println!("AF_XDP: could not run: {e}"),
    }
}
