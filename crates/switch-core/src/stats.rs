//! MULTIPART replies: every statistics and description body with the switch's real values.

use ofp::{
    AggregateStats, BadRequestCode, BucketCounter, FlowStats, FlowStatsRequest, GroupDesc,
    GroupStats, MeterBandStats, MeterConfig, MeterStats, MultipartReplyBody, MultipartRequestBody,
    OfpError, PortStats, QueueOpFailedCode, TableFeaturesFailedCode, TableStats,
};

use crate::clock::duration;
use crate::flows::{FlowEntry, Selector};
use crate::{features, translate, Switch};

impl Switch {
    /// Answers one multipart request (the agent splits long replies over several messages).
    pub fn multipart(
        &self,
        body: &MultipartRequestBody,
        now_ns: u64,
    ) -> Result<MultipartReplyBody, OfpError> {
        use MultipartReplyBody as R;
        use MultipartRequestBody as Q;
        Ok(match body {
            Q::Desc => R::Desc(features::desc(self.settings.datapath_id)),
            Q::Flow(req) => R::Flow(self.flow_stats(req, now_ns)?),
            Q::Aggregate(req) => R::Aggregate(self.aggregate_stats(req)?),
            Q::Table => R::Table(self.table_stats()),
            Q::PortStats { port_no } => R::PortStats(self.port_stats(*port_no, now_ns)?),
            Q::Queue { port_no, queue_id } => {
                let port_known = *port_no == ofp::OFPP_ANY || self.ports.get(*port_no).is_some();
                if !port_known {
                    return Err(OfpError::QueueOpFailed(QueueOpFailedCode::BadPort));
                }
                if *queue_id != ofp::OFPQ_ALL {
                    return Err(OfpError::QueueOpFailed(QueueOpFailedCode::BadQueue));
                }
                R::Queue(Vec::new())
            }
            Q::Group { group_id } => R::Group(self.group_stats(*group_id, now_ns)),
            Q::GroupDesc => R::GroupDesc(
                self.groups
                    .iter()
                    .map(|(group_id, g)| GroupDesc {
                        group_type: g.group_type,
                        group_id,
                        buckets: g.buckets.clone(),
                    })
                    .collect(),
            ),
            Q::GroupFeatures => R::GroupFeatures(features::group_features()),
            Q::Meter { meter_id } => R::Meter(self.meter_stats(*meter_id, now_ns)),
            Q::MeterConfig { meter_id } => R::MeterConfig(
                self.meters
                    .iter()
                    .filter(|(id, _)| *meter_id == ofp::OFPM_ALL || id == meter_id)
                    .map(|(id, m)| MeterConfig {
                        flags: m.flags,
                        meter_id: id,
                        bands: m.bands.clone(),
                    })
                    .collect(),
            ),
            Q::MeterFeatures => R::MeterFeatures(features::meter_features()),
            Q::TableFeatures(set) => {
                if !set.is_empty() {
                    return Err(OfpError::TableFeaturesFailed(
                        TableFeaturesFailedCode::Eperm,
                    ));
                }
                R::TableFeatures(
                    (0..self.settings.n_tables)
                        .map(|t| {
                            let (max, name) = self.table_advert(t);
                            let mut f = features::table_features(t, self.settings.n_tables, max);
                            f.name = name;
                            f
                        })
                        .collect(),
                )
            }
            Q::PortDesc => R::PortDesc(self.ports.iter().map(|p| p.desc.clone()).collect()),
            Q::Experimenter {
                experimenter: ofp::INSP_EXPERIMENTER,
                exp_type: ofp::PKTTMP_STATS_EXP_TYPE,
                data,
            } => R::Experimenter {
                experimenter: ofp::INSP_EXPERIMENTER,
                exp_type: ofp::PKTTMP_STATS_EXP_TYPE,
                data: ofp::PktTmpStats::emit_records(&self.template_stats(
                    ofp::PktTmpStats::parse_request(data)?,
                    ofp::PKTTMP_STATS_MAX_RECORDS,
                )),
            },
            Q::Experimenter {
                experimenter: ofp::INSP_EXPERIMENTER,
                ..
            } => return Err(OfpError::BadRequest(BadRequestCode::BadExpType)),
            Q::Experimenter {
                experimenter,
                exp_type,
                data,
            } => self.experimenter_multipart(*experimenter, *exp_type, data)?,
        })
    }

