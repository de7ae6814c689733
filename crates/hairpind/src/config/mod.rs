//! Daemon settings from the command line and an optional TOML file. The file is read first and
//! the command line adds to it (repeatable flags append, single-valued flags override), so a unit
//! file can hold the site settings and an operator can still add a port by hand.
//!
//! [`ports`]: what each OpenFlow port is (an interface, or a legacy port on a trunk).

mod ports;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use agent::limit::PacketInLimit;
use agent::target::{ControllerTarget, ListenTarget};
use agent::tls::TlsFiles;
use clap::Parser;
use serde::Deserialize;

use cpus::CpuList;
use ports::{check_ifname, check_legacy, check_trunk_name, parse_trunk_flag, PortValue};
pub use ports::{Interface, LegacyPort, PortBinding, PortIo, TrunkVlan};

/// Where `hairpinctl` looks by default; the daemon listens there when given no `--listen`.
pub const DEFAULT_MGMT_SOCKET: &str = "/run/hairpin/hairpind.sock";
/// Where the daemon answers management commands unless told otherwise (`hairpinctl`'s
/// default `--control`).
pub const DEFAULT_CONTROL_SOCKET: &str = "/run/hairpin/hairpind.ctl";

/// What the switch does while no controller is connected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum FailMode {
    /// Keep the flows, drop what they do not match (OpenFlow "fail secure").
    #[default]
    Secure,
    /// Behave as a legacy L2 learning switch (OpenFlow "fail standalone").
    Standalone,
}

/// Receive ring of the AF_PACKET ports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum RxRing {
    /// TPACKET_V2: each frame is handed over at once (lowest latency).
    #[default]
    Frames,
    /// TPACKET_V3: frames are handed over in blocks (least CPU per frame; a frame may wait
    /// up to 1 ms at low rates).
    Blocks,
}

/// Which hardware backend the offload planner programs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OffloadBackend {
    /// The profile's tables emulated in front of the pipeline (`offload::model`).
    #[default]
    Model,
    /// An XDP program on the ports holding the hardware tables in BPF maps, native where
    /// the driver takes it.
    Xdp,
    /// The same in generic (SKB) mode on every port.
    XdpGeneric,
}

/// Hardware offload: a profile (a shipped name or a file) and a backend, `PROFILE[:BACKEND]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffloadSpec {
    pub profile: String,
    pub backend: OffloadBackend,
}

impl OffloadSpec {
    fn parse(s: &str) -> Result<Self, String> {
        let (profile, backend) = match s.rsplit_once(':') {
            Some((p, "model")) => (p, OffloadBackend::Model),
            Some((p, "xdp")) => (p, OffloadBackend::Xdp),
            Some((p, "xdp-generic")) => (p, OffloadBackend::XdpGeneric),
            _ => (s, OffloadBackend::Model),
        };
        if profile.is_empty() {
            return Err(format!(
                "`{s}`: offload is PROFILE[:model|:xdp|:xdp-generic]"
            ));
        }
        Ok(OffloadSpec {
            profile: profile.to_string(),
            backend,
        })
    }
}

fn parse_offload(s: &str) -> Result<OffloadSpec, String> {
    OffloadSpec::parse(s)
}

fn parse_placement(s: &str) -> Result<String, String> {
    offload::placement::Mode::parse(s)
        .map(|m| m.name().to_string())
        .ok_or_else(|| format!("`{s}`: placement is algorithm1, dependent-set or cover-set"))
}

fn parse_metrics(s: &str) -> Result<SocketAddr, String> {
    s.parse()
        .map_err(|_| format!("`{s}`: metrics is IP:PORT (127.0.0.1:9108, [::1]:9108)"))
}

fn parse_log_level(s: &str) -> Result<crate::log::Level, String> {
    crate::log::Level::parse(s)
        .ok_or_else(|| format!("`{s}`: log level is error, warn, info or debug"))
}

fn parse_promotion(s: &str) -> Result<String, String> {
    offload::placement::Policy::parse(s)
        .map(|p| p.name().to_string())
        .ok_or_else(|| format!("`{s}`: promotion is fcfs, priority or traffic"))
}

