//! A flow entry's instructions compiled for the hot path.
//!
//! Actions become 8-byte [`CompiledAction`]s with their operands ready to use (a MAC, an address, a
//! port), so a flow entry's whole program usually sits in the entry's one cache line and
//! one `match` dispatches each action. Actions the hot path does not specialise keep their
//! IR form in a side list ([`CompiledAction::Slow`]). Write-Actions are pre-sorted into action-set order,
//! so an entry that ends the pipeline with an empty action set runs them directly without
//! building the set.

use crate::actions::ActionSet;
use crate::ir::{port, Action, Instruction};
use crate::key::{Field, FieldValue};
use std::sync::Arc;

/// Ops kept inside the program (as many as the usual entry needs: a rewrite or two and an
/// output); longer programs share one heap slice.
const INLINE: usize = 3;

/// One compiled action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CompiledAction {
    /// Output to a physical or logical port (at most `port::MAX`).
    Output(u32),
    /// Output to a reserved port other than CONTROLLER (IN_PORT, TABLE, NORMAL, FLOOD, ALL,
    /// LOCAL, ANY).
    Reserved(u32),
    /// Output to CONTROLLER with its `max_len`.
    Controller(u16),
    Group(u32),
    SetQueue(u32),
    SetEthDst(Mac),
    SetEthSrc(Mac),
    SetIpv4Src(u32),
    SetIpv4Dst(u32),
    DecNwTtl,
    /// Any other action: index into the program's slow list.
    Slow(u16),
}

const _: () = assert!(core::mem::size_of::<CompiledAction>() == 8);

/// A MAC address an op writes, two-byte aligned: in the op's 8 bytes it sits in the top six,
/// a plain shift away from a register, where at byte 1 it took twice the instructions to
/// write it to the key and the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(2))]
pub(crate) struct Mac(pub [u8; 6]);

/// A compiled action list: the ops and the IR actions their [`CompiledAction::Slow`]s refer to.
#[derive(Clone, Debug, Default)]
pub(crate) struct CompiledActions {
    pub ops: Box<[CompiledAction]>,
    pub slow: Box<[Action]>,
}

impl CompiledActions {
    pub fn compile(actions: &[Action]) -> CompiledActions {
        let mut slow = Vec::new();
        let ops = actions.iter().map(|a| op_of(*a, &mut slow)).collect();
        CompiledActions {
            ops,
            slow: slow.into(),
        }
    }
}

/// The op for one action outside a compiled list (the action set, packet-out): an action
/// without a specialised form becomes `Slow(0)`, to run with `slice::from_ref(&a)` as the
/// slow list.
#[inline(always)]
pub(crate) fn compile_action(a: Action) -> CompiledAction {
    match a {
        Action::Output { port, max_len } if port == port::CONTROLLER => {
            CompiledAction::Controller(max_len)
        }
        Action::Output { port, .. } if port <= port::MAX => CompiledAction::Output(port),
        Action::Output { port, .. } => CompiledAction::Reserved(port),
        Action::Group(g) => CompiledAction::Group(g),
        Action::SetQueue(q) => CompiledAction::SetQueue(q),
        Action::SetField(Field::EthDst, v) => CompiledAction::SetEthDst(Mac(v.to_mac())),
        Action::SetField(Field::EthSrc, v) => CompiledAction::SetEthSrc(Mac(v.to_mac())),
        Action::SetField(Field::Ipv4Src, v) => CompiledAction::SetIpv4Src(v.0 as u32),
        Action::SetField(Field::Ipv4Dst, v) => CompiledAction::SetIpv4Dst(v.0 as u32),
        Action::DecNwTtl => CompiledAction::DecNwTtl,
        _ => CompiledAction::Slow(0),
    }
}

/// The op for `a`, pushing it onto `slow` when it has no specialised form.
fn op_of(a: Action, slow: &mut Vec<Action>) -> CompiledAction {
    match (compile_action(a), u16::try_from(slow.len())) {
        (CompiledAction::Slow(_), Ok(i)) => {
            slow.push(a);
            CompiledAction::Slow(i)
        }
        // More than 65535 unusual actions in one list cannot come from a 64 KiB message.
        (CompiledAction::Slow(_), Err(_)) => CompiledAction::Reserved(port::ANY),
        (op, _) => op,
    }
}

