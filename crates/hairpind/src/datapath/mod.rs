//! Datapath threads: each owns a datapath reader and its own socket on every port (several
//! threads share an interface through a PACKET_FANOUT group). A thread receives in batches,
//! runs the pipeline, transmits, executes the packet-outs the agent queues and sends the InSP
//! timers' packets when due. It polls while traffic flows and sleeps in poll(2) when idle, so
//! an idle switch burns no core; the sleep ends at the next timer's deadline, and the
//! [`doorbell`] wakes it at once when the agent hands it work. With `--busy-poll` it never
//! sleeps: a packet then finds the thread running with warm caches, which saves the wake-up
//! (most of an InSP answer's time in the switch on a busy machine, docs/bench/insp.md) at
//! the price of a core. A polling thread that has just written packet-ins yields the core
//! once, so that a controllet placed on it (its `cpu_affinity`) and woken by them answers at
//! once instead of at the scheduler's next preemption of the poller; alone on its core, the
//! yield returns at once.
//!
//! - [`ports`]: the thread's sockets by OpenFlow port number;
//! - [`sink`]: where the pipeline's outputs and packet-ins go;
//! - [`packet_out`]: the agent's queue of packet-outs;
//! - [`timers`]: the InSP timer triggers' schedule;
//! - [`doorbell`]: the eventfd that wakes sleeping threads;
//! - [`hardware`]: the `model` offload backend's hardware stage before the pipeline;
//! - [`stats`]: the thread's busy and idle rounds, for operators.

pub mod doorbell;
pub mod hardware;
pub mod packet_out;
pub mod ports;
mod sink;
pub mod stats;
pub mod timers;

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use agent::Agent;
use dataplane::batch::PacketBatch;
use dataplane::datapath::DatapathReader;
use doorbell::Doorbell;
use packet_out::PacketOutReceiver;
use ports::ThreadPorts;
use sink::{Sink, ToController};
use timers::Timers;

/// Packets per receive batch and per port per round.
pub const BATCH: usize = dataplane::batch::BURST;
/// Empty rounds before a thread sleeps in poll(2).
const SPIN_ROUNDS: u32 = 256;
/// Longest sleep: how soon a sleeping thread notices `stop` and reports its sockets' losses
/// (control work rings the doorbell and never waits for it; timers shorten the sleep).
const IDLE_POLL_NS: u64 = 100_000_000;
/// How often a thread reports its sockets' losses to the switch core.
const IO_REPORT_NS: u64 = 1_000_000_000;

/// What a datapath thread needs from the rest of the daemon.
pub struct ThreadContext {
    pub agent: Agent,
    pub reader: DatapathReader,
    pub ports: ThreadPorts,
    /// Packet-outs; shared by the threads, taken by whichever is awake.
    pub packet_outs: PacketOutReceiver,
    /// InSP timer triggers (shared by the threads, run by whichever is awake).
    pub timers: Timers,
    /// Rung when control work waits (shared by the threads).
    pub doorbell: Doorbell,
    /// Fail-standalone: with no controller connected, act as a learning switch.
    pub standalone: bool,
    /// Never sleep: poll the ports even when idle (`--busy-poll`).
    pub busy_poll: bool,
    /// Emulated hardware tables in front of the pipeline (`--offload PROFILE:model`).
    pub hardware: Option<hardware::HardwareStage>,
    /// Where this thread publishes its counters.
    pub stats: stats::AllThreads,
    pub index: usize,
    pub stop: Arc<AtomicBool>,
}

/// Runs one datapath thread until `stop` is set.
pub fn run(mut ctx: ThreadContext) {
    let mut controller = ToController::new(&ctx.agent, ctx.busy_poll);
    let mut batch = PacketBatch::new(BATCH, dataplane::batch::DEFAULT_MAX_FRAME);
    let mut idle_rounds = 0u32;
    let mut fds = ctx.ports.fds();
    fds.push(ctx.doorbell.fd());
    let mut pollfds = PollSet::new(&fds);
    let mut next_report = 0;
    let mut tally = stats::Tally::default();
    while !ctx.stop.load(Ordering::Relaxed) {
        let now = switch_core::clock::now_ns();
        tally.round_starts(now);
        if now >= next_report {
            ctx.ports.report_io(&ctx.agent);
            if let Some(published) = ctx.stats.get(ctx.index) {
                tally.publish(published);
            }
            next_report = now + IO_REPORT_NS;
        }
        let legacy = ctx.standalone && ctx.agent.connected() == 0;
        let mut received = 0;
        let mut sent_packet_ins = false;
        let burst = controller.burst(now);
        for i in 0..ctx.ports.len() {
            received += ctx.ports.receive(i, &mut batch, burst);
            if batch.is_empty() {
                continue;
            }
            let mut sink = Sink {
                controller: &mut controller,
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
            sent_packet_ins |= controller.flush(now);
            if i + 1 < ctx.ports.len() && controller.serve_input(now) {
                // An answer that came during the round leaves before the next port's burst.
                received += run_packet_outs(&mut ctx, &mut controller, now);
                ctx.ports.kick();
            }
        }
        if controller.serve_input(now) {
            received += 1;
        }
        received += run_packet_outs(&mut ctx, &mut controller, now);
        received += run_timers(&mut ctx, &mut controller, now);
        sent_packet_ins |= controller.flush(now);
        ctx.ports.flush();
        if ctx.busy_poll && sent_packet_ins {
            // SAFETY: sched_yield(2) takes no arguments and has no preconditions.
            unsafe { libc::sched_yield() };
        }
        tally.round_ends(now, received != 0);
        if received == 0 {
            idle_rounds += 1;
            if idle_rounds > SPIN_ROUNDS && !ctx.busy_poll {
                let now = switch_core::clock::now_ns();
                let until_due = ctx.timers.next_due().saturating_sub(now);
                tally.slept();
                pollfds.wait(until_due.min(IDLE_POLL_NS));
            }
        } else {
            idle_rounds = 0;
        }
    }
}

/// Runs the queued packet-outs; returns how many.
fn run_packet_outs(ctx: &mut ThreadContext, controller: &mut ToController, now: u64) -> usize {
    let ThreadContext {
        reader,
        ports,
        packet_outs,
        ..
    } = ctx;
    let ran = packet_outs.drain(|job| {
        let mut sink = Sink {
            controller: &mut *controller,
            ports,
        };
        reader.packet_out(now, job.in_port, &job.actions, &job.frame, &mut sink);
    });
    controller.ran_packet_outs(ran, now);
    ran
}

fn run_timers(ctx: &mut ThreadContext, controller: &mut ToController, now: u64) -> usize {
    let ThreadContext {
        reader,
        ports,
        timers,
        ..
    } = ctx;
    timers.run_due(now, |job| {
        let mut sink = Sink {
            controller: &mut *controller,
            ports,
        };
        reader.generate(now, job.pkttmp_id, job.in_port, &job.actions, &mut sink);
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

    /// Sleeps until a descriptor is readable or `timeout_ns` passed (ppoll(2): a timer's
    /// deadline is kept to the kernel's timer slack, not rounded up to a millisecond).
    fn wait(&mut self, timeout_ns: u64) {
        let timeout = libc::timespec {
            tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: `self.0` is a valid array of `self.0.len()` initialised pollfd structs and
        // `timeout` a valid timespec, both outliving the call; a null sigmask leaves the
        // thread's signal mask as it is.
        unsafe {
            libc::ppoll(
                self.0.as_mut_ptr(),
                self.0.len() as libc::nfds_t,
                &timeout,
                std::ptr::null(),
            );
        }
    }
}
