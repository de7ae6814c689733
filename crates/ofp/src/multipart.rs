//! MULTIPART_REQUEST / MULTIPART_REPLY (spec 1.3.5 section 7.3.5) and reply splitting.

use crate::buf::{Put, Reader};
use crate::error::{BadRequestCode, OfpError};
use crate::port::Port;
use crate::stats::*;
use crate::table_features::{parse_table_features_list, TableFeatures};

/// Multipart type numbers (`OFPMP_*`).
pub mod multipart_type {
    pub const DESC: u16 = 0;
    pub const FLOW: u16 = 1;
    pub const AGGREGATE: u16 = 2;
    pub const TABLE: u16 = 3;
    pub const PORT_STATS: u16 = 4;
    pub const QUEUE: u16 = 5;
    pub const GROUP: u16 = 6;
    pub const GROUP_DESC: u16 = 7;
    pub const GROUP_FEATURES: u16 = 8;
    pub const METER: u16 = 9;
    pub const METER_CONFIG: u16 = 10;
    pub const METER_FEATURES: u16 = 11;
    pub const TABLE_FEATURES: u16 = 12;
    pub const PORT_DESC: u16 = 13;
    pub const EXPERIMENTER: u16 = 0xffff;
}
use multipart_type as mt;

/// Bytes of `ofp_header` + `ofp_multipart_*` before the body.
pub const MULTIPART_HEADER_LEN: usize = 16;
/// Largest OpenFlow message.
pub const OFP_MAX_MESSAGE_LEN: usize = 65535;
/// The largest entry a multipart reply can carry: a message's worth, less its headers. A
/// switch must refuse what it could not report back (a flow entry, a group).
pub const MAX_MULTIPART_ITEM_LEN: usize = OFP_MAX_MESSAGE_LEN - MULTIPART_HEADER_LEN;

/// OFPT_MULTIPART_REQUEST: `flags` holds OFPMPF_REQ_MORE.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MultipartRequest {
    pub flags: u16,
    pub body: MultipartRequestBody,
}

/// The typed body of a multipart request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MultipartRequestBody {
    Desc,
    Flow(FlowStatsRequest),
    Aggregate(FlowStatsRequest),
    Table,
    PortStats {
        port_no: u32,
    },
    Queue {
        port_no: u32,
        queue_id: u32,
    },
    Group {
        group_id: u32,
    },
    GroupDesc,
    GroupFeatures,
    Meter {
        meter_id: u32,
    },
    MeterConfig {
        meter_id: u32,
    },
    MeterFeatures,
    /// Empty = query only; non-empty = set the tables' features.
    TableFeatures(Vec<TableFeatures>),
    PortDesc,
    Experimenter {
        experimenter: u32,
        exp_type: u32,
        data: Vec<u8>,
    },
}

impl MultipartRequestBody {
    pub fn multipart_type(&self) -> u16 {
        use MultipartRequestBody as B;
        match self {
            B::Desc => mt::DESC,
            B::Flow(_) => mt::FLOW,
            B::Aggregate(_) => mt::AGGREGATE,
            B::Table => mt::TABLE,
            B::PortStats { .. } => mt::PORT_STATS,
            B::Queue { .. } => mt::QUEUE,
            B::Group { .. } => mt::GROUP,
            B::GroupDesc => mt::GROUP_DESC,
            B::GroupFeatures => mt::GROUP_FEATURES,
            B::Meter { .. } => mt::METER,
            B::MeterConfig { .. } => mt::METER_CONFIG,
            B::MeterFeatures => mt::METER_FEATURES,
            B::TableFeatures(_) => mt::TABLE_FEATURES,
            B::PortDesc => mt::PORT_DESC,
            B::Experimenter { .. } => mt::EXPERIMENTER,
        }
    }
}

