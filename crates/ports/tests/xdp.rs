//! AF_XDP ports (generic mode) over a veth pair in a private namespace (run as root),
//! with an AF_PACKET port as the peer, and the fallback to AF_PACKET.

mod common;

use std::io;
use std::process::Command;
use std::time::Duration;

use common::{is_root, tagged, test_frame, wait_until, Netns};
use ports::{
    open_port, AfPacketPort, AnyPort, PacketPort, PortKind, PortOptions, XdpOptions, XdpPort,
};

/// Opens an AF_XDP port, or says why the test is skipped when this build has no XDP
/// program (no clang at build time). Any other failure fails the test.
fn open_xdp(test: &str, ifname: &str) -> Option<XdpPort> {
    match XdpPort::open(ifname, &XdpOptions::default()) {
        Ok(port) => Some(port),
        Err(err) if err.kind() == io::ErrorKind::Unsupported => {
            testkit::cannot_run(test, &err.to_string());
            None
        }
        Err(err) => panic!("AF_XDP open of {ifname} failed: {err}"),
    }
}

/// A namespace with veth `x0` <-> `p0`: AF_XDP on `x0`, AF_PACKET on `p0`.
fn pair(test: &str) -> Option<(Netns, XdpPort, AfPacketPort)> {
    let ns = Netns::enter();
    ns.veth("x0", "p0");
    let xdp = open_xdp(test, "x0")?;
    let peer = AfPacketPort::open("p0", &PortOptions::default()).expect("open p0");
    Some((ns, xdp, peer))
}

/// Receives on `port` until `want` frames arrived or two seconds pass.
fn receive(port: &mut impl PacketPort, want: usize) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    wait_until(Duration::from_secs(2), || {
        port.recv_burst(256, |frame| {
            let mut buf = vec![0u8; frame.wire_len()];
            let n = frame.copy_restored(&mut buf).expect("sized by wire_len");
            buf.truncate(n);
            got.push(buf);
        });
        got.len() >= want
    });
    got
}

/// Sends `frames` in batches of `batch`, flushing after each.
fn send_all(port: &mut impl PacketPort, frames: &[Vec<u8>], batch: usize) {
    for chunk in frames.chunks(batch) {
        for frame in chunk {
            assert!(port.send(frame), "send refused a frame");
        }
        port.flush().expect("flush");
    }
}

/// Frames of every length from the minimum to a full 1500-byte MTU, some tagged.
fn varied_frames(count: u32) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| {
            let frame = test_frame(i, 60 + (i as usize * 7) % 1455);
            if i % 10 == 3 {
                tagged(&frame, 0x8100, 100 + i as u16 % 4000)
            } else {
                frame
            }
        })
        .collect()
}

/// Whether `ip link` shows an XDP program on `ifname`.
fn xdp_attached(ifname: &str) -> bool {
    let out = Command::new("ip")
        .args(["link", "show", "dev", ifname])
        .output()
        .expect("ip link show");
    String::from_utf8_lossy(&out.stdout).contains("xdp")
}

#[test]
fn frames_from_peer_arrive_byte_exact() {
    let test = "frames_from_peer_arrive_byte_exact";
    if !is_root(test) {
        return;
    }
    let Some((_ns, mut xdp, mut peer)) = pair(test) else {
        return;
    };
    assert!(xdp_attached("x0"), "program attached in generic mode");
    assert_eq!(xdp.mtu(), 1500);
    assert!(xdp.ifindex() > 0);
    let frames = varied_frames(1000);
    send_all(&mut peer, &frames, 64);
    let got = receive(&mut xdp, frames.len());
    assert_eq!(got.len(), frames.len());
    assert_eq!(got, frames);
    let st = xdp.stats();
    let bytes: u64 = frames.iter().map(|f| f.len() as u64).sum();
    assert_eq!(
        (st.rx_packets, st.rx_bytes, st.rx_dropped),
        (1000, bytes, 0)
    );
}

#[test]
fn frames_sent_arrive_at_peer_byte_exact() {
    let test = "frames_sent_arrive_at_peer_byte_exact";
    if !is_root(test) {
        return;
    }
    let Some((_ns, mut xdp, mut peer)) = pair(test) else {
        return;
    };
    // More frames than transmit chunks: chunks must come back through completions.
    let frames = varied_frames(5000);
    send_all(&mut xdp, &frames, 200);
    let got = receive(&mut peer, frames.len());
    assert_eq!(got.len(), frames.len());
    assert_eq!(got, frames);
    let st = xdp.stats();
    let bytes: u64 = frames.iter().map(|f| f.len() as u64).sum();
    assert_eq!(
        (st.tx_packets, st.tx_bytes, st.tx_dropped, st.tx_errors),
        (5000, bytes, 0, 0)
    );
    // The port does not see its own transmissions.
    assert_eq!(xdp.recv_burst(64, |_| {}), 0);
}

