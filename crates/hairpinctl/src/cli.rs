//! Command-line arguments.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::target::{Target, DEFAULT_TARGET};

/// Operate a running hairpind over OpenFlow 1.3, like ovs-ofctl.
#[derive(Parser, Debug)]
#[command(name = "hairpinctl", version)]
pub struct Cli {
    /// Where hairpind listens: unix:PATH or tcp:IP:PORT.
    #[arg(long, env = "HAIRPIN_TARGET", default_value = DEFAULT_TARGET, global = true)]
    pub target: Target,
    /// The daemon's control socket, for management commands (`call`).
    #[arg(long, env = "HAIRPIN_CONTROL", default_value = crate::control::DEFAULT_CONTROL, global = true)]
    pub control: PathBuf,
    /// Seconds to wait for each answer from the switch.
    #[arg(long, default_value_t = 30, global = true)]
    pub timeout: u64,
    /// mod-flows / del-flows: match priority and every field exactly.
    #[arg(long, global = true)]
    pub strict: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// Flows, groups and meters may be given as one argument or split over several (joined
/// with spaces).
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Switch features, port descriptions and configuration.
    Show,
    /// Manufacturer, hardware and software descriptions.
    DumpDesc,
    /// Flows, optionally only those a FLOW filter selects (table=, cookie=V/M, out_port=, match).
    DumpFlows { flow: Vec<String> },
    /// Packet, byte and flow counts of the flows a FLOW filter selects.
    DumpAggregate { flow: Vec<String> },
    /// Per-table counters.
    DumpTables,
    /// Port counters, of one PORT or all.
    DumpPorts { port: Option<String> },
    /// Port descriptions.
    DumpPortsDesc,
    /// Groups (`group_id=N` for one), in add-group syntax.
    DumpGroups { group: Option<String> },
    /// Group counters (`group_id=N` for one).
    DumpGroupStats { group: Option<String> },
    /// Meters (`meter=N` for one), in add-meter syntax.
    DumpMeters { meter: Option<String> },
    /// Meter counters (`meter=N` for one).
    MeterStats { meter: Option<String> },
    /// InSP packet templates: size, operations, flows using each, packets generated, memory.
    DumpTemplates,
    /// Add a flow: `priority=100,in_port=1,actions=output:2`.
    AddFlow {
        #[arg(required = true)]
        flow: Vec<String>,
    },
    /// Add the flows of FILE (one per line, `#` comments, `-` for stdin) and wait for one barrier.
    AddFlows { file: PathBuf },
    /// Change the actions of the flows FLOW selects (--strict: only the exact one).
    ModFlows {
        #[arg(required = true)]
        flow: Vec<String>,
    },
    /// Delete the flows FLOW selects, or all (--strict: only the exact one).
    DelFlows { flow: Vec<String> },
    /// Add a group: `group_id=1,type=select,bucket=weight:10,actions=output:1,...`.
    AddGroup {
        #[arg(required = true)]
        group: Vec<String>,
    },
    /// Replace a group's type and buckets.
    ModGroup {
        #[arg(required = true)]
        group: Vec<String>,
    },
    /// Delete one group (`group_id=N`) or all.
    DelGroups { group: Option<String> },
    /// Add a meter: `meter=1,kbps,burst,band=type=drop,rate=1000,burst_size=100`.
    AddMeter {
        #[arg(required = true)]
        meter: Vec<String>,
    },
    /// Replace a meter's flags and bands.
    ModMeter {
        #[arg(required = true)]
        meter: Vec<String>,
    },
    /// Delete one meter (`meter=N`) or all.
    DelMeters { meter: Option<String> },
    /// Send a barrier and wait for its reply.
    Barrier,
    /// Run a management command on the control socket: `call help` lists them; PARAMS is
    /// JSON (`call port/set-link '{"port": 5, "up": false}'`).
    Call {
        method: String,
        params: Option<String>,
    },
    /// Controllets hairpind supervises: start, stop, list, logs (on the control socket).
    Controllet {
        #[command(subcommand)]
        command: crate::controllets::ControlletCommand,
    },
    /// Tell the switch a legacy port's link went up or down (and its speed): the controllers
    /// get PORT_STATUS (control socket, `port/set-link`).
    SetPortLink {
        port: u32,
        state: LinkState,
        /// The legacy port's speed in Mbit/s.
        #[arg(long)]
        speed_mbps: Option<u32>,
    },
    /// Trunks with their counters and legacy ports (control socket, `trunk/show`).
    ShowTrunks,
    /// This program's version and the running daemon's (control socket, `version`).
    Version,
    /// Datapath threads, ports, trunks, tables and OpenFlow connections with their counters
    /// (control socket, `summary`).
    Summary {
        /// The whole summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the daemon's log level, or set it: error, warn, info or debug (control socket,
    /// `log/level`, `log/set-level`).
    LogLevel { level: Option<String> },
    /// Run the packet a flow description gives (`in_port=1,tcp,nw_dst=10.0.0.2,tp_dst=80`)
    /// through the current tables without sending it, and print every table, entry and
    /// action it meets (control socket, `trace`; like ovs-appctl ofproto/trace).
    Trace {
        #[arg(required = true)]
        flow: Vec<String>,
    },
    /// Print this program's manual page (roff); packaging makes hairpinctl.1 with it.
    #[command(hide = true)]
    ManPage,
}

/// A link state as the operator writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LinkState {
    Up,
    Down,
}