/// The IR action an op stands for (`slow` is the list the op came from).
pub(crate) fn action_of(op: CompiledAction, slow: &[Action]) -> Option<Action> {
    Some(match op {
        CompiledAction::Output(port) | CompiledAction::Reserved(port) => {
            Action::Output { port, max_len: 0 }
        }
        CompiledAction::Controller(max_len) => Action::Output {
            port: port::CONTROLLER,
            max_len,
        },
        CompiledAction::Group(g) => Action::Group(g),
        CompiledAction::SetQueue(q) => Action::SetQueue(q),
        CompiledAction::SetEthDst(Mac(mac)) => {
            Action::SetField(Field::EthDst, FieldValue::mac(mac))
        }
        CompiledAction::SetEthSrc(Mac(mac)) => {
            Action::SetField(Field::EthSrc, FieldValue::mac(mac))
        }
        CompiledAction::SetIpv4Src(a) => Action::SetField(Field::Ipv4Src, FieldValue::from(a)),
        CompiledAction::SetIpv4Dst(a) => Action::SetField(Field::Ipv4Dst, FieldValue::from(a)),
        CompiledAction::DecNwTtl => Action::DecNwTtl,
        CompiledAction::Slow(i) => *slow.get(usize::from(i))?,
    })
}

/// `actions` rewritten into the order the action set executes them (one per kind, last wins).
pub(crate) fn action_set_order(actions: &[Action]) -> Vec<Action> {
    let mut set = ActionSet::default();
    set.write(actions);
    let mut out = Vec::with_capacity(actions.len());
    set.for_each(|a| {
        out.push(a);
        true
    });
    out
}

/// The InSP instruction's parameters.
#[derive(Clone, Debug)]
pub(crate) struct InspStep {
    pub template_id: u32,
    pub actions: Vec<Action>,
}

/// The parts of a program most entries lack, behind one pointer.
#[derive(Clone, Debug, Default)]
pub(crate) struct Rare {
    /// All the ops, when there are more than fit inline.
    ops: Box<[CompiledAction]>,
    /// Actions without a specialised op, referred to by [`CompiledAction::Slow`].
    pub slow: Box<[Action]>,
    pub insp: Option<InspStep>,
    pub metadata: Option<(u64, u64)>,
}

/// Program flag bits.
pub(crate) mod flag {
    /// Nothing but a goto-table: the packet moves on untouched.
    pub const GOTO_ONLY: u8 = 1 << 0;
    pub const METER: u8 = 1 << 1;
    pub const CLEAR: u8 = 1 << 2;
    pub const WRITE: u8 = 1 << 3;
    pub const INSP: u8 = 1 << 4;
    pub const METADATA: u8 = 1 << 5;
}

/// `Program::goto` when the entry has no goto-table.
pub(crate) const NO_GOTO: u8 = u8::MAX;

/// Compiled instructions, executed in the order of OpenFlow 1.3 section 5.9: meter,
/// apply-actions, (InSP), clear-actions, write-actions, write-metadata, goto-table.
/// 48 bytes, so that a flow entry is one cache line.
#[derive(Clone, Debug)]
#[repr(C)]
pub(crate) struct Program {
    pub flags: u8,
    /// The goto-table target or [`NO_GOTO`].
    pub goto: u8,
    apply_len: u16,
    write_len: u16,
    /// The ops did not fit inline: they are in `rare`.
    spilled: bool,
    /// Some op is [`CompiledAction::Slow`]: its action is in `rare`. (These flags keep a usual program
    /// from loading `rare`, a line elsewhere.)
    has_slow: bool,
    /// The entry is a table-miss entry (priority 0, match-all), so a CONTROLLER output
    /// reports `NO_MATCH`. Set by the datapath from the entry's match; kept here, in the
    /// entry's line, beside what a packet reads anyway.
    pub table_miss: bool,
    pub meter: u32,
    /// Apply-Actions followed by Write-Actions (sorted in action-set order), when they fit.
    inline: [CompiledAction; INLINE],
    rare: Option<Arc<Rare>>,
}

const _: () = assert!(core::mem::size_of::<Program>() == 48);

