//! Small builders for what most controllets send: a table-miss entry to the controller, flows
//! that output to a port, packet-outs, and the in_port and Ethernet addresses of a packet-in.

use ofp::{
    Action, FlowMod, FlowModCommand, Instruction, Match, Message, OxmField, OxmValue, PacketIn,
    PacketOut, OFPCML_NO_BUFFER, OFPP_CONTROLLER, OFP_NO_BUFFER,
};

/// A 48-bit Ethernet address.
pub type Mac = [u8; 6];

/// Output to `port`, whole packets when it is the controller.
pub fn output(port: u32) -> Action {
    Action::Output {
        port,
        max_len: if port == OFPP_CONTROLLER {
            OFPCML_NO_BUFFER
        } else {
            0
        },
    }
}

/// The lowest-priority entry of table 0 that sends every packet to the controller.
pub fn table_miss_to_controller() -> Message {
    Message::FlowMod(FlowMod::add(
        0,
        0,
        Match::default(),
        vec![Instruction::ApplyActions(vec![output(OFPP_CONTROLLER)])],
    ))
}

/// A match on the given fields, exactly.
pub fn exact(values: &[OxmValue]) -> Match {
    Match {
        fields: values.iter().map(|&v| OxmField::exact(v)).collect(),
    }
}

/// A flow in table 0 that applies `actions`.
pub fn flow(priority: u16, match_: Match, actions: Vec<Action>) -> FlowMod {
    FlowMod::add(
        0,
        priority,
        match_,
        vec![Instruction::ApplyActions(actions)],
    )
}

/// Deletes the flows of table 0 that `match_` covers.
pub fn delete(match_: Match) -> Message {
    Message::FlowMod(FlowMod {
        command: FlowModCommand::Delete,
        ..FlowMod::add(0, 0, match_, Vec::new())
    })
}

/// Sends the packet of `pin` out with `actions` (by buffer id when the switch kept it).
pub fn packet_out(pin: &PacketIn, actions: Vec<Action>) -> Message {
    let buffered = pin.buffer_id != OFP_NO_BUFFER;
    Message::PacketOut(PacketOut {
        buffer_id: pin.buffer_id,
        in_port: in_port(pin).unwrap_or(ofp::OFPP_CONTROLLER),
        actions,
        data: if buffered {
            Vec::new()
        } else {
            pin.data.clone()
        },
    })
}

/// Sends `frame` out of `port`.
pub fn send_frame(port: u32, frame: Vec<u8>) -> Message {
    Message::PacketOut(PacketOut {
        buffer_id: OFP_NO_BUFFER,
        in_port: OFPP_CONTROLLER,
        actions: vec![output(port)],
        data: frame,
    })
}

/// The port a packet-in came in on.
pub fn in_port(pin: &PacketIn) -> Option<u32> {
    pin.match_.fields.iter().find_map(|f| match f.value {
        OxmValue::InPort(port) => Some(port),
        _ => None,
    })
}

/// Destination and source Ethernet addresses of a frame.
pub fn eth_addresses(frame: &[u8]) -> Option<(Mac, Mac)> {
    let dst = frame.get(0..6)?.try_into().ok()?;
    let src = frame.get(6..12)?.try_into().ok()?;
    Some((dst, src))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_in_fields_and_packet_outs() {
        let pin = PacketIn {
            buffer_id: OFP_NO_BUFFER,
            total_len: 14,
            reason: 0,
            table_id: 0,
            cookie: 0,
            match_: exact(&[OxmValue::InPort(3)]),
            data: vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 8, 0],
        };
        assert_eq!(in_port(&pin), Some(3));
        assert_eq!(
            eth_addresses(&pin.data),
            Some(([1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]))
        );
        assert_eq!(eth_addresses(&[0; 11]), None);
        let Message::PacketOut(out) = packet_out(&pin, vec![output(1)]) else {
            panic!()
        };
        assert_eq!((out.in_port, out.data.len()), (3, 14));
        // Encodes and decodes as the switch would read it.
        let wire = ofp::encode_to_vec(1, &table_miss_to_controller());
        assert!(ofp::decode(&wire).is_ok());
    }
}
