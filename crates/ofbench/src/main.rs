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
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Controller round trip from a host: request out, PACKET_IN, PACKET_OUT, reply in.
    Roundtrip(roundtrip::Args),
    /// Flow setup rate: every new flow's first packet goes through the controller.
    Flowsetup(flowsetup::Args),
}

fn main() -> std::process::ExitCode {
    let result = match Cli::parse().command {
        Command::Roundtrip(args) => roundtrip::run(args),
        Command::Flowsetup(args) => flowsetup::run(args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ofbench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