/// Collects ops inline while they fit, on the heap beyond (no allocation for short programs:
/// compiling runs once per flow-mod).
struct ActionBuf {
    inline: [CompiledAction; INLINE],
    len: usize,
    heap: Vec<CompiledAction>,
}

impl ActionBuf {
    fn new() -> Self {
        ActionBuf {
            inline: [CompiledAction::DecNwTtl; INLINE],
            len: 0,
            heap: Vec::new(),
        }
    }

    fn push(&mut self, op: CompiledAction) {
        if self.heap.is_empty() {
            if let Some(slot) = self.inline.get_mut(self.len) {
                *slot = op;
                self.len += 1;
                return;
            }
            self.heap.extend_from_slice(&self.inline);
        }
        self.heap.push(op);
        self.len += 1;
    }
}

impl Program {
    /// Compiles the instructions of an entry of `table`. A goto-table that does not go
    /// forward (which the switch core refuses) ends the pipeline, so that a packet can never
    /// loop: the datapath relies on every goto going forward.
    pub fn compile(instructions: &[Instruction], table: u8) -> Program {
        let mut p = Program {
            flags: 0,
            goto: NO_GOTO,
            apply_len: 0,
            write_len: 0,
            spilled: false,
            has_slow: false,
            table_miss: false,
            meter: 0,
            inline: [CompiledAction::DecNwTtl; INLINE],
            rare: None,
        };
        let mut rare = Rare::default();
        let mut slow = Vec::new();
        let mut ops = ActionBuf::new();
        for ins in instructions {
            match ins {
                Instruction::GotoTable(t) if *t > table => p.goto = (*t).min(NO_GOTO - 1),
                Instruction::GotoTable(_) => {}
                Instruction::WriteMetadata { value, mask } => {
                    p.flags |= flag::METADATA;
                    rare.metadata = Some((*value, *mask));
                }
                Instruction::ApplyActions(a) => {
                    for action in a {
                        if p.apply_len < u16::MAX {
                            ops.push(op_of(*action, &mut slow));
                            p.apply_len += 1;
                        }
                    }
                }
                Instruction::WriteActions(_) => p.flags |= flag::WRITE,
                Instruction::ClearActions => p.flags |= flag::CLEAR,
                Instruction::Meter(m) => {
                    p.flags |= flag::METER;
                    p.meter = *m;
                }
                Instruction::Insp {
                    template_id,
                    actions,
                } => {
                    p.flags |= flag::INSP;
                    rare.insp = Some(InspStep {
                        template_id: *template_id,
                        actions: actions.clone(),
                    });
                }
            }
        }
        if p.flags & flag::WRITE != 0 {
            let mut set = ActionSet::default();
            for ins in instructions {
                if let Instruction::WriteActions(a) = ins {
                    set.write(a);
                }
            }
            set.for_each(|a| {
                if p.write_len < u16::MAX {
                    ops.push(op_of(a, &mut slow));
                    p.write_len += 1;
                }
                true
            });
        }
        if p.goto != NO_GOTO && ops.len == 0 && p.flags == 0 {
            p.flags = flag::GOTO_ONLY;
        }
        p.inline = ops.inline;
        if !ops.heap.is_empty() {
            p.spilled = true;
            rare.ops = ops.heap.into();
        }
        p.has_slow = !slow.is_empty();
        rare.slow = slow.into();
        if p.spilled || p.has_slow || rare.insp.is_some() || rare.metadata.is_some() {
            p.rare = Some(Arc::new(rare));
        }
        p
    }

    #[inline(always)]
    fn all(&self) -> &[CompiledAction] {
        if self.spilled {
            self.rare.as_deref().map_or(&[], |r| &r.ops)
        } else {
            &self.inline
        }
    }

    /// The Apply-Actions list, in order.
    #[inline(always)]
    pub fn apply(&self) -> &[CompiledAction] {
        self.all().get(..usize::from(self.apply_len)).unwrap_or(&[])
    }

    /// The Write-Actions, in action-set order.
    #[inline(always)]
    pub fn write(&self) -> &[CompiledAction] {
        let start = usize::from(self.apply_len);
        self.all()
            .get(start..start + usize::from(self.write_len))
            .unwrap_or(&[])
    }

