//! Local fast reroute: flows toward a primary port move to its backup port the moment the
//! primary goes down, here on the switch, before a remote controller could hear of it. Each
//! pair is given as `PRIMARY:BACKUP`. The controllet installs, for every pair, a flow that
//! sends what comes in on the backup out of the primary and back (so traffic flows either
//! way), and keeps them on the backup while the primary is down, by its own link or by the
//! peer's report below, and back on the primary once neither holds.
//!
//! It publishes each local link change on `hairpin.<dpid>.c.<name>.link` (JSON: port, up),
//! and with `--follow NAME` it also reroutes when the controllet NAME of another switch
//! reports one of its ports down (`--peer REMOTE_PORT:PRIMARY:BACKUP`), for a failure that
//! only the other end of a path sees.
//!
//! ```text
//! fast_reroute --pair 2:3 --host-port 1 [--follow frr --peer 2:2:3]
//! ```

use std::collections::HashMap;

use futures_util::StreamExt;
use ofp::{Message, OxmValue, PortState, OFPPR_DELETE};

use controllet::openflow;
use controllet::subjects;

#[derive(Clone, Copy, Debug)]
struct Pair {
    primary: u32,
    backup: u32,
}

/// Why a pair's primary is out of use: its own link, or the far end's as the peer reports it.
/// Traffic goes back to the primary only when neither holds, whatever else changes.
#[derive(Clone, Copy, Debug, Default)]
struct PrimaryDown {
    local: bool,
    peer: bool,
}

impl PrimaryDown {
    fn active(self, pair: Pair) -> u32 {
        if self.local || self.peer {
            pair.backup
        } else {
            pair.primary
        }
    }
}

struct Args {
    host_port: u32,
    pairs: Vec<Pair>,
    follow: Option<String>,
    /// (remote port, local pair): the peer's port down moves our pair to its backup.
    peers: Vec<(u32, Pair)>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        host_port: 1,
        pairs: Vec::new(),
        follow: None,
        peers: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    let num = |s: &str| s.parse::<u32>().map_err(|_| format!("`{s}` is not a port"));
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let parts: Vec<&str> = value.split(':').collect();
        match (flag.as_str(), parts.as_slice()) {
            ("--host-port", [p]) => args.host_port = num(p)?,
            ("--pair", [p, b]) => args.pairs.push(Pair {
                primary: num(p)?,
                backup: num(b)?,
            }),
            ("--follow", [name]) => args.follow = Some(name.to_string()),
            ("--peer", [r, p, b]) => args.peers.push((
                num(r)?,
                Pair {
                    primary: num(p)?,
                    backup: num(b)?,
                },
            )),
            _ => return Err(format!("cannot read {flag} {value}")),
        }
    }
    Ok(args)
}

/// The flows that carry host traffic over `port`: host port to `port` and back, then a
/// barrier, which makes the switch apply them at once (without one it publishes changes to its
/// datapath on its own clock, within 100 ms).
fn path_flows(host_port: u32, port: u32) -> Vec<Message> {
    let to = openflow::flow(
        20,
        openflow::exact(&[OxmValue::InPort(host_port)]),
        vec![openflow::output(port)],
    );
    let from = openflow::flow(
        20,
        openflow::exact(&[OxmValue::InPort(port)]),
        vec![openflow::output(host_port)],
    );
    vec![
        Message::FlowMod(to),
        Message::FlowMod(from),
        Message::BarrierRequest,
    ]
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), controllet::Error> {
    let args = parse_args()?;
    let mut ctl = controllet::Controllet::start().await?;
    let switch = ctl.switch.sender.clone();
    for pair in &args.pairs {
        switch
            .send_all(&path_flows(args.host_port, pair.primary))
            .await?;
    }
    switch.send(&Message::BarrierRequest).await?;
    println!("fast reroute ready: {:?}", args.pairs);
    let mut remote = match (&ctl.bus, &args.follow) {
        (Some(bus), Some(name)) => Some(bus.subscribe(subjects::any::topic(name, "link")).await?),
        _ => None,
    };
    let own = ctl.env.datapath_id;
    let mut down: HashMap<u32, PrimaryDown> = HashMap::new();
    loop {
        tokio::select! {
            msg = ctl.switch.receiver.recv() => {
                let Some((_, msg)) = msg? else { return Ok(()) };
                let Message::PortStatus(status) = msg else { continue };
                let port = status.desc.port_no;
                let up = status.reason != OFPPR_DELETE
                    && status.desc.state.0 & PortState::LINK_DOWN.0 == 0;
                for pair in args.pairs.iter().filter(|p| p.primary == port) {
                    let state = down.entry(pair.primary).or_default();
                    state.local = !up;
                    let active = state.active(*pair);
                    switch.send_all(&path_flows(args.host_port, active)).await?;
                    println!("port {port} up={up}: traffic on port {active}");
                }
                if let Some(bus) = &ctl.bus {
                    bus.publish("link", format!("{{\"port\":{port},\"up\":{up}}}")).await?;
                }
            }
            Some(msg) = next(&mut remote) => {
                let from_self = subjects::parse(msg.subject.as_str()).is_some_and(|(d, _)| d == own);
                let Some((port, up)) = parse_link(&msg.payload) else { continue };
                if from_self {
                    continue;
                }
                for (_, pair) in args.peers.iter().filter(|(r, _)| *r == port) {
                    let state = down.entry(pair.primary).or_default();
                    state.peer = !up;
                    let active = state.active(*pair);
                    switch.send_all(&path_flows(args.host_port, active)).await?;
                    println!("peer port {port} up={up}: traffic on port {active}");
                }
            }
        }
    }
}

async fn next(sub: &mut Option<async_nats::Subscriber>) -> Option<async_nats::Message> {
    match sub {
        Some(sub) => sub.next().await,
        None => std::future::pending().await,
    }
}

/// `{"port":N,"up":B}`, as this controllet publishes it.
fn parse_link(payload: &[u8]) -> Option<(u32, bool)> {
    let text = std::str::from_utf8(payload).ok()?;
    let port = text
        .split("\"port\":")
        .nth(1)?
        .split([',', '}'])
        .next()?
        .trim()
        .parse()
        .ok()?;
    let up = text
        .split("\"up\":")
        .nth(1)?
        .trim_start()
        .starts_with("true");
    Some((port, up))
}
