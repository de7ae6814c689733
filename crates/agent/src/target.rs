//! Connection targets in the `ovs-vswitchd` spelling: `ptcp:PORT[:IP]`, `pssl:PORT[:IP]`,
//! `punix:PATH` (passive) and `tcp:IP:PORT`, `ssl:IP:PORT`, `unix:PATH` (active), so operators
//! can reuse what they type for Open vSwitch. The `ssl` kinds are TLS with mutual
//! authentication (see [`crate::tls`]).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::str::FromStr;

/// Where the switch waits for controllers (and for `ovs-ofctl` / `hairpinctl`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenTarget {
    Tcp(SocketAddr),
    Ssl(SocketAddr),
    Unix(PathBuf),
}

/// A controller the switch connects to, reconnecting with backoff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControllerTarget {
    Tcp(SocketAddr),
    Ssl(SocketAddr),
    Unix(PathBuf),
}

impl ListenTarget {
    /// Whether the target needs the TLS key, certificate and CA certificate.
    pub fn is_tls(&self) -> bool {
        matches!(self, Self::Ssl(_))
    }
}

impl ControllerTarget {
    /// Whether the target needs the TLS key, certificate and CA certificate.
    pub fn is_tls(&self) -> bool {
        matches!(self, Self::Ssl(_))
    }
}

/// Why a target string was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetError(String);

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TargetError {}

fn parse_port(s: &str, whole: &str) -> Result<u16, TargetError> {
    s.parse::<u16>()
        .map_err(|_| TargetError(format!("`{whole}`: `{s}` is not a TCP port number")))
}

fn parse_ip(s: &str, whole: &str) -> Result<IpAddr, TargetError> {
    let s = s.trim_start_matches('[').trim_end_matches(']');
    s.parse::<IpAddr>()
        .map_err(|_| TargetError(format!("`{whole}`: `{s}` is not an IP address")))
}

/// `PORT[:IP]` of a passive target; the IP defaults to every IPv4 address.
fn passive_addr(rest: &str, whole: &str) -> Result<SocketAddr, TargetError> {
    let (port, ip) = match rest.split_once(':') {
        Some((port, ip)) => (port, parse_ip(ip, whole)?),
        None => (rest, IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
    };
    Ok(SocketAddr::new(ip, parse_port(port, whole)?))
}

/// `IP[:PORT]` of an active target; the port defaults to OpenFlow's 6653.
fn active_addr(rest: &str, whole: &str) -> Result<SocketAddr, TargetError> {
    let (ip, port) = match rest.rsplit_once(':') {
        Some((ip, port)) => (ip, port),
        None => (rest, "6653"),
    };
    Ok(SocketAddr::new(
        parse_ip(ip, whole)?,
        parse_port(port, whole)?,
    ))
}

fn non_empty_path(s: &str, whole: &str) -> Result<PathBuf, TargetError> {
    if s.is_empty() {
        return Err(TargetError(format!("`{whole}`: the socket path is empty")));
    }
    Ok(PathBuf::from(s))
}

impl FromStr for ListenTarget {
    type Err = TargetError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(rest) = s.strip_prefix("ptcp:") {
            return Ok(Self::Tcp(passive_addr(rest, s)?));
        }
        if let Some(rest) = s.strip_prefix("pssl:") {
            return Ok(Self::Ssl(passive_addr(rest, s)?));
        }
        if let Some(path) = s.strip_prefix("punix:") {
            return Ok(Self::Unix(non_empty_path(path, s)?));
        }
        Err(TargetError(format!(
            "`{s}`: a listen target is ptcp:PORT[:IP], pssl:PORT[:IP] or punix:PATH"
        )))
    }
}

