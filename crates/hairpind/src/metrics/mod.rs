//! Prometheus metrics (`--metrics ADDR`, off by default): a small HTTP/1.1 server whose
//! `GET /metrics` answers with the daemon's [`crate::status`] in the text exposition format.
//! Each scrape gathers afresh; nothing is kept between scrapes, and the datapath pays nothing
//! for the page (its counters exist for OpenFlow statistics anyway).
//!
//! The server reads one request head (at most [`MAX_HEAD`] bytes, within [`READ_TIMEOUT`]),
//! answers it and closes the connection: a scraper's whole protocol, and nothing a slow or
//! hostile client can hold open.

pub mod text;

use std::io;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::status::{self, Sources, Status};
use text::{Exposition, Kind};

/// Longest request head read; a longer one is refused.
const MAX_HEAD: usize = 8192;
/// How long a client may take to send its request head.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Serves the metrics page on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, sources: Sources) -> io::Result<()> {
    loop {
        let (stream, peer) = listener.accept().await?;
        let sources = sources.clone();
        tokio::spawn(async move {
            crate::log!(crate::log::Level::Debug, "metrics: scrape from {peer}");
            let _ = answer(stream, &sources).await;
        });
    }
}

async fn answer(mut stream: TcpStream, sources: &Sources) -> io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    let complete = tokio::time::timeout(READ_TIMEOUT, async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() <= MAX_HEAD {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                return Ok::<bool, io::Error>(false);
            }
            head.extend_from_slice(&buf[..n]);
        }
        Ok(head.len() <= MAX_HEAD)
    })
    .await;
    let response = match complete {
        Ok(Ok(true)) => respond(&head, || render(&status::gather(sources))),
        Ok(Ok(false)) => return Ok(()),
        Ok(Err(e)) => return Err(e),
        Err(_) => reply(408, "Request Timeout", "text/plain", "request timeout\n"),
    };
    stream.write_all(&response).await?;
    stream.shutdown().await
}

/// The response to a request head; `page` renders the metrics when they are asked for.
fn respond(head: &[u8], page: impl FnOnce() -> String) -> Vec<u8> {
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split(' ');
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    if !words.next().is_some_and(|v| v.starts_with("HTTP/1.")) {
        return reply(400, "Bad Request", "text/plain", "bad request\n");
    }
    let path = target.split('?').next().unwrap_or("");
    match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            let mut r = reply(
                200,
                "OK",
                "text/plain; version=0.0.4; charset=utf-8",
                &page(),
            );
            if method == "HEAD" {
                let end = r
                    .windows(4)
                    .position(|w| w == b"\r\n\r\n")
                    .map_or(0, |p| p + 4);
                r.truncate(end);
            }
            r
        }
        ("GET" | "HEAD", "/") => reply(200, "OK", "text/plain", "hairpind: see /metrics\n"),
        ("GET" | "HEAD", _) => reply(404, "Not Found", "text/plain", "not found\n"),
        _ => reply(405, "Method Not Allowed", "text/plain", "GET only\n"),
    }
}

