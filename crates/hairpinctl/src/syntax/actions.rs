//! Actions and instructions in `ovs-actions(7)` style: `output:2,goto_table:1`, with
//! `write_actions(...)`, `clear_actions`, `write_metadata:V/M` and `meter:N` as instructions
//! and every other action going to apply-actions.

use ofp::{
    Action, InspInstruction, Instruction, OxmFieldId as F, OxmValue, OFPCML_NO_BUFFER,
    OFPP_CONTROLLER, OFPVID_PRESENT,
};

use super::fields::{describe, field_by_name, format_value, parse_value};
use super::value::{format_port, parse_int, parse_mac, parse_port, parse_u64};
use super::{split_assignment, split_top_level, SyntaxError};

/// Instructions as they are gathered, emitted in the order the pipeline runs them.
#[derive(Default)]
struct Gathered {
    meter: Option<u32>,
    apply: Vec<Action>,
    clear: bool,
    write: Option<Vec<Action>>,
    metadata: Option<(u64, u64)>,
    insp: Vec<InspInstruction>,
    goto: Option<u8>,
}

impl Gathered {
    fn into_instructions(self) -> Vec<Instruction> {
        let mut out = Vec::new();
        out.extend(self.meter.map(Instruction::Meter));
        if !self.apply.is_empty() {
            out.push(Instruction::ApplyActions(self.apply));
        }
        if self.clear {
            out.push(Instruction::ClearActions);
        }
        out.extend(self.write.map(Instruction::WriteActions));
        out.extend(
            self.metadata
                .map(|(metadata, mask)| Instruction::WriteMetadata { metadata, mask }),
        );
        out.extend(self.insp.into_iter().map(Instruction::Insp));
        out.extend(self.goto.map(Instruction::GotoTable));
        out
    }
}

/// Sets an instruction that may appear once.
fn set_once<T>(slot: &mut Option<T>, value: T, token: &str) -> Result<(), SyntaxError> {
    if slot.replace(value).is_some() {
        return Err(SyntaxError::new(token, "instruction given twice"));
    }
    Ok(())
}

/// The inside of `name(...)` (name in any case), if `token` has that form.
fn parenthesised<'a>(token: &'a str, name: &str) -> Option<&'a str> {
    let head = token.get(..name.len())?;
    if !head.eq_ignore_ascii_case(name) {
        return None;
    }
    token
        .get(name.len()..)?
        .strip_prefix('(')?
        .strip_suffix(')')
}

/// Parses the text after `actions=` into instructions.
pub fn parse_instructions(text: &str) -> Result<Vec<Instruction>, SyntaxError> {
    let tokens = split_top_level(text);
    if tokens.len() == 1
        && tokens
            .first()
            .is_some_and(|t| t.eq_ignore_ascii_case("drop"))
    {
        return Ok(Vec::new());
    }
    let mut g = Gathered::default();
    for token in tokens {
        let bad = |reason: String| SyntaxError::new(token, reason);
        let lower = token.to_ascii_lowercase();
        if let Some(inner) = parenthesised(token, "write_actions") {
            set_once(&mut g.write, parse_actions(inner)?, token)?;
        } else if let Some(inner) = parenthesised(token, "insp") {
            g.insp.push(parse_insp(token, inner)?);
        } else if lower == "clear_actions" {
            if g.clear {
                return Err(bad("instruction given twice".into()));
            }
            g.clear = true;
        } else if let Some(arg) = lower.strip_prefix("goto_table:") {
            set_once(&mut g.goto, parse_int(arg).map_err(bad)?, token)?;
        } else if let Some(arg) = lower.strip_prefix("meter:") {
            set_once(&mut g.meter, parse_int(arg).map_err(bad)?, token)?;
        } else if let Some(arg) = lower.strip_prefix("write_metadata:") {
            let (value, mask) = match arg.split_once('/') {
                Some((v, m)) => (parse_u64(v).map_err(bad)?, parse_u64(m).map_err(bad)?),
                None => (parse_u64(arg).map_err(bad)?, u64::MAX),
            };
            set_once(&mut g.metadata, (value, mask), token)?;
        } else if lower == "drop" {
            return Err(bad("`drop` must be the only action".into()));
        } else {
            g.apply.push(parse_action(token)?);
        }
    }
    Ok(g.into_instructions())
}

