//! OXM field names (OVS spellings) and the text form of their values and masks.

use std::net::{Ipv4Addr, Ipv6Addr};

use ofp::{OxmField, OxmFieldId as F, OxmValue};

use super::value::{
    bytes_to_int, format_mac, format_port, int_to_bytes, mask_prefix_len, parse_ipv4, parse_ipv6,
    parse_mac, parse_port, parse_u64, prefix_mask,
};

/// How a field's value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Port,
    Decimal,
    Hex,
    Mac,
    Ipv4,
    Ipv6,
}

/// The printed name of a field, the other names it is accepted under, and its value format.
#[derive(Debug, Clone, Copy)]
pub struct FieldName {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub format: Format,
}

const fn named(name: &'static str, aliases: &'static [&'static str], format: Format) -> FieldName {
    FieldName {
        name,
        aliases,
        format,
    }
}

/// Names and format of every OXM field we know (the basic ones and NXM_NX_IP_TTL).
pub fn describe(id: F) -> FieldName {
    use Format::*;
    match id {
        F::InPort => named("in_port", &[], Port),
        F::InPhyPort => named("in_phy_port", &[], Port),
        F::Metadata => named("metadata", &[], Hex),
        F::EthDst => named("dl_dst", &["eth_dst"], Mac),
        F::EthSrc => named("dl_src", &["eth_src"], Mac),
        F::EthType => named("dl_type", &["eth_type"], Hex),
        F::VlanVid => named("vlan_vid", &[], Hex),
        F::VlanPcp => named("vlan_pcp", &["dl_vlan_pcp"], Decimal),
        F::IpDscp => named("ip_dscp", &[], Decimal),
        F::IpEcn => named("nw_ecn", &["ip_ecn"], Decimal),
        F::IpProto => named("nw_proto", &["ip_proto"], Decimal),
        F::Ipv4Src => named("nw_src", &["ip_src", "ipv4_src"], Ipv4),
        F::Ipv4Dst => named("nw_dst", &["ip_dst", "ipv4_dst"], Ipv4),
        F::TcpSrc => named("tcp_src", &[], Decimal),
        F::TcpDst => named("tcp_dst", &[], Decimal),
        F::UdpSrc => named("udp_src", &[], Decimal),
        F::UdpDst => named("udp_dst", &[], Decimal),
        F::SctpSrc => named("sctp_src", &[], Decimal),
        F::SctpDst => named("sctp_dst", &[], Decimal),
        F::Icmpv4Type => named("icmp_type", &["icmpv4_type"], Decimal),
        F::Icmpv4Code => named("icmp_code", &["icmpv4_code"], Decimal),
        F::ArpOp => named("arp_op", &[], Decimal),
        F::ArpSpa => named("arp_spa", &[], Ipv4),
        F::ArpTpa => named("arp_tpa", &[], Ipv4),
        F::ArpSha => named("arp_sha", &[], Mac),
        F::ArpTha => named("arp_tha", &[], Mac),
        F::Ipv6Src => named("ipv6_src", &[], Ipv6),
        F::Ipv6Dst => named("ipv6_dst", &[], Ipv6),
        F::Ipv6Flabel => named("ipv6_label", &["ipv6_flabel"], Hex),
        F::Icmpv6Type => named("icmpv6_type", &[], Decimal),
        F::Icmpv6Code => named("icmpv6_code", &[], Decimal),
        F::Ipv6NdTarget => named("nd_target", &["ipv6_nd_target"], Ipv6),
        F::Ipv6NdSll => named("nd_sll", &["ipv6_nd_sll"], Mac),
        F::Ipv6NdTll => named("nd_tll", &["ipv6_nd_tll"], Mac),
        F::MplsLabel => named("mpls_label", &[], Decimal),
        F::MplsTc => named("mpls_tc", &[], Decimal),
        F::MplsBos => named("mpls_bos", &[], Decimal),
        F::PbbIsid => named("pbb_isid", &[], Decimal),
        F::TunnelId => named("tun_id", &["tunnel_id"], Hex),
        F::Ipv6Exthdr => named("ipv6_exthdr", &[], Hex),
        F::NxIpTtl => named("nw_ttl", &[], Decimal),
    }
}

/// The field a name (or alias) denotes.
pub fn field_by_name(name: &str) -> Option<F> {
    F::ALL.iter().copied().find(|&id| {
        let n = describe(id);
        n.name == name || n.aliases.contains(&name)
    })
}

/// The all-significant-bits mask of `id` as wire bytes: a mask equal to it is an exact match.
fn full_mask(id: F) -> Vec<u8> {
    let bits = id.bits();
    let ones = if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    };
    let bytes = ones.to_be_bytes();
    bytes
        .get(16usize.saturating_sub(id.value_len())..)
        .unwrap_or(&bytes)
        .to_vec()
}

