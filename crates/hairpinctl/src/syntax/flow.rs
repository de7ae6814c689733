//! Flows: `table=0, priority=100, cookie=0x1, idle_timeout=10, send_flow_rem, MATCH
//! actions=ACTIONS`, and the `dump-flows` line that prints back in the same syntax.

use ofp::{
    FlowMod, FlowModCommand, FlowModFlags, FlowStats, FlowStatsRequest, Instruction, Match,
    OFPG_ANY, OFPP_ANY, OFPTT_ALL, OFP_NO_BUFFER,
};

use super::actions::{format_instructions, parse_instructions};
use super::matching::{format_match, MatchBuilder};
use super::value::{parse_int, parse_port, parse_u64};
use super::{split_top_level, SyntaxError};

/// Priority of a flow that does not name one (OFP_DEFAULT_PRIORITY).
pub const DEFAULT_PRIORITY: u16 = 0x8000;

/// What a flow text is for; it decides the defaults and which parts are allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowUse {
    /// `add-flow`: actions required, table 0 by default.
    Add,
    /// `mod-flows`: actions required, a cookie mask may select flows, table 0 by default.
    Modify,
    /// `del-flows` / `dump-flows`: no actions, every table by default, `out_port`/`out_group`
    /// and cookie masks select flows.
    Filter,
}

/// A flow as written on the command line or printed by `dump-flows`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowSpec {
    pub table_id: u8,
    pub priority: u16,
    pub cookie: u64,
    pub cookie_mask: u64,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub flags: FlowModFlags,
    pub out_port: u32,
    pub out_group: u32,
    pub match_: Match,
    pub instructions: Vec<Instruction>,
}

/// Flag names, as `ovs-ofctl` writes them.
const FLAG_NAMES: &[(&str, FlowModFlags)] = &[
    ("send_flow_rem", FlowModFlags::SEND_FLOW_REM),
    ("check_overlap", FlowModFlags::CHECK_OVERLAP),
    ("reset_counts", FlowModFlags::RESET_COUNTS),
    ("no_packet_counts", FlowModFlags::NO_PKT_COUNTS),
    ("no_byte_counts", FlowModFlags::NO_BYT_COUNTS),
];

/// Statistics that `dump-flows` prints and that are ignored when such a line is read back.
const PRINTED_STATISTICS: &[&str] = &[
    "duration",
    "n_packets",
    "n_bytes",
    "idle_age",
    "hard_age",
    "location",
    "hw_packets",
    "sw_packets",
];

impl FlowSpec {
    /// An empty flow with the defaults of `use_`.
    pub fn defaults(use_: FlowUse) -> Self {
        FlowSpec {
            table_id: if use_ == FlowUse::Filter {
                OFPTT_ALL
            } else {
                0
            },
            priority: DEFAULT_PRIORITY,
            cookie: 0,
            cookie_mask: 0,
            idle_timeout: 0,
            hard_timeout: 0,
            flags: FlowModFlags::default(),
            out_port: OFPP_ANY,
            out_group: OFPG_ANY,
            match_: Match::default(),
            instructions: Vec::new(),
        }
    }

    /// The FLOW_MOD that applies this flow with `command`.
    pub fn to_flow_mod(&self, command: FlowModCommand) -> FlowMod {
        FlowMod {
            cookie: self.cookie,
            cookie_mask: self.cookie_mask,
            table_id: self.table_id,
            command,
            idle_timeout: self.idle_timeout,
            hard_timeout: self.hard_timeout,
            priority: self.priority,
            buffer_id: OFP_NO_BUFFER,
            out_port: self.out_port,
            out_group: self.out_group,
            flags: self.flags,
            match_: self.match_.clone(),
            instructions: self.instructions.clone(),
        }
    }

    /// The flow-stats request that selects the flows this filter names.
    pub fn to_stats_request(&self) -> FlowStatsRequest {
        FlowStatsRequest {
            table_id: self.table_id,
            out_port: self.out_port,
            out_group: self.out_group,
            cookie: self.cookie,
            cookie_mask: self.cookie_mask,
            match_: self.match_.clone(),
        }
    }

