//! The offload planner in front of the software datapath: an [`OpSink`] that passes every op
//! on to the datapath's writer (software always holds every rule), keeps the placement up
//! to date, and publishes the hardware image after the software datapath, so that once
//! [`OpSink::publish`] returns (the barrier) both hold every change before it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use dataplane::ir::Instruction;
use dataplane::key::FlowMatch;
use dataplane::model::{FlowId, FlowLocation, FlowPlacement, Op, OpSink, Refusal};

use crate::image::{HwImage, ImagePort, PublishedImage};
use crate::placement::{PlacementStats, Planner};
use crate::profile::Profile;

/// The planner and the ports hardware forwards to.
pub struct OffloadState {
    pub planner: Planner,
    pub ports: HashMap<u32, ImagePort>,
    ports_changed: bool,
}

/// A device that holds the hardware image itself (the XDP fast path), rather than a fast
/// path reading [`Offload::image`] (the model).
pub trait Backend: Send {
    /// Writes a new image into the device; called at each publish that changed it, before
    /// the publish returns.
    fn program(&mut self, image: &HwImage);
    /// Reads the device's counters and adds what is new to the counters of the flows, ports
    /// and tables (seed 003 section 4.3's merged statistics).
    fn sync_counters(&mut self);
}

/// What the sink, the management commands and the fast path share.
pub struct Offload {
    pub profile: Arc<Profile>,
    state: Mutex<OffloadState>,
    /// The image fast paths read.
    pub image: PublishedImage,
    backend: Mutex<Option<Box<dyn Backend>>>,
}

impl Offload {
    pub fn new(planner: Planner) -> Arc<Self> {
        Arc::new(Offload {
            profile: Arc::clone(&planner.profile),
            state: Mutex::new(OffloadState {
                planner,
                ports: HashMap::new(),
                ports_changed: false,
            }),
            image: PublishedImage::default(),
            backend: Mutex::new(None),
        })
    }

    /// Hands the image to `backend` from now on (and the current one at once).
    pub fn set_backend(&self, mut backend: Box<dyn Backend>) {
        let state = self.state();
        backend.program(&HwImage::build(&state.planner, state.ports.clone()));
        *self.backend.lock().unwrap_or_else(PoisonError::into_inner) = Some(backend);
    }

    pub fn state(&self) -> MutexGuard<'_, OffloadState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Periodic work (rates, promotion); publishes the image when placement changed.
    pub fn tick(&self, now_ns: u64) {
        if let Some(b) = self
            .backend
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            b.sync_counters();
        }
        let mut state = self.state();
        state.planner.tick(now_ns);
        self.republish(&mut state);
    }

    fn republish(&self, state: &mut OffloadState) {
        if state.planner.take_changed() || std::mem::take(&mut state.ports_changed) {
            let image = HwImage::build(&state.planner, state.ports.clone());
            let mut backend = self.backend.lock().unwrap_or_else(PoisonError::into_inner);
            match backend.as_mut() {
                Some(b) => b.program(&image),
                None => self.image.store(image),
            }
        }
    }

    pub fn stats(&self) -> PlacementStats {
        self.state().planner.stats
    }
}

/// The switch core's op sink when hardware offload is on.
pub struct OffloadSink {
    inner: Box<dyn OpSink>,
    offload: Arc<Offload>,
}

impl OffloadSink {
    pub fn new(inner: Box<dyn OpSink>, offload: Arc<Offload>) -> Self {
        OffloadSink { inner, offload }
    }
}

impl OpSink for OffloadSink {
    fn apply(&mut self, op: Op) {
        {
            let mut state = self.offload.state();
            let s = &mut *state;
            match &op {
                Op::InsertFlow {
                    table,
                    id,
                    priority,
                    match_,
                    instructions,
                    counters,
                    ..
                } => s.planner.insert(
                    *table,
                    *id,
                    *priority,
                    *match_,
                    instructions,
                    Arc::clone(counters),
                ),
                Op::RemoveFlow { id, .. } => s.planner.remove(*id),
                Op::ReplaceInstructions {
                    id, instructions, ..
                } => s.planner.modify(*id, instructions),
                Op::SetPort {
                    port_no,
                    info,
                    counters,
                } => {
                    s.ports.insert(
                        *port_no,
                        ImagePort {
                            info: info.clone(),
                            counters: Arc::clone(counters),
                        },
                    );
                    s.ports_changed = true;
                }
                Op::RemovePort { port_no } => {
                    s.ports.remove(port_no);
                    s.ports_changed = true;
                }
                _ => {}
            }
        }
        self.inner.apply(op);
    }

    fn publish(&mut self) {
        self.inner.publish();
        let mut state = self.offload.state();
        self.offload.republish(&mut state);
    }

    fn admit(
        &mut self,
        table: u8,
        match_: &FlowMatch,
        instructions: &[Instruction],
        replacing: Option<FlowId>,
    ) -> Result<(), Refusal> {
        self.offload
            .state()
            .planner
            .admit(table, match_, instructions, replacing)
    }

    fn placement(&self, id: FlowId) -> Option<FlowPlacement> {
        let state = self.offload.state();
        let Some(rule) = state.planner.rule(id) else {
            return Some(FlowPlacement {
                location: FlowLocation::Software,
                hw_table: None,
                hw_packets: 0,
                hw_bytes: 0,
            });
        };
        let location = match &rule.entry {
            Some(e) if e.decides() => FlowLocation::Hardware,
            Some(_) => FlowLocation::HardwareToSoftware,
            None => FlowLocation::Software,
        };
        Some(FlowPlacement {
            location,
            hw_table: rule.entry.as_ref().map(|e| e.table as u8),
            hw_packets: rule.hw.packets.load(std::sync::atomic::Ordering::Relaxed),
            hw_bytes: rule.hw.bytes.load(std::sync::atomic::Ordering::Relaxed),
        })
    }

    fn table_capacity(&self, table: u8) -> Option<(u32, String)> {
        let tables: Vec<_> = self
            .offload
            .profile
            .tables_for(table)
            .map(|t| &self.offload.profile.tables[t])
            .collect();
        if tables.is_empty() {
            return None;
        }
        let max: u32 = tables.iter().map(|t| t.max_entries()).sum();
        let name = tables
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join("+");
        Some((max, name))
    }
}
