//! Daemon settings from the command line and an optional TOML file. The file is read first and
//! the command line adds to it (repeatable flags append, single-valued flags override), so a unit
//! file can hold the site settings and an operator can still add a port by hand.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use agent::target::{ControllerTarget, ListenTarget};
use clap::Parser;
use serde::Deserialize;

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

/// How a port's packets reach the daemon.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PortIo {
    /// AF_PACKET rings (see `rx_ring`).
    #[default]
    AfPacket,
    /// AF_XDP in generic mode, falling back to AF_PACKET when it cannot be set up.
    Xdp,
}

/// A Linux interface bound to an OpenFlow port: `IFNAME`, `IFNAME:afpacket` or `IFNAME:xdp`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortBinding {
    pub ifname: String,
    pub io: PortIo,
}

impl PortBinding {
    fn parse(s: &str) -> Result<Self, String> {
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
    /// Passive OpenFlow listener: ptcp:PORT[:IP] or punix:PATH (repeatable; without any,
    /// punix:/run/hairpin/hairpind.sock).
    #[arg(long = "listen", value_name = "TARGET")]
    pub listen: Vec<ListenTarget>,
    /// Controller to connect to: tcp:IP:PORT or unix:PATH (repeatable).
    #[arg(long = "controller", value_name = "TARGET")]
    pub controllers: Vec<ControllerTarget>,
    /// OpenFlow port number bound to a Linux interface: N=IFNAME[:xdp] (repeatable).
    #[arg(long = "port", value_name = "N=IFNAME[:xdp]", value_parser = parse_port_binding)]
    pub ports: Vec<(u32, PortBinding)>,
    /// Behaviour without a controller.
    #[arg(long, value_enum)]
    pub fail_mode: Option<FailMode>,
    /// Number of datapath threads.
    #[arg(long, value_name = "N")]
    pub datapath_threads: Option<usize>,
    /// Receive ring kind of the ports.
    #[arg(long, value_enum)]
    pub rx_ring: Option<RxRing>,
    /// Create a TAP device of this name as the OpenFlow LOCAL port (the host's own stack).
    #[arg(long, value_name = "IFNAME")]
    pub local_port: Option<String>,
    /// Capture every frame received or sent on port N into a pcap file (repeatable).
    #[arg(long = "pcap", value_name = "N=FILE", value_parser = parse_capture)]
    pub captures: Vec<(u32, PathBuf)>,
    /// Unix socket for management commands (hairpinctl; default /run/hairpin/hairpind.ctl).
    #[arg(long, value_name = "PATH")]
    pub control_socket: Option<PathBuf>,
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
    #[serde(default)]
    ports: BTreeMap<String, String>,
    fail_mode: Option<FailMode>,
    datapath_threads: Option<usize>,
    rx_ring: Option<RxRing>,
    local_port: Option<String>,
    #[serde(default)]
    pcap: BTreeMap<String, PathBuf>,
    control_socket: Option<PathBuf>,
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
    pub ports: BTreeMap<u32, PortBinding>,
    pub fail_mode: FailMode,
    pub datapath_threads: usize,
    pub rx_ring: RxRing,
    /// TAP device serving as OFPP_LOCAL, if any.
    pub local_port: Option<String>,
    /// Ports whose traffic is captured, with the pcap file.
    pub captures: BTreeMap<u32, PathBuf>,
    /// Where management commands are served, when given; else [`DEFAULT_CONTROL_SOCKET`]
    /// unless another daemon serves that one.
    pub control_socket: Option<PathBuf>,
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
        .ok_or_else(|| format!("`{s}`: a port is N=IFNAME[:xdp]"))?;
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

/// Linux interface names are 1 to 15 bytes without '/' or whitespace.
fn check_ifname(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 15 || name.contains(['/', ' ', '\t', '\n']) {
        return Err(format!("`{name}` is not a Linux interface name"));
    }
    Ok(())
}

/// 1-based line of a byte offset in text.
fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset).map_or(0, |t| t.matches('\n').count()) + 1
}

