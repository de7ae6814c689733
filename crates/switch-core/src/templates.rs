//! InSP packet templates (seed 001 section 3): validation of PKTTMP_MOD and its translation
//! into the datapath's template.

use std::collections::BTreeMap;
use std::sync::Arc;

use dataplane::model::Op;
use dataplane::template::{ChecksumKind, ChecksumOp, CopyOp, PacketTemplate};
use ofp::{OfpError, PktTmpCommand, PktTmpMod};

const BEBA_EXPERIMENTER: u32 = 0xBEBA_BEBA;
const PKTTMP_MOD_FAILED: u16 = 11;

fn failed() -> OfpError {
    OfpError::Experimenter {
        exp_type: PKTTMP_MOD_FAILED,
        experimenter: BEBA_EXPERIMENTER,
    }
}

/// The datapath op for a PKTTMP_MOD, or the BEBA error: adding an existing id or deleting an
/// unknown one fails with PKTTMP_MOD_FAILED, as does a template whose operations fall outside it.
pub fn template_op(m: &PktTmpMod, existing: &BTreeMap<u32, PktTmpMod>) -> Result<Op, OfpError> {
    match m.command {
        PktTmpCommand::Delete => {
            if !existing.contains_key(&m.pkttmp_id) {
                return Err(failed());
            }
            Ok(Op::RemoveTemplate { id: m.pkttmp_id })
        }
        PktTmpCommand::Add => {
            if existing.contains_key(&m.pkttmp_id) {
                return Err(failed());
            }
            let template = PacketTemplate::new(
                m.template.clone(),
                m.copy_ops
                    .iter()
                    .map(|c| CopyOp {
                        src_offset: usize::from(c.src_offset),
                        dst_offset: usize::from(c.dst_offset),
                        len: usize::from(c.len),
                    })
                    .collect(),
                m.checksum_ops
                    .iter()
                    .map(|c| checksum_op(c, m.template.len()))
                    .collect(),
            )
            .map_err(|_| failed())?;
            Ok(Op::SetTemplate {
                id: m.pkttmp_id,
                template: Arc::new(template),
            })
        }
    }
}

/// The datapath's checksum operation for a wire one: `len` 0 covers the generated packet from
/// `start` to its end (INSP.md); a `start` past the end keeps 0 and fails validation.
fn checksum_op(c: &ofp::ChecksumOp, template_len: usize) -> ChecksumOp {
    let start = usize::from(c.start);
    let len = match c.len {
        0 => template_len.saturating_sub(start),
        n => usize::from(n),
    };
    ChecksumOp {
        kind: checksum_kind(c.kind),
        start,
        len,
        dst_offset: usize::from(c.dst_offset),
        ip_offset: usize::from(c.ip_offset),
    }
}

