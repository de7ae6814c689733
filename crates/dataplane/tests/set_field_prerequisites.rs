//! A set-field reaches the datapath without a match that guarantees its header when it sits
//! in a group bucket or a packet-out (the switch core cannot know the packet's headers there).
//! On a packet that lacks the header it must leave the packet alone: writing ICMP's type into
//! a TCP header would rewrite a port and "fix" a checksum that was right.

mod common;
use common::*;
use dataplane::ir::Action;
use dataplane::key::{Field, FieldValue, FlowMatch};
use dataplane::model::OpSink;

/// IPv4/TCP 11111 -> 2222 (valid checksums).
fn tcp4() -> Vec<u8> {
    let mut f = udp4(0x0a00_0001, 0x0a00_0002, 11111, 2222, 64, 80);
    // The UDP datagram made a TCP segment with the same ports: protocol 6, a 20-byte header.
    f[23] = 6;
    let l4 = 34;
    f[l4 + 12] = 5 << 4;
    fix_checksums(&mut f);
    f
}

/// IPv4/UDP 1111 -> 53.
fn udp() -> Vec<u8> {
    udp4(0x0a00_0001, 0x0a00_0002, 1111, 53, 64, 80)
}

/// IPv6/TCP 11111 -> 2222, no payload.
fn tcp6() -> Vec<u8> {
    let mut f = vec![0x22; 6];
    f.extend([0x12, 0x11, 0x11, 0x11, 0x11, 0x11, 0x86, 0xdd]);
    f.extend([0x60, 0, 0, 0, 0, 20, 6, 64]);
    f.extend([0x20, 1, 0xd, 0xb8].iter().chain(&[0; 11]).chain(&[1]));
    f.extend([0x20, 1, 0xd, 0xb8].iter().chain(&[0; 11]).chain(&[2]));
    f.extend([
        0x2b, 0x67, 0x08, 0xae, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0x20, 0, 0, 0, 0, 0,
    ]);
    fix_checksums(&mut f);
    f
}

/// Recomputes the IPv4 header checksum and the TCP or UDP checksum from scratch,
/// independently of the datapath's incremental updates.
fn fix_checksums(f: &mut [u8]) {
    fn sum(bytes: &[u8]) -> u32 {
        bytes
            .chunks(2)
            .map(|p| u32::from(u16::from_be_bytes([p[0], p.get(1).copied().unwrap_or(0)])))
            .sum()
    }
    fn fold(mut acc: u32) -> [u8; 2] {
        while acc > 0xffff {
            acc = (acc & 0xffff) + (acc >> 16);
        }
        (!(acc as u16)).to_be_bytes()
    }
    let ipv4 = f[12..14] == [0x08, 0x00];
    let (l4, proto, end, addresses) = if ipv4 {
        f[24..26].fill(0);
        let c = fold(sum(&f[14..34]));
        f[24..26].copy_from_slice(&c);
        (
            34,
            f[23],
            14 + usize::from(u16::from_be_bytes([f[16], f[17]])),
            26..34,
        )
    } else {
        (
            54,
            f[20],
            54 + usize::from(u16::from_be_bytes([f[18], f[19]])),
            22..54,
        )
    };
    let at = l4 + if proto == 6 { 16 } else { 6 };
    f[at..at + 2].fill(0);
    let pseudo = sum(&f[addresses]) + u32::from(proto) + (end - l4) as u32;
    let c = fold(sum(&f[l4..end]) + pseudo);
    f[at..at + 2].copy_from_slice(&c);
}

/// Whether `frame`'s checksums are what [`fix_checksums`] computes.
fn checksums_right(frame: &[u8]) -> bool {
    let mut fixed = frame.to_vec();
    fix_checksums(&mut fixed);
    fixed == frame
}

/// The frame leaving port 2 when `frame` enters port 1 and the only flow applies `field`
/// := `value` and outputs to port 2.
fn after_set(field: Field, value: u128, frame: &[u8]) -> Vec<u8> {
    let (mut w, mut r) = datapath(3);
    let set = Action::SetField(field, FieldValue(value));
    add_flow(
        &mut w,
        0,
        1,
        10,
        FlowMatch::any(),
        vec![apply(vec![set, out(2)])],
    );
    w.publish();
    let rec = send(&mut r, 1, &[(1, frame.to_vec())]);
    assert_eq!(rec.ports(), vec![2], "{field:?}: one frame out of port 2");
    rec.out
        .into_iter()
        .next()
        .map(|(_, f)| f)
        .unwrap_or_default()
}

#[test]
fn set_fields_of_an_absent_header_leave_the_packet_unchanged() {
    let cases = [
        (Field::Icmpv4Type, 0, tcp4()),
        (Field::Icmpv4Code, 3, tcp4()),
        (Field::UdpSrc, 9, tcp4()),
        (Field::SctpDst, 9, tcp4()),
        (Field::TcpDst, 9, udp()),
        (Field::Icmpv6Type, 128, tcp6()),
        (Field::Ipv6NdTarget, 0xfe80 << 112 | 1, tcp6()),
        (Field::Ipv6NdSll, 0x0200_0000_0001, tcp6()),
        (Field::ArpOp, 2, tcp4()),
        (Field::Ipv6Flabel, 5, tcp4()),
    ];
    for (field, value, frame) in cases {
        assert!(
            checksums_right(&frame),
            "{field:?}: the test frame itself is valid"
        );
        assert_eq!(after_set(field, value, &frame), frame, "{field:?}");
    }
}

#[test]
fn set_fields_of_a_present_header_still_apply() {
    let out = after_set(Field::TcpDst, 80, &tcp4());
    assert_eq!(out[36..38], 80u16.to_be_bytes());
    assert!(checksums_right(&out));
    let out = after_set(Field::UdpSrc, 7, &udp());
    assert_eq!(out[34..36], 7u16.to_be_bytes());
    assert!(checksums_right(&out));
    let out = after_set(Field::TcpSrc, 7, &tcp6());
    assert_eq!(out[54..56], 7u16.to_be_bytes());
    assert!(checksums_right(&out));
}