#[test]
fn oversized_and_runt_frames_are_refused_and_counted() {
    let test = "oversized_and_runt_frames_are_refused_and_counted";
    if !is_root(test) {
        return;
    }
    let Some((_ns, mut xdp, mut peer)) = pair(test) else {
        return;
    };
    assert!(
        !xdp.send(&test_frame(1, 1515)),
        "untagged frame above MTU + 14"
    );
    assert!(!xdp.send(&[0u8; 13]), "runt");
    let max_tagged = tagged(&test_frame(2, 1514), 0x8100, 5);
    assert!(xdp.send(&max_tagged), "tagged frame at MTU + 18");
    xdp.flush().unwrap();
    assert_eq!(receive(&mut peer, 1), vec![max_tagged]);
    let st = xdp.stats();
    assert_eq!((st.tx_packets, st.tx_errors, st.tx_dropped), (1, 2, 0));
}

#[test]
fn bursts_are_bounded_and_counts_match() {
    let test = "bursts_are_bounded_and_counts_match";
    if !is_root(test) {
        return;
    }
    let Some((_ns, mut xdp, mut peer)) = pair(test) else {
        return;
    };
    let total = 10_000u32;
    let mut next = 0u32;
    let mut in_order = true;
    let mut take = |xdp: &mut XdpPort| {
        let n = xdp.recv_burst(100, |frame| {
            let seq = frame
                .data
                .get(14..18)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            in_order &= seq == Some(next);
            next += 1;
        });
        assert!(n <= 100, "burst of {n} above max");
        n as u32
    };
    let mut received = 0u32;
    for batch in 0..total / 250 {
        for i in 0..250 {
            assert!(peer.send(&test_frame(batch * 250 + i, 64)));
        }
        peer.flush().unwrap();
        loop {
            let n = take(&mut xdp);
            received += n;
            if n == 0 {
                break;
            }
        }
    }
    wait_until(Duration::from_secs(2), || {
        received += take(&mut xdp);
        received >= total
    });
    assert_eq!(received, total);
    assert!(in_order, "frames arrived out of order");
    let st = xdp.stats();
    assert_eq!((st.rx_packets, st.rx_dropped), (u64::from(total), 0));
}

#[test]
fn receive_chunks_are_all_recycled_under_sustained_load() {
    let test = "receive_chunks_are_all_recycled_under_sustained_load";
    if !is_root(test) {
        return;
    }
    let Some((_ns, mut xdp, mut peer)) = pair(test) else {
        return;
    };
    // Frames keep arriving while earlier ones are taken in bursts of 64: every chunk
    // must go back to the kernel, or the port runs dry after a ring's worth of frames.
    let frames: Vec<Vec<u8>> = (0..100u32).map(|i| test_frame(i, 64)).collect();
    let (mut sent, mut got) = (0, 0);
    for round in 0..1000 {
        let batch = &frames[..20 + (round * 37) % 80];
        send_all(&mut peer, batch, 256);
        sent += batch.len();
        got += xdp.recv_burst(64, |_| {});
    }
    wait_until(Duration::from_secs(2), || {
        got += xdp.recv_burst(64, |_| {});
        got >= sent
    });
    assert!(sent > 8 * XdpOptions::default().rx_frames as usize);
    assert_eq!((got, xdp.stats().rx_dropped), (sent, 0));
}

#[test]
fn receive_overrun_is_counted_as_dropped() {
    let test = "receive_overrun_is_counted_as_dropped";
    if !is_root(test) {
        return;
    }
    let Some((_ns, mut xdp, mut peer)) = pair(test) else {
        return;
    };
    // Twice the receive chunks, none taken while they arrive.
    let total = 2 * XdpOptions::default().rx_frames as usize;
    let frames: Vec<Vec<u8>> = (0..total as u32).map(|i| test_frame(i, 64)).collect();
    send_all(&mut peer, &frames, 256);
    let got = receive(&mut xdp, total);
    let st = xdp.stats();
    assert!(st.rx_dropped > 0, "nothing dropped: {st:?}");
    assert_eq!(got.len() as u64 + st.rx_dropped, total as u64, "{st:?}");
    // The chunks went back to the kernel: the port keeps receiving.
    send_all(&mut peer, &frames[..10], 10);
    assert_eq!(receive(&mut xdp, 10), frames[..10].to_vec());
}

#[test]
fn program_is_detached_on_drop() {
    let test = "program_is_detached_on_drop";
    if !is_root(test) {
        return;
    }
    let Some((_ns, xdp, mut peer)) = pair(test) else {
        return;
    };
    assert!(xdp_attached("x0"));
    drop(xdp);
    assert!(!xdp_attached("x0"), "program still attached after drop");
    // The interface works as before: an AF_PACKET port on it sees the peer's frames.
    let mut plain = AfPacketPort::open("x0", &PortOptions::default()).expect("open x0");
    let frames = varied_frames(10);
    send_all(&mut peer, &frames, 10);
    assert_eq!(receive(&mut plain, frames.len()), frames);
    // And AF_XDP can be opened again.
    assert!(open_xdp(test, "x0").is_some());
}

