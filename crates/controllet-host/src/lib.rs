//! hairpind's home for controllets (InFEP): small control programs that run on the switch
//! itself, each supervised (restarted with backoff, its output kept), sandboxed (bubblewrap
//! namespaces, cgroup limits on CPU, memory and processes), with an OpenFlow 1.3 channel of
//! its own (a unix socket passed into its sandbox, or TCP in its own network namespace) and a
//! place on a NATS bus (embedded or external) where only it may publish on its subjects.
//!
//! A confinement this host lacks is never skipped silently: the controllet is refused, with
//! the missing piece named, unless its declaration accepts running without it
//! (`run_without`). Not here: what a controllet does (see the `controllet` SDK), the
//! management socket (hairpind registers [`Host`]'s operations there).

pub mod bus;
pub mod cgroup;
mod instance;
pub mod logs;
pub mod netns;
pub mod process;
pub mod sandbox;
pub mod seccomp;
pub mod spec;
pub mod supervise;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent::Agent;
use controllet::subjects::{EventKind, Switch};
use serde_json::{json, Value};

pub use spec::{BusSpec, ControlletSpec, HostSpec, Piece};

use bus::Bus;
use instance::Instance;

/// What hairpind's settings say about controllets: `[controllet_host]`, `[bus]` and
/// `[[controllets]]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostConfig {
    pub host: HostSpec,
    pub bus: Option<BusSpec>,
    pub controllets: Vec<ControlletSpec>,
}

impl HostConfig {
    /// Whether anything asks for the host: a bus or a controllet.
    pub fn wanted(&self) -> bool {
        !self.controllets.is_empty() || self.bus.as_ref().is_some_and(|b| !b.disabled)
    }
}

/// Why an operation on controllets failed, as the operator reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError(pub String);

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HostError {}

fn err(message: impl Into<String>) -> HostError {
    HostError(message.into())
}

/// One declared controllet: running, stopped, or refused.
struct Entry {
    spec: ControlletSpec,
    /// Its output across every start.
    log: Arc<Mutex<logs::Log>>,
    instance: Option<Arc<Instance>>,
    refused: Option<String>,
}

pub(crate) struct Inner {
    pub(crate) agent: Agent,
    pub(crate) switch: Switch,
    pub(crate) host: HostSpec,
    pub(crate) run_dir: PathBuf,
    pub(crate) state_dir: PathBuf,
    pub(crate) probe: cgroup::Probe,
    /// This daemon's cgroup directory name under its own cgroup.
    pub(crate) group: String,
    pub(crate) bus: Option<Bus>,
    entries: Mutex<BTreeMap<String, Entry>>,
}

/// The controllet host; cheap to clone.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

