//! The bus's subjects: one namespace per switch, `hairpin.<dpid>.`, with the datapath id as 16
//! lower-case hex digits, so that `hairpin.*.event.port_status` reaches every switch.
//!
//! | subject | who publishes | payload |
//! |---|---|---|
//! | `hairpin.<dpid>.event.packet_in` | hairpind | the OFPT_PACKET_IN message |
//! | `hairpin.<dpid>.event.port_status` | hairpind | the OFPT_PORT_STATUS message |
//! | `hairpin.<dpid>.event.flow_removed` | hairpind | the OFPT_FLOW_REMOVED message |
//! | `hairpin.<dpid>.controllet.joined` / `.left` | hairpind | JSON: name, pid, restarts / exit |
//! | `hairpin.<dpid>.c.<name>.<topic...>` | controllet `<name>` only | its own |
//! | `hairpin.<dpid>.ask.switch.<query>` | anyone (requests) | hairpind replies with JSON |
//! | `hairpin.<dpid>.ask.<name>.<query>` | anyone (requests) | controllet `<name>` replies |
//!
//! Every event hairpind publishes carries the header [`PUBLISHED_NS`]: the wall-clock time of
//! publication in nanoseconds, from which a subscriber on any host with a synchronised clock
//! reads the bus's delay.

use std::fmt;

/// First token of every subject.
pub const ROOT: &str = "hairpin";
/// The service name hairpind answers requests under (`hairpin.<dpid>.ask.switch.<query>`); no
/// controllet may take it.
pub const SWITCH_SERVICE: &str = "switch";
/// Header with the publication time (CLOCK_REALTIME, nanoseconds) of an event.
pub const PUBLISHED_NS: &str = "Hairpin-Published-Ns";

/// The switch events hairpind publishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    PacketIn,
    PortStatus,
    FlowRemoved,
}

impl EventKind {
    pub const ALL: [EventKind; 3] = [
        EventKind::PacketIn,
        EventKind::PortStatus,
        EventKind::FlowRemoved,
    ];

    /// The last token of the event's subject.
    pub fn token(self) -> &'static str {
        match self {
            EventKind::PacketIn => "packet_in",
            EventKind::PortStatus => "port_status",
            EventKind::FlowRemoved => "flow_removed",
        }
    }

    pub fn from_token(token: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.token() == token)
    }
}

/// A datapath id as subjects spell it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dpid(pub u64);

impl fmt::Display for Dpid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// The subjects of one switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch(pub Dpid);

impl Switch {
    pub fn new(datapath_id: u64) -> Self {
        Switch(Dpid(datapath_id))
    }

    /// Every subject of this switch: `hairpin.<dpid>.>`.
    pub fn all(self) -> String {
        format!("{ROOT}.{}.>", self.0)
    }

    pub fn event(self, kind: EventKind) -> String {
        format!("{ROOT}.{}.event.{}", self.0, kind.token())
    }

    /// `joined` or `left`.
    pub fn controllet(self, what: &str) -> String {
        format!("{ROOT}.{}.controllet.{what}", self.0)
    }

    /// The subjects controllet `name` publishes on: `hairpin.<dpid>.c.<name>.>`.
    pub fn own(self, name: &str) -> String {
        format!("{ROOT}.{}.c.{name}.>", self.0)
    }

    /// A subject of controllet `name`: `hairpin.<dpid>.c.<name>.<topic>`.
    pub fn topic(self, name: &str, topic: &str) -> String {
        format!("{ROOT}.{}.c.{name}.{topic}", self.0)
    }

    /// A request subject of `service` (a controllet's name, or [`SWITCH_SERVICE`]).
    pub fn ask(self, service: &str, query: &str) -> String {
        format!("{ROOT}.{}.ask.{service}.{query}", self.0)
    }

    /// Every request subject `service` answers.
    pub fn asked(self, service: &str) -> String {
        format!("{ROOT}.{}.ask.{service}.>", self.0)
    }

    /// The reply-inbox prefix of controllet `name`: only it may subscribe there.
    pub fn inbox(self, name: &str) -> String {
        format!("_INBOX_{}_{name}", self.0)
    }
}

/// Subscription patterns that reach every switch on the bus.
pub mod any {
    use super::{EventKind, ROOT};

    pub fn event(kind: EventKind) -> String {
        format!("{ROOT}.*.event.{}", kind.token())
    }

    /// Every event of every switch.
    pub fn events() -> String {
        format!("{ROOT}.*.event.>")
    }

    /// What controllet `name` publishes, on every switch.
    pub fn topic(name: &str, topic: &str) -> String {
        format!("{ROOT}.*.c.{name}.{topic}")
    }
}

/// Whether `name` can be a controllet's name: 1 to 32 of `[a-z0-9_-]`, starting with a letter,
/// and not the switch's own service name. Subjects and paths are built from it, so it must
/// carry no `.`, `*`, `>`, `/` or whitespace.
pub fn valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    let first_ok = bytes.next().is_some_and(|b| b.is_ascii_lowercase());
    first_ok
        && name.len() <= 32
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        && name != SWITCH_SERVICE
}

/// Splits `hairpin.<dpid>.<rest>` into the datapath id and the rest.
pub fn parse(subject: &str) -> Option<(u64, &str)> {
    let rest = subject.strip_prefix(ROOT)?.strip_prefix('.')?;
    let (dpid, rest) = rest.split_once('.')?;
    if dpid.len() != 16 {
        return None;
    }
    Some((u64::from_str_radix(dpid, 16).ok()?, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_are_spelled_as_documented() {
        let s = Switch::new(0x2a);
        assert_eq!(
            s.event(EventKind::PortStatus),
            "hairpin.000000000000002a.event.port_status"
        );
        assert_eq!(s.own("lsw"), "hairpin.000000000000002a.c.lsw.>");
        assert_eq!(
            s.topic("frr", "link"),
            "hairpin.000000000000002a.c.frr.link"
        );
        assert_eq!(
            s.ask(SWITCH_SERVICE, "ports"),
            "hairpin.000000000000002a.ask.switch.ports"
        );
        assert_eq!(
            s.controllet("joined"),
            "hairpin.000000000000002a.controllet.joined"
        );
        assert_eq!(any::topic("frr", "link"), "hairpin.*.c.frr.link");
        assert_eq!(parse(&s.topic("frr", "link")), Some((0x2a, "c.frr.link")));
        assert_eq!(parse("hairpin.2a.c.x"), None);
        assert_eq!(
            EventKind::from_token("flow_removed"),
            Some(EventKind::FlowRemoved)
        );
    }

    #[test]
    fn names_cannot_escape_their_subjects_or_paths() {
        for good in ["lsw", "fast-reroute", "a1_b"] {
            assert!(valid_name(good), "{good}");
        }
        for bad in [
            "",
            "switch",
            "a.b",
            "a*",
            "a>",
            "../x",
            "A",
            "1abc",
            "a b",
            &"x".repeat(33),
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
    }
}
