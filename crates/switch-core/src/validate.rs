//! Checks a flow entry's instructions and actions against the switch state before anything
//! changes, so a refused message leaves every table, group and meter as it was. The error for
//! each failure is the one OpenFlow 1.3.5 section 7.4.4 names (and Open vSwitch returns).

use dataplane::ir::port;
use dataplane::key::{Field, FieldValue, FlowMatch, OFPVID_PRESENT};
use ofp::{
    Action, BadActionCode, BadInstructionCode, Instruction, MeterModFailedCode, OfpError,
    OxmFieldId, OxmValue,
};

use crate::translate::field_value;

/// What validation needs to know about the rest of the switch.
pub trait Resources {
    fn n_tables(&self) -> u8;
    fn group_exists(&self, group_id: u32) -> bool;
    fn meter_exists(&self, meter_id: u32) -> bool;
    fn template_exists(&self, template_id: u32) -> bool;
}

/// Where an action list runs: flow entries may not output to TABLE, packet-out may.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ActionContext {
    FlowEntry,
    GroupBucket,
    PacketOut,
}

const BEBA_EXPERIMENTER: u32 = 0xBEBA_BEBA;
const BEBA_BAD_EXP_INSTRUCTION: u16 = 10;

fn bad_action(code: BadActionCode) -> OfpError {
    OfpError::BadAction(code)
}

fn bad_instruction(code: BadInstructionCode) -> OfpError {
    OfpError::BadInstruction(code)
}

/// Validates a flow entry's instruction list for table `table_id` whose match is `matched`.
pub fn check_instructions(
    instructions: &[Instruction],
    table_id: u8,
    matched: &FlowMatch,
    res: &dyn Resources,
) -> Result<(), OfpError> {
    let mut seen = [false; 8];
    for instruction in instructions {
        let slot = match instruction {
            Instruction::GotoTable(_) => 0,
            Instruction::WriteMetadata { .. } => 1,
            Instruction::WriteActions(_) => 2,
            Instruction::ApplyActions(_) => 3,
            Instruction::ClearActions => 4,
            Instruction::Meter(_) => 5,
            Instruction::Insp(_) => 6,
            Instruction::Experimenter { .. } => 7,
        };
        if std::mem::replace(&mut seen[slot], true) {
            return Err(bad_instruction(BadInstructionCode::UnsupInst));
        }
        match instruction {
            Instruction::GotoTable(next) => {
                if *next <= table_id || *next >= res.n_tables() {
                    return Err(bad_instruction(BadInstructionCode::BadTableId));
                }
            }
            Instruction::WriteMetadata { .. } | Instruction::ClearActions => {}
            Instruction::WriteActions(actions) => {
                check_write_actions(actions, matched, res)?;
            }
            Instruction::ApplyActions(actions) => {
                check_actions(actions, matched, ActionContext::FlowEntry, res)?;
            }
            Instruction::Meter(meter_id) => {
                if !res.meter_exists(*meter_id) {
                    return Err(OfpError::MeterModFailed(MeterModFailedCode::UnknownMeter));
                }
            }
            Instruction::Insp(insp) => {
                if !res.template_exists(insp.pkttmp_id) {
                    return Err(OfpError::Experimenter {
                        exp_type: BEBA_BAD_EXP_INSTRUCTION,
                        experimenter: BEBA_EXPERIMENTER,
                    });
                }
                check_actions(
                    &insp.actions,
                    &FlowMatch::any(),
                    ActionContext::PacketOut,
                    res,
                )?;
            }
            Instruction::Experimenter { .. } => {
                return Err(bad_instruction(BadInstructionCode::BadExperimenter));
            }
        }
    }
    Ok(())
}

/// An action set holds at most one action of each type (spec 5.10), except set-field, of which
/// it holds one per field.
fn check_write_actions(
    actions: &[Action],
    matched: &FlowMatch,
    res: &dyn Resources,
) -> Result<(), OfpError> {
    check_actions(actions, matched, ActionContext::FlowEntry, res)?;
    let mut kinds: Vec<(u16, Option<ofp::OxmFieldId>)> = Vec::with_capacity(actions.len());
    for action in actions {
        let kind = match action {
            Action::SetField(value) => (action.action_type(), Some(value.field_id())),
            _ => (action.action_type(), None),
        };
        if kinds.contains(&kind) {
            return Err(bad_action(BadActionCode::UnsupportedOrder));
        }
        kinds.push(kind);
    }
    Ok(())
}

