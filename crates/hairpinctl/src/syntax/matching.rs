//! Matches: protocol shorthands (`tcp`, `arp`, ...), `name=value[/mask]` items, the OVS
//! conveniences `dl_vlan` and `tp_src`/`tp_dst`, and prerequisite checks that name the
//! token at fault.

use ofp::{Match, OxmField, OxmFieldId as F, OxmValue, Prerequisite, OFPVID_PRESENT};

use super::fields::{describe, field_by_name, format_field, parse_field};
use super::value::parse_int;
use super::SyntaxError;

/// Protocol shorthands: name, ethertype and IP protocol.
const SHORTHANDS: &[(&str, u16, Option<u8>)] = &[
    ("ip", 0x0800, None),
    ("icmp", 0x0800, Some(1)),
    ("tcp", 0x0800, Some(6)),
    ("udp", 0x0800, Some(17)),
    ("sctp", 0x0800, Some(132)),
    ("ipv6", 0x86dd, None),
    ("icmp6", 0x86dd, Some(58)),
    ("tcp6", 0x86dd, Some(6)),
    ("udp6", 0x86dd, Some(17)),
    ("sctp6", 0x86dd, Some(132)),
    ("arp", 0x0806, None),
    ("rarp", 0x8035, None),
    ("mpls", 0x8847, None),
    ("mplsm", 0x8848, None),
];

/// `dl_vlan` value meaning "no 802.1Q header".
const DL_VLAN_NONE: u16 = 0xffff;

/// A transport port written as `tp_src`/`tp_dst`, resolved once the IP protocol is known.
struct TransportPort {
    token: String,
    is_src: bool,
    text: String,
}

/// Collects match tokens in any order, then builds a checked [`Match`].
#[derive(Default)]
pub struct MatchBuilder {
    items: Vec<(String, OxmField)>,
    transport: Vec<TransportPort>,
}

impl MatchBuilder {
    /// Takes `token` if it is a match item; `Ok(false)` if it is something else.
    pub fn add_token(&mut self, token: &str) -> Result<bool, SyntaxError> {
        if let Some(&(_, eth_type, ip_proto)) = SHORTHANDS.iter().find(|(n, ..)| *n == token) {
            self.push(token, OxmField::exact(OxmValue::EthType(eth_type)))?;
            if let Some(proto) = ip_proto {
                self.push(token, OxmField::exact(OxmValue::IpProto(proto)))?;
            }
            return Ok(true);
        }
        let Some((name, text)) = token.split_once('=') else {
            return Ok(false);
        };
        let bad = |reason: String| SyntaxError::new(token, reason);
        match name {
            "dl_vlan" => {
                let vid: u16 = parse_int(text).map_err(bad)?;
                let value = match vid {
                    DL_VLAN_NONE => 0,
                    0..=0xfff => vid | OFPVID_PRESENT,
                    _ => return Err(bad("dl_vlan must be 0-4095 or 0xffff".into())),
                };
                self.push(token, OxmField::exact(OxmValue::VlanVid(value)))?;
            }
            "tp_src" | "tp_dst" => self.transport.push(TransportPort {
                token: token.to_string(),
                is_src: name == "tp_src",
                text: text.to_string(),
            }),
            _ => match field_by_name(name) {
                Some(id) => self.push(token, parse_field(id, text).map_err(bad)?)?,
                None => return Ok(false),
            },
        }
        Ok(true)
    }

    /// Adds a field; repeating a field is fine only with the same value.
    fn push(&mut self, token: &str, field: OxmField) -> Result<(), SyntaxError> {
        let id = field.value.field_id();
        match self.items.iter().find(|(_, f)| f.value.field_id() == id) {
            Some((_, earlier)) if *earlier == field => Ok(()),
            Some((earlier_token, _)) => Err(SyntaxError::new(
                token,
                format!("conflicts with `{earlier_token}`"),
            )),
            None => {
                self.items.push((token.to_string(), field));
                Ok(())
            }
        }
    }

    fn exact(&self, id: F) -> Option<u64> {
        self.items
            .iter()
            .find(|(_, f)| f.value.field_id() == id && f.mask.is_none())
            .and_then(|(_, f)| f.value.as_u64())
    }

    /// Resolves `tp_*`, checks prerequisites and returns the fields in wire-number order
    /// (which puts every prerequisite before the field that needs it).
    pub fn finish(mut self) -> Result<Match, SyntaxError> {
        let ip_proto = self.exact(F::IpProto);
        for tp in std::mem::take(&mut self.transport) {
            let id = match (ip_proto, tp.is_src) {
                (Some(6), true) => F::TcpSrc,
                (Some(6), false) => F::TcpDst,
                (Some(17), true) => F::UdpSrc,
                (Some(17), false) => F::UdpDst,
                (Some(132), true) => F::SctpSrc,
                (Some(132), false) => F::SctpDst,
                _ => {
                    return Err(SyntaxError::new(
                        &tp.token,
                        "needs tcp, udp or sctp (nw_proto=6, 17 or 132)",
                    ))
                }
            };
            let field = parse_field(id, &tp.text).map_err(|e| SyntaxError::new(&tp.token, e))?;
            self.push(&tp.token, field)?;
        }
        for (token, field) in &self.items {
            if let Some(missing) = self.unmet_prerequisite(field.value.field_id()) {
                return Err(SyntaxError::new(token, format!("needs {missing}")));
            }
        }
        let mut fields: Vec<OxmField> = self.items.into_iter().map(|(_, f)| f).collect();
        fields.sort_by_key(|f| f.value.field_id());
        let m = Match { fields };
        m.validate()
            .map_err(|e| SyntaxError::new("match", e.to_string()))?;
        Ok(m)
    }