fn reply(code: u16, reason: &str, content_type: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A counter family: its name's middle, its help and where its value comes from.
type Counter<T> = (&'static str, &'static str, fn(&T) -> u64);

/// The metrics page for `status`.
pub fn render(status: &Status) -> String {
    let mut e = Exposition::default();
    let version = env!("CARGO_PKG_VERSION");
    let dpid = format!("{:016x}", status.datapath_id);
    e.family(
        "hairpin_build_info",
        Kind::Gauge,
        "The daemon's version and datapath id.",
    );
    e.sample(
        "hairpin_build_info",
        &[("version", version), ("datapath_id", &dpid)],
        1u64,
    );

    let port_counters: [Counter<status::PortRow>; 8] = [
        ("rx_packets", "Packets received", |p| p.rx_packets),
        ("rx_bytes", "Bytes received", |p| p.rx_bytes),
        ("rx_dropped", "Received packets dropped", |p| p.rx_dropped),
        ("rx_errors", "Receive errors", |p| p.rx_errors),
        ("tx_packets", "Packets sent", |p| p.tx_packets),
        ("tx_bytes", "Bytes sent", |p| p.tx_bytes),
        ("tx_dropped", "Packets to send dropped", |p| p.tx_dropped),
        ("tx_errors", "Send errors", |p| p.tx_errors),
    ];
    for (what, help, get) in port_counters {
        let name = format!("hairpin_port_{what}_total");
        e.family(
            &name,
            Kind::Counter,
            &format!("{help} on an OpenFlow port (a trunk's logical port has a vlan)."),
        );
        for p in &status.ports {
            let port = p.port.to_string();
            e.sample(&name, &port_labels(&port, p), get(p));
        }
    }
    e.family(
        "hairpin_port_up",
        Kind::Gauge,
        "1 when the port's link is up and not administratively down.",
    );
    for p in &status.ports {
        let port = p.port.to_string();
        e.sample("hairpin_port_up", &port_labels(&port, p), p.up);
    }

    let trunk_counters: [Counter<crate::portmap::TrunkStats>; 9] = [
        ("rx_packets", "Frames received on a trunk", |t| t.rx_packets),
        ("rx_bytes", "Bytes received on a trunk", |t| t.rx_bytes),
        ("tx_packets", "Frames sent on a trunk", |t| t.tx_packets),
        ("tx_bytes", "Bytes sent on a trunk", |t| t.tx_bytes),
        (
            "rx_unknown_vlan",
            "Frames received on a trunk for a VLAN no port has",
            |t| t.rx_unknown_vlan,
        ),
        (
            "rx_untagged",
            "Untagged frames received on a trunk without a native port",
            |t| t.rx_untagged,
        ),
        (
            "rx_dropped",
            "Frames a trunk's socket dropped on receive",
            |t| t.rx_dropped,
        ),
        (
            "tx_dropped",
            "Frames a trunk's socket dropped on send",
            |t| t.tx_dropped,
        ),
        ("tx_errors", "Send errors on a trunk", |t| t.tx_errors),
    ];
    for (what, help, get) in trunk_counters {
        let name = format!("hairpin_trunk_{what}_total");
        e.family(&name, Kind::Counter, &format!("{help}."));
        for t in &status.trunks {
            e.sample(
                &name,
                &[("trunk", &t.name), ("interface", &t.interface)],
                get(&t.counters),
            );
        }
    }

    e.family(
        "hairpin_table_flows",
        Kind::Gauge,
        "Flow entries in a table.",
    );
    let tables: Vec<String> = status.tables.iter().map(|t| t.table.to_string()).collect();
    for (t, id) in status.tables.iter().zip(&tables) {
        e.sample("hairpin_table_flows", &[("table", id)], u64::from(t.flows));
    }
    let table_counters: [Counter<status::TableRow>; 3] = [
        ("lookups", "Packets looked up in a table", |t| t.lookups),
        ("matches", "Lookups in a table that hit an entry", |t| {
            t.matches
        }),
        ("misses", "Lookups in a table that hit no entry", |t| {
            t.lookups.saturating_sub(t.matches)
        }),
    ];
    for (what, help, get) in table_counters {
        let name = format!("hairpin_table_{what}_total");
        e.family(&name, Kind::Counter, &format!("{help}."));
        for (t, id) in status.tables.iter().zip(&tables) {
            e.sample(&name, &[("table", id)], get(t));
        }
    }

    e.family(
        "hairpin_controllers_configured",
        Kind::Gauge,
        "Controllers the daemon connects to (--controller).",
    );
    e.sample(
        "hairpin_controllers_configured",
        &[],
        status.controllers_configured as u64,
    );
    e.family(
        "hairpin_controllers_connected",
        Kind::Gauge,
        "Configured controllers connected, handshake done.",
    );
    e.sample(
        "hairpin_controllers_connected",
        &[],
        status.controllers_connected as u64,
    );
    e.family(
        "hairpin_openflow_connection_info",
        Kind::Gauge,
        "An open OpenFlow connection: its kind, role and whether its handshake is done.",
    );
    let ids: Vec<String> = status
        .connections
        .iter()
        .map(|c| c.id.to_string())
        .collect();
    for (c, id) in status.connections.iter().zip(&ids) {
        e.sample(
            "hairpin_openflow_connection_info",
            &[
                ("connection", id),
                ("kind", c.kind),
                ("role", c.role),
                ("negotiated", if c.negotiated { "true" } else { "false" }),
            ],
            1u64,
        );
    }
    let connection_counters: [Counter<status::ConnectionRow>; 3] = [
        (
            "packet_ins",
            "Packet-ins sent on an OpenFlow connection",
            |c| c.packet_ins,
        ),
        (
            "packet_ins_limited",
            "Packet-ins the packet-in limit dropped on an OpenFlow connection",
            |c| c.packet_ins_limited,
        ),
        (
            "async_dropped",
            "Asynchronous messages dropped because the connection did not read them in time",
            |c| c.dropped,
        ),
    ];
    for (what, help, get) in connection_counters {
        let name = format!("hairpin_openflow_{what}_total");
        e.family(&name, Kind::Counter, &format!("{help}."));
        for (c, id) in status.connections.iter().zip(&ids) {
            e.sample(&name, &[("connection", id)], get(c));
        }
    }

    let threads: Vec<String> = (0..status.threads.len()).map(|i| i.to_string()).collect();
    e.family(
        "hairpin_datapath_busy_seconds_total",
        Kind::Counter,
        "Time a datapath thread spent in rounds that found work (published once a second).",
    );
    for (t, id) in status.threads.iter().zip(&threads) {
        e.sample(
            "hairpin_datapath_busy_seconds_total",
            &[("thread", id)],
            t.busy_ns as f64 / 1e9,
        );
    }
    e.family(
        "hairpin_datapath_rounds_total",
        Kind::Counter,
        "Datapath thread rounds, busy (found work) or idle.",
    );
    for (t, id) in status.threads.iter().zip(&threads) {
        e.sample(
            "hairpin_datapath_rounds_total",
            &[("thread", id), ("state", "busy")],
            t.busy_rounds,
        );
        e.sample(
            "hairpin_datapath_rounds_total",
            &[("thread", id), ("state", "idle")],
            t.idle_rounds,
        );
    }
    e.family(
        "hairpin_datapath_sleeps_total",
        Kind::Counter,
        "Times a datapath thread slept in poll(2) for lack of work.",
    );
    for (t, id) in status.threads.iter().zip(&threads) {
        e.sample("hairpin_datapath_sleeps_total", &[("thread", id)], t.sleeps);
    }
    e.finish()
}

fn port_labels<'a>(port: &'a str, p: &'a status::PortRow) -> [(&'a str, &'a str); 4] {
    [
        ("port", port),
        ("name", &p.name),
        ("interface", &p.interface),
        ("vlan", &p.vlan),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: &[u8]) -> String {
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[test]
    fn requests_get_the_page_or_a_clear_status() {
        let page = || "x 1\n".to_string();
        let ok = text(&respond(b"GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n", page));
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains("Content-Length: 4\r\n"), "{ok}");
        assert!(ok.ends_with("\r\n\r\nx 1\n"), "{ok}");
        let head = text(&respond(b"HEAD /metrics?x=1 HTTP/1.0\r\n\r\n", page));
        assert!(head.ends_with("Connection: close\r\n\r\n"), "{head}");
        let missing = text(&respond(b"GET /nope HTTP/1.1\r\n\r\n", page));
        assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
        let post = text(&respond(b"POST /metrics HTTP/1.1\r\n\r\n", page));
        assert!(post.starts_with("HTTP/1.1 405"), "{post}");
        for bad in [
            &b"\r\n\r\n"[..],
            b"GET\r\n\r\n",
            b"GET /metrics SPDY\r\n\r\n",
            b"\xff\xfe",
        ] {
            assert!(text(&respond(bad, page)).starts_with("HTTP/1.1 400"));
        }
    }
}
