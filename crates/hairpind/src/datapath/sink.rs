//! Where a datapath thread delivers the pipeline's results: frames to its ports, packet-ins
//! to the agent.

use agent::session::Event;
use agent::{Agent, EventSender};
use dataplane::batch::{PacketInEvent, PacketSink};
use ofp::{Match, OxmField, OxmValue, PacketIn};

use super::ports::ThreadPorts;

/// The OpenFlow 1.3 packet-in match: in_port, plus in_phy_port, metadata and tunnel id
/// where they carry information (spec 7.4.1).
fn packet_in_match(ev: &PacketInEvent<'_>) -> Match {
    let mut fields = vec![OxmField::exact(OxmValue::InPort(ev.in_port))];
    if ev.in_phy_port != ev.in_port {
        fields.push(OxmField::exact(OxmValue::InPhyPort(ev.in_phy_port)));
    }
    if ev.metadata != 0 {
        fields.push(OxmField::exact(OxmValue::Metadata(ev.metadata)));
    }
    if ev.tunnel_id != 0 {
        fields.push(OxmField::exact(OxmValue::TunnelId(ev.tunnel_id)));
    }
    Match { fields }
}

/// Delivers datapath results: frames to ports, packet-ins to the agent.
pub struct Sink<'a> {
    pub agent: &'a Agent,
    pub events: &'a EventSender,
    pub ports: &'a mut ThreadPorts,
}

impl PacketSink for Sink<'_> {
    fn output(&mut self, port: u32, frame: &[u8]) {
        self.ports.transmit(port, frame);
    }

    fn packet_in(&mut self, ev: &PacketInEvent<'_>) {
        let cookie = match ev.flow {
            Some(flow) => self
                .agent
                .with_switch(|s| s.cookie_of(ev.table_id, flow))
                .unwrap_or(u64::MAX),
            None => u64::MAX,
        };
        self.events.send(Event::PacketIn(PacketIn {
            buffer_id: ev.buffer_id,
            total_len: ev.total_len,
            reason: ev.reason as u8,
            table_id: ev.table_id,
            cookie,
            match_: packet_in_match(ev),
            data: ev.data.to_vec(),
        }));
    }
}