fn checksum_kind(kind: ofp::ChecksumKind) -> ChecksumKind {
    match kind {
        ofp::ChecksumKind::Ipv4Header => ChecksumKind::Ipv4Header,
        ofp::ChecksumKind::Icmpv4 => ChecksumKind::Icmpv4,
        ofp::ChecksumKind::Icmpv6 => ChecksumKind::Icmpv6,
        ofp::ChecksumKind::Tcpv4 => ChecksumKind::Tcpv4,
        ofp::ChecksumKind::Udpv4 => ChecksumKind::Udpv4,
        ofp::ChecksumKind::Tcpv6 => ChecksumKind::Tcpv6,
        ofp::ChecksumKind::Udpv6 => ChecksumKind::Udpv6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 1071 sum written out word by word, independent of the datapath's checksum code:
    /// a receiver's sum over bytes whose checksum is right is 0xffff.
    fn ones_complement_sum(chunks: &[&[u8]]) -> u16 {
        let mut sum: u32 = 0;
        for chunk in chunks {
            for pair in chunk.chunks(2) {
                sum += u32::from(pair[0]) << 8 | pair.get(1).copied().map_or(0, u32::from);
                sum = (sum & 0xffff) + (sum >> 16);
            }
        }
        sum as u16
    }

    fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0x45, 0];
        p.extend_from_slice(&(20 + payload.len() as u16).to_be_bytes());
        p.extend_from_slice(&[0, 0, 0, 0, 64, proto, 0, 0]);
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p.extend_from_slice(payload);
        p
    }

    fn ether(payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00];
        p.extend_from_slice(payload);
        p
    }

    fn sum_op(kind: ofp::ChecksumKind, start: u16, len: u16, dst: u16, ip: u16) -> ofp::ChecksumOp {
        ofp::ChecksumOp {
            kind,
            start,
            len,
            dst_offset: dst,
            ip_offset: ip,
        }
    }

    fn add(template: Vec<u8>, checksum_ops: Vec<ofp::ChecksumOp>) -> Result<Op, OfpError> {
        let m = PktTmpMod {
            command: PktTmpCommand::Add,
            pkttmp_id: 7,
            template,
            copy_ops: vec![],
            checksum_ops,
        };
        template_op(&m, &BTreeMap::new())
    }

    /// The generated packet of an Add (the template has no copy operations).
    fn generate(op: Result<Op, OfpError>) -> Vec<u8> {
        let Ok(Op::SetTemplate { template, .. }) = op else {
            panic!("not a SetTemplate: {op:?}");
        };
        let mut out = vec![0u8; template.len()];
        assert_eq!(template.instantiate(&[], &mut out), Ok(out.len()));
        out
    }

    #[test]
    fn len_zero_covers_to_the_end_of_the_packet() {
        let echo_reply = [0, 0, 0, 0, 0x12, 0x34, 0, 1, b'p', b'i', b'n', b'g', b'!'];
        let frame = ether(&ipv4([10, 0, 0, 1], [10, 0, 0, 2], 1, &echo_reply));
        let out = generate(add(
            frame,
            vec![
                sum_op(ofp::ChecksumKind::Ipv4Header, 14, 20, 24, 0),
                sum_op(ofp::ChecksumKind::Icmpv4, 34, 0, 36, 0),
            ],
        ));
        assert_eq!(ones_complement_sum(&[&out[14..34]]), 0xffff, "IPv4 header");
        assert_eq!(
            ones_complement_sum(&[&out[34..]]),
            0xffff,
            "ICMP (odd length)"
        );
        assert_ne!(&out[36..38], &[0xff, 0xff]);
    }

    #[test]
    fn len_zero_with_start_past_the_end_is_refused() {
        let frame = ether(&ipv4([10, 0, 0, 1], [10, 0, 0, 2], 1, &[0; 8]));
        let op = add(frame, vec![sum_op(ofp::ChecksumKind::Icmpv4, 43, 0, 36, 0)]);
        assert_eq!(op.err(), Some(failed()));
    }

    #[test]
    fn ip_offset_selects_the_inner_header_of_a_tunnel() {
        let udp = [0x30, 0x39, 0x00, 0x35, 0, 11, 0, 0, 1, 2, 3];
        let inner = ipv4([192, 168, 1, 1], [192, 168, 1, 2], 17, &udp);
        let frame = ether(&ipv4([10, 0, 0, 1], [10, 0, 0, 2], 4, &inner));
        let out = generate(add(
            frame.clone(),
            vec![sum_op(ofp::ChecksumKind::Udpv4, 54, 0, 60, 34)],
        ));
        let mut pseudo = out[46..54].to_vec();
        pseudo.extend_from_slice(&[0, 17, 0, 11]);
        assert_eq!(ones_complement_sum(&[&pseudo, &out[54..]]), 0xffff);
        // An ip_offset at no IPv4 header is the controller's mistake, answered at once.
        let op = add(frame, vec![sum_op(ofp::ChecksumKind::Udpv4, 54, 0, 60, 0)]);
        assert_eq!(op.err(), Some(failed()));
    }
}
