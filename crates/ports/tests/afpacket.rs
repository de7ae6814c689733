//! AF_PACKET ports over a veth pair in a private namespace (run as root).

mod common;

use std::time::Duration;

use common::{is_root, tagged, test_frame, wait_until, Netns};
use ports::{set_link_up, AfPacketPort, PortOptions, RingKind, VlanTag};

const KINDS: [RingKind; 2] = [RingKind::Blocks, RingKind::Frames];

const TEST_ETHERTYPE: [u8; 2] = [0x88, 0xb5];

/// A namespace with veth `a0` <-> `a1` and a port on each end.
fn pair(ring: RingKind) -> (Netns, AfPacketPort, AfPacketPort) {
    let ns = Netns::enter();
    ns.veth("a0", "a1");
    let opts = PortOptions {
        ring,
        ..PortOptions::default()
    };
    let a = AfPacketPort::open("a0", &opts).expect("open a0");
    let b = AfPacketPort::open("a1", &opts).expect("open a1");
    (ns, a, b)
}

/// Receives on `port` until `want` wire-restored frames arrived or a second passes.
fn receive(port: &mut AfPacketPort, want: usize) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    wait_until(Duration::from_secs(2), || {
        port.recv_burst(256, |frame| {
            let mut buf = vec![0u8; frame.wire_len()];
            let n = frame
                .copy_restored(&mut buf)
                .expect("buffer sized by wire_len");
            buf.truncate(n);
            got.push(buf);
        });
        got.len() >= want
    });
    got
}

/// Sends `frames` in batches of `batch`, flushing after each.
fn send_all(port: &mut AfPacketPort, frames: &[Vec<u8>], batch: usize) {
    for chunk in frames.chunks(batch) {
        for frame in chunk {
            assert!(port.send(frame), "send refused a frame");
        }
        port.flush().expect("flush");
    }
}

#[test]
fn frames_arrive_byte_exact_in_order() {
    if !is_root("frames_arrive_byte_exact_in_order") {
        return;
    }
    for kind in KINDS {
        let (_ns, mut a, mut b) = pair(kind);
        assert!(a.ifindex() > 0);
        assert_eq!(a.mtu(), 1500);
        let frames: Vec<Vec<u8>> = (0..1000u32)
            .map(|i| test_frame(i, 60 + (i as usize * 7) % 1455))
            .collect();
        send_all(&mut a, &frames, 64);
        let got = receive(&mut b, frames.len());
        assert_eq!(got.len(), frames.len());
        assert_eq!(got, frames);
        let sent = a.stats();
        assert_eq!(sent.tx_packets, 1000);
        assert_eq!(
            sent.tx_bytes,
            frames.iter().map(|f| f.len() as u64).sum::<u64>()
        );
        assert_eq!((sent.tx_dropped, sent.tx_errors), (0, 0));
        let recv = b.stats();
        assert_eq!(
            (recv.rx_packets, recv.rx_bytes, recv.rx_dropped),
            (1000, sent.tx_bytes, 0)
        );
        // The sender does not see its own transmissions.
        assert_eq!(a.recv_burst(64, |_| {}), 0);
    }
}

#[test]
fn vlan_tags_are_sent_and_restored_byte_exact() {
    if !is_root("vlan_tags_are_sent_and_restored_byte_exact") {
        return;
    }
    for kind in KINDS {
        let (_ns, mut a, mut b) = pair(kind);
        let plain = test_frame(7, 100);
        let frames = vec![
            tagged(&plain, 0x8100, 0x2064),                   // PCP 1, VID 100
            tagged(&plain, 0x8100, 0x0000),                   // priority tag, VID 0
            tagged(&plain, 0x88a8, 0xe00a),                   // 802.1ad, PCP 7
            tagged(&tagged(&plain, 0x8100, 20), 0x88a8, 300), // QinQ
            tagged(&test_frame(8, 1500), 0x8100, 4094),       // full-size tagged frame
        ];
        send_all(&mut a, &frames, 8);

        let mut seen = Vec::new();
        wait_until(Duration::from_secs(2), || {
            b.recv_burst(64, |frame| {
                let mut buf = vec![0u8; 2000];
                let n = frame.copy_restored(&mut buf).unwrap();
                buf.truncate(n);
                seen.push((frame.vlan, frame.data.to_vec(), frame.orig_len, buf));
            });
            seen.len() >= frames.len()
        });
        assert_eq!(seen.len(), frames.len());
        let expected_tags = [
            (0x8100, 0x2064),
            (0x8100, 0),
            (0x88a8, 0xe00a),
            (0x88a8, 300),
            (0x8100, 4094),
        ];
        for ((vlan, data, orig_len, restored), (sent, (tpid, tci))) in
            seen.iter().zip(frames.iter().zip(expected_tags))
        {
            // The tag went out on the wire: the peer's kernel found it and stripped it.
            assert_eq!(*vlan, Some(VlanTag { tpid, tci }));
            assert_eq!(data.len() + 4, sent.len());
            assert_eq!(&data[..12], &sent[..12]);
            assert_eq!(&data[12..], &sent[16..]);
            assert_eq!(restored, sent);
            assert_eq!(*orig_len as usize, sent.len());
        }
        // An untagged frame is not reported with a tag.
        send_all(&mut a, std::slice::from_ref(&plain), 1);
        let got = receive(&mut b, 1);
        assert_eq!(got, vec![plain]);
    }
}

