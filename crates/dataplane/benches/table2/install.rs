//! A workload installed as a controller installs it: a switch core over a new datapath, its
//! ports 1..=[`EXTERNAL`] up, and the workload's encoded messages decoded, validated and
//! applied through the core, which drives the datapath through its op sink.

use super::cases::Workload;
use super::reference::EXTERNAL;
use dataplane::datapath::{DatapathConfig, DatapathReaderFactory};
use ofp::{Message, Port, PortState};
use switch_core::{DiscardPacketOuts, Switch};

/// The switch core with the workload installed and published, and its datapath's readers.
pub fn install(w: &Workload) -> Result<(Switch, DatapathReaderFactory), String> {
    // Packet-outs have no place in these benchmarks.
    let (mut switch, readers) = Switch::with_datapath(
        1,
        DatapathConfig::default(),
        |w| Box::new(w),
        Box::new(DiscardPacketOuts),
    );
    for port_no in 1..=EXTERNAL {
        let desc = Port {
            port_no,
            name: format!("p{port_no}"),
            state: PortState::LIVE,
            ..Port::default()
        };
        switch.add_port(desc, 0);
    }
    for (i, bytes) in w.messages.iter().enumerate() {
        apply_message(&mut switch, bytes).map_err(|e| format!("message {i}: {e}"))?;
    }
    switch.publish();
    Ok((switch, readers))
}

/// Decodes one encoded flow-mod or group-mod and applies it through the switch core.
pub fn apply_message(switch: &mut Switch, bytes: &[u8]) -> Result<(), String> {
    match ofp::decode(bytes) {
        Ok((_, Message::FlowMod(fm))) => switch.flow_mod(fm, 0).map(drop),
        Ok((_, Message::GroupMod(gm))) => switch.group_mod(&gm, 0).map(drop),
        Ok((_, other)) => return Err(format!("unexpected message {other:?}")),
        Err(e) => return Err(format!("does not decode: {e:?}")),
    }
    .map_err(|e| format!("refused: {e:?}"))
}
