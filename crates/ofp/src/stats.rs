//! Multipart reply items: the statistics and description structures of spec 1.3.5 section 7.3.5.

use crate::buf::{len_placeholder, parse_name, put_name, wire_len, Put, Reader};
use crate::error::{GroupModFailedCode, OfpError};
use crate::flow::FlowModFlags;
use crate::group::{parse_buckets, Bucket, GroupType};
use crate::instruction::{emit_instructions, parse_instructions, Instruction};
use crate::meter::{emit_bands, parse_bands, MeterBand, MeterFlags};
use crate::oxm::Match;

/// Length of the text fields of `ofp_desc` (except `serial_num`).
pub const DESC_STR_LEN: usize = 256;
/// Length of `ofp_desc.serial_num`.
pub const SERIAL_NUM_LEN: usize = 32;

/// Reads a length-prefixed item: the u16 length at `len_offset` must cover at least `min` bytes.
fn item<'a>(r: &mut Reader<'a>, len_offset: usize, min: usize) -> Result<Reader<'a>, OfpError> {
    let len = usize::from(r.peek_u16(len_offset)?);
    if len < min {
        return Err(OfpError::BAD_LEN);
    }
    Ok(Reader::new(r.bytes(len)?, OfpError::BAD_LEN))
}

/// OFPMP_DESC reply. Strings are truncated to their field size on encode.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Desc {
    pub mfr_desc: String,
    pub hw_desc: String,
    pub sw_desc: String,
    pub serial_num: String,
    pub dp_desc: String,
}

impl Desc {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        put_name(out, &self.mfr_desc, DESC_STR_LEN);
        put_name(out, &self.hw_desc, DESC_STR_LEN);
        put_name(out, &self.sw_desc, DESC_STR_LEN);
        put_name(out, &self.serial_num, SERIAL_NUM_LEN);
        put_name(out, &self.dp_desc, DESC_STR_LEN);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        Ok(Desc {
            mfr_desc: parse_name(r.bytes(DESC_STR_LEN)?),
            hw_desc: parse_name(r.bytes(DESC_STR_LEN)?),
            sw_desc: parse_name(r.bytes(DESC_STR_LEN)?),
            serial_num: parse_name(r.bytes(SERIAL_NUM_LEN)?),
            dp_desc: parse_name(r.bytes(DESC_STR_LEN)?),
        })
    }
}

/// Body of OFPMP_FLOW and OFPMP_AGGREGATE requests.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FlowStatsRequest {
    pub table_id: u8,
    pub out_port: u32,
    pub out_group: u32,
    pub cookie: u64,
    pub cookie_mask: u64,
    pub match_: Match,
}

impl Default for FlowStatsRequest {
    /// Every flow of every table.
    fn default() -> Self {
        FlowStatsRequest {
            table_id: crate::consts::OFPTT_ALL,
            out_port: crate::consts::OFPP_ANY,
            out_group: crate::consts::OFPG_ANY,
            cookie: 0,
            cookie_mask: 0,
            match_: Match::default(),
        }
    }
}

impl FlowStatsRequest {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u8(self.table_id);
        out.put_zeros(3);
        out.put_u32(self.out_port);
        out.put_u32(self.out_group);
        out.put_zeros(4);
        out.put_u64(self.cookie);
        out.put_u64(self.cookie_mask);
        self.match_.emit(out);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let table_id = r.u8()?;
        r.skip(3)?;
        let out_port = r.u32()?;
        let out_group = r.u32()?;
        r.skip(4)?;
        let cookie = r.u64()?;
        let cookie_mask = r.u64()?;
        let match_ = Match::parse(r)?;
        match_.validate()?;
        Ok(FlowStatsRequest {
            table_id,
            out_port,
            out_group,
            cookie,
            cookie_mask,
            match_,
        })
    }
}

/// `ofp_flow_stats` up to its match.
const FLOW_STATS_FIXED_LEN: usize = 48;
/// `ofp_group_desc` up to its buckets.
const GROUP_DESC_FIXED_LEN: usize = 8;

