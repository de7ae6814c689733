//! Hairpin's flow placement experimenter multipart: where each flow entry lives (hardware
//! or software) and what the hardware counted of its packets. HP switches show this only on
//! their console (seed 004); Hairpin tells controllers. The layout is in `OFFLOAD.md`.

use crate::buf::{Put, Reader};
use crate::error::{BadRequestCode, OfpError};
use crate::oxm::Match;
use crate::stats::FlowStatsRequest;

/// Hairpin's experimenter id ("HPIN").
pub const HAIRPIN_EXPERIMENTER: u32 = 0x4850_494e;
/// `exp_type` of the flow placement multipart.
pub const EXP_FLOW_PLACEMENT: u32 = 1;
/// `next` of the last reply page.
pub const PLACEMENT_DONE: u32 = u32::MAX;
/// Bytes of entries one reply page carries at most (a reply message stays below 64 KiB).
pub const PLACEMENT_PAGE_BYTES: usize = 60_000;

/// Location codes.
pub mod location {
    pub const SOFTWARE: u8 = 0;
    pub const HARDWARE: u8 = 1;
    /// A hardware entry sends the rule's packets to software (copy-to-CPU).
    pub const HARDWARE_TO_SOFTWARE: u8 = 2;
}

/// Request: the flows a flow stats request with the same fields selects, from the `start`th
/// on (in flow stats order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacementRequest {
    pub flows: FlowStatsRequest,
    pub start: u32,
}

/// One flow's placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowPlacementStats {
    pub table_id: u8,
    pub location: u8,
    /// Index of the hardware table in the device's profile; 0xff: none.
    pub hw_table: u8,
    pub priority: u16,
    pub cookie: u64,
    /// As flow stats count it: hardware and software together.
    pub packet_count: u64,
    pub byte_count: u64,
    /// The part hardware decided.
    pub hw_packet_count: u64,
    pub hw_byte_count: u64,
    pub match_: Match,
}

/// Reply: one page of entries and where the next page starts ([`PLACEMENT_DONE`]: none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacementReply {
    pub next: u32,
    pub flows: Vec<FlowPlacementStats>,
}

fn bad_len() -> OfpError {
    OfpError::BadRequest(BadRequestCode::BadLen)
}

impl PlacementRequest {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.put_u32(self.start);
        out.put_zeros(4);
        self.flows.emit(&mut out);
        out
    }

    pub fn decode(data: &[u8]) -> Result<Self, OfpError> {
        let mut r = Reader::new(data, bad_len());
        let start = r.u32()?;
        r.skip(4)?;
        let flows = FlowStatsRequest::parse(&mut r)?;
        if !r.is_empty() {
            return Err(bad_len());
        }
        Ok(PlacementRequest { flows, start })
    }
}

impl FlowPlacementStats {
    fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(0);
        out.put_u8(self.table_id);
        out.put_u8(self.location);
        out.put_u8(self.hw_table);
        out.put_u8(0);
        out.put_u16(self.priority);
        out.put_u64(self.cookie);
        out.put_u64(self.packet_count);
        out.put_u64(self.byte_count);
        out.put_u64(self.hw_packet_count);
        out.put_u64(self.hw_byte_count);
        self.match_.emit(out);
        let len = out.len() - start;
        out.patch_u16(start, len as u16);
    }

    fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let len = usize::from(r.u16()?);
        if len < 48 + 8 || len - 2 > r.remaining() {
            return Err(bad_len());
        }
        let mut e = Reader::new(r.bytes(len - 2)?, bad_len());
        let table_id = e.u8()?;
        let location = e.u8()?;
        let hw_table = e.u8()?;
        e.skip(1)?;
        let priority = e.u16()?;
        let cookie = e.u64()?;
        let packet_count = e.u64()?;
        let byte_count = e.u64()?;
        let hw_packet_count = e.u64()?;
        let hw_byte_count = e.u64()?;
        let match_ = Match::parse(&mut e)?;
        if !e.is_empty() {
            return Err(bad_len());
        }
        Ok(FlowPlacementStats {
            table_id,
            location,
            hw_table,
            priority,
            cookie,
            packet_count,
            byte_count,
            hw_packet_count,
            hw_byte_count,
            match_,
        })
    }
}

impl PlacementReply {
    /// Encodes as many of `flows` (from the first) as fit a page; returns the bytes and how
    /// many were taken.
    pub fn encode_page(flows: &[FlowPlacementStats], first: u32) -> (Vec<u8>, usize) {
        let mut body = Vec::new();
        let mut taken = 0;
        for f in flows {
            let mark = body.len();
            f.emit(&mut body);
            if body.len() > PLACEMENT_PAGE_BYTES && taken > 0 {
                body.truncate(mark);
                break;
            }
            taken += 1;
        }
        let next = if taken == flows.len() {
            PLACEMENT_DONE
        } else {
            first.saturating_add(taken as u32)
        };
        let mut out = Vec::with_capacity(body.len() + 8);
        out.put_u32(next);
        out.put_zeros(4);
        out.extend_from_slice(&body);
        (out, taken)
    }

    pub fn decode(data: &[u8]) -> Result<Self, OfpError> {
        let mut r = Reader::new(data, bad_len());
        let next = r.u32()?;
        r.skip(4)?;
        let mut flows = Vec::new();
        while !r.is_empty() {
            flows.push(FlowPlacementStats::parse(&mut r)?);
        }
        Ok(PlacementReply { next, flows })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oxm::{OxmField, OxmValue};

    #[test]
    fn a_page_round_trips_and_long_replies_are_paged() {
        let flow = |i: u64| FlowPlacementStats {
            table_id: 0,
            location: location::HARDWARE,
            hw_table: 1,
            priority: 100,
            cookie: i,
            packet_count: 10 * i,
            byte_count: 640 * i,
            hw_packet_count: 7 * i,
            hw_byte_count: 448 * i,
            match_: Match {
                fields: vec![
                    OxmField::exact(OxmValue::EthType(0x0800)),
                    OxmField::exact(OxmValue::Ipv4Dst(i as u32)),
                ],
            },
        };
        let flows: Vec<_> = (0..3000).map(flow).collect();
        let (page, taken) = PlacementReply::encode_page(&flows, 0);
        assert!(taken < flows.len() && page.len() <= PLACEMENT_PAGE_BYTES + 8);
        let back = PlacementReply::decode(&page).expect("decodes");
        assert_eq!(back.next, taken as u32);
        assert_eq!(back.flows, flows[..taken]);
        let mut all = back.flows;
        let mut next = back.next;
        while next != PLACEMENT_DONE {
            let (page, _) = PlacementReply::encode_page(&flows[next as usize..], next);
            let reply = PlacementReply::decode(&page).expect("decodes");
            all.extend(reply.flows);
            next = reply.next;
        }
        assert_eq!(all, flows);
        let req = PlacementRequest {
            flows: FlowStatsRequest::default(),
            start: 5,
        };
        assert_eq!(PlacementRequest::decode(&req.encode()), Ok(req));
        assert!(PlacementRequest::decode(&[0; 3]).is_err());
        assert!(PlacementReply::decode(&page[..page.len() - 1]).is_err());
    }
}
