//! Hardware offload in the daemon (`--offload PROFILE[:BACKEND]`): the profile, the planner
//! as the switch core's op sink, the backend (the `model` stage in each datapath thread, or
//! the XDP fast path on the ports, [`xdp`]), the management commands and the periodic tick
//! that measures rates, merges the fast path's counters and promotes rules.

pub mod xdp;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use dataplane::model::OpSink;
use offload::model::{ModelCounters, ModelStage};
use offload::placement::{Mode, Planner, Policy};
use offload::profile::Profile;
use offload::sink::{Offload, OffloadSink};

use crate::config::{OffloadBackend, PortBinding, PortIo, Settings};
use crate::control::Registry;
use crate::datapath::hardware::HardwareStage;
use crate::portmap::{PortMap, Role};

/// How often rates are measured and waiting rules promoted.
const TICK: Duration = Duration::from_millis(500);

/// Offload as the daemon runs it.
pub struct Hardware {
    pub offload: Arc<Offload>,
    pub backend: OffloadBackend,
    model: Arc<ModelCounters>,
    /// How the XDP fast path runs on each interface (`xdp` backend).
    attached: std::sync::Mutex<Vec<(String, String)>>,
}

/// Loads the profile the settings name; `None` without `--offload`. A bad profile is
/// reported with its file, line and field.
pub fn load(settings: &Settings) -> Result<Option<Hardware>, String> {
    let Some(spec) = &settings.offload else {
        return Ok(None);
    };
    let profile = Profile::load(&spec.profile).map_err(|e| e.to_string())?;
    if spec.backend != OffloadBackend::Model {
        xdp::check_profile(&profile)?;
        let interfaces = settings.ports.values().filter_map(|p| match p {
            PortBinding::Interface(i) => Some(i),
            PortBinding::Legacy(_) => None,
        });
        if interfaces
            .chain(settings.trunks.values())
            .any(|i| i.io == PortIo::Xdp)
        {
            return Err("the xdp offload backend needs AF_PACKET ports (no :xdp)".into());
        }
        if !settings.trunks.is_empty() {
            return Err(
                "the xdp offload backend takes no trunks (its tables have no logical ports)".into(),
            );
        }
    }
    let mode = Mode::parse(&settings.placement).ok_or("unknown placement mode")?;
    let policy = Policy::parse(&settings.promotion).ok_or("unknown promotion policy")?;
    let planner = Planner::new(Arc::new(profile), mode, policy);
    Ok(Some(Hardware {
        offload: Offload::new(planner),
        backend: spec.backend,
        model: Arc::new(ModelCounters::default()),
        attached: std::sync::Mutex::new(Vec::new()),
    }))
}

impl Hardware {
    /// The switch core's sink: the planner in front of the datapath's writer.
    pub fn sink(&self, datapath: Box<dyn OpSink>) -> Box<dyn OpSink> {
        Box::new(OffloadSink::new(datapath, Arc::clone(&self.offload)))
    }

    /// A datapath thread's hardware stage (the `model` backend only).
    pub fn stage(&self) -> Option<HardwareStage> {
        (self.backend == OffloadBackend::Model).then(|| {
            HardwareStage::new(ModelStage::new(
                Arc::clone(&self.offload),
                Arc::clone(&self.model),
            ))
        })
    }

    /// Starts the device behind the planner: for `xdp`, loads the fast path and attaches it
    /// to every port's interface (the `model` backend runs inside the datapath threads).
    pub fn start(
        &self,
        map: &PortMap,
        shared: Arc<dataplane::shared::Shared>,
    ) -> Result<(), String> {
        if self.backend == OffloadBackend::Model {
            return Ok(());
        }
        let ports: Vec<(u32, String)> = map
            .interfaces
            .iter()
            .filter_map(|i| match i.role {
                Role::Port(port_no) => Some((port_no, i.ifname.clone())),
                Role::Trunk(_) => None,
            })
            .collect();
        let native = self.backend == OffloadBackend::Xdp;
        let backend = xdp::XdpBackend::start(&self.offload.profile, &ports, shared, native)?;
        let modes: Vec<(String, String)> = backend
            .modes
            .iter()
            .map(|(ifname, mode)| (ifname.clone(), format!("{mode:?}").to_lowercase()))
            .collect();
        for (ifname, mode) in &modes {
            crate::log!(
                crate::log::Level::Info,
                "XDP offload fast path on {ifname}: {mode} mode"
            );
        }
        *self
            .attached
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = modes;
        self.offload.set_backend(Box::new(backend));
        Ok(())
    }

    pub fn register(&self, registry: &mut Registry) {
        let model = (self.backend == OffloadBackend::Model).then(|| Arc::clone(&self.model));
        let attached = self
            .attached
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        crate::control::offload::register(registry, Arc::clone(&self.offload), model, attached);
    }

    /// A thread that ticks the planner until `stop`.
    pub fn spawn_ticker(&self, stop: Arc<AtomicBool>) -> std::io::Result<JoinHandle<()>> {
        let offload = Arc::clone(&self.offload);
        std::thread::Builder::new()
            .name("hairpin-offload".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    offload.tick(switch_core::clock::now_ns());
                    std::thread::sleep(TICK);
                }
            })
    }
}
