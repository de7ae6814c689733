//! One started controllet and everything the host made for it: its confinement (which pieces
//! hold, which it runs without), its directories, its OpenFlow channel, its network namespace
//! and bus relay, its cgroup, its bus credentials, and the supervisor that keeps it running.
//! When the supervisor ends (stopped), all of it is taken down again.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent::Mastership;
use controllet::env::{BusAccess, Channel, Environment};
use cpus::CpuSet;
use serde_json::{json, Value};
use tokio::task::AbortHandle;

use crate::cgroup::{Cgroup, Controller, Limits};
use crate::logs::Log;
use crate::netns::PrivateNet;
use crate::process::{Launch, User};
use crate::sandbox::{self, Plan};
use crate::seccomp::{self, FilterFile};
use crate::spec::{ChannelKind, ControlletSpec, Isolation, Network, Piece};
use crate::supervise::{self, Handle, Lifecycle};
use crate::{err, HostError, Inner};

/// TCP port of the OpenFlow channel inside a controllet's own network namespace.
pub const CHANNEL_TCP_PORT: u16 = 6653;
/// TCP port of the bus relay inside a controllet's own network namespace.
pub const BUS_RELAY_PORT: u16 = 4222;
const SOCKET: &str = "openflow.sock";

/// What confines a controllet, piece by piece.
#[derive(Debug, Default)]
struct Confinement {
    held: Vec<Piece>,
    /// Pieces this host lacks, with the reason, that the declaration accepts.
    missing: Vec<(Piece, String)>,
}

impl Confinement {
    fn has(&self, piece: Piece) -> bool {
        self.held.contains(&piece)
    }

    /// `piece` turned out not to hold on this host, for `reason`.
    fn lose(&mut self, piece: Piece, reason: String) {
        self.held.retain(|p| *p != piece);
        self.missing.push((piece, reason));
    }
}

/// The confinements a controllet's cgroup holds, by the controller that holds each.
const CGROUP_PIECES: [(Piece, Controller); 4] = [
    (Piece::Cpu, Controller::Cpu),
    (Piece::Memory, Controller::Memory),
    (Piece::Pids, Controller::Pids),
    (Piece::Cpuset, Controller::Cpuset),
];

/// What is taken down when the controllet stops.
struct Resources {
    cgroup: Option<Cgroup>,
    netns: Option<PrivateNet>,
    /// The system-call filters bubblewrap reads at every start (held open, never read here).
    _seccomp: Vec<FilterFile>,
    tasks: Vec<AbortHandle>,
    socket: PathBuf,
}

impl Drop for Resources {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        let _ = std::fs::remove_file(&self.socket);
        // The cgroup kills what is left in it and removes itself.
    }
}

/// A started controllet.
pub struct Instance {
    spec: ControlletSpec,
    handle: Handle,
    confinement: Confinement,
    channel: Channel,
    directory: PathBuf,
    resources: Arc<Mutex<Option<Resources>>>,
    finished: Arc<AtomicBool>,
}

fn io_err(what: &Path, e: std::io::Error) -> HostError {
    err(format!("{}: {e}", what.display()))
}

fn chown(path: &Path, user: User) -> Result<(), HostError> {
    std::os::unix::fs::chown(path, Some(user.uid), Some(user.gid)).map_err(|e| io_err(path, e))
}