    /// The IR actions of the program's [`CompiledAction::Slow`]s.
    #[inline(always)]
    pub fn slow(&self) -> &[Action] {
        if self.has_slow {
            self.rare.as_deref().map_or(&[], |r| &r.slow)
        } else {
            &[]
        }
    }

    /// The InSP instruction (its flag is read first: `rare` lies in a line of its own).
    pub fn insp(&self) -> Option<&InspStep> {
        if self.flags & flag::INSP == 0 {
            return None;
        }
        self.rare.as_deref().and_then(|r| r.insp.as_ref())
    }

    /// The Write-Metadata instruction (flag first, as for [`Self::insp`]).
    pub fn metadata(&self) -> Option<(u64, u64)> {
        if self.flags & flag::METADATA == 0 {
            return None;
        }
        self.rare.as_deref().and_then(|r| r.metadata)
    }

    /// The goto-table target.
    #[inline(always)]
    pub fn goto(&self) -> Option<u8> {
        (self.goto != NO_GOTO).then_some(self.goto)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_round_trip_to_the_actions_they_came_from() {
        let actions = [
            Action::Output {
                port: 7,
                max_len: 0,
            },
            Action::Output {
                port: port::CONTROLLER,
                max_len: 128,
            },
            Action::Output {
                port: port::FLOOD,
                max_len: 0,
            },
            Action::Group(3),
            Action::SetQueue(2),
            Action::SetField(Field::EthDst, FieldValue::mac([1, 2, 3, 4, 5, 6])),
            Action::SetField(Field::Ipv4Src, FieldValue::from(0x0a00_0001u32)),
            Action::SetField(Field::VlanVid, FieldValue::from(0x1005u16)),
            Action::DecNwTtl,
            Action::PopVlan,
        ];
        let list = CompiledActions::compile(&actions);
        assert_eq!(list.slow.len(), 2, "set vlan_vid and pop_vlan have no op");
        let back: Vec<Action> = list
            .ops
            .iter()
            .filter_map(|op| action_of(*op, &list.slow))
            .collect();
        assert_eq!(back, actions);
    }

    #[test]
    fn goto_only_needs_nothing_else() {
        let p = Program::compile(&[Instruction::GotoTable(4)], 0);
        assert_eq!((p.flags, p.goto()), (flag::GOTO_ONLY, Some(4)));
        let p = Program::compile(
            &[
                Instruction::GotoTable(4),
                Instruction::WriteMetadata { value: 1, mask: 1 },
            ],
            0,
        );
        assert_eq!(p.flags & flag::GOTO_ONLY, 0);
        assert_eq!(p.metadata(), Some((1, 1)));
    }

    #[test]
    fn a_goto_that_does_not_go_forward_ends_the_pipeline() {
        for table in [4, 5] {
            let p = Program::compile(&[Instruction::GotoTable(4)], table);
            assert_eq!((p.flags & flag::GOTO_ONLY, p.goto()), (0, None));
        }
        assert_eq!(
            Program::compile(&[Instruction::GotoTable(4)], 3).goto(),
            Some(4)
        );
    }

    #[test]
    fn programs_around_the_inline_length_keep_their_ops() {
        for n in 0..=INLINE as u32 + 2 {
            let apply: Vec<Action> = (1..=n)
                .map(|port| Action::Output { port, max_len: 0 })
                .collect();
            let p = Program::compile(&[Instruction::ApplyActions(apply)], 0);
            let ports: Vec<CompiledAction> = (1..=n).map(CompiledAction::Output).collect();
            assert_eq!(p.apply(), ports.as_slice(), "{n} ops");
            assert_eq!(p.spilled, n as usize > INLINE, "{n} ops");
        }
    }

    #[test]
    fn long_programs_spill_to_the_heap_in_order() {
        let apply: Vec<Action> = (1..=7)
            .map(|port| Action::Output { port, max_len: 0 })
            .collect();
        let p = Program::compile(
            &[
                Instruction::ApplyActions(apply),
                Instruction::WriteActions(vec![Action::Group(9), Action::DecNwTtl]),
            ],
            0,
        );
        let ports: Vec<CompiledAction> = (1..=7).map(CompiledAction::Output).collect();
        assert_eq!(p.apply(), ports.as_slice());
        assert_eq!(
            p.write(),
            &[CompiledAction::DecNwTtl, CompiledAction::Group(9)]
        );
    }
}
