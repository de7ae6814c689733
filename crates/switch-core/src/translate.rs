//! OpenFlow wire types to the datapath IR, done once per flow-mod so the datapath never sees
//! OXM encodings.

use dataplane::ir;
use dataplane::key::{Field, FieldValue, FlowMatch};
use ofp::{Action, Instruction, Match, OxmFieldId, OxmValue};

/// The datapath field and value of an OXM value.
pub fn field_value(value: &OxmValue) -> Option<(Field, FieldValue)> {
    let field = match value.field_id() {
        OxmFieldId::NxIpTtl => Field::IpTtl,
        basic => Field::from_oxm(basic.field())?,
    };
    let bytes = value.to_bytes();
    Some((field, FieldValue::from_be_bytes(&bytes)?))
}

/// Compiles a validated OXM match into the datapath's key/mask form. Masked-out value bits are
/// dropped, so two matches that select the same packets compare equal.
pub fn compile_match(m: &Match) -> FlowMatch {
    let mut out = FlowMatch::any();
    for oxm in &m.fields {
        let Some((field, value)) = field_value(&oxm.value) else {
            continue;
        };
        let mask = oxm
            .mask
            .as_ref()
            .and_then(field_value)
            .map(|(_, mask)| mask);
        out.set(field, value, mask);
    }
    out
}

/// Compiles one action. Experimenter actions never reach here: validation refuses them.
pub fn compile_action(action: &Action) -> Option<ir::Action> {
    Some(match *action {
        Action::Output { port, max_len } => ir::Action::Output { port, max_len },
        Action::CopyTtlOut => ir::Action::CopyTtlOut,
        Action::CopyTtlIn => ir::Action::CopyTtlIn,
        Action::SetMplsTtl(ttl) => ir::Action::SetMplsTtl(ttl),
        Action::DecMplsTtl => ir::Action::DecMplsTtl,
        Action::PushVlan(ethertype) => ir::Action::PushVlan(ethertype),
        Action::PopVlan => ir::Action::PopVlan,
        Action::PushMpls(ethertype) => ir::Action::PushMpls(ethertype),
        Action::PopMpls(ethertype) => ir::Action::PopMpls(ethertype),
        Action::SetQueue(queue) => ir::Action::SetQueue(queue),
        Action::Group(group) => ir::Action::Group(group),
        Action::SetNwTtl(ttl) => ir::Action::SetNwTtl(ttl),
        Action::DecNwTtl => ir::Action::DecNwTtl,
        // Open vSwitch's `set_field:N->nw_ttl`: the TTL as SET_NW_TTL sets it, keeping the
        // IPv4 checksum right (a generic field write would not).
        Action::SetField(OxmValue::NxIpTtl(ttl)) => ir::Action::SetNwTtl(ttl),
        Action::SetField(ref value) => {
            let (field, value) = field_value(value)?;
            ir::Action::SetField(field, value)
        }
        Action::PushPbb(ethertype) => ir::Action::PushPbb(ethertype),
        Action::PopPbb => ir::Action::PopPbb,
        Action::Experimenter { .. } => return None,
    })
}

/// Compiles an action list, skipping nothing: a list with an uncompilable action is refused
/// earlier by validation.
pub fn compile_actions(actions: &[Action]) -> Vec<ir::Action> {
    actions.iter().filter_map(compile_action).collect()
}

/// Compiles a validated instruction list.
pub fn compile_instructions(instructions: &[Instruction]) -> Vec<ir::Instruction> {
    instructions
        .iter()
        .filter_map(|instruction| {
            Some(match instruction {
                Instruction::GotoTable(table) => ir::Instruction::GotoTable(*table),
                Instruction::WriteMetadata { metadata, mask } => ir::Instruction::WriteMetadata {
                    value: *metadata,
                    mask: *mask,
                },
                Instruction::WriteActions(actions) => {
                    ir::Instruction::WriteActions(compile_actions(actions))
                }
                Instruction::ApplyActions(actions) => {
                    ir::Instruction::ApplyActions(compile_actions(actions))
                }
                Instruction::ClearActions => ir::Instruction::ClearActions,
                Instruction::Meter(meter) => ir::Instruction::Meter(*meter),
                Instruction::Insp(insp) => ir::Instruction::Insp {
                    template_id: insp.pkttmp_id,
                    actions: compile_actions(&insp.actions),
                },
                Instruction::Experimenter { .. } => return None,
            })
        })
        .collect()
}