/// `hairpind` command line.
#[derive(Debug, Parser)]
#[command(
    name = "hairpind",
    version,
    about = "Hairpin OpenFlow 1.3 switch daemon"
)]
pub struct Cli {
    /// TOML file with the same settings as the flags below.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Datapath id, decimal or 0x-prefixed hex.
    #[arg(long, value_name = "ID", value_parser = parse_datapath_id)]
    pub datapath_id: Option<u64>,
    /// Passive OpenFlow listener: ptcp:PORT[:IP], pssl:PORT[:IP] or punix:PATH (repeatable;
    /// without any, punix:/run/hairpin/hairpind.sock).
    #[arg(long = "listen", value_name = "TARGET")]
    pub listen: Vec<ListenTarget>,
    /// Controller to connect to: tcp:IP:PORT, ssl:IP:PORT or unix:PATH (repeatable).
    #[arg(long = "controller", value_name = "TARGET")]
    pub controllers: Vec<ControllerTarget>,
    /// PEM private key of the switch, for ssl: and pssl: targets.
    #[arg(long, value_name = "FILE")]
    pub private_key: Option<PathBuf>,
    /// PEM certificate of the switch (signed by the CA), for ssl: and pssl: targets.
    #[arg(long, value_name = "FILE")]
    pub certificate: Option<PathBuf>,
    /// PEM certificate of the CA that signs every peer's certificate, for ssl: and pssl:.
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
    /// Packet-ins a second each controller connection receives at most; the rest are dropped
    /// and counted (`hairpinctl call controllers/list`). Off by default.
    #[arg(long, value_name = "PER_SECOND")]
    pub controller_rate_limit: Option<u32>,
    /// Packet-ins a controller may receive at once within the rate limit (default: a quarter
    /// of the rate, 25 at least).
    #[arg(long, value_name = "PACKETS")]
    pub controller_burst_limit: Option<u32>,
    /// OpenFlow port number bound to a Linux interface, N=IFNAME[:xdp], or to a legacy
    /// switch's access port as one VLAN of a trunk, N=TRUNK:VID[:NAME] (VID `native` for
    /// untagged frames) (repeatable).
    #[arg(long = "port", value_name = "N=IFNAME[:xdp]|N=TRUNK:VID[:NAME]", value_parser = parse_port_binding)]
    pub ports: Vec<(u32, PortBinding)>,
    /// A Linux interface cabled to a legacy switch's 802.1Q trunk, whose VLANs are ports:
    /// NAME=IFNAME[:xdp] (repeatable).
    #[arg(long = "trunk", value_name = "NAME=IFNAME[:xdp]", value_parser = parse_trunk_flag)]
    pub trunks: Vec<(String, Interface)>,
    /// Behaviour without a controller.
    #[arg(long, value_enum)]
    pub fail_mode: Option<FailMode>,
    /// Number of datapath threads.
    #[arg(long, value_name = "N")]
    pub datapath_threads: Option<usize>,
    /// Pin datapath thread i to the list's i-th CPU (a CPU list: 1, 2-3, 0,2).
    #[arg(long, value_name = "LIST", value_parser = CpuList::parse)]
    pub datapath_cpus: Option<CpuList>,
    /// Receive ring kind of the ports.
    #[arg(long, value_enum)]
    pub rx_ring: Option<RxRing>,
    /// Datapath threads poll without ever sleeping: the lowest reaction time, at the price
    /// of a core per thread even when idle.
    #[arg(long)]
    pub busy_poll: bool,
    /// Create a TAP device of this name as the OpenFlow LOCAL port (the host's own stack).
    #[arg(long, value_name = "IFNAME")]
    pub local_port: Option<String>,
    /// Capture every frame received or sent on port N into a pcap file (repeatable).
    #[arg(long = "pcap", value_name = "N=FILE", value_parser = parse_capture)]
    pub captures: Vec<(u32, PathBuf)>,
    /// Unix socket for management commands (hairpinctl; default /run/hairpin/hairpind.ctl).
    #[arg(long, value_name = "PATH")]
    pub control_socket: Option<PathBuf>,
    /// Serve Prometheus metrics over HTTP at IP:PORT, path /metrics (off unless given).
    #[arg(long, value_name = "IP:PORT", value_parser = parse_metrics)]
    pub metrics: Option<SocketAddr>,
    /// Least severe log messages written to stderr: error, warn, info or debug (changed at
    /// run time with `hairpinctl log-level`).
    #[arg(long, value_name = "LEVEL", value_parser = parse_log_level)]
    pub log_level: Option<crate::log::Level>,
    /// Print this program's manual page (roff) and exit; packaging makes hairpind.8 with it.
    #[arg(long, hide = true)]
    pub man_page: bool,
    /// Hardware offload: a profile (shipped name or file) and the backend, model or xdp.
    #[arg(long, value_name = "PROFILE[:BACKEND]", value_parser = parse_offload)]
    pub offload: Option<OffloadSpec>,
    /// How placement keeps hardware a cache of software: algorithm1, dependent-set, cover-set.
    #[arg(long, value_name = "MODE", value_parser = parse_placement)]
    pub placement: Option<String>,
    /// Which rules get hardware room: fcfs, priority, traffic.
    #[arg(long, value_name = "POLICY", value_parser = parse_promotion)]
    pub promotion: Option<String>,
}

/// The settings file, field by field as documented in docs/config.md.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    datapath_id: Option<DatapathIdSetting>,
    #[serde(default)]
    listen: Vec<String>,
    #[serde(default)]
    controllers: Vec<String>,
    private_key: Option<PathBuf>,
    certificate: Option<PathBuf>,
    ca_cert: Option<PathBuf>,
    controller_rate_limit: Option<u32>,
    controller_burst_limit: Option<u32>,
    #[serde(default)]
    ports: BTreeMap<String, PortValue>,
    #[serde(default)]
    trunks: BTreeMap<String, String>,
    fail_mode: Option<FailMode>,
    datapath_threads: Option<usize>,
    datapath_cpus: Option<String>,
    rx_ring: Option<RxRing>,
    busy_poll: Option<bool>,
    local_port: Option<String>,
    #[serde(default)]
    pcap: BTreeMap<String, PathBuf>,
    control_socket: Option<PathBuf>,
    metrics: Option<String>,
    log_level: Option<String>,
    controllet_host: Option<controllet_host::HostSpec>,
    bus: Option<controllet_host::BusSpec>,
    #[serde(default)]
    controllets: Vec<controllet_host::ControlletSpec>,
    offload: Option<String>,
    placement: Option<String>,
    promotion: Option<String>,
}

/// A datapath id may be written as an integer or as a (hex) string, as operators copy it
/// from `ovs-ofctl show` output.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum DatapathIdSetting {
    Number(u64),
    Text(String),
}

/// The merged, validated settings the daemon runs with.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub datapath_id: u64,
    pub listen: Vec<ListenTarget>,
    pub controllers: Vec<ControllerTarget>,
    /// The TLS identity and CA, when an `ssl:` or `pssl:` target needs them.
    pub tls: Option<TlsFiles>,
    /// Packet-ins each connection receives at most, when limited.
    pub packet_in_limit: Option<PacketInLimit>,
    pub ports: BTreeMap<u32, PortBinding>,
    /// Trunks by name: the interfaces whose VLANs are legacy ports.
    pub trunks: BTreeMap<String, Interface>,
    pub fail_mode: FailMode,
    pub datapath_threads: usize,
    /// The CPUs datapath threads are pinned to, when given.
    pub datapath_cpus: Option<CpuList>,
    pub rx_ring: RxRing,
    /// Datapath threads never sleep (see `--busy-poll`).
    pub busy_poll: bool,
    /// TAP device serving as OFPP_LOCAL, if any.
    pub local_port: Option<String>,
    /// Ports whose traffic is captured, with the pcap file.
    pub captures: BTreeMap<u32, PathBuf>,
    /// Where management commands are served, when given; else [`DEFAULT_CONTROL_SOCKET`]
    /// unless another daemon serves that one.
    pub control_socket: Option<PathBuf>,
    /// Where the metrics page is served, when on.
    pub metrics: Option<SocketAddr>,
    pub log_level: crate::log::Level,
    /// Controllets, the bus and where their files go (docs/controllets.md).
    pub controllets: controllet_host::HostConfig,
    /// Hardware offload, when on.
    pub offload: Option<OffloadSpec>,
    /// Placement mode and promotion policy (names checked).
    pub placement: String,
    pub promotion: String,
}

/// A settings error that names where it is: the file, line and field, or the flag.
#[derive(Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub file: Option<PathBuf>,
    pub line: Option<usize>,
    pub field: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{}:{line}: ", file.display())?,
            (Some(file), None) => write!(f, "{}: ", file.display())?,
            _ => {}
        }
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "field `{}`: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

fn parse_datapath_id(s: &str) -> Result<u64, String> {
    let s = s.trim();
    // Open vSwitch writes datapath ids as exactly 16 hex digits; accept that form as hex too.
    let ovs_form = s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit());
    let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(&hex.replace(':', ""), 16),
        None if s.contains(':') || ovs_form => u64::from_str_radix(&s.replace(':', ""), 16),
        None => s.parse::<u64>(),
    };
    parsed.map_err(|_| {
        format!("`{s}` is not a datapath id (decimal, 0x-hex, 16 hex digits or aa:bb:..)")
    })
}