/// One entry of an OFPMP_FLOW reply.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FlowStats {
    pub table_id: u8,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub priority: u16,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub flags: FlowModFlags,
    pub cookie: u64,
    pub packet_count: u64,
    pub byte_count: u64,
    pub match_: Match,
    pub instructions: Vec<Instruction>,
}

impl FlowStats {
    /// The length of the entry a flow with `match_` and `instructions` takes in an
    /// OFPMP_FLOW reply.
    pub fn entry_len(match_: &Match, instructions: &[Instruction]) -> usize {
        let mut encoded = Vec::new();
        emit_instructions(instructions, &mut encoded);
        FLOW_STATS_FIXED_LEN + match_.wire_len() + encoded.len()
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let len_at = len_placeholder(out);
        out.put_u8(self.table_id);
        out.put_zeros(1);
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
        out.put_u16(self.priority);
        out.put_u16(self.idle_timeout);
        out.put_u16(self.hard_timeout);
        out.put_u16(self.flags.0);
        out.put_zeros(4);
        out.put_u64(self.cookie);
        out.put_u64(self.packet_count);
        out.put_u64(self.byte_count);
        self.match_.emit(out);
        emit_instructions(&self.instructions, out);
        let len = wire_len(out.len() - start);
        out.patch_u16(len_at, len);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let mut b = item(r, 0, 56)?;
        b.skip(2)?;
        let table_id = b.u8()?;
        b.skip(1)?;
        let duration_sec = b.u32()?;
        let duration_nsec = b.u32()?;
        let priority = b.u16()?;
        let idle_timeout = b.u16()?;
        let hard_timeout = b.u16()?;
        let flags = FlowModFlags(b.u16()?);
        b.skip(4)?;
        Ok(FlowStats {
            table_id,
            duration_sec,
            duration_nsec,
            priority,
            idle_timeout,
            hard_timeout,
            flags,
            cookie: b.u64()?,
            packet_count: b.u64()?,
            byte_count: b.u64()?,
            match_: Match::parse(&mut b)?,
            instructions: parse_instructions(b.rest())?,
        })
    }
}

/// OFPMP_AGGREGATE reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AggregateStats {
    pub packet_count: u64,
    pub byte_count: u64,
    pub flow_count: u32,
}

impl AggregateStats {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u64(self.packet_count);
        out.put_u64(self.byte_count);
        out.put_u32(self.flow_count);
        out.put_zeros(4);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let s = AggregateStats {
            packet_count: r.u64()?,
            byte_count: r.u64()?,
            flow_count: r.u32()?,
        };
        r.skip(4)?;
        Ok(s)
    }
}

/// One entry of an OFPMP_TABLE reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TableStats {
    pub table_id: u8,
    pub active_count: u32,
    pub lookup_count: u64,
    pub matched_count: u64,
}

impl TableStats {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u8(self.table_id);
        out.put_zeros(3);
        out.put_u32(self.active_count);
        out.put_u64(self.lookup_count);
        out.put_u64(self.matched_count);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let table_id = r.u8()?;
        r.skip(3)?;
        Ok(TableStats {
            table_id,
            active_count: r.u32()?,
            lookup_count: r.u64()?,
            matched_count: r.u64()?,
        })
    }
}

/// One entry of an OFPMP_PORT_STATS reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PortStats {
    pub port_no: u32,
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
    pub rx_frame_err: u64,
    pub rx_over_err: u64,
    pub rx_crc_err: u64,
    pub collisions: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
}

impl PortStats {
    fn counters(&self) -> [u64; 12] {
        [
            self.rx_packets,
            self.tx_packets,
            self.rx_bytes,
            self.tx_bytes,
            self.rx_dropped,
            self.tx_dropped,
            self.rx_errors,
            self.tx_errors,
            self.rx_frame_err,
            self.rx_over_err,
            self.rx_crc_err,
            self.collisions,
        ]
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.port_no);
        out.put_zeros(4);
        self.counters().iter().for_each(|c| out.put_u64(*c));
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let port_no = r.u32()?;
        r.skip(4)?;
        Ok(PortStats {
            port_no,
            rx_packets: r.u64()?,
            tx_packets: r.u64()?,
            rx_bytes: r.u64()?,
            tx_bytes: r.u64()?,
            rx_dropped: r.u64()?,
            tx_dropped: r.u64()?,
            rx_errors: r.u64()?,
            tx_errors: r.u64()?,
            rx_frame_err: r.u64()?,
            rx_over_err: r.u64()?,
            rx_crc_err: r.u64()?,
            collisions: r.u64()?,
            duration_sec: r.u32()?,
            duration_nsec: r.u32()?,
        })
    }
}

