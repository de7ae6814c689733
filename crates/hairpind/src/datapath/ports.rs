//! One datapath thread's ports: its socket on every interface, by OpenFlow port number, with
//! their debug captures and the losses already reported to the switch core.

use std::os::fd::RawFd;
use std::time::SystemTime;

use agent::Agent;
use dataplane::batch::PacketBatch;
use ports::{AnyPort, PacketPort, PcapWriter};
use switch_core::ports::IoCounters;

/// A thread's ports with their OpenFlow numbers (LOCAL, a TAP device, is one of them).
pub struct PortSet {
    ports: Vec<(u32, AnyPort)>,
    /// Socket counters as last reported to the switch core, per entry of `ports`.
    reported: Vec<ports::SocketCounters>,
    /// Debug captures (`--pcap`): every frame received or sent on the port, per entry.
    captures: Vec<Option<PcapWriter>>,
}

impl PortSet {
    pub fn new(ports: Vec<(u32, AnyPort)>) -> Self {
        let reported = vec![ports::SocketCounters::default(); ports.len()];
        let captures = ports.iter().map(|_| None).collect();
        Self {
            ports,
            reported,
            captures,
        }
    }

    /// Captures port `port_no`'s traffic into `writer`.
    pub fn capture(&mut self, port_no: u32, writer: PcapWriter) {
        if let Some(i) = self.ports.iter().position(|(n, _)| *n == port_no) {
            self.captures[i] = Some(writer);
        }
    }

    fn record(&mut self, i: usize, frame: &[u8]) {
        if let Some(Some(writer)) = self.captures.get_mut(i) {
            // A capture that fails to write (disk full) stops; forwarding does not.
            if writer
                .write_frame(SystemTime::now(), frame, frame.len() as u32)
                .is_err()
            {
                self.captures[i] = None;
            }
        }
    }

    /// Reports the losses each socket saw since the last report (kernel ring drops, full TX
    /// rings, frames over the MTU) to the switch core's port stats.
    pub fn report_io(&mut self, agent: &Agent) {
        let mut deltas = Vec::with_capacity(self.ports.len());
        for ((port_no, port), last) in self.ports.iter().zip(self.reported.iter_mut()) {
            let now = port.stats();
            deltas.push((
                *port_no,
                IoCounters {
                    rx_dropped: now.rx_dropped.saturating_sub(last.rx_dropped),
                    tx_dropped: now.tx_dropped.saturating_sub(last.tx_dropped),
                    rx_errors: 0,
                    tx_errors: now.tx_errors.saturating_sub(last.tx_errors),
                },
            ));
            *last = now;
        }
        agent.with_switch(|s| {
            for (port_no, delta) in deltas {
                if delta != IoCounters::default() {
                    s.record_port_io(port_no, delta);
                }
            }
        });
    }

    /// How many ports the thread serves.
    pub fn len(&self) -> usize {
        self.ports.len()
    }

    /// Receives up to `max` frames of the `i`-th port into `batch` (emptied first), recording
    /// them when the port is captured; returns how many.
    pub fn receive(&mut self, i: usize, batch: &mut PacketBatch, max: usize) -> usize {
        batch.clear();
        let Some((port_no, port)) = self.ports.get_mut(i) else {
            return 0;
        };
        let port_no = *port_no;
        let received = port.recv_burst(max, |frame| {
            batch.push_with(port_no, |buf| frame.copy_restored(buf).unwrap_or(0));
        });
        if self.captures[i].is_some() {
            for j in 0..batch.len() {
                if let Some((_, frame)) = batch.packet(j) {
                    self.record(i, frame);
                }
            }
        }
        received
    }

    /// Adds a port (the LOCAL TAP device).
    pub fn push(&mut self, port_no: u32, port: AnyPort) {
        self.ports.push((port_no, port));
        self.reported.push(ports::SocketCounters::default());
        self.captures.push(None);
    }

    pub fn transmit(&mut self, port_no: u32, frame: &[u8]) {
        if let Some(i) = self.ports.iter().position(|(n, _)| *n == port_no) {
            self.ports[i].1.send(frame);
            self.record(i, frame);
        }
    }

    /// Kicks every port with queued frames (the others return at once). Done after each
    /// batch, so a transmit ring holds at most one batch's outputs between kicks, however
    /// many ports send to it in a round.
    pub fn kick(&mut self) {
        for (_, port) in &mut self.ports {
            let _ = port.flush();
        }
    }

    pub fn flush(&mut self) {
        self.kick();
        for writer in self.captures.iter_mut().flatten() {
            let _ = writer.flush();
        }
    }

    pub fn fds(&self) -> Vec<RawFd> {
        self.ports.iter().map(|(_, p)| p.fd()).collect()
    }
}