fn parse_capture(s: &str) -> Result<(u32, PathBuf), String> {
    let (number, file) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: a capture is N=FILE"))?;
    if file.is_empty() {
        return Err(format!("`{s}`: the capture file is empty"));
    }
    Ok((parse_port_number(number)?, PathBuf::from(file)))
}

fn parse_port_binding(s: &str) -> Result<(u32, PortBinding), String> {
    let (number, binding) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: a port is N=IFNAME[:xdp] or N=TRUNK:VID[:NAME]"))?;
    Ok((parse_port_number(number)?, PortBinding::parse(binding)?))
}

/// OpenFlow physical port numbers run from 1 to OFPP_MAX (0xffffff00).
fn parse_port_number(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=0xffff_ff00).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}` is not an OpenFlow port number (1..=4294967040)"
        )),
    }
}

/// 1-based line of a byte offset in text.
fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset).map_or(0, |t| t.matches('\n').count()) + 1
}

/// Whether `line` writes `key = ...` (or `"key" = ...`).
fn writes_key(line: &str, key: &str) -> bool {
    let line = line.trim_start();
    let rest = line
        .strip_prefix(key)
        .or_else(|| line.strip_prefix(&format!("\"{key}\"")));
    rest.is_some_and(|r| r.trim_start().starts_with('='))
}

/// Line on which `key = ...` (or `"key" = ...`) is written, used for errors that arise after
/// deserialising (values that are well-typed but invalid).
fn line_of_key(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|line| writes_key(line, key))
        .map(|i| i + 1)
}

/// Line of `key = ...` inside the `index`-th `header` block (an array of tables), else the
/// block's header line.
fn line_in_block(text: &str, header: &str, index: usize, key: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.trim() == header)
        .nth(index)?
        .0;
    let end = lines[start + 1..]
        .iter()
        .position(|l| l.trim_start().starts_with('['))
        .map_or(lines.len(), |p| start + 1 + p);
    let within = line_of_key(&lines[start + 1..end].join("\n"), key);
    Some(within.map_or(start + 1, |l| start + 1 + l))
}

/// Line of the setting at `path` (`["ports", "5", "vlan"]`): the innermost key written
/// under the longest table header the path starts with (`[ports.5]`, then `[ports]`), else
/// wherever the last key is written.
fn line_of_field(text: &str, path: &[&str]) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    for split in (1..path.len()).rev() {
        let (table, keys) = path.split_at(split);
        let header = format!("[{}]", table.join("."));
        let Some(start) = lines.iter().position(|l| l.trim() == header) else {
            continue;
        };
        let section = lines
            .iter()
            .enumerate()
            .skip(start + 1)
            .take_while(|(_, l)| !l.trim_start().starts_with('['));
        for (i, line) in section {
            if writes_key(line, keys[0]) {
                return Some(i + 1);
            }
        }
    }
    line_of_key(text, path.last()?)
}

fn parse_file_text(path: &Path, text: &str) -> Result<FileSettings, ConfigError> {
    let deserializer = toml::Deserializer::new(text);
    let settings: FileSettings = serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner();
        ConfigError {
            file: Some(path.to_path_buf()),
            line: inner.span().map(|span| line_of(text, span.start)),
            field: if field == "." { String::new() } else { field },
            message: inner.message().to_string(),
        }
    })?;
    Ok(settings)
}

/// Where the merged settings came from, so that an error found only once everything is
/// merged (a port naming a missing trunk, two ports on one VLAN) still names the file and
/// line of what the file said; what the flags said is named by its field alone.
#[derive(Default)]
struct Origins<'a> {
    file: Option<(&'a Path, &'a str)>,
    /// The ports (`ports.N`) and trunks (`trunks.NAME`) the file named.
    from_file: BTreeSet<String>,
}

impl Origins<'_> {
    /// An error about `field` (`ports.5.vlan`), located in the file when the file set it.
    fn error(&self, field: &str, message: String) -> ConfigError {
        let path: Vec<&str> = field.split('.').collect();
        let entry = path.iter().take(2).copied().collect::<Vec<_>>().join(".");
        let file = self.file.filter(|_| self.from_file.contains(&entry));
        ConfigError {
            file: file.map(|(p, _)| p.to_path_buf()),
            line: file.and_then(|(_, text)| line_of_field(text, &path)),
            field: field.to_string(),
            message,
        }
    }
}

/// Most datapath threads: beyond the cores of any machine this runs on, and each thread
/// holds a socket and rings on every port.
const MAX_DATAPATH_THREADS: usize = 1024;

fn flag_error(field: &str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        file: None,
        line: None,
        field: field.into(),
        message: message.into(),
    }
}

/// The packet-in limit from its rate and burst, as Open vSwitch takes them.
fn packet_in_limit(
    rate: Option<u32>,
    burst: Option<u32>,
    origins: &Origins<'_>,
) -> Result<Option<PacketInLimit>, ConfigError> {
    let Some(rate) = rate else {
        return match burst {
            Some(_) => Err(origins.error(
                "controller_burst_limit",
                "a burst limit needs a rate limit (controller_rate_limit)".into(),
            )),
            None => Ok(None),
        };
    };
    if rate == 0 {
        return Err(origins.error(
            "controller_rate_limit",
            "must be at least 1 packet-in a second (leave it out for no limit)".into(),
        ));
    }
    let burst = burst.unwrap_or(PacketInLimit::default_burst(rate));
    if burst == 0 {
        return Err(origins.error("controller_burst_limit", "must be at least 1".into()));
    }
    Ok(Some(PacketInLimit { rate, burst }))
}

/// The file's TLS files and packet-in limits, before the flags override them.
#[derive(Default)]
struct ChannelSettings {
    tls: TlsPaths,
    rate_limit: Option<u32>,
    burst_limit: Option<u32>,
}

/// The TLS files as given, each perhaps missing.
#[derive(Default)]
struct TlsPaths {
    private_key: Option<PathBuf>,
    certificate: Option<PathBuf>,
    ca_cert: Option<PathBuf>,
}

impl TlsPaths {
    /// The files, when a TLS target needs them: a missing one is an error naming its field
    /// and the target that needs it.
    fn resolve(
        self,
        settings: &Settings,
        origins: &Origins<'_>,
    ) -> Result<Option<TlsFiles>, ConfigError> {
        let listen = settings
            .listen
            .iter()
            .find(|t| t.is_tls())
            .map(|t| t.to_string());
        let controller = settings.controllers.iter().find(|t| t.is_tls());
        let Some(needed_by) = listen.or_else(|| controller.map(|t| t.to_string())) else {
            return Ok(None);
        };
        let need = |path: Option<PathBuf>, field: &str, what: &str| {
            path.ok_or_else(|| {
                let flag = field.replace('_', "-");
                origins.error(
                    field,
                    format!("`{needed_by}` needs {what} (--{flag}, or {field} in the file)"),
                )
            })
        };
        Ok(Some(TlsFiles {
            private_key: need(self.private_key, "private_key", "the switch's private key")?,
            certificate: need(self.certificate, "certificate", "the switch's certificate")?,
            ca_cert: need(
                self.ca_cert,
                "ca_cert",
                "the CA certificate peers are checked against",
            )?,
        }))
    }
}

impl Settings {
    /// Merges the file named by `--config` (if any) with the flags and validates the result.
    pub fn from_cli(cli: Cli) -> Result<Self, ConfigError> {
        let mut settings = Settings {
            datapath_id: 1,
            listen: Vec::new(),
            controllers: Vec::new(),
            tls: None,
            packet_in_limit: None,
            ports: BTreeMap::new(),
            trunks: BTreeMap::new(),
            fail_mode: FailMode::Secure,
            datapath_threads: 1,
            datapath_cpus: None,
            rx_ring: RxRing::default(),
            busy_poll: false,
            local_port: None,
            captures: BTreeMap::new(),
            control_socket: None,
            metrics: None,
            log_level: crate::log::Level::Info,
            controllets: controllet_host::HostConfig::default(),
            offload: None,
            placement: "algorithm1".into(),
            promotion: "fcfs".into(),
        };
        let text = match &cli.config {
            Some(path) => Some(std::fs::read_to_string(path).map_err(|e| ConfigError {
                file: Some(path.clone()),
                line: None,
                field: String::new(),
                message: format!("cannot read: {e}"),
            })?),
            None => None,
        };
        let mut origins = Origins::default();
        let mut channel = ChannelSettings::default();
        if let (Some(path), Some(text)) = (&cli.config, &text) {
            origins.file = Some((path, text));
            channel = settings.merge_file(path, text, &mut origins)?;
        }
        let rate = cli.controller_rate_limit.or(channel.rate_limit);
        let burst = cli.controller_burst_limit.or(channel.burst_limit);
        settings.packet_in_limit = packet_in_limit(rate, burst, &origins)?;
        let tls = TlsPaths {
            private_key: cli.private_key.or(channel.tls.private_key),
            certificate: cli.certificate.or(channel.tls.certificate),
            ca_cert: cli.ca_cert.or(channel.tls.ca_cert),
        };
        if let Some(id) = cli.datapath_id {
            settings.datapath_id = id;
        }
        settings.listen.extend(cli.listen);
        settings.controllers.extend(cli.controllers);
        for (name, interface) in cli.trunks {
            settings.add_trunk(name, interface, &origins)?;
        }
        for (number, binding) in cli.ports {
            settings.bind_port(number, binding, &origins)?;
        }
        if let Some(mode) = cli.fail_mode {
            settings.fail_mode = mode;
        }
        if let Some(threads) = cli.datapath_threads {
            origins.from_file.remove("datapath_threads");
            settings.datapath_threads = threads;
        }
        if let Some(cpus) = cli.datapath_cpus {
            origins.from_file.remove("datapath_cpus");
            settings.datapath_cpus = Some(cpus);
        }
        if let Some(ring) = cli.rx_ring {
            settings.rx_ring = ring;
        }
        settings.busy_poll |= cli.busy_poll;
        if let Some(name) = cli.local_port {
            check_ifname(&name).map_err(|m| flag_error("local_port", m))?;
            settings.local_port = Some(name);
        }
        settings.captures.extend(cli.captures);
        if let Some(path) = cli.control_socket {
            settings.control_socket = Some(path);
        }
        if let Some(addr) = cli.metrics {
            settings.metrics = Some(addr);
        }
        if let Some(level) = cli.log_level {
            settings.log_level = level;
        }
        if let Some(spec) = cli.offload {
            settings.offload = Some(spec);
        }
        if let Some(mode) = cli.placement {
            settings.placement = mode;
        }
        if let Some(policy) = cli.promotion {
            settings.promotion = policy;
        }
        if settings.listen.is_empty() {
            settings
                .listen
                .push(ListenTarget::Unix(PathBuf::from(DEFAULT_MGMT_SOCKET)));
        }
        settings.tls = tls.resolve(&settings, &origins)?;
        settings.check(&origins)?;
        Ok(settings)
    }

    /// The checks that need everything merged.
    fn check(&self, origins: &Origins<'_>) -> Result<(), ConfigError> {
        if !(1..=MAX_DATAPATH_THREADS).contains(&self.datapath_threads) {
            return Err(origins.error(
                "datapath_threads",
                format!("must be 1 to {MAX_DATAPATH_THREADS}"),
            ));
        }
        if let Some(cpus) = &self.datapath_cpus {
            cpus.check_allowed()
                .map_err(|why| origins.error("datapath_cpus", why))?;
        }
        self.check_legacy_ports(origins)?;
        if let Some(unknown) = self.captures.keys().find(|n| !self.ports.contains_key(n)) {
            return Err(origins.error(
                &format!("pcap.{unknown}"),
                format!("port {unknown} is not bound to an interface or a trunk's VLAN"),
            ));
        }
        if let Some(first) = self
            .captures
            .keys()
            .next()
            .filter(|_| self.datapath_threads > 1)
        {
            return Err(origins.error(
                &format!("pcap.{first}"),
                "captures need datapath_threads = 1 (one writer per file)".into(),
            ));
        }
        let xdp = self.interfaces().any(|i| i.io == PortIo::Xdp);
        if xdp && self.datapath_threads > 1 {
            return Err(origins.error(
                "datapath_threads",
                "AF_XDP ports serve one datapath thread (one socket per queue)".into(),
            ));
        }
        Ok(())
    }

    /// Every legacy port names a trunk that exists, and no two share a VLAN of one trunk.
    fn check_legacy_ports(&self, origins: &Origins<'_>) -> Result<(), ConfigError> {
        let mut vlans: BTreeMap<(&str, TrunkVlan), u32> = BTreeMap::new();
        for (number, binding) in &self.ports {
            let PortBinding::Legacy(port) = binding else {
                continue;
            };
            let field = format!("ports.{number}");
            check_legacy(port).map_err(|(sub, m)| origins.error(&format!("{field}.{sub}"), m))?;
            if !self.trunks.contains_key(&port.trunk) {
                return Err(origins.error(
                    &format!("{field}.trunk"),
                    format!(
                        "no trunk `{}` (give it in [trunks] or with --trunk {}=IFNAME)",
                        port.trunk, port.trunk
                    ),
                ));
            }
            if let Some(other) = vlans.insert((&port.trunk, port.vlan), *number) {
                return Err(origins.error(
                    &format!("{field}.vlan"),
                    format!(
                        "VLAN {} of trunk `{}` is already port {other}",
                        port.vlan, port.trunk
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Every interface the daemon opens: the ports' own and the trunks'.
    pub fn interfaces(&self) -> impl Iterator<Item = &Interface> {
        let ports = self.ports.values().filter_map(|b| match b {
            PortBinding::Interface(i) => Some(i),
            PortBinding::Legacy(_) => None,
        });
        ports.chain(self.trunks.values())
    }

    /// What already uses interface `ifname`, if anything (a port or a trunk).
    fn user_of(&self, ifname: &str) -> Option<String> {
        let port = self.ports.iter().find_map(|(n, b)| match b {
            PortBinding::Interface(i) if i.ifname == ifname => Some(format!("port {n}")),
            _ => None,
        });
        port.or_else(|| {
            self.trunks
                .iter()
                .find(|(_, i)| i.ifname == ifname)
                .map(|(name, _)| format!("trunk `{name}`"))
        })
    }

    /// Merges the file's settings; returns those of the OpenFlow channels, which are checked
    /// once the flags had their say.
    fn merge_file(
        &mut self,
        path: &Path,
        text: &str,
        origins: &mut Origins<'_>,
    ) -> Result<ChannelSettings, ConfigError> {
        let file = parse_file_text(path, text)?;
        let at = |field: &str, message: String| {
            let keys: Vec<&str> = field.split('.').collect();
            ConfigError {
                file: Some(path.to_path_buf()),
                line: line_of_field(text, &keys),
                field: field.to_string(),
                message,
            }
        };
        if let Some(id) = file.datapath_id {
            self.datapath_id = match id {
                DatapathIdSetting::Number(n) => n,
                DatapathIdSetting::Text(s) => {
                    parse_datapath_id(&s).map_err(|m| at("datapath_id", m))?
                }
            };
        }
        for target in &file.listen {
            let parsed = target
                .parse()
                .map_err(|e: agent::target::TargetError| at("listen", e.to_string()))?;
            self.listen.push(parsed);
        }
        for target in &file.controllers {
            let parsed = target
                .parse()
                .map_err(|e: agent::target::TargetError| at("controllers", e.to_string()))?;
            self.controllers.push(parsed);
        }
        for (name, value) in file.trunks {
            let field = format!("trunks.{name}");
            check_trunk_name(&name).map_err(|m| at(&field, m))?;
            let interface = Interface::parse(&value).map_err(|m| at(&field, m))?;
            origins.from_file.insert(field);
            self.add_trunk(name, interface, origins)?;
        }
        for (number, value) in file.ports {
            let field = format!("ports.{number}");
            let n = parse_port_number(&number).map_err(|m| at(&field, m))?;
            let binding = match value {
                PortValue::Interface(text) => {
                    PortBinding::Interface(Interface::parse(&text).map_err(|m| at(&field, m))?)
                }
                PortValue::Legacy(table) => PortBinding::Legacy(table.into_port()),
            };
            origins.from_file.insert(field);
            self.bind_port(n, binding, origins)?;
        }
        if let Some(mode) = file.fail_mode {
            self.fail_mode = mode;
        }
        if let Some(threads) = file.datapath_threads {
            self.datapath_threads = threads;
            origins.from_file.insert("datapath_threads".into());
        }
        if let Some(cpus) = file.datapath_cpus {
            self.datapath_cpus = Some(CpuList::parse(&cpus).map_err(|m| at("datapath_cpus", m))?);
            origins.from_file.insert("datapath_cpus".into());
        }
        if let Some(ring) = file.rx_ring {
            self.rx_ring = ring;
        }
        if let Some(busy) = file.busy_poll {
            self.busy_poll = busy;
        }
        if let Some(name) = file.local_port {
            check_ifname(&name).map_err(|m| at("local_port", m))?;
            self.local_port = Some(name);
        }
        if let Some(path) = file.control_socket {
            self.control_socket = Some(path);
        }
        if let Some(addr) = file.metrics {
            self.metrics = Some(parse_metrics(&addr).map_err(|m| at("metrics", m))?);
        }
        if let Some(level) = file.log_level {
            self.log_level = parse_log_level(&level).map_err(|m| at("log_level", m))?;
        }
        if let Some(spec) = file.offload {
            self.offload = Some(OffloadSpec::parse(&spec).map_err(|m| at("offload", m))?);
        }
        if let Some(mode) = file.placement {
            self.placement = parse_placement(&mode).map_err(|m| at("placement", m))?;
        }
        if let Some(policy) = file.promotion {
            self.promotion = parse_promotion(&policy).map_err(|m| at("promotion", m))?;
        }
        for (number, file) in file.pcap {
            let field = format!("pcap.{number}");
            let n = parse_port_number(&number).map_err(|m| at(&field, m))?;
            self.captures.insert(n, file);
            origins.from_file.insert(format!("pcap.{n}"));
        }
        if let Some(bus) = &file.bus {
            bus.validate()
                .map_err(|(field, m)| at(&format!("bus.{field}"), m))?;
        }
        for (i, spec) in file.controllets.iter().enumerate() {
            let block_line = |key: &str| line_in_block(text, "[[controllets]]", i, key);
            let problem = spec.validate().err().or_else(|| {
                let earlier = file.controllets[..i].iter().any(|s| s.name == spec.name);
                earlier.then(|| {
                    (
                        "name",
                        format!("controllet `{}` is declared twice", spec.name),
                    )
                })
            });
            if let Some((field, message)) = problem {
                return Err(ConfigError {
                    file: Some(path.to_path_buf()),
                    line: block_line(field),
                    field: format!("controllets[{i}].{field}"),
                    message,
                });
            }
        }
        let host = file.controllet_host.unwrap_or_default();
        if !(1..=10_000).contains(&host.cpu_weight) {
            return Err(at(
                "controllet_host.cpu_weight",
                format!("{} is not a CPU weight (1 to 10000)", host.cpu_weight),
            ));
        }
        self.controllets = controllet_host::HostConfig {
            host,
            bus: file.bus,
            controllets: file.controllets,
        };
        if file.controller_rate_limit.is_some() {
            origins.from_file.insert("controller_rate_limit".into());
        }
        if file.controller_burst_limit.is_some() {
            origins.from_file.insert("controller_burst_limit".into());
        }
        Ok(ChannelSettings {
            tls: TlsPaths {
                private_key: file.private_key,
                certificate: file.certificate,
                ca_cert: file.ca_cert,
            },
            rate_limit: file.controller_rate_limit,
            burst_limit: file.controller_burst_limit,
        })
    }

    fn add_trunk(
        &mut self,
        name: String,
        interface: Interface,
        origins: &Origins<'_>,
    ) -> Result<(), ConfigError> {
        let field = format!("trunks.{name}");
        let message = if self.trunks.contains_key(&name) {
            Some(format!("trunk `{name}` is given twice"))
        } else {
            self.user_of(&interface.ifname)
                .map(|user| format!("interface `{}` is already {user}", interface.ifname))
        };
        if let Some(message) = message {
            return Err(origins.error(&field, message));
        }
        self.trunks.insert(name, interface);
        Ok(())
    }

    fn bind_port(
        &mut self,
        number: u32,
        binding: PortBinding,
        origins: &Origins<'_>,
    ) -> Result<(), ConfigError> {
        let field = format!("ports.{number}");
        let message = if self.ports.contains_key(&number) {
            Some(format!("port {number} is bound twice"))
        } else if let PortBinding::Interface(i) = &binding {
            self.user_of(&i.ifname)
                .map(|user| format!("interface `{}` is already {user}", i.ifname))
        } else {
            None
        };
        if let Some(message) = message {
            return Err(origins.error(&field, message));
        }
        self.ports.insert(number, binding);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings_from(text: &str, args: &[&str]) -> Result<Settings, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hairpin.toml");
        std::fs::write(&path, text).unwrap();
        let mut argv = vec!["hairpind", "--config", path.to_str().unwrap()];
        argv.extend_from_slice(args);
        Settings::from_cli(Cli::try_parse_from(argv).unwrap())
    }

    #[test]
    fn file_and_flags_merge() {
        let s = settings_from(
            "datapath_id = \"0x2a\"\nfail_mode = \"standalone\"\nlisten = [\"ptcp:6654\"]\n[ports]\n1 = \"veth0\"\n",
            &["--port", "2=veth1:xdp", "--listen", "punix:/tmp/x.sock"],
        )
        .unwrap();
        assert_eq!(s.datapath_id, 42);
        assert_eq!(s.fail_mode, FailMode::Standalone);
        assert_eq!(s.listen.len(), 2);
        let name = |n| match s.ports.get(&n) {
            Some(PortBinding::Interface(i)) => Some((i.ifname.as_str(), i.io)),
            _ => None,
        };
        assert_eq!(name(1), Some(("veth0", PortIo::AfPacket)));
        assert_eq!(name(2), Some(("veth1", PortIo::Xdp)));
        assert!(!s.busy_poll);
        assert!(settings_from("busy_poll = true\n", &[]).unwrap().busy_poll);
        assert!(settings_from("", &["--busy-poll"]).unwrap().busy_poll);
    }

    #[test]
    fn datapath_cpus_come_from_file_or_flag_and_must_be_this_process_s() {
        let first = cpus::allowed().unwrap()[0];
        let s = settings_from(&format!("datapath_cpus = \"{first}\"\n"), &[]).unwrap();
        assert_eq!(s.datapath_cpus.unwrap().for_thread(0), first);
        let s = settings_from("", &["--datapath-cpus", &first.to_string()]).unwrap();
        assert_eq!(s.datapath_cpus.unwrap().to_string(), first.to_string());
        assert_eq!(settings_from("", &[]).unwrap().datapath_cpus, None);
        // A bad list in the file: file, line and field.
        let err =
            settings_from("fail_mode = \"secure\"\ndatapath_cpus = \"3-1\"\n", &[]).unwrap_err();
        assert_eq!((err.field.as_str(), err.line), ("datapath_cpus", Some(2)));
        assert!(err.to_string().contains("backwards"), "{err}");
        // A CPU outside this process's affinity, from the file and from the flag.
        let err = settings_from("\ndatapath_cpus = \"1023\"\n", &[]).unwrap_err();
        assert_eq!((err.field.as_str(), err.line), ("datapath_cpus", Some(2)));
        assert!(err.to_string().contains("CPU 1023 is not one"), "{err}");
        let err = settings_from("", &["--datapath-cpus", "1023"]).unwrap_err();
        assert_eq!((err.field.as_str(), err.line), ("datapath_cpus", None));
    }

    #[test]
    fn tls_targets_need_key_certificate_and_ca_from_file_or_flags() {
        let err = settings_from("listen = [\"pssl:6654\"]\n", &[]).unwrap_err();
        assert_eq!(err.field, "private_key");
        assert!(err.to_string().contains("pssl:6654"), "{err}");
        let err = settings_from(
            "private_key = \"k.pem\"\ncertificate = \"c.pem\"\n",
            &["--controller", "ssl:127.0.0.1:6653"],
        )
        .unwrap_err();
        assert_eq!(err.field, "ca_cert");
        assert!(err.to_string().contains("--ca-cert"), "{err}");
        let s = settings_from(
            "private_key = \"k.pem\"\ncertificate = \"c.pem\"\nca_cert = \"file-ca.pem\"\n",
            &[
                "--listen",
                "pssl:6654:127.0.0.1",
                "--ca-cert",
                "flag-ca.pem",
            ],
        )
        .unwrap();
        assert_eq!(
            s.tls,
            Some(TlsFiles {
                private_key: "k.pem".into(),
                certificate: "c.pem".into(),
                ca_cert: "flag-ca.pem".into(),
            })
        );
        let plain = settings_from("private_key = \"k.pem\"\n", &["--listen", "ptcp:6654"]);
        assert_eq!(plain.unwrap().tls, None, "no TLS target, no TLS");
    }

    #[test]
    fn packet_in_limits_from_file_and_flags() {
        let s = settings_from("controller_rate_limit = 1000\n", &[]).unwrap();
        assert_eq!(
            s.packet_in_limit,
            Some(PacketInLimit {
                rate: 1000,
                burst: 250
            })
        );
        let s = settings_from(
            "controller_rate_limit = 1000\n",
            &["--controller-burst-limit", "10"],
        )
        .unwrap();
        assert_eq!(s.packet_in_limit.map(|l| l.burst), Some(10));
        assert_eq!(settings_from("", &[]).unwrap().packet_in_limit, None);
        let err = settings_from("datapath_id = 1\ncontroller_rate_limit = 0\n", &[]).unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.line),
            ("controller_rate_limit", Some(2))
        );
        let err = settings_from("", &["--controller-burst-limit", "10"]).unwrap_err();
        assert_eq!(err.field, "controller_burst_limit");
    }

    #[test]
    fn bad_type_names_file_line_and_field() {
        let err = settings_from("datapath_id = 1\nfail_mode = \"loud\"\n", &[]).unwrap_err();
        assert_eq!(err.line, Some(2));
        assert_eq!(err.field, "fail_mode");
        assert!(err.file.is_some());
        assert!(
            err.to_string()
                .contains("hairpin.toml:2: field `fail_mode`"),
            "{err}"
        );
    }

    #[test]
    fn unknown_field_is_refused() {
        let err = settings_from("\n\ncontroler = [\"tcp:1.2.3.4:6653\"]\n", &[]).unwrap_err();
        assert_eq!(err.line, Some(3));
        assert!(err.message.contains("controler"), "{err}");
    }

    #[test]
    fn bad_values_name_their_line() {
        let err = settings_from("listen = [\"ptcp:x\"]\n", &[]).unwrap_err();
        assert_eq!((err.line, err.field.as_str()), (Some(1), "listen"));
        let err = settings_from("[ports]\n1 = \"veth0\"\n0 = \"veth1\"\n", &[]).unwrap_err();
        assert_eq!((err.line, err.field.as_str()), (Some(3), "ports.0"));
        let err = settings_from("[ports]\n1 = \"veth0\"\n2 = \"veth0\"\n", &[]).unwrap_err();
        assert_eq!((err.line, err.field.as_str()), (Some(3), "ports.2"));
        let err = settings_from("datapath_id = \"zz\"\n", &[]).unwrap_err();
        assert_eq!((err.line, err.field.as_str()), (Some(1), "datapath_id"));
    }

    #[test]
    fn controllets_and_the_bus_are_read_with_their_errors_located() {
        let s = settings_from(
            "[bus]\nlisten = \"127.0.0.1:16950\"\n\n[[controllets]]\nname = \"lsw\"\nprogram = \"/usr/bin/true\"\nmemory = \"64M\"\n",
            &[],
        )
        .unwrap();
        assert_eq!(s.controllets.controllets.len(), 1);
        assert_eq!(
            s.controllets.bus.as_ref().unwrap().listen,
            "127.0.0.1:16950"
        );
        let err = settings_from(
            "[[controllets]]\nname = \"a\"\nprogram = \"/x\"\n\n[[controllets]]\nname = \"b\"\nprogram = \"/x\"\nmemory = \"lots\"\n",
            &[],
        )
        .unwrap_err();
        assert_eq!(
            (err.line, err.field.as_str()),
            (Some(8), "controllets[1].memory")
        );
        let err = settings_from(
            "[[controllets]]\nname = \"a\"\nprogram = \"/x\"\n[[controllets]]\nprogram = \"relative\"\nname = \"b\"\n",
            &[],
        )
        .unwrap_err();
        assert_eq!(
            (err.line, err.field.as_str()),
            (Some(5), "controllets[1].program")
        );
        let err = settings_from(
            "[[controllets]]\nname = \"a\"\nprogram = \"/x\"\n[[controllets]]\nname = \"a\"\nprogram = \"/y\"\n",
            &[],
        )
        .unwrap_err();
        assert_eq!(
            (err.line, err.field.as_str()),
            (Some(5), "controllets[1].name")
        );
        let err = settings_from("[bus]\nevents = [\"packet_in\", \"gossip\"]\n", &[]).unwrap_err();
        assert_eq!((err.line, err.field.as_str()), (Some(2), "bus.events"));
    }

    #[test]
    fn captures_need_a_bound_port() {
        let s = settings_from(
            "[ports]\n1 = \"veth0\"\n[pcap]\n1 = \"/tmp/p1.pcap\"\n",
            &[],
        )
        .unwrap();
        assert_eq!(s.captures.get(&1), Some(&PathBuf::from("/tmp/p1.pcap")));
        let err = settings_from("", &["--pcap", "3=/tmp/p3.pcap"]).unwrap_err();
        assert_eq!(err.field, "pcap.3");
        assert_eq!(err.line, None, "a flag has no line");
        let err = settings_from(
            "[ports]\n1 = \"veth0\"\n[pcap]\n7 = \"/tmp/p7.pcap\"\n",
            &[],
        )
        .unwrap_err();
        assert_eq!((err.field.as_str(), err.line), ("pcap.7", Some(4)));
        let err = settings_from(
            "datapath_threads = 2\n[ports]\n1 = \"veth0\"\n[pcap]\n1 = \"/tmp/p1.pcap\"\n",
            &[],
        )
        .unwrap_err();
        assert_eq!((err.field.as_str(), err.line), ("pcap.1", Some(5)));
    }

    #[test]
    fn datapath_threads_are_bounded_and_located() {
        for (text, field) in [
            ("datapath_threads = 0\n", "datapath_threads"),
            (
                "datapath_threads = 9223372036854775807\n",
                "datapath_threads",
            ),
            ("datapath_threads = 1025\n", "datapath_threads"),
        ] {
            let err = settings_from(text, &[]).unwrap_err();
            assert_eq!((err.field.as_str(), err.line), (field, Some(1)), "{text}");
            assert!(err.file.is_some(), "{text}");
        }
        let err =
            settings_from("datapath_threads = 4\n", &["--datapath-threads", "0"]).unwrap_err();
        assert_eq!((err.field.as_str(), err.line), ("datapath_threads", None));
        assert_eq!(
            settings_from("datapath_threads = 1024\n", &[])
                .unwrap()
                .datapath_threads,
            1024
        );
    }

    #[test]
    fn flags_parse_datapath_ids_and_ports() {
        assert_eq!(parse_datapath_id("0x10"), Ok(16));
        assert_eq!(parse_datapath_id("00:00:00:00:00:00:00:11"), Ok(17));
        assert_eq!(parse_datapath_id("00000000000000ab"), Ok(0xab));
        assert_eq!(parse_datapath_id("171"), Ok(171));
        assert!(parse_port_binding("0=eth0").is_err());
        assert!(parse_port_binding("3").is_err());
        let afpacket = |name: &str| {
            PortBinding::Interface(Interface {
                ifname: name.into(),
                io: PortIo::AfPacket,
            })
        };
        assert_eq!(parse_port_binding("3=eth0"), Ok((3, afpacket("eth0"))));
        assert_eq!(
            parse_port_binding("3=eth0:afpacket"),
            Ok((3, afpacket("eth0")))
        );
        assert!(parse_port_binding("3=eth0:dpdk").is_err());
    }

    /// Seed 000 Fig. 3: two legacy switches into one daemon, as a file and as flags.
    const HARMLESS: &str = "\
[trunks]
sw1 = \"eth1\"
sw2 = \"eth2:xdp\"

[ports]
1 = { trunk = \"sw1\", vlan = 101, name = \"Gi1/0/1\", speed_mbps = 1000 }
2 = { trunk = \"sw1\", vlan = 102 }
3 = { trunk = \"sw2\", vlan = 101, name = \"ge-0/0/1\" }
9 = { trunk = \"sw1\", vlan = \"native\" }
10 = \"eth3\"
";

    #[test]
    fn legacy_ports_on_several_trunks() {
        let s = settings_from(
            HARMLESS,
            &["--trunk", "sw3=eth4", "--port", "4=sw3:101:Fa0/1"],
        )
        .unwrap();
        let legacy = |n| match s.ports.get(&n) {
            Some(PortBinding::Legacy(p)) => {
                Some((p.trunk.as_str(), p.vlan, p.name.as_deref(), p.speed_mbps))
            }
            _ => None,
        };
        assert_eq!(
            legacy(1),
            Some(("sw1", TrunkVlan::Id(101), Some("Gi1/0/1"), Some(1000)))
        );
        assert_eq!(legacy(2), Some(("sw1", TrunkVlan::Id(102), None, None)));
        assert_eq!(
            legacy(3),
            Some(("sw2", TrunkVlan::Id(101), Some("ge-0/0/1"), None))
        );
        assert_eq!(
            legacy(4),
            Some(("sw3", TrunkVlan::Id(101), Some("Fa0/1"), None))
        );
        assert_eq!(legacy(9), Some(("sw1", TrunkVlan::Native, None, None)));
        assert!(matches!(s.ports.get(&10), Some(PortBinding::Interface(_))));
        let trunks: Vec<(&str, &str, PortIo)> = s
            .trunks
            .iter()
            .map(|(n, i)| (n.as_str(), i.ifname.as_str(), i.io))
            .collect();
        assert_eq!(
            trunks,
            [
                ("sw1", "eth1", PortIo::AfPacket),
                ("sw2", "eth2", PortIo::Xdp),
                ("sw3", "eth4", PortIo::AfPacket)
            ]
        );
    }

    #[test]
    fn legacy_port_mistakes_name_file_line_and_field() {
        let table = [
            // (the file, the line, the field, words the message must have)
            (
                "[trunks]\nt1 = \"eth1\"\n[ports]\n1 = { trunk = \"t1\", vlan = 5000 }\n",
                4,
                "ports.1.vlan",
                "not in 1..=4094",
            ),
            (
                "[trunks]\nt1 = \"eth1\"\n[ports]\n1 = { trunk = \"t1\", vlan = \"x\" }\n",
                4,
                "ports.1.vlan",
                "native",
            ),
            (
                "[trunks]\nt1 = \"eth1\"\n[ports]\n1 = { trunk = \"t1\", vlan = 7 }\n\n2 = { trunk = \"t1\", vlan = 7 }\n",
                6,
                "ports.2.vlan",
                "already port 1",
            ),
            (
                "[trunks]\nt1 = \"eth1\"\n[ports]\n1 = { trunk = \"t1\", vlan = \"native\" }\n2 = { trunk = \"t1\", vlan = \"native\" }\n",
                5,
                "ports.2.vlan",
                "VLAN native of trunk `t1` is already port 1",
            ),
            (
                "[ports]\n\n1 = { trunk = \"t9\", vlan = 7 }\n",
                3,
                "ports.1.trunk",
                "no trunk `t9`",
            ),
            (
                "[trunks]\nt1 = \"eth1\"\n[ports]\n1 = { trunk = \"t1\", vlan = 7, name = \"GigabitEthernet1/0/1\" }\n",
                4,
                "ports.1.name",
                "15 bytes",
            ),
            (
                "[trunks]\nt1 = \"eth1\"\n[ports]\n1 = { trunk = \"t1\", vlan = 7, speed_mbps = 0 }\n",
                4,
                "ports.1.speed_mbps",
                "at least 1",
            ),
            (
                "[trunks]\nt1 = \"eth1\"\n[ports]\n1 = { trunk = \"t1\", vlna = 7 }\n",
                4,
                "ports.1.vlna",
                "vlna",
            ),
            (
                "[trunks]\nt1 = \"eth1\"\n[ports]\n1 = { trunk = \"t1\" }\n",
                4,
                "ports.1",
                "vlan",
            ),
            (
                "[trunks]\nt1 = \"eth1\"\n[ports]\n1 = 7\n",
                4,
                "ports.1",
                "legacy port",
            ),
            (
                "[trunks]\nt1 = \"eth1\"\n[ports]\n1 = \"eth1\"\n",
                4,
                "ports.1",
                "already trunk `t1`",
            ),
            (
                "[trunks]\nt1 = \"eth1\"\n\"t:2\" = \"eth2\"\n",
                3,
                "trunks.t:2",
                "not a trunk name",
            ),
            (
                "[trunks]\nt1 = \"eth1\"\nt2 = \"eth1\"\n",
                3,
                "trunks.t2",
                "already trunk `t1`",
            ),
            (
                "[trunks]\nt1 = \"eth1:dpdk\"\n",
                2,
                "trunks.t1",
                "unknown port I/O",
            ),
            (
                "[trunks]\nt1 = \"eth1\"\n\n[ports.4]\ntrunk = \"t1\"\nvlan = 0\n",
                6,
                "ports.4.vlan",
                "native",
            ),
        ];
        for (text, line, field, words) in table {
            let err = settings_from(text, &[]).unwrap_err();
            assert_eq!(
                (err.line, err.field.as_str()),
                (Some(line), field),
                "{text}\n{err}"
            );
            assert!(err.file.is_some(), "{err}");
            assert!(err.message.contains(words), "{text}\n{err}");
        }
    }

    #[test]
    fn legacy_port_mistakes_in_flags_name_the_flag() {
        let err = settings_from("", &["--port", "1=t1:7"]).unwrap_err();
        assert_eq!(
            (err.file.as_ref(), err.field.as_str()),
            (None, "ports.1.trunk")
        );
        assert!(err.message.contains("--trunk t1=IFNAME"), "{err}");
        // A flag's port clashing with a file's port: the flag's field, no file.
        let err = settings_from(
            "[trunks]\nt1 = \"eth1\"\n[ports]\n1 = { trunk = \"t1\", vlan = 7 }\n",
            &["--port", "2=t1:7"],
        )
        .unwrap_err();
        assert_eq!(
            (err.file.as_ref(), err.field.as_str()),
            (None, "ports.2.vlan")
        );
        // A file's port clashing with a flag's trunk (the flags come after the file).
        let err = settings_from("[ports]\n1 = \"eth1\"\n", &["--trunk", "t1=eth1"]).unwrap_err();
        assert_eq!((err.file.as_ref(), err.field.as_str()), (None, "trunks.t1"));
        assert!(Cli::try_parse_from(["hairpind", "--port", "1=t1:4095"]).is_err());
        assert!(Cli::try_parse_from(["hairpind", "--trunk", "t1"]).is_err());
    }
}
