//! What hairpind tells a controllet, through its environment. The host sets these variables
//! (see `controllet-host`); the SDKs read them, so a controllet needs no flags to find the
//! switch and the bus.

use std::fmt;
use std::path::PathBuf;

/// The controllet's name (`[a-z][a-z0-9_-]*`).
pub const NAME: &str = "HAIRPIN_CONTROLLET";
/// The switch's datapath id, 16 hex digits.
pub const DATAPATH_ID: &str = "HAIRPIN_DATAPATH_ID";
/// The OpenFlow channel: `unix:PATH` or `tcp:IP:PORT`.
pub const OPENFLOW: &str = "HAIRPIN_OPENFLOW";
/// The bus: `nats://HOST:PORT`; unset when the controllet has no bus.
pub const BUS_URL: &str = "HAIRPIN_BUS_URL";
/// The controllet's bus user and password (unset on a bus without authentication).
pub const BUS_USER: &str = "HAIRPIN_BUS_USER";
pub const BUS_PASSWORD: &str = "HAIRPIN_BUS_PASSWORD";

/// Where the switch's OpenFlow channel is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Channel {
    Unix(PathBuf),
    Tcp(String),
}

impl Channel {
    pub fn parse(s: &str) -> Option<Self> {
        if let Some(path) = s.strip_prefix("unix:") {
            return (!path.is_empty()).then(|| Channel::Unix(PathBuf::from(path)));
        }
        let addr = s.strip_prefix("tcp:")?;
        (!addr.is_empty()).then(|| Channel::Tcp(addr.to_string()))
    }
}

impl fmt::Display for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Channel::Unix(path) => write!(f, "unix:{}", path.display()),
            Channel::Tcp(addr) => write!(f, "tcp:{addr}"),
        }
    }
}

/// The bus as the controllet reaches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BusAccess {
    pub url: String,
    /// User and password, on a bus with authentication.
    pub credentials: Option<(String, String)>,
}

/// Everything the environment says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Environment {
    pub name: String,
    pub datapath_id: u64,
    pub openflow: Channel,
    pub bus: Option<BusAccess>,
}

/// A variable missing or malformed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvError(pub String);

impl fmt::Display for EnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (a controllet is started by hairpind, which sets HAIRPIN_*)",
            self.0
        )
    }
}

impl std::error::Error for EnvError {}

impl Environment {
    /// Reads the process's environment.
    pub fn from_process() -> Result<Self, EnvError> {
        Self::from_lookup(|key| std::env::var(key).ok())
    }

    /// Reads the variables through `get` (the process's environment, or a test's map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, EnvError> {
        let need = |key: &str| get(key).ok_or_else(|| EnvError(format!("{key} is not set")));
        let name = need(NAME)?;
        let dpid = need(DATAPATH_ID)?;
        let datapath_id = u64::from_str_radix(&dpid, 16)
            .map_err(|_| EnvError(format!("{DATAPATH_ID}=`{dpid}` is not hex")))?;
        let channel = need(OPENFLOW)?;
        let openflow = Channel::parse(&channel).ok_or_else(|| {
            EnvError(format!(
                "{OPENFLOW}=`{channel}` is not unix:PATH or tcp:ADDR"
            ))
        })?;
        let bus = get(BUS_URL).map(|url| BusAccess {
            url,
            credentials: get(BUS_USER).zip(get(BUS_PASSWORD)),
        });
        Ok(Environment {
            name,
            datapath_id,
            openflow,
            bus,
        })
    }

    /// The variables that describe `self`, as the host sets them.
    pub fn to_vars(&self) -> Vec<(&'static str, String)> {
        let mut vars = vec![
            (NAME, self.name.clone()),
            (DATAPATH_ID, format!("{:016x}", self.datapath_id)),
            (OPENFLOW, self.openflow.to_string()),
        ];
        if let Some(bus) = &self.bus {
            vars.push((BUS_URL, bus.url.clone()));
            if let Some((user, password)) = &bus.credentials {
                vars.push((BUS_USER, user.clone()));
                vars.push((BUS_PASSWORD, password.clone()));
            }
        }
        vars
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn the_host_s_variables_read_back() {
        let env = Environment {
            name: "lsw".into(),
            datapath_id: 0x2a,
            openflow: Channel::Unix("/run/hairpin/openflow.sock".into()),
            bus: Some(BusAccess {
                url: "nats://127.0.0.1:4222".into(),
                credentials: Some(("controllet-lsw".into(), "pw".into())),
            }),
        };
        let vars: HashMap<_, _> = env.to_vars().into_iter().collect();
        assert_eq!(vars[DATAPATH_ID], "000000000000002a");
        let back = Environment::from_lookup(|k| vars.get(k).cloned()).unwrap();
        assert_eq!(back, env);
    }

    #[test]
    fn missing_or_malformed_variables_are_named() {
        let err = Environment::from_lookup(|_| None).unwrap_err();
        assert!(err.to_string().contains(NAME), "{err}");
        let vars: HashMap<&str, String> = [
            (NAME, "x".to_string()),
            (DATAPATH_ID, "1".to_string()),
            (OPENFLOW, "ssl:x".to_string()),
        ]
        .into_iter()
        .collect();
        let err = Environment::from_lookup(|k| vars.get(k).cloned()).unwrap_err();
        assert!(err.to_string().contains(OPENFLOW), "{err}");
        assert_eq!(
            Channel::parse("tcp:127.0.0.1:6653"),
            Some(Channel::Tcp("127.0.0.1:6653".into()))
        );
    }
}
