//! Groups: GROUP_MOD and buckets (spec 1.3.5 section 7.3.4.2).

use crate::action::{emit_actions, parse_actions, Action};
use crate::buf::{len_placeholder, wire_len, Put, Reader};
use crate::error::{GroupModFailedCode, OfpError};

/// GROUP_MOD command (`OFPGC_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum GroupModCommand {
    Add = 0,
    Modify = 1,
    Delete = 2,
}

/// Group type (`OFPGT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum GroupType {
    All = 0,
    Select = 1,
    Indirect = 2,
    FastFailover = 3,
}

impl GroupType {
    pub fn from_u8(v: u8) -> Option<Self> {
        use GroupType::*;
        [All, Select, Indirect, FastFailover]
            .into_iter()
            .find(|t| *t as u8 == v)
    }
}

fn group_err(code: GroupModFailedCode) -> OfpError {
    OfpError::GroupModFailed(code)
}

/// One bucket of a group.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bucket {
    pub weight: u16,
    pub watch_port: u32,
    pub watch_group: u32,
    pub actions: Vec<Action>,
}

impl Bucket {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let len_at = len_placeholder(out);
        out.put_u16(self.weight);
        out.put_u32(self.watch_port);
        out.put_u32(self.watch_group);
        out.put_zeros(4);
        emit_actions(&self.actions, out);
        let len = wire_len(out.len() - start);
        out.patch_u16(len_at, len);
    }

    fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let bad_bucket = group_err(GroupModFailedCode::BadBucket);
        let len = usize::from(r.peek_u16(0).map_err(|_| bad_bucket)?);
        if len < 16 {
            return Err(bad_bucket);
        }
        let mut b = Reader::new(r.bytes(len).map_err(|_| bad_bucket)?, bad_bucket);
        b.skip(2)?;
        let weight = b.u16()?;
        let watch_port = b.u32()?;
        let watch_group = b.u32()?;
        b.skip(4)?;
        Ok(Bucket {
            weight,
            watch_port,
            watch_group,
            actions: parse_actions(b.rest())?,
        })
    }
}

/// Parses a bucket list that fills `raw`.
pub(crate) fn parse_buckets(raw: &[u8]) -> Result<Vec<Bucket>, OfpError> {
    let mut r = Reader::new(raw, group_err(GroupModFailedCode::BadBucket));
    let mut buckets = Vec::new();
    while !r.is_empty() {
        buckets.push(Bucket::parse(&mut r)?);
    }
    Ok(buckets)
}

/// OFPT_GROUP_MOD body.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupMod {
    pub command: GroupModCommand,
    pub group_type: GroupType,
    pub group_id: u32,
    pub buckets: Vec<Bucket>,
}

impl GroupMod {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u16(self.command as u16);
        out.put_u8(self.group_type as u8);
        out.put_u8(0);
        out.put_u32(self.group_id);
        self.buckets.iter().for_each(|b| b.emit(out));
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let command = match r.u16()? {
            0 => GroupModCommand::Add,
            1 => GroupModCommand::Modify,
            2 => GroupModCommand::Delete,
            _ => return Err(group_err(GroupModFailedCode::BadCommand)),
        };
        let group_type =
            GroupType::from_u8(r.u8()?).ok_or(group_err(GroupModFailedCode::BadType))?;
        r.skip(1)?;
        let group_id = r.u32()?;
        Ok(GroupMod {
            command,
            group_type,
            group_id,
            buckets: parse_buckets(r.rest())?,
        })
    }
}
