//! What each command sends and prints.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use ofp::{
    FlowModCommand, GroupMod, GroupModCommand, GroupType, Message, MeterFlags, MeterMod,
    MeterModCommand, MultipartReplyBody as Reply, MultipartRequestBody as Request, OfpError,
    OFPG_ALL, OFPP_ANY,
};

use crate::cli::{Cli, Command};
use crate::conn::Connection;
use crate::control;
use crate::error::CtlError;
use crate::output;
use crate::placement;
use crate::syntax::flow::{format_flow_stats, parse_flow, FlowSpec, FlowUse};
use crate::syntax::group::{format_group, parse_group, parse_group_selector};
use crate::syntax::meter::{format_meter, parse_meter, parse_meter_selector};
use crate::syntax::value::parse_port;
use crate::syntax::SyntaxError;

/// How many messages a batch sends between looks at the errors that came back.
const ERROR_POLL_INTERVAL: usize = 1024;

/// Connects to the target and runs the command, printing to `out`.
pub fn run(cli: &Cli, out: &mut dyn Write) -> Result<(), CtlError> {
    let timeout = Duration::from_secs(cli.timeout);
    if let Command::ManPage = cli.command {
        let mut page = Vec::new();
        clap_mangen::Man::new(<Cli as clap::CommandFactory>::command())
            .render(&mut page)
            .map_err(|e| CtlError::Io(e.to_string()))?;
        return out
            .write_all(&page)
            .map_err(|e| CtlError::Io(format!("cannot write the output: {e}")));
    }
    if let Some((method, params)) = cli.command.control_call() {
        let params = match (params, &cli.command) {
            (Some(params), _) => params,
            (None, Command::Call { params, .. }) => control::parse_params(params.as_deref())?,
            (None, _) => serde_json::Value::Null,
        };
        let result = control::call(&cli.control, timeout, &method, params)?;
        return write_out(out, &control::format_result(&result));
    }
    if let Command::Trace { flow } = &cli.command {
        let params = crate::trace::request(flow)?;
        let result = control::call(&cli.control, timeout, "trace", params)?;
        return write_out(out, &crate::trace::format(flow, &result));
    }
    if let Some(command) = cli.command.daemon_command() {
        let (method, params) = crate::daemon::request(&command);
        let result = control::call(&cli.control, timeout, method, params)?;
        return write_out(out, &crate::daemon::format(&command, &result));
    }
    if let Command::Controllet { command } = &cli.command {
        let (method, params) = crate::controllets::request(command)?;
        let result = control::call(&cli.control, timeout, method, params)?;
        return write_out(out, &crate::controllets::format(command, &result));
    }
    let mut conn = Connection::open(&cli.target, Duration::from_secs(cli.timeout))?;
    execute(&mut conn, &cli.command, cli.strict, out)
}

fn write_out(out: &mut dyn Write, text: &str) -> Result<(), CtlError> {
    out.write_all(text.as_bytes())
        .map_err(|e| CtlError::Io(format!("cannot write the output: {e}")))
}

fn unexpected(what: &str) -> CtlError {
    CtlError::Protocol(format!(
        "the switch answered with something other than {what}"
    ))
}

