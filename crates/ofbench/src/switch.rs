//! The flow-mods the benchmarks install, the same for every switch.

use ofp::{Action, FlowMod, FlowModCommand, Instruction, Match, Message};

/// Empties every table.
pub fn delete_all() -> Message {
    let mut fm = FlowMod::add(ofp::OFPTT_ALL, 0, Match::default(), Vec::new());
    fm.command = FlowModCommand::Delete;
    Message::FlowMod(fm)
}

/// Adds a flow to table 0 that applies `actions`.
pub fn add(priority: u16, match_: Match, actions: Vec<Action>) -> Message {
    Message::FlowMod(FlowMod::add(
        0,
        priority,
        match_,
        vec![Instruction::ApplyActions(actions)],
    ))
}

/// Output to the controller with `max_len` bytes (0xffff: the whole packet, unbuffered).
pub fn to_controller(max_len: u16) -> Action {
    Action::Output {
        port: ofp::OFPP_CONTROLLER,
        max_len,
    }
}
