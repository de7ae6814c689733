//! Kernel TCP between two host namespaces, forwarded by two AF_XDP ports (generic
//! mode), with the hosts' checksum offload turned off (`ethtool -K eth0 tx off`) as the `xdp`
//! module docs ask (run as root).

mod common;

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{is_root, HostNs, Netns};
use ports::{RxFrame, SocketCounters, XdpOptions, XdpPort};

fn relay(from: &mut XdpPort, to: &mut XdpPort) -> usize {
    let n = from.recv_burst(64, |frame: RxFrame<'_>| {
        to.send(frame.data);
    });
    if n > 0 {
        let _ = to.flush();
    }
    n
}

fn offloads_off(host: &HostNs) {
    let out = host
        .exec(&["ethtool", "-K", "eth0", "tx", "off"])
        .output()
        .expect("run ethtool");
    assert!(
        out.status.success(),
        "ethtool: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn tcp_transfer_through_xdp_ports_with_offloads_off() {
    let test = "tcp_transfer_through_xdp_ports_with_offloads_off";
    if !is_root(test) {
        return;
    }
    let ns = Netns::enter();
    let host_a = ns.host("ha", "xa", "10.78.0.1/24");
    let host_b = ns.host("hb", "xb", "10.78.0.2/24");
    offloads_off(&host_a);
    offloads_off(&host_b);
    let open = |ifname: &str| match XdpPort::open(ifname, &XdpOptions::default()) {
        Ok(port) => Some(port),
        Err(err) if err.kind() == io::ErrorKind::Unsupported => None,
        Err(err) => panic!("open {ifname}: {err}"),
    };
    let (Some(mut a), Some(mut b)) = (open("xa"), open("xb")) else {
        testkit::cannot_run(test, "this build has no XDP program");
        return;
    };
    let stop = Arc::new(AtomicBool::new(false));
    let forwarder = {
        let stop = stop.clone();
        std::thread::spawn(move || -> (SocketCounters, SocketCounters) {
            while !stop.load(Ordering::Relaxed) {
                if relay(&mut a, &mut b) + relay(&mut b, &mut a) == 0 {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
            (a.stats(), b.stats())
        })
    };

    let transfer = common::tcp_transfer(&host_a, &host_b, "10.78.0.2");
    stop.store(true, Ordering::Relaxed);
    let (a_stats, b_stats) = forwarder.join().expect("forwarder");
    assert_eq!(transfer.received, transfer.sent, "bytes and digest match");
    // With segmentation off no frame exceeds the MTU, so none was refused.
    assert_eq!(
        a_stats.tx_errors + b_stats.tx_errors,
        0,
        "{a_stats:?} {b_stats:?}"
    );
    assert!(b_stats.tx_packets >= 20 * 1024 * 1024 / 1500, "{b_stats:?}");
}
