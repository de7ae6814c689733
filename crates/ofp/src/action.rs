//! Actions (spec 1.3.5 section 7.2.5).

use crate::buf::{len_placeholder, pad8, wire_len, Put, Reader};
use crate::error::{BadActionCode, BadMatchCode, OfpError};
use crate::oxm::{OxmField, OxmValue};

/// Action type numbers (`OFPAT_*`).
pub mod action_type {
    pub const OUTPUT: u16 = 0;
    pub const COPY_TTL_OUT: u16 = 11;
    pub const COPY_TTL_IN: u16 = 12;
    pub const SET_MPLS_TTL: u16 = 15;
    pub const DEC_MPLS_TTL: u16 = 16;
    pub const PUSH_VLAN: u16 = 17;
    pub const POP_VLAN: u16 = 18;
    pub const PUSH_MPLS: u16 = 19;
    pub const POP_MPLS: u16 = 20;
    pub const SET_QUEUE: u16 = 21;
    pub const GROUP: u16 = 22;
    pub const SET_NW_TTL: u16 = 23;
    pub const DEC_NW_TTL: u16 = 24;
    pub const SET_FIELD: u16 = 25;
    pub const PUSH_PBB: u16 = 26;
    pub const POP_PBB: u16 = 27;
    pub const EXPERIMENTER: u16 = 0xffff;
}

/// One action. Ethertype arguments are the pushed/next ethertype as on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Action {
    Output {
        port: u32,
        max_len: u16,
    },
    CopyTtlOut,
    CopyTtlIn,
    SetMplsTtl(u8),
    DecMplsTtl,
    PushVlan(u16),
    PopVlan,
    PushMpls(u16),
    PopMpls(u16),
    SetQueue(u32),
    Group(u32),
    SetNwTtl(u8),
    DecNwTtl,
    /// Set-field with an unmasked OXM value.
    SetField(OxmValue),
    PushPbb(u16),
    PopPbb,
    /// Experimenter action; `data` follows the experimenter id and should keep the action
    /// length a multiple of 8 (encode zero-pads it otherwise).
    Experimenter {
        experimenter: u32,
        data: Vec<u8>,
    },
}

fn bad(code: BadActionCode) -> OfpError {
    OfpError::BadAction(code)
}

impl Action {
    /// The `OFPAT_*` type number.
    pub fn action_type(&self) -> u16 {
        use action_type as t;
        match self {
            Action::Output { .. } => t::OUTPUT,
            Action::CopyTtlOut => t::COPY_TTL_OUT,
            Action::CopyTtlIn => t::COPY_TTL_IN,
            Action::SetMplsTtl(_) => t::SET_MPLS_TTL,
            Action::DecMplsTtl => t::DEC_MPLS_TTL,
            Action::PushVlan(_) => t::PUSH_VLAN,
            Action::PopVlan => t::POP_VLAN,
            Action::PushMpls(_) => t::PUSH_MPLS,
            Action::PopMpls(_) => t::POP_MPLS,
            Action::SetQueue(_) => t::SET_QUEUE,
            Action::Group(_) => t::GROUP,
            Action::SetNwTtl(_) => t::SET_NW_TTL,
            Action::DecNwTtl => t::DEC_NW_TTL,
            Action::SetField(_) => t::SET_FIELD,
            Action::PushPbb(_) => t::PUSH_PBB,
            Action::PopPbb => t::POP_PBB,
            Action::Experimenter { .. } => t::EXPERIMENTER,
        }
    }