/// Runs `command` on an open connection.
pub fn execute(
    conn: &mut Connection,
    command: &Command,
    strict: bool,
    out: &mut dyn Write,
) -> Result<(), CtlError> {
    match command {
        Command::Show => show(conn, out),
        Command::DumpDesc => match conn.multipart(Request::Desc)? {
            Reply::Desc(d) => write_out(out, &output::format_desc(&d)),
            _ => Err(unexpected("a description")),
        },
        Command::DumpFlows { flow } => dump_flows(conn, &flow.join(" "), out),
        Command::DumpAggregate { flow } => {
            let filter = parse_flow(&flow.join(" "), FlowUse::Filter)?;
            match conn.multipart(Request::Aggregate(filter.to_stats_request()))? {
                Reply::Aggregate(a) => write_out(out, &output::format_aggregate(&a)),
                _ => Err(unexpected("aggregate statistics")),
            }
        }
        Command::DumpTables => match conn.multipart(Request::Table)? {
            Reply::Table(tables) => write_out(out, &output::format_tables(&tables)),
            _ => Err(unexpected("table statistics")),
        },
        Command::DumpPorts { port } => dump_ports(conn, port.as_deref(), out),
        Command::DumpPortsDesc => match conn.multipart(Request::PortDesc)? {
            Reply::PortDesc(mut ports) => {
                ports.sort_by_key(|p| p.port_no);
                ports
                    .iter()
                    .try_for_each(|p| write_out(out, &output::format_port_desc(p)))
            }
            _ => Err(unexpected("port descriptions")),
        },
        Command::DumpGroups { group } => dump_groups(conn, group.as_deref(), out),
        Command::DumpGroupStats { group } => {
            let group_id = parse_group_selector(group.as_deref())?;
            match conn.multipart(Request::Group { group_id })? {
                Reply::Group(groups) => groups
                    .iter()
                    .try_for_each(|g| write_out(out, &output::format_group_stats(g))),
                _ => Err(unexpected("group statistics")),
            }
        }
        Command::DumpMeters { meter } => {
            let meter_id = parse_meter_selector(meter.as_deref())?;
            match conn.multipart(Request::MeterConfig { meter_id })? {
                Reply::MeterConfig(meters) => meters
                    .iter()
                    .try_for_each(|m| write_out(out, &format!("{}\n", format_meter(m)))),
                _ => Err(unexpected("meter configurations")),
            }
        }
        Command::MeterStats { meter } => {
            let meter_id = parse_meter_selector(meter.as_deref())?;
            match conn.multipart(Request::Meter { meter_id })? {
                Reply::Meter(meters) => meters
                    .iter()
                    .try_for_each(|m| write_out(out, &output::format_meter_stats(m))),
                _ => Err(unexpected("meter statistics")),
            }
        }
        Command::DumpTemplates => dump_templates(conn, out),
        Command::AddFlow { flow } => {
            let spec = parse_flow(&flow.join(" "), FlowUse::Add)?;
            apply_one(
                conn,
                Message::FlowMod(spec.to_flow_mod(FlowModCommand::Add)),
            )
        }
        Command::AddFlows { file } => add_flows(conn, file),
        Command::ModFlows { flow } => {
            let spec = parse_flow(&flow.join(" "), FlowUse::Modify)?;
            let command = if strict {
                FlowModCommand::ModifyStrict
            } else {
                FlowModCommand::Modify
            };
            apply_one(conn, Message::FlowMod(spec.to_flow_mod(command)))
        }
        Command::DelFlows { flow } => {
            let spec = parse_flow(&flow.join(" "), FlowUse::Filter)?;
            let command = if strict {
                FlowModCommand::DeleteStrict
            } else {
                FlowModCommand::Delete
            };
            apply_one(conn, Message::FlowMod(spec.to_flow_mod(command)))
        }
        Command::AddGroup { group } => group_mod(conn, GroupModCommand::Add, &group.join(" ")),
        Command::ModGroup { group } => group_mod(conn, GroupModCommand::Modify, &group.join(" ")),
        Command::DelGroups { group } => {
            let group_id = parse_group_selector(group.as_deref())?;
            let msg = Message::GroupMod(GroupMod {
                command: GroupModCommand::Delete,
                group_type: GroupType::All,
                group_id,
                buckets: Vec::new(),
            });
            apply_one(conn, msg)
        }
        Command::AddMeter { meter } => meter_mod(conn, MeterModCommand::Add, &meter.join(" ")),
        Command::ModMeter { meter } => meter_mod(conn, MeterModCommand::Modify, &meter.join(" ")),
        Command::DelMeters { meter } => {
            let meter_id = parse_meter_selector(meter.as_deref())?;
            let msg = Message::MeterMod(MeterMod {
                command: MeterModCommand::Delete,
                flags: MeterFlags::default(),
                meter_id,
                bands: Vec::new(),
            });
            apply_one(conn, msg)
        }
        Command::Barrier => {
            apply(conn, std::iter::empty::<(Message, Option<String>)>())?;
            write_out(out, "OFPT_BARRIER_REPLY (OF1.3)\n")
        }
        Command::Call { .. }
        | Command::Controllet { .. }
        | Command::SetPortLink { .. }
        | Command::ShowTrunks
        | Command::Version
        | Command::Summary { .. }
        | Command::LogLevel { .. }
        | Command::ManPage
        | Command::Trace { .. } => Err(CtlError::Usage(
            "management commands go to the control socket, not to an OpenFlow connection".into(),
        )),
    }
}