impl Instance {
    /// Confines and starts `spec`; refuses it, naming each piece, when this host lacks a
    /// confinement its declaration does not let it run without.
    pub(crate) fn start(
        inner: &Arc<Inner>,
        spec: ControlletSpec,
        log: Arc<Mutex<Log>>,
    ) -> Result<Arc<Instance>, HostError> {
        let name = spec.name.to_string();
        let user = User::resolve(&spec.user).map_err(|e| err(format!("field `user`: {e}")))?;
        let mut confinement = confine(inner, &spec);
        check_refusal(&spec, &confinement)?;

        // Its private directory, owned by its user; the channel's directory, owned by root.
        let directory = spec
            .directory
            .clone()
            .unwrap_or_else(|| inner.state_dir.join("controllets").join(&name));
        private_directory(&directory, user)?;
        if confinement.has(Piece::Sandbox) {
            check_visible(&spec, &directory)?;
        }
        let channel_dir = inner.run_dir.join("controllets").join(&name);
        std::fs::create_dir_all(&channel_dir).map_err(|e| io_err(&channel_dir, e))?;
        std::fs::set_permissions(&channel_dir, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| io_err(&channel_dir, e))?;

        // The OpenFlow channel: a unix socket only its user may connect to.
        let socket = channel_dir.join(SOCKET);
        let _ = std::fs::remove_file(&socket);
        let unix =
            std::os::unix::net::UnixListener::bind(&socket).map_err(|e| io_err(&socket, e))?;
        chown(&socket, user)?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| io_err(&socket, e))?;
        unix.set_nonblocking(true).map_err(|e| io_err(&socket, e))?;
        let unix = tokio::net::UnixListener::from_std(unix).map_err(|e| io_err(&socket, e))?;
        let mut tasks = Vec::new();
        let agent = inner.agent.clone();
        let mastership = if spec.may_be_master {
            Mastership::Allowed
        } else {
            Mastership::Refused
        };
        tasks.push(
            tokio::spawn(async move { agent.serve_unix(unix, mastership).await }).abort_handle(),
        );

        // Its own network namespace, with the bus relay and the TCP channel in it.
        let mut netns = None;
        if confinement.has(Piece::Network) {
            let mut ports = Vec::new();
            if inner.bus.is_some() {
                ports.push(BUS_RELAY_PORT);
            }
            if spec.channel == ChannelKind::Tcp {
                ports.push(CHANNEL_TCP_PORT);
            }
            match PrivateNet::create(&ports) {
                Ok(mut net) => {
                    let mut listeners = std::mem::take(&mut net.listeners).into_iter();
                    if let Some(bus) = &inner.bus {
                        let listener = tokio_listener(listeners.next())?;
                        let target = bus.addr.clone();
                        tasks.push(
                            tokio::spawn(crate::bus::relay::relay(listener, target)).abort_handle(),
                        );
                    }
                    if spec.channel == ChannelKind::Tcp {
                        let listener = tokio_listener(listeners.next())?;
                        let agent = inner.agent.clone();
                        tasks.push(
                            tokio::spawn(
                                async move { agent.serve_tcp(listener, mastership).await },
                            )
                            .abort_handle(),
                        );
                    }
                    netns = Some(net);
                }
                Err(e) => {
                    confinement.lose(
                        Piece::Network,
                        format!("cannot make a network namespace: {e}"),
                    );
                    check_refusal(&spec, &confinement)?;
                }
            }
        }

        // Its cgroup.
        let affinity = spec.cpu_affinity.as_ref().map(|a| &a.0);
        let limits = Limits {
            cpus: confinement.has(Piece::Cpu).then_some(spec.cpu.0),
            memory: confinement.has(Piece::Memory).then_some(spec.memory.0),
            pids: confinement.has(Piece::Pids).then_some(spec.pids),
            cpuset: affinity.filter(|_| confinement.has(Piece::Cpuset)).cloned(),
            group_weight: inner.host.cpu_weight,
        };
        let unlimited = limits.cpus.is_none()
            && limits.memory.is_none()
            && limits.pids.is_none()
            && limits.cpuset.is_none();
        let cgroup = if unlimited {
            None
        } else {
            let mut created = Cgroup::create(&inner.probe, &inner.group, &name, &limits);
            if let (Err(e), Some(_)) = (&created, &limits.cpuset) {
                // A placement the kernel refuses (a CPU gone offline, another cpuset's
                // exclusive CPU) costs the cpuset alone, not the limits.
                let limits = Limits {
                    cpuset: None,
                    ..limits.clone()
                };
                let without = Cgroup::create(&inner.probe, &inner.group, &name, &limits);
                if without.is_ok() {
                    confinement.lose(Piece::Cpuset, format!("cannot make its cpuset: {e}"));
                    check_refusal(&spec, &confinement)?;
                }
                created = without;
            }
            match created {
                Ok(cgroup) => Some(cgroup),
                Err(e) => {
                    for (piece, _) in CGROUP_PIECES {
                        if confinement.has(piece) {
                            confinement.lose(piece, format!("cannot make its cgroup: {e}"));
                        }
                    }
                    check_refusal(&spec, &confinement)?;
                    None
                }
            }
        };

