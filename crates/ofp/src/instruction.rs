//! Instructions (spec 1.3.5 section 7.2.4), including the InSP experimenter instruction.

use crate::action::{emit_actions, parse_actions, Action};
use crate::buf::{len_placeholder, wire_len, Put, Reader};
use crate::error::{BadInstructionCode, OfpError};
use crate::insp::{InspInstruction, INSP_EXPERIMENTER};

/// Instruction type numbers (`OFPIT_*`).
pub mod instruction_type {
    pub const GOTO_TABLE: u16 = 1;
    pub const WRITE_METADATA: u16 = 2;
    pub const WRITE_ACTIONS: u16 = 3;
    pub const APPLY_ACTIONS: u16 = 4;
    pub const CLEAR_ACTIONS: u16 = 5;
    pub const METER: u16 = 6;
    pub const EXPERIMENTER: u16 = 0xffff;
}

/// One instruction of a flow entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Instruction {
    GotoTable(u8),
    WriteMetadata {
        metadata: u64,
        mask: u64,
    },
    WriteActions(Vec<Action>),
    ApplyActions(Vec<Action>),
    ClearActions,
    Meter(u32),
    /// InSP: generate a packet from a template (experimenter 0xBEBABEBA, instr_type 0).
    Insp(InspInstruction),
    /// Any other experimenter instruction; `data` follows the experimenter id and should keep
    /// the instruction length a multiple of 8 (encode zero-pads it otherwise).
    Experimenter {
        experimenter: u32,
        data: Vec<u8>,
    },
}

fn bad(code: BadInstructionCode) -> OfpError {
    OfpError::BadInstruction(code)
}

impl Instruction {
    /// The `OFPIT_*` type number.
    pub fn instruction_type(&self) -> u16 {
        use instruction_type as t;
        match self {
            Instruction::GotoTable(_) => t::GOTO_TABLE,
            Instruction::WriteMetadata { .. } => t::WRITE_METADATA,
            Instruction::WriteActions(_) => t::WRITE_ACTIONS,
            Instruction::ApplyActions(_) => t::APPLY_ACTIONS,
            Instruction::ClearActions => t::CLEAR_ACTIONS,
            Instruction::Meter(_) => t::METER,
            Instruction::Insp(_) | Instruction::Experimenter { .. } => t::EXPERIMENTER,
        }
    }

    /// Appends this instruction.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(self.instruction_type());
        let len_at = len_placeholder(out);
        match self {
            Instruction::GotoTable(table) => {
                out.put_u8(*table);
                out.put_zeros(3);
            }
            Instruction::WriteMetadata { metadata, mask } => {
                out.put_zeros(4);
                out.put_u64(*metadata);
                out.put_u64(*mask);
            }
            Instruction::WriteActions(actions) | Instruction::ApplyActions(actions) => {
                out.put_zeros(4);
                emit_actions(actions, out);
            }
            Instruction::ClearActions => out.put_zeros(4),
            Instruction::Meter(id) => out.put_u32(*id),
            Instruction::Insp(insp) => {
                out.put_u32(INSP_EXPERIMENTER);
                insp.emit_body(out);
            }
            Instruction::Experimenter { experimenter, data } => {
                out.put_u32(*experimenter);
                out.extend_from_slice(data);
            }
        }
        out.pad_to_8(start);
        let len = wire_len(out.len() - start);
        out.patch_u16(len_at, len);
    }

    /// Parses one instruction from `r` (which holds the rest of an instruction list).
    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let short = bad(BadInstructionCode::BadLen);
        let (inst_type, len, mut b) = r.tlv8(short)?;
        let fixed = |expected: usize| if len == expected { Ok(()) } else { Err(short) };
        use instruction_type as t;
        let inst = match inst_type {
            t::GOTO_TABLE => fixed(8).and_then(|_| b.u8()).map(Instruction::GotoTable)?,
            t::WRITE_METADATA => {
                fixed(24)?;
                b.skip(4)?;
                let metadata = b.u64()?;
                let mask = b.u64()?;
                Instruction::WriteMetadata { metadata, mask }
            }
            t::WRITE_ACTIONS => {
                b.skip(4)?;
                Instruction::WriteActions(parse_actions(b.rest())?)
            }
            t::APPLY_ACTIONS => {
                b.skip(4)?;
                Instruction::ApplyActions(parse_actions(b.rest())?)
            }
            t::CLEAR_ACTIONS => fixed(8).map(|_| Instruction::ClearActions)?,
            t::METER => fixed(8).and_then(|_| b.u32()).map(Instruction::Meter)?,
            t::EXPERIMENTER => {
                let experimenter = b.u32()?;
                if experimenter == INSP_EXPERIMENTER {
                    Instruction::Insp(InspInstruction::parse_body(&mut b)?)
                } else {
                    Instruction::Experimenter {
                        experimenter,
                        data: b.rest().to_vec(),
                    }
                }
            }
            _ => return Err(bad(BadInstructionCode::UnknownInst)),
        };
        Ok(inst)
    }
}

/// Parses an instruction list that fills `raw`.
pub fn parse_instructions(raw: &[u8]) -> Result<Vec<Instruction>, OfpError> {
    let mut r = Reader::new(raw, bad(BadInstructionCode::BadLen));
    let mut out = Vec::new();
    while !r.is_empty() {
        out.push(Instruction::parse(&mut r)?);
    }
    Ok(out)
}

/// Appends an instruction list.
pub fn emit_instructions(instructions: &[Instruction], out: &mut Vec<u8>) {
    for i in instructions {
        i.emit(out);
    }
}