impl MultipartRequest {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        use MultipartRequestBody as B;
        out.put_u16(self.body.multipart_type());
        out.put_u16(self.flags);
        out.put_zeros(4);
        match &self.body {
            B::Desc
            | B::Table
            | B::GroupDesc
            | B::GroupFeatures
            | B::MeterFeatures
            | B::PortDesc => {}
            B::Flow(req) | B::Aggregate(req) => req.emit(out),
            B::PortStats { port_no } => {
                out.put_u32(*port_no);
                out.put_zeros(4);
            }
            B::Queue { port_no, queue_id } => {
                out.put_u32(*port_no);
                out.put_u32(*queue_id);
            }
            B::Group { group_id: id }
            | B::Meter { meter_id: id }
            | B::MeterConfig { meter_id: id } => {
                out.put_u32(*id);
                out.put_zeros(4);
            }
            B::TableFeatures(tables) => tables.iter().for_each(|t| t.emit(out)),
            B::Experimenter {
                experimenter,
                exp_type,
                data,
            } => {
                out.put_u32(*experimenter);
                out.put_u32(*exp_type);
                out.extend_from_slice(data);
            }
        }
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        use MultipartRequestBody as B;
        let mp_type = r.u16()?;
        let flags = r.u16()?;
        r.skip(4)?;
        let id_and_pad = |r: &mut Reader<'_>| -> Result<u32, OfpError> {
            let id = r.u32()?;
            r.skip(4)?;
            Ok(id)
        };
        let body = match mp_type {
            mt::DESC => B::Desc,
            mt::FLOW => B::Flow(FlowStatsRequest::parse(r)?),
            mt::AGGREGATE => B::Aggregate(FlowStatsRequest::parse(r)?),
            mt::TABLE => B::Table,
            mt::PORT_STATS => B::PortStats {
                port_no: id_and_pad(r)?,
            },
            mt::QUEUE => B::Queue {
                port_no: r.u32()?,
                queue_id: r.u32()?,
            },
            mt::GROUP => B::Group {
                group_id: id_and_pad(r)?,
            },
            mt::GROUP_DESC => B::GroupDesc,
            mt::GROUP_FEATURES => B::GroupFeatures,
            mt::METER => B::Meter {
                meter_id: id_and_pad(r)?,
            },
            mt::METER_CONFIG => B::MeterConfig {
                meter_id: id_and_pad(r)?,
            },
            mt::METER_FEATURES => B::MeterFeatures,
            mt::TABLE_FEATURES => B::TableFeatures(parse_table_features_list(r.rest())?),
            mt::PORT_DESC => B::PortDesc,
            mt::EXPERIMENTER => B::Experimenter {
                experimenter: r.u32()?,
                exp_type: r.u32()?,
                data: r.rest().to_vec(),
            },
            _ => return Err(OfpError::BadRequest(BadRequestCode::BadMultipart)),
        };
        if !r.is_empty() {
            return Err(OfpError::BAD_LEN);
        }
        Ok(MultipartRequest { flags, body })
    }
}

/// OFPT_MULTIPART_REPLY: `flags` holds OFPMPF_REPLY_MORE.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MultipartReply {
    pub flags: u16,
    pub body: MultipartReplyBody,
}

/// The typed body of a multipart reply.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MultipartReplyBody {
    Desc(Desc),
    Flow(Vec<FlowStats>),
    Aggregate(AggregateStats),
    Table(Vec<TableStats>),
    PortStats(Vec<PortStats>),
    Queue(Vec<QueueStats>),
    Group(Vec<GroupStats>),
    GroupDesc(Vec<GroupDesc>),
    GroupFeatures(GroupFeatures),
    Meter(Vec<MeterStats>),
    MeterConfig(Vec<MeterConfig>),
    MeterFeatures(MeterFeatures),
    TableFeatures(Vec<TableFeatures>),
    PortDesc(Vec<Port>),
    Experimenter {
        experimenter: u32,
        exp_type: u32,
        data: Vec<u8>,
    },
}

