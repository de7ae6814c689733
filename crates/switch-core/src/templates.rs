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
                    .map(|c| ChecksumOp {
                        kind: checksum_kind(c.kind),
                        start: usize::from(c.start),
                        len: usize::from(c.len),
                        dst_offset: usize::from(c.dst_offset),
                    })
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

/// The datapath finds the pseudo-header's IP header in the template itself, so the wire's
/// IPv4/IPv6 variants of TCP and UDP (and their `ip_offset`) collapse into one kind each.
fn checksum_kind(kind: ofp::ChecksumKind) -> ChecksumKind {
    match kind {
        ofp::ChecksumKind::Ipv4Header => ChecksumKind::Ipv4Header,
        ofp::ChecksumKind::Icmpv4 => ChecksumKind::Icmpv4,
        ofp::ChecksumKind::Icmpv6 => ChecksumKind::Icmpv6,
        ofp::ChecksumKind::Tcpv4 | ofp::ChecksumKind::Tcpv6 => ChecksumKind::Tcp,
        ofp::ChecksumKind::Udpv4 | ofp::ChecksumKind::Udpv6 => ChecksumKind::Udp,
    }
}
