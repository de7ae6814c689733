//! Internet checksums (RFC 1071): full ones'-complement sums, IPv4 header and pseudo-header
//! aware TCP/UDP/ICMP checksums, and RFC 1624 incremental updates for set-field actions; and
//! the CRC32c (Castagnoli) of SCTP (RFC 4960 appendix B).
//!
//! A "sum" is an unfolded ones'-complement accumulator (`u64`); fold it with [`fold`] and
//! complement it to get the checksum field. All functions are total: they take any bytes.

use crate::wire::ip::protocol;
use crate::wire::{ipv4, sctp, udp};

/// IP protocol numbers whose checksum covers a pseudo-header.
pub const IPPROTO_TCP: u8 = protocol::TCP;
/// UDP.
pub const IPPROTO_UDP: u8 = protocol::UDP;
/// ICMPv6.
pub const IPPROTO_ICMPV6: u8 = protocol::ICMPV6;

/// Adds `data` (as big-endian 16-bit words, an odd last byte padded with zero) to `acc`.
#[inline]
pub fn add(mut acc: u64, data: &[u8]) -> u64 {
    // 2^16 == 1 (mod 0xffff), so summing 32-bit big-endian words is congruent to summing
    // 16-bit words; the u64 accumulator cannot overflow for any frame this crate handles.
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        acc += u64::from(u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
    }
    let rest = words.remainder();
    let mut tail = [0u8; 4];
    tail[..rest.len()].copy_from_slice(rest);
    acc + u64::from(u32::from_be_bytes(tail))
}

/// Folds an accumulator to 16 bits with end-around carry.
#[inline]
pub fn fold(mut acc: u64) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The Internet checksum of `data` (the value to store in a zeroed checksum field).
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !fold(add(0, data))
}

/// IPv4 header checksum of `header` (the whole header with options), skipping the checksum
/// field itself. `None` if the header is shorter than 20 bytes.
pub fn ipv4_header(header: &[u8]) -> Option<u16> {
    let before = header.get(..ipv4::field::CHECKSUM.start)?;
    let after = header.get(ipv4::field::CHECKSUM.end..)?;
    if header.len() < ipv4::HEADER_LEN {
        return None;
    }
    Some(!fold(add(add(0, before), after)))
}

/// Pseudo-header sum for IPv4 (RFC 793 / 768).
#[inline]
pub fn pseudo_v4(src: u32, dst: u32, proto: u8, l4_len: u16) -> u64 {
    u64::from(src) + u64::from(dst) + u64::from(proto) + u64::from(l4_len)
}

/// Pseudo-header sum for IPv6 (RFC 8200 section 8.1).
#[inline]
pub fn pseudo_v6(src: &[u8; 16], dst: &[u8; 16], proto: u8, l4_len: u32) -> u64 {
    add(add(0, src), dst) + u64::from(proto) + u64::from(l4_len)
}

/// Transport checksum of `segment` with its checksum field at `csum_at` ignored, given the
/// pseudo-header sum (0 for ICMPv4, which has none). UDP's result 0 is sent as 0xffff
/// (RFC 768: 0 means "no checksum"). `None` if the field is not inside the segment.
pub fn transport(segment: &[u8], csum_at: usize, pseudo: u64, proto: u8) -> Option<u16> {
    let before = segment.get(..csum_at)?;
    let after = segment.get(csum_at.checked_add(2)?..)?;
    // Keep 16-bit word alignment: the field sits at an even offset in every protocol.
    if !csum_at.is_multiple_of(2) {
        return None;
    }
    let c = !fold(add(add(pseudo, before), after));
    Some(if proto == IPPROTO_UDP && c == 0 {
        udp::CHECKSUM_OF_ZERO
    } else {
        c
    })
}

/// [`fold`] for a sum below 2^32 (a handful of 16-bit words): two steps, no loop.
#[inline(always)]
fn fold32(acc: u32) -> u16 {
    let acc = (acc & 0xffff) + (acc >> 16);
    ((acc & 0xffff) + (acc >> 16)) as u16
}