    /// The flow a flow-stats entry describes, as `add-flow` would read it.
    pub fn from_stats(stats: &FlowStats) -> Self {
        FlowSpec {
            table_id: stats.table_id,
            priority: stats.priority,
            cookie: stats.cookie,
            idle_timeout: stats.idle_timeout,
            hard_timeout: stats.hard_timeout,
            flags: stats.flags,
            match_: stats.match_.clone(),
            instructions: stats.instructions.clone(),
            ..FlowSpec::defaults(FlowUse::Add)
        }
    }
}

/// Parses a flow for `use_`.
pub fn parse_flow(text: &str, use_: FlowUse) -> Result<FlowSpec, SyntaxError> {
    let mut spec = FlowSpec::defaults(use_);
    let mut builder = MatchBuilder::default();
    let tokens = split_top_level(text);
    let mut instructions = None;
    for (i, &token) in tokens.iter().enumerate() {
        if let Some(first) = token.strip_prefix("actions=") {
            if use_ == FlowUse::Filter {
                return Err(SyntaxError::new(token, "actions are not allowed here"));
            }
            let rest = tokens.get(i + 1..).unwrap_or_default();
            let all: Vec<&str> = std::iter::once(first).chain(rest.iter().copied()).collect();
            instructions = Some(parse_instructions(&all.join(","))?);
            break;
        }
        if !parse_flow_keyword(&mut spec, token, use_)? && !builder.add_token(token)? {
            return Err(SyntaxError::new(token, "unknown field or keyword"));
        }
    }
    spec.match_ = builder.finish()?;
    match instructions {
        Some(instructions) => spec.instructions = instructions,
        None if use_ != FlowUse::Filter => {
            return Err(SyntaxError::new(
                text,
                "needs actions=... (use actions=drop to drop)",
            ))
        }
        None => {}
    }
    Ok(spec)
}

/// Applies a flow-level keyword (`table=`, `priority=`, flags, ...); `Ok(false)` if `token`
/// is not one.
fn parse_flow_keyword(
    spec: &mut FlowSpec,
    token: &str,
    use_: FlowUse,
) -> Result<bool, SyntaxError> {
    let bad = |reason: String| SyntaxError::new(token, reason);
    if let Some((_, flag)) = FLAG_NAMES.iter().find(|(name, _)| *name == token) {
        spec.flags = spec.flags | *flag;
        return Ok(true);
    }
    let Some((name, value)) = token.split_once('=') else {
        return Ok(false);
    };
    match name {
        "table" => spec.table_id = parse_int(value).map_err(bad)?,
        "priority" => spec.priority = parse_int(value).map_err(bad)?,
        "idle_timeout" => spec.idle_timeout = parse_int(value).map_err(bad)?,
        "hard_timeout" => spec.hard_timeout = parse_int(value).map_err(bad)?,
        "flags" => spec.flags = spec.flags | FlowModFlags(parse_int(value).map_err(bad)?),
        "cookie" => {
            let (cookie, mask) = match value.split_once('/') {
                Some(_) if use_ == FlowUse::Add => {
                    return Err(bad(
                        "a cookie mask only selects flows; add-flow takes none".into()
                    ))
                }
                Some((v, m)) => (parse_u64(v).map_err(bad)?, parse_u64(m).map_err(bad)?),
                None if use_ == FlowUse::Filter => (parse_u64(value).map_err(bad)?, u64::MAX),
                None => (parse_u64(value).map_err(bad)?, 0),
            };
            spec.cookie = cookie;
            spec.cookie_mask = mask;
        }
        "out_port" | "out_group" if use_ != FlowUse::Filter => {
            return Err(bad("only del-flows and dump-flows take this".into()))
        }
        "out_port" => spec.out_port = parse_port(value).map_err(bad)?,
        "out_group" => spec.out_group = parse_int(value).map_err(bad)?,
        _ if PRINTED_STATISTICS.contains(&name) => {}
        _ => return Ok(false),
    }
    Ok(true)
}

