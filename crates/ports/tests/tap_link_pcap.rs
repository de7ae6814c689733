//! TAP port, link monitor and pcap capture, each in a private namespace (run as root).

mod common;

use std::time::{Duration, SystemTime};

use common::{is_root, tagged, test_frame, wait_until, Netns};
use ports::{
    link_info, set_link_up, AfPacketPort, LinkChange, LinkEvent, LinkMonitor, PcapReader,
    PcapWriter, PortOptions, TapPort, TimestampPrecision,
};

#[test]
fn tap_receives_what_the_kernel_sends_and_delivers_what_we_send() {
    if !is_root("tap_receives_what_the_kernel_sends_and_delivers_what_we_send") {
        return;
    }
    let ns = Netns::enter();
    let mut tap = TapPort::open("hptap0").expect("create tap");
    assert_eq!(tap.ifname(), "hptap0");
    ns.sysctl("net.ipv6.conf.hptap0.disable_ipv6=1");
    set_link_up("hptap0", true).unwrap();
    ns.ip(&["addr", "add", "10.9.0.1/24", "dev", "hptap0"]);
    let tap_mac = link_info("hptap0").unwrap().mac;

    // Pinging a neighbour makes the kernel send an ARP request into the device.
    assert!(!ns.exec_status(&["ping", "-c", "1", "-W", "1", "10.9.0.2"]));
    let mut arp = None;
    wait_until(Duration::from_secs(2), || {
        tap.recv_burst(16, |f| {
            if f.data.get(12..14) == Some(&[0x08, 0x06][..]) {
                arp = Some(f.data.to_vec());
            }
        });
        arp.is_some()
    });
    let arp = arp.expect("ARP request from the kernel");
    assert_eq!(&arp[0..6], &[0xff; 6]);
    assert_eq!(&arp[6..12], &tap_mac);
    assert_eq!(&arp[20..22], &[0, 1], "ARP request opcode");
    assert_eq!(&arp[38..42], &[10, 9, 0, 2], "target IP");
    assert!(tap.stats().rx_packets >= 1);

    // Our ARP reply enters the host stack, which learns the neighbour from it.
    let peer_mac = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];
    let mut reply = Vec::new();
    reply.extend_from_slice(&tap_mac);
    reply.extend_from_slice(&peer_mac);
    reply.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 2]);
    reply.extend_from_slice(&peer_mac);
    reply.extend_from_slice(&[10, 9, 0, 2]);
    reply.extend_from_slice(&tap_mac);
    reply.extend_from_slice(&[10, 9, 0, 1]);
    reply.resize(60, 0);
    assert!(tap.send(&reply));
    tap.flush().unwrap();
    assert_eq!(tap.stats().tx_packets, 1);
    let learned = wait_until(Duration::from_secs(2), || {
        std::process::Command::new("ip")
            .args(["-n", &ns.name, "neigh", "show", "10.9.0.2"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).contains("02:11:22:33:44:55"))
            .unwrap_or(false)
    });
    assert!(
        learned,
        "kernel learned the neighbour from the frame we sent"
    );
}

fn drain(monitor: &mut LinkMonitor, events: &mut Vec<LinkEvent>) {
    monitor
        .poll_events(|e| events.push(e))
        .expect("poll link events");
}

fn has(events: &[LinkEvent], ifname: &str, change: LinkChange) -> bool {
    events
        .iter()
        .any(|e| e.ifname == ifname && e.change == change)
}