/// Wire bytes of a value (or mask) written in `format` for field `id`.
fn parse_bytes(id: F, format: Format, text: &str) -> Result<Vec<u8>, String> {
    let len = id.value_len();
    match format {
        Format::Port => Ok(int_to_bytes(u64::from(parse_port(text)?), len)),
        Format::Decimal | Format::Hex => {
            let v = parse_u64(text)?;
            if id.bits() < 64 && v >> id.bits() != 0 {
                return Err(format!(
                    "{text} does not fit the {} bits of {}",
                    id.bits(),
                    describe(id).name
                ));
            }
            Ok(int_to_bytes(v, len))
        }
        Format::Mac => parse_mac(text).map(|m| m.to_vec()),
        Format::Ipv4 => parse_ipv4(text).map(|a| a.octets().to_vec()),
        Format::Ipv6 => parse_ipv6(text).map(|a| a.octets().to_vec()),
    }
}

fn to_value(id: F, bytes: &[u8]) -> Result<OxmValue, String> {
    OxmValue::from_bytes(id, bytes).ok_or_else(|| format!("bad value for {}", describe(id).name))
}

/// Parses an unmasked value of field `id` (as in `set_field`).
pub fn parse_value(id: F, text: &str) -> Result<OxmValue, String> {
    to_value(id, &parse_bytes(id, describe(id).format, text)?)
}

/// Parses `value[/mask]` for field `id`. IP masks may be prefix lengths. The value is
/// reduced to the mask (as OVS does); a mask covering every bit becomes an exact match.
pub fn parse_field(id: F, text: &str) -> Result<OxmField, String> {
    let format = describe(id).format;
    let Some((value_text, mask_text)) = text.split_once('/') else {
        return Ok(OxmField::exact(parse_value(id, text)?));
    };
    if !id.maskable() {
        return Err(format!("{} cannot be masked", describe(id).name));
    }
    let mut value = parse_bytes(id, format, value_text)?;
    let is_prefix_len = !mask_text.is_empty() && mask_text.bytes().all(|b| b.is_ascii_digit());
    let mask = match format {
        Format::Ipv4 | Format::Ipv6 if is_prefix_len => {
            let len = mask_text
                .parse::<u32>()
                .map_err(|_| format!("bad prefix length /{mask_text}"))?;
            prefix_mask(len, id.value_len())?
        }
        _ => parse_bytes(id, format, mask_text)?,
    };
    value.iter_mut().zip(&mask).for_each(|(v, m)| *v &= m);
    if mask == full_mask(id) {
        return Ok(OxmField::exact(to_value(id, &value)?));
    }
    Ok(OxmField::masked(
        to_value(id, &value)?,
        to_value(id, &mask)?,
    ))
}

fn format_bytes(id: F, format: Format, bytes: &[u8]) -> String {
    match format {
        Format::Port => format_port(bytes_to_int(bytes) as u32),
        Format::Decimal => bytes_to_int(bytes).to_string(),
        Format::Hex if id == F::EthType => format!("{:#06x}", bytes_to_int(bytes)),
        Format::Hex => format!("{:#x}", bytes_to_int(bytes)),
        Format::Mac => format_mac(bytes),
        Format::Ipv4 => match <[u8; 4]>::try_from(bytes) {
            Ok(octets) => Ipv4Addr::from(octets).to_string(),
            Err(_) => format_mac(bytes),
        },
        Format::Ipv6 => match <[u8; 16]>::try_from(bytes) {
            Ok(octets) => Ipv6Addr::from(octets).to_string(),
            Err(_) => format_mac(bytes),
        },
    }
}

/// The text of an unmasked value.
pub fn format_value(value: &OxmValue) -> String {
    let id = value.field_id();
    format_bytes(id, describe(id).format, &value.to_bytes())
}