fn show(conn: &mut Connection, out: &mut dyn Write) -> Result<(), CtlError> {
    let Message::FeaturesReply(features) = conn.request(&Message::FeaturesRequest)? else {
        return Err(unexpected("a features reply"));
    };
    write_out(out, &output::format_features(&features))?;
    let Reply::PortDesc(mut ports) = conn.multipart(Request::PortDesc)? else {
        return Err(unexpected("port descriptions"));
    };
    ports.sort_by_key(|p| p.port_no);
    for port in &ports {
        write_out(out, &output::format_port_desc(port))?;
    }
    let Message::GetConfigReply(config) = conn.request(&Message::GetConfigRequest)? else {
        return Err(unexpected("a configuration reply"));
    };
    write_out(out, &output::format_config(&config))
}

fn dump_flows(conn: &mut Connection, filter: &str, out: &mut dyn Write) -> Result<(), CtlError> {
    let filter = parse_flow(filter, FlowUse::Filter)?;
    let request = filter.to_stats_request();
    let Reply::Flow(flows) = conn.multipart(Request::Flow(request.clone()))? else {
        return Err(unexpected("flow statistics"));
    };
    let placed = placement::placements(conn, &request)?;
    for flow in &flows {
        let line = format_flow_stats(flow);
        let line = match placed.as_ref().and_then(|p| placement::columns(flow, p)) {
            Some(columns) => placement::insert_columns(&line, &columns),
            None => line,
        };
        write_out(out, &line)?;
        write_out(out, "\n")?;
    }
    Ok(())
}

fn dump_ports(
    conn: &mut Connection,
    port: Option<&str>,
    out: &mut dyn Write,
) -> Result<(), CtlError> {
    let port_no = match port {
        Some(text) => parse_port(text).map_err(|e| SyntaxError::new(text, e))?,
        None => OFPP_ANY,
    };
    let Reply::PortStats(mut ports) = conn.multipart(Request::PortStats { port_no })? else {
        return Err(unexpected("port statistics"));
    };
    ports.sort_by_key(|p| p.port_no);
    ports
        .iter()
        .try_for_each(|p| write_out(out, &output::format_port_stats(p)))
}

/// Lists the templates through PKTTMP_STATS (INSP.md), one page of records per request.
fn dump_templates(conn: &mut Connection, out: &mut dyn Write) -> Result<(), CtlError> {
    let mut first_id = 0;
    loop {
        let request = Request::Experimenter {
            experimenter: ofp::INSP_EXPERIMENTER,
            exp_type: ofp::PKTTMP_STATS_EXP_TYPE,
            data: ofp::PktTmpStats::request_data(first_id),
        };
        let Reply::Experimenter { data, .. } = conn.multipart(request)? else {
            return Err(unexpected("template statistics"));
        };
        let page = ofp::PktTmpStats::parse_records(&data).map_err(CtlError::switch)?;
        for t in &page {
            write_out(out, &output::format_template(t))?;
        }
        match page.last() {
            Some(last) if page.len() >= ofp::PKTTMP_STATS_MAX_RECORDS => {
                let Some(next) = last.pkttmp_id.checked_add(1) else {
                    return Ok(());
                };
                first_id = next;
            }
            _ => return Ok(()),
        }
    }
}