impl Command {
    /// The daemon command this stands for, if it is one.
    pub fn daemon_command(&self) -> Option<crate::daemon::DaemonCommand> {
        use crate::daemon::DaemonCommand as D;
        Some(match self {
            Command::Version => D::Version,
            Command::Summary { json } => D::Summary { json: *json },
            Command::LogLevel { level } => D::LogLevel {
                level: level.clone(),
            },
            _ => return None,
        })
    }

    /// The management method and params a control-socket command stands for (`None`: an
    /// OpenFlow command).
    pub fn control_call(&self) -> Option<(String, Option<serde_json::Value>)> {
        match self {
            Command::Call { method, .. } => Some((method.clone(), None)),
            Command::SetPortLink {
                port,
                state,
                speed_mbps,
            } => {
                let mut params = serde_json::json!({ "port": port, "up": *state == LinkState::Up });
                if let Some(speed) = speed_mbps {
                    params["speed_mbps"] = serde_json::json!(speed);
                }
                Some(("port/set-link".into(), Some(params)))
            }
            Command::ShowTrunks => Some(("trunk/show".into(), Some(serde_json::Value::Null))),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_options_go_before_or_after_the_command() {
        let cli = Cli::try_parse_from([
            "hairpinctl",
            "--target",
            "tcp:127.0.0.1:6653",
            "del-flows",
            "--strict",
            "table=1,priority=5",
        ])
        .unwrap();
        assert_eq!(cli.target, Target::Tcp("127.0.0.1:6653".into()));
        assert!(cli.strict);
        assert!(
            matches!(&cli.command, Command::DelFlows { flow } if flow == &["table=1,priority=5"])
        );
        let cli =
            Cli::try_parse_from(["hairpinctl", "--strict", "mod-flows", "a=1", "actions=drop"])
                .unwrap();
        assert!(cli.strict);
        assert!(matches!(&cli.command, Command::ModFlows { flow } if flow.len() == 2));
    }

    #[test]
    fn bad_targets_and_missing_arguments_are_refused() {
        assert!(Cli::try_parse_from(["hairpinctl", "--target", "ssl:x", "show"]).is_err());
        assert!(Cli::try_parse_from(["hairpinctl", "add-flow"]).is_err());
        assert!(Cli::try_parse_from(["hairpinctl", "frobnicate"]).is_err());
    }
}