#[test]
fn open_port_uses_xdp_when_it_works() {
    let test = "open_port_uses_xdp_when_it_works";
    if !is_root(test) {
        return;
    }
    let ns = Netns::enter();
    ns.veth("x0", "p0");
    let (port, fallback) = open_port("x0", &PortKind::xdp()).expect("open x0");
    match (port, fallback) {
        (AnyPort::Xdp(_), None) => {}
        (_, Some(reason)) if reason.kind() == io::ErrorKind::Unsupported => {
            testkit::cannot_run(test, &reason.to_string());
        }
        (_, reason) => panic!("expected AF_XDP, fell back: {reason:?}"),
    }
}

#[test]
fn falls_back_to_afpacket_when_xdp_cannot_be_set_up() {
    let test = "falls_back_to_afpacket_when_xdp_cannot_be_set_up";
    if !is_root(test) {
        return;
    }
    let ns = Netns::enter();
    ns.veth("x0", "p0");
    // Jumbo frames do not fit a 2048-byte UMEM chunk: AF_XDP refuses the interface.
    ns.ip(&["link", "set", "dev", "x0", "mtu", "9000"]);
    ns.ip(&["link", "set", "dev", "p0", "mtu", "9000"]);
    let (mut port, fallback) = open_port("x0", &PortKind::xdp()).expect("open x0");
    assert!(matches!(port, AnyPort::AfPacket(_)), "not AF_PACKET");
    let reason = fallback.expect("a fallback reason").to_string();
    assert!(reason.contains("AF_XDP on x0 failed"), "{reason}");
    assert!(
        !xdp_attached("x0"),
        "nothing left attached after the failure"
    );
    // The fallback port works, jumbo frames included.
    let jumbo = PortOptions {
        frame_size: 9216,
        ..PortOptions::default()
    };
    let mut peer = AfPacketPort::open("p0", &jumbo).expect("open p0");
    let frames = vec![test_frame(1, 60), test_frame(2, 9014)];
    send_all(&mut peer, &frames, 2);
    assert_eq!(receive(&mut port, frames.len()), frames);

    // Options the kernel would refuse fall back the same way.
    let kind = PortKind::Xdp {
        xdp: XdpOptions {
            frame_size: 3000,
            ..XdpOptions::default()
        },
        fallback: PortOptions::default(),
    };
    let (port, fallback) = open_port("p0", &kind).expect("open p0");
    assert!(matches!(port, AnyPort::AfPacket(_)));
    assert!(fallback.is_some_and(|r| r.kind() == io::ErrorKind::InvalidInput));

    // When neither works the error says both.
    let err = open_port("nosuch0", &PortKind::xdp())
        .err()
        .expect("no such interface");
    assert!(err.to_string().contains("after AF_XDP failed"), "{err}");
}

#[test]
fn ports_move_between_threads() {
    fn is_send<T: Send>() {}
    is_send::<XdpPort>();
    is_send::<AnyPort>();
}

/// Polls `fd` for input for up to `ms` milliseconds.
fn readable(fd: std::os::fd::RawFd, ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    let n = unsafe { libc::poll(&mut pfd, 1, ms) };
    n == 1 && pfd.revents & libc::POLLIN != 0
}

#[test]
fn fd_is_readable_when_frames_wait() {
    let test = "fd_is_readable_when_frames_wait";
    if !is_root(test) {
        return;
    }
    let Some((_ns, mut xdp, mut peer)) = pair(test) else {
        return;
    };
    assert!(!readable(xdp.fd(), 0), "readable with nothing received");
    send_all(&mut peer, &[test_frame(1, 60)], 1);
    assert!(
        readable(xdp.fd(), 1000),
        "not readable with a frame waiting"
    );
    assert_eq!(xdp.recv_burst(8, |_| {}), 1);
    assert!(
        !readable(xdp.fd(), 0),
        "still readable after the ring was emptied"
    );
}

#[test]
fn frames_queued_while_down_are_sent_after_link_up() {
    let test = "frames_queued_while_down_are_sent_after_link_up";
    if !is_root(test) {
        return;
    }
    let Some((ns, mut xdp, mut peer)) = pair(test) else {
        return;
    };
    ns.ip(&["link", "set", "dev", "x0", "down"]);
    let frames = varied_frames(5);
    for frame in &frames {
        assert!(xdp.send(frame));
    }
    let err = xdp.flush().expect_err("flush on a link that is down");
    assert_eq!(err.kind(), io::ErrorKind::NetworkDown, "{err}");
    ns.ip(&["link", "set", "dev", "x0", "up"]);
    wait_until(Duration::from_secs(2), || xdp.flush().is_ok());
    assert_eq!(receive(&mut peer, frames.len()), frames);
}
