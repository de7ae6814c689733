//! The benchmark's own frames: 64-byte Ethernet / IPv4 / UDP or TCP packets with valid
//! checksums, built and checked here without the datapath's code, so that the reference's
//! verdicts owe nothing to the code they judge.

/// Every frame of the traces: 64 bytes (the minimum Ethernet frame with its FCS left off
/// by the NIC would be 60; 64 keeps Table II's packet size).
pub const FRAME_LEN: usize = 64;
pub type FrameBytes = [u8; FRAME_LEN];

pub const ETH_IPV4: u16 = 0x0800;
pub const TCP: u8 = 6;
pub const UDP: u8 = 17;

/// Offsets of the fields the pipelines read or write, in a frame without VLAN tags or IP
/// options (the only kind the traces hold).
pub mod at {
    pub const ETH_DST: usize = 0;
    pub const ETH_SRC: usize = 6;
    pub const ETH_TYPE: usize = 12;
    pub const IP: usize = 14;
    pub const IP_TTL: usize = IP + 8;
    pub const IP_PROTO: usize = IP + 9;
    pub const IP_CHECKSUM: usize = IP + 10;
    pub const IP_SRC: usize = IP + 12;
    pub const IP_DST: usize = IP + 16;
    pub const L4: usize = IP + 20;
    pub const UDP_CHECKSUM: usize = L4 + 6;
    pub const TCP_CHECKSUM: usize = L4 + 16;
}

/// A locally administered MAC address: `tag` names its role, `i` its instance.
pub fn mac(tag: u8, i: u32) -> [u8; 6] {
    let b = i.to_be_bytes();
    [0x02, tag, b[0], b[1], b[2], b[3]]
}

/// The addresses and ports of one frame.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    pub dst_mac: [u8; 6],
    pub src_mac: [u8; 6],
    pub src: u32,
    pub dst: u32,
    pub proto: u8,
    pub sport: u16,
    pub dport: u16,
    /// Written into the payload, so that every flow's frame is its own.
    pub flow: u32,
}

/// Builds the frame of `s` with correct IPv4, UDP and TCP checksums.
pub fn build(s: &Spec) -> FrameBytes {
    let mut p = [0u8; FRAME_LEN];
    p[at::ETH_DST..at::ETH_DST + 6].copy_from_slice(&s.dst_mac);
    p[at::ETH_SRC..at::ETH_SRC + 6].copy_from_slice(&s.src_mac);
    p[at::ETH_TYPE..at::ETH_TYPE + 2].copy_from_slice(&ETH_IPV4.to_be_bytes());
    let total = (FRAME_LEN - at::IP) as u16;
    p[at::IP] = 0x45;
    p[at::IP + 2..at::IP + 4].copy_from_slice(&total.to_be_bytes());
    p[at::IP + 4..at::IP + 6].copy_from_slice(&(s.flow as u16).to_be_bytes());
    p[at::IP_TTL] = 64;
    p[at::IP_PROTO] = s.proto;
    p[at::IP_SRC..at::IP_SRC + 4].copy_from_slice(&s.src.to_be_bytes());
    p[at::IP_DST..at::IP_DST + 4].copy_from_slice(&s.dst.to_be_bytes());
    p[at::L4..at::L4 + 2].copy_from_slice(&s.sport.to_be_bytes());
    p[at::L4 + 2..at::L4 + 4].copy_from_slice(&s.dport.to_be_bytes());
    let payload = if s.proto == UDP {
        let len = (FRAME_LEN - at::L4) as u16;
        p[at::L4 + 4..at::L4 + 6].copy_from_slice(&len.to_be_bytes());
        at::L4 + 8
    } else {
        p[at::L4 + 4..at::L4 + 8].copy_from_slice(&s.flow.to_be_bytes());
        p[at::L4 + 12] = 0x50;
        p[at::L4 + 13] = 0x10;
        p[at::L4 + 14..at::L4 + 16].copy_from_slice(&1024u16.to_be_bytes());
        at::L4 + 20
    };
    p[payload..payload + 4].copy_from_slice(&s.flow.to_be_bytes());
    seal(&mut p);
    p
}

/// Recomputes the IPv4 header checksum and the TCP or UDP checksum (a UDP checksum of 0,
/// "none", stays 0) of a frame built by [`build`], from scratch.
pub fn seal(p: &mut FrameBytes) {
    p[at::IP_CHECKSUM..at::IP_CHECKSUM + 2].fill(0);
    let c = !fold(sum(&p[at::IP..at::L4]));
    p[at::IP_CHECKSUM..at::IP_CHECKSUM + 2].copy_from_slice(&c.to_be_bytes());
    let proto = p[at::IP_PROTO];
    let field = match proto {
        TCP => at::TCP_CHECKSUM,
        UDP if p[at::UDP_CHECKSUM..at::UDP_CHECKSUM + 2] != [0, 0] => at::UDP_CHECKSUM,
        _ => return,
    };
    p[field..field + 2].fill(0);
    let segment = &p[at::L4..];
    let pseudo = sum(&p[at::IP_SRC..at::L4]) + u64::from(proto) + segment.len() as u64;
    let mut c = !fold(pseudo + sum(segment));
    if proto == UDP && c == 0 {
        c = 0xffff;
    }
    p[field..field + 2].copy_from_slice(&c.to_be_bytes());
}

/// Sum of the big-endian 16-bit words of `data` (RFC 1071), unfolded.
fn sum(data: &[u8]) -> u64 {
    data.chunks(2)
        .map(|w| u64::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)])))
        .sum()
}

fn fold(mut s: u64) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// The fields of a frame the reference pipelines read.
#[derive(Clone, Copy, Debug)]
pub struct Fields {
    pub dst_mac: [u8; 6],
    pub src_mac: [u8; 6],
    /// Whether the frame is IPv4 (then the fields below are its header's and ports').
    pub ipv4: bool,
    pub src: u32,
    pub dst: u32,
    pub proto: u8,
    pub ttl: u8,
    pub dport: u16,
}

/// Reads a frame's fields at the offsets of [`at`].
pub fn fields(p: &FrameBytes) -> Fields {
    let word = |i: usize| u32::from_be_bytes([p[i], p[i + 1], p[i + 2], p[i + 3]]);
    let mut dst_mac = [0; 6];
    dst_mac.copy_from_slice(&p[at::ETH_DST..at::ETH_DST + 6]);
    let mut src_mac = [0; 6];
    src_mac.copy_from_slice(&p[at::ETH_SRC..at::ETH_SRC + 6]);
    Fields {
        dst_mac,
        src_mac,
        ipv4: p[at::ETH_TYPE..at::ETH_TYPE + 2] == ETH_IPV4.to_be_bytes() && p[at::IP] == 0x45,
        src: word(at::IP_SRC),
        dst: word(at::IP_DST),
        proto: p[at::IP_PROTO],
        ttl: p[at::IP_TTL],
        dport: u16::from_be_bytes([p[at::L4 + 2], p[at::L4 + 3]]),
    }
}
