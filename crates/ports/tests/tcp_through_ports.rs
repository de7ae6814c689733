//! Kernel TCP between two host namespaces, forwarded by two AF_PACKET ports: the
//! hosts' veths use TSO and checksum offload, so this needs the ports to cut GSO
//! super-frames and finish partial checksums (run as root).

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{is_root, Netns};
use ports::{AfPacketPort, PortOptions, RingKind, RxFrame, SocketCounters};

fn relay(from: &mut AfPacketPort, to: &mut AfPacketPort, scratch: &mut [u8]) -> usize {
    let n = from.recv_burst(64, |frame: RxFrame<'_>| {
        if let Some(len) = frame.copy_restored(scratch) {
            to.send(&scratch[..len]);
        }
    });
    if n > 0 {
        let _ = to.flush();
    }
    n
}

#[test]
fn tcp_transfer_with_offloads_survives_forwarding() {
    if !is_root("tcp_transfer_with_offloads_survives_forwarding") {
        return;
    }
    for ring in [RingKind::Blocks, RingKind::Frames] {
        transfer_through(ring);
    }
}

fn transfer_through(ring: RingKind) {
    let ns = Netns::enter();
    let host_a = ns.host("ha", "sa", "10.77.0.1/24");
    let host_b = ns.host("hb", "sb", "10.77.0.2/24");
    let opts = PortOptions {
        ring,
        ..PortOptions::default()
    };
    let mut a = AfPacketPort::open("sa", &opts).unwrap();
    let mut b = AfPacketPort::open("sb", &opts).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let forwarder = {
        let stop = stop.clone();
        std::thread::spawn(move || -> (SocketCounters, SocketCounters) {
            let mut scratch = vec![0u8; 2048];
            while !stop.load(Ordering::Relaxed) {
                if relay(&mut a, &mut b, &mut scratch) + relay(&mut b, &mut a, &mut scratch) == 0 {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
            (a.stats(), b.stats())
        })
    };

    let started = std::time::Instant::now();
    let transfer = common::tcp_transfer(&host_a, &host_b, "10.77.0.2");
    stop.store(true, Ordering::Relaxed);
    let (a_stats, b_stats) = forwarder.join().unwrap();

    eprintln!(
        "{ring:?}: 20 MiB in {:?}; port a {a_stats:?}; port b {b_stats:?}",
        started.elapsed()
    );
    assert_eq!(
        transfer.received, transfer.sent,
        "bytes and digest match ({ring:?})"
    );
    // More frames left port b than entered port a: super-frames were cut.
    assert!(b_stats.tx_packets >= 20 * 1024 * 1024 / 1500, "{b_stats:?}");
    assert_eq!(a_stats.rx_dropped + b_stats.rx_dropped, 0);
    assert_eq!(b_stats.tx_errors, 0, "no oversized frame reached the wire");
}
