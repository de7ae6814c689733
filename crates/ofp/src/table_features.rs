//! Table features (spec 1.3.5 section 7.3.5.5): `ofp_table_features` and every property type.

use crate::buf::{len_placeholder, pad8, parse_name, put_name, wire_len, Put, Reader};
use crate::error::{OfpError, TableFeaturesFailedCode};
use crate::oxm::OxmFieldId;

/// Length of a table name field.
pub const OFP_MAX_TABLE_NAME_LEN: usize = 32;

/// Table feature property types (`OFPTFPT_*`).
pub mod prop_type {
    pub const INSTRUCTIONS: u16 = 0;
    pub const INSTRUCTIONS_MISS: u16 = 1;
    pub const NEXT_TABLES: u16 = 2;
    pub const NEXT_TABLES_MISS: u16 = 3;
    pub const WRITE_ACTIONS: u16 = 4;
    pub const WRITE_ACTIONS_MISS: u16 = 5;
    pub const APPLY_ACTIONS: u16 = 6;
    pub const APPLY_ACTIONS_MISS: u16 = 7;
    pub const MATCH: u16 = 8;
    pub const WILDCARDS: u16 = 10;
    pub const WRITE_SETFIELD: u16 = 12;
    pub const WRITE_SETFIELD_MISS: u16 = 13;
    pub const APPLY_SETFIELD: u16 = 14;
    pub const APPLY_SETFIELD_MISS: u16 = 15;
    pub const EXPERIMENTER: u16 = 0xfffe;
    pub const EXPERIMENTER_MISS: u16 = 0xffff;
}

fn bad_len() -> OfpError {
    OfpError::TableFeaturesFailed(TableFeaturesFailedCode::BadLen)
}

/// An instruction or action id in a property list: its type, and the bytes after the 4-byte
/// `type | len` header (the experimenter id for experimenter types, otherwise empty).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TypeId {
    pub id_type: u16,
    pub data: Vec<u8>,
}

impl TypeId {
    /// A standard (non-experimenter) id.
    pub fn standard(id_type: u16) -> Self {
        TypeId {
            id_type,
            data: Vec::new(),
        }
    }

    fn emit(&self, out: &mut Vec<u8>) {
        out.put_u16(self.id_type);
        out.put_u16(wire_len(4 + self.data.len()));
        out.extend_from_slice(&self.data);
    }

    fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let id_type = r.u16()?;
        let len = usize::from(r.u16()?);
        let data = r.bytes(len.checked_sub(4).ok_or(bad_len())?)?.to_vec();
        Ok(TypeId { id_type, data })
    }
}

/// An OXM id in a property list: the 32-bit OXM header, plus the experimenter id when the
/// class is OFPXMC_EXPERIMENTER (0xffff).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OxmId {
    pub header: u32,
    pub experimenter: Option<u32>,
}

impl OxmId {
    /// The id of a field we know (basic class, or NXM_NX_IP_TTL).
    pub fn known(id: OxmFieldId, has_mask: bool) -> Self {
        OxmId {
            header: crate::oxm::oxm_header(id, has_mask),
            experimenter: None,
        }
    }

    /// The field this id names, if we know it.
    pub fn field_id(&self) -> Option<OxmFieldId> {
        OxmFieldId::from_wire(
            (self.header >> 16) as u16,
            ((self.header >> 9) & 0x7f) as u8,
        )
    }

    fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.header);
        if let Some(e) = self.experimenter {
            out.put_u32(e);
        }
    }

    fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let header = r.u32()?;
        let experimenter = if header >> 16 == 0xffff {
            Some(r.u32()?)
        } else {
            None
        };
        Ok(OxmId {
            header,
            experimenter,
        })
    }
}