/// `insp(pkttmp_id=N,ACTIONS)`: the InSP instruction.
fn parse_insp(token: &str, inner: &str) -> Result<InspInstruction, SyntaxError> {
    let tokens = split_top_level(inner);
    let (first, rest) = tokens
        .split_first()
        .ok_or_else(|| SyntaxError::new(token, "needs pkttmp_id=N"))?;
    let id_text = first
        .strip_prefix("pkttmp_id=")
        .ok_or_else(|| SyntaxError::new(token, "needs pkttmp_id=N first"))?;
    let pkttmp_id = parse_int(id_text).map_err(|e| SyntaxError::new(token, e))?;
    let actions = rest
        .iter()
        .map(|t| parse_action(t))
        .collect::<Result<_, _>>()?;
    Ok(InspInstruction { pkttmp_id, actions })
}

/// Parses a plain action list (no instructions), as in `write_actions(...)` and buckets.
pub fn parse_actions(text: &str) -> Result<Vec<Action>, SyntaxError> {
    let tokens = split_top_level(text);
    if tokens.len() == 1
        && tokens
            .first()
            .is_some_and(|t| t.eq_ignore_ascii_case("drop"))
    {
        return Ok(Vec::new());
    }
    tokens.into_iter().map(parse_action).collect()
}

/// Reserved ports that may be written as a bare action name.
const BARE_PORTS: &[&str] = &["in_port", "normal", "flood", "all", "local", "table"];

fn output(port: u32, max_len: u16) -> Action {
    Action::Output { port, max_len }
}

/// Parses one action.
pub fn parse_action(token: &str) -> Result<Action, SyntaxError> {
    let bad = |reason: String| SyntaxError::new(token, reason);
    let lower = token.to_ascii_lowercase();
    if let Some(inner) = parenthesised(token, "output") {
        return parse_output_long(token, inner);
    }
    if lower == "controller" {
        return Ok(output(OFPP_CONTROLLER, OFPCML_NO_BUFFER));
    }
    if BARE_PORTS.contains(&lower.as_str()) || lower.bytes().all(|b| b.is_ascii_digit()) {
        return parse_port(token).map(|p| output(p, 0)).map_err(bad);
    }
    let simple = match lower.as_str() {
        "pop_vlan" => Some(Action::PopVlan),
        "pop_pbb" => Some(Action::PopPbb),
        "dec_ttl" => Some(Action::DecNwTtl),
        "dec_mpls_ttl" => Some(Action::DecMplsTtl),
        "copy_ttl_out" => Some(Action::CopyTtlOut),
        "copy_ttl_in" => Some(Action::CopyTtlIn),
        _ => None,
    };
    if let Some(action) = simple {
        return Ok(action);
    }
    if let Some(arg) = strip_prefix_any_case(token, "set_field:") {
        return parse_set_field(token, arg);
    }
    let Some((name, arg)) = split_assignment(&lower, true) else {
        return Err(bad("unknown action".into()));
    };
    let action = match name {
        "output" => output(parse_port(arg).map_err(bad)?, 0),
        "controller" => output(OFPP_CONTROLLER, parse_int(arg).map_err(bad)?),
        "group" => Action::Group(parse_int(arg).map_err(bad)?),
        "set_queue" => Action::SetQueue(parse_int(arg).map_err(bad)?),
        "push_vlan" => Action::PushVlan(parse_int(arg).map_err(bad)?),
        "push_mpls" => Action::PushMpls(parse_int(arg).map_err(bad)?),
        "pop_mpls" => Action::PopMpls(parse_int(arg).map_err(bad)?),
        "push_pbb" => Action::PushPbb(parse_int(arg).map_err(bad)?),
        "set_mpls_ttl" => Action::SetMplsTtl(parse_int(arg).map_err(bad)?),
        "mod_nw_ttl" | "set_nw_ttl" => Action::SetNwTtl(parse_int(arg).map_err(bad)?),
        "mod_dl_src" => Action::SetField(OxmValue::EthSrc(parse_mac(arg).map_err(bad)?)),
        "mod_dl_dst" => Action::SetField(OxmValue::EthDst(parse_mac(arg).map_err(bad)?)),
        "mod_vlan_vid" => {
            let vid: u16 = parse_int(arg).map_err(bad)?;
            if vid > 0xfff {
                return Err(bad("VLAN id must be 0-4095".into()));
            }
            Action::SetField(OxmValue::VlanVid(vid | OFPVID_PRESENT))
        }
        "mod_vlan_pcp" => Action::SetField(parse_value(F::VlanPcp, arg).map_err(bad)?),
        "mod_nw_src" => Action::SetField(parse_value(F::Ipv4Src, arg).map_err(bad)?),
        "mod_nw_dst" => Action::SetField(parse_value(F::Ipv4Dst, arg).map_err(bad)?),
        _ => return Err(bad("unknown action".into())),
    };
    Ok(action)
}

