//! What an operator declares: a controllet (`[[controllets]]` in hairpind's TOML, or the params
//! of `controllet/start`), the bus (`[bus]`) and where the host keeps its files
//! (`[controllet_host]`). Every value is checked while it is read, so a bad one is reported
//! with its file, line and field.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use cpus::CpuList;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A controllet's name: `[a-z][a-z0-9_-]{0,31}`, not `switch` (see
/// `controllet::subjects::valid_name`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Name(String);

impl Name {
    pub fn new(name: &str) -> Result<Self, String> {
        if controllet::subjects::valid_name(name) {
            Ok(Name(name.to_string()))
        } else {
            Err(format!(
                "`{name}` is not a controllet name (1 to 32 of a-z, 0-9, _ and -, starting with a letter; not `switch`)"
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Name::new(&s).map_err(serde::de::Error::custom)
    }
}

/// A number of bytes: an integer, or a string with a K, M or G suffix (powers of 1024).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ByteSize(pub u64);

impl ByteSize {
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
            Some((i, _)) => s.split_at(i),
            None => (s, ""),
        };
        let shift = match unit.trim() {
            "" | "B" => 0,
            "K" | "KiB" | "k" => 10,
            "M" | "MiB" => 20,
            "G" | "GiB" => 30,
            _ => return Err(format!("`{s}` is not a size (like 4096, 512K, 256M or 1G)")),
        };
        let n: u64 = digits
            .parse()
            .map_err(|_| format!("`{s}` is not a size (like 4096, 512K, 256M or 1G)"))?;
        n.checked_mul(1 << shift)
            .filter(|&b| b >= 1 << 20)
            .map(ByteSize)
            .ok_or_else(|| format!("`{s}`: a memory limit is at least 1M"))
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(n) => ByteSize::parse(&n.to_string()),
            Raw::Text(s) => ByteSize::parse(&s),
        }
        .map_err(serde::de::Error::custom)
    }
}

/// A share of CPU time in CPUs (0.5 = half of one CPU), above 0 and at most 1024.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Cpus(pub f64);

impl<'de> Deserialize<'de> for Cpus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if (0.01..=1024.0).contains(&v) {
            Ok(Cpus(v))
        } else {
            Err(serde::de::Error::custom(format!(
                "{v} is not a CPU share (0.01 to 1024 CPUs)"
            )))
        }
    }
}

/// The CPUs a controllet runs on, in the kernel's list syntax (`0`, `2-3`, `0,2`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuAffinity(pub CpuList);

impl<'de> Deserialize<'de> for CpuAffinity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        CpuList::parse(&text)
            .map(CpuAffinity)
            .map_err(serde::de::Error::custom)
    }
}

impl Serialize for CpuAffinity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// A duration written as `250ms`, `2s` or `1m`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Period(#[serde(serialize_with = "millis")] pub Duration);

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{}ms", d.as_millis()))
}

impl Period {
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let bad = || format!("`{s}` is not a duration (like 250ms, 2s or 1m)");
        let (digits, unit) = s
            .char_indices()
            .find(|(_, c)| !c.is_ascii_digit())
            .map_or((s, ""), |(i, _)| s.split_at(i));
        let n: u64 = digits.parse().map_err(|_| bad())?;
        let d = match unit {
            "ms" => Duration::from_millis(n),
            "s" => Duration::from_secs(n),
            "m" => Duration::from_secs(n.saturating_mul(60)),
            _ => return Err(bad()),
        };
        Ok(Period(d))
    }
}

impl<'de> Deserialize<'de> for Period {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Period::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// How a controllet is isolated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// bubblewrap namespaces and cgroup limits (the default).
    #[default]
    Sandbox,
    /// A plain supervised child process: no namespaces, no limits. Said explicitly, never
    /// chosen for the operator.
    None,
}

/// The controllet's network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// The host's network namespace (it can connect to services on the host).
    Host,
    /// A network namespace of its own with only loopback, where hairpind relays the bus and
    /// may serve the OpenFlow channel over TCP: the controllet reaches nothing else (the
    /// default).
    #[default]
    Private,
}

