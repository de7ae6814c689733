//! What each OpenFlow port is, as the settings say: a Linux interface of its own, or a legacy
//! switch's access port reached as one VLAN of a trunk (HARMLESS). Parsed from the flags
//! (`--port N=IFNAME[:xdp]`, `--port N=TRUNK:VID[:NAME]`, `--trunk NAME=IFNAME[:xdp]`) and
//! from the TOML file's `[ports]` and `[trunks]` tables.

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

/// Longest OpenFlow port name (`OFP_MAX_PORT_NAME_LEN` less its terminating NUL).
const MAX_PORT_NAME: usize = ofp::OFP_MAX_PORT_NAME_LEN - 1;
/// Longest trunk name.
const MAX_TRUNK_NAME: usize = 64;

/// How an interface's packets reach the daemon.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PortIo {
    /// AF_PACKET rings (see `rx_ring`).
    #[default]
    AfPacket,
    /// AF_XDP in generic mode, falling back to AF_PACKET when it cannot be set up.
    Xdp,
}

/// A Linux interface the daemon opens: `IFNAME`, `IFNAME:afpacket` or `IFNAME:xdp`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    pub ifname: String,
    pub io: PortIo,
}

impl Interface {
    pub fn parse(s: &str) -> Result<Self, String> {
        let (ifname, io) = match s.rsplit_once(':') {
            Some((ifname, "xdp")) => (ifname, PortIo::Xdp),
            Some((ifname, "afpacket")) => (ifname, PortIo::AfPacket),
            Some((_, other)) => {
                return Err(format!(
                    "`{s}`: unknown port I/O `{other}` (expected afpacket or xdp)"
                ))
            }
            None => (s, PortIo::AfPacket),
        };
        check_ifname(ifname)?;
        Ok(Self {
            ifname: ifname.to_string(),
            io,
        })
    }
}

/// Which VLAN of its trunk a legacy port is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TrunkVlan {
    /// Frames tagged with this VLAN id (1..=4094).
    Id(u16),
    /// Untagged and priority-tagged frames (the trunk's native VLAN), sent untagged.
    Native,
}

impl std::fmt::Display for TrunkVlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrunkVlan::Id(vid) => write!(f, "{vid}"),
            TrunkVlan::Native => f.write_str("native"),
        }
    }
}

impl TrunkVlan {
    fn parse(s: &str) -> Result<Self, String> {
        if s == "native" {
            return Ok(TrunkVlan::Native);
        }
        match s.parse::<u16>() {
            Ok(vid) => Ok(TrunkVlan::Id(vid)),
            Err(_) => Err(format!(
                "`{s}` is not a VLAN id (1..={}) or `native`",
                ports::trunk::MAX_VID
            )),
        }
    }
}

/// A legacy switch's access port, reached as one VLAN of a trunk: the controller sees it
/// under its legacy name, with its speed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LegacyPort {
    /// The trunk's name (a key of `[trunks]` or a `--trunk`).
    pub trunk: String,
    pub vlan: TrunkVlan,
    /// The legacy port's name, shown to controllers (else `TRUNK.VID`).
    pub name: Option<String>,
    /// The legacy port's speed, shown to controllers (else unknown).
    pub speed_mbps: Option<u32>,
}

/// What an OpenFlow port is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PortBinding {
    /// A Linux interface of its own.
    Interface(Interface),
    /// One VLAN of a trunk.
    Legacy(LegacyPort),
}

impl PortBinding {
    /// The flag's form after `N=`: `IFNAME[:xdp|:afpacket]`, `TRUNK:VID[:NAME]` or
    /// `TRUNK:native[:NAME]`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let Some((head, rest)) = s.split_once(':') else {
            return Interface::parse(s).map(PortBinding::Interface);
        };
        if matches!(rest, "xdp" | "afpacket") {
            return Interface::parse(s).map(PortBinding::Interface);
        }
        let (vlan, name) = match rest.split_once(':') {
            Some((vlan, name)) => (vlan, Some(name)),
            None => (rest, None),
        };
        if vlan != "native" && !vlan.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "`{s}`: `{vlan}` is neither a port I/O (afpacket, xdp) nor a VLAN id \
                 (a port is N=IFNAME[:xdp] or N=TRUNK:VID[:NAME])"
            ));
        }
        let port = LegacyPort {
            trunk: head.to_string(),
            vlan: TrunkVlan::parse(vlan)?,
            name: name.map(str::to_string),
            speed_mbps: None,
        };
        check_legacy(&port).map_err(|(_, m)| format!("`{s}`: {m}"))?;
        Ok(PortBinding::Legacy(port))
    }
}

/// Checks a legacy port on its own (its trunk is checked against the trunks later); the
/// error names the sub-field (`vlan`, `name`, `speed_mbps`, or none for `trunk`).
pub fn check_legacy(p: &LegacyPort) -> Result<(), (&'static str, String)> {
    check_trunk_name(&p.trunk).map_err(|m| ("trunk", m))?;
    if let TrunkVlan::Id(vid) = p.vlan {
        if !(1..=ports::trunk::MAX_VID).contains(&vid) {
            return Err((
                "vlan",
                format!(
                    "VLAN id {vid} is not in 1..={} (0 is the native VLAN: write `native`)",
                    ports::trunk::MAX_VID
                ),
            ));
        }
    }
    if let Some(name) = &p.name {
        if name.is_empty() || name.len() > MAX_PORT_NAME || name.chars().any(char::is_control) {
            return Err((
                "name",
                format!(
                    "`{name}` is not a port name: 1 to {MAX_PORT_NAME} bytes without control \
                     characters (OpenFlow's limit; use the legacy switch's short form, e.g. Gi1/0/1)"
                ),
            ));
        }
    }
    if p.speed_mbps == Some(0) {
        return Err(("speed_mbps", "a speed is at least 1 Mbit/s".into()));
    }
    Ok(())
}