    /// A description of the prerequisite of `id` that the match lacks, if any.
    fn unmet_prerequisite(&self, id: F) -> Option<String> {
        match id.prerequisite() {
            Prerequisite::None => None,
            Prerequisite::Present(needed) => {
                let present = self.items.iter().any(|(_, f)| f.value.field_id() == needed);
                (!present).then(|| describe(needed).name.to_string())
            }
            Prerequisite::OneOf(needed, values) => {
                let ok = self.exact(needed).is_some_and(|v| values.contains(&v));
                let choices: Vec<String> = values
                    .iter()
                    .map(|v| match needed {
                        F::EthType => format!("{v:#06x}"),
                        _ => v.to_string(),
                    })
                    .collect();
                (!ok).then(|| format!("{}={}", describe(needed).name, choices.join(" or ")))
            }
            Prerequisite::VlanPresent => {
                let tagged = self.items.iter().any(|(_, f)| match (f.value, f.mask) {
                    (OxmValue::VlanVid(vid), None) => vid & OFPVID_PRESENT != 0,
                    (OxmValue::VlanVid(vid), Some(OxmValue::VlanVid(mask))) => {
                        vid & mask & OFPVID_PRESENT != 0
                    }
                    _ => false,
                });
                (!tagged).then(|| "a VLAN tag (dl_vlan=N)".to_string())
            }
        }
    }
}

/// Parses a whole match written as comma-separated tokens.
pub fn parse_match(text: &str) -> Result<Match, SyntaxError> {
    let mut builder = MatchBuilder::default();
    for token in super::split_top_level(text) {
        if !builder.add_token(token)? {
            return Err(SyntaxError::new(token, "unknown match field"));
        }
    }
    builder.finish()
}

