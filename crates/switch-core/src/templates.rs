//! InSP packet templates (seed 001 section 3): validation of PKTTMP_MOD and its translation
//! into the datapath's template.

use std::collections::BTreeMap;
use std::sync::Arc;

use dataplane::model::Op;
use dataplane::template::{ChecksumKind, ChecksumOp, CopyOp, PacketTemplate};
use ofp::{OfpError, PktTmpCommand, PktTmpMod};

const BEBA_EXPERIMENTER: u32 = 0xBEBA_BEBA;
const PKTTMP_MOD_FAILED: u16 = 11;

/// Most templates a switch holds (seed 001 section 5 expects thousands of small ones).
pub const MAX_TEMPLATES: usize = 65_536;
/// Most memory the templates take, all together, as the switch accounts for it (PKTTMP_STATS
/// `memory`: template bytes, operations and bookkeeping), so that neither large templates
/// nor many operations on empty ones exhaust the switch.
pub const MAX_TEMPLATE_MEMORY: usize = 64 << 20;
/// Longest template: a generated packet must fit the datapath's frame buffers.
pub const MAX_TEMPLATE_LEN: usize = dataplane::batch::DEFAULT_MAX_FRAME;

fn failed() -> OfpError {
    OfpError::Experimenter {
        exp_type: PKTTMP_MOD_FAILED,
        experimenter: BEBA_EXPERIMENTER,
    }
}

/// One installed template as the operator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateInfo {
    pub pkttmp_id: u32,
    /// Bytes of every generated packet.
    pub len: usize,
    pub copy_ops: usize,
    pub checksum_ops: usize,
    /// Bytes this entry holds in the switch: the controller's message kept for replay and
    /// dumps, and the datapath's validated template.
    pub memory: usize,
}

/// The packet template table: what the controller installed, the memory it takes, and the
/// datapath's view of each template.
#[derive(Default)]
pub struct TemplateTable {
    entries: BTreeMap<u32, (PktTmpMod, Arc<PacketTemplate>)>,
    memory: usize,
}

impl TemplateTable {
    pub fn contains(&self, pkttmp_id: u32) -> bool {
        self.entries.contains_key(&pkttmp_id)
    }

    /// Whether template `pkttmp_id` is installed and generates packets without a trigger
    /// (it has no copy operations), as a timer needs.
    pub fn stands_alone(&self, pkttmp_id: u32) -> bool {
        self.entries
            .get(&pkttmp_id)
            .is_some_and(|(m, _)| m.copy_ops.is_empty())
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Applies a PKTTMP_MOD; returns the datapath op, or None when nothing changes.
    ///
    /// An ADD of an id already installed with the same content is accepted and changes
    /// nothing, so a controller that reconnects can push its templates again; with other
    /// content it fails (delete first). A DELETE of an unknown id, or of one that `in_use`
    /// flow entries or timers still reference, fails. An ADD past [`MAX_TEMPLATES`],
    /// [`MAX_TEMPLATE_MEMORY`] or [`MAX_TEMPLATE_LEN`], or whose operations fall outside the
    /// template, fails. Every failure is PKTTMP_MOD_FAILED and leaves the table as it was.
    pub fn apply(&mut self, m: &PktTmpMod, in_use: usize) -> Result<Option<Op>, OfpError> {
        match m.command {
            PktTmpCommand::Delete => {
                if in_use > 0 {
                    return Err(failed());
                }
                let (old, template) = self.entries.remove(&m.pkttmp_id).ok_or_else(failed)?;
                self.memory -= memory(&old, &template);
                Ok(Some(Op::RemoveTemplate { id: m.pkttmp_id }))
            }
            PktTmpCommand::Add => {
                if let Some((old, _)) = self.entries.get(&m.pkttmp_id) {
                    return if old == m { Ok(None) } else { Err(failed()) };
                }
                let full = self.entries.len() >= MAX_TEMPLATES;
                if full || m.template.len() > MAX_TEMPLATE_LEN {
                    return Err(failed());
                }
                let template = Arc::new(datapath_template(m)?);
                let kept = m.clone();
                let size = memory(&kept, &template);
                if self.memory + size > MAX_TEMPLATE_MEMORY {
                    return Err(failed());
                }
                self.entries
                    .insert(m.pkttmp_id, (kept, Arc::clone(&template)));
                self.memory += size;
                Ok(Some(Op::SetTemplate {
                    id: m.pkttmp_id,
                    template,
                }))
            }
        }
    }

    /// Every template, by id, with what the datapath generated from it.
    pub fn list(&self) -> impl Iterator<Item = (TemplateInfo, &PacketTemplate)> {
        self.entries.iter().map(|(&pkttmp_id, (m, t))| {
            let info = TemplateInfo {
                pkttmp_id,
                len: m.template.len(),
                copy_ops: m.copy_ops.len(),
                checksum_ops: m.checksum_ops.len(),
                memory: memory(m, t),
            };
            (info, &**t)
        })
    }
}

/// Heap and inline bytes of one entry: both copies of the template bytes and operations.
fn memory(m: &PktTmpMod, t: &PacketTemplate) -> usize {
    use std::mem::size_of;
    let wire = size_of::<PktTmpMod>()
        + m.template.capacity()
        + m.copy_ops.capacity() * size_of::<ofp::CopyOp>()
        + m.checksum_ops.capacity() * size_of::<ofp::ChecksumOp>();
    let entry = size_of::<u32>() + size_of::<(PktTmpMod, Arc<PacketTemplate>)>();
    wire + entry + t.memory()
}

/// The datapath's validated template for an ADD, or PKTTMP_MOD_FAILED.
fn datapath_template(m: &PktTmpMod) -> Result<PacketTemplate, OfpError> {
    PacketTemplate::new(
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
    .map_err(|_| failed())
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
        let op = TemplateTable::default().apply(&m, 0)?;
        Ok(op.expect("an ADD into an empty table changes it"))
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