/// Line on which `key = ...` (or `"key" = ...`) is written, used for errors that arise after
/// deserialising (values that are well-typed but invalid).
fn line_of_key(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            let line = line.trim_start();
            let rest = line
                .strip_prefix(key)
                .or_else(|| line.strip_prefix(&format!("\"{key}\"")));
            rest.is_some_and(|r| r.trim_start().starts_with('='))
        })
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

impl Settings {
    /// Merges the file named by `--config` (if any) with the flags and validates the result.
    pub fn from_cli(cli: Cli) -> Result<Self, ConfigError> {
        let mut settings = Settings {
            datapath_id: 1,
            listen: Vec::new(),
            controllers: Vec::new(),
            ports: BTreeMap::new(),
            fail_mode: FailMode::Secure,
            datapath_threads: 1,
            rx_ring: RxRing::default(),
            local_port: None,
            captures: BTreeMap::new(),
            control_socket: None,
            controllets: controllet_host::HostConfig::default(),
            offload: None,
            placement: "algorithm1".into(),
            promotion: "fcfs".into(),
        };
        if let Some(path) = &cli.config {
            let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
                file: Some(path.clone()),
                line: None,
                field: String::new(),
                message: format!("cannot read: {e}"),
            })?;
            settings.merge_file(path, &text)?;
        }
        if let Some(id) = cli.datapath_id {
            settings.datapath_id = id;
        }
        settings.listen.extend(cli.listen);
        settings.controllers.extend(cli.controllers);
        for (number, binding) in cli.ports {
            settings.bind_port(number, binding, None)?;
        }
        if let Some(mode) = cli.fail_mode {
            settings.fail_mode = mode;
        }
        if let Some(threads) = cli.datapath_threads {
            settings.datapath_threads = threads;
        }
        if let Some(ring) = cli.rx_ring {
            settings.rx_ring = ring;
        }
        if let Some(name) = cli.local_port {
            check_ifname(&name).map_err(|message| ConfigError {
                file: None,
                line: None,
                field: "local_port".into(),
                message,
            })?;
            settings.local_port = Some(name);
        }
        settings.captures.extend(cli.captures);
        if let Some(path) = cli.control_socket {
            settings.control_socket = Some(path);
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
        if settings.datapath_threads == 0 {
            return Err(ConfigError {
                file: None,
                line: None,
                field: "datapath_threads".into(),
                message: "must be at least 1".into(),
            });
        }
        if let Some(unknown) = settings
            .captures
            .keys()
            .find(|n| !settings.ports.contains_key(n))
        {
            return Err(ConfigError {
                file: None,
                line: None,
                field: format!("pcap.{unknown}"),
                message: format!("port {unknown} is not bound to an interface"),
            });
        }
        if !settings.captures.is_empty() && settings.datapath_threads > 1 {
            return Err(ConfigError {
                file: None,
                line: None,
                field: "pcap".into(),
                message: "captures need datapath_threads = 1 (one writer per file)".into(),
            });
        }
        let xdp = settings.ports.values().any(|p| p.io == PortIo::Xdp);
        if xdp && settings.datapath_threads > 1 {
            return Err(ConfigError {
                file: None,
                line: None,
                field: "datapath_threads".into(),
                message: "AF_XDP ports serve one datapath thread (one socket per queue)".into(),
            });
        }
        Ok(settings)
    }

    fn merge_file(&mut self, path: &Path, text: &str) -> Result<(), ConfigError> {
        let file = parse_file_text(path, text)?;
        let at = |field: &str, key: &str, message: String| ConfigError {
            file: Some(path.to_path_buf()),
            line: line_of_key(text, key),
            field: field.to_string(),
            message,
        };
        if let Some(id) = file.datapath_id {
            self.datapath_id = match id {
                DatapathIdSetting::Number(n) => n,
                DatapathIdSetting::Text(s) => {
                    parse_datapath_id(&s).map_err(|m| at("datapath_id", "datapath_id", m))?
                }
            };
        }
        for target in &file.listen {
            let parsed = target
                .parse()
                .map_err(|e: agent::target::TargetError| at("listen", "listen", e.to_string()))?;
            self.listen.push(parsed);
        }
        for target in &file.controllers {
            let parsed = target.parse().map_err(|e: agent::target::TargetError| {
                at("controllers", "controllers", e.to_string())
            })?;
            self.controllers.push(parsed);
        }
        for (number, value) in file.ports {
            let field = format!("ports.{number}");
            let n = parse_port_number(&number).map_err(|m| at(&field, &number, m))?;
            let binding = PortBinding::parse(&value).map_err(|m| at(&field, &number, m))?;
            self.bind_port(n, binding, Some((path, text, &number)))?;
        }
        if let Some(mode) = file.fail_mode {
            self.fail_mode = mode;
        }
        if let Some(threads) = file.datapath_threads {
            self.datapath_threads = threads;
        }
        if let Some(ring) = file.rx_ring {
            self.rx_ring = ring;
        }
        if let Some(name) = file.local_port {
            check_ifname(&name).map_err(|m| at("local_port", "local_port", m))?;
            self.local_port = Some(name);
        }
        if let Some(path) = file.control_socket {
            self.control_socket = Some(path);
        }
        if let Some(spec) = file.offload {
            self.offload =
                Some(OffloadSpec::parse(&spec).map_err(|m| at("offload", "offload", m))?);
        }
        if let Some(mode) = file.placement {
            self.placement = parse_placement(&mode).map_err(|m| at("placement", "placement", m))?;
        }
        if let Some(policy) = file.promotion {
            self.promotion =
                parse_promotion(&policy).map_err(|m| at("promotion", "promotion", m))?;
        }
        for (number, file) in file.pcap {
            let field = format!("pcap.{number}");
            let n = parse_port_number(&number).map_err(|m| at(&field, &number, m))?;
            self.captures.insert(n, file);
        }
        if let Some(bus) = &file.bus {
            bus.validate()
                .map_err(|(field, m)| at(&format!("bus.{field}"), field, m))?;
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
                "cpu_weight",
                format!("{} is not a CPU weight (1 to 10000)", host.cpu_weight),
            ));
        }
        self.controllets = controllet_host::HostConfig {
            host,
            bus: file.bus,
            controllets: file.controllets,
        };
        Ok(())
    }

    fn bind_port(
        &mut self,
        number: u32,
        binding: PortBinding,
        origin: Option<(&Path, &str, &str)>,
    ) -> Result<(), ConfigError> {
        let clash = self
            .ports
            .iter()
            .find(|(n, other)| **n != number && other.ifname == binding.ifname)
            .map(|(n, _)| *n);
        let message = if self.ports.contains_key(&number) {
            Some(format!("port {number} is bound twice"))
        } else {
            clash.map(|other| format!("interface `{}` is already port {other}", binding.ifname))
        };
        if let Some(message) = message {
            return Err(ConfigError {
                file: origin.map(|(p, _, _)| p.to_path_buf()),
                line: origin.and_then(|(_, text, key)| line_of_key(text, key)),
                field: format!("ports.{number}"),
                message,
            });
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
        let name = |n| s.ports.get(&n).map(|p| (p.ifname.as_str(), p.io));
        assert_eq!(name(1), Some(("veth0", PortIo::AfPacket)));
        assert_eq!(name(2), Some(("veth1", PortIo::Xdp)));
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
    }

    #[test]
    fn flags_parse_datapath_ids_and_ports() {
        assert_eq!(parse_datapath_id("0x10"), Ok(16));
        assert_eq!(parse_datapath_id("00:00:00:00:00:00:00:11"), Ok(17));
        assert_eq!(parse_datapath_id("00000000000000ab"), Ok(0xab));
        assert_eq!(parse_datapath_id("171"), Ok(171));
        assert!(parse_port_binding("0=eth0").is_err());
        assert!(parse_port_binding("3").is_err());
        let afpacket = |name: &str| PortBinding {
            ifname: name.into(),
            io: PortIo::AfPacket,
        };
        assert_eq!(parse_port_binding("3=eth0"), Ok((3, afpacket("eth0"))));
        assert_eq!(
            parse_port_binding("3=eth0:afpacket"),
            Ok((3, afpacket("eth0")))
        );
        assert!(parse_port_binding("3=eth0:dpdk").is_err());
    }
}