/// The match as text items: a protocol shorthand first when one applies, then each field
/// in wire-number order.
pub fn format_match(m: &Match) -> Vec<String> {
    let exact = |id: F| match m.get(id) {
        Some(OxmField { value, mask: None }) => value.as_u64(),
        _ => None,
    };
    let eth_type = exact(F::EthType);
    let ip_proto = exact(F::IpProto);
    let with_proto = SHORTHANDS
        .iter()
        .find(|(_, e, p)| Some(u64::from(*e)) == eth_type && p.map(u64::from) == ip_proto)
        .filter(|_| ip_proto.is_some());
    let shorthand = with_proto.or_else(|| {
        SHORTHANDS
            .iter()
            .find(|(_, e, p)| Some(u64::from(*e)) == eth_type && p.is_none())
    });
    let mut items = Vec::new();
    let mut skip = Vec::new();
    if let Some((name, _, proto)) = shorthand {
        items.push((*name).to_string());
        skip.push(F::EthType);
        if proto.is_some() {
            skip.push(F::IpProto);
        }
    }
    let mut fields: Vec<&OxmField> = m.fields.iter().collect();
    fields.sort_by_key(|f| f.value.field_id());
    for f in fields {
        let id = f.value.field_id();
        if skip.contains(&id) {
            continue;
        }
        let item = match (f.value, f.mask) {
            (OxmValue::VlanVid(0), None) => format!("dl_vlan={DL_VLAN_NONE:#x}"),
            (OxmValue::VlanVid(vid), None) if vid & OFPVID_PRESENT != 0 => {
                format!("dl_vlan={}", vid & 0xfff)
            }
            _ => format!("{}={}", describe(id).name, format_field(f)),
        };
        items.push(item);
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(v: OxmValue) -> OxmField {
        OxmField::exact(v)
    }

    #[test]
    fn shorthands_expand_and_print_back() {
        for (name, eth, proto) in SHORTHANDS {
            let m = parse_match(name).unwrap();
            assert_eq!(m.get(F::EthType), Some(&exact(OxmValue::EthType(*eth))));
            assert_eq!(
                m.get(F::IpProto).copied(),
                proto.map(|p| exact(OxmValue::IpProto(p)))
            );
            assert_eq!(format_match(&m), vec![name.to_string()]);
        }
    }

    #[test]
    fn items_come_out_in_wire_order_whatever_the_input_order() {
        let m = parse_match("tp_dst=80,nw_src=10.0.0.0/8,tcp,in_port=3").unwrap();
        let ids: Vec<F> = m.fields.iter().map(|f| f.value.field_id()).collect();
        assert_eq!(
            ids,
            [F::InPort, F::EthType, F::IpProto, F::Ipv4Src, F::TcpDst]
        );
        assert_eq!(
            format_match(&m),
            ["tcp", "in_port=3", "nw_src=10.0.0.0/8", "tcp_dst=80"]
        );
    }

    #[test]
    fn tp_ports_follow_the_ip_protocol() {
        for (proto, src, dst) in [
            ("tcp", F::TcpSrc, F::TcpDst),
            ("udp6", F::UdpSrc, F::UdpDst),
            ("sctp", F::SctpSrc, F::SctpDst),
        ] {
            let m = parse_match(&format!("{proto},tp_src=1,tp_dst=2")).unwrap();
            assert!(m.get(src).is_some() && m.get(dst).is_some(), "{proto}");
        }
        let e = parse_match("ip,tp_dst=80").unwrap_err();
        assert_eq!(e.token, "tp_dst=80");
    }

    #[test]
    fn dl_vlan_sets_the_present_bit() {
        let m = parse_match("dl_vlan=10,vlan_pcp=3").unwrap();
        assert_eq!(m.get(F::VlanVid), Some(&exact(OxmValue::VlanVid(0x100a))));
        assert_eq!(format_match(&m), ["dl_vlan=10", "vlan_pcp=3"]);
        let none = parse_match("dl_vlan=0xffff").unwrap();
        assert_eq!(none.get(F::VlanVid), Some(&exact(OxmValue::VlanVid(0))));
        assert_eq!(format_match(&none), ["dl_vlan=0xffff"]);
        let any = parse_match("vlan_vid=0x1000/0x1000").unwrap();
        assert_eq!(format_match(&any), ["vlan_vid=0x1000/0x1000"]);
        assert_eq!(
            parse_match("dl_vlan=4096").unwrap_err().token,
            "dl_vlan=4096"
        );
    }

    #[test]
    fn missing_prerequisites_name_the_token() {
        let cases = [
            ("tcp_dst=80", "nw_proto=6"),
            ("ip,tcp_dst=80", "nw_proto=6"),
            ("nw_src=1.2.3.4", "dl_type=0x0800"),
            ("ip_dscp=1", "dl_type=0x0800 or 0x86dd"),
            ("nw_ttl=1", "dl_type=0x0800 or 0x86dd"),
            ("arp,nw_ttl=1", "dl_type=0x0800 or 0x86dd"),
            ("vlan_pcp=1", "VLAN tag"),
            ("vlan_vid=0,vlan_pcp=1", "VLAN tag"),
            ("in_phy_port=1", "in_port"),
            ("ipv6,icmp6,nd_sll=00:00:00:00:00:01", "icmpv6_type=135"),
            ("mpls_label=5", "0x8847 or 0x8848"),
            ("pbb_isid=5", "0x88e7"),
        ];
        for (text, needed) in cases {
            let e = parse_match(text).unwrap_err();
            assert!(e.reason.contains(needed), "{text}: {e}");
            assert!(text.contains(&e.token), "{text}: {e}");
        }
    }

    #[test]
    fn conflicting_repeats_are_errors_identical_ones_are_not() {
        assert!(parse_match("tcp,nw_proto=6").is_ok());
        let e = parse_match("tcp,nw_proto=17").unwrap_err();
        assert_eq!(e.token, "nw_proto=17");
        assert!(e.reason.contains("`tcp`"));
    }

    #[test]
    fn unknown_fields_and_bad_values_name_the_token() {
        assert_eq!(parse_match("ip,bogus=1").unwrap_err().token, "bogus=1");
        assert_eq!(
            parse_match("ip,nw_src=1.2.3").unwrap_err().token,
            "nw_src=1.2.3"
        );
        assert_eq!(parse_match("frobnicate").unwrap_err().token, "frobnicate");
    }

    #[test]
    fn every_field_prints_and_parses_back() {
        let text = "in_port=1,in_phy_port=2,metadata=0x5/0xff,dl_dst=00:00:00:00:00:01,\
            dl_src=00:00:00:00:00:02/ff:ff:ff:00:00:00,dl_type=0x86dd,dl_vlan=5,vlan_pcp=1,\
            ip_dscp=46,nw_ecn=2,nw_proto=58,ipv6_src=2001:db8::/32,ipv6_dst=::1,\
            ipv6_label=0x12345,icmpv6_type=135,icmpv6_code=0,nd_target=fe80::1,\
            nd_sll=00:00:00:00:00:03,tun_id=0x99/0xff,ipv6_exthdr=0x10/0x1f0,nw_ttl=255";
        let m = parse_match(text).unwrap();
        assert_eq!(m.fields.len(), 21);
        assert_eq!(m.get(F::NxIpTtl), Some(&exact(OxmValue::NxIpTtl(255))));
        let printed = format_match(&m).join(",");
        assert_eq!(parse_match(&printed), Ok(m));
    }
}