    /// At most `limit` templates from `first_id` on, in id order (PKTTMP_STATS, INSP.md).
    pub fn template_stats(&self, first_id: u32, limit: usize) -> Vec<ofp::PktTmpStats> {
        let clamp = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
        let uses = self.template_use_counts();
        self.templates
            .list()
            .filter(|(info, _)| info.pkttmp_id >= first_id)
            .take(limit)
            .map(|(info, t)| ofp::PktTmpStats {
                pkttmp_id: info.pkttmp_id,
                len: clamp(info.len),
                copy_ops: clamp(info.copy_ops),
                checksum_ops: clamp(info.checksum_ops),
                flow_count: uses.get(&info.pkttmp_id).copied().unwrap_or(0),
                generated: t.generated(),
                trigger_errors: t.trigger_errors(),
                memory: u32::try_from(info.memory).unwrap_or(u32::MAX),
            })
            .collect()
    }

    /// Entries selected by a flow or aggregate stats request, with their table ids.
    pub(crate) fn selected_flows(
        &self,
        req: &FlowStatsRequest,
    ) -> Result<Vec<(u8, &FlowEntry)>, OfpError> {
        if req.table_id != ofp::OFPTT_ALL && req.table_id >= self.settings.n_tables {
            return Err(OfpError::BadRequest(BadRequestCode::BadTableId));
        }
        req.match_.validate()?;
        let compiled = translate::compile_match(&req.match_);
        let selector = Selector {
            compiled: &compiled,
            strict_priority: None,
            cookie: req.cookie,
            cookie_mask: req.cookie_mask,
            out_port: req.out_port,
            out_group: req.out_group,
        };
        let mut out = Vec::new();
        for table_id in self.table_ids(req.table_id) {
            let table = &self.tables[usize::from(table_id)];
            for id in table.select(&selector) {
                if let Some(entry) = table.get(id) {
                    out.push((table_id, entry));
                }
            }
        }
        out.sort_by_key(|(table_id, e)| (*table_id, std::cmp::Reverse(e.priority), e.id));
        Ok(out)
    }

    fn flow_stats(&self, req: &FlowStatsRequest, now_ns: u64) -> Result<Vec<FlowStats>, OfpError> {
        Ok(self
            .selected_flows(req)?
            .into_iter()
            .map(|(table_id, e)| entry_stats(table_id, e, now_ns))
            .collect())
    }

    /// One flow entry as flow stats report it, by its datapath id (what a trace of the
    /// datapath names).
    pub fn flow_stats_by_id(
        &self,
        table_id: u8,
        id: dataplane::model::FlowId,
        now_ns: u64,
    ) -> Option<FlowStats> {
        let table = self.tables.get(usize::from(table_id))?;
        table.get(id).map(|e| entry_stats(table_id, e, now_ns))
    }

    fn aggregate_stats(&self, req: &FlowStatsRequest) -> Result<AggregateStats, OfpError> {
        let flows = self.selected_flows(req)?;
        let mut agg = AggregateStats {
            packet_count: 0,
            byte_count: 0,
            flow_count: u32::try_from(flows.len()).unwrap_or(u32::MAX),
        };
        for (_, e) in flows {
            let (packets, bytes) = e.counts();
            if packets != u64::MAX {
                agg.packet_count = agg.packet_count.saturating_add(packets);
            }
            if bytes != u64::MAX {
                agg.byte_count = agg.byte_count.saturating_add(bytes);
            }
        }
        Ok(agg)
    }

    fn table_stats(&self) -> Vec<TableStats> {
        let shared = &self.shared;
        self.tables
            .iter()
            .map(|t| {
                let counters = shared.table_counters(t.table_id);
                TableStats {
                    table_id: t.table_id,
                    active_count: u32::try_from(t.len()).unwrap_or(u32::MAX),
                    lookup_count: counters.map_or(0, |c| c.lookups()),
                    matched_count: counters.map_or(0, |c| c.matches()),
                }
            })
            .collect()
    }

