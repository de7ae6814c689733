//! InSP (In-Switch Packet generation, seed 001) as a BEBA-compatible experimenter extension.
//! The wire layout, including our copy/checksum extension, is specified in `INSP.md`.

use crate::action::{emit_actions, parse_actions, Action};
use crate::buf::{Put, Reader};
use crate::error::OfpError;

/// BEBA experimenter id.
pub const INSP_EXPERIMENTER: u32 = 0xBEBA_BEBA;
/// exp_type of the BEBA base PKTTMP_MOD.
pub const PKTTMP_MOD_EXP_TYPE: u32 = 1;
/// exp_type of our PKTTMP_MOD with copy/checksum operations (see INSP.md).
pub const PKTTMP_MOD_EXT_EXP_TYPE: u32 = 2;
/// instr_type of the InSP instruction.
pub const INSP_INSTR_TYPE: u32 = 0;
/// exp_type of our timer trigger, TIMER_MOD (see INSP.md): numbered past BEBA's own
/// message types and error codes so that neither can ever collide with it.
pub const TIMER_MOD_EXP_TYPE: u32 = 0x100;

/// Experimenter error codes (under OFPET_EXPERIMENTER, experimenter 0xBEBABEBA): BEBA's, and
/// our timer trigger's from 0x100 on.
pub mod insp_error {
    pub const BAD_EXP_LEN: u16 = 7;
    pub const BAD_EXP_INSTRUCTION: u16 = 10;
    pub const PKTTMP_MOD_FAILED: u16 = 11;
    pub const PKTTMP_MOD_BAD_COMMAND: u16 = 12;
    pub const TIMER_MOD_FAILED: u16 = 0x100;
    /// A timer's period under the switch's minimum, or all timers together over its rate.
    pub const TIMER_RATE_EXCEEDED: u16 = 0x101;
    pub const TIMER_MOD_BAD_COMMAND: u16 = 0x102;
}

/// The experimenter error for a BEBA error code.
pub fn insp_error(code: u16) -> OfpError {
    OfpError::Experimenter {
        exp_type: code,
        experimenter: INSP_EXPERIMENTER,
    }
}

/// PKTTMP_MOD command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PktTmpCommand {
    Add = 0,
    Delete = 1,
}

/// Copies `len` bytes of the triggering packet at `src_offset` into the generated packet at
/// `dst_offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CopyOp {
    pub src_offset: u16,
    pub dst_offset: u16,
    pub len: u16,
}

/// Which Internet checksum a [`ChecksumOp`] computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ChecksumKind {
    /// IPv4 header checksum over `len` bytes at `start`.
    Ipv4Header = 0,
    /// ICMPv4 checksum (no pseudo-header).
    Icmpv4 = 1,
    /// ICMPv6 checksum with the IPv6 pseudo-header taken from the header at `ip_offset`.
    Icmpv6 = 2,
    /// TCP over IPv4 (pseudo-header from the IPv4 header at `ip_offset`).
    Tcpv4 = 3,
    /// UDP over IPv4 (pseudo-header from the IPv4 header at `ip_offset`).
    Udpv4 = 4,
    /// TCP over IPv6.
    Tcpv6 = 5,
    /// UDP over IPv6.
    Udpv6 = 6,
}

impl ChecksumKind {
    pub fn from_u8(v: u8) -> Option<Self> {
        use ChecksumKind::*;
        [Ipv4Header, Icmpv4, Icmpv6, Tcpv4, Udpv4, Tcpv6, Udpv6]
            .into_iter()
            .find(|k| *k as u8 == v)
    }
}

/// Computes a ones-complement checksum over the generated packet and stores it big-endian at
/// `dst_offset`. `len == 0` means "to the end of the packet". Applied after all copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChecksumOp {
    pub kind: ChecksumKind,
    pub start: u16,
    pub len: u16,
    pub dst_offset: u16,
    /// Offset of the IP header supplying the pseudo-header (ignored by `Ipv4Header`/`Icmpv4`).
    pub ip_offset: u16,
}

