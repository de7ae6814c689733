//! `hairpinctl controllet start|stop|list|logs`: the controllets hairpind supervises, through
//! its control socket (`controllet/*` management commands).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};

use crate::error::CtlError;

#[derive(Subcommand, Debug)]
pub enum ControlletCommand {
    /// Start a declared controllet by NAME, or declare and start a new one with PROGRAM.
    Start(Box<Start>),
    /// Stop a controllet (it stays declared).
    Stop { name: String },
    /// Every controllet: state, pid, restarts, confinement, what the limits did.
    List {
        /// The whole status as JSON.
        #[arg(long)]
        json: bool,
    },
    /// A controllet's last output lines.
    Logs {
        name: String,
        #[arg(long, default_value_t = 100)]
        lines: u64,
    },
}

/// `controllet start`: a name, and for a new controllet its declaration.
#[derive(Args, Debug)]
pub struct Start {
    name: String,
    /// Absolute path of the program (declares a new controllet).
    program: Option<PathBuf>,
    /// Arguments of the program (after `--`).
    #[arg(last = true)]
    args: Vec<String>,
    /// CPU share in CPUs (default 0.5).
    #[arg(long)]
    cpu: Option<f64>,
    /// Memory limit: 256M, 1G, ... (default 256M).
    #[arg(long)]
    memory: Option<String>,
    /// Most processes at once (default 64).
    #[arg(long)]
    pids: Option<u64>,
    /// The CPUs it runs on, as `taskset -c` takes them: 0, 2-3, 0,2.
    #[arg(long = "cpu-affinity")]
    cpu_affinity: Option<String>,
    /// `private` (own network namespace, the default) or `host`.
    #[arg(long)]
    network: Option<String>,
    /// `unix` (the default) or `tcp` (needs a private network).
    #[arg(long)]
    channel: Option<String>,
    /// `sandbox` (the default) or `none`.
    #[arg(long)]
    isolation: Option<String>,
    /// The unprivileged user it runs as (default nobody).
    #[arg(long)]
    user: Option<String>,
    /// Its private writable directory.
    #[arg(long)]
    directory: Option<PathBuf>,
    /// A host path shown read-only in the sandbox (repeatable).
    #[arg(long = "read-only")]
    read_only: Vec<PathBuf>,
    /// An environment variable, KEY=VALUE (repeatable).
    #[arg(long = "env")]
    env: Vec<String>,
    /// A confinement it may run without where the host lacks it: sandbox, seccomp, cpu,
    /// memory, pids, cpuset, network, bus (repeatable).
    #[arg(long = "run-without")]
    run_without: Vec<String>,
    /// A system call the sandbox's filter refuses that it may make (repeatable).
    #[arg(long = "allow-syscall")]
    allow_syscalls: Vec<String>,
    /// It may claim the master role (demoting a remote master).
    #[arg(long = "may-be-master")]
    may_be_master: bool,
}

/// The management method and params of a subcommand.
pub fn request(command: &ControlletCommand) -> Result<(&'static str, Value), CtlError> {
    Ok(match command {
        ControlletCommand::Start(start) => {
            let Start {
                name,
                program,
                args,
                cpu,
                memory,
                pids,
                cpu_affinity,
                network,
                channel,
                isolation,
                user,
                directory,
                read_only,
                env,
                run_without,
                allow_syscalls,
                may_be_master,
            } = start.as_ref();
            let mut spec = Map::new();
            spec.insert("name".into(), json!(name));
            let optional = [
                ("cpu", cpu.map(|c| json!(c))),
                ("memory", memory.as_ref().map(|m| json!(m))),
                ("pids", pids.map(|p| json!(p))),
                ("cpu_affinity", cpu_affinity.as_ref().map(|c| json!(c))),
                ("network", network.as_ref().map(|n| json!(n))),
                ("channel", channel.as_ref().map(|c| json!(c))),
                ("isolation", isolation.as_ref().map(|i| json!(i))),
                ("user", user.as_ref().map(|u| json!(u))),
                ("directory", directory.as_ref().map(|d| json!(d))),
            ];
            if let Some(program) = program {
                spec.insert("program".into(), json!(program));
                spec.insert("args".into(), json!(args));
                let mut vars = Map::new();
                for pair in env {
                    let (k, v) = pair.split_once('=').ok_or_else(|| {
                        CtlError::Usage(format!("--env `{pair}` is not KEY=VALUE"))
                    })?;
                    vars.insert(k.into(), json!(v));
                }
                spec.insert("env".into(), Value::Object(vars));
                spec.insert("read_only".into(), json!(read_only));
                spec.insert("run_without".into(), json!(run_without));
                spec.insert("allow_syscalls".into(), json!(allow_syscalls));
                spec.insert("may_be_master".into(), json!(may_be_master));
                for (key, value) in optional {
                    if let Some(value) = value {
                        spec.insert(key.into(), value);
                    }
                }
            } else if !args.is_empty()
                || !env.is_empty()
                || !read_only.is_empty()
                || !run_without.is_empty()
                || !allow_syscalls.is_empty()
                || *may_be_master
                || optional.iter().any(|(_, value)| value.is_some())
            {
                return Err(CtlError::Usage(
                    "a declared controllet starts by name alone; give PROGRAM to declare a new one"
                        .into(),
                ));
            }
            ("controllet/start", Value::Object(spec))
        }
        ControlletCommand::Stop { name } => ("controllet/stop", json!({ "name": name })),
        ControlletCommand::List { .. } => ("controllet/list", Value::Null),
        ControlletCommand::Logs { name, lines } => {
            ("controllet/logs", json!({ "name": name, "lines": lines }))
        }
    })
}