/// How the controllet's OpenFlow channel is offered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelKind {
    /// A unix socket bind-mounted into the sandbox (the default).
    #[default]
    Unix,
    /// TCP on 127.0.0.1 inside the controllet's own network namespace (needs `network =
    /// "private"`), for frameworks that only speak TCP.
    Tcp,
}

/// A confinement a controllet may be allowed to run without, when this host lacks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Piece {
    /// The bubblewrap namespaces (pid, ipc, mount, user).
    Sandbox,
    /// A CPU limit (cgroup cpu).
    Cpu,
    /// A memory limit (cgroup memory).
    Memory,
    /// A process-count limit (cgroup pids).
    Pids,
    /// Its `cpu_affinity` held by the cgroup cpuset, so that it cannot move itself elsewhere.
    Cpuset,
    /// A network namespace of its own.
    Network,
    /// Bus credentials that confine what it publishes.
    Bus,
    /// The system-call filter (`seccomp`), loaded by the sandbox.
    Seccomp,
}

impl fmt::Display for Piece {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Piece::Sandbox => "sandbox",
            Piece::Cpu => "cpu",
            Piece::Memory => "memory",
            Piece::Pids => "pids",
            Piece::Cpuset => "cpuset",
            Piece::Network => "network",
            Piece::Bus => "bus",
            Piece::Seccomp => "seccomp",
        })
    }
}

/// Restart delays: from `min`, doubling after each quick death up to `max`; back to `min`
/// after the controllet ran for `stable`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Backoff {
    pub min: Period,
    pub max: Period,
    pub stable: Period,
}

/// The longest restart delay or stable period a spec may give.
const MAX_RESTART_PERIOD: Duration = Duration::from_secs(3600);

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            min: Period(Duration::from_millis(100)),
            max: Period(Duration::from_secs(30)),
            stable: Period(Duration::from_secs(10)),
        }
    }
}

fn default_user() -> String {
    "nobody".into()
}
fn default_cpu() -> Cpus {
    Cpus(0.5)
}
fn default_memory() -> ByteSize {
    ByteSize(256 << 20)
}
fn default_pids() -> u64 {
    64
}

/// One controllet, as declared.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ControlletSpec {
    pub name: Name,
    /// The program, an absolute path visible in the sandbox (under `/usr`, its directory or
    /// a `read_only` path).
    pub program: PathBuf,
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables, beside the `HAIRPIN_*` ones the host sets.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Its private writable directory (default: `<state_dir>/controllets/<name>`), also its
    /// working directory.
    pub directory: Option<PathBuf>,
    /// The unprivileged user it runs as (name or number).
    #[serde(default = "default_user")]
    pub user: String,
    #[serde(default)]
    pub isolation: Isolation,
    #[serde(default)]
    pub network: Network,
    #[serde(default)]
    pub channel: ChannelKind,
    /// Host paths visible read-only in the sandbox, beside the system (`/usr`, `/etc`).
    #[serde(default)]
    pub read_only: Vec<PathBuf>,
    #[serde(default = "default_cpu")]
    pub cpu: Cpus,
    #[serde(default = "default_memory")]
    pub memory: ByteSize,
    #[serde(default = "default_pids")]
    pub pids: u64,
    /// The CPUs it runs on, for example a busy-polling datapath thread's (`datapath_cpus`),
    /// so that its wake-up is local to that core. Default: wherever the scheduler puts it.
    pub cpu_affinity: Option<CpuAffinity>,
    /// Confinements it may run without where this host lacks them.
    #[serde(default)]
    pub run_without: Vec<Piece>,
    /// Whether it may claim the master role (a ROLE_REQUEST for master is otherwise refused
    /// with OFPRRFC_UNSUP): a claim demotes the remote master.
    #[serde(default)]
    pub may_be_master: bool,
    /// System calls the sandbox's filter refuses that this controllet may make (names from
    /// `seccomp::REFUSED`, or `clone3`).
    #[serde(default)]
    pub allow_syscalls: Vec<String>,
    #[serde(default)]
    pub restart: Backoff,
    /// On an external bus: the file holding this controllet's bus password (user
    /// `controllet-<name>`), provisioned by the bus's operator.
    pub bus_password_file: Option<PathBuf>,
}