/// PKTTMP_MOD: install or delete a packet template.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PktTmpMod {
    pub command: PktTmpCommand,
    pub pkttmp_id: u32,
    /// Template bytes (empty for Delete).
    pub template: Vec<u8>,
    pub copy_ops: Vec<CopyOp>,
    pub checksum_ops: Vec<ChecksumOp>,
}

const OP_COPY: u16 = 1;
const OP_CHECKSUM: u16 = 2;
const OP_LEN: u16 = 16;
/// Copy source "the triggering packet", the only source seed 001 defines.
const COPY_SOURCE_PACKET: u8 = 0;

impl PktTmpMod {
    /// The exp_type this message is sent with: base layout unless it carries operations.
    pub fn exp_type(&self) -> u32 {
        if self.copy_ops.is_empty() && self.checksum_ops.is_empty() {
            PKTTMP_MOD_EXP_TYPE
        } else {
            PKTTMP_MOD_EXT_EXP_TYPE
        }
    }

    /// Appends the body after `experimenter | exp_type`; `msg_start` is the offset of the
    /// OpenFlow header in `out` (the template is padded relative to it).
    pub(crate) fn emit_body(&self, out: &mut Vec<u8>, msg_start: usize) {
        out.put_u8(self.command as u8);
        out.put_u8(0);
        out.put_u32(self.pkttmp_id);
        if self.exp_type() == PKTTMP_MOD_EXP_TYPE {
            out.put_zeros(4);
            out.extend_from_slice(&self.template);
            return;
        }
        out.put_u16(crate::buf::wire_len(self.template.len()));
        out.extend_from_slice(&self.template);
        out.pad_to_8(msg_start);
        for op in &self.copy_ops {
            out.put_u16(OP_COPY);
            out.put_u16(OP_LEN);
            out.put_u8(COPY_SOURCE_PACKET);
            out.put_u8(0);
            out.put_u16(op.src_offset);
            out.put_u16(op.dst_offset);
            out.put_u16(op.len);
            out.put_zeros(4);
        }
        for op in &self.checksum_ops {
            out.put_u16(OP_CHECKSUM);
            out.put_u16(OP_LEN);
            out.put_u8(op.kind as u8);
            out.put_u8(0);
            out.put_u16(op.start);
            out.put_u16(op.len);
            out.put_u16(op.dst_offset);
            out.put_u16(op.ip_offset);
            out.put_zeros(2);
        }
    }

    /// Parses the body after `experimenter | exp_type` (`body` starts at message offset 16).
    pub(crate) fn parse_body(exp_type: u32, body: &[u8]) -> Result<Self, OfpError> {
        let mut r = Reader::new(body, insp_error(insp_error::BAD_EXP_LEN));
        let command = match r.u8()? {
            0 => PktTmpCommand::Add,
            1 => PktTmpCommand::Delete,
            _ => return Err(insp_error(insp_error::PKTTMP_MOD_BAD_COMMAND)),
        };
        r.skip(1)?;
        let pkttmp_id = r.u32()?;
        if exp_type == PKTTMP_MOD_EXP_TYPE {
            r.skip(4)?;
            let template = r.rest().to_vec();
            if command == PktTmpCommand::Delete && !template.is_empty() {
                return Err(insp_error(insp_error::BAD_EXP_LEN));
            }
            return Ok(PktTmpMod {
                command,
                pkttmp_id,
                template,
                copy_ops: Vec::new(),
                checksum_ops: Vec::new(),
            });
        }
        let template_len = usize::from(r.u16()?);
        let template = r.bytes(template_len)?.to_vec();
        // The body starts at message offset 16, so the template ends at 24 + template_len.
        let used = 24 + template_len;
        r.skip(crate::buf::pad8(used) - used)?;
        let mut m = PktTmpMod {
            command,
            pkttmp_id,
            template,
            copy_ops: Vec::new(),
            checksum_ops: Vec::new(),
        };
        while !r.is_empty() {
            m.parse_op(&mut r)?;
        }
        let has_ops = m.copy_ops.len() + m.checksum_ops.len() > 0;
        if command != PktTmpCommand::Add || !has_ops {
            return Err(insp_error(insp_error::PKTTMP_MOD_FAILED));
        }
        Ok(m)
    }