/// RFC 1624 eqn. 3: checksum after one 16-bit word of the covered data changes.
#[inline]
pub fn update16(csum: u16, old: u16, new: u16) -> u16 {
    !fold32(u32::from(!csum) + u32::from(!old) + u32::from(new))
}

/// Checksum after a 32-bit (word-aligned) field changes, e.g. an IPv4 address.
#[inline]
pub fn update32(csum: u16, old: u32, new: u32) -> u16 {
    let old_sum = (!(old >> 16) & 0xffff) + (!old & 0xffff);
    let new_sum = (new >> 16) + (new & 0xffff);
    !fold32(u32::from(!csum) + old_sum + new_sum)
}

/// Checksum after a 128-bit (word-aligned) field changes, e.g. an IPv6 address.
#[inline]
pub fn update128(csum: u16, old: &[u8; 16], new: &[u8; 16]) -> u16 {
    update_bytes(csum, old, new)
}

/// Checksum after an even-length, word-aligned run of bytes changes from `old` to `new`
/// (same length; extra bytes of the longer one are ignored).
#[inline]
pub fn update_bytes(csum: u16, old: &[u8], new: &[u8]) -> u16 {
    let mut acc = u64::from(!csum);
    for (o, n) in old.chunks_exact(2).zip(new.chunks_exact(2)) {
        acc += u64::from(!u16::from_be_bytes([o[0], o[1]]));
        acc += u64::from(u16::from_be_bytes([n[0], n[1]]));
    }
    !fold(acc)
}

/// Checksum after one byte changes; `high` when the byte is the first of its 16-bit word
/// (an even offset from the start of the covered data), like the IPv4 TTL.
#[inline]
pub fn update8(csum: u16, old: u8, new: u8, high: bool) -> u16 {
    let shift = if high { 8 } else { 0 };
    update16(csum, u16::from(old) << shift, u16::from(new) << shift)
}

/// UDP-over-IPv4 rule for an incremental update: a 0 field means "no checksum" and stays
/// 0; a computed 0 is sent as 0xffff.
#[inline]
pub fn udp_fixup(old_csum: u16, updated: u16) -> u16 {
    match (old_csum, updated) {
        (0, _) => 0,
        (_, 0) => udp::CHECKSUM_OF_ZERO,
        (_, c) => c,
    }
}

/// Reflected CRC32c polynomial (Castagnoli, RFC 3309).
const CRC32C_POLY: u32 = 0x82f6_3b78;

/// Slicing-by-8 tables: `CRC32C_TABLES[k][b]` is the CRC register after byte `b` followed by
/// `k` zero bytes, so eight table look-ups advance the CRC by eight bytes.
static CRC32C_TABLES: [[u32; 256]; 8] = crc32c_tables();

const fn crc32c_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut b = 0;
    while b < 256 {
        let mut crc = b as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ CRC32C_POLY
            } else {
                crc >> 1
            };
            bit += 1;
        }
        t[0][b] = crc;
        b += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut b = 0;
        while b < 256 {
            let prev = t[k - 1][b];
            t[k][b] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            b += 1;
        }
        k += 1;
    }
    t
}

/// Advances a raw CRC32c register (no pre- or post-inversion) over `data`.
fn crc32c_raw(mut crc: u32, data: &[u8]) -> u32 {
    let [t0, t1, t2, t3, t4, t5, t6, t7] = &CRC32C_TABLES;
    let mut blocks = data.chunks_exact(8);
    for b in &mut blocks {
        let lo = crc ^ u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        crc = t7[(lo & 0xff) as usize]
            ^ t6[((lo >> 8) & 0xff) as usize]
            ^ t5[((lo >> 16) & 0xff) as usize]
            ^ t4[(lo >> 24) as usize]
            ^ t3[usize::from(b[4])]
            ^ t2[usize::from(b[5])]
            ^ t1[usize::from(b[6])]
            ^ t0[usize::from(b[7])];
    }
    for &b in blocks.remainder() {
        crc = (crc >> 8) ^ t0[((crc ^ u32::from(b)) & 0xff) as usize];
    }
    crc
}