fn dump_groups(
    conn: &mut Connection,
    group: Option<&str>,
    out: &mut dyn Write,
) -> Result<(), CtlError> {
    let wanted = parse_group_selector(group)?;
    let Reply::GroupDesc(groups) = conn.multipart(Request::GroupDesc)? else {
        return Err(unexpected("group descriptions"));
    };
    groups
        .iter()
        .filter(|g| wanted == OFPG_ALL || g.group_id == wanted)
        .try_for_each(|g| write_out(out, &format!("{}\n", format_group(g))))
}

fn group_mod(conn: &mut Connection, command: GroupModCommand, text: &str) -> Result<(), CtlError> {
    let group = parse_group(text)?;
    let msg = Message::GroupMod(GroupMod {
        command,
        group_type: group.group_type,
        group_id: group.group_id,
        buckets: group.buckets,
    });
    apply_one(conn, msg)
}

fn meter_mod(conn: &mut Connection, command: MeterModCommand, text: &str) -> Result<(), CtlError> {
    let meter = parse_meter(text)?;
    let msg = Message::MeterMod(MeterMod {
        command,
        flags: meter.flags,
        meter_id: meter.meter_id,
        bands: meter.bands,
    });
    apply_one(conn, msg)
}

/// Reads the flows of `file` (`-` is stdin): one per line, blank lines and `#` comments
/// skipped. The first syntax error stops everything before anything is sent.
fn read_flow_file(file: &Path) -> Result<Vec<(FlowSpec, String)>, CtlError> {
    let name = file.display().to_string();
    let mut text = String::new();
    let read = if name == "-" {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        std::fs::read_to_string(file).map(|t| text = t)
    };
    read.map_err(|e| CtlError::Usage(format!("cannot read {name}: {e}")))?;
    let mut flows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let context = format!("{name}:{}", i + 1);
        match parse_flow(line, FlowUse::Add) {
            Ok(spec) => flows.push((spec, context)),
            Err(error) => {
                return Err(CtlError::Syntax {
                    error,
                    context: Some(context),
                })
            }
        }
    }
    Ok(flows)
}

fn add_flows(conn: &mut Connection, file: &Path) -> Result<(), CtlError> {
    let flows = read_flow_file(file)?;
    let messages = flows.into_iter().map(|(spec, context)| {
        (
            Message::FlowMod(spec.to_flow_mod(FlowModCommand::Add)),
            Some(context),
        )
    });
    apply(conn, messages)
}

/// Sends `msg` and a barrier; fails with the OFPT_ERROR the switch answered, if any.
fn apply_one(conn: &mut Connection, msg: Message) -> Result<(), CtlError> {
    apply(conn, [(msg, None)])
}

/// Sends every message, then one barrier; fails with every OFPT_ERROR that came back,
/// each with the context of the message it answers.
fn apply(
    conn: &mut Connection,
    messages: impl IntoIterator<Item = (Message, Option<String>)>,
) -> Result<(), CtlError> {
    let mut contexts: Vec<(u32, Option<String>)> = Vec::new();
    let mut errors: Vec<(u32, OfpError)> = Vec::new();
    for (i, (msg, context)) in messages.into_iter().enumerate() {
        let xid = conn.send(&msg)?;
        contexts.push((xid, context));
        if (i + 1) % ERROR_POLL_INTERVAL == 0 {
            errors.extend(conn.pending_errors()?);
        }
    }
    errors.extend(conn.barrier()?);
    let mut failures: Vec<CtlError> = errors
        .into_iter()
        .map(|(xid, error)| CtlError::Switch {
            error,
            context: contexts
                .binary_search_by_key(&xid, |(x, _)| *x)
                .ok()
                .and_then(|i| contexts.get(i))
                .and_then(|(_, c)| c.clone()),
        })
        .collect();
    if failures.len() > 1 {
        return Err(CtlError::Several(failures));
    }
    failures.pop().map_or(Ok(()), Err)
}