    /// Appends this action.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(self.action_type());
        let len_at = len_placeholder(out);
        match self {
            Action::Output { port, max_len } => {
                out.put_u32(*port);
                out.put_u16(*max_len);
                out.put_zeros(6);
            }
            Action::SetMplsTtl(ttl) | Action::SetNwTtl(ttl) => {
                out.put_u8(*ttl);
                out.put_zeros(3);
            }
            Action::PushVlan(e) | Action::PushMpls(e) | Action::PopMpls(e) | Action::PushPbb(e) => {
                out.put_u16(*e);
                out.put_zeros(2);
            }
            Action::SetQueue(v) | Action::Group(v) => out.put_u32(*v),
            Action::SetField(value) => OxmField::exact(*value).emit(out),
            Action::Experimenter { experimenter, data } => {
                out.put_u32(*experimenter);
                out.extend_from_slice(data);
            }
            Action::CopyTtlOut
            | Action::CopyTtlIn
            | Action::DecMplsTtl
            | Action::PopVlan
            | Action::DecNwTtl
            | Action::PopPbb => out.put_zeros(4),
        }
        out.pad_to_8(start);
        let len = wire_len(out.len() - start);
        out.patch_u16(len_at, len);
    }

    /// Parses one action from `r` (which holds the rest of an action list).
    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let short = bad(BadActionCode::BadLen);
        let (kind, len, mut b) = r.tlv8(short)?;
        let fixed = |expected: usize| if len == expected { Ok(()) } else { Err(short) };
        use action_type as t;
        let action = match kind {
            t::OUTPUT => {
                fixed(16)?;
                let port = b.u32()?;
                let max_len = b.u16()?;
                Action::Output { port, max_len }
            }
            t::COPY_TTL_OUT => fixed(8).map(|_| Action::CopyTtlOut)?,
            t::COPY_TTL_IN => fixed(8).map(|_| Action::CopyTtlIn)?,
            t::SET_MPLS_TTL => fixed(8).and_then(|_| b.u8()).map(Action::SetMplsTtl)?,
            t::DEC_MPLS_TTL => fixed(8).map(|_| Action::DecMplsTtl)?,
            t::PUSH_VLAN => fixed(8).and_then(|_| b.u16()).map(Action::PushVlan)?,
            t::POP_VLAN => fixed(8).map(|_| Action::PopVlan)?,
            t::PUSH_MPLS => fixed(8).and_then(|_| b.u16()).map(Action::PushMpls)?,
            t::POP_MPLS => fixed(8).and_then(|_| b.u16()).map(Action::PopMpls)?,
            t::SET_QUEUE => fixed(8).and_then(|_| b.u32()).map(Action::SetQueue)?,
            t::GROUP => fixed(8).and_then(|_| b.u32()).map(Action::Group)?,
            t::SET_NW_TTL => fixed(8).and_then(|_| b.u8()).map(Action::SetNwTtl)?,
            t::DEC_NW_TTL => fixed(8).map(|_| Action::DecNwTtl)?,
            t::SET_FIELD => parse_set_field(&mut b, len)?,
            t::PUSH_PBB => fixed(8).and_then(|_| b.u16()).map(Action::PushPbb)?,
            t::POP_PBB => fixed(8).map(|_| Action::PopPbb)?,
            t::EXPERIMENTER => Action::Experimenter {
                experimenter: b.u32()?,
                data: b.rest().to_vec(),
            },
            _ => return Err(bad(BadActionCode::BadType)),
        };
        Ok(action)
    }
}

fn parse_set_field(b: &mut Reader<'_>, len: usize) -> Result<Action, OfpError> {
    let field = OxmField::parse(b).map_err(|e| match e {
        OfpError::BadMatch(BadMatchCode::BadField) => bad(BadActionCode::BadSetType),
        OfpError::BadMatch(BadMatchCode::BadLen) => bad(BadActionCode::BadSetLen),
        _ => bad(BadActionCode::BadSetArgument),
    })?;
    if field.mask.is_some() {
        return Err(bad(BadActionCode::BadSetArgument));
    }
    if len != pad8(4 + field.wire_len()) {
        return Err(bad(BadActionCode::BadSetLen));
    }
    if !field.value.fits_width() {
        return Err(bad(BadActionCode::BadSetArgument));
    }
    Ok(Action::SetField(field.value))
}

/// Parses a whole action list that fills `raw`.
pub fn parse_actions(raw: &[u8]) -> Result<Vec<Action>, OfpError> {
    let mut r = Reader::new(raw, bad(BadActionCode::BadLen));
    let mut actions = Vec::new();
    while !r.is_empty() {
        actions.push(Action::parse(&mut r)?);
    }
    Ok(actions)
}

/// Appends an action list.
pub fn emit_actions(actions: &[Action], out: &mut Vec<u8>) {
    for a in actions {
        a.emit(out);
    }
}