/// The result as the operator reads it.
pub fn format(command: &ControlletCommand, result: &Value) -> String {
    match command {
        ControlletCommand::Logs { .. } => result
            .as_array()
            .map(|lines| {
                lines
                    .iter()
                    .map(|l| format!("{}\n", l.as_str().unwrap_or_default()))
                    .collect()
            })
            .unwrap_or_default(),
        ControlletCommand::List { json: false } => table(result),
        _ => format!(
            "{}\n",
            serde_json::to_string_pretty(result).unwrap_or_default()
        ),
    }
}

fn table(list: &Value) -> String {
    let mut out = format!(
        "{:<16} {:<8} {:>8} {:>8}  {:<40} {}\n",
        "NAME", "STATE", "PID", "RESTARTS", "CONFINED", "RUNS WITHOUT"
    );
    for c in list.as_array().into_iter().flatten() {
        let text = |key: &str| {
            c.get(key)
                .and_then(Value::as_str)
                .unwrap_or("-")
                .to_string()
        };
        let confined: Vec<&str> = c
            .get("confined")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let missing: Vec<&String> = c
            .get("missing")
            .and_then(Value::as_object)
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        let pid = c
            .get("pid")
            .and_then(Value::as_u64)
            .map_or("-".into(), |p| p.to_string());
        let restarts = c.get("restarts").and_then(Value::as_u64).unwrap_or(0);
        let state = text("state");
        let confined = if confined.is_empty() {
            "-".to_string()
        } else {
            confined.join(",")
        };
        let missing = if missing.is_empty() {
            c.get("reason")
                .and_then(Value::as_str)
                .unwrap_or("-")
                .to_string()
        } else {
            missing
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(",")
        };
        out += &format!(
            "{:<16} {:<8} {:>8} {:>8}  {:<40} {}\n",
            text("name"),
            state,
            pid,
            restarts,
            confined,
            missing
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn parse(args: &[&str]) -> ControlletCommand {
        let mut argv = vec!["hairpinctl", "controllet"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Controllet { command } => command,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn start_declares_with_flags_or_restarts_by_name() {
        let cmd = parse(&[
            "start",
            "lsw",
            "/opt/lsw",
            "--cpu",
            "0.25",
            "--memory",
            "64M",
            "--cpu-affinity",
            "0,2-3",
            "--env",
            "A=1",
            "--read-only",
            "/opt",
            "--run-without",
            "pids",
            "--allow-syscall",
            "io_uring_setup",
            "--may-be-master",
            "--",
            "--flows",
            "x",
        ]);
        let (method, params) = request(&cmd).unwrap();
        assert_eq!(method, "controllet/start");
        assert_eq!(params["program"], "/opt/lsw");
        assert_eq!(params["args"], json!(["--flows", "x"]));
        assert_eq!(params["cpu"], json!(0.25));
        assert_eq!(params["cpu_affinity"], json!("0,2-3"));
        assert_eq!(params["env"], json!({"A": "1"}));
        assert_eq!(params["run_without"], json!(["pids"]));
        assert_eq!(params["allow_syscalls"], json!(["io_uring_setup"]));
        assert_eq!(params["may_be_master"], json!(true));
        assert!(params.get("network").is_none());
        let (_, params) = request(&parse(&["start", "lsw"])).unwrap();
        assert_eq!(params, json!({"name": "lsw"}));
        for declaration in [
            &["--cpu", "1"][..],
            &["--network", "host"],
            &["--isolation", "none"],
            &["--may-be-master"],
            &["--user", "0"],
            &["--pids", "1"],
            &["--cpu-affinity", "1"],
            &["--directory", "/x"],
            &["--read-only", "/z"],
            &["--run-without", "seccomp"],
            &["--allow-syscall", "ptrace"],
        ] {
            let mut args = vec!["start", "lsw"];
            args.extend_from_slice(declaration);
            assert!(
                request(&parse(&args)).is_err(),
                "{declaration:?} without PROGRAM"
            );
        }
        assert!(request(&parse(&["start", "x", "/p", "--env", "novalue"])).is_err());
    }

    #[test]
    fn list_prints_a_table() {
        let list = json!([
            {"name": "lsw", "state": "running", "pid": 42, "restarts": 1,
             "confined": ["sandbox", "cpu"], "missing": {"pids": "no controller"}},
            {"name": "old", "state": "refused", "reason": "this host lacks pids"}
        ]);
        let text = format(&ControlletCommand::List { json: false }, &list);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("NAME"));
        assert!(
            lines[1].contains("lsw") && lines[1].contains("42") && lines[1].contains("sandbox,cpu")
        );
        assert!(lines[1].ends_with("pids"));
        assert!(lines[2].contains("refused") && lines[2].ends_with("this host lacks pids"));
    }
}