/// Trunk names are 1 to 64 bytes without `:`, `=`, `/` or whitespace (they appear in flags).
pub fn check_trunk_name(name: &str) -> Result<(), String> {
    let bad = |c: char| c == ':' || c == '=' || c == '/' || c.is_whitespace() || c.is_control();
    if name.is_empty() || name.len() > MAX_TRUNK_NAME || name.contains(bad) {
        return Err(format!(
            "`{name}` is not a trunk name (1 to {MAX_TRUNK_NAME} bytes without `:`, `=`, `/` or \
             spaces)"
        ));
    }
    Ok(())
}

/// Linux interface names are 1 to 15 bytes without '/' or whitespace.
pub fn check_ifname(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 15 || name.contains(['/', ' ', '\t', '\n']) {
        return Err(format!("`{name}` is not a Linux interface name"));
    }
    Ok(())
}

/// `--trunk NAME=IFNAME[:xdp]`.
pub fn parse_trunk_flag(s: &str) -> Result<(String, Interface), String> {
    let (name, ifname) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: a trunk is NAME=IFNAME[:xdp]"))?;
    check_trunk_name(name)?;
    Ok((name.to_string(), Interface::parse(ifname)?))
}

/// A `[ports]` value in the file: `"IFNAME[:xdp]"` or a table
/// `{ trunk = "t1", vlan = 105, name = "Gi0/5", speed_mbps = 1000 }`.
#[derive(Debug)]
pub enum PortValue {
    Interface(String),
    Legacy(LegacyTable),
}

/// The table form of a legacy port in the file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LegacyTable {
    pub trunk: String,
    pub vlan: VlanValue,
    pub name: Option<String>,
    pub speed_mbps: Option<u32>,
}

impl LegacyTable {
    pub fn into_port(self) -> LegacyPort {
        LegacyPort {
            trunk: self.trunk,
            vlan: self.vlan.0,
            name: self.name,
            speed_mbps: self.speed_mbps,
        }
    }
}

/// `vlan = 105` or `vlan = "native"`.
#[derive(Debug)]
pub struct VlanValue(pub TrunkVlan);

impl<'de> Deserialize<'de> for VlanValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = VlanValue;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "a VLAN id (1..={}) or \"native\"", ports::trunk::MAX_VID)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<VlanValue, E> {
                u16::try_from(v)
                    .map(|vid| VlanValue(TrunkVlan::Id(vid)))
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<VlanValue, E> {
                u16::try_from(v)
                    .map(|vid| VlanValue(TrunkVlan::Id(vid)))
                    .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<VlanValue, E> {
                match v {
                    "native" => Ok(VlanValue(TrunkVlan::Native)),
                    _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for PortValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PortValue;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "an interface (\"IFNAME[:xdp]\") or a legacy port \
                     ({ trunk = \"NAME\", vlan = VID, name = \"...\", speed_mbps = N })",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PortValue, E> {
                Ok(PortValue::Interface(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<PortValue, A::Error> {
                LegacyTable::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(PortValue::Legacy)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn legacy(trunk: &str, vlan: TrunkVlan, name: Option<&str>) -> PortBinding {
        PortBinding::Legacy(LegacyPort {
            trunk: trunk.into(),
            vlan,
            name: name.map(Into::into),
            speed_mbps: None,
        })
    }

    #[test]
    fn flags_tell_interfaces_from_legacy_ports() {
        let iface = |name: &str, io| {
            PortBinding::Interface(Interface {
                ifname: name.into(),
                io,
            })
        };
        assert_eq!(
            PortBinding::parse("eth0"),
            Ok(iface("eth0", PortIo::AfPacket))
        );
        assert_eq!(
            PortBinding::parse("eth0:xdp"),
            Ok(iface("eth0", PortIo::Xdp))
        );
        assert_eq!(
            PortBinding::parse("t1:105"),
            Ok(legacy("t1", TrunkVlan::Id(105), None))
        );
        assert_eq!(
            PortBinding::parse("t1:105:Gi1/0/5"),
            Ok(legacy("t1", TrunkVlan::Id(105), Some("Gi1/0/5")))
        );
        assert_eq!(
            PortBinding::parse("t1:native:uplink:1"),
            Ok(legacy("t1", TrunkVlan::Native, Some("uplink:1")))
        );
        for bad in [
            "eth0:dpdk",
            "t1:0",
            "t1:4095",
            "t1:99999",
            "t1:105:",
            "t1:105:GigabitEthernet1/0/5",
            ":105",
            "t/1:105",
        ] {
            assert!(PortBinding::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_trunk_flag("t1=eth1:xdp"),
            Ok((
                "t1".into(),
                Interface {
                    ifname: "eth1".into(),
                    io: PortIo::Xdp
                }
            ))
        );
        assert!(parse_trunk_flag("t:1=eth1").is_err());
        assert!(parse_trunk_flag("t1").is_err());
    }
}
