//! The switch core: the one source of truth for OpenFlow state (flow tables, groups, meters,
//! ports, packet templates). It validates every change before making it, so a refused message
//! leaves the state as it was, and mirrors each accepted change into the datapath as an
//! incremental op. [`Switch::publish`] makes every change so far visible to the datapath: the
//! agent calls it before a BARRIER_REPLY.

pub mod clock;
pub mod features;
pub mod flows;
pub mod groups;
pub mod meters;
pub mod placement;
pub mod ports;
mod stats;
pub mod templates;
pub mod timers;
pub mod translate;
pub mod validate;

use std::sync::Arc;

use dataplane::counters::{FlowCounters, GroupCounters};
use dataplane::datapath::{DatapathConfig, DatapathReaderFactory, DatapathWriter};
use dataplane::key::FlowMatch;
use dataplane::model::{self as dp, FlowId, Op, OpSink};
use dataplane::shared::Shared;
use ofp::{
    BadMatchCode, BadRequestCode, FlowMod, FlowModCommand, FlowModFailedCode, FlowModFlags,
    FlowRemoved, GroupMod, GroupModCommand, MeterMod, MeterModCommand, OfpError, PacketOut,
    PortMod, PortStatus, SwitchConfig, SwitchFeatures, TableMod, TableModFailedCode,
};

use flows::{FlowEntry, FlowTable, RemovedReason, Selector};
use groups::{GroupEntry, GroupTable};
use meters::{MeterEntry, MeterTable};
use ports::PortTable;
use validate::{check_actions, check_instructions, ActionContext, Resources};

/// Largest number of entries one flow table holds (reported in table features).
pub const MAX_FLOWS_PER_TABLE: u32 = 1 << 20;

/// Static settings of a switch instance.
#[derive(Clone, Debug)]
pub struct SwitchSettings {
    pub datapath_id: u64,
    pub n_tables: u8,
    pub n_buffers: u32,
}

/// A packet-out or a buffered packet released by a flow-mod, for a datapath thread to run.
#[derive(Clone, Debug)]
pub struct PacketOutJob {
    pub in_port: u32,
    pub actions: Vec<dataplane::ir::Action>,
    pub frame: Vec<u8>,
}

/// Where packet-outs go: the daemon hands them to a datapath thread, tests collect them.
pub trait PacketOutQueue: Send {
    fn submit(&mut self, job: PacketOutJob);
}

/// Drops every packet-out: for a switch whose packets nobody sends (the control path's tests
/// and benchmarks).
pub struct DiscardPacketOuts;

impl PacketOutQueue for DiscardPacketOuts {
    fn submit(&mut self, _job: PacketOutJob) {}
}

/// Whole-switch OpenFlow state.
pub struct Switch {
    settings: SwitchSettings,
    config: SwitchConfig,
    tables: Vec<FlowTable>,
    groups: GroupTable,
    meters: MeterTable,
    ports: PortTable,
    templates: templates::TemplateTable,
    timers: timers::TimerTable,
    /// Where every change to the datapath goes.
    sink: Box<dyn OpSink>,
    /// The datapath's counters, buffers and MAC table.
    shared: Arc<Shared>,
    packet_outs: Box<dyn PacketOutQueue>,
    /// Where timers run; without one, TIMER_MOD is refused as unsupported.
    timer_queue: Option<Box<dyn timers::TimerQueue>>,
    next_flow_id: u64,
    dirty: bool,
}

struct SwitchResources<'a> {
    n_tables: u8,
    groups: &'a GroupTable,
    meters: &'a MeterTable,
    templates: &'a templates::TemplateTable,
}

impl Resources for SwitchResources<'_> {
    fn n_tables(&self) -> u8 {
        self.n_tables
    }
    fn group_exists(&self, group_id: u32) -> bool {
        self.groups.contains(group_id)
    }
    fn meter_exists(&self, meter_id: u32) -> bool {
        self.meters.contains(meter_id)
    }
    fn template_exists(&self, template_id: u32) -> bool {
        self.templates.contains(template_id)
    }
}

