//! Connection targets in the `ovs-vswitchd` spelling: `ptcp:PORT[:IP]`, `punix:PATH` (passive) and
//! `tcp:IP:PORT`, `unix:PATH` (active), so operators can reuse what they type for Open vSwitch.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::str::FromStr;

/// Where the switch waits for controllers (and for `ovs-ofctl` / `hairpinctl`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenTarget {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// A controller the switch connects to, reconnecting with backoff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControllerTarget {
    Tcp(SocketAddr),
    Unix(PathBuf),
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
            let (port, ip) = match rest.split_once(':') {
                Some((port, ip)) => (port, parse_ip(ip, s)?),
                None => (rest, IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            };
            return Ok(Self::Tcp(SocketAddr::new(ip, parse_port(port, s)?)));
        }
        if let Some(path) = s.strip_prefix("punix:") {
            return Ok(Self::Unix(non_empty_path(path, s)?));
        }
        Err(TargetError(format!(
            "`{s}`: a listen target is ptcp:PORT[:IP] or punix:PATH"
        )))
    }
}

impl FromStr for ControllerTarget {
    type Err = TargetError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(rest) = s.strip_prefix("tcp:") {
            let (ip, port) = match rest.rsplit_once(':') {
                Some((ip, port)) => (ip, port),
                None => (rest, "6653"),
            };
            return Ok(Self::Tcp(SocketAddr::new(
                parse_ip(ip, s)?,
                parse_port(port, s)?,
            )));
        }
        if let Some(path) = s.strip_prefix("unix:") {
            return Ok(Self::Unix(non_empty_path(path, s)?));
        }
        Err(TargetError(format!(
            "`{s}`: a controller target is tcp:IP[:PORT] or unix:PATH"
        )))
    }
}

impl fmt::Display for ListenTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tcp(addr) => write!(f, "ptcp:{}:{}", addr.port(), addr.ip()),
            Self::Unix(path) => write!(f, "punix:{}", path.display()),
        }
    }
}

impl fmt::Display for ControllerTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tcp(addr) => write!(f, "tcp:{}:{}", addr.ip(), addr.port()),
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
    fn refuses_malformed_targets_with_the_reason() {
        let err = "ptcp:notaport".parse::<ListenTarget>().unwrap_err();
        assert!(err.to_string().contains("not a TCP port"), "{err}");
        assert!("tcp:1.2.3.4:99999".parse::<ControllerTarget>().is_err());
        assert!("ssl:1.2.3.4:6653".parse::<ControllerTarget>().is_err());
        assert!("punix:".parse::<ListenTarget>().is_err());
    }
}