#[test]
fn burst_of_10k_counts_match() {
    if !is_root("burst_of_10k_counts_match") {
        return;
    }
    for kind in KINDS {
        let (_ns, mut a, mut b) = pair(kind);
        let total = 10_000u32;
        let frame = test_frame(0, 64);
        let mut received = 0usize;
        let mut matching = 0usize;
        for batch in 0..(total / 250) {
            for i in 0..250 {
                let mut f = frame.clone();
                f[14..18].copy_from_slice(&(batch * 250 + i).to_be_bytes());
                assert!(a.send(&f));
            }
            a.flush().unwrap();
            b.recv_burst(usize::MAX, |rx| {
                received += 1;
                matching += usize::from(rx.data.get(12..14) == Some(&TEST_ETHERTYPE[..]));
            });
        }
        wait_until(Duration::from_secs(2), || {
            b.recv_burst(usize::MAX, |rx| {
                received += 1;
                matching += usize::from(rx.data.get(12..14) == Some(&TEST_ETHERTYPE[..]));
            });
            received >= total as usize
        });
        assert_eq!((received, matching), (total as usize, total as usize));
        assert_eq!(a.stats().tx_packets, u64::from(total));
        let rx = b.stats();
        assert_eq!((rx.rx_packets, rx.rx_dropped), (u64::from(total), 0));
    }
}

#[test]
fn oversized_and_runt_frames_are_refused_and_counted() {
    if !is_root("oversized_and_runt_frames_are_refused_and_counted") {
        return;
    }
    for kind in KINDS {
        let (_ns, mut a, mut b) = pair(kind);
        assert!(
            !a.send(&test_frame(1, 1515)),
            "untagged frame above MTU + 14"
        );
        assert!(!a.send(&[0u8; 13]), "runt");
        let max_tagged = tagged(&test_frame(2, 1514), 0x8100, 5);
        assert!(a.send(&max_tagged), "tagged frame at MTU + 18");
        a.flush().unwrap();
        assert_eq!(receive(&mut b, 1), vec![max_tagged]);
        let st = a.stats();
        assert_eq!((st.tx_packets, st.tx_errors, st.tx_dropped), (1, 2, 0));
    }
}

#[test]
fn full_ring_drops_are_counted() {
    if !is_root("full_ring_drops_are_counted") {
        return;
    }
    for kind in KINDS {
        let (_ns, _a, _b) = pair(kind);
        let opts = PortOptions {
            tx_frames: 2,
            ring: kind,
            ..PortOptions::default()
        };
        let mut small = AfPacketPort::open("a0", &opts).expect("open");
        // Two 2048-byte slots fit in one page: the ring has exactly two.
        let frame = test_frame(3, 60);
        assert!(small.send(&frame) && small.send(&frame));
        assert!(!small.send(&frame));
        assert_eq!(small.stats().tx_dropped, 1);
        small.flush().unwrap();
        assert!(small.send(&frame), "slots are free again after the kick");
    }
}

