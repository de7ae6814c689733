//! Datapath threads: each owns a datapath reader and its own socket on every port (several
//! threads share an interface through a PACKET_FANOUT group). A thread receives in batches,
//! runs the pipeline, transmits, and executes the packet-outs the agent queues. It polls while
//! traffic flows and sleeps in poll(2) when idle, so an idle switch burns no core; the
//! [`doorbell`] wakes it at once when the agent hands it work.
//!
//! - [`ports`]: the thread's sockets by OpenFlow port number;
//! - [`sink`]: where the pipeline's outputs and packet-ins go;
//! - [`packet_out`]: the agent's queue of packet-outs;
//! - [`doorbell`]: the eventfd that wakes sleeping threads;
//! - [`hardware`]: the `model` offload backend's hardware stage before the pipeline.

pub mod doorbell;
pub mod hardware;
pub mod packet_out;
pub mod ports;
mod sink;

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use agent::{Agent, EventSender};
use dataplane::batch::PacketBatch;
use dataplane::datapath::DatapathReader;
use doorbell::Doorbell;
use packet_out::PacketOutReceiver;
use ports::PortSet;
use sink::Sink;

/// Packets per receive batch and per port per round.
pub const BATCH: usize = dataplane::batch::BURST;
/// Empty rounds before a thread sleeps in poll(2).
const SPIN_ROUNDS: u32 = 256;
/// Longest sleep: how soon a sleeping thread notices `stop` and reports its sockets' losses
/// (control work rings the doorbell and never waits for it).
const IDLE_POLL_MS: i32 = 100;
/// How often a thread reports its sockets' losses to the switch core.
const IO_REPORT_NS: u64 = 1_000_000_000;

/// What a datapath thread needs from the rest of the daemon.
pub struct ThreadContext {
    pub agent: Agent,
    pub reader: DatapathReader,
    pub ports: PortSet,
    /// Packet-outs; shared by the threads, taken by whichever is awake.
    pub packet_outs: PacketOutReceiver,
    /// Rung when control work waits (shared by the threads).
    pub doorbell: Doorbell,
    /// Fail-standalone: with no controller connected, act as a learning switch.
    pub standalone: bool,
    /// Emulated hardware tables in front of the pipeline (`--offload PROFILE:model`).
    pub hardware: Option<hardware::HardwareStage>,
    pub stop: Arc<AtomicBool>,
}

/// Runs one datapath thread until `stop` is set.
pub fn run(mut ctx: ThreadContext) {
    let events = ctx.agent.events();
    let mut batch = PacketBatch::new(BATCH, dataplane::batch::DEFAULT_MAX_FRAME);
    let mut idle_rounds = 0u32;
    let mut fds = ctx.ports.fds();
    fds.push(ctx.doorbell.fd());
    let mut pollfds = PollSet::new(&fds);
    let mut next_report = 0;
    while !ctx.stop.load(Ordering::Relaxed) {
        let now = switch_core::clock::now_ns();
        if now >= next_report {
            ctx.ports.report_io(&ctx.agent);
            next_report = now + IO_REPORT_NS;
        }
        let legacy = ctx.standalone && ctx.agent.connected() == 0;
        let mut received = 0;
        for i in 0..ctx.ports.len() {
            received += ctx.ports.receive(i, &mut batch, BATCH);
            if batch.is_empty() {
                continue;
            }
            let mut sink = Sink {
                agent: &ctx.agent,
                events: &events,
                ports: &mut ctx.ports,
            };
            if legacy {
                ctx.reader.process_normal(now, &mut batch, &mut sink);
            } else if let Some(hw) = &mut ctx.hardware {
                hw.process(now, &mut ctx.reader, &mut batch, &mut sink);
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
    let ThreadContext {
        agent,
        reader,
        ports,
        packet_outs,
        ..
    } = ctx;
    packet_outs.drain(|job| {
        let mut sink = Sink {
            agent,
            events,
            ports,
        };
        reader.packet_out(now, job.in_port, &job.actions, &job.frame, &mut sink);
    })
}

/// The descriptors an idle thread sleeps on: its ports and the doorbell.
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

    /// Sleeps until a descriptor is readable or `timeout_ms` passed.
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