/// CRC32c of `prefix` followed by `data`, given `prefix`'s CRC32c (0 for an empty prefix):
/// `crc32c_append(crc32c_append(0, a), b)` is the CRC32c of `a` then `b`.
#[inline]
pub fn crc32c_append(prefix_crc: u32, data: &[u8]) -> u32 {
    !crc32c_raw(!prefix_crc, data)
}

/// CRC32c (Castagnoli) of `data`.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c_append(0, data)
}

/// The SCTP checksum of a whole SCTP packet (common header and chunks): the CRC32c computed
/// with the checksum field taken as zero. SCTP stores it least significant byte
/// first, i.e. as `to_le_bytes()`. `None` if `packet` is shorter than the common header.
pub fn sctp(packet: &[u8]) -> Option<u32> {
    let head = packet.get(..sctp::field::CHECKSUM.start)?;
    let rest = packet.get(sctp::field::CHECKSUM.end..)?;
    let field = [0; sctp::field::CHECKSUM.end - sctp::field::CHECKSUM.start];
    Some(crc32c_append(crc32c_append(crc32c(head), &field), rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// 0x0000 and 0xffff are the two ones'-complement zeros.
    fn same(a: u16, b: u16) -> bool {
        a == b || (a | b == 0xffff && (a == 0 || b == 0))
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3 example words 0001 f203 f4f5 f6f7: sum ddf2, checksum 220d.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(add(0, &data)), 0xddf2);
        assert_eq!(checksum(&data), 0x220d);
        assert_eq!(checksum(&[0x12]), !0x1200);
    }

    #[test]
    fn known_ipv4_header() {
        // A classic capture: 4500 0073 0000 4000 4011 [b861] c0a8 0001 c0a8 00c7.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(ipv4_header(&h), Some(0xb861));
        assert_eq!(
            checksum(&h),
            0,
            "a header with a valid checksum sums to zero"
        );
        assert_eq!(ipv4_header(&h[..19]), None);
    }

    #[test]
    fn udp_zero_is_sent_as_all_ones() {
        // Segment whose checksum field must be the other zero.
        let seg = [0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00];
        let pseudo = 0u64;
        assert_eq!(transport(&seg, 6, pseudo, IPPROTO_UDP), Some(0xffff));
        assert_eq!(transport(&seg, 6, pseudo, IPPROTO_TCP), Some(0));
        assert_eq!(transport(&seg, 7, pseudo, IPPROTO_UDP), None);
        assert_eq!(transport(&seg, 8, pseudo, IPPROTO_UDP), None);
        assert_eq!(udp_fixup(0, 0x1234), 0);
        assert_eq!(udp_fixup(0x1111, 0), 0xffff);
    }

    #[test]
    fn crc32c_known_answers() {
        // RFC 3720 appendix B.4 test vectors and the common "123456789" check value.
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(crc32c(&[0xffu8; 32]), 0x62a8_ab43);
        let ascending: Vec<u8> = (0u8..32).collect();
        assert_eq!(crc32c(&ascending), 0x46dd_794e);
        let descending: Vec<u8> = (0u8..32).rev().collect();
        assert_eq!(crc32c(&descending), 0x113f_db5c);
        assert_eq!(crc32c(&[]), 0);
    }

    #[test]
    fn sctp_checksum_of_a_real_packet() {
        // SCTP common header + DATA chunk as the Linux stack sends it (CRC32c 0xa4e9ed7d,
        // sent least significant byte first: 7d ed e9 a4).
        let pkt = [
            0x30, 0x39, 0x08, 0xae, 0, 0, 0, 0, 0x7d, 0xed, 0xe9, 0xa4, 0, 0, 0, 0x18, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
        ];
        assert_eq!(
            sctp(&pkt).map(u32::to_le_bytes),
            Some([0x7d, 0xed, 0xe9, 0xa4])
        );
        assert_eq!(sctp(&pkt[..11]), None);
    }

    /// Bit-at-a-time CRC32c, the definition the table-driven one must agree with.
    fn crc32c_bitwise(data: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in data {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ CRC32C_POLY
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    fn word(d: &[u8], at: usize) -> u16 {
        u16::from_be_bytes([d[at], d[at + 1]])
    }

    proptest! {
        #[test]
        fn update16_matches_recompute(mut data in prop::collection::vec(any::<u8>(), 2..64), at in 0usize..32, new in any::<u16>()) {
            let at = (at % (data.len() / 2)) * 2;
            let before = checksum(&data);
            let old = word(&data, at);
            data[at..at + 2].copy_from_slice(&new.to_be_bytes());
            prop_assert!(same(update16(before, old, new), checksum(&data)));
        }

        #[test]
        fn update32_and_128_match_recompute(mut data in prop::collection::vec(any::<u8>(), 16..80), new32 in any::<u32>(), new128 in any::<[u8; 16]>()) {
            let before = checksum(&data);
            let old32 = u32::from_be_bytes([data[4], data[5], data[6], data[7]]);
            data[4..8].copy_from_slice(&new32.to_be_bytes());
            let mid = checksum(&data);
            prop_assert!(same(update32(before, old32, new32), mid));
            let mut old128 = [0u8; 16];
            old128.copy_from_slice(&data[..16]);
            data[..16].copy_from_slice(&new128);
            prop_assert!(same(update128(mid, &old128, &new128), checksum(&data)));
        }

        #[test]
        fn update8_matches_recompute(mut data in prop::collection::vec(any::<u8>(), 2..40), at in 0usize..40, new in any::<u8>()) {
            let at = at % data.len();
            let before = checksum(&data);
            let old = data[at];
            data[at] = new;
            prop_assert!(same(update8(before, old, new, at % 2 == 0), checksum(&data)));
        }

        #[test]
        fn transport_sum_verifies_with_pseudo_header(src in any::<u32>(), dst in any::<u32>(), mut seg in prop::collection::vec(any::<u8>(), 8..100)) {
            let len = seg.len() as u16;
            let pseudo = pseudo_v4(src, dst, IPPROTO_TCP, len);
            let c = transport(&seg, 6, pseudo, IPPROTO_TCP).unwrap_or_default();
            seg[6..8].copy_from_slice(&c.to_be_bytes());
            prop_assert!(same(!fold(add(pseudo, &seg)), 0));
            let v6 = pseudo_v6(&[1; 16], &[2; 16], IPPROTO_ICMPV6, u32::from(len));
            let c6 = transport(&seg, 2, v6, IPPROTO_ICMPV6).unwrap_or_default();
            seg[2..4].copy_from_slice(&c6.to_be_bytes());
            prop_assert!(same(!fold(add(v6, &seg)), 0));
        }

        #[test]
        fn crc32c_matches_bitwise_and_appends(data in prop::collection::vec(any::<u8>(), 0..100), cut in 0usize..100) {
            let cut = cut.min(data.len());
            prop_assert_eq!(crc32c(&data), crc32c_bitwise(&data));
            prop_assert_eq!(crc32c_append(crc32c(&data[..cut]), &data[cut..]), crc32c(&data));
        }

        #[test]
        fn ipv4_header_checksum_verifies(mut h in prop::collection::vec(any::<u8>(), 20..60)) {
            let c = ipv4_header(&h).unwrap_or_default();
            h[10..12].copy_from_slice(&c.to_be_bytes());
            prop_assert!(same(checksum(&h), 0));
        }
    }
}
