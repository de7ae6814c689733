//! What a rule does, in the terms hardware tables understand: forward to ports, drop, hand the
//! packet to the CPU, or continue at a later table. Anything else (header rewrites, groups,
//! meters, reserved ports, InSP) is software's work: such a rule can at most go down as an
//! entry that sends its packets to the CPU (seed 003's copy-to-CPU).

use dataplane::ir::{port, Action, Instruction};

use crate::profile::HwActionKind;

/// A rule's instructions as hardware could run them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HwProgram {
    /// Send a copy out of each port (physical port numbers, never the ingress port: software
    /// drops that output, so hardware punts such packets).
    Forward(Vec<u32>),
    /// Drop the packet.
    Drop,
    /// Output to CONTROLLER (with or without other outputs): software raises the packet-in.
    ToCpu,
    /// Continue at this later table, with nothing done to the packet yet.
    Goto(u8),
    /// Needs software.
    Software,
}

impl HwProgram {
    /// Reads a rule's compiled instructions.
    pub fn of(instructions: &[Instruction]) -> HwProgram {
        let mut outputs: Vec<u32> = Vec::new();
        let mut goto = None;
        let mut to_cpu = false;
        let mut applied = false;
        let mut written = false;
        for ins in instructions {
            match ins {
                Instruction::GotoTable(t) => goto = Some(*t),
                Instruction::ApplyActions(actions) if !applied => {
                    applied = true;
                    if !take_outputs(actions, &mut outputs, &mut to_cpu) {
                        return HwProgram::Software;
                    }
                }
                Instruction::WriteActions(actions) if !written => {
                    written = true;
                    // An action set holds one output; the last written one wins.
                    let mut set = Vec::new();
                    if !take_outputs(actions, &mut set, &mut to_cpu) {
                        return HwProgram::Software;
                    }
                    if let Some(last) = set.last() {
                        outputs.push(*last);
                    }
                }
                _ => return HwProgram::Software,
            }
        }
        match goto {
            Some(t) if outputs.is_empty() && !to_cpu && !written && !applied => HwProgram::Goto(t),
            Some(_) => HwProgram::Software,
            None if to_cpu => HwProgram::ToCpu,
            None if outputs.is_empty() => HwProgram::Drop,
            None => HwProgram::Forward(outputs),
        }
    }

    /// The hardware action kind this needs (`None`: software only).
    pub fn kind(&self) -> Option<HwActionKind> {
        match self {
            HwProgram::Forward(_) => Some(HwActionKind::Output),
            HwProgram::Drop => Some(HwActionKind::Drop),
            HwProgram::ToCpu => Some(HwActionKind::Controller),
            HwProgram::Goto(_) => Some(HwActionKind::Goto),
            HwProgram::Software => None,
        }
    }
}

/// Appends the physical output ports of an action list; false when it holds anything else.
fn take_outputs(actions: &[Action], outputs: &mut Vec<u32>, to_cpu: &mut bool) -> bool {
    for a in actions {
        match a {
            Action::Output { port: p, .. } if *p == port::CONTROLLER => *to_cpu = true,
            Action::Output { port: p, .. } if *p <= port::MAX => outputs.push(*p),
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(p: u32) -> Action {
        Action::Output {
            port: p,
            max_len: 0,
        }
    }

    #[test]
    fn reads_what_hardware_can_run() {
        use Instruction as I;
        assert_eq!(HwProgram::of(&[]), HwProgram::Drop);
        assert_eq!(
            HwProgram::of(&[I::ApplyActions(vec![out(1), out(2)])]),
            HwProgram::Forward(vec![1, 2])
        );
        assert_eq!(
            HwProgram::of(&[I::WriteActions(vec![out(3)])]),
            HwProgram::Forward(vec![3])
        );
        assert_eq!(
            HwProgram::of(&[I::ApplyActions(vec![out(1), out(port::CONTROLLER)])]),
            HwProgram::ToCpu
        );
        assert_eq!(HwProgram::of(&[I::GotoTable(2)]), HwProgram::Goto(2));
        assert_eq!(
            HwProgram::of(&[I::ApplyActions(vec![out(1)]), I::GotoTable(2)]),
            HwProgram::Software,
            "a goto after actions would apply them twice if software took over"
        );
        assert_eq!(
            HwProgram::of(&[I::ApplyActions(vec![Action::PopVlan, out(1)])]),
            HwProgram::Software
        );
        assert_eq!(
            HwProgram::of(&[I::ApplyActions(vec![out(port::FLOOD)])]),
            HwProgram::Software
        );
        assert_eq!(HwProgram::of(&[I::Meter(1)]), HwProgram::Software);
    }
}
