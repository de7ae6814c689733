//! `ofbench`: the controller and the hosts of the reactive-control benchmarks
//! (`scripts/bench/reactive.sh`, `docs/bench/reactive.md`), the same for any OpenFlow 1.3
//! switch. One process plays every part: it opens the controller's listener in the switch's
//! network namespace and each host's socket in that host's, so a request's times on the host
//! and on the controller come from one clock. The controller answers at once and installs the
//! flows it needs itself; it is written for the benchmark, so the switch is what is measured.

mod channel;
mod clock;
mod flowsetup;
mod frame;
mod netns;
mod roundtrip;
mod stats;
mod switch;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Run the controller and the hosts under SCHED_FIFO, so on a busy machine they answer
    /// at once and the waits measured are the switch's (they block between packets, so they
    /// never hold a core).
    #[arg(long, global = true)]
    realtime: bool,
    #[command(subcommand)]
    command: Command,
}

/// Puts the calling thread, and the threads it starts afterwards, under SCHED_FIFO.
fn go_realtime() -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: passes a live sched_param; pid 0 is the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[derive(Subcommand)]
enum Command {
    /// Controller round trip from a host: request out, PACKET_IN, PACKET_OUT, reply in.
    Roundtrip(roundtrip::Args),
    /// Flow setup rate: every new flow's first packet goes through the controller.
    Flowsetup(flowsetup::Args),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result =
        if cli.realtime { go_realtime() } else { Ok(()) }.and_then(|()| match cli.command {
            Command::Roundtrip(args) => roundtrip::run(args),
            Command::Flowsetup(args) => flowsetup::run(args),
        });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ofbench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