/// The statistics of a `dump-flows` line.
struct Counters {
    duration_sec: u32,
    duration_nsec: u32,
    packets: u64,
    bytes: u64,
}

/// A flow in `add-flow` syntax, with the statistics where `ovs-ofctl dump-flows` puts them.
fn format_with(spec: &FlowSpec, counters: Option<Counters>) -> String {
    let cookie = format!("cookie={:#x}", spec.cookie);
    let table = format!("table={}", spec.table_id);
    let mut head = match counters {
        Some(c) => vec![
            cookie,
            format!(
                "duration={}.{:03}s",
                c.duration_sec,
                c.duration_nsec / 1_000_000
            ),
            table,
            format!("n_packets={}", c.packets),
            format!("n_bytes={}", c.bytes),
        ],
        None => vec![table, cookie],
    };
    if spec.idle_timeout != 0 {
        head.push(format!("idle_timeout={}", spec.idle_timeout));
    }
    if spec.hard_timeout != 0 {
        head.push(format!("hard_timeout={}", spec.hard_timeout));
    }
    let mut known = 0;
    for (name, flag) in FLAG_NAMES {
        if spec.flags.contains(*flag) {
            head.push((*name).to_string());
            known |= flag.0;
        }
    }
    if spec.flags.0 & !known != 0 {
        head.push(format!("flags={:#x}", spec.flags.0 & !known));
    }
    let mut body = vec![format!("priority={}", spec.priority)];
    body.extend(format_match(&spec.match_));
    format!(
        "{}, {} actions={}",
        head.join(", "),
        body.join(","),
        format_instructions(&spec.instructions)
    )
}

/// A flow in `add-flow` syntax.
pub fn format_flow(spec: &FlowSpec) -> String {
    format_with(spec, None)
}