#[test]
fn link_down_drops_queued_frames_and_sends_nothing_stale() {
    if !is_root("link_down_drops_queued_frames_and_sends_nothing_stale") {
        return;
    }
    for kind in KINDS {
        let (_ns, mut a, mut b) = pair(kind);
        set_link_up("a0", false).unwrap();
        assert_ne!(
            revents(a.fd(), 500) & libc::POLLERR,
            0,
            "poll reports the link loss"
        );
        let err = a.take_error().unwrap().and_then(|e| e.raw_os_error());
        assert_eq!(err, Some(libc::ENETDOWN));
        assert_eq!(
            revents(a.fd(), 0) & libc::POLLERR,
            0,
            "reading the error clears it"
        );
        for i in 0..10 {
            assert!(a.send(&test_frame(100 + i, 60)));
        }
        assert!(a.flush().is_err(), "kick on a down link fails");
        let st = a.stats();
        assert_eq!((st.tx_packets, st.tx_dropped), (0, 10));

        set_link_up("a0", true).unwrap();
        let fresh: Vec<Vec<u8>> = (0..5).map(|i| test_frame(200 + i, 60)).collect();
        // Carrier needs a moment after the link comes back.
        assert!(wait_until(Duration::from_secs(2), || ports::link_info(
            "a0"
        )
        .map(|l| l.running)
        .unwrap_or(false)));
        send_all(&mut a, &fresh, 5);
        let got = receive(&mut b, 5);
        std::thread::sleep(Duration::from_millis(20));
        let late = b.recv_burst(64, |_| {});
        assert_eq!(got, fresh);
        assert_eq!(late, 0, "no stale frame followed");
        // The socket receives again on the interface that came back.
        let back = test_frame(300, 60);
        send_all(&mut b, std::slice::from_ref(&back), 1);
        assert_eq!(receive(&mut a, 1), vec![back]);
    }
}

#[test]
fn fanout_spreads_flows_without_loss() {
    if !is_root("fanout_spreads_flows_without_loss") {
        return;
    }
    let ns = Netns::enter();
    ns.veth("a0", "a1");
    let opts = PortOptions {
        fanout_group: Some(4242),
        ..PortOptions::default()
    };
    let mut a = AfPacketPort::open("a0", &PortOptions::default()).unwrap();
    let mut members = [
        AfPacketPort::open("a1", &opts).unwrap(),
        AfPacketPort::open("a1", &opts).unwrap(),
    ];
    // IPv4/UDP frames with varying addresses so the flow hash differs.
    let frames: Vec<Vec<u8>> = (0..400u32)
        .map(|i| {
            let mut f = test_frame(i, 60);
            f[12..14].copy_from_slice(&[0x08, 0x00]);
            f[14] = 0x45;
            f[23] = 17;
            f[26..30].copy_from_slice(&[10, 0, (i >> 8) as u8, i as u8]);
            f[30..34].copy_from_slice(&[10, 1, 0, 1]);
            f
        })
        .collect();
    send_all(&mut a, &frames, 100);
    let mut counts = [0usize; 2];
    wait_until(Duration::from_secs(2), || {
        for (member, count) in members.iter_mut().zip(counts.iter_mut()) {
            *count += member.recv_burst(usize::MAX, |_| {});
        }
        counts.iter().sum::<usize>() >= frames.len()
    });
    assert_eq!(counts.iter().sum::<usize>(), frames.len());
    assert!(
        counts.iter().all(|&c| c > 0),
        "both members got traffic: {counts:?}"
    );
}

#[test]
fn open_errors_name_the_interface() {
    if !is_root("open_errors_name_the_interface") {
        return;
    }
    let _ns = Netns::enter();
    let err = AfPacketPort::open("nosuch0", &PortOptions::default())
        .err()
        .expect("must fail");
    assert!(err.to_string().contains("nosuch0"), "{err}");
    let bad = PortOptions {
        block_size: 1000,
        ..PortOptions::default()
    };
    assert_eq!(
        AfPacketPort::open("lo", &bad).err().map(|e| e.kind()),
        Some(std::io::ErrorKind::InvalidInput)
    );
}

/// Polls the fd for input; returns the events reported within `timeout_ms`.
fn revents(fd: std::os::fd::RawFd, timeout_ms: i32) -> i16 {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    let rc = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    if rc == 1 {
        pfd.revents
    } else {
        0
    }
}

/// Waits for the fd to become readable; true if it did within `timeout_ms`.
fn readable(fd: std::os::fd::RawFd, timeout_ms: i32) -> bool {
    revents(fd, timeout_ms) & libc::POLLIN != 0
}

#[test]
fn idle_port_sleeps_in_poll_and_wakes_on_traffic() {
    if !is_root("idle_port_sleeps_in_poll_and_wakes_on_traffic") {
        return;
    }
    for kind in KINDS {
        let (_ns, mut a, mut b) = pair(kind);
        let start = std::time::Instant::now();
        assert!(!readable(b.fd(), 100), "nothing to read on an idle link");
        assert!(start.elapsed() >= Duration::from_millis(90), "poll slept");
        let frame = test_frame(9, 60);
        assert!(a.send(&frame));
        a.flush().unwrap();
        assert!(
            readable(b.fd(), 1000),
            "poll wakes once the block is handed over"
        );
        assert_eq!(receive(&mut b, 1), vec![frame]);
    }
}

