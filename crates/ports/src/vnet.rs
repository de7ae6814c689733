//! Finishing what the kernel left to "hardware" when a frame crossed a veth from a
//! local stack: a checksum still to be computed (CHECKSUM_PARTIAL), or a TCP/UDP
//! super-frame still to be cut into MTU-sized segments (GSO). The kernel describes
//! both in the `virtio_net_hdr` it writes before each received frame.
//!
//! All offsets come from the frame or the kernel and are bounds-checked; a frame that
//! does not parse is refused rather than forwarded half-done.

/// Size of `struct virtio_net_hdr`.
pub(crate) const VNET_HDR_LEN: usize = 10;
const F_NEEDS_CSUM: u8 = 1;
const GSO_NONE: u8 = 0;
const GSO_TCPV4: u8 = 1;
const GSO_TCPV6: u8 = 4;
const GSO_UDP_L4: u8 = 5;
const GSO_ECN: u8 = 0x80;
const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;
const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;
/// Largest super-frame the kernel hands over (IPv4 total length limit plus headers).
pub(crate) const MAX_GSO_FRAME: usize = 65_536 + 256;

/// The parts of a received frame's `virtio_net_hdr` that matter here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct VnetHeader {
    needs_csum: bool,
    gso_type: u8,
    gso_size: u16,
    csum_start: u16,
    csum_offset: u16,
}

impl VnetHeader {
    /// Reads the header (native byte order: the kernel writes it for this host).
    pub(crate) fn parse(raw: &[u8; VNET_HDR_LEN]) -> Self {
        let word = |at: usize| u16::from_ne_bytes([raw[at], raw[at + 1]]);
        VnetHeader {
            needs_csum: raw[0] & F_NEEDS_CSUM != 0,
            gso_type: raw[1] & !GSO_ECN,
            gso_size: word(4),
            csum_start: word(6),
            csum_offset: word(8),
        }
    }

    pub(crate) fn needs_csum(&self) -> bool {
        self.needs_csum
    }

    pub(crate) fn is_gso(&self) -> bool {
        self.gso_type != GSO_NONE
    }
}