/// One `dump-flows` line, like `ovs-ofctl dump-flows` prints it.
pub fn format_flow_stats(stats: &FlowStats) -> String {
    let counters = Counters {
        duration_sec: stats.duration_sec,
        duration_nsec: stats.duration_nsec,
        packets: stats.packet_count,
        bytes: stats.byte_count,
    };
    format_with(&FlowSpec::from_stats(stats), Some(counters))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ofp::{Action, OxmField, OxmValue};

    fn stats(spec: &FlowSpec) -> FlowStats {
        FlowStats {
            table_id: spec.table_id,
            duration_sec: 1,
            duration_nsec: 234_000_000,
            priority: spec.priority,
            idle_timeout: spec.idle_timeout,
            hard_timeout: spec.hard_timeout,
            flags: spec.flags,
            cookie: spec.cookie,
            packet_count: 5,
            byte_count: 300,
            match_: spec.match_.clone(),
            instructions: spec.instructions.clone(),
        }
    }

    #[test]
    fn dump_line_looks_like_ovs_ofctl() {
        let spec = parse_flow(
            "priority=100,in_port=1,dl_dst=00:00:00:00:00:02 actions=output:2",
            FlowUse::Add,
        )
        .unwrap();
        assert_eq!(
            format_flow_stats(&stats(&spec)),
            "cookie=0x0, duration=1.234s, table=0, n_packets=5, n_bytes=300, \
             priority=100,in_port=1,dl_dst=00:00:00:00:00:02 actions=output:2"
        );
        assert_eq!(
            format_flow(&spec),
            "table=0, cookie=0x0, priority=100,in_port=1,dl_dst=00:00:00:00:00:02 actions=output:2"
        );
    }

    #[test]
    fn dump_line_feeds_back_to_add_flow() {
        let text = "table=2, cookie=0xabc, idle_timeout=10, hard_timeout=20, send_flow_rem, \
                    reset_counts, priority=7,tcp,nw_dst=10.0.0.0/8,tp_dst=22 \
                    actions=meter:3,dec_ttl,write_actions(output:1),goto_table:4";
        let spec = parse_flow(text, FlowUse::Add).unwrap();
        assert_eq!(spec.table_id, 2);
        assert_eq!(spec.cookie, 0xabc);
        assert_eq!((spec.idle_timeout, spec.hard_timeout), (10, 20));
        assert_eq!(
            spec.flags,
            FlowModFlags::SEND_FLOW_REM | FlowModFlags::RESET_COUNTS
        );
        let line = format_flow_stats(&stats(&spec));
        assert_eq!(parse_flow(&line, FlowUse::Add), Ok(spec.clone()));
        assert_eq!(parse_flow(&format_flow(&spec), FlowUse::Add), Ok(spec));
    }

    #[test]
    fn defaults_depend_on_use() {
        let add = parse_flow("actions=drop", FlowUse::Add).unwrap();
        assert_eq!((add.table_id, add.priority), (0, DEFAULT_PRIORITY));
        assert!(add.instructions.is_empty());
        let filter = parse_flow("", FlowUse::Filter).unwrap();
        assert_eq!(filter.table_id, OFPTT_ALL);
        assert_eq!((filter.out_port, filter.out_group), (OFPP_ANY, OFPG_ANY));
        let modify = parse_flow("in_port=1,actions=output:2", FlowUse::Modify).unwrap();
        assert_eq!(modify.table_id, 0);
    }

    #[test]
    fn cookies_and_filters() {
        let f = parse_flow("cookie=0x10/0xf0,out_port=3,out_group=4", FlowUse::Filter).unwrap();
        assert_eq!((f.cookie, f.cookie_mask), (0x10, 0xf0));
        assert_eq!((f.out_port, f.out_group), (3, 4));
        let exact = parse_flow("cookie=0x10", FlowUse::Filter).unwrap();
        assert_eq!(exact.cookie_mask, u64::MAX);
        let add = parse_flow("cookie=0x10,actions=drop", FlowUse::Add).unwrap();
        assert_eq!((add.cookie, add.cookie_mask), (0x10, 0));
        let req = f.to_stats_request();
        assert_eq!((req.cookie, req.cookie_mask, req.out_port), (0x10, 0xf0, 3));
    }

    #[test]
    fn flow_mod_carries_everything() {
        let spec = parse_flow(
            "table=1,priority=9,idle_timeout=3,check_overlap,ip actions=output:1",
            FlowUse::Add,
        )
        .unwrap();
        let fm = spec.to_flow_mod(FlowModCommand::Add);
        assert_eq!(fm.table_id, 1);
        assert_eq!(fm.priority, 9);
        assert_eq!(fm.idle_timeout, 3);
        assert_eq!(fm.flags, FlowModFlags::CHECK_OVERLAP);
        assert_eq!(fm.buffer_id, OFP_NO_BUFFER);
        assert_eq!(
            fm.match_.fields,
            vec![OxmField::exact(OxmValue::EthType(0x800))]
        );
        assert_eq!(
            fm.instructions,
            vec![Instruction::ApplyActions(vec![Action::Output {
                port: 1,
                max_len: 0
            }])]
        );
    }

    #[test]
    fn errors_name_the_token() {
        let cases = [
            ("in_port=1", FlowUse::Add, "in_port=1"),
            (
                "priority=70000,actions=drop",
                FlowUse::Add,
                "priority=70000",
            ),
            ("table=x,actions=drop", FlowUse::Add, "table=x"),
            ("cookie=1/1,actions=drop", FlowUse::Add, "cookie=1/1"),
            ("out_port=1,actions=drop", FlowUse::Add, "out_port=1"),
            (
                "in_port=1,actions=output:1",
                FlowUse::Filter,
                "actions=output:1",
            ),
            ("wibble,actions=drop", FlowUse::Add, "wibble"),
            (
                "ip,nw_src=300.0.0.1,actions=drop",
                FlowUse::Add,
                "nw_src=300.0.0.1",
            ),
            ("actions=output:1,bogus:3", FlowUse::Add, "bogus:3"),
        ];
        for (text, use_, token) in cases {
            let e = parse_flow(text, use_).unwrap_err();
            assert_eq!(e.token, token, "{text}: {e}");
        }
    }
}
