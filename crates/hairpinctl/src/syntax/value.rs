//! Scalar values: integers, MAC and IP addresses, port and group numbers, hex byte strings.

use std::net::{Ipv4Addr, Ipv6Addr};

use ofp::{
    OFPP_ALL, OFPP_ANY, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, OFPP_LOCAL, OFPP_NORMAL,
    OFPP_TABLE,
};

/// Parses a decimal or `0x` hexadecimal unsigned integer.
pub fn parse_u64(text: &str) -> Result<u64, String> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse::<u64>(),
    };
    parsed.map_err(|_| format!("`{text}` is not a number"))
}

/// Parses an integer that must fit in `T`.
pub fn parse_int<T: TryFrom<u64>>(text: &str) -> Result<T, String> {
    let v = parse_u64(text)?;
    T::try_from(v).map_err(|_| format!("{text} is out of range"))
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(text: &str) -> Result<[u8; 6], String> {
    let bad = || format!("`{text}` is not a MAC address (aa:bb:cc:dd:ee:ff)");
    let mut mac = [0u8; 6];
    let mut parts = text.split(':');
    for byte in &mut mac {
        let part = parts.next().ok_or_else(bad)?;
        if part.is_empty() || part.len() > 2 {
            return Err(bad());
        }
        *byte = u8::from_str_radix(part, 16).map_err(|_| bad())?;
    }
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok(mac)
}

pub fn format_mac(mac: &[u8]) -> String {
    let parts: Vec<String> = mac.iter().map(|b| format!("{b:02x}")).collect();
    parts.join(":")
}

pub fn parse_ipv4(text: &str) -> Result<Ipv4Addr, String> {
    text.parse()
        .map_err(|_| format!("`{text}` is not an IPv4 address"))
}

pub fn parse_ipv6(text: &str) -> Result<Ipv6Addr, String> {
    text.parse()
        .map_err(|_| format!("`{text}` is not an IPv6 address"))
}

/// The mask of `len` leading one bits over `bytes` bytes.
pub fn prefix_mask(len: u32, bytes: usize) -> Result<Vec<u8>, String> {
    let bits = bytes as u32 * 8;
    if len > bits {
        return Err(format!("prefix length /{len} is longer than {bits} bits"));
    }
    Ok((0..bytes as u32)
        .map(|i| {
            let ones = len.saturating_sub(i * 8).min(8);
            // The high `ones` bits of the byte.
            (0xff00u16 >> ones) as u8
        })
        .collect())
}

/// The prefix length of `mask` if it is a run of leading ones.
pub fn mask_prefix_len(mask: &[u8]) -> Option<u32> {
    let ones: u32 = mask.iter().map(|b| b.count_ones()).sum();
    let expected = prefix_mask(ones, mask.len()).ok()?;
    (expected == mask).then_some(ones)
}

/// Reserved port names, as `ovs-ofctl` spells them.
const PORT_NAMES: &[(&str, u32)] = &[
    ("IN_PORT", OFPP_IN_PORT),
    ("TABLE", OFPP_TABLE),
    ("NORMAL", OFPP_NORMAL),
    ("FLOOD", OFPP_FLOOD),
    ("ALL", OFPP_ALL),
    ("CONTROLLER", OFPP_CONTROLLER),
    ("LOCAL", OFPP_LOCAL),
    ("ANY", OFPP_ANY),
];

/// Parses a port number or reserved port name (case-insensitive).
pub fn parse_port(text: &str) -> Result<u32, String> {
    if let Some((_, port)) = PORT_NAMES
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(text))
    {
        return Ok(*port);
    }
    if text.eq_ignore_ascii_case("NONE") {
        return Ok(OFPP_ANY);
    }
    parse_int(text).map_err(|_| format!("`{text}` is not a port number or name"))
}

/// A port number, or its reserved name.
pub fn format_port(port: u32) -> String {
    match PORT_NAMES.iter().find(|(_, p)| *p == port) {
        Some((name, _)) => (*name).to_string(),
        None => port.to_string(),
    }
}

/// Big-endian bytes of `v`, keeping the low `len` bytes.
pub fn int_to_bytes(v: u64, len: usize) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    bytes
        .get(8usize.saturating_sub(len)..)
        .unwrap_or(&bytes)
        .to_vec()
}

/// The big-endian integer in `bytes` (at most 8 of them).
pub fn bytes_to_int(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_in_decimal_and_hex() {
        assert_eq!(parse_u64("42"), Ok(42));
        assert_eq!(parse_u64("0x2a"), Ok(42));
        assert_eq!(parse_u64("0X2A"), Ok(42));
        assert!(parse_u64("4x").is_err());
        assert!(parse_u64("").is_err());
        assert_eq!(parse_int::<u8>("255"), Ok(255));
        assert!(parse_int::<u8>("256").unwrap_err().contains("out of range"));
    }

    #[test]
    fn macs() {
        assert_eq!(
            parse_mac("00:1a:2B:3c:4d:ff"),
            Ok([0, 0x1a, 0x2b, 0x3c, 0x4d, 0xff])
        );
        assert_eq!(
            format_mac(&[0, 0x1a, 0x2b, 0x3c, 0x4d, 0xff]),
            "00:1a:2b:3c:4d:ff"
        );
        for bad in [
            "00:11:22:33:44",
            "00:11:22:33:44:55:66",
            "001:1:2:3:4:5",
            "zz:0:0:0:0:0",
        ] {
            assert!(parse_mac(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn prefix_masks() {
        assert_eq!(prefix_mask(0, 4), Ok(vec![0, 0, 0, 0]));
        assert_eq!(prefix_mask(20, 4), Ok(vec![255, 255, 0xf0, 0]));
        assert_eq!(prefix_mask(32, 4), Ok(vec![255; 4]));
        assert!(prefix_mask(33, 4).is_err());
        assert_eq!(mask_prefix_len(&[255, 255, 0xf0, 0]), Some(20));
        assert_eq!(mask_prefix_len(&[255, 0, 255, 0]), None);
        assert_eq!(mask_prefix_len(&[0; 16]), Some(0));
    }

    #[test]
    fn ports_by_number_and_name() {
        assert_eq!(parse_port("7"), Ok(7));
        assert_eq!(parse_port("local"), Ok(OFPP_LOCAL));
        assert_eq!(parse_port("CONTROLLER"), Ok(OFPP_CONTROLLER));
        assert_eq!(parse_port("none"), Ok(OFPP_ANY));
        assert!(parse_port("eth0").is_err());
        assert_eq!(format_port(OFPP_IN_PORT), "IN_PORT");
        assert_eq!(format_port(3), "3");
        for (name, port) in PORT_NAMES {
            assert_eq!(parse_port(&format_port(*port)), Ok(*port), "{name}");
        }
    }

    #[test]
    fn int_bytes() {
        assert_eq!(int_to_bytes(0x123456, 3), vec![0x12, 0x34, 0x56]);
        assert_eq!(bytes_to_int(&[0x12, 0x34, 0x56]), 0x123456);
    }
}
