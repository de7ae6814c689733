//! Datapath threads: each owns a datapath reader, receives from its ports in batches, runs the
//! pipeline, transmits, and executes the packet-outs the agent queues. Packet-ins go to the
//! agent as events.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::Duration;

use agent::session::Event;
use agent::{Agent, EventSender};
use dataplane::batch::{PacketInEvent, PacketSink};
use dataplane::datapath::DatapathReader;
use ofp::{Match, OxmField, OxmValue, PacketIn};
use switch_core::{PacketOutJob, PacketOutQueue};

/// Packet-outs waiting for a datapath thread; beyond this the agent's queue refuses more,
/// as a full OpenFlow channel would.
pub const PACKET_OUT_QUEUE: usize = 4096;

/// The agent's end of the packet-out queue.
pub struct PacketOutSender(pub SyncSender<PacketOutJob>);

impl PacketOutQueue for PacketOutSender {
    fn submit(&mut self, job: PacketOutJob) {
        if let Err(TrySendError::Full(_)) = self.0.try_send(job) {
            // Dropped like a packet on a congested link; the datapath counts nothing here
            // because the packet never entered it.
        }
    }
}

/// Delivers datapath results: frames to ports, packet-ins to the agent.
pub struct Sink<'a> {
    pub agent: &'a Agent,
    pub events: &'a EventSender,
    pub transmit: &'a mut dyn FnMut(u32, &[u8]),
}

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

impl PacketSink for Sink<'_> {
    fn output(&mut self, port: u32, frame: &[u8]) {
        (self.transmit)(port, frame);
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

/// Runs packet-outs for a switch without ports, until the agent goes away.
pub fn run_without_ports(agent: Agent, mut reader: DatapathReader, jobs: Receiver<PacketOutJob>) {
    let events = agent.events();
    let mut discard = |_: u32, _: &[u8]| {};
    loop {
        match jobs.recv_timeout(Duration::from_millis(500)) {
            Ok(job) => {
                let mut sink = Sink {
                    agent: &agent,
                    events: &events,
                    transmit: &mut discard,
                };
                let now = switch_core::clock::now_ns();
                reader.packet_out(now, job.in_port, &job.actions, &job.frame, &mut sink);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}