impl Host {
    /// Starts the bus (unless disabled or absent with no controllet declared) and every
    /// declared controllet. A controllet that cannot be confined is refused and listed with
    /// the reason; the switch runs on.
    pub async fn start(
        config: HostConfig,
        agent: Agent,
        datapath_id: u64,
    ) -> Result<Host, HostError> {
        let switch = Switch::new(datapath_id);
        let run_dir = config
            .host
            .run_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("/run/hairpin/dp-{}", switch.0)));
        let state_dir = config
            .host
            .state_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("/var/lib/hairpin/dp-{}", switch.0)));
        // The bus runs when asked for, or when a controllet is declared; a daemon with neither
        // starts no server (and runtime controllets then have no bus).
        let bus_spec = config.bus.clone().unwrap_or_default();
        let bus = if bus_spec.disabled || !config.wanted() {
            None
        } else {
            let bus = Bus::start(bus_spec.clone(), datapath_id, &run_dir)
                .await
                .map_err(|e| err(format!("bus: {e}")))?;
            let kinds: Vec<EventKind> = bus_spec
                .events
                .iter()
                .filter_map(|e| EventKind::from_token(e))
                .collect();
            let messages: Vec<_> = kinds
                .iter()
                .map(|&k| bus::bridge::message_kind(k))
                .collect();
            let events = agent.subscribe(&messages);
            tokio::spawn(bus::bridge::publish_events(
                bus.client.clone(),
                switch,
                kinds,
                events,
            ));
            Some(bus)
        };
        let probe = cgroup::Probe::host(&config.host.cgroup_root);
        let group = format!("hairpind-{}", std::process::id());
        for stale in cgroup::sweep_stale(&probe, &group) {
            eprintln!(
                "hairpind: removed the controllet cgroups of a daemon that is gone: {}",
                stale.display()
            );
        }
        let host = Host {
            inner: Arc::new(Inner {
                agent,
                switch,
                probe,
                host: config.host,
                run_dir,
                state_dir,
                group,
                bus,
                entries: Mutex::new(BTreeMap::new()),
            }),
        };
        if let Some(bus) = &host.inner.bus {
            let answering = host.clone();
            tokio::spawn(bus::bridge::answer_queries(
                bus.client.clone(),
                switch,
                move |query| answering.query(query),
            ));
        }
        for spec in config.controllets {
            let name = spec.name.to_string();
            if let Err(e) = host.launch(spec, true) {
                eprintln!("hairpind: controllet {name}: {e}");
            }
        }
        Ok(host)
    }

    fn entries(&self) -> MutexGuard<'_, BTreeMap<String, Entry>> {
        self.inner.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts a new controllet from its declaration (run time: `controllet/start`).
    pub fn start_new(&self, spec: ControlletSpec) -> Result<Value, HostError> {
        let name = spec.name.to_string();
        if let Some(entry) = self.entries().get(&name) {
            if entry.instance.as_ref().is_some_and(|i| !i.finished()) {
                return Err(err(format!("controllet {name} is already running")));
            }
        }
        self.launch(spec, false)?;
        self.status(&name)
    }

    /// Starts a declared controllet again (after `stop`, or after it was refused).
    pub fn start_declared(&self, name: &str) -> Result<Value, HostError> {
        let spec = {
            let entries = self.entries();
            let entry = entries.get(name).ok_or_else(|| {
                err(format!(
                    "no controllet {name} (give its program to declare it)"
                ))
            })?;
            if entry.instance.as_ref().is_some_and(|i| !i.finished()) {
                return Err(err(format!("controllet {name} is already running")));
            }
            entry.spec.clone()
        };
        self.launch(spec, false)?;
        self.status(name)
    }

    /// Confines and starts `spec`, recording it; `keep_refused` lists a refused declaration
    /// (one from the config file) instead of forgetting it.
    fn launch(&self, spec: ControlletSpec, keep_refused: bool) -> Result<(), HostError> {
        let name = spec.name.to_string();
        spec.validate()
            .map_err(|(field, message)| err(format!("field `{field}`: {message}")))?;
        let log = self
            .entries()
            .get(&name)
            .map(|e| Arc::clone(&e.log))
            .unwrap_or_else(|| Arc::new(Mutex::new(self.new_log(&name))));
        match Instance::start(&self.inner, spec.clone(), Arc::clone(&log)) {
            Ok(instance) => {
                self.entries().insert(
                    name,
                    Entry {
                        spec,
                        log,
                        instance: Some(instance),
                        refused: None,
                    },
                );
                Ok(())
            }
            Err(e) => {
                if keep_refused {
                    self.entries().insert(
                        name,
                        Entry {
                            spec,
                            log,
                            instance: None,
                            refused: Some(e.0.clone()),
                        },
                    );
                }
                Err(e)
            }
        }
    }

    /// A log kept in memory and in `<state_dir>/logs/<name>.log`, outside every sandbox.
    fn new_log(&self, name: &str) -> logs::Log {
        let dir = self.inner.state_dir.join("logs");
        let path = std::fs::create_dir_all(&dir)
            .ok()
            .map(|()| dir.join(format!("{name}.log")));
        logs::Log::new(path.as_deref())
    }

    /// Stops a controllet (it stays declared; `start NAME` runs it again).
    pub fn stop(&self, name: &str) -> Result<Value, HostError> {
        let instance = self
            .entries()
            .get(name)
            .ok_or_else(|| err(format!("no controllet {name}")))?
            .instance
            .clone();
        match instance {
            Some(instance) if !instance.finished() => {
                instance.stop();
                self.status(name)
            }
            _ => Err(err(format!("controllet {name} is not running"))),
        }
    }

    /// Every controllet's status.
    pub fn list(&self) -> Value {
        let names: Vec<String> = self.entries().keys().cloned().collect();
        Value::Array(names.iter().filter_map(|n| self.status(n).ok()).collect())
    }

    /// One controllet's status: state, pid, restarts, confinement, what the limits did.
    pub fn status(&self, name: &str) -> Result<Value, HostError> {
        let entries = self.entries();
        let entry = entries
            .get(name)
            .ok_or_else(|| err(format!("no controllet {name}")))?;
        Ok(match (&entry.instance, &entry.refused) {
            (Some(instance), _) => instance.status(),
            (None, refused) => json!({
                "name": name,
                "state": if refused.is_some() { "refused" } else { "stopped" },
                "reason": refused,
            }),
        })
    }

    /// The last `lines` lines a controllet wrote (and the host's notes about it).
    pub fn logs(&self, name: &str, lines: usize) -> Result<Vec<String>, HostError> {
        let entries = self.entries();
        let entry = entries
            .get(name)
            .ok_or_else(|| err(format!("no controllet {name}")))?;
        let mut tail = entry.log.lock().map(|l| l.tail(lines)).unwrap_or_default();
        if let (None, Some(reason)) = (&entry.instance, &entry.refused) {
            tail.push(format!("hairpind: {reason}"));
        }
        Ok(tail)
    }

    /// The bus's state, for `bus/status`.
    pub fn bus_status(&self) -> Value {
        match &self.inner.bus {
            None => json!({ "bus": "none" }),
            Some(bus) => json!({
                "bus": if bus.embedded.is_some() { "embedded" } else { "external" },
                "address": bus.addr,
                "connected": matches!(bus.client.connection_state(), async_nats::connection::State::Connected),
                "server": bus.embedded.as_ref().map(|s| s.handle.status()),
                "server_log": bus.embedded.as_ref().map(|s| {
                    s.handle.log.lock().map(|l| l.tail(20)).unwrap_or_default()
                }),
                "subjects": bus.switch.all(),
            }),
        }
    }

    /// Answers a request on `hairpin.<dpid>.ask.switch.<query>`.
    fn query(&self, query: &str) -> Value {
        match query {
            "controllets" => self.list(),
            "ports" => self.ports(),
            "features" => {
                let f = self.inner.agent.with_switch(|s| s.features());
                json!({ "datapath_id": format!("{:016x}", f.datapath_id), "n_tables": f.n_tables })
            }
            other => {
                json!({ "error": format!("no query `{other}` (controllets, ports, features)") })
            }
        }
    }

    fn ports(&self) -> Value {
        let body = self
            .inner
            .agent
            .with_switch(|s| s.multipart(&ofp::MultipartRequestBody::PortDesc, 0));
        let Ok(ofp::MultipartReplyBody::PortDesc(ports)) = body else {
            return json!([]);
        };
        Value::Array(
            ports
                .iter()
                .map(|p| {
                    json!({
                        "port_no": p.port_no,
                        "name": p.name,
                        "up": p.state.0 & ofp::PortState::LINK_DOWN.0 == 0
                            && p.config.0 & ofp::PortConfig::PORT_DOWN.0 == 0,
                    })
                })
                .collect(),
        )
    }

    /// Stops every controllet (each gets its grace period) and the embedded bus.
    pub async fn shutdown(&self) {
        let instances: Vec<Arc<Instance>> = self
            .entries()
            .values()
            .filter_map(|e| e.instance.clone())
            .collect();
        for instance in &instances {
            instance.stop();
        }
        let deadline = tokio::time::Instant::now() + supervise::GRACE + Duration::from_secs(1);
        while instances.iter().any(|i| !i.finished()) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.entries().clear();
        drop(instances);
        if let Some(bus) = &self.inner.bus {
            bus.stop();
            if let Some(server) = &bus.embedded {
                let deadline = tokio::time::Instant::now() + supervise::GRACE;
                while server.handle.status().pid.is_some() && tokio::time::Instant::now() < deadline
                {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
        cgroup::remove_group(&self.inner.probe, &self.inner.group);
    }
}