/// `output(port=P,max_len=N)`.
fn parse_output_long(token: &str, inner: &str) -> Result<Action, SyntaxError> {
    let bad = |reason: String| SyntaxError::new(token, reason);
    let (mut port, mut max_len) = (None, 0);
    for item in split_top_level(inner) {
        match item.split_once('=') {
            Some(("port", v)) => port = Some(parse_port(v).map_err(bad)?),
            Some(("max_len", v)) => max_len = parse_int(v).map_err(bad)?,
            _ => return Err(bad(format!("unknown output argument `{item}`"))),
        }
    }
    let port = port.ok_or_else(|| bad("output needs port=".into()))?;
    Ok(output(port, max_len))
}

/// The rest of `token` after `prefix` (matched in any case).
fn strip_prefix_any_case<'a>(token: &'a str, prefix: &str) -> Option<&'a str> {
    let head = token.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| token.get(prefix.len()..))
        .flatten()
}

/// `set_field:VALUE->FIELD`.
fn parse_set_field(token: &str, arg: &str) -> Result<Action, SyntaxError> {
    let bad = |reason: String| SyntaxError::new(token, reason);
    let (value, field) = arg
        .rsplit_once("->")
        .ok_or_else(|| bad("expected set_field:VALUE->FIELD".into()))?;
    let id = field_by_name(field).ok_or_else(|| bad(format!("unknown field `{field}`")))?;
    if value.contains('/') {
        return Err(bad("set_field takes no mask".into()));
    }
    parse_value(id, value).map(Action::SetField).map_err(bad)
}

/// The text of one action.
pub fn format_action(action: &Action) -> String {
    match action {
        Action::Output { port, max_len } if *port == OFPP_CONTROLLER => {
            format!("CONTROLLER:{max_len}")
        }
        Action::Output { port, max_len: 0 } => {
            let name = format_port(*port);
            if BARE_PORTS.contains(&name.to_ascii_lowercase().as_str()) {
                name
            } else {
                format!("output:{name}")
            }
        }
        Action::Output { port, max_len } => {
            format!("output(port={},max_len={max_len})", format_port(*port))
        }
        Action::CopyTtlOut => "copy_ttl_out".into(),
        Action::CopyTtlIn => "copy_ttl_in".into(),
        Action::SetMplsTtl(ttl) => format!("set_mpls_ttl:{ttl}"),
        Action::DecMplsTtl => "dec_mpls_ttl".into(),
        Action::PushVlan(e) => format!("push_vlan:{e:#06x}"),
        Action::PopVlan => "pop_vlan".into(),
        Action::PushMpls(e) => format!("push_mpls:{e:#06x}"),
        Action::PopMpls(e) => format!("pop_mpls:{e:#06x}"),
        Action::SetQueue(q) => format!("set_queue:{q}"),
        Action::Group(g) => format!("group:{g}"),
        Action::SetNwTtl(ttl) => format!("mod_nw_ttl:{ttl}"),
        Action::DecNwTtl => "dec_ttl".into(),
        Action::SetField(value) => format!(
            "set_field:{}->{}",
            format_value(value),
            describe(value.field_id()).name
        ),
        Action::PushPbb(e) => format!("push_pbb:{e:#06x}"),
        Action::PopPbb => "pop_pbb".into(),
        Action::Experimenter { experimenter, data } => {
            format!("experimenter({experimenter:#x},{})", hex::encode(data))
        }
    }
}

/// An action list, `drop` when empty.
pub fn format_actions(actions: &[Action]) -> String {
    if actions.is_empty() {
        return "drop".into();
    }
    let parts: Vec<String> = actions.iter().map(format_action).collect();
    parts.join(",")
}

