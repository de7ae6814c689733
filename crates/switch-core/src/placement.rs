//! What the switch core asks a sink in front of hardware (see `dataplane::model::OpSink`):
//! may a flow entry go in (a hardware table that refuses what it cannot hold), where does
//! each entry live, and how large is each hardware table. Answers Hairpin's flow placement
//! experimenter multipart (`ofp::placement`, layout in `crates/ofp/OFFLOAD.md`).

use dataplane::model::{FlowLocation, Refusal};
use ofp::{
    location, BadActionCode, BadMatchCode, BadRequestCode, FlowModFailedCode, FlowPlacementStats,
    MultipartReplyBody, OfpError, PlacementReply, PlacementRequest, EXP_FLOW_PLACEMENT,
    HAIRPIN_EXPERIMENTER,
};

use crate::Switch;

/// The OpenFlow error for a refusal.
pub fn refusal_error(r: Refusal) -> OfpError {
    match r {
        Refusal::TableFull => OfpError::FlowModFailed(FlowModFailedCode::TableFull),
        Refusal::BadMatch => OfpError::BadMatch(BadMatchCode::BadField),
        Refusal::BadAction => OfpError::BadAction(BadActionCode::BadType),
        Refusal::BadTable => OfpError::FlowModFailed(FlowModFailedCode::BadTableId),
    }
}

impl Switch {
    /// Answers an experimenter multipart request: Hairpin's flow placement, or the error for
    /// an experimenter or type it does not know.
    pub(crate) fn experimenter_multipart(
        &self,
        experimenter: u32,
        exp_type: u32,
        data: &[u8],
    ) -> Result<MultipartReplyBody, OfpError> {
        if experimenter != HAIRPIN_EXPERIMENTER {
            return Err(OfpError::BadRequest(BadRequestCode::BadExperimenter));
        }
        let hardware = (0..self.settings.n_tables).any(|t| self.sink.table_capacity(t).is_some());
        if !hardware {
            // Nothing but software: no placement to tell.
            return Err(OfpError::BadRequest(BadRequestCode::BadExperimenter));
        }
        if exp_type != EXP_FLOW_PLACEMENT {
            return Err(OfpError::BadRequest(BadRequestCode::BadExpType));
        }
        let req = PlacementRequest::decode(data)?;
        let flows: Vec<FlowPlacementStats> = self
            .selected_flows(&req.flows)?
            .into_iter()
            .skip(req.start as usize)
            .map(|(table_id, e)| {
                let (packet_count, byte_count) = e.counts();
                let p = self.sink.placement(e.id);
                FlowPlacementStats {
                    table_id,
                    location: match p.map(|p| p.location) {
                        Some(FlowLocation::Hardware) => location::HARDWARE,
                        Some(FlowLocation::HardwareToSoftware) => location::HARDWARE_TO_SOFTWARE,
                        Some(FlowLocation::Software) | None => location::SOFTWARE,
                    },
                    hw_table: p.and_then(|p| p.hw_table).unwrap_or(0xff),
                    priority: e.priority,
                    cookie: e.cookie,
                    packet_count,
                    byte_count,
                    hw_packet_count: p.map_or(0, |p| p.hw_packets),
                    hw_byte_count: p.map_or(0, |p| p.hw_bytes),
                    match_: e.match_.clone(),
                }
            })
            .collect();
        let (data, _) = PlacementReply::encode_page(&flows, req.start);
        Ok(MultipartReplyBody::Experimenter {
            experimenter,
            exp_type,
            data,
        })
    }

    /// A table's size and name for table features: the hardware's when hardware holds it.
    pub(crate) fn table_advert(&self, table: u8) -> (u32, String) {
        match self.sink.table_capacity(table) {
            Some(advert) => advert,
            None => (
                self.tables[usize::from(table)].max_entries,
                format!("table{table}"),
            ),
        }
    }
}