/// One table feature property. `*Miss` variants describe the table-miss entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TableFeatureProp {
    Instructions(Vec<TypeId>),
    InstructionsMiss(Vec<TypeId>),
    NextTables(Vec<u8>),
    NextTablesMiss(Vec<u8>),
    WriteActions(Vec<TypeId>),
    WriteActionsMiss(Vec<TypeId>),
    ApplyActions(Vec<TypeId>),
    ApplyActionsMiss(Vec<TypeId>),
    Match(Vec<OxmId>),
    Wildcards(Vec<OxmId>),
    WriteSetfield(Vec<OxmId>),
    WriteSetfieldMiss(Vec<OxmId>),
    ApplySetfield(Vec<OxmId>),
    ApplySetfieldMiss(Vec<OxmId>),
    Experimenter {
        experimenter: u32,
        exp_type: u32,
        data: Vec<u8>,
    },
    ExperimenterMiss {
        experimenter: u32,
        exp_type: u32,
        data: Vec<u8>,
    },
}

impl TableFeatureProp {
    pub fn prop_type(&self) -> u16 {
        use prop_type as t;
        use TableFeatureProp as P;
        match self {
            P::Instructions(_) => t::INSTRUCTIONS,
            P::InstructionsMiss(_) => t::INSTRUCTIONS_MISS,
            P::NextTables(_) => t::NEXT_TABLES,
            P::NextTablesMiss(_) => t::NEXT_TABLES_MISS,
            P::WriteActions(_) => t::WRITE_ACTIONS,
            P::WriteActionsMiss(_) => t::WRITE_ACTIONS_MISS,
            P::ApplyActions(_) => t::APPLY_ACTIONS,
            P::ApplyActionsMiss(_) => t::APPLY_ACTIONS_MISS,
            P::Match(_) => t::MATCH,
            P::Wildcards(_) => t::WILDCARDS,
            P::WriteSetfield(_) => t::WRITE_SETFIELD,
            P::WriteSetfieldMiss(_) => t::WRITE_SETFIELD_MISS,
            P::ApplySetfield(_) => t::APPLY_SETFIELD,
            P::ApplySetfieldMiss(_) => t::APPLY_SETFIELD_MISS,
            P::Experimenter { .. } => t::EXPERIMENTER,
            P::ExperimenterMiss { .. } => t::EXPERIMENTER_MISS,
        }
    }

    fn emit(&self, out: &mut Vec<u8>) {
        use TableFeatureProp as P;
        let start = out.len();
        out.put_u16(self.prop_type());
        let len_at = len_placeholder(out);
        match self {
            P::Instructions(ids)
            | P::InstructionsMiss(ids)
            | P::WriteActions(ids)
            | P::WriteActionsMiss(ids)
            | P::ApplyActions(ids)
            | P::ApplyActionsMiss(ids) => ids.iter().for_each(|i| i.emit(out)),
            P::NextTables(tables) | P::NextTablesMiss(tables) => out.extend_from_slice(tables),
            P::Match(ids)
            | P::Wildcards(ids)
            | P::WriteSetfield(ids)
            | P::WriteSetfieldMiss(ids)
            | P::ApplySetfield(ids)
            | P::ApplySetfieldMiss(ids) => ids.iter().for_each(|i| i.emit(out)),
            P::Experimenter {
                experimenter,
                exp_type,
                data,
            }
            | P::ExperimenterMiss {
                experimenter,
                exp_type,
                data,
            } => {
                out.put_u32(*experimenter);
                out.put_u32(*exp_type);
                out.extend_from_slice(data);
            }
        }
        let len = wire_len(out.len() - start);
        out.patch_u16(len_at, len);
        out.pad_to_8(start);
    }

    fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        use prop_type as t;
        use TableFeatureProp as P;
        let prop = r.u16()?;
        let len = usize::from(r.u16()?);
        let body = r.bytes(len.checked_sub(4).ok_or(bad_len())?)?;
        r.skip(pad8(len) - len)?;
        let mut b = Reader::new(body, bad_len());
        let type_ids = |b: &mut Reader<'_>| -> Result<Vec<TypeId>, OfpError> {
            let mut v = Vec::new();
            while !b.is_empty() {
                v.push(TypeId::parse(b)?);
            }
            Ok(v)
        };
        let oxm_ids = |b: &mut Reader<'_>| -> Result<Vec<OxmId>, OfpError> {
            let mut v = Vec::new();
            while !b.is_empty() {
                v.push(OxmId::parse(b)?);
            }
            Ok(v)
        };
        let b = &mut b;
        Ok(match prop {
            t::INSTRUCTIONS => P::Instructions(type_ids(b)?),
            t::INSTRUCTIONS_MISS => P::InstructionsMiss(type_ids(b)?),
            t::NEXT_TABLES => P::NextTables(b.rest().to_vec()),
            t::NEXT_TABLES_MISS => P::NextTablesMiss(b.rest().to_vec()),
            t::WRITE_ACTIONS => P::WriteActions(type_ids(b)?),
            t::WRITE_ACTIONS_MISS => P::WriteActionsMiss(type_ids(b)?),
            t::APPLY_ACTIONS => P::ApplyActions(type_ids(b)?),
            t::APPLY_ACTIONS_MISS => P::ApplyActionsMiss(type_ids(b)?),
            t::MATCH => P::Match(oxm_ids(b)?),
            t::WILDCARDS => P::Wildcards(oxm_ids(b)?),
            t::WRITE_SETFIELD => P::WriteSetfield(oxm_ids(b)?),
            t::WRITE_SETFIELD_MISS => P::WriteSetfieldMiss(oxm_ids(b)?),
            t::APPLY_SETFIELD => P::ApplySetfield(oxm_ids(b)?),
            t::APPLY_SETFIELD_MISS => P::ApplySetfieldMiss(oxm_ids(b)?),
            t::EXPERIMENTER => P::Experimenter {
                experimenter: b.u32()?,
                exp_type: b.u32()?,
                data: b.rest().to_vec(),
            },
            t::EXPERIMENTER_MISS => P::ExperimenterMiss {
                experimenter: b.u32()?,
                exp_type: b.u32()?,
                data: b.rest().to_vec(),
            },
            _ => {
                return Err(OfpError::TableFeaturesFailed(
                    TableFeaturesFailedCode::BadType,
                ))
            }
        })
    }
}

/// `ofp_table_features`: one table's capabilities.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TableFeatures {
    pub table_id: u8,
    /// At most 31 bytes; longer names are truncated on encode.
    pub name: String,
    pub metadata_match: u64,
    pub metadata_write: u64,
    pub config: u32,
    pub max_entries: u32,
    pub properties: Vec<TableFeatureProp>,
}

impl TableFeatures {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let len_at = len_placeholder(out);
        out.put_u8(self.table_id);
        out.put_zeros(5);
        put_name(out, &self.name, OFP_MAX_TABLE_NAME_LEN);
        out.put_u64(self.metadata_match);
        out.put_u64(self.metadata_write);
        out.put_u32(self.config);
        out.put_u32(self.max_entries);
        self.properties.iter().for_each(|p| p.emit(out));
        let len = wire_len(out.len() - start);
        out.patch_u16(len_at, len);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let len = usize::from(r.peek_u16(0).map_err(|_| bad_len())?);
        if len < 64 {
            return Err(bad_len());
        }
        let mut b = Reader::new(r.bytes(len).map_err(|_| bad_len())?, bad_len());
        b.skip(2)?;
        let table_id = b.u8()?;
        b.skip(5)?;
        let name = parse_name(b.bytes(OFP_MAX_TABLE_NAME_LEN)?);
        let metadata_match = b.u64()?;
        let metadata_write = b.u64()?;
        let config = b.u32()?;
        let max_entries = b.u32()?;
        let mut properties = Vec::new();
        while !b.is_empty() {
            properties.push(TableFeatureProp::parse(&mut b)?);
        }
        Ok(TableFeatures {
            table_id,
            name,
            metadata_match,
            metadata_write,
            config,
            max_entries,
            properties,
        })
    }
}

/// Parses a list of table features that fills `raw`.
pub(crate) fn parse_table_features_list(raw: &[u8]) -> Result<Vec<TableFeatures>, OfpError> {
    let mut r = Reader::new(raw, bad_len());
    let mut v = Vec::new();
    while !r.is_empty() {
        v.push(TableFeatures::parse(&mut r)?);
    }
    Ok(v)
}