/// Instructions as one action string, `drop` when there are none.
pub fn format_instructions(instructions: &[Instruction]) -> String {
    let mut parts = Vec::new();
    for inst in instructions {
        match inst {
            Instruction::Meter(id) => parts.push(format!("meter:{id}")),
            Instruction::ApplyActions(actions) => parts.extend(actions.iter().map(format_action)),
            Instruction::ClearActions => parts.push("clear_actions".into()),
            Instruction::WriteActions(actions) => {
                let inner: Vec<String> = actions.iter().map(format_action).collect();
                parts.push(format!("write_actions({})", inner.join(",")));
            }
            Instruction::WriteMetadata { metadata, mask } if *mask == u64::MAX => {
                parts.push(format!("write_metadata:{metadata:#x}"))
            }
            Instruction::WriteMetadata { metadata, mask } => {
                parts.push(format!("write_metadata:{metadata:#x}/{mask:#x}"))
            }
            Instruction::GotoTable(t) => parts.push(format!("goto_table:{t}")),
            Instruction::Insp(insp) => {
                let mut inner = vec![format!("pkttmp_id={}", insp.pkttmp_id)];
                inner.extend(insp.actions.iter().map(format_action));
                parts.push(format!("insp({})", inner.join(",")));
            }
            Instruction::Experimenter { experimenter, data } => parts.push(format!(
                "experimenter({experimenter:#x},{})",
                hex::encode(data)
            )),
        }
    }
    if parts.is_empty() {
        return "drop".into();
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ofp::{OFPP_ALL, OFPP_FLOOD, OFPP_IN_PORT, OFPP_LOCAL, OFPP_NORMAL, OFPP_TABLE};

    fn apply(actions: Vec<Action>) -> Vec<Instruction> {
        vec![Instruction::ApplyActions(actions)]
    }

    #[test]
    fn every_action_parses() {
        let cases: Vec<(&str, Action)> = vec![
            ("output:2", output(2, 0)),
            ("2", output(2, 0)),
            ("output:LOCAL", output(OFPP_LOCAL, 0)),
            ("output(port=3,max_len=128)", output(3, 128)),
            ("in_port", output(OFPP_IN_PORT, 0)),
            ("NORMAL", output(OFPP_NORMAL, 0)),
            ("flood", output(OFPP_FLOOD, 0)),
            ("all", output(OFPP_ALL, 0)),
            ("local", output(OFPP_LOCAL, 0)),
            ("table", output(OFPP_TABLE, 0)),
            ("controller", output(OFPP_CONTROLLER, OFPCML_NO_BUFFER)),
            ("controller:128", output(OFPP_CONTROLLER, 128)),
            ("CONTROLLER:65535", output(OFPP_CONTROLLER, 65535)),
            ("group:7", Action::Group(7)),
            ("set_queue:3", Action::SetQueue(3)),
            ("push_vlan:0x8100", Action::PushVlan(0x8100)),
            ("pop_vlan", Action::PopVlan),
            ("push_mpls:0x8847", Action::PushMpls(0x8847)),
            ("pop_mpls:0x0800", Action::PopMpls(0x0800)),
            ("push_pbb:0x88e7", Action::PushPbb(0x88e7)),
            ("pop_pbb", Action::PopPbb),
            ("set_mpls_ttl:9", Action::SetMplsTtl(9)),
            ("dec_mpls_ttl", Action::DecMplsTtl),
            ("mod_nw_ttl:5", Action::SetNwTtl(5)),
            ("set_nw_ttl:5", Action::SetNwTtl(5)),
            ("dec_ttl", Action::DecNwTtl),
            ("copy_ttl_out", Action::CopyTtlOut),
            ("copy_ttl_in", Action::CopyTtlIn),
            (
                "mod_dl_src:00:00:00:00:00:01",
                Action::SetField(OxmValue::EthSrc([0, 0, 0, 0, 0, 1])),
            ),
            (
                "mod_dl_dst:00:00:00:00:00:02",
                Action::SetField(OxmValue::EthDst([0, 0, 0, 0, 0, 2])),
            ),
            (
                "mod_vlan_vid:10",
                Action::SetField(OxmValue::VlanVid(0x100a)),
            ),
            ("mod_vlan_pcp:3", Action::SetField(OxmValue::VlanPcp(3))),
            (
                "mod_nw_src:10.0.0.1",
                Action::SetField(OxmValue::Ipv4Src(0x0a00_0001)),
            ),
            (
                "mod_nw_dst:10.0.0.2",
                Action::SetField(OxmValue::Ipv4Dst(0x0a00_0002)),
            ),
            (
                "set_field:4196->vlan_vid",
                Action::SetField(OxmValue::VlanVid(4196)),
            ),
            (
                "set_field:fe80::1->ipv6_dst",
                Action::SetField(OxmValue::Ipv6Dst([
                    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
                ])),
            ),
            (
                "set_field:80->tcp_dst",
                Action::SetField(OxmValue::TcpDst(80)),
            ),
            (
                "set_field:9->nw_ttl",
                Action::SetField(OxmValue::NxIpTtl(9)),
            ),
        ];
        for (text, action) in cases {
            assert_eq!(parse_action(text), Ok(action.clone()), "{text}");
            assert_eq!(parse_action(&format_action(&action)), Ok(action), "{text}");
        }
    }

    #[test]
    fn actions_print_like_ovs() {
        let printed = format_actions(&[
            output(2, 0),
            output(OFPP_CONTROLLER, 65535),
            output(OFPP_IN_PORT, 0),
            Action::SetField(OxmValue::EthSrc([0, 0, 0, 0, 0, 1])),
            Action::PushVlan(0x8100),
        ]);
        assert_eq!(
            printed,
            "output:2,CONTROLLER:65535,IN_PORT,set_field:00:00:00:00:00:01->dl_src,push_vlan:0x8100"
        );
        assert_eq!(format_actions(&[]), "drop");
    }

    #[test]
    fn instructions_are_gathered_in_pipeline_order() {
        let inst = parse_instructions(
            "goto_table:3,write_metadata:0x1/0xff,output:1,write_actions(group:2,output:4),\
             clear_actions,meter:5,dec_ttl",
        )
        .unwrap();
        assert_eq!(
            inst,
            vec![
                Instruction::Meter(5),
                Instruction::ApplyActions(vec![output(1, 0), Action::DecNwTtl]),
                Instruction::ClearActions,
                Instruction::WriteActions(vec![Action::Group(2), output(4, 0)]),
                Instruction::WriteMetadata {
                    metadata: 1,
                    mask: 0xff
                },
                Instruction::GotoTable(3),
            ]
        );
        assert_eq!(
            format_instructions(&inst),
            "meter:5,output:1,dec_ttl,clear_actions,write_actions(group:2,output:4),\
             write_metadata:0x1/0xff,goto_table:3"
        );
    }

    #[test]
    fn drop_and_empty_lists() {
        assert_eq!(parse_instructions("drop"), Ok(vec![]));
        assert_eq!(format_instructions(&[]), "drop");
        assert_eq!(format_instructions(&apply(vec![])), "drop");
        let empty_write = parse_instructions("write_actions()").unwrap();
        assert_eq!(empty_write, vec![Instruction::WriteActions(vec![])]);
        assert_eq!(format_instructions(&empty_write), "write_actions()");
        assert_eq!(
            parse_instructions("output:1,drop").unwrap_err().token,
            "drop"
        );
    }

    #[test]
    fn write_metadata_without_mask_is_full() {
        let inst = parse_instructions("write_metadata:0x10").unwrap();
        assert_eq!(
            inst,
            vec![Instruction::WriteMetadata {
                metadata: 0x10,
                mask: u64::MAX
            }]
        );
        assert_eq!(format_instructions(&inst), "write_metadata:0x10");
    }

    #[test]
    fn insp_instruction_round_trips() {
        let inst = parse_instructions("insp(pkttmp_id=4,output:2)").unwrap();
        assert_eq!(
            inst,
            vec![Instruction::Insp(InspInstruction {
                pkttmp_id: 4,
                actions: vec![output(2, 0)]
            })]
        );
        assert_eq!(format_instructions(&inst), "insp(pkttmp_id=4,output:2)");
    }

    #[test]
    fn errors_name_the_token() {
        let cases = [
            ("output:1,frob", "frob"),
            ("output:eth0", "output:eth0"),
            ("goto_table:1,goto_table:2", "goto_table:2"),
            ("meter:1,meter:1", "meter:1"),
            ("clear_actions,clear_actions", "clear_actions"),
            ("set_field:1->nosuch", "set_field:1->nosuch"),
            (
                "set_field:10.0.0.0/8->nw_src",
                "set_field:10.0.0.0/8->nw_src",
            ),
            ("set_field:8->vlan_pcp", "set_field:8->vlan_pcp"),
            ("mod_vlan_vid:5000", "mod_vlan_vid:5000"),
            ("goto_table:300", "goto_table:300"),
            ("write_actions(output:1,bad)", "bad"),
            ("output(port=1,len=3)", "output(port=1,len=3)"),
            ("insp(output:1)", "insp(output:1)"),
        ];
        for (text, token) in cases {
            let e = parse_instructions(text).unwrap_err();
            assert_eq!(e.token, token, "{text}: {e}");
        }
    }
}
