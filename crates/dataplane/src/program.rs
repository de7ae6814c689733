//! A flow entry's instructions compiled for the hot path: fixed fields instead of a list to
//! interpret, the action lists stored inline in the entry when short (no pointer chase per
//! packet), and Write-Actions pre-sorted into action-set order so an entry that ends the
//! pipeline with an empty action set runs them directly without building the set.

use crate::actions::ActionSet;
use crate::ir::{Action, Instruction};
use std::sync::Arc;

/// Actions kept inside the entry; longer programs share one heap slice.
const INLINE: usize = 4;

/// An action decoded for the hot path: the frequent ones carry their operands ready to use,
/// the rest keep the IR action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Output to a port (any but CONTROLLER, for which `max_len` matters).
    Output(u32),
    /// Output to CONTROLLER with its `max_len`.
    Controller(u16),
    Group(u32),
    SetQueue(u32),
    SetEthDst([u8; 6]),
    SetEthSrc([u8; 6]),
    DecNwTtl,
    Other(Action),
}

impl From<Action> for Step {
    #[inline(always)]
    fn from(a: Action) -> Step {
        match a {
            Action::Output { port, max_len } if port == crate::ir::port::CONTROLLER => {
                Step::Controller(max_len)
            }
            Action::Output { port, .. } => Step::Output(port),
            Action::Group(g) => Step::Group(g),
            Action::SetQueue(q) => Step::SetQueue(q),
            Action::SetField(crate::key::Field::EthDst, v) => Step::SetEthDst(v.to_mac()),
            Action::SetField(crate::key::Field::EthSrc, v) => Step::SetEthSrc(v.to_mac()),
            Action::DecNwTtl => Step::DecNwTtl,
            other => Step::Other(other),
        }
    }
}

impl From<Step> for Action {
    fn from(s: Step) -> Action {
        match s {
            Step::Output(port) => Action::Output { port, max_len: 0 },
            Step::Controller(max_len) => Action::Output {
                port: crate::ir::port::CONTROLLER,
                max_len,
            },
            Step::Group(g) => Action::Group(g),
            Step::SetQueue(q) => Action::SetQueue(q),
            Step::SetEthDst(mac) => {
                Action::SetField(crate::key::Field::EthDst, crate::key::FieldValue::mac(mac))
            }
            Step::SetEthSrc(mac) => {
                Action::SetField(crate::key::Field::EthSrc, crate::key::FieldValue::mac(mac))
            }
            Step::DecNwTtl => Action::DecNwTtl,
            Step::Other(a) => a,
        }
    }
}

/// Decodes an action list.
pub(crate) fn steps(actions: &[Action]) -> Box<[Step]> {
    actions.iter().map(|a| Step::from(*a)).collect()
}

#[derive(Clone, Debug)]
enum Store {
    Inline([Step; INLINE]),
    Heap(Arc<[Step]>),
}

/// The InSP instruction's parameters.
#[derive(Clone, Debug)]
pub(crate) struct InspStep {
    pub template_id: u32,
    pub actions: Vec<Action>,
}

/// Compiled instructions, executed in the order of OpenFlow 1.3 section 5.9: meter,
/// apply-actions, (InSP), clear-actions, write-actions, write-metadata, goto-table.
#[derive(Clone, Debug)]
#[repr(C)]
pub(crate) struct Program {
    apply_len: u16,
    write_len: u16,
    pub goto: Option<u8>,
    /// Nothing but a goto-table: the packet moves on untouched (without a goto, the action
    /// set would run, so such entries do not qualify).
    pub goto_only: bool,
    pub clear: bool,
    pub has_write: bool,
    pub meter: Option<u32>,
    pub insp: Option<Arc<InspStep>>,
    pub metadata: Option<(u64, u64)>,
    /// Apply-Actions followed by Write-Actions (sorted in action-set order).
    store: Store,
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

/// Collects steps inline while they fit, on the heap beyond (no allocation for short
/// programs: compiling runs once per flow-mod).
struct StepBuf {
    inline: [Step; INLINE],
    len: usize,
    heap: Vec<Step>,
}

impl StepBuf {
    fn new() -> Self {
        StepBuf {
            inline: [Step::SetQueue(0); INLINE],
            len: 0,
            heap: Vec::new(),
        }
    }

    fn push(&mut self, step: Step) {
        if self.heap.is_empty() {
            if let Some(slot) = self.inline.get_mut(self.len) {
                *slot = step;
                self.len += 1;
                return;
            }
            self.heap.extend_from_slice(&self.inline);
        }
        self.heap.push(step);
        self.len += 1;
    }

    fn into_store(self) -> Store {
        if self.heap.is_empty() {
            Store::Inline(self.inline)
        } else {
            Store::Heap(self.heap.into())
        }
    }
}

impl Program {
    pub fn compile(instructions: &[Instruction]) -> Program {
        let mut p = Program {
            store: Store::Inline([Step::SetQueue(0); INLINE]),
            apply_len: 0,
            write_len: 0,
            meter: None,
            clear: false,
            has_write: false,
            metadata: None,
            goto: None,
            goto_only: false,
            insp: None,
        };
        let mut steps = StepBuf::new();
        for ins in instructions {
            match ins {
                Instruction::GotoTable(t) => p.goto = Some(*t),
                Instruction::WriteMetadata { value, mask } => p.metadata = Some((*value, *mask)),
                Instruction::ApplyActions(a) => {
                    for action in a {
                        if p.apply_len < u16::MAX {
                            steps.push(Step::from(*action));
                            p.apply_len += 1;
                        }
                    }
                }
                Instruction::WriteActions(_) => p.has_write = true,
                Instruction::ClearActions => p.clear = true,
                Instruction::Meter(m) => p.meter = Some(*m),
                Instruction::Insp {
                    template_id,
                    actions,
                } => {
                    p.insp = Some(Arc::new(InspStep {
                        template_id: *template_id,
                        actions: actions.clone(),
                    }));
                }
            }
        }
        if p.has_write {
            let mut set = ActionSet::default();
            for ins in instructions {
                if let Instruction::WriteActions(a) = ins {
                    set.write(a);
                }
            }
            set.for_each(|a| {
                if p.write_len < u16::MAX {
                    steps.push(Step::from(a));
                    p.write_len += 1;
                }
                true
            });
        }
        p.goto_only = p.goto.is_some()
            && steps.len == 0
            && p.meter.is_none()
            && p.insp.is_none()
            && !p.clear
            && !p.has_write
            && p.metadata.is_none();
        p.store = steps.into_store();
        p
    }

    fn all(&self) -> &[Step] {
        match &self.store {
            Store::Inline(a) => a,
            Store::Heap(a) => a,
        }
    }

    /// The Apply-Actions list, in order.
    #[inline(always)]
    pub fn apply(&self) -> &[Step] {
        self.all().get(..usize::from(self.apply_len)).unwrap_or(&[])
    }

    /// The Write-Actions, in action-set order.
    #[inline(always)]
    pub fn write(&self) -> &[Step] {
        let start = usize::from(self.apply_len);
        self.all()
            .get(start..start + usize::from(self.write_len))
            .unwrap_or(&[])
    }
}