/// One entry of an OFPMP_QUEUE reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct QueueStats {
    pub port_no: u32,
    pub queue_id: u32,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errors: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
}

impl QueueStats {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.port_no);
        out.put_u32(self.queue_id);
        out.put_u64(self.tx_bytes);
        out.put_u64(self.tx_packets);
        out.put_u64(self.tx_errors);
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        Ok(QueueStats {
            port_no: r.u32()?,
            queue_id: r.u32()?,
            tx_bytes: r.u64()?,
            tx_packets: r.u64()?,
            tx_errors: r.u64()?,
            duration_sec: r.u32()?,
            duration_nsec: r.u32()?,
        })
    }
}

/// Per-bucket counters of a group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct BucketCounter {
    pub packet_count: u64,
    pub byte_count: u64,
}

/// One entry of an OFPMP_GROUP reply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct GroupStats {
    pub group_id: u32,
    pub ref_count: u32,
    pub packet_count: u64,
    pub byte_count: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub bucket_stats: Vec<BucketCounter>,
}

impl GroupStats {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let len_at = len_placeholder(out);
        out.put_zeros(2);
        out.put_u32(self.group_id);
        out.put_u32(self.ref_count);
        out.put_zeros(4);
        out.put_u64(self.packet_count);
        out.put_u64(self.byte_count);
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
        for b in &self.bucket_stats {
            out.put_u64(b.packet_count);
            out.put_u64(b.byte_count);
        }
        let len = wire_len(out.len() - start);
        out.patch_u16(len_at, len);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let mut b = item(r, 0, 40)?;
        b.skip(4)?;
        let group_id = b.u32()?;
        let ref_count = b.u32()?;
        b.skip(4)?;
        let mut s = GroupStats {
            group_id,
            ref_count,
            packet_count: b.u64()?,
            byte_count: b.u64()?,
            duration_sec: b.u32()?,
            duration_nsec: b.u32()?,
            bucket_stats: Vec::new(),
        };
        if b.remaining() % 16 != 0 {
            return Err(OfpError::BAD_LEN);
        }
        while !b.is_empty() {
            s.bucket_stats.push(BucketCounter {
                packet_count: b.u64()?,
                byte_count: b.u64()?,
            });
        }
        Ok(s)
    }
}

/// One entry of an OFPMP_GROUP_DESC reply.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupDesc {
    pub group_type: GroupType,
    pub group_id: u32,
    pub buckets: Vec<Bucket>,
}

impl GroupDesc {
    /// The length of the entry a group with `buckets` takes in an OFPMP_GROUP_DESC reply.
    pub fn entry_len(buckets: &[Bucket]) -> usize {
        let mut encoded = Vec::new();
        buckets.iter().for_each(|b| b.emit(&mut encoded));
        GROUP_DESC_FIXED_LEN + encoded.len()
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let len_at = len_placeholder(out);
        out.put_u8(self.group_type as u8);
        out.put_zeros(1);
        out.put_u32(self.group_id);
        self.buckets.iter().for_each(|b| b.emit(out));
        let len = wire_len(out.len() - start);
        out.patch_u16(len_at, len);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let mut b = item(r, 0, 8)?;
        b.skip(2)?;
        let group_type = GroupType::from_u8(b.u8()?)
            .ok_or(OfpError::GroupModFailed(GroupModFailedCode::BadType))?;
        b.skip(1)?;
        Ok(GroupDesc {
            group_type,
            group_id: b.u32()?,
            buckets: parse_buckets(b.rest())?,
        })
    }
}

