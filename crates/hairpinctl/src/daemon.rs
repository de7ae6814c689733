//! `hairpinctl version | summary | log-level`: the daemon's own state, through its control
//! socket (`version`, `summary`, `log/level`, `log/set-level`), printed for operators.

use std::fmt::Write;

use serde_json::{json, Value};

/// The management method and params of a daemon command.
pub fn request(command: &DaemonCommand) -> (&'static str, Value) {
    match command {
        DaemonCommand::Version => ("version", Value::Null),
        DaemonCommand::Summary { .. } => ("summary", Value::Null),
        DaemonCommand::LogLevel { level: None } => ("log/level", Value::Null),
        DaemonCommand::LogLevel { level: Some(l) } => ("log/set-level", json!({ "level": l })),
    }
}

/// The daemon commands of `hairpinctl`.
#[derive(Debug)]
pub enum DaemonCommand {
    Version,
    Summary { json: bool },
    LogLevel { level: Option<String> },
}

/// The answer as the operator reads it.
pub fn format(command: &DaemonCommand, result: &Value) -> String {
    match command {
        DaemonCommand::Version => format!(
            "hairpinctl {}\n{} {}\n",
            env!("CARGO_PKG_VERSION"),
            text(&result["name"]),
            text(&result["version"])
        ),
        DaemonCommand::Summary { json: true } => {
            format!(
                "{}\n",
                serde_json::to_string_pretty(result).unwrap_or_default()
            )
        }
        DaemonCommand::Summary { json: false } => summary(result),
        DaemonCommand::LogLevel { level: None } => format!("{}\n", text(&result["level"])),
        DaemonCommand::LogLevel { level: Some(_) } => format!(
            "log level {} (was {})\n",
            text(&result["level"]),
            text(&result["was"])
        ),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "?".into(),
        other => other.to_string(),
    }
}

fn num(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn rows(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

/// `summary`: like `ovs-appctl dpif-netdev/pmd-stats-show` and `dpctl/show -s` together.
fn summary(r: &Value) -> String {
    let mut out = String::new();
    let dpid = num(&r["datapath_id"]);
    let _ = writeln!(out, "datapath {dpid:016x}");
    let _ = writeln!(
        out,
        "controllers: {} of {} connected",
        num(&r["controllers_connected"]),
        num(&r["controllers_configured"])
    );
    for c in rows(&r["connections"]) {
        let _ = writeln!(
            out,
            "  connection {}: {}, role {}{}, packet-ins {} (limited {}), async dropped {}",
            num(&c["id"]),
            text(&c["kind"]),
            text(&c["role"]),
            if c["negotiated"] == Value::Bool(true) {
                ""
            } else {
                " (handshake pending)"
            },
            num(&c["packet_ins"]),
            num(&c["packet_ins_limited"]),
            num(&c["dropped"])
        );
    }
    for (i, t) in rows(&r["threads"]).iter().enumerate() {
        let (busy, idle) = (num(&t["busy_rounds"]), num(&t["idle_rounds"]));
        let share = if busy + idle == 0 {
            0.0
        } else {
            100.0 * busy as f64 / (busy + idle) as f64
        };
        let _ = writeln!(
            out,
            "thread {i}: busy {:.3} s, rounds {busy} busy / {idle} idle ({share:.1}% busy), sleeps {}",
            num(&t["busy_ns"]) as f64 / 1e9,
            num(&t["sleeps"])
        );
    }
    for p in rows(&r["ports"]) {
        let vlan = text(&p["vlan"]);
        let on = if vlan.is_empty() {
            text(&p["interface"])
        } else {
            format!("{} vlan {vlan}", text(&p["interface"]))
        };
        let _ = writeln!(
            out,
            "port {}: {} ({on}) {}\n    RX packets:{} bytes:{} dropped:{} errors:{}\n    \
             TX packets:{} bytes:{} dropped:{} errors:{}",
            num(&p["port"]),
            text(&p["name"]),
            if p["up"] == Value::Bool(true) {
                "up"
            } else {
                "down"
            },
            num(&p["rx_packets"]),
            num(&p["rx_bytes"]),
            num(&p["rx_dropped"]),
            num(&p["rx_errors"]),
            num(&p["tx_packets"]),
            num(&p["tx_bytes"]),
            num(&p["tx_dropped"]),
            num(&p["tx_errors"]),
        );
    }
    for t in rows(&r["trunks"]) {
        let c = &t["counters"];
        let _ = writeln!(
            out,
            "trunk {} ({}): RX {} TX {} unknown-vlan {} untagged {}",
            text(&t["name"]),
            text(&t["interface"]),
            num(&c["rx_packets"]),
            num(&c["tx_packets"]),
            num(&c["rx_unknown_vlan"]),
            num(&c["rx_untagged"])
        );
    }
    for t in rows(&r["tables"]) {
        if num(&t["flows"]) == 0 && num(&t["lookups"]) == 0 {
            continue;
        }
        let _ = writeln!(
            out,
            "table {}: flows {}, lookups {}, matches {}",
            num(&t["table"]),
            num(&t["flows"]),
            num(&t["lookups"]),
            num(&t["matches"])
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_threads_ports_and_tables() {
        let r = json!({
            "datapath_id": 10,
            "controllers_configured": 1, "controllers_connected": 1,
            "connections": [{"id": 3, "kind": "controller", "role": "master",
                             "negotiated": true, "packet_ins": 5, "packet_ins_limited": 2,
                             "dropped": 0}],
            "threads": [{"busy_rounds": 1, "idle_rounds": 3, "busy_ns": 1_500_000_000u64,
                         "sleeps": 2}],
            "ports": [{"port": 7, "name": "acc7", "interface": "trunk0", "vlan": "100",
                       "up": true, "rx_packets": 4, "rx_bytes": 400, "rx_dropped": 0,
                       "rx_errors": 0, "tx_packets": 1, "tx_bytes": 60, "tx_dropped": 0,
                       "tx_errors": 0}],
            "trunks": [],
            "tables": [{"table": 0, "flows": 2, "lookups": 9, "matches": 8},
                       {"table": 1, "flows": 0, "lookups": 0, "matches": 0}],
        });
        let s = summary(&r);
        assert!(s.starts_with("datapath 000000000000000a\n"), "{s}");
        assert!(
            s.contains("connection 3: controller, role master, packet-ins 5 (limited 2)"),
            "{s}"
        );
        assert!(
            s.contains("thread 0: busy 1.500 s, rounds 1 busy / 3 idle (25.0% busy)"),
            "{s}"
        );
        assert!(
            s.contains("port 7: acc7 (trunk0 vlan 100) up\n    RX packets:4 bytes:400"),
            "{s}"
        );
        assert!(
            s.contains("table 0: flows 2, lookups 9, matches 8\n"),
            "{s}"
        );
        assert!(!s.contains("table 1:"), "{s}");
    }
}