#[test]
fn ring_overflow_is_counted_as_kernel_drops() {
    if !is_root("ring_overflow_is_counted_as_kernel_drops") {
        return;
    }
    for ring in KINDS {
        ring_overflow_with(ring);
    }
}

fn ring_overflow_with(ring: RingKind) {
    let ns = Netns::enter();
    ns.veth("a0", "a1");
    let mut a = AfPacketPort::open("a0", &PortOptions::default()).unwrap();
    let tiny = PortOptions {
        ring,
        rx_ring_blocks: 2,
        block_size: 4096,
        ..PortOptions::default()
    };
    let mut b = AfPacketPort::open("a1", &tiny).unwrap();
    let frames: Vec<Vec<u8>> = (0..500u32).map(|i| test_frame(i, 200)).collect();
    send_all(&mut a, &frames, 100);
    std::thread::sleep(Duration::from_millis(20));
    let mut got = 0;
    wait_until(Duration::from_millis(200), || {
        got += b.recv_burst(usize::MAX, |_| {});
        false
    });
    let st = b.stats();
    assert!(st.rx_dropped > 0, "two 4 KiB blocks cannot hold 500 frames");
    assert_eq!(st.rx_packets, got as u64);
    assert_eq!(
        st.rx_packets + st.rx_dropped,
        frames.len() as u64,
        "every frame is either received or counted"
    );
}

#[test]
fn tagged_frames_on_the_wire_as_tcpdump_sees_them() {
    if !is_root("tagged_frames_on_the_wire_as_tcpdump_sees_them") {
        return;
    }
    if std::process::Command::new("tcpdump")
        .arg("--version")
        .output()
        .is_err()
    {
        testkit::cannot_run(
            "tagged_frames_on_the_wire_as_tcpdump_sees_them",
            "tcpdump not installed",
        );
        return;
    }
    for kind in KINDS {
        let (ns, mut a, _b) = pair(kind);
        let path = std::env::temp_dir().join(format!("{}-tcpdump.pcap", ns.name));
        let path_str = path.to_string_lossy().into_owned();
        let mut capture = std::process::Command::new("ip")
            .args([
                "netns", "exec", &ns.name, "tcpdump", "-n", "-i", "a1", "-U", "-c", "3", "-w",
                &path_str,
            ])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("tcpdump");
        // tcpdump says "listening on" once its socket is bound.
        let mut stderr = std::io::BufReader::new(capture.stderr.take().unwrap());
        let mut line = String::new();
        std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
        assert!(line.contains("listening"), "{line}");

        let plain = test_frame(11, 80);
        let frames = [
            tagged(&plain, 0x8100, 0x6123),
            tagged(&plain, 0x88a8, 7),
            tagged(&tagged(&plain, 0x8100, 9), 0x88a8, 8),
        ];
        send_all(&mut a, &frames, 3);
        let finished = wait_until(Duration::from_secs(3), || {
            capture.try_wait().ok().flatten().is_some()
        });
        if !finished {
            let _ = capture.kill();
            let _ = capture.wait();
        }
        assert!(finished, "tcpdump saw 3 frames");

        let mut reader = ports::PcapReader::open(&path).unwrap();
        let mut buf = Vec::new();
        for sent in &frames {
            reader.next_record(&mut buf).unwrap().expect("record");
            assert_eq!(&buf, sent, "the frame on the wire carries its tag");
        }
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn ports_ignore_frames_sent_on_their_own_interface() {
    if !is_root("ports_ignore_frames_sent_on_their_own_interface") {
        return;
    }
    for kind in KINDS {
        let (_ns, _a, mut b) = pair(kind);
        let opts = PortOptions {
            ring: kind,
            ..PortOptions::default()
        };
        // Through the qdisc layer the kernel shows outgoing frames to every packet
        // socket on the interface (qdisc bypass skips that step altogether).
        let queued = PortOptions {
            qdisc_bypass: false,
            ..opts.clone()
        };
        let mut sender = AfPacketPort::open("a0", &queued).unwrap();
        // A second port on the sending interface, e.g. another datapath thread.
        let mut watcher = AfPacketPort::open("a0", &opts).unwrap();
        let frame = test_frame(5, 60);
        send_all(&mut sender, std::slice::from_ref(&frame), 1);
        assert_eq!(receive(&mut b, 1), vec![frame]);
        std::thread::sleep(Duration::from_millis(10));
        assert_eq!(
            watcher.recv_burst(16, |_| {}) + sender.recv_burst(16, |_| {}),
            0
        );
    }
}
