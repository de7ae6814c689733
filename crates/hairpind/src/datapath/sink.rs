//! Where a datapath thread delivers the pipeline's results: frames to its ports, packet-ins
//! to the controllers.
//!
//! A packet-in is encoded straight from the batch (the frame copied once, into the message,
//! nothing allocated once the buffers have grown) and written to the controllers' sockets by
//! this thread when the batch ends, so the agent is not woken for it and one controller gets a
//! batch's packet-ins in one write.
//!
//! While the thread serves a controller (it sent a packet-in or ran a packet-out lately) it
//! receives in smaller bursts: a controller's packet then waits behind a few dozen packets of
//! a busy port, not a whole batch (at full load on veth, 256 packets are about a millisecond
//! of transmits). After each port's burst it also reads what the controllers sent, so their
//! answers (packet-outs) are handled and sent by this thread, which is awake anyway, with no
//! wake-up of the agent's thread and no wait for it to be scheduled or for the round to end.
//! A thread that never sleeps takes the controllers' input from the agent meanwhile, so their
//! answers do not wake the agent at all.

use agent::{Agent, Channels};
use dataplane::batch::{PacketInEvent, PacketSink};
use ofp::{Match, OxmField, OxmValue, PacketIn};

use super::ports::ThreadPorts;

/// Packets per port and round while a controller is being served.
const CONTROL_BURST: usize = 32;
/// How long after a packet-in or a packet-out the smaller bursts last.
const CONTROL_HOLD_NS: u64 = 20_000_000;
/// How long before a thread that took the controllers' input stops serving it their tasks
/// watch their sockets again: more than the tasks' timer granularity (a millisecond), so
/// that some thread always serves them.
const HANDBACK_NS: u64 = 3_000_000;

/// A datapath thread's path to the controllers.
pub struct ToController {
    channels: Channels,
    /// The packet-in being encoded, kept so its match's storage is reused.
    scratch: PacketIn,
    /// Packet-ins queued since the last flush.
    queued: usize,
    /// Until when the thread receives in [`CONTROL_BURST`]s.
    serving_until: u64,
    /// The thread never sleeps, so while it serves a controller it takes the controllers'
    /// input from the agent's tasks ([`Channels::take_input_until`]).
    takes_input: bool,
}

impl ToController {
    pub fn new(agent: &Agent, takes_input: bool) -> Self {
        Self {
            channels: agent.channels(),
            scratch: PacketIn {
                buffer_id: 0,
                total_len: 0,
                reason: 0,
                table_id: 0,
                cookie: 0,
                match_: Match::default(),
                data: Vec::new(),
            },
            queued: 0,
            serving_until: 0,
            takes_input,
        }
    }

    /// Packets to receive per port this round: the full batch, or a short burst while a
    /// controller is being served.
    pub fn burst(&self, now: u64) -> usize {
        if self.serving(now) {
            CONTROL_BURST
        } else {
            super::BATCH
        }
    }

    /// Whether a controller was sent a packet-in or answered with a packet-out lately.
    fn serving(&self, now: u64) -> bool {
        now < self.serving_until
    }

    /// While serving a controller, handles what the controllers sent (an answer to a
    /// packet-in, most often a packet-out) in this thread, which is awake anyway, instead of
    /// waking the agent for it; returns whether it handled anything.
    pub fn serve_input(&mut self, now: u64) -> bool {
        self.serving(now) && self.channels.serve_ready_input()
    }

    /// Notes `count` packet-outs run this round.
    pub fn ran_packet_outs(&mut self, count: usize, now: u64) {
        if count > 0 {
            self.hold(now);
        }
    }

    /// Serves the controllers for [`CONTROL_HOLD_NS`] from `now`.
    fn hold(&mut self, now: u64) {
        self.serving_until = now + CONTROL_HOLD_NS;
        if self.takes_input {
            self.channels
                .take_input_until(self.serving_until - HANDBACK_NS);
        }
    }

    fn queue(&mut self, ev: &PacketInEvent<'_>) {
        let pin = &mut self.scratch;
        pin.buffer_id = ev.buffer_id;
        pin.total_len = ev.total_len;
        pin.reason = ev.reason as u8;
        pin.table_id = ev.table_id;
        pin.cookie = ev.cookie;
        set_packet_in_match(ev, &mut pin.match_);
        self.channels.queue_packet_in(pin, ev.data);
        self.queued += 1;
    }

    /// Writes the packet-ins queued since the last flush.
    /// Returns whether there were any.
    pub fn flush(&mut self, now: u64) -> bool {
        if self.queued == 0 {
            return false;
        }
        self.channels.flush();
        self.queued = 0;
        self.hold(now);
        true
    }
}

/// The OpenFlow 1.3 packet-in match: in_port, plus in_phy_port, metadata and tunnel id
/// where they carry information (spec 7.4.1).
fn set_packet_in_match(ev: &PacketInEvent<'_>, m: &mut Match) {
    let fields = &mut m.fields;
    fields.clear();
    fields.push(OxmField::exact(OxmValue::InPort(ev.in_port)));
    if ev.in_phy_port != ev.in_port {
        fields.push(OxmField::exact(OxmValue::InPhyPort(ev.in_phy_port)));
    }
    if ev.metadata != 0 {
        fields.push(OxmField::exact(OxmValue::Metadata(ev.metadata)));
    }
    if ev.tunnel_id != 0 {
        fields.push(OxmField::exact(OxmValue::TunnelId(ev.tunnel_id)));
    }
}

/// Delivers datapath results: frames to ports, packet-ins towards the controllers.
pub struct Sink<'a> {
    pub controller: &'a mut ToController,
    pub ports: &'a mut ThreadPorts,
}

impl PacketSink for Sink<'_> {
    fn output(&mut self, port: u32, frame: &[u8]) {
        self.ports.transmit(port, frame);
    }

    fn packet_in(&mut self, ev: &PacketInEvent<'_>) {
        self.controller.queue(ev);
    }
}