fn flow_removed(
    table_id: u8,
    entry: &FlowEntry,
    reason: RemovedReason,
    now_ns: u64,
) -> FlowRemoved {
    let (packet_count, byte_count) = entry.counts();
    let (duration_sec, duration_nsec) = clock::duration(entry.created_ns, now_ns);
    FlowRemoved {
        cookie: entry.cookie,
        priority: entry.priority,
        reason,
        table_id,
        duration_sec,
        duration_nsec,
        idle_timeout: entry.idle_timeout,
        hard_timeout: entry.hard_timeout,
        packet_count,
        byte_count,
        match_: entry.match_.clone(),
    }
}

impl Switch {
    /// A switch over a new datapath made from `config`; its tables and packet buffers are the
    /// datapath's. `sink` receives the datapath's writer and returns what the switch writes
    /// its changes to: the writer itself, or a planner in front of it.
    pub fn with_datapath(
        datapath_id: u64,
        config: DatapathConfig,
        sink: impl FnOnce(DatapathWriter) -> Box<dyn OpSink>,
        packet_outs: Box<dyn PacketOutQueue>,
    ) -> (Switch, DatapathReaderFactory) {
        let settings = SwitchSettings {
            datapath_id,
            n_tables: config.n_tables,
            n_buffers: u32::from(config.buffer_slots),
        };
        let (writer, readers) = dataplane::datapath::new(config);
        let shared = Arc::clone(writer.shared());
        let sink = sink(writer);
        let tables = (0..settings.n_tables)
            .map(|id| FlowTable::new(id, MAX_FLOWS_PER_TABLE))
            .collect();
        let switch = Switch {
            settings,
            config: SwitchConfig {
                flags: 0,
                miss_send_len: ofp::OFP_DEFAULT_MISS_SEND_LEN,
            },
            tables,
            groups: GroupTable::default(),
            meters: MeterTable::default(),
            ports: PortTable::default(),
            templates: templates::TemplateTable::default(),
            timers: timers::TimerTable::default(),
            sink,
            shared,
            packet_outs,
            timer_queue: None,
            next_flow_id: 1,
            dirty: false,
        };
        (switch, readers)
    }

    pub fn settings(&self) -> &SwitchSettings {
        &self.settings
    }

    /// Runs timer triggers (TIMER_MOD) on `queue`; a switch without one refuses them.
    pub fn set_timer_queue(&mut self, queue: Box<dyn timers::TimerQueue>) {
        self.timer_queue = Some(queue);
    }

