//! The benchmark's frames: Ethernet + IPv4 + UDP, 60 bytes, a sequence number in the payload.

use dataplane::checksum::checksum;

/// Frame length (64 on the wire with the FCS).
pub const LEN: usize = 60;

mod field {
    use std::ops::Range;
    pub const ETH_DST: Range<usize> = 0..6;
    pub const ETH_SRC: Range<usize> = 6..12;
    pub const ETH_TYPE: Range<usize> = 12..14;
    pub const IP: Range<usize> = 14..34;
    pub const IP_PROTO: usize = 23;
    pub const IP_CHECKSUM: Range<usize> = 24..26;
    pub const IP_SRC: Range<usize> = 26..30;
    pub const IP_DST: Range<usize> = 30..34;
    pub const UDP_SRC: Range<usize> = 34..36;
    pub const UDP_DST: Range<usize> = 36..38;
    pub const UDP_LEN: Range<usize> = 38..40;
    pub const SEQ: Range<usize> = 42..50;
}

/// The UDP payload length of a [`LEN`]-byte frame.
pub const PAYLOAD: usize = LEN - 42;

/// The flow a UDP frame belongs to, as a controller matches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub sport: u16,
    pub dport: u16,
}

fn u16_at(frame: &[u8], at: std::ops::Range<usize>) -> Option<u16> {
    Some(u16::from_be_bytes(frame.get(at)?.try_into().ok()?))
}

fn ip_at(frame: &[u8], at: std::ops::Range<usize>) -> Option<[u8; 4]> {
    frame.get(at)?.try_into().ok()
}

impl Flow {
    /// The IPv4/UDP flow of `frame`, if it is one.
    pub fn of(frame: &[u8]) -> Option<Self> {
        if u16_at(frame, field::ETH_TYPE)? != 0x0800 || *frame.get(field::IP_PROTO)? != 17 {
            return None;
        }
        Some(Self {
            src: ip_at(frame, field::IP_SRC)?,
            dst: ip_at(frame, field::IP_DST)?,
            sport: u16_at(frame, field::UDP_SRC)?,
            dport: u16_at(frame, field::UDP_DST)?,
        })
    }
}

/// The sequence number a frame carries.
pub fn seq(frame: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(frame.get(field::SEQ)?.try_into().ok()?))
}

/// The sequence number in a UDP payload (as a host's UDP socket receives it).
pub fn payload_seq(payload: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(payload.get(..8)?.try_into().ok()?))
}

/// A UDP payload carrying `seq`.
pub fn payload(seq: u64) -> [u8; PAYLOAD] {
    let mut p = [0; PAYLOAD];
    p[..8].copy_from_slice(&seq.to_be_bytes());
    p
}

/// Turns a request into its answer in place: addresses and ports swapped. The IPv4 and UDP
/// checksums stay valid (a sum does not change when its terms swap).
pub fn answer(frame: &mut [u8]) -> Option<()> {
    if frame.len() < field::SEQ.end {
        return None;
    }
    for (a, b) in [
        (field::ETH_DST, field::ETH_SRC),
        (field::IP_SRC, field::IP_DST),
        (field::UDP_SRC, field::UDP_DST),
    ] {
        let (x, y) = frame.split_at_mut(b.start);
        x[a].swap_with_slice(&mut y[..b.len()]);
    }
    Some(())
}

/// A UDP frame of `flow` carrying `seq`, between two MAC addresses.
pub fn build(dst_mac: [u8; 6], src_mac: [u8; 6], flow: Flow, seq: u64) -> [u8; LEN] {
    let mut f = [0u8; LEN];
    f[field::ETH_DST].copy_from_slice(&dst_mac);
    f[field::ETH_SRC].copy_from_slice(&src_mac);
    f[field::ETH_TYPE].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip_len = (LEN - 14) as u16;
    f[14] = 0x45;
    f[16..18].copy_from_slice(&ip_len.to_be_bytes());
    f[22] = 64;
    f[field::IP_PROTO] = 17;
    f[field::IP_SRC].copy_from_slice(&flow.src);
    f[field::IP_DST].copy_from_slice(&flow.dst);
    let sum = checksum(&f[field::IP]);
    f[field::IP_CHECKSUM].copy_from_slice(&sum.to_be_bytes());
    f[field::UDP_SRC].copy_from_slice(&flow.sport.to_be_bytes());
    f[field::UDP_DST].copy_from_slice(&flow.dport.to_be_bytes());
    f[field::UDP_LEN].copy_from_slice(&(ip_len - 20).to_be_bytes());
    f[field::SEQ].copy_from_slice(&seq.to_be_bytes());
    f
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let bytes: Vec<u8> = s
        .split(':')
        .map(|b| u8::from_str_radix(b, 16))
        .collect::<Result<_, _>>()
        .map_err(|_| format!("bad MAC address {s}"))?;
    bytes.try_into().map_err(|_| format!("bad MAC address {s}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_swaps_addresses_and_keeps_the_checksum() {
        let flow = Flow {
            src: [10, 0, 0, 1],
            dst: [10, 0, 0, 254],
            sport: 4000,
            dport: 7,
        };
        let mut f = build([2; 6], [1; 6], flow, 42);
        assert_eq!(checksum(&f[field::IP]), 0, "a valid header sums to zero");
        answer(&mut f).unwrap();
        assert_eq!(checksum(&f[field::IP]), 0);
        assert_eq!(&f[..12], &[1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2]);
        let back = Flow::of(&f).unwrap();
        assert_eq!((back.src, back.dst), (flow.dst, flow.src));
        assert_eq!((back.sport, back.dport), (7, 4000));
        assert_eq!(seq(&f), Some(42));
    }
}