    fn parse_op(&mut self, r: &mut Reader<'_>) -> Result<(), OfpError> {
        let op_type = r.u16()?;
        if r.u16()? != OP_LEN {
            return Err(insp_error(insp_error::BAD_EXP_LEN));
        }
        let mut b = Reader::new(r.bytes(12)?, insp_error(insp_error::BAD_EXP_LEN));
        match op_type {
            // Copies precede checksums on the wire, matching the order they are applied in.
            OP_COPY if self.checksum_ops.is_empty() => {
                if b.u8()? != COPY_SOURCE_PACKET {
                    return Err(insp_error(insp_error::PKTTMP_MOD_FAILED));
                }
                b.skip(1)?;
                self.copy_ops.push(CopyOp {
                    src_offset: b.u16()?,
                    dst_offset: b.u16()?,
                    len: b.u16()?,
                });
            }
            OP_CHECKSUM => {
                let kind = ChecksumKind::from_u8(b.u8()?)
                    .ok_or(insp_error(insp_error::PKTTMP_MOD_FAILED))?;
                b.skip(1)?;
                self.checksum_ops.push(ChecksumOp {
                    kind,
                    start: b.u16()?,
                    len: b.u16()?,
                    dst_offset: b.u16()?,
                    ip_offset: b.u16()?,
                });
            }
            _ => return Err(insp_error(insp_error::PKTTMP_MOD_FAILED)),
        }
        Ok(())
    }
}

/// The InSP instruction: on match, generate a packet from template `pkttmp_id` and apply
/// `actions` to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InspInstruction {
    pub pkttmp_id: u32,
    pub actions: Vec<Action>,
}

impl InspInstruction {
    /// Appends everything after the instruction's `type | len | experimenter`.
    pub(crate) fn emit_body(&self, out: &mut Vec<u8>) {
        out.put_u32(INSP_INSTR_TYPE);
        out.put_zeros(4);
        out.put_u32(self.pkttmp_id);
        out.put_zeros(4);
        emit_actions(&self.actions, out);
    }

    /// Parses everything after `type | len | experimenter`.
    pub(crate) fn parse_body(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        if r.u32()? != INSP_INSTR_TYPE {
            return Err(insp_error(insp_error::BAD_EXP_INSTRUCTION));
        }
        r.skip(4)?;
        let pkttmp_id = r.u32()?;
        r.skip(4)?;
        let actions = parse_actions(r.rest())?;
        Ok(InspInstruction { pkttmp_id, actions })
    }
}

/// TIMER_MOD command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum TimerCommand {
    /// Installs a timer, or replaces the one installed under its id.
    Add = 0,
    Delete = 1,
}

/// The timer id that DELETE reads as "every timer".
pub const TIMER_ALL: u32 = 0xffff_ffff;

/// TIMER_MOD: a timer trigger, our extension of seed 001's triggers (its "future work"):
/// every `period_us` microseconds the switch generates a packet from template `pkttmp_id`
/// and applies `actions` to it as to a packet-out arriving on `in_port`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TimerMod {
    pub command: TimerCommand,
    pub timer_id: u32,
    pub pkttmp_id: u32,
    pub period_us: u32,
    /// The ingress port the generated packet has (OFPP_CONTROLLER for none), as in PACKET_OUT.
    pub in_port: u32,
    pub actions: Vec<Action>,
}

/// TIMER_MOD's bytes after `experimenter | exp_type`, up to the actions.
const TIMER_MOD_FIXED_LEN: usize = 24;

impl TimerMod {
    /// Appends the body after `experimenter | exp_type`.
    pub(crate) fn emit_body(&self, out: &mut Vec<u8>) {
        out.put_u8(self.command as u8);
        out.put_u8(0);
        out.put_u32(self.timer_id);
        out.put_zeros(2);
        out.put_u32(self.pkttmp_id);
        out.put_u32(self.period_us);
        out.put_u32(self.in_port);
        out.put_zeros(4);
        emit_actions(&self.actions, out);
    }