    fn resources(&self) -> SwitchResources<'_> {
        SwitchResources {
            n_tables: self.settings.n_tables,
            groups: &self.groups,
            meters: &self.meters,
            templates: &self.templates,
        }
    }

    fn apply_ops(&mut self, ops: Vec<Op>) {
        if !ops.is_empty() {
            self.dirty = true;
        }
        for op in ops {
            self.sink.apply(op);
        }
    }

    /// Makes every change so far visible to the datapath (the BARRIER guarantee).
    pub fn publish(&mut self) {
        if std::mem::take(&mut self.dirty) {
            self.sink.publish();
        }
    }

    /// Whether changes wait for [`Self::publish`].
    pub fn has_unpublished(&self) -> bool {
        self.dirty
    }

    pub fn features(&self) -> SwitchFeatures {
        SwitchFeatures {
            datapath_id: self.settings.datapath_id,
            n_buffers: self.settings.n_buffers,
            n_tables: self.settings.n_tables,
            auxiliary_id: 0,
            capabilities: ofp::OFPC_FLOW_STATS
                | ofp::OFPC_TABLE_STATS
                | ofp::OFPC_PORT_STATS
                | ofp::OFPC_GROUP_STATS
                | ofp::OFPC_QUEUE_STATS,
            reserved: 0,
        }
    }

    pub fn config(&self) -> SwitchConfig {
        self.config
    }

    /// SET_CONFIG: fragment handling NORMAL or DROP, optional invalid-TTL packet-ins.
    pub fn set_config(&mut self, config: &SwitchConfig) -> Result<(), OfpError> {
        const INVALID_TTL_TO_CONTROLLER: u16 = 1 << 2;
        let frag = match config.flags & ofp::OFPC_FRAG_MASK {
            ofp::OFPC_FRAG_NORMAL => dp::FragHandling::Normal,
            ofp::OFPC_FRAG_DROP => dp::FragHandling::Drop,
            _ => {
                return Err(OfpError::SwitchConfigFailed(
                    ofp::SwitchConfigFailedCode::BadFlags,
                ))
            }
        };
        if config.flags & !(ofp::OFPC_FRAG_MASK | INVALID_TTL_TO_CONTROLLER) != 0 {
            return Err(OfpError::SwitchConfigFailed(
                ofp::SwitchConfigFailedCode::BadFlags,
            ));
        }
        self.config = *config;
        self.apply_ops(vec![Op::SetSwitchFlags(dp::SwitchFlags {
            miss_send_len: config.miss_send_len,
            invalid_ttl_to_controller: config.flags & INVALID_TTL_TO_CONTROLLER != 0,
            frag,
        })]);
        Ok(())
    }

    fn table_ids(&self, table_id: u8) -> std::ops::Range<u8> {
        if table_id == ofp::OFPTT_ALL {
            0..self.settings.n_tables
        } else {
            table_id..table_id.saturating_add(1).min(self.settings.n_tables)
        }
    }

    /// FLOW_MOD (spec 6.4). Returns the flow-removed messages owed to controllers (deleted
    /// entries that asked for them).
    pub fn flow_mod(&mut self, fm: FlowMod, now_ns: u64) -> Result<Vec<FlowRemoved>, OfpError> {
        if fm.flags.0 & !FlowModFlags::ALL.0 != 0 {
            return Err(OfpError::FlowModFailed(FlowModFailedCode::BadFlags));
        }
        let deleting = matches!(
            fm.command,
            FlowModCommand::Delete | FlowModCommand::DeleteStrict
        );
        let table_ok =
            fm.table_id < self.settings.n_tables || (deleting && fm.table_id == ofp::OFPTT_ALL);
        if !table_ok {
            return Err(OfpError::FlowModFailed(FlowModFailedCode::BadTableId));
        }
        fm.match_.validate()?;
        let compiled = translate::compile_match(&fm.match_);
        if compiled.check_prerequisites().is_err() {
            return Err(OfpError::BadMatch(BadMatchCode::BadPrereq));
        }
        if !deleting {
            check_instructions(&fm.instructions, fm.table_id, &compiled, &self.resources())?;
            if ofp::FlowStats::entry_len(&fm.match_, &fm.instructions) > ofp::MAX_MULTIPART_ITEM_LEN
            {
                // Its flow-stats entry could not be framed in a reply.
                return Err(OfpError::BadAction(ofp::BadActionCode::TooMany));
            }
        }
        let buffer_id = (fm.buffer_id != ofp::OFP_NO_BUFFER && !deleting).then_some(fm.buffer_id);
        if let Some(id) = buffer_id {
            // Checked now, taken once the flow-mod took effect: a refused one keeps it.
            self.shared.buffers.check(id).map_err(buffer_error)?;
        }
        let removed = match fm.command {
            FlowModCommand::Add => {
                self.add_flow(fm, compiled, now_ns)?;
                Vec::new()
            }
            FlowModCommand::Modify | FlowModCommand::ModifyStrict => {
                self.modify_flows(&fm, &compiled)?;
                Vec::new()
            }
            FlowModCommand::Delete | FlowModCommand::DeleteStrict => {
                self.delete_flows(&fm, &compiled, now_ns)
            }
        };
        let buffered = buffer_id.map(|id| self.take_buffer(id)).transpose()?;
        if let Some((in_port, frame)) = buffered {
            self.publish();
            self.packet_outs.submit(PacketOutJob {
                in_port,
                actions: vec![dataplane::ir::Action::Output {
                    port: ofp::OFPP_TABLE,
                    max_len: 0,
                }],
                frame,
            });
        }
        Ok(removed)
    }

    fn add_flow(&mut self, fm: FlowMod, compiled: FlowMatch, now_ns: u64) -> Result<(), OfpError> {
        let table = &self.tables[usize::from(fm.table_id)];
        if table.is_full_for(fm.priority, &compiled) {
            return Err(OfpError::FlowModFailed(FlowModFailedCode::TableFull));
        }
        let replacing = table.find_strict(fm.priority, &compiled).map(|e| e.id);
        if fm.flags.contains(FlowModFlags::CHECK_OVERLAP)
            && replacing.is_none()
            && table.has_overlap(fm.priority, &compiled)
        {
            return Err(OfpError::FlowModFailed(FlowModFailedCode::Overlap));
        }
        let instructions = translate::compile_instructions(&fm.instructions);
        self.sink
            .admit(fm.table_id, &compiled, &instructions, replacing)
            .map_err(placement::refusal_error)?;
        let entry = FlowEntry {
            id: FlowId(self.next_flow_id),
            priority: fm.priority,
            match_: fm.match_,
            compiled,
            instructions: fm.instructions,
            cookie: fm.cookie,
            flags: fm.flags,
            idle_timeout: fm.idle_timeout,
            hard_timeout: fm.hard_timeout,
            created_ns: now_ns,
            counters: FlowCounters::new(),
            counter_base: (0, 0),
        };
        self.next_flow_id += 1;
        let mut ops = Vec::with_capacity(2);
        self.tables[usize::from(fm.table_id)].add(entry, &mut ops);
        self.apply_ops(ops);
        Ok(())
    }

    fn modify_flows(&mut self, fm: &FlowMod, compiled: &FlowMatch) -> Result<(), OfpError> {
        let selector = Selector {
            compiled,
            strict_priority: (fm.command == FlowModCommand::ModifyStrict).then_some(fm.priority),
            cookie: fm.cookie,
            cookie_mask: fm.cookie_mask,
            out_port: ofp::OFPP_ANY,
            out_group: ofp::OFPG_ANY,
        };
        let table = &mut self.tables[usize::from(fm.table_id)];
        let ids = table.select(&selector);
        let instructions = translate::compile_instructions(&fm.instructions);
        for id in &ids {
            if let Some(e) = table.get(*id) {
                self.sink
                    .admit(fm.table_id, &e.compiled, &instructions, Some(*id))
                    .map_err(placement::refusal_error)?;
            }
        }
        let mut ops = Vec::new();
        for id in ids {
            table.modify(
                id,
                &fm.instructions,
                fm.flags.contains(FlowModFlags::RESET_COUNTS),
                &mut ops,
            );
        }
        self.apply_ops(ops);
        Ok(())
    }

    fn delete_flows(
        &mut self,
        fm: &FlowMod,
        compiled: &FlowMatch,
        now_ns: u64,
    ) -> Vec<FlowRemoved> {
        let selector = Selector {
            compiled,
            strict_priority: (fm.command == FlowModCommand::DeleteStrict).then_some(fm.priority),
            cookie: fm.cookie,
            cookie_mask: fm.cookie_mask,
            out_port: fm.out_port,
            out_group: fm.out_group,
        };
        let mut removed = Vec::new();
        for table_id in self.table_ids(fm.table_id) {
            let ids = self.tables[usize::from(table_id)].select(&selector);
            removed.extend(self.remove_flows(table_id, &ids, ofp::OFPRR_DELETE, now_ns));
        }
        removed
    }

    /// Removes entries and returns the flow-removed messages of those that asked for one.
    fn remove_flows(
        &mut self,
        table_id: u8,
        ids: &[FlowId],
        reason: RemovedReason,
        now_ns: u64,
    ) -> Vec<FlowRemoved> {
        let mut ops = Vec::with_capacity(ids.len());
        let mut removed = Vec::new();
        let table = &mut self.tables[usize::from(table_id)];
        for id in ids {
            if let Some(entry) = table.remove_entry(*id, &mut ops) {
                if entry.flags.contains(FlowModFlags::SEND_FLOW_REM) {
                    removed.push(flow_removed(table_id, &entry, reason, now_ns));
                }
            }
        }
        self.apply_ops(ops);
        removed
    }

    /// Removes entries whose idle or hard timeout passed. Called periodically: an entry's
    /// idle time counts from the first call that saw its packet count move, so an idle
    /// timeout fires at most one period late.
    pub fn expire(&mut self, now_ns: u64) -> Vec<FlowRemoved> {
        let mut removed = Vec::new();
        for table_id in 0..self.settings.n_tables {
            let expired = self.tables[usize::from(table_id)].expired(now_ns);
            for (id, reason) in expired {
                removed.extend(self.remove_flows(table_id, &[id], reason, now_ns));
            }
        }
        removed
    }

    /// Removes every flow entry for which `pred` holds, with `reason`.
    fn sweep_flows(
        &mut self,
        pred: impl Fn(&FlowEntry) -> bool,
        reason: RemovedReason,
        now_ns: u64,
    ) -> Vec<FlowRemoved> {
        let mut removed = Vec::new();
        for table_id in 0..self.settings.n_tables {
            let ids = self.tables[usize::from(table_id)].ids_where(&pred);
            if !ids.is_empty() {
                removed.extend(self.remove_flows(table_id, &ids, reason, now_ns));
            }
        }
        removed
    }

    /// GROUP_MOD (spec 6.5). Deleting a group removes the flow entries that use it.
    pub fn group_mod(&mut self, gm: &GroupMod, now_ns: u64) -> Result<Vec<FlowRemoved>, OfpError> {
        match gm.command {
            GroupModCommand::Add | GroupModCommand::Modify => {
                let adding = gm.command == GroupModCommand::Add;
                self.groups
                    .check_shape(gm.group_id, gm.group_type, &gm.buckets, adding)?;
                if ofp::GroupDesc::entry_len(&gm.buckets) > ofp::MAX_MULTIPART_ITEM_LEN {
                    // Its group-desc entry could not be framed in a reply.
                    return Err(OfpError::GroupModFailed(
                        ofp::GroupModFailedCode::OutOfBuckets,
                    ));
                }
                for bucket in &gm.buckets {
                    check_actions(
                        &bucket.actions,
                        &FlowMatch::any(),
                        ActionContext::GroupBucket,
                        &self.resources(),
                    )
                    .or_else(|e| match e {
                        // Bucket actions are checked without a match: header presence is
                        // only known per packet, so prerequisite failures are not errors.
                        OfpError::BadAction(ofp::BadActionCode::MatchInconsistent) => Ok(()),
                        other => Err(other),
                    })?;
                }
                let created_ns = match self.groups.get(gm.group_id) {
                    Some(old) => old.created_ns,
                    None => now_ns,
                };
                let group = dp::Group {
                    kind: match gm.group_type {
                        ofp::GroupType::All => dp::GroupType::All,
                        ofp::GroupType::Select => dp::GroupType::Select,
                        ofp::GroupType::Indirect => dp::GroupType::Indirect,
                        ofp::GroupType::FastFailover => dp::GroupType::FastFailover,
                    },
                    buckets: gm
                        .buckets
                        .iter()
                        .map(|b| dp::GroupBucket {
                            weight: b.weight,
                            watch_port: b.watch_port,
                            watch_group: b.watch_group,
                            actions: translate::compile_actions(&b.actions),
                        })
                        .collect(),
                    counters: GroupCounters::new(gm.buckets.len()),
                };
                self.groups.insert(
                    gm.group_id,
                    GroupEntry {
                        group_type: gm.group_type,
                        buckets: gm.buckets.clone(),
                        created_ns,
                        counters: Arc::clone(&group.counters),
                    },
                );
                self.apply_ops(vec![Op::SetGroup {
                    id: gm.group_id,
                    group,
                }]);
                Ok(Vec::new())
            }
            GroupModCommand::Delete => {
                let doomed = self.groups.deletion_set(gm.group_id)?;
                if doomed.iter().any(|&g| self.timers.sends_to_group(g)) {
                    // A timer forwards to it, and timers are not removed behind the
                    // controller's back: it deletes the timer first (INSP.md).
                    return Err(OfpError::GroupModFailed(
                        ofp::GroupModFailedCode::ChainedGroup,
                    ));
                }
                let removed = self.sweep_flows(
                    |e| doomed.iter().any(|g| e.sends_to_group(*g)),
                    ofp::OFPRR_GROUP_DELETE,
                    now_ns,
                );
                let mut ops = Vec::with_capacity(doomed.len());
                for id in doomed {
                    self.groups.remove(id);
                    ops.push(Op::RemoveGroup { id });
                }
                self.apply_ops(ops);
                Ok(removed)
            }
        }
    }

    /// METER_MOD (spec 6.6). Deleting a meter removes the flow entries that use it.
    pub fn meter_mod(&mut self, mm: &MeterMod, now_ns: u64) -> Result<Vec<FlowRemoved>, OfpError> {
        match mm.command {
            MeterModCommand::Add | MeterModCommand::Modify => {
                let adding = mm.command == MeterModCommand::Add;
                self.meters
                    .check(mm.meter_id, mm.flags, &mm.bands, adding)?;
                let created_ns = match self.meters.get(mm.meter_id) {
                    Some(old) => old.created_ns,
                    None => now_ns,
                };
                let meter = Arc::new(meters::datapath_meter(mm.flags, &mm.bands));
                self.meters.insert(
                    mm.meter_id,
                    MeterEntry {
                        flags: mm.flags,
                        bands: mm.bands.clone(),
                        created_ns,
                        meter: Arc::clone(&meter),
                    },
                );
                self.apply_ops(vec![Op::SetMeter {
                    id: mm.meter_id,
                    meter,
                }]);
                Ok(Vec::new())
            }
            MeterModCommand::Delete => {
                let doomed = self.meters.deletion_set(mm.meter_id);
                let removed = self.sweep_flows(
                    |e| doomed.iter().any(|m| e.uses_meter(*m)),
                    ofp::OFPRR_DELETE,
                    now_ns,
                );
                let mut ops = Vec::with_capacity(doomed.len());
                for id in doomed {
                    self.meters.remove(id);
                    ops.push(Op::RemoveMeter { id });
                }
                self.apply_ops(ops);
                Ok(removed)
            }
        }
    }

    /// PORT_MOD: changes a port's config bits; returns the PORT_STATUS to announce.
    pub fn port_mod(&mut self, pm: &PortMod) -> Result<Option<PortStatus>, OfpError> {
        let (status, op) = self.ports.modify(pm)?;
        self.apply_ops(op.into_iter().collect());
        Ok(status)
    }

    /// TABLE_MOD: OpenFlow 1.3 defines no table config bits other than the deprecated miss
    /// flags (bits 0-1), which the switch accepts and ignores as the spec says.
    pub fn table_mod(&mut self, tm: &TableMod) -> Result<(), OfpError> {
        if tm.table_id != ofp::OFPTT_ALL && tm.table_id >= self.settings.n_tables {
            return Err(OfpError::TableModFailed(TableModFailedCode::BadTable));
        }
        if tm.config & !0b11 != 0 {
            return Err(OfpError::TableModFailed(TableModFailedCode::BadConfig));
        }
        for table_id in self.table_ids(tm.table_id) {
            self.tables[usize::from(table_id)].config = tm.config;
        }
        Ok(())
    }

    /// The buffered packet's ingress port and bytes.
    fn take_buffer(&mut self, buffer_id: u32) -> Result<(u32, Vec<u8>), OfpError> {
        self.shared.buffers.take(buffer_id).map_err(buffer_error)
    }

    /// A packet-out's (or a timer's) ingress port and actions, checked without a match:
    /// header presence is only known per packet, so prerequisite failures are not errors.
    fn check_packet_out(&self, in_port: u32, actions: &[ofp::Action]) -> Result<(), OfpError> {
        let in_port_ok =
            in_port <= ofp::OFPP_MAX || matches!(in_port, ofp::OFPP_CONTROLLER | ofp::OFPP_LOCAL);
        if !in_port_ok || in_port == 0 {
            return Err(OfpError::BadRequest(BadRequestCode::BadPort));
        }
        check_actions(
            actions,
            &FlowMatch::any(),
            ActionContext::PacketOut,
            &self.resources(),
        )
        .or_else(|e| match e {
            OfpError::BadAction(ofp::BadActionCode::MatchInconsistent) => Ok(()),
            other => Err(other),
        })
    }

    /// PACKET_OUT: validates and queues the packet for a datapath thread (the message's
    /// frame moves into the job, uncopied).
    pub fn packet_out(&mut self, po: PacketOut) -> Result<(), OfpError> {
        self.check_packet_out(po.in_port, &po.actions)?;
        // A packet-out names its own ingress port, whether or not the packet was buffered.
        let frame = if po.buffer_id == ofp::OFP_NO_BUFFER {
            po.data
        } else {
            self.take_buffer(po.buffer_id)?.1
        };
        self.publish();
        self.packet_outs.submit(PacketOutJob {
            in_port: po.in_port,
            actions: translate::compile_actions(&po.actions),
            frame,
        });
        Ok(())
    }

    /// PKTTMP_MOD (InSP): adds or deletes a packet template (see [`templates::TemplateTable`]).
    pub fn pkttmp_mod(&mut self, m: &ofp::PktTmpMod) -> Result<(), OfpError> {
        let in_use = self.template_uses(m.pkttmp_id);
        if let Some(op) = self.templates.apply(m, in_use)? {
            self.apply_ops(vec![op]);
        }
        Ok(())
    }

    /// Flow entries whose InSP instruction names `pkttmp_id`, and timers that send it.
    pub fn template_uses(&self, pkttmp_id: u32) -> usize {
        self.insp_ids().filter(|&id| id == pkttmp_id).count() + self.timers.uses_of(pkttmp_id)
    }

    /// TIMER_MOD (our InSP extension, see [`timers`]): installs, replaces or removes a timer
    /// trigger. Its template must exist and need no triggering packet (no copy operations),
    /// its ingress port and actions are checked as a packet-out's, and its rate against the
    /// switch's bound.
    pub fn timer_mod(&mut self, m: &ofp::TimerMod) -> Result<(), OfpError> {
        if self.timer_queue.is_none() {
            return Err(OfpError::BadRequest(BadRequestCode::BadExpType));
        }
        if m.command != ofp::TimerCommand::Delete {
            if !self.templates.stands_alone(m.pkttmp_id) {
                return Err(timers::failed());
            }
            self.check_packet_out(m.in_port, &m.actions)?;
        }
        let change = self.timers.check(m)?;
        self.timers.apply(&change);
        // The timer's template (perhaps added in the same burst) must be visible to the
        // datapath before its first packet.
        self.publish();
        let Some(queue) = self.timer_queue.as_mut() else {
            return Ok(());
        };
        match change {
            timers::TimerChange::Set(t) => queue.set(timers::TimerJob {
                timer_id: t.timer_id,
                pkttmp_id: t.pkttmp_id,
                period_ns: u64::from(t.period_us) * 1_000,
                in_port: t.in_port,
                actions: translate::compile_actions(&t.actions),
            }),
            timers::TimerChange::Remove(ids) => ids.into_iter().for_each(|id| queue.remove(id)),
            timers::TimerChange::None => {}
        }
        Ok(())
    }

    /// The installed timer triggers.
    pub fn timers(&self) -> &timers::TimerTable {
        &self.timers
    }

    /// Flow entries per template they name, for every template some entry names.
    pub fn template_use_counts(&self) -> std::collections::BTreeMap<u32, u32> {
        let mut counts = std::collections::BTreeMap::new();
        for id in self.insp_ids() {
            *counts.entry(id).or_insert(0) += 1;
        }
        counts
    }

    /// The template id of every InSP instruction in every flow entry.
    fn insp_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.tables
            .iter()
            .flat_map(|t| t.entries())
            .flat_map(|e| &e.instructions)
            .filter_map(|i| match i {
                ofp::Instruction::Insp(insp) => Some(insp.pkttmp_id),
                _ => None,
            })
    }

    /// The packet template table.
    pub fn templates(&self) -> &templates::TemplateTable {
        &self.templates
    }
}