#[test]
fn link_monitor_sees_add_up_down_remove() {
    if !is_root("link_monitor_sees_add_up_down_remove") {
        return;
    }
    let ns = Netns::enter();
    let mut monitor = LinkMonitor::new().expect("netlink");
    let mut events = Vec::new();
    drain(&mut monitor, &mut events);
    assert!(
        events.is_empty(),
        "existing links are not reported: {events:?}"
    );

    ns.ip(&["link", "add", "m0", "type", "veth", "peer", "name", "m1"]);
    assert!(
        wait_until(Duration::from_secs(2), || {
            drain(&mut monitor, &mut events);
            has(&events, "m0", LinkChange::Added) && has(&events, "m1", LinkChange::Added)
        }),
        "{events:?}"
    );

    ns.ip(&["link", "set", "dev", "m0", "address", "02:00:00:00:00:aa"]);
    ns.ip(&["link", "set", "dev", "m0", "up"]);
    ns.ip(&["link", "set", "dev", "m1", "up"]);
    assert!(
        wait_until(Duration::from_secs(2), || {
            drain(&mut monitor, &mut events);
            has(&events, "m0", LinkChange::Up) && has(&events, "m1", LinkChange::Up)
        }),
        "{events:?}"
    );
    let info = link_info("m0").unwrap();
    assert_eq!(info.mac, [0x02, 0, 0, 0, 0, 0xaa]);
    assert_eq!((info.mtu, info.up, info.running), (1500, true, true));
    assert_eq!(
        info.speed_mbps,
        Some(10_000),
        "veth reports 10G through ethtool"
    );

    events.clear();
    ns.ip(&["link", "set", "dev", "m0", "down"]);
    assert!(
        wait_until(Duration::from_secs(2), || {
            drain(&mut monitor, &mut events);
            has(&events, "m0", LinkChange::Down) && has(&events, "m1", LinkChange::Down)
        }),
        "{events:?}"
    );
    let down = events
        .iter()
        .find(|e| e.ifname == "m0" && e.change == LinkChange::Down)
        .unwrap();
    assert!(!down.admin_up);
    let peer = events
        .iter()
        .find(|e| e.ifname == "m1" && e.change == LinkChange::Down)
        .unwrap();
    assert!(
        peer.admin_up && !peer.running,
        "peer lost carrier only: {peer:?}"
    );
    assert!(!link_info("m1").unwrap().running);

    ns.ip(&["link", "set", "dev", "m0", "up"]);
    ns.ip(&["link", "set", "dev", "m0", "mtu", "9000"]);
    assert!(
        wait_until(Duration::from_secs(2), || {
            drain(&mut monitor, &mut events);
            has(&events, "m0", LinkChange::Up)
                && events.iter().any(|e| e.ifname == "m0" && e.mtu == 9000)
        }),
        "{events:?}"
    );

    ns.ip(&["link", "del", "m0"]);
    assert!(
        wait_until(Duration::from_secs(2), || {
            drain(&mut monitor, &mut events);
            has(&events, "m0", LinkChange::Removed) && has(&events, "m1", LinkChange::Removed)
        }),
        "{events:?}"
    );
    assert!(link_info("m0").is_err());
}

#[test]
fn pcap_capture_of_a_port_is_readable() {
    if !is_root("pcap_capture_of_a_port_is_readable") {
        return;
    }
    let ns = Netns::enter();
    ns.veth("a0", "a1");
    let mut a = AfPacketPort::open("a0", &PortOptions::default()).unwrap();
    let mut b = AfPacketPort::open("a1", &PortOptions::default()).unwrap();
    let frames = vec![
        test_frame(1, 60),
        tagged(&test_frame(2, 200), 0x8100, 42),
        test_frame(3, 1514),
    ];
    for f in &frames {
        assert!(a.send(f));
    }
    a.flush().unwrap();

    let path = std::env::temp_dir().join(format!("{}.pcap", ns.name));
    let mut writer = PcapWriter::create(&path, TimestampPrecision::Nano).unwrap();
    let mut captured = 0;
    wait_until(Duration::from_secs(2), || {
        captured += b.recv_burst(16, |f| writer.write_rx(SystemTime::now(), &f).unwrap());
        captured >= frames.len()
    });
    writer.flush().unwrap();
    drop(writer);

    let raw = std::fs::read(&path).unwrap();
    assert_eq!(
        &raw[0..4],
        &0xa1b2_3c4du32.to_le_bytes(),
        "nanosecond magic"
    );
    assert_eq!(&raw[20..24], &1u32.to_le_bytes(), "Ethernet link type");
    let total: usize = frames.iter().map(|f| 16 + f.len()).sum();
    assert_eq!(raw.len(), 24 + total);

    let mut reader = PcapReader::open(&path).unwrap();
    let mut buf = Vec::new();
    for sent in &frames {
        let rec = reader.next_record(&mut buf).unwrap().expect("record");
        assert_eq!(
            (rec.incl_len as usize, rec.orig_len as usize),
            (sent.len(), sent.len())
        );
        assert_eq!(&buf, sent);
    }
    assert!(reader.next_record(&mut buf).unwrap().is_none());
    std::fs::remove_file(&path).unwrap();
}