        let channel = match (spec.channel, confinement.has(Piece::Sandbox)) {
            (ChannelKind::Tcp, _) => Channel::Tcp(format!("127.0.0.1:{CHANNEL_TCP_PORT}")),
            (ChannelKind::Unix, true) => {
                Channel::Unix(Path::new(sandbox::CHANNEL_DIR).join(SOCKET))
            }
            (ChannelKind::Unix, false) => Channel::Unix(socket.clone()),
        };
        let seccomp = if confinement.has(Piece::Seccomp) {
            match seccomp::programs(&spec.allow_syscalls)
                .and_then(|ps| ps.iter().map(FilterFile::new).collect())
            {
                Ok(files) => files,
                Err(e) => {
                    confinement.lose(Piece::Seccomp, e.to_string());
                    check_refusal(&spec, &confinement)?;
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        let seccomp_fds: Vec<_> = seccomp.iter().map(FilterFile::fd).collect();
        let argv = if confinement.has(Piece::Sandbox) {
            Plan {
                bwrap: inner.host.bwrap.clone(),
                name: name.clone(),
                directory: directory.clone(),
                channel_dir,
                read_only: spec.read_only.clone(),
                program: spec.program.clone(),
                args: spec.args.clone(),
                seccomp_fds: seccomp_fds.clone(),
            }
            .argv(Path::new("/"))
        } else {
            std::iter::once(spec.program.clone().into_os_string())
                .chain(spec.args.iter().map(Into::into))
                .collect()
        };
        let resources = Resources {
            cgroup,
            netns,
            _seccomp: seccomp,
            tasks,
            socket,
        };
        let (handle, stopped) = Handle::new(log);
        for (piece, reason) in &confinement.missing {
            handle.note(&format!("runs without {piece}: {reason}"));
        }
        let launch = Launch {
            argv,
            env: Vec::new(),
            directory: directory.clone(),
            user,
            cgroup_fds: resources
                .cgroup
                .as_ref()
                .map(Cgroup::procs_fds)
                .unwrap_or_default(),
            netns_fd: resources.netns.as_ref().map(PrivateNet::fd),
            inherit_fds: seccomp_fds,
            affinity: affinity.map(CpuSet::of),
        };
        let instance = Arc::new(Instance {
            spec,
            handle: handle.clone(),
            confinement,
            channel,
            directory,
            resources: Arc::new(Mutex::new(Some(resources))),
            finished: Arc::new(AtomicBool::new(false)),
        });
        tokio::spawn(run(
            Arc::clone(inner),
            Arc::clone(&instance),
            launch,
            stopped,
        ));
        Ok(instance)
    }

    pub fn stop(&self) {
        self.handle.stop();
    }

    /// Whether its supervisor has ended and its resources are gone.
    pub fn finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    pub fn status(&self) -> Value {
        let run = self.handle.status();
        let usage = self.resources.lock().ok().and_then(|r| {
            r.as_ref()
                .and_then(|r| r.cgroup.as_ref().map(Cgroup::usage))
        });
        let missing: serde_json::Map<String, Value> = self
            .confinement
            .missing
            .iter()
            .map(|(p, r)| (p.to_string(), json!(r)))
            .collect();
        json!({
            "name": self.spec.name,
            "state": run.state,
            "pid": run.pid,
            "restarts": run.restarts,
            "last_exit": run.last_exit,
            "uptime_s": run.pid.map(|_| run.since.elapsed().as_secs_f64()),
            "isolation": self.spec.isolation,
            "confined": self.confinement.held,
            "missing": missing,
            "usage": usage,
            "channel": self.channel.to_string(),
            "directory": self.directory,
            "program": self.spec.program,
            "cpu_affinity": self.spec.cpu_affinity,
        })
    }
}

/// Makes the controllet's private directory, or takes an existing one only if its user
/// already owns it: hairpind never hands an existing directory (`/etc`, another user's home)
/// over to a controllet.
fn private_directory(directory: &Path, user: User) -> Result<(), HostError> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(directory) {
        Ok(m) if m.is_dir() && m.uid() == user.uid => Ok(()),
        Ok(m) => Err(err(format!(
            "field `directory`: {} exists and is not a directory of uid {} (it belongs to uid {}); give the controllet a directory of its own",
            directory.display(),
            user.uid,
            m.uid()
        ))),
        Err(_) => {
            std::fs::create_dir_all(directory).map_err(|e| io_err(directory, e))?;
            chown(directory, user)?;
            std::fs::set_permissions(directory, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| io_err(directory, e))
        }
    }
}

/// Refuses a program the sandbox would not show (bubblewrap would fail at every restart).
fn check_visible(spec: &ControlletSpec, directory: &Path) -> Result<(), HostError> {
    let shown = ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"];
    let visible = shown.iter().any(|p| spec.program.starts_with(p))
        || spec.program.starts_with(directory)
        || spec.read_only.iter().any(|p| spec.program.starts_with(p));
    if visible {
        Ok(())
    } else {
        Err(err(format!(
            "field `program`: {} is not visible in the sandbox (it shows /usr, /etc, its directory and the read_only paths): add its directory to read_only",
            spec.program.display()
        )))
    }
}

fn tokio_listener(
    listener: Option<std::net::TcpListener>,
) -> Result<tokio::net::TcpListener, HostError> {
    let listener = listener.ok_or_else(|| err("network namespace without its listener"))?;
    listener
        .set_nonblocking(true)
        .and_then(|()| tokio::net::TcpListener::from_std(listener))
        .map_err(|e| err(format!("listener in the network namespace: {e}")))
}

/// Which pieces hold on this host for `spec`, and why the others do not.
fn confine(inner: &Inner, spec: &ControlletSpec) -> Confinement {
    let mut c = Confinement::default();
    let mut piece = |p: Piece, result: Result<(), String>| match result {
        Ok(()) => c.held.push(p),
        Err(reason) => c.missing.push((p, reason)),
    };
    if spec.isolation == Isolation::Sandbox {
        let bwrap = &inner.host.bwrap;
        let userns = std::fs::read_to_string("/proc/sys/user/max_user_namespaces")
            .map_or(true, |n| n.trim() != "0");
        let sandbox = if !is_executable(bwrap) {
            Err(format!(
                "no bubblewrap at {} (Debian package bubblewrap)",
                bwrap.display()
            ))
        } else if !userns {
            Err("user namespaces are disabled (user.max_user_namespaces = 0)".into())
        } else {
            Ok(())
        };
        let seccomp = match sandbox {
            Ok(()) => seccomp::available(),
            Err(_) => Err("bubblewrap loads the filter, and there is no sandbox".into()),
        };
        piece(Piece::Sandbox, sandbox);
        for (p, controller) in CGROUP_PIECES {
            if p == Piece::Cpuset && spec.cpu_affinity.is_none() {
                continue;
            }
            piece(
                p,
                inner
                    .probe
                    .place(controller)
                    .as_ref()
                    .map(|_| ())
                    .map_err(Clone::clone),
            );
        }
        if spec.network == Network::Private {
            piece(Piece::Network, Ok(()));
        }
        piece(Piece::Seccomp, seccomp);
    }
    if let Some(bus) = &inner.bus {
        let confined = bus.embedded.is_some() || spec.bus_password_file.is_some();
        piece(
            Piece::Bus,
            if confined {
                Ok(())
            } else {
                Err(
                    "an external bus and no bus_password_file: nothing confines what it publishes"
                        .into(),
                )
            },
        );
    }
    c
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Refuses `spec` when a missing piece is not in its `run_without`.
fn check_refusal(spec: &ControlletSpec, c: &Confinement) -> Result<(), HostError> {
    let refused: Vec<String> = c
        .missing
        .iter()
        .filter(|(p, _)| !spec.run_without.contains(p))
        .map(|(p, reason)| format!("{p} ({reason})"))
        .collect();
    if refused.is_empty() {
        return Ok(());
    }
    Err(err(format!(
        "refused: this host lacks {}; a controllet runs unconfined only if its run_without lists what it may lack",
        refused.join(", ")
    )))
}

/// Admits the controllet to the bus, then supervises it until it is stopped, telling the bus
/// when it joins and leaves; then takes its resources down.
async fn run(
    inner: Arc<Inner>,
    instance: Arc<Instance>,
    mut launch: Launch,
    stopped: tokio::sync::watch::Receiver<bool>,
) {
    let name = instance.spec.name.to_string();
    let credentials = match &inner.bus {
        Some(bus) => match bus.admit(&instance.spec).await {
            Ok(credentials) => credentials,
            Err(e) => {
                instance
                    .handle
                    .note(&format!("cannot admit it to the bus: {e}"));
                finish(&inner, &instance);
                return;
            }
        },
        None => None,
    };
    let bus_url = inner.bus.as_ref().map(|bus| {
        if instance.confinement.has(Piece::Network) {
            format!("nats://127.0.0.1:{BUS_RELAY_PORT}")
        } else {
            format!("nats://{}", bus.addr)
        }
    });
    let env = Environment {
        name: name.clone(),
        datapath_id: inner.switch.0 .0,
        openflow: instance.channel.clone(),
        bus: bus_url.map(|url| BusAccess { url, credentials }),
    };
    launch.env = vec![
        ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
        ("HOME".into(), instance.directory.display().to_string()),
        ("LANG".into(), "C.UTF-8".into()),
    ];
    launch.env.extend(
        instance
            .spec
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    launch
        .env
        .extend(env.to_vars().into_iter().map(|(k, v)| (k.to_string(), v)));

    let resources = Arc::clone(&instance.resources);
    let terminate = move |pid: u32| {
        let cgroup_pids = resources
            .lock()
            .ok()
            .and_then(|r| r.as_ref().and_then(|r| r.cgroup.as_ref().map(Cgroup::pids)));
        match cgroup_pids {
            // Everything but bubblewrap itself, whose death would SIGKILL the rest at once.
            Some(pids) => {
                for p in pids.into_iter().filter(|&p| p != pid as i32) {
                    // SAFETY: kill(2) on a pid read from the controllet's cgroup.
                    unsafe { libc::kill(p, libc::SIGTERM) };
                }
            }
            // SAFETY: kill(2) on the process group of the child this host started (setsid).
            None => unsafe {
                libc::kill(-(pid as i32), libc::SIGTERM);
            },
        }
    };
    let lifecycle = {
        let inner = Arc::clone(&inner);
        let name = name.clone();
        move |event: Lifecycle| {
            let inner = Arc::clone(&inner);
            let name = name.clone();
            async move {
                let Some(bus) = &inner.bus else { return };
                let (what, body) = match event {
                    Lifecycle::Started { pid, restarts } => (
                        "joined",
                        json!({ "name": name, "pid": pid, "restarts": restarts }),
                    ),
                    Lifecycle::Ended { exit } => ("left", json!({ "name": name, "exit": exit })),
                };
                let subject = bus.switch.controllet(what);
                let _ = bus.client.publish(subject, body.to_string().into()).await;
            }
        }
    };
    supervise::supervise(
        instance.handle.clone(),
        stopped,
        instance.spec.restart,
        || crate::process::spawn(&launch),
        terminate,
        lifecycle,
    )
    .await;
    finish(&inner, &instance);
}

fn finish(inner: &Inner, instance: &Instance) {
    if let Some(bus) = &inner.bus {
        bus.forget(instance.spec.name.as_str());
    }
    let resources = instance.resources.lock().ok().and_then(|mut r| r.take());
    let finished = Arc::clone(&instance.finished);
    // Emptying and removing the cgroup may wait for exiting processes: not on the runtime's
    // thread, which serves every OpenFlow connection.
    tokio::task::spawn_blocking(move || {
        drop(resources);
        finished.store(true, Ordering::Release);
    });
}