impl ControlletSpec {
    /// Checks what single fields cannot: the field at fault and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if !self.program.is_absolute() {
            return Err((
                "program",
                format!("`{}` is not an absolute path", self.program.display()),
            ));
        }
        if let Some(dir) = &self.directory {
            if !dir.is_absolute() || dir.components().count() < 3 {
                return Err((
                    "directory",
                    format!(
                        "`{}` is not an absolute path at least two levels deep",
                        dir.display()
                    ),
                ));
            }
        }
        if let Some(path) = self.read_only.iter().find(|p| !p.is_absolute()) {
            return Err((
                "read_only",
                format!("`{}` is not an absolute path", path.display()),
            ));
        }
        if self.channel == ChannelKind::Tcp && self.network != Network::Private {
            return Err((
                "channel",
                "a TCP channel needs a network namespace of its own (network = \"private\")".into(),
            ));
        }
        if self.pids == 0 {
            return Err(("pids", "must be at least 1".into()));
        }
        if let Some(CpuAffinity(list)) = &self.cpu_affinity {
            list.check_allowed().map_err(|why| ("cpu_affinity", why))?;
        }
        if let Some(call) = self
            .allow_syscalls
            .iter()
            .find(|c| !crate::seccomp::refuses(c))
        {
            return Err((
                "allow_syscalls",
                format!("`{call}` is not a call the sandbox's filter refuses"),
            ));
        }
        if self.restart.min.0 > self.restart.max.0 || self.restart.min.0.is_zero() {
            return Err(("restart", "needs 0 < min <= max".into()));
        }
        let restart = &self.restart;
        if [restart.max.0, restart.stable.0]
            .iter()
            .any(|d| *d > MAX_RESTART_PERIOD)
        {
            return Err((
                "restart",
                "periods above an hour are not restart delays".into(),
            ));
        }
        if let Some(key) = self
            .env
            .keys()
            .find(|k| k.starts_with("HAIRPIN_") || k.is_empty() || k.contains('='))
        {
            return Err((
                "env",
                format!("`{key}`: HAIRPIN_* variables are set by hairpind"),
            ));
        }
        Ok(())
    }
}

/// A cluster the embedded NATS server joins.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    #[serde(default = "default_cluster_name")]
    pub name: String,
    /// Where this node accepts routes from the others: `IP:PORT`.
    pub listen: String,
    /// The other nodes: `nats-route://IP:PORT`.
    #[serde(default)]
    pub routes: Vec<String>,
}

fn default_cluster_name() -> String {
    "hairpin".into()
}

/// hairpind's own user on the bus, which no declared user may take.
pub const DAEMON_USER: &str = "hairpind";

/// A bus user for a remote controller or a monitor (embedded server only).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BusUser {
    pub name: String,
    pub password_file: PathBuf,
    /// Subjects it may publish on (requests and replies always).
    #[serde(default)]
    pub publish: Vec<String>,
    /// Subjects it may subscribe to (default: every switch's).
    #[serde(default = "default_user_subscribe")]
    pub subscribe: Vec<String>,
}

fn default_user_subscribe() -> Vec<String> {
    vec!["hairpin.>".into(), "_INBOX.>".into()]
}

fn default_bus_listen() -> String {
    "127.0.0.1:4222".into()
}
fn default_nats_server() -> PathBuf {
    PathBuf::from("/usr/sbin/nats-server")
}
fn default_events() -> Vec<String> {
    vec![
        "packet_in".into(),
        "port_status".into(),
        "flow_removed".into(),
    ]
}

/// `[bus]`: an external NATS cluster (`url`), or the embedded `nats-server` hairpind starts.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BusSpec {
    /// An external bus: `nats://HOST:PORT`. Without it hairpind runs its own server.
    pub url: Option<String>,
    /// hairpind's own user and password file on an external bus.
    pub user: Option<String>,
    pub password_file: Option<PathBuf>,
    /// The embedded server's client address (`IP:PORT`).
    #[serde(default = "default_bus_listen")]
    pub listen: String,
    #[serde(default = "default_nats_server")]
    pub nats_server: PathBuf,
    pub cluster: Option<ClusterSpec>,
    #[serde(default)]
    pub users: Vec<BusUser>,
    /// Which switch events go on the bus: `packet_in`, `port_status`, `flow_removed`.
    #[serde(default = "default_events")]
    pub events: Vec<String>,
    /// No bus at all.
    #[serde(default)]
    pub disabled: bool,
}