/// Validates an action list run in order on a packet that matched `matched`.
pub fn check_actions(
    actions: &[Action],
    matched: &FlowMatch,
    context: ActionContext,
    res: &dyn Resources,
) -> Result<(), OfpError> {
    let mut known = *matched;
    for action in actions {
        match action {
            Action::Output { port, .. } => check_output_port(*port, context)?,
            Action::Group(group_id) => {
                if !res.group_exists(*group_id) {
                    return Err(bad_action(BadActionCode::BadOutGroup));
                }
            }
            Action::SetQueue(_) | Action::CopyTtlOut | Action::CopyTtlIn => {}
            Action::PushVlan(ethertype) => {
                if !matches!(ethertype, 0x8100 | 0x88a8) {
                    return Err(bad_action(BadActionCode::BadArgument));
                }
                known.set(
                    Field::VlanVid,
                    FieldValue(u128::from(OFPVID_PRESENT)),
                    Some(FieldValue(u128::from(OFPVID_PRESENT))),
                );
            }
            Action::PopVlan => {
                require(&known, &[(Field::VlanVid, OFPVID_PRESENT)], true)?;
                forget(&mut known, Field::VlanVid);
                forget(&mut known, Field::VlanPcp);
            }
            Action::PushMpls(ethertype) => {
                if !matches!(ethertype, 0x8847 | 0x8848) {
                    return Err(bad_action(BadActionCode::BadArgument));
                }
                known = l2_view(&known, *ethertype);
            }
            Action::PopMpls(ethertype) => {
                require(
                    &known,
                    &[(Field::EthType, 0x8847), (Field::EthType, 0x8848)],
                    false,
                )?;
                known = l2_view(&known, *ethertype);
            }
            Action::PushPbb(ethertype) => {
                if *ethertype != 0x88e7 {
                    return Err(bad_action(BadActionCode::BadArgument));
                }
            }
            Action::PopPbb => {}
            Action::SetMplsTtl(_) | Action::DecMplsTtl => {
                require(
                    &known,
                    &[(Field::EthType, 0x8847), (Field::EthType, 0x8848)],
                    false,
                )?;
            }
            Action::SetNwTtl(_) | Action::DecNwTtl => {
                require(
                    &known,
                    &[(Field::EthType, 0x0800), (Field::EthType, 0x86dd)],
                    false,
                )?;
            }
            Action::SetField(value) => check_set_field(value, &mut known)?,
            Action::Experimenter { .. } => {
                return Err(bad_action(BadActionCode::BadExperimenter));
            }
        }
    }
    Ok(())
}

fn check_output_port(port_no: u32, context: ActionContext) -> Result<(), OfpError> {
    let ok = match port_no {
        0 | port::ANY => false,
        port::TABLE => context == ActionContext::PacketOut,
        p if p <= port::MAX => true,
        port::IN_PORT | port::NORMAL | port::FLOOD | port::ALL | port::CONTROLLER | port::LOCAL => {
            true
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(bad_action(BadActionCode::BadOutPort))
    }
}

/// Whether set-field may write `id`: the header fields, not the pipeline's own (ports,
/// metadata) nor the IPv6 extension-header flags, which describe the packet's layout. Table
/// features advertise the same set.
pub(crate) fn settable(id: OxmFieldId) -> bool {
    !matches!(
        id,
        OxmFieldId::InPort | OxmFieldId::InPhyPort | OxmFieldId::Metadata | OxmFieldId::Ipv6Exthdr
    )
}

/// Set-field: only header fields are settable, values must fit the field, and the packet must
/// be known to carry the header (its prerequisites hold after the preceding actions).
fn check_set_field(value: &OxmValue, known: &mut FlowMatch) -> Result<(), OfpError> {
    let Some((field, v)) = field_value(value).filter(|_| settable(value.field_id())) else {
        return Err(bad_action(BadActionCode::BadSetType));
    };
    let in_range = match field {
        Field::VlanVid => v.0 & u128::from(OFPVID_PRESENT) != 0 && v.0 <= 0x1fff,
        _ => v.0 & !field.full_mask().0 == 0,
    };
    if !in_range {
        return Err(bad_action(BadActionCode::BadSetArgument));
    }
    match field {
        Field::VlanVid | Field::VlanPcp => {
            require(known, &[(Field::VlanVid, OFPVID_PRESENT)], true)?;
        }
        _ => {
            let alternatives = field.prerequisites();
            if !alternatives.is_empty() {
                require(known, alternatives, false)?;
            }
        }
    }
    known.set(field, v, None);
    Ok(())
}

/// Fails with MATCH_INCONSISTENT unless one alternative is known to hold. With `bits`, the
/// value is a bit that must be known set (VLAN presence) rather than an exact value.
fn require(known: &FlowMatch, alternatives: &[(Field, u16)], bits: bool) -> Result<(), OfpError> {
    let holds = alternatives.iter().any(|&(field, value)| {
        let value = u128::from(value);
        let mask = field.get(&known.mask).0;
        let key = field.get(&known.key).0;
        if bits {
            mask & value == value && key & value == value
        } else {
            mask == field.full_mask().0 && key == value
        }
    });
    if holds {
        Ok(())
    } else {
        Err(bad_action(BadActionCode::MatchInconsistent))
    }
}

fn forget(known: &mut FlowMatch, field: Field) {
    field.set_masked(
        &mut known.key,
        &mut known.mask,
        &FieldValue(0),
        Some(&FieldValue(0)),
    );
}

fn copy_field(from: &FlowMatch, to: &mut FlowMatch, field: Field) {
    let mask = field.get(&from.mask);
    if mask.0 != 0 {
        to.set(field, field.get(&from.key), Some(mask));
    }
}

/// After an MPLS push or pop the headers behind the Ethernet type change: only L2 facts and
/// the new Ethernet type stay known.
fn l2_view(known: &FlowMatch, ethertype: u16) -> FlowMatch {
    let mut after = FlowMatch::any();
    for f in [
        Field::InPort,
        Field::EthDst,
        Field::EthSrc,
        Field::VlanVid,
        Field::VlanPcp,
    ] {
        copy_field(known, &mut after, f);
    }
    after.set(Field::EthType, FieldValue(u128::from(ethertype)), None);
    after
}
