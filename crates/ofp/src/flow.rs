//! Flow messages: FLOW_MOD, FLOW_REMOVED, PACKET_IN, PACKET_OUT.

use crate::action::{emit_actions, parse_actions, Action};
use crate::buf::{len_placeholder, wire_len, Put, Reader};
use crate::error::{FlowModFailedCode, OfpError};
use crate::instruction::{emit_instructions, parse_instructions, Instruction};
use crate::oxm::Match;

/// FLOW_MOD command (`OFPFC_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FlowModCommand {
    Add = 0,
    Modify = 1,
    ModifyStrict = 2,
    Delete = 3,
    DeleteStrict = 4,
}

impl FlowModCommand {
    pub fn from_u8(v: u8) -> Option<Self> {
        use FlowModCommand::*;
        [Add, Modify, ModifyStrict, Delete, DeleteStrict]
            .into_iter()
            .find(|c| *c as u8 == v)
    }
}

/// FLOW_MOD / flow stats flags (`OFPFF_*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FlowModFlags(pub u16);

impl FlowModFlags {
    pub const SEND_FLOW_REM: FlowModFlags = FlowModFlags(1 << 0);
    pub const CHECK_OVERLAP: FlowModFlags = FlowModFlags(1 << 1);
    pub const RESET_COUNTS: FlowModFlags = FlowModFlags(1 << 2);
    pub const NO_PKT_COUNTS: FlowModFlags = FlowModFlags(1 << 3);
    pub const NO_BYT_COUNTS: FlowModFlags = FlowModFlags(1 << 4);
    /// Every bit the spec defines.
    pub const ALL: FlowModFlags = FlowModFlags(0x1f);

    pub fn contains(self, other: FlowModFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::ops::BitOr for FlowModFlags {
    type Output = FlowModFlags;
    fn bitor(self, rhs: Self) -> Self {
        FlowModFlags(self.0 | rhs.0)
    }
}

/// OFPT_FLOW_MOD body.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FlowMod {
    pub cookie: u64,
    pub cookie_mask: u64,
    pub table_id: u8,
    pub command: FlowModCommand,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub priority: u16,
    pub buffer_id: u32,
    pub out_port: u32,
    pub out_group: u32,
    pub flags: FlowModFlags,
    pub match_: Match,
    pub instructions: Vec<Instruction>,
}

impl FlowMod {
    /// An ADD into `table_id` with no timeouts, no buffer and no flags.
    pub fn add(table_id: u8, priority: u16, match_: Match, instructions: Vec<Instruction>) -> Self {
        FlowMod {
            cookie: 0,
            cookie_mask: 0,
            table_id,
            command: FlowModCommand::Add,
            idle_timeout: 0,
            hard_timeout: 0,
            priority,
            buffer_id: crate::consts::OFP_NO_BUFFER,
            out_port: crate::consts::OFPP_ANY,
            out_group: crate::consts::OFPG_ANY,
            flags: FlowModFlags::default(),
            match_,
            instructions,
        }
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u64(self.cookie);
        out.put_u64(self.cookie_mask);
        out.put_u8(self.table_id);
        out.put_u8(self.command as u8);
        out.put_u16(self.idle_timeout);
        out.put_u16(self.hard_timeout);
        out.put_u16(self.priority);
        out.put_u32(self.buffer_id);
        out.put_u32(self.out_port);
        out.put_u32(self.out_group);
        out.put_u16(self.flags.0);
        out.put_zeros(2);
        self.match_.emit(out);
        emit_instructions(&self.instructions, out);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let cookie = r.u64()?;
        let cookie_mask = r.u64()?;
        let table_id = r.u8()?;
        let command = FlowModCommand::from_u8(r.u8()?)
            .ok_or(OfpError::FlowModFailed(FlowModFailedCode::BadCommand))?;
        let idle_timeout = r.u16()?;
        let hard_timeout = r.u16()?;
        let priority = r.u16()?;
        let buffer_id = r.u32()?;
        let out_port = r.u32()?;
        let out_group = r.u32()?;
        let flags = FlowModFlags(r.u16()?);
        r.skip(2)?;
        if flags.0 & !FlowModFlags::ALL.0 != 0 {
            return Err(OfpError::FlowModFailed(FlowModFailedCode::BadFlags));
        }
        let match_ = Match::parse(r)?;
        match_.validate()?;
        let instructions = parse_instructions(r.rest())?;
        Ok(FlowMod {
            cookie,
            cookie_mask,
            table_id,
            command,
            idle_timeout,
            hard_timeout,
            priority,
            buffer_id,
            out_port,
            out_group,
            flags,
            match_,
            instructions,
        })
    }
}

/// OFPT_FLOW_REMOVED body.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FlowRemoved {
    pub cookie: u64,
    pub priority: u16,
    /// `OFPRR_*`.
    pub reason: u8,
    pub table_id: u8,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub packet_count: u64,
    pub byte_count: u64,
    pub match_: Match,
}