impl Default for BusSpec {
    fn default() -> Self {
        BusSpec {
            url: None,
            user: None,
            password_file: None,
            listen: default_bus_listen(),
            nats_server: default_nats_server(),
            cluster: None,
            users: Vec::new(),
            events: default_events(),
            disabled: false,
        }
    }
}

impl BusSpec {
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if let Some(bad) = self
            .events
            .iter()
            .find(|e| controllet::subjects::EventKind::from_token(e).is_none())
        {
            return Err((
                "events",
                format!("`{bad}` is not packet_in, port_status or flow_removed"),
            ));
        }
        if self.listen.parse::<std::net::SocketAddr>().is_err() {
            return Err(("listen", format!("`{}` is not IP:PORT", self.listen)));
        }
        for (i, user) in self.users.iter().enumerate() {
            let reserved = user.name == DAEMON_USER || user.name.starts_with("controllet-");
            if reserved {
                return Err((
                    "users",
                    format!(
                        "`{}` is a name the switch gives its own accounts",
                        user.name
                    ),
                ));
            }
            if self.users[..i].iter().any(|u| u.name == user.name) {
                return Err(("users", format!("`{}` is named twice", user.name)));
            }
        }
        if let Some(url) = &self.url {
            if !url.starts_with("nats://") && !url.starts_with("tls://") {
                return Err(("url", format!("`{url}` is not nats://HOST:PORT")));
            }
        }
        if let Some(cluster) = &self.cluster {
            if cluster.listen.parse::<std::net::SocketAddr>().is_err() {
                return Err((
                    "cluster",
                    format!("listen `{}` is not IP:PORT", cluster.listen),
                ));
            }
        }
        Ok(())
    }
}

/// `[controllet_host]`: where the host keeps controllets' files, and its tools.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostSpec {
    /// Sockets and the bus's configuration (default `/run/hairpin/dp-<dpid>`).
    pub run_dir: Option<PathBuf>,
    /// Private directories and logs (default `/var/lib/hairpin/dp-<dpid>`).
    pub state_dir: Option<PathBuf>,
    pub bwrap: PathBuf,
    pub cgroup_root: PathBuf,
    /// The CPU weight of all controllets together against hairpind's own threads (which
    /// weigh 100): 2 by default, so that on a contended core the controllets together get
    /// about a fiftieth of it and the switch comes first (beside a spinning controllet the
    /// forwarding kept 97% of its rate at the median, docs/bench/infep.md); 100 makes a
    /// latency-critical controllet compete evenly.
    pub cpu_weight: u64,
}