/// OFPMP_GROUP_FEATURES reply. Arrays are indexed by group type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct GroupFeatures {
    /// Bit n set = group type n supported.
    pub types: u32,
    /// `OFPGFC_*` bits.
    pub capabilities: u32,
    pub max_groups: [u32; 4],
    /// Bit n set = action type n supported.
    pub actions: [u32; 4],
}

impl GroupFeatures {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.types);
        out.put_u32(self.capabilities);
        self.max_groups.iter().for_each(|v| out.put_u32(*v));
        self.actions.iter().for_each(|v| out.put_u32(*v));
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let types = r.u32()?;
        let capabilities = r.u32()?;
        let mut quad =
            || -> Result<[u32; 4], OfpError> { Ok([r.u32()?, r.u32()?, r.u32()?, r.u32()?]) };
        Ok(GroupFeatures {
            types,
            capabilities,
            max_groups: quad()?,
            actions: quad()?,
        })
    }
}

/// Per-band counters of a meter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct MeterBandStats {
    pub packet_band_count: u64,
    pub byte_band_count: u64,
}

/// One entry of an OFPMP_METER reply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct MeterStats {
    pub meter_id: u32,
    pub flow_count: u32,
    pub packet_in_count: u64,
    pub byte_in_count: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub band_stats: Vec<MeterBandStats>,
}

impl MeterStats {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u32(self.meter_id);
        let len_at = len_placeholder(out);
        out.put_zeros(6);
        out.put_u32(self.flow_count);
        out.put_u64(self.packet_in_count);
        out.put_u64(self.byte_in_count);
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
        for b in &self.band_stats {
            out.put_u64(b.packet_band_count);
            out.put_u64(b.byte_band_count);
        }
        let len = wire_len(out.len() - start);
        out.patch_u16(len_at, len);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let mut b = item(r, 4, 40)?;
        let meter_id = b.u32()?;
        b.skip(8)?;
        let mut s = MeterStats {
            meter_id,
            flow_count: b.u32()?,
            packet_in_count: b.u64()?,
            byte_in_count: b.u64()?,
            duration_sec: b.u32()?,
            duration_nsec: b.u32()?,
            band_stats: Vec::new(),
        };
        if b.remaining() % 16 != 0 {
            return Err(OfpError::BAD_LEN);
        }
        while !b.is_empty() {
            s.band_stats.push(MeterBandStats {
                packet_band_count: b.u64()?,
                byte_band_count: b.u64()?,
            });
        }
        Ok(s)
    }
}

/// One entry of an OFPMP_METER_CONFIG reply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct MeterConfig {
    pub flags: MeterFlags,
    pub meter_id: u32,
    pub bands: Vec<MeterBand>,
}

impl MeterConfig {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let len_at = len_placeholder(out);
        out.put_u16(self.flags.0);
        out.put_u32(self.meter_id);
        emit_bands(&self.bands, out);
        let len = wire_len(out.len() - start);
        out.patch_u16(len_at, len);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let mut b = item(r, 0, 8)?;
        b.skip(2)?;
        Ok(MeterConfig {
            flags: MeterFlags(b.u16()?),
            meter_id: b.u32()?,
            bands: parse_bands(b.rest())?,
        })
    }
}

/// OFPMP_METER_FEATURES reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct MeterFeatures {
    pub max_meter: u32,
    /// Bit n set = band type n supported.
    pub band_types: u32,
    /// `MeterFlags` bits supported.
    pub capabilities: u32,
    pub max_bands: u8,
    pub max_color: u8,
}

impl MeterFeatures {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.max_meter);
        out.put_u32(self.band_types);
        out.put_u32(self.capabilities);
        out.put_u8(self.max_bands);
        out.put_u8(self.max_color);
        out.put_zeros(2);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let f = MeterFeatures {
            max_meter: r.u32()?,
            band_types: r.u32()?,
            capabilities: r.u32()?,
            max_bands: r.u8()?,
            max_color: r.u8()?,
        };
        r.skip(2)?;
        Ok(f)
    }
}