/// Parses items until `r` is empty.
fn parse_list<T>(
    r: &mut Reader<'_>,
    parse: impl Fn(&mut Reader<'_>) -> Result<T, OfpError>,
) -> Result<Vec<T>, OfpError> {
    let mut v = Vec::new();
    while !r.is_empty() {
        v.push(parse(r)?);
    }
    Ok(v)
}

impl MultipartReplyBody {
    pub fn multipart_type(&self) -> u16 {
        use MultipartReplyBody as B;
        match self {
            B::Desc(_) => mt::DESC,
            B::Flow(_) => mt::FLOW,
            B::Aggregate(_) => mt::AGGREGATE,
            B::Table(_) => mt::TABLE,
            B::PortStats(_) => mt::PORT_STATS,
            B::Queue(_) => mt::QUEUE,
            B::Group(_) => mt::GROUP,
            B::GroupDesc(_) => mt::GROUP_DESC,
            B::GroupFeatures(_) => mt::GROUP_FEATURES,
            B::Meter(_) => mt::METER,
            B::MeterConfig(_) => mt::METER_CONFIG,
            B::MeterFeatures(_) => mt::METER_FEATURES,
            B::TableFeatures(_) => mt::TABLE_FEATURES,
            B::PortDesc(_) => mt::PORT_DESC,
            B::Experimenter { .. } => mt::EXPERIMENTER,
        }
    }

    /// The body split into independently encoded items: one per list entry for list bodies,
    /// a single item otherwise. Concatenating them gives the body's encoding.
    fn encoded_items(&self) -> Vec<Vec<u8>> {
        use MultipartReplyBody as B;
        fn each<T>(items: &[T], emit: impl Fn(&T, &mut Vec<u8>)) -> Vec<Vec<u8>> {
            items
                .iter()
                .map(|i| {
                    let mut v = Vec::new();
                    emit(i, &mut v);
                    v
                })
                .collect()
        }
        let mut single = Vec::new();
        match self {
            B::Flow(v) => return each(v, FlowStats::emit),
            B::Table(v) => return each(v, TableStats::emit),
            B::PortStats(v) => return each(v, PortStats::emit),
            B::Queue(v) => return each(v, QueueStats::emit),
            B::Group(v) => return each(v, GroupStats::emit),
            B::GroupDesc(v) => return each(v, GroupDesc::emit),
            B::Meter(v) => return each(v, MeterStats::emit),
            B::MeterConfig(v) => return each(v, MeterConfig::emit),
            B::TableFeatures(v) => return each(v, TableFeatures::emit),
            B::PortDesc(v) => return each(v, Port::emit),
            B::Desc(d) => d.emit(&mut single),
            B::Aggregate(a) => a.emit(&mut single),
            B::GroupFeatures(g) => g.emit(&mut single),
            B::MeterFeatures(m) => m.emit(&mut single),
            B::Experimenter {
                experimenter,
                exp_type,
                data,
            } => {
                single.put_u32(*experimenter);
                single.put_u32(*exp_type);
                single.extend_from_slice(data);
            }
        }
        vec![single]
    }

    fn parse(mp_type: u16, r: &mut Reader<'_>) -> Result<Self, OfpError> {
        use MultipartReplyBody as B;
        Ok(match mp_type {
            mt::DESC => B::Desc(Desc::parse(r)?),
            mt::FLOW => B::Flow(parse_list(r, FlowStats::parse)?),
            mt::AGGREGATE => B::Aggregate(AggregateStats::parse(r)?),
            mt::TABLE => B::Table(parse_list(r, TableStats::parse)?),
            mt::PORT_STATS => B::PortStats(parse_list(r, PortStats::parse)?),
            mt::QUEUE => B::Queue(parse_list(r, QueueStats::parse)?),
            mt::GROUP => B::Group(parse_list(r, GroupStats::parse)?),
            mt::GROUP_DESC => B::GroupDesc(parse_list(r, GroupDesc::parse)?),
            mt::GROUP_FEATURES => B::GroupFeatures(GroupFeatures::parse(r)?),
            mt::METER => B::Meter(parse_list(r, MeterStats::parse)?),
            mt::METER_CONFIG => B::MeterConfig(parse_list(r, MeterConfig::parse)?),
            mt::METER_FEATURES => B::MeterFeatures(MeterFeatures::parse(r)?),
            mt::TABLE_FEATURES => B::TableFeatures(parse_table_features_list(r.rest())?),
            mt::PORT_DESC => B::PortDesc(parse_list(r, Port::parse)?),
            mt::EXPERIMENTER => B::Experimenter {
                experimenter: r.u32()?,
                exp_type: r.u32()?,
                data: r.rest().to_vec(),
            },
            _ => return Err(OfpError::BadRequest(BadRequestCode::BadMultipart)),
        })
    }
}

impl MultipartReply {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u16(self.body.multipart_type());
        out.put_u16(self.flags);
        out.put_zeros(4);
        for item in self.body.encoded_items() {
            out.extend_from_slice(&item);
        }
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let mp_type = r.u16()?;
        let flags = r.u16()?;
        r.skip(4)?;
        let body = MultipartReplyBody::parse(mp_type, r)?;
        if !r.is_empty() {
            return Err(OfpError::BAD_LEN);
        }
        Ok(MultipartReply { flags, body })
    }
}

/// Encodes `body` as one or more MULTIPART_REPLY messages with this xid, each at most 65535
/// bytes, and pushes each message's bytes onto `out`. List bodies are split between entries;
/// every message but the last has OFPMPF_REPLY_MORE set. An empty list yields one message
/// with an empty body. An entry longer than [`MAX_MULTIPART_ITEM_LEN`] cannot be framed (a
/// message's length field would understate it and the peer would lose its place in the
/// stream), so it is left out; the switch refuses the flow-mods and group-mods that would
/// make one.
pub fn encode_multipart_reply_split(xid: u32, body: &MultipartReplyBody, out: &mut Vec<Vec<u8>>) {
    let items = body.encoded_items();
    let max_body = MAX_MULTIPART_ITEM_LEN;
    let mut chunks: Vec<Vec<u8>> = vec![Vec::new()];
    for item in items.into_iter().filter(|item| item.len() <= max_body) {
        let needs_new = chunks
            .last()
            .is_some_and(|c| !c.is_empty() && c.len() + item.len() > max_body);
        if needs_new {
            chunks.push(Vec::new());
        }
        if let Some(last) = chunks.last_mut() {
            last.extend_from_slice(&item);
        }
    }
    let n = chunks.len();
    for (i, chunk) in chunks.into_iter().enumerate() {
        let flags = if i + 1 < n {
            crate::consts::OFPMPF_REPLY_MORE
        } else {
            0
        };
        let mut msg = Vec::with_capacity(MULTIPART_HEADER_LEN + chunk.len());
        crate::buf::emit_header(
            &mut msg,
            crate::consts::msg_type::MULTIPART_REPLY,
            MULTIPART_HEADER_LEN + chunk.len(),
            xid,
        );
        msg.put_u16(body.multipart_type());
        msg.put_u16(flags);
        msg.put_zeros(4);
        msg.extend_from_slice(&chunk);
        out.push(msg);
    }
}