impl Default for HostSpec {
    fn default() -> Self {
        HostSpec {
            run_dir: None,
            state_dir: None,
            bwrap: PathBuf::from("/usr/bin/bwrap"),
            cgroup_root: PathBuf::from("/sys/fs/cgroup"),
            cpu_weight: 2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> Result<ControlletSpec, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_confine() {
        let s = spec("name = \"lsw\"\nprogram = \"/usr/bin/true\"\n").unwrap();
        assert_eq!(s.isolation, Isolation::Sandbox);
        assert_eq!(s.network, Network::Private);
        assert_eq!(s.cpu, Cpus(0.5));
        assert_eq!(s.memory, ByteSize(256 << 20));
        assert_eq!(s.pids, 64);
        assert_eq!(s.user, "nobody");
        assert!(s.run_without.is_empty());
        assert_eq!(s.cpu_affinity, None);
        s.validate().unwrap();
        let cpu = cpus::allowed().unwrap()[0];
        let s = spec(&format!(
            "name = \"lsw\"\nprogram = \"/usr/bin/true\"\ncpu_affinity = \"{cpu}\"\n"
        ))
        .unwrap();
        assert_eq!(
            s.cpu_affinity,
            Some(CpuAffinity(CpuList::from_cpus(&[cpu])))
        );
        s.validate().unwrap();
    }

    #[test]
    fn bad_values_are_refused_with_the_reason() {
        let e = spec("name = \"a.b\"\nprogram = \"/x\"\n").unwrap_err();
        assert!(e.contains("not a controllet name"), "{e}");
        let e = spec("name = \"a\"\nprogram = \"/x\"\nmemory = \"12Q\"\n").unwrap_err();
        assert!(e.contains("not a size"), "{e}");
        let e = spec("name = \"a\"\nprogram = \"/x\"\ncpu = 0\n").unwrap_err();
        assert!(e.contains("CPU share"), "{e}");
        let e = spec("name = \"a\"\nprogram = \"/x\"\nrun_without = [\"apparmor\"]\n").unwrap_err();
        assert!(e.contains("apparmor"), "{e}");
        let s = spec("name = \"a\"\nprogram = \"/x\"\nallow_syscalls = [\"read\"]\n").unwrap();
        let (field, why) = s.validate().unwrap_err();
        assert_eq!(field, "allow_syscalls");
        assert!(why.contains("`read`"), "{why}");
        let s = spec(
            "name = \"a\"\nprogram = \"/x\"\nallow_syscalls = [\"io_uring_setup\", \"clone3\"]\n",
        )
        .unwrap();
        s.validate().unwrap();
        let e = spec("name = \"a\"\nprogram = \"/x\"\nrestart = { min = \"5 s\" }\n").unwrap_err();
        assert!(e.contains("duration"), "{e}");
        let s = spec("name = \"a\"\nprogram = \"x\"\n").unwrap();
        assert_eq!(s.validate().unwrap_err().0, "program");
        let s = spec("name = \"a\"\nprogram = \"/x\"\nnetwork = \"host\"\nchannel = \"tcp\"\n")
            .unwrap();
        assert_eq!(s.validate().unwrap_err().0, "channel");
        let s =
            spec("name = \"a\"\nprogram = \"/x\"\nenv = { HAIRPIN_OPENFLOW = \"x\" }\n").unwrap();
        assert_eq!(s.validate().unwrap_err().0, "env");
        let e = spec("name = \"a\"\nprogram = \"/x\"\ncpu_affinity = \"1-0\"\n").unwrap_err();
        assert!(e.contains("backwards"), "{e}");
        let outside = cpus::allowed().unwrap().last().unwrap() + 1;
        let s = spec(&format!(
            "name = \"a\"\nprogram = \"/x\"\ncpu_affinity = \"{outside}\"\n"
        ))
        .unwrap();
        let (field, why) = s.validate().unwrap_err();
        assert_eq!(field, "cpu_affinity");
        assert!(why.contains(&format!("CPU {outside} ")), "{why}");
        let huge = "restart = { min = \"10000000000000000000s\", max = \"10000000000000000000s\" }";
        let s = spec(&format!("name = \"a\"\nprogram = \"/x\"\n{huge}\n")).unwrap();
        assert_eq!(s.validate().unwrap_err().0, "restart");
    }

    #[test]
    fn bus_users_are_distinct_and_not_the_switch_s_own() {
        let bus = |users: &str| -> BusSpec { toml::from_str(users).unwrap() };
        let user = |name: &str| format!("[[users]]\nname = \"{name}\"\npassword_file = \"/p\"\n");
        bus(&user("ops")).validate().unwrap();
        for text in [
            user("hairpind"),
            user("controllet-lsw"),
            format!("{}{}", user("ops"), user("ops")),
        ] {
            assert_eq!(bus(&text).validate().unwrap_err().0, "users", "{text}");
        }
    }

    #[test]
    fn sizes_and_periods() {
        assert_eq!(ByteSize::parse("64M"), Ok(ByteSize(64 << 20)));
        assert_eq!(ByteSize::parse("1G"), Ok(ByteSize(1 << 30)));
        assert_eq!(ByteSize::parse("2097152"), Ok(ByteSize(2 << 20)));
        assert!(ByteSize::parse("100K").is_err(), "below 1M");
        assert!(ByteSize::parse("99999999999999G").is_err());
        assert_eq!(
            Period::parse("250ms"),
            Ok(Period(Duration::from_millis(250)))
        );
        assert_eq!(Period::parse("2m"), Ok(Period(Duration::from_secs(120))));
        assert!(Period::parse("ms").is_err());
    }
}
