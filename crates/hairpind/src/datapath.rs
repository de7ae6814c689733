//! Datapath threads: each owns a datapath reader and its own socket on every port (several
//! threads share an interface through a PACKET_FANOUT group). A thread receives in batches,
//! runs the pipeline, transmits, and executes the packet-outs the agent queues. It polls while
//! traffic flows and sleeps in poll(2) when idle, so an idle switch burns no core.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use agent::session::Event;
use agent::{Agent, EventSender};
use dataplane::batch::{PacketBatch, PacketInEvent, PacketSink};
use dataplane::datapath::DatapathReader;
use ofp::{Match, OxmField, OxmValue, PacketIn};
use ports::{AnyPort, PacketPort, PcapWriter};
use switch_core::ports::IoCounters;
use switch_core::{PacketOutJob, PacketOutQueue};

/// Packets per receive batch and per port per round.
pub const BATCH: usize = dataplane::batch::BURST;
/// Packet-outs waiting for a datapath thread; beyond this the agent's queue refuses more,
/// as a full OpenFlow channel would.
pub const PACKET_OUT_QUEUE: usize = 4096;
/// Empty rounds before a thread sleeps in poll(2).
const SPIN_ROUNDS: u32 = 256;
/// Longest sleep, so packet-outs queued while asleep wait at most this long.
const IDLE_POLL_MS: i32 = 5;
/// How often a thread reports its sockets' losses to the switch core.
const IO_REPORT_NS: u64 = 1_000_000_000;

/// The agent's end of the packet-out queue.
pub struct PacketOutSender(pub std::sync::mpsc::SyncSender<PacketOutJob>);

impl PacketOutQueue for PacketOutSender {
    fn submit(&mut self, job: PacketOutJob) {
        // A full queue drops the packet-out, as a congested OpenFlow channel would.
        let _ = self.0.try_send(job);
    }
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
    fn report_io(&mut self, agent: &Agent) {
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

    /// Adds a port (the LOCAL TAP device).
    pub fn push(&mut self, port_no: u32, port: AnyPort) {
        self.ports.push((port_no, port));
        self.reported.push(ports::SocketCounters::default());
        self.captures.push(None);
    }

    fn transmit(&mut self, port_no: u32, frame: &[u8]) {
        if let Some(i) = self.ports.iter().position(|(n, _)| *n == port_no) {
            self.ports[i].1.send(frame);
            self.record(i, frame);
        }
    }

    /// Kicks every port with queued frames (the others return at once). Done after each
    /// batch, so a transmit ring holds at most one batch's outputs between kicks, however
    /// many ports send to it in a round.
    fn kick(&mut self) {
        for (_, port) in &mut self.ports {
            let _ = port.flush();
        }
    }

    fn flush(&mut self) {
        self.kick();
        for writer in self.captures.iter_mut().flatten() {
            let _ = writer.flush();
        }
    }

    fn fds(&self) -> Vec<RawFd> {
        self.ports.iter().map(|(_, p)| p.fd()).collect()
    }
}

/// Delivers datapath results: frames to ports, packet-ins to the agent.
struct Sink<'a> {
    agent: &'a Agent,
    events: &'a EventSender,
    ports: &'a mut PortSet,
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

/// What a datapath thread needs from the rest of the daemon.
pub struct ThreadContext {
    pub agent: Agent,
    pub reader: DatapathReader,
    pub ports: PortSet,
    /// Packet-outs; shared by the threads, taken by whichever is awake.
    pub jobs: Arc<Mutex<Receiver<PacketOutJob>>>,
    /// Fail-standalone: with no controller connected, act as a learning switch.
    pub standalone: bool,
    pub stop: Arc<AtomicBool>,
}

/// Runs one datapath thread until `stop` is set.
pub fn run(mut ctx: ThreadContext) {
    let events = ctx.agent.events();
    let mut batch = PacketBatch::new(BATCH, dataplane::batch::DEFAULT_MAX_FRAME);
    let mut idle_rounds = 0u32;
    let mut pollfds = PollSet::new(&ctx.ports.fds());
    let mut next_report = 0;
    while !ctx.stop.load(Ordering::Relaxed) {
        let now = switch_core::clock::now_ns();
        if now >= next_report {
            ctx.ports.report_io(&ctx.agent);
            next_report = now + IO_REPORT_NS;
        }
        let legacy = ctx.standalone && ctx.agent.connected() == 0;
        let mut received = 0;
        for i in 0..ctx.ports.ports.len() {
            batch.clear();
            let (port_no, port) = &mut ctx.ports.ports[i];
            let port_no = *port_no;
            received += port.recv_burst(BATCH, |frame| {
                batch.push_with(port_no, |buf| frame.copy_restored(buf).unwrap_or(0));
            });
            if batch.is_empty() {
                continue;
            }
            if ctx.ports.captures[i].is_some() {
                for j in 0..batch.len() {
                    if let Some((_, frame)) = batch.packet(j) {
                        ctx.ports.record(i, frame);
                    }
                }
            }
            let mut sink = Sink {
                agent: &ctx.agent,
                events: &events,
                ports: &mut ctx.ports,
            };
            if legacy {
                ctx.reader.process_normal(now, &mut batch, &mut sink);
            } else {
                ctx.reader.process(now, &mut batch, &mut sink);
            }
            ctx.ports.kick();
        }
        received += run_packet_outs(&mut ctx, &events, now);
        ctx.ports.flush();
        if received == 0 {
            idle_rounds += 1;
            if idle_rounds > SPIN_ROUNDS {
                pollfds.wait(IDLE_POLL_MS);
            }
        } else {
            idle_rounds = 0;
        }
    }
}

fn run_packet_outs(ctx: &mut ThreadContext, events: &EventSender, now: u64) -> usize {
    let Ok(jobs) = ctx.jobs.try_lock() else {
        return 0;
    };
    let mut done = 0;
    loop {
        match jobs.try_recv() {
            Ok(job) => {
                let mut sink = Sink {
                    agent: &ctx.agent,
                    events,
                    ports: &mut ctx.ports,
                };
                ctx.reader
                    .packet_out(now, job.in_port, &job.actions, &job.frame, &mut sink);
                done += 1;
            }
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => return done,
        }
    }
}

/// The port descriptors an idle thread sleeps on.
struct PollSet(Vec<libc::pollfd>);

impl PollSet {
    fn new(fds: &[RawFd]) -> Self {
        Self(
            fds.iter()
                .map(|fd| libc::pollfd {
                    fd: *fd,
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect(),
        )
    }

    /// Sleeps until a port is readable or `timeout_ms` passed.
    fn wait(&mut self, timeout_ms: i32) {
        // SAFETY: `self.0` is a valid array of `self.0.len()` initialised pollfd structs that
        // outlives the call.
        unsafe {
            libc::poll(
                self.0.as_mut_ptr(),
                self.0.len() as libc::nfds_t,
                timeout_ms,
            );
        }
    }
}