/// Ones'-complement sum of `data` as big-endian 16-bit words, added to `sum`.
fn ones_sum(data: &[u8], mut sum: u64) -> u64 {
    let mut chunks = data.chunks_exact(2);
    for pair in &mut chunks {
        sum += u64::from(u16::from_be_bytes([pair[0], pair[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u64::from(*last) << 8;
    }
    sum
}

fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

fn be16(data: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*data.get(at)?, *data.get(at + 1)?]))
}

fn put16(data: &mut [u8], at: usize, value: u16) -> Option<()> {
    data.get_mut(at..at + 2)?
        .copy_from_slice(&value.to_be_bytes());
    Some(())
}

/// Completes a partial checksum in place: the field at `start + offset` holds the
/// pseudo-header sum, the rest is summed from `start` to the end of the frame.
pub(crate) fn complete_checksum(frame: &mut [u8], hdr: &VnetHeader) -> bool {
    let start = usize::from(hdr.csum_start);
    let field = start + usize::from(hdr.csum_offset);
    if field + 2 > frame.len() {
        return false;
    }
    let mut csum = !fold(ones_sum(&frame[start..], 0));
    // UDP sends an all-zero result as all ones (zero means "no checksum").
    if csum == 0 && hdr.csum_offset == 6 {
        csum = 0xffff;
    }
    put16(frame, field, csum).is_some()
}

/// Where the headers of a TCP or UDP frame end.
struct Layout {
    l3: usize,
    ipv4: bool,
    l4: usize,
    /// End of the L4 header = start of the payload.
    payload: usize,
    tcp: bool,
}

fn parse_layout(frame: &[u8]) -> Option<Layout> {
    let mut type_at = 12;
    let mut ethertype = be16(frame, type_at)?;
    for _ in 0..2 {
        if ethertype != 0x8100 && ethertype != 0x88a8 {
            break;
        }
        type_at += 4;
        ethertype = be16(frame, type_at)?;
    }
    let l3 = type_at + 2;
    let (ipv4, proto, l4) = match ethertype {
        0x0800 => {
            let ihl = usize::from(*frame.get(l3)? & 0x0f) * 4;
            (ihl >= 20).then_some(())?;
            (true, *frame.get(l3 + 9)?, l3 + ihl)
        }
        0x86dd => (false, *frame.get(l3 + 6)?, l3 + 40),
        _ => return None,
    };
    let (tcp, payload) = match proto {
        IPPROTO_TCP => {
            let doff = usize::from(*frame.get(l4 + 12)? >> 4) * 4;
            (doff >= 20).then_some(())?;
            (true, l4 + doff)
        }
        IPPROTO_UDP => (false, l4 + 8),
        _ => return None,
    };
    (payload <= frame.len()).then_some(Layout {
        l3,
        ipv4,
        l4,
        payload,
        tcp,
    })
}

/// Cuts GSO super-frames into segments in a buffer of its own (allocated once).
pub(crate) struct Segmenter {
    buf: Box<[u8]>,
}

impl Segmenter {
    pub(crate) fn new() -> Self {
        Segmenter {
            buf: vec![0; MAX_GSO_FRAME].into_boxed_slice(),
        }
    }

    /// Calls `f` with each segment of `frame`; returns the number of segments, or
    /// `None` (nothing delivered) if the frame is not a TCP/UDP frame that parses.
    pub(crate) fn segment(
        &mut self,
        frame: &[u8],
        hdr: &VnetHeader,
        mut f: impl FnMut(&[u8]),
    ) -> Option<usize> {
        let layout = parse_layout(frame)?;
        let expected_tcp = matches!(hdr.gso_type, GSO_TCPV4 | GSO_TCPV6);
        if expected_tcp != layout.tcp || (hdr.gso_type != GSO_UDP_L4 && !expected_tcp) {
            return None;
        }
        let mss = usize::from(hdr.gso_size);
        let payload = frame.get(layout.payload..)?;
        if mss == 0 || layout.payload > self.buf.len() || layout.payload + mss > self.buf.len() {
            return None;
        }
        let chunks = payload.len().div_ceil(mss).max(1);
        let headers = frame.get(..layout.payload)?;
        let ip_id = be16(frame, layout.l3 + 4)?;
        let seq = u32::from_be_bytes(frame.get(layout.l4 + 4..layout.l4 + 8)?.try_into().ok()?);
        let flags = *frame.get(layout.l4 + 13)?;
        for index in 0..chunks {
            let chunk = payload.get(index * mss..((index + 1) * mss).min(payload.len()))?;
            let len = layout.payload + chunk.len();
            let seg = self.buf.get_mut(..len)?;
            seg[..layout.payload].copy_from_slice(headers);
            seg[layout.payload..].copy_from_slice(chunk);
            fix_segment(
                seg,
                &layout,
                index,
                chunks,
                ip_id,
                seq.wrapping_add((index * mss) as u32),
                flags,
            )?;
            f(seg);
        }
        Some(chunks)
    }
}

/// Rewrites lengths, IDs, sequence numbers, flags and checksums of one segment.
fn fix_segment(
    seg: &mut [u8],
    layout: &Layout,
    index: usize,
    count: usize,
    ip_id: u16,
    seq: u32,
    flags: u8,
) -> Option<()> {
    let l4_len = seg.len() - layout.l4;
    let l4_len16 = u16::try_from(l4_len).ok()?;
    let pseudo = if layout.ipv4 {
        let total = u16::try_from(seg.len() - layout.l3).ok()?;
        put16(seg, layout.l3 + 2, total)?;
        put16(seg, layout.l3 + 4, ip_id.wrapping_add(index as u16))?;
        put16(seg, layout.l3 + 10, 0)?;
        let ip_csum = !fold(ones_sum(seg.get(layout.l3..layout.l4)?, 0));
        put16(seg, layout.l3 + 10, ip_csum)?;
        let addrs = seg.get(layout.l3 + 12..layout.l3 + 20)?;
        ones_sum(addrs, 0) + u64::from(seg[layout.l3 + 9]) + u64::from(l4_len16)
    } else {
        put16(seg, layout.l3 + 4, l4_len16)?;
        let addrs = seg.get(layout.l3 + 8..layout.l3 + 40)?;
        ones_sum(addrs, 0) + u64::from(seg[layout.l3 + 6]) + l4_len as u64
    };
    let csum_at = if layout.tcp {
        seg.get_mut(layout.l4 + 4..layout.l4 + 8)?
            .copy_from_slice(&seq.to_be_bytes());
        let mut f = flags;
        if index + 1 < count {
            f &= !(TCP_FIN | TCP_PSH);
        }
        if index > 0 {
            f &= !TCP_CWR;
        }
        *seg.get_mut(layout.l4 + 13)? = f;
        layout.l4 + 16
    } else {
        put16(seg, layout.l4 + 4, l4_len16)?;
        layout.l4 + 6
    };
    put16(seg, csum_at, 0)?;
    let mut csum = !fold(ones_sum(seg.get(layout.l4..)?, pseudo));
    if csum == 0 && !layout.tcp {
        csum = 0xffff;
    }
    put16(seg, csum_at, csum)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ethernet/IPv4/TCP super-frame with `payload` bytes and a partial checksum.
    fn tcp4_frame(payload: usize, flags: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 20];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[14 + 4..14 + 6].copy_from_slice(&0x1000u16.to_be_bytes());
        f[14 + 8] = 64;
        f[14 + 9] = IPPROTO_TCP;
        f[14 + 12..14 + 20].copy_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        f[34 + 4..34 + 8].copy_from_slice(&1000u32.to_be_bytes());
        f[34 + 12] = 5 << 4;
        f[34 + 13] = flags;
        f.extend((0..payload).map(|i| (i * 7) as u8));
        f
    }

    fn checksum_ok(seg: &[u8]) -> bool {
        let layout = parse_layout(seg).unwrap();
        let ip_ok = fold(ones_sum(&seg[layout.l3..layout.l4], 0)) == 0xffff;
        let l4_len = (seg.len() - layout.l4) as u64;
        let proto = u64::from(seg[layout.l3 + 9]);
        let pseudo = ones_sum(&seg[layout.l3 + 12..layout.l3 + 20], 0) + proto + l4_len;
        ip_ok && fold(ones_sum(&seg[layout.l4..], pseudo)) == 0xffff
    }

    #[test]
    fn tcp_super_frame_is_cut_into_valid_segments() {
        let frame = tcp4_frame(3000, TCP_PSH | TCP_FIN | TCP_CWR);
        let hdr = VnetHeader {
            needs_csum: true,
            gso_type: GSO_TCPV4,
            gso_size: 1448,
            csum_start: 34,
            csum_offset: 16,
        };
        let mut segments = Vec::new();
        let n = Segmenter::new()
            .segment(&frame, &hdr, |s| segments.push(s.to_vec()))
            .unwrap();
        assert_eq!(n, 3);
        let mut payload = Vec::new();
        for (i, seg) in segments.iter().enumerate() {
            assert!(checksum_ok(seg), "segment {i}");
            let seq = u32::from_be_bytes(seg[38..42].try_into().unwrap());
            assert_eq!(seq, 1000 + (i as u32) * 1448);
            assert_eq!(
                u16::from_be_bytes([seg[16], seg[17]]) as usize,
                seg.len() - 14
            );
            assert_eq!(u16::from_be_bytes([seg[18], seg[19]]), 0x1000 + i as u16);
            let flags = seg[47];
            assert_eq!(flags & (TCP_FIN | TCP_PSH) != 0, i == 2);
            assert_eq!(flags & TCP_CWR != 0, i == 0);
            payload.extend_from_slice(&seg[54..]);
        }
        assert_eq!(payload, frame[54..]);
        assert_eq!(segments[2].len(), 54 + 3000 - 2 * 1448);
    }

    #[test]
    fn partial_checksum_is_completed() {
        let mut frame = tcp4_frame(101, TCP_PSH);
        // The stack leaves the folded pseudo-header sum in the field.
        let pseudo = ones_sum(&frame[26..34], 0) + u64::from(IPPROTO_TCP) + 121;
        let partial = fold(pseudo);
        frame[50..52].copy_from_slice(&partial.to_be_bytes());
        let ip_csum = !fold(ones_sum(&frame[14..34], 0));
        frame[24..26].copy_from_slice(&ip_csum.to_be_bytes());
        let hdr = VnetHeader {
            needs_csum: true,
            gso_type: GSO_NONE,
            gso_size: 0,
            csum_start: 34,
            csum_offset: 16,
        };
        assert!(complete_checksum(&mut frame, &hdr));
        assert!(checksum_ok(&frame));
        let bad = VnetHeader {
            csum_start: 200,
            ..hdr
        };
        assert!(!complete_checksum(&mut frame, &bad));
    }

    #[test]
    fn garbage_is_refused_without_panic() {
        let frame = tcp4_frame(3000, 0);
        let hdr = VnetHeader {
            needs_csum: true,
            gso_type: GSO_TCPV4,
            gso_size: 1448,
            csum_start: 34,
            csum_offset: 16,
        };
        let mut segmenter = Segmenter::new();
        for cut in 0..60 {
            let _ = segmenter.segment(&frame[..cut], &hdr, |_| {});
        }
        let mut bad_ihl = frame.clone();
        bad_ihl[14] = 0x41;
        assert!(segmenter.segment(&bad_ihl, &hdr, |_| {}).is_none());
        let udp_hdr = VnetHeader {
            gso_type: GSO_UDP_L4,
            ..hdr
        };
        assert!(
            segmenter.segment(&frame, &udp_hdr, |_| {}).is_none(),
            "TCP frame announced as UDP"
        );
        let zero_mss = VnetHeader { gso_size: 0, ..hdr };
        assert!(segmenter.segment(&frame, &zero_mss, |_| {}).is_none());
    }
}