    /// Parses the body after `experimenter | exp_type` (`body` starts at message offset 16).
    pub(crate) fn parse_body(body: &[u8]) -> Result<Self, OfpError> {
        if body.len() < TIMER_MOD_FIXED_LEN {
            return Err(insp_error(insp_error::BAD_EXP_LEN));
        }
        let mut r = Reader::new(body, insp_error(insp_error::BAD_EXP_LEN));
        let command = match r.u8()? {
            0 => TimerCommand::Add,
            1 => TimerCommand::Delete,
            _ => return Err(insp_error(insp_error::TIMER_MOD_BAD_COMMAND)),
        };
        r.skip(1)?;
        let timer_id = r.u32()?;
        r.skip(2)?;
        let pkttmp_id = r.u32()?;
        let period_us = r.u32()?;
        let in_port = r.u32()?;
        r.skip(4)?;
        let actions = parse_actions(r.rest())?;
        if command == TimerCommand::Delete && !actions.is_empty() {
            return Err(insp_error(insp_error::BAD_EXP_LEN));
        }
        Ok(TimerMod {
            command,
            timer_id,
            pkttmp_id,
            period_us,
            in_port,
            actions,
        })
    }
}

/// exp_type of our experimenter multipart listing the packet templates (see INSP.md).
pub const PKTTMP_STATS_EXP_TYPE: u32 = 3;
/// Most records in one PKTTMP_STATS reply; a listing continues from the last id + 1.
pub const PKTTMP_STATS_MAX_RECORDS: usize = 1024;
const PKTTMP_STATS_RECORD_LEN: usize = 40;

/// One template in a PKTTMP_STATS reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PktTmpStats {
    pub pkttmp_id: u32,
    /// Bytes of every generated packet.
    pub len: u16,
    pub copy_ops: u16,
    pub checksum_ops: u16,
    /// Flow entries whose InSP instruction names this template.
    pub flow_count: u32,
    /// Packets generated from it.
    pub generated: u64,
    /// Triggers too short for a copy operation (nothing generated).
    pub trigger_errors: u64,
    /// Bytes the entry holds in the switch.
    pub memory: u32,
}

impl PktTmpStats {
    /// The request body (after `experimenter | exp_type`): templates with id >= `first_id`.
    pub fn request_data(first_id: u32) -> Vec<u8> {
        let mut out = Vec::with_capacity(8);
        out.put_u32(first_id);
        out.put_zeros(4);
        out
    }

    /// `first_id` of a request body, or BAD_LEN.
    pub fn parse_request(data: &[u8]) -> Result<u32, OfpError> {
        if data.len() != 8 {
            return Err(OfpError::BAD_LEN);
        }
        Reader::new(data, OfpError::BAD_LEN).u32()
    }

    pub fn emit_records(records: &[PktTmpStats]) -> Vec<u8> {
        let mut out = Vec::with_capacity(records.len() * PKTTMP_STATS_RECORD_LEN);
        for s in records {
            out.put_u32(s.pkttmp_id);
            out.put_u16(s.len);
            out.put_u16(s.copy_ops);
            out.put_u16(s.checksum_ops);
            out.put_zeros(2);
            out.put_u32(s.flow_count);
            out.put_u64(s.generated);
            out.put_u64(s.trigger_errors);
            out.put_u32(s.memory);
            out.put_zeros(4);
        }
        out
    }

    pub fn parse_records(data: &[u8]) -> Result<Vec<PktTmpStats>, OfpError> {
        if !data.len().is_multiple_of(PKTTMP_STATS_RECORD_LEN) {
            return Err(OfpError::BAD_LEN);
        }
        let mut r = Reader::new(data, OfpError::BAD_LEN);
        let mut out = Vec::new();
        while !r.is_empty() {
            let pkttmp_id = r.u32()?;
            let len = r.u16()?;
            let copy_ops = r.u16()?;
            let checksum_ops = r.u16()?;
            r.skip(2)?;
            let flow_count = r.u32()?;
            let generated = r.u64()?;
            let trigger_errors = r.u64()?;
            let memory = r.u32()?;
            r.skip(4)?;
            out.push(PktTmpStats {
                pkttmp_id,
                len,
                copy_ops,
                checksum_ops,
                flow_count,
                generated,
                trigger_errors,
                memory,
            });
        }
        Ok(out)
    }
}
