//! A trunk's logical ports over real sockets (run as root): frames sent with a logical
//! port's tag cross a veth pair, and the receiving end's VLAN map names the same logical port
//! and gives back the frame without the trunk tag, whether the kernel removed the tag
//! (AF_PACKET) or left it in the bytes (AF_XDP).

mod common;

use std::io;
use std::time::Duration;

use common::{is_root, tagged, test_frame, wait_until, Netns};
use ports::trunk::{vlan_tag, Refused, VlanMap};
use ports::{AfPacketPort, AnyPort, PacketPort, PortOptions, RingKind, XdpOptions, XdpPort};

/// Logical ports 1..=4 on VLANs 101..=104, and the native VLAN as port 9.
fn vlan_map() -> VlanMap {
    let mut map = VlanMap::new();
    for port in 1..=4u32 {
        map.insert(100 + port as u16, port).unwrap();
    }
    map.set_native(9).unwrap();
    map
}

/// What each logical port sends: (port, frame as the pipeline hands it over).
fn outputs() -> Vec<(u32, Vec<u8>)> {
    let mut out = Vec::new();
    for i in 0..40u32 {
        let port = 1 + i % 4;
        let frame = match i % 5 {
            // A host's own tag, or a controller's push_vlan: the inner tag of the trunk frame.
            0 => tagged(&test_frame(i, 100), 0x8100, 7),
            // A full-size frame: the trunk tag is the allowance of the trunk's MTU.
            1 => test_frame(i, 1514),
            _ => test_frame(i, 60 + i as usize * 13),
        };
        out.push((port, frame));
    }
    out
}

/// Receives until `want` frames have been taken in (or two seconds pass): (logical port,
/// untagged frame) for those that enter a port, and why the others did not.
fn receive_all(
    port: &mut impl PacketPort,
    map: &VlanMap,
    want: usize,
) -> (Vec<(u32, Vec<u8>)>, Vec<Refused>) {
    let (mut entered, mut refused) = (Vec::new(), Vec::new());
    wait_until(Duration::from_secs(2), || {
        port.recv_burst(256, |frame| {
            let mut buf = vec![0u8; 2048];
            match map.receive(&frame, &mut buf) {
                Ok((port, n)) => {
                    buf.truncate(n);
                    entered.push((port, buf));
                }
                Err(why) => refused.push(why),
            }
        });
        entered.len() + refused.len() >= want
    });
    (entered, refused)
}

fn send_tagged_all(port: &mut impl PacketPort, map: &VlanMap, frames: &[(u32, Vec<u8>)]) {
    for (logical, frame) in frames {
        let vid = (101..=104)
            .find(|v| map.port_of(*v) == Some(*logical))
            .unwrap();
        assert!(
            port.send_tagged(frame, vlan_tag(vid)),
            "refused port {logical}"
        );
    }
    port.flush().expect("flush");
}

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

#[test]
fn logical_ports_cross_an_afpacket_trunk() {
    if !is_root("logical_ports_cross_an_afpacket_trunk") {
        return;
    }
    let map = vlan_map();
    for ring in [RingKind::Blocks, RingKind::Frames] {
        let ns = Netns::enter();
        ns.veth("t0", "t1");
        let opts = PortOptions {
            ring,
            ..PortOptions::default()
        };
        let mut legacy = AfPacketPort::open("t0", &opts).unwrap();
        let mut trunk = AfPacketPort::open("t1", &opts).unwrap();
        let sent = outputs();
        send_tagged_all(&mut legacy, &map, &sent);
        let (entered, dropped) = receive_all(&mut trunk, &map, sent.len());
        assert_eq!(entered, sent, "{ring:?}");
        assert!(dropped.is_empty());
        let st = legacy.stats();
        assert_eq!(st.tx_packets, sent.len() as u64);
        let bytes: usize = sent.iter().map(|(_, f)| f.len() + 4).sum();
        assert_eq!(st.tx_bytes, bytes as u64, "counted with the tag");

        // Unknown VLANs and untagged frames: the native port takes the untagged one.
        let plain = test_frame(99, 80);
        assert!(legacy.send_tagged(&plain, vlan_tag(200)));
        assert!(legacy.send(&plain));
        legacy.flush().unwrap();
        let (entered, dropped) = receive_all(&mut trunk, &map, 2);
        assert_eq!(entered, vec![(9, plain.clone())]);
        assert_eq!(dropped, vec![Refused::UnknownVid(200)]);

        // The tag must fit the MTU: a 1515-byte frame cannot take one, a runt is refused.
        assert!(!legacy.send_tagged(&test_frame(1, 1515), vlan_tag(101)));
        assert!(!legacy.send_tagged(&[0u8; 13], vlan_tag(101)));
        assert_eq!(legacy.stats().tx_errors, 2);
    }
}

#[test]
fn logical_ports_cross_an_xdp_trunk_both_ways() {
    let test = "logical_ports_cross_an_xdp_trunk_both_ways";
    if !is_root(test) {
        return;
    }
    let map = vlan_map();
    let ns = Netns::enter();
    ns.veth("x0", "p0");
    let Some(xdp) = open_xdp(test, "x0") else {
        return;
    };
    let mut xdp = AnyPort::Xdp(Box::new(xdp));
    let mut peer = AnyPort::AfPacket(AfPacketPort::open("p0", &PortOptions::default()).unwrap());
    let sent = outputs();
    // Into the AF_XDP port: the tags stay in the bytes, the map finds them there.
    send_tagged_all(&mut peer, &map, &sent);
    let (entered, dropped) = receive_all(&mut xdp, &map, sent.len());
    assert_eq!(entered, sent);
    assert!(dropped.is_empty());
    // Out of the AF_XDP port: tagged in its UMEM chunk, removed by the peer's kernel.
    send_tagged_all(&mut xdp, &map, &sent);
    let (entered, _) = receive_all(&mut peer, &map, sent.len());
    assert_eq!(entered, sent);
}