/// Port lifecycle, driven by the daemon's port manager.
impl Switch {
    /// Adds a port; returns the PORT_STATUS to announce.
    pub fn add_port(&mut self, desc: ofp::Port, now_ns: u64) -> PortStatus {
        let (status, op) = self.ports.add(desc, now_ns);
        self.apply_ops(vec![op]);
        status
    }

    /// Removes a port; returns the PORT_STATUS to announce, if the port existed.
    pub fn remove_port(&mut self, port_no: u32) -> Option<PortStatus> {
        let (status, op) = self.ports.remove(port_no)?;
        self.apply_ops(vec![op]);
        Some(status)
    }

    /// Adds kernel and socket losses of a port, reported by the thread owning its socket.
    pub fn record_port_io(&mut self, port_no: u32, delta: ports::IoCounters) {
        self.ports.record_io(port_no, delta);
    }

    /// Records a link going up or down; returns the PORT_STATUS when the state changed.
    pub fn set_link(&mut self, port_no: u32, up: bool) -> Option<PortStatus> {
        let (status, op) = self.ports.set_link(port_no, up)?;
        self.apply_ops(vec![op]);
        Some(status)
    }

    /// Changes what a port's owner knows of it (link state, speed, features; see
    /// [`ports::PortTable::update`]); returns the PORT_STATUS when something changed.
    pub fn update_port(
        &mut self,
        port_no: u32,
        change: impl FnOnce(&mut ofp::Port),
    ) -> Option<PortStatus> {
        let (status, op) = self.ports.update(port_no, change)?;
        self.apply_ops(vec![op]);
        Some(status)
    }

    pub fn has_port(&self, port_no: u32) -> bool {
        self.ports.get(port_no).is_some()
    }

    /// Number of flow entries in every table together.
    pub fn flow_count(&self) -> usize {
        self.tables.iter().map(FlowTable::len).sum()
    }
}

/// The OpenFlow error for a buffer id that cannot be taken.
fn buffer_error(e: dataplane::buffers::BufferError) -> OfpError {
    match e {
        dataplane::buffers::BufferError::Empty => OfpError::BadRequest(BadRequestCode::BufferEmpty),
        dataplane::buffers::BufferError::Unknown => {
            OfpError::BadRequest(BadRequestCode::BufferUnknown)
        }
    }
}