    fn port_stats(&self, port_no: u32, now_ns: u64) -> Result<Vec<PortStats>, OfpError> {
        if port_no != ofp::OFPP_ANY && self.ports.get(port_no).is_none() {
            return Err(OfpError::BadRequest(BadRequestCode::BadPort));
        }
        Ok(self
            .ports
            .iter()
            .filter(|p| port_no == ofp::OFPP_ANY || p.desc.port_no == port_no)
            .map(|p| {
                let (duration_sec, duration_nsec) = duration(p.created_ns, now_ns);
                let mut stats = PortStats {
                    port_no: p.desc.port_no,
                    duration_sec,
                    duration_nsec,
                    rx_dropped: p.io.rx_dropped,
                    tx_dropped: p.io.tx_dropped,
                    rx_errors: p.io.rx_errors,
                    tx_errors: p.io.tx_errors,
                    ..PortStats::default()
                };
                {
                    let c = &p.counters;
                    stats.rx_packets = c.rx.packets();
                    stats.rx_bytes = c.rx.bytes();
                    stats.tx_packets = c.tx.packets();
                    stats.tx_bytes = c.tx.bytes();
                    stats.rx_dropped += c.rx_dropped.packets();
                    stats.tx_dropped += c.tx_dropped.packets();
                }
                stats
            })
            .collect())
    }

    fn group_stats(&self, group_id: u32, now_ns: u64) -> Vec<GroupStats> {
        self.groups
            .iter()
            .filter(|(id, _)| group_id == ofp::OFPG_ALL || *id == group_id)
            .map(|(id, g)| {
                let flow_refs = self
                    .tables
                    .iter()
                    .map(|t| t.ids_where(|e| e.sends_to_group(id)).len() as u32)
                    .sum::<u32>();
                let (duration_sec, duration_nsec) = duration(g.created_ns, now_ns);
                GroupStats {
                    group_id: id,
                    ref_count: flow_refs + self.groups.references_to(id),
                    packet_count: g.counters.group.packets(),
                    byte_count: g.counters.group.bytes(),
                    duration_sec,
                    duration_nsec,
                    bucket_stats: g
                        .counters
                        .buckets
                        .iter()
                        .map(|b| BucketCounter {
                            packet_count: b.packets(),
                            byte_count: b.bytes(),
                        })
                        .collect(),
                }
            })
            .collect()
    }

    fn meter_stats(&self, meter_id: u32, now_ns: u64) -> Vec<MeterStats> {
        self.meters
            .iter()
            .filter(|(id, _)| meter_id == ofp::OFPM_ALL || *id == meter_id)
            .map(|(id, m)| {
                let flow_count = self
                    .tables
                    .iter()
                    .map(|t| t.ids_where(|e| e.uses_meter(id)).len() as u32)
                    .sum::<u32>();
                let stats = m.meter.stats(now_ns);
                let (duration_sec, duration_nsec) = duration(m.created_ns, now_ns);
                MeterStats {
                    meter_id: id,
                    flow_count,
                    packet_in_count: stats.packets,
                    byte_in_count: stats.bytes,
                    duration_sec,
                    duration_nsec,
                    band_stats: stats
                        .bands
                        .iter()
                        .map(|b| MeterBandStats {
                            packet_band_count: b.packets,
                            byte_band_count: b.bytes,
                        })
                        .collect(),
                }
            })
            .collect()
    }
}

fn entry_stats(table_id: u8, e: &FlowEntry, now_ns: u64) -> FlowStats {
    let (packet_count, byte_count) = e.counts();
    let (duration_sec, duration_nsec) = duration(e.created_ns, now_ns);
    FlowStats {
        table_id,
        duration_sec,
        duration_nsec,
        priority: e.priority,
        idle_timeout: e.idle_timeout,
        hard_timeout: e.hard_timeout,
        flags: e.flags,
        cookie: e.cookie,
        packet_count,
        byte_count,
        match_: e.match_.clone(),
        instructions: e.instructions.clone(),
    }
}