/// The text of `value[/mask]`. Masked integers are written in hex, IP masks as prefix
/// lengths when they are one.
pub fn format_field(field: &OxmField) -> String {
    let Some(mask) = &field.mask else {
        return format_value(&field.value);
    };
    let id = field.value.field_id();
    let format = match describe(id).format {
        Format::Decimal | Format::Port => Format::Hex,
        other => other,
    };
    let mask_bytes = mask.to_bytes();
    let mask_text = match (format, mask_prefix_len(&mask_bytes)) {
        (Format::Ipv4 | Format::Ipv6, Some(len)) => len.to_string(),
        _ => format_bytes(id, format, &mask_bytes),
    };
    format!(
        "{}/{}",
        format_bytes(id, format, &field.value.to_bytes()),
        mask_text
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_has_a_unique_name() {
        let mut seen = std::collections::HashSet::new();
        for &id in F::ALL {
            let n = describe(id);
            for name in std::iter::once(n.name).chain(n.aliases.iter().copied()) {
                assert!(seen.insert(name), "{name} used twice");
                assert_eq!(field_by_name(name), Some(id));
            }
        }
        assert_eq!(field_by_name("no_such_field"), None);
    }

    #[test]
    fn exact_values_of_every_format() {
        let cases: &[(F, &str, OxmValue)] = &[
            (F::InPort, "LOCAL", OxmValue::InPort(ofp::OFPP_LOCAL)),
            (F::InPort, "3", OxmValue::InPort(3)),
            (F::EthType, "0x0806", OxmValue::EthType(0x806)),
            (F::IpProto, "17", OxmValue::IpProto(17)),
            (
                F::EthSrc,
                "00:00:00:00:00:0a",
                OxmValue::EthSrc([0, 0, 0, 0, 0, 10]),
            ),
            (F::Ipv4Src, "10.1.2.3", OxmValue::Ipv4Src(0x0a01_0203)),
            (F::Metadata, "0xfeed", OxmValue::Metadata(0xfeed)),
            (F::PbbIsid, "16777215", OxmValue::PbbIsid(0xff_ffff)),
        ];
        for (id, text, value) in cases {
            assert_eq!(parse_value(*id, text), Ok(*value), "{text}");
        }
        let v6 = parse_value(F::Ipv6Dst, "2001:db8::1").unwrap();
        assert_eq!(format_value(&v6), "2001:db8::1");
        assert_eq!(format_value(&OxmValue::EthType(0x800)), "0x0800");
        assert_eq!(
            format_value(&OxmValue::InPort(ofp::OFPP_CONTROLLER)),
            "CONTROLLER"
        );
    }

    #[test]
    fn values_wider_than_the_field_are_rejected() {
        assert!(parse_value(F::VlanPcp, "8").unwrap_err().contains("3 bits"));
        assert!(parse_value(F::MplsLabel, "0x100000").is_err());
        assert!(parse_value(F::PbbIsid, "0x1000000").is_err());
        assert!(parse_value(F::IpDscp, "64").is_err());
        assert!(parse_value(F::MplsBos, "1").is_ok());
        assert!(parse_value(F::MplsBos, "2").is_err());
    }

    #[test]
    fn masks_prefixes_and_normalisation() {
        let f = parse_field(F::Ipv4Src, "10.0.0.77/24").unwrap();
        assert_eq!(
            f,
            OxmField::masked(
                OxmValue::Ipv4Src(0x0a00_0000),
                OxmValue::Ipv4Src(0xffff_ff00)
            )
        );
        assert_eq!(format_field(&f), "10.0.0.0/24");
        let f = parse_field(F::Ipv4Dst, "10.0.0.1/255.0.255.0").unwrap();
        assert_eq!(format_field(&f), "10.0.0.0/255.0.255.0");
        let f = parse_field(F::Ipv6Src, "2001:db8::1/64").unwrap();
        assert_eq!(format_field(&f), "2001:db8::/64");
        let f = parse_field(F::EthDst, "01:00:00:00:00:00/01:00:00:00:00:00").unwrap();
        assert_eq!(format_field(&f), "01:00:00:00:00:00/01:00:00:00:00:00");
        let f = parse_field(F::Metadata, "0x12/0xf0").unwrap();
        assert_eq!(format_field(&f), "0x10/0xf0");
        let f = parse_field(F::PbbIsid, "0x123/0xff").unwrap();
        assert_eq!(format_field(&f), "0x23/0xff");
    }

    #[test]
    fn transport_ports_take_masks_as_in_open_vswitch() {
        let f = parse_field(F::TcpDst, "0x400/0xfc00").unwrap();
        assert_eq!(
            f,
            OxmField::masked(OxmValue::TcpDst(0x400), OxmValue::TcpDst(0xfc00))
        );
        assert_eq!(format_field(&f), "0x400/0xfc00");
        let f = parse_field(F::UdpSrc, "1024/0xff00").unwrap();
        assert_eq!(format_field(&f), "0x400/0xff00");
        let f = parse_field(F::SctpDst, "0x8001/0x8000").unwrap();
        assert_eq!(format_field(&f), "0x8000/0x8000");
    }

    #[test]
    fn full_masks_become_exact_matches() {
        assert_eq!(
            parse_field(F::Ipv4Src, "1.2.3.4/32"),
            Ok(OxmField::exact(OxmValue::Ipv4Src(0x0102_0304)))
        );
        assert_eq!(
            parse_field(F::VlanVid, "0x1005/0x1fff"),
            Ok(OxmField::exact(OxmValue::VlanVid(0x1005)))
        );
        assert_eq!(
            parse_field(F::Ipv6Flabel, "5/0xfffff"),
            Ok(OxmField::exact(OxmValue::Ipv6Flabel(5)))
        );
    }

    #[test]
    fn bad_masks_are_rejected() {
        assert!(parse_field(F::InPort, "1/1")
            .unwrap_err()
            .contains("cannot be masked"));
        assert!(parse_field(F::Ipv4Src, "1.2.3.4/33").is_err());
        assert!(parse_field(F::Ipv4Src, "1.2.3.4/").is_err());
        assert!(parse_field(F::EthSrc, "00:00:00:00:00:01/ff").is_err());
    }
}
