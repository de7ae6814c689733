//! Where each flow lives: Hairpin's flow placement experimenter multipart (`ofp::placement`),
//! asked page by page, and the columns `dump-flows` adds from it. A switch that does not
//! know the experimenter (Open vSwitch, Hairpin without offload answers every flow as
//! software) leaves `dump-flows` as `ovs-ofctl` prints it.

use std::collections::HashMap;

use ofp::{
    location, FlowPlacementStats, FlowStats, FlowStatsRequest, Match, MultipartReplyBody,
    MultipartRequestBody, PlacementReply, PlacementRequest, EXP_FLOW_PLACEMENT,
    HAIRPIN_EXPERIMENTER, PLACEMENT_DONE,
};

use crate::conn::Connection;
use crate::error::CtlError;

/// A flow's identity across two replies.
type Key = (u8, u16, u64, Match);

/// The placement of the flows `filter` selects, by flow; `None` when the switch does not
/// answer the experimenter.
pub fn placements(
    conn: &mut Connection,
    filter: &FlowStatsRequest,
) -> Result<Option<HashMap<Key, FlowPlacementStats>>, CtlError> {
    let mut all = HashMap::new();
    let mut start = 0;
    loop {
        let request = PlacementRequest {
            flows: filter.clone(),
            start,
        };
        let reply = conn.multipart(MultipartRequestBody::Experimenter {
            experimenter: HAIRPIN_EXPERIMENTER,
            exp_type: EXP_FLOW_PLACEMENT,
            data: request.encode(),
        });
        let data = match reply {
            Ok(MultipartReplyBody::Experimenter { data, .. }) => data,
            // A switch that refuses the experimenter, or (against the specification) does not
            // answer it at all.
            Ok(_) | Err(CtlError::Switch { .. } | CtlError::Timeout(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        let page = PlacementReply::decode(&data)
            .map_err(|e| CtlError::Protocol(format!("flow placement reply: {e}")))?;
        for p in page.flows {
            all.insert((p.table_id, p.priority, p.cookie, p.match_.clone()), p);
        }
        if page.next == PLACEMENT_DONE || page.next <= start {
            return Ok(Some(all));
        }
        start = page.next;
    }
}

/// The columns for one flow: `location=hw|hw:cpu|sw, hw_packets=N, sw_packets=N`.
pub fn columns(flow: &FlowStats, placements: &HashMap<Key, FlowPlacementStats>) -> Option<String> {
    let key = (
        flow.table_id,
        flow.priority,
        flow.cookie,
        flow.match_.clone(),
    );
    let p = placements.get(&key)?;
    let place = match p.location {
        location::HARDWARE => "hw",
        location::HARDWARE_TO_SOFTWARE => "hw:cpu",
        _ => "sw",
    };
    Some(format!(
        "location={place}, hw_packets={}, sw_packets={}",
        p.hw_packet_count,
        p.packet_count.saturating_sub(p.hw_packet_count)
    ))
}

/// Puts `columns` after the `n_bytes=` field of a `dump-flows` line.
pub fn insert_columns(line: &str, columns: &str) -> String {
    match line.find(" n_bytes=") {
        Some(at) => {
            let end = line[at + 1..].find(',').map_or(line.len(), |i| at + 1 + i);
            format!("{}, {columns}{}", &line[..end], &line[end..])
        }
        None => format!("{line} {columns}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_go_after_the_byte_count() {
        let line = "cookie=0x0, duration=1.000s, table=0, n_packets=3, n_bytes=180, priority=5 actions=drop";
        assert_eq!(
            insert_columns(line, "location=hw, hw_packets=2, sw_packets=1"),
            "cookie=0x0, duration=1.000s, table=0, n_packets=3, n_bytes=180, location=hw, hw_packets=2, sw_packets=1, priority=5 actions=drop"
        );
    }
}