impl FlowRemoved {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u64(self.cookie);
        out.put_u16(self.priority);
        out.put_u8(self.reason);
        out.put_u8(self.table_id);
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
        out.put_u16(self.idle_timeout);
        out.put_u16(self.hard_timeout);
        out.put_u64(self.packet_count);
        out.put_u64(self.byte_count);
        self.match_.emit(out);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        Ok(FlowRemoved {
            cookie: r.u64()?,
            priority: r.u16()?,
            reason: r.u8()?,
            table_id: r.u8()?,
            duration_sec: r.u32()?,
            duration_nsec: r.u32()?,
            idle_timeout: r.u16()?,
            hard_timeout: r.u16()?,
            packet_count: r.u64()?,
            byte_count: r.u64()?,
            match_: Match::parse(r)?,
        })
    }
}

/// OFPT_PACKET_IN body.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PacketIn {
    pub buffer_id: u32,
    pub total_len: u16,
    /// `OFPR_*`.
    pub reason: u8,
    pub table_id: u8,
    pub cookie: u64,
    pub match_: Match,
    pub data: Vec<u8>,
}

impl PacketIn {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        self.emit_with(&self.data, out);
    }

    fn emit_with(&self, data: &[u8], out: &mut Vec<u8>) {
        out.put_u32(self.buffer_id);
        out.put_u16(self.total_len);
        out.put_u8(self.reason);
        out.put_u8(self.table_id);
        out.put_u64(self.cookie);
        self.match_.emit(out);
        out.put_zeros(2);
        out.extend_from_slice(data);
    }

    /// Appends this PACKET_IN carrying `data` in place of `self.data` (which is not read):
    /// the bytes `encode(xid, &Message::PacketIn(..))` writes for that packet-in, with the
    /// frame copied once, straight from where the caller holds it (a datapath's batch).
    pub fn encode_with_data(&self, xid: u32, data: &[u8], out: &mut Vec<u8>) {
        let start = out.len();
        crate::buf::emit_header(out, crate::consts::msg_type::PACKET_IN, 0, xid);
        self.emit_with(data, out);
        let len = wire_len(out.len() - start);
        out.patch_u16(start + 2, len);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let buffer_id = r.u32()?;
        let total_len = r.u16()?;
        let reason = r.u8()?;
        let table_id = r.u8()?;
        let cookie = r.u64()?;
        let match_ = Match::parse(r)?;
        r.skip(2)?;
        Ok(PacketIn {
            buffer_id,
            total_len,
            reason,
            table_id,
            cookie,
            match_,
            data: r.rest().to_vec(),
        })
    }
}

/// OFPT_PACKET_OUT body.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PacketOut {
    pub buffer_id: u32,
    pub in_port: u32,
    pub actions: Vec<Action>,
    pub data: Vec<u8>,
}

impl PacketOut {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.buffer_id);
        out.put_u32(self.in_port);
        let len_at = len_placeholder(out);
        out.put_zeros(6);
        let start = out.len();
        emit_actions(&self.actions, out);
        let len = wire_len(out.len() - start);
        out.patch_u16(len_at, len);
        out.extend_from_slice(&self.data);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let buffer_id = r.u32()?;
        let in_port = r.u32()?;
        let actions_len = usize::from(r.u16()?);
        r.skip(6)?;
        let actions = parse_actions(r.bytes(actions_len)?)?;
        Ok(PacketOut {
            buffer_id,
            in_port,
            actions,
            data: r.rest().to_vec(),
        })
    }
}