impl FromStr for ControllerTarget {
    type Err = TargetError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(rest) = s.strip_prefix("tcp:") {
            return Ok(Self::Tcp(active_addr(rest, s)?));
        }
        if let Some(rest) = s.strip_prefix("ssl:") {
            return Ok(Self::Ssl(active_addr(rest, s)?));
        }
        if let Some(path) = s.strip_prefix("unix:") {
            return Ok(Self::Unix(non_empty_path(path, s)?));
        }
        Err(TargetError(format!(
            "`{s}`: a controller target is tcp:IP[:PORT], ssl:IP[:PORT] or unix:PATH"
        )))
    }
}

impl fmt::Display for ListenTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tcp(addr) => write!(f, "ptcp:{}:{}", addr.port(), addr.ip()),
            Self::Ssl(addr) => write!(f, "pssl:{}:{}", addr.port(), addr.ip()),
            Self::Unix(path) => write!(f, "punix:{}", path.display()),
        }
    }
}

impl fmt::Display for ControllerTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tcp(addr) => write!(f, "tcp:{}:{}", addr.ip(), addr.port()),
            Self::Ssl(addr) => write!(f, "ssl:{}:{}", addr.ip(), addr.port()),
            Self::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ovs_style_targets() {
        assert_eq!(
            "ptcp:6654".parse::<ListenTarget>().unwrap(),
            ListenTarget::Tcp("0.0.0.0:6654".parse().unwrap())
        );
        assert_eq!(
            "ptcp:6654:127.0.0.1".parse::<ListenTarget>().unwrap(),
            ListenTarget::Tcp("127.0.0.1:6654".parse().unwrap())
        );
        assert_eq!(
            "punix:/run/hp.sock".parse::<ListenTarget>().unwrap(),
            ListenTarget::Unix("/run/hp.sock".into())
        );
        assert_eq!(
            "tcp:10.0.0.1:6655".parse::<ControllerTarget>().unwrap(),
            ControllerTarget::Tcp("10.0.0.1:6655".parse().unwrap())
        );
        assert_eq!(
            "tcp:[::1]:6655".parse::<ControllerTarget>().unwrap(),
            ControllerTarget::Tcp("[::1]:6655".parse().unwrap())
        );
    }

    #[test]
    fn parses_tls_targets_as_open_vswitch_writes_them() {
        assert_eq!(
            "pssl:6654".parse::<ListenTarget>().unwrap(),
            ListenTarget::Ssl("0.0.0.0:6654".parse().unwrap())
        );
        assert_eq!(
            "pssl:6654:127.0.0.1".parse::<ListenTarget>().unwrap(),
            ListenTarget::Ssl("127.0.0.1:6654".parse().unwrap())
        );
        assert_eq!(
            "ssl:10.0.0.1:6655".parse::<ControllerTarget>().unwrap(),
            ControllerTarget::Ssl("10.0.0.1:6655".parse().unwrap())
        );
        assert_eq!(
            "ssl:10.0.0.1".parse::<ControllerTarget>().unwrap(),
            ControllerTarget::Ssl("10.0.0.1:6653".parse().unwrap())
        );
        for text in ["pssl:6654:127.0.0.1", "ssl:10.0.0.1:6655"] {
            let shown = match text.parse::<ListenTarget>() {
                Ok(t) => t.to_string(),
                Err(_) => text.parse::<ControllerTarget>().unwrap().to_string(),
            };
            assert_eq!(shown, text);
        }
        assert!("pssl:6654".parse::<ListenTarget>().unwrap().is_tls());
        assert!(!"tcp:10.0.0.1".parse::<ControllerTarget>().unwrap().is_tls());
    }

    #[test]
    fn refuses_malformed_targets_with_the_reason() {
        let err = "ptcp:notaport".parse::<ListenTarget>().unwrap_err();
        assert!(err.to_string().contains("not a TCP port"), "{err}");
        assert!("tcp:1.2.3.4:99999".parse::<ControllerTarget>().is_err());
        assert!("ssl:1.2.3.4:port".parse::<ControllerTarget>().is_err());
        assert!("tls:1.2.3.4:6653".parse::<ControllerTarget>().is_err());
        assert!("punix:".parse::<ListenTarget>().is_err());
    }
}
