//! The OpenFlow header, the [`Message`] enum and the top-level decode/encode.

use crate::buf::{emit_header, wire_len, Put, Reader};
use crate::consts::msg_type as t;
use crate::consts::{OFP_HEADER_LEN, OFP_VERSION};
use crate::error::{BadRequestCode, DecodeError, OfpError};
use crate::flow::{FlowMod, FlowRemoved, PacketIn, PacketOut};
use crate::group::GroupMod;
use crate::insp::{
    PktTmpMod, TimerMod, INSP_EXPERIMENTER, PKTTMP_MOD_EXP_TYPE, PKTTMP_MOD_EXT_EXP_TYPE,
    TIMER_MOD_EXP_TYPE,
};
use crate::meter::MeterMod;
use crate::multipart::{MultipartReply, MultipartRequest};
use crate::port::{PortMod, PortStatus, TableMod};
use crate::queue::QueueGetConfigReply;
use crate::switch::*;

/// `ofp_header`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header {
    pub version: u8,
    pub msg_type: u8,
    pub length: u16,
    pub xid: u32,
}

impl Header {
    /// Parses the first 8 bytes of `buf`, if present.
    pub fn parse(buf: &[u8]) -> Option<Header> {
        let b = buf.get(..OFP_HEADER_LEN)?;
        Some(Header {
            version: b[0],
            msg_type: b[1],
            length: u16::from_be_bytes([b[2], b[3]]),
            xid: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        })
    }
}

/// Every OpenFlow 1.3 message, typed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Message {
    Hello(Hello),
    Error(ErrorMsg),
    EchoRequest(Vec<u8>),
    EchoReply(Vec<u8>),
    Experimenter(ExperimenterMsg),
    FeaturesRequest,
    FeaturesReply(SwitchFeatures),
    GetConfigRequest,
    GetConfigReply(SwitchConfig),
    SetConfig(SwitchConfig),
    PacketIn(PacketIn),
    FlowRemoved(FlowRemoved),
    PortStatus(PortStatus),
    PacketOut(PacketOut),
    FlowMod(FlowMod),
    GroupMod(GroupMod),
    PortMod(PortMod),
    TableMod(TableMod),
    MultipartRequest(MultipartRequest),
    MultipartReply(MultipartReply),
    BarrierRequest,
    BarrierReply,
    QueueGetConfigRequest {
        port: u32,
    },
    QueueGetConfigReply(QueueGetConfigReply),
    RoleRequest(RoleMsg),
    RoleReply(RoleMsg),
    GetAsyncRequest,
    GetAsyncReply(AsyncConfig),
    SetAsync(AsyncConfig),
    MeterMod(MeterMod),
    /// InSP PKTTMP_MOD (OFPT_EXPERIMENTER, experimenter 0xBEBABEBA, exp_type 1 or 2).
    PktTmpMod(PktTmpMod),
    /// InSP timer trigger, our extension (OFPT_EXPERIMENTER, 0xBEBABEBA, exp_type 0x100).
    TimerMod(TimerMod),
}

impl Message {
    /// The `OFPT_*` type number this message is sent with.
    pub fn msg_type(&self) -> u8 {
        use Message as M;
        match self {
            M::Hello(_) => t::HELLO,
            M::Error(_) => t::ERROR,
            M::EchoRequest(_) => t::ECHO_REQUEST,
            M::EchoReply(_) => t::ECHO_REPLY,
            M::Experimenter(_) | M::PktTmpMod(_) | M::TimerMod(_) => t::EXPERIMENTER,
            M::FeaturesRequest => t::FEATURES_REQUEST,
            M::FeaturesReply(_) => t::FEATURES_REPLY,
            M::GetConfigRequest => t::GET_CONFIG_REQUEST,
            M::GetConfigReply(_) => t::GET_CONFIG_REPLY,
            M::SetConfig(_) => t::SET_CONFIG,
            M::PacketIn(_) => t::PACKET_IN,
            M::FlowRemoved(_) => t::FLOW_REMOVED,
            M::PortStatus(_) => t::PORT_STATUS,
            M::PacketOut(_) => t::PACKET_OUT,
            M::FlowMod(_) => t::FLOW_MOD,
            M::GroupMod(_) => t::GROUP_MOD,
            M::PortMod(_) => t::PORT_MOD,
            M::TableMod(_) => t::TABLE_MOD,
            M::MultipartRequest(_) => t::MULTIPART_REQUEST,
            M::MultipartReply(_) => t::MULTIPART_REPLY,
            M::BarrierRequest => t::BARRIER_REQUEST,
            M::BarrierReply => t::BARRIER_REPLY,
            M::QueueGetConfigRequest { .. } => t::QUEUE_GET_CONFIG_REQUEST,
            M::QueueGetConfigReply(_) => t::QUEUE_GET_CONFIG_REPLY,
            M::RoleRequest(_) => t::ROLE_REQUEST,
            M::RoleReply(_) => t::ROLE_REPLY,
            M::GetAsyncRequest => t::GET_ASYNC_REQUEST,
            M::GetAsyncReply(_) => t::GET_ASYNC_REPLY,
            M::SetAsync(_) => t::SET_ASYNC,
            M::MeterMod(_) => t::METER_MOD,
        }
    }

    fn emit_body(&self, out: &mut Vec<u8>, msg_start: usize) {
        use Message as M;
        match self {
            M::Hello(h) => h.emit(out),
            M::Error(e) => e.emit(out),
            M::EchoRequest(d) | M::EchoReply(d) => out.extend_from_slice(d),
            M::Experimenter(e) => {
                out.put_u32(e.experimenter);
                out.put_u32(e.exp_type);
                out.extend_from_slice(&e.data);
            }
            M::PktTmpMod(p) => {
                out.put_u32(INSP_EXPERIMENTER);
                out.put_u32(p.exp_type());
                p.emit_body(out, msg_start);
            }
            M::TimerMod(m) => {
                out.put_u32(INSP_EXPERIMENTER);
                out.put_u32(TIMER_MOD_EXP_TYPE);
                m.emit_body(out);
            }
            M::FeaturesRequest
            | M::GetConfigRequest
            | M::BarrierRequest
            | M::BarrierReply
            | M::GetAsyncRequest => {}
            M::FeaturesReply(f) => f.emit(out),
            M::GetConfigReply(c) | M::SetConfig(c) => c.emit(out),
            M::PacketIn(p) => p.emit(out),
            M::FlowRemoved(f) => f.emit(out),
            M::PortStatus(p) => p.emit(out),
            M::PacketOut(p) => p.emit(out),
            M::FlowMod(f) => f.emit(out),
            M::GroupMod(g) => g.emit(out),
            M::PortMod(p) => p.emit(out),
            M::TableMod(tm) => tm.emit(out),
            M::MultipartRequest(m) => m.emit(out),
            M::MultipartReply(m) => m.emit(out),
            M::QueueGetConfigRequest { port } => {
                out.put_u32(*port);
                out.put_zeros(4);
            }
            M::QueueGetConfigReply(q) => q.emit(out),
            M::RoleRequest(r) | M::RoleReply(r) => r.emit(out),
            M::GetAsyncReply(a) | M::SetAsync(a) => a.emit(out),
            M::MeterMod(m) => m.emit(out),
        }
    }

    /// Parses a body of the given type. Bodies of fixed-size messages must be exact.
    fn parse_body(version: u8, msg_type: u8, body: &[u8]) -> Result<Message, OfpError> {
        use Message as M;
        let mut r = Reader::new(body, OfpError::BAD_LEN);
        let r = &mut r;
        let msg = match msg_type {
            t::HELLO => return Hello::parse(body, version == OFP_VERSION).map(M::Hello),
            t::ERROR => return ErrorMsg::parse(body).map(M::Error),
            t::ECHO_REQUEST => return Ok(M::EchoRequest(body.to_vec())),
            t::ECHO_REPLY => return Ok(M::EchoReply(body.to_vec())),
            t::EXPERIMENTER => return parse_experimenter(r),
            t::FEATURES_REQUEST => M::FeaturesRequest,
            t::FEATURES_REPLY => M::FeaturesReply(SwitchFeatures::parse(r)?),
            t::GET_CONFIG_REQUEST => M::GetConfigRequest,
            t::GET_CONFIG_REPLY => M::GetConfigReply(SwitchConfig::parse(r)?),
            t::SET_CONFIG => M::SetConfig(SwitchConfig::parse(r)?),
            t::PACKET_IN => return PacketIn::parse(r).map(M::PacketIn),
            t::FLOW_REMOVED => M::FlowRemoved(FlowRemoved::parse(r)?),
            t::PORT_STATUS => M::PortStatus(PortStatus::parse(r)?),
            t::PACKET_OUT => return PacketOut::parse(r).map(M::PacketOut),
            t::FLOW_MOD => return FlowMod::parse(r).map(M::FlowMod),
            t::GROUP_MOD => return GroupMod::parse(r).map(M::GroupMod),
            t::PORT_MOD => M::PortMod(PortMod::parse(r)?),
            t::TABLE_MOD => M::TableMod(TableMod::parse(r)?),
            t::MULTIPART_REQUEST => M::MultipartRequest(MultipartRequest::parse(r)?),
            t::MULTIPART_REPLY => M::MultipartReply(MultipartReply::parse(r)?),
            t::BARRIER_REQUEST => M::BarrierRequest,
            t::BARRIER_REPLY => M::BarrierReply,
            t::QUEUE_GET_CONFIG_REQUEST => {
                let port = r.u32()?;
                r.skip(4)?;
                M::QueueGetConfigRequest { port }
            }
            t::QUEUE_GET_CONFIG_REPLY => M::QueueGetConfigReply(QueueGetConfigReply::parse(r)?),
            t::ROLE_REQUEST => M::RoleRequest(RoleMsg::parse(r)?),
            t::ROLE_REPLY => M::RoleReply(RoleMsg::parse(r)?),
            t::GET_ASYNC_REQUEST => M::GetAsyncRequest,
            t::GET_ASYNC_REPLY => M::GetAsyncReply(AsyncConfig::parse(r)?),
            t::SET_ASYNC => M::SetAsync(AsyncConfig::parse(r)?),
            t::METER_MOD => return MeterMod::parse(r).map(M::MeterMod),
            _ => return Err(OfpError::BadRequest(BadRequestCode::BadType)),
        };
        if !r.is_empty() {
            return Err(OfpError::BAD_LEN);
        }
        Ok(msg)
    }
}

fn parse_experimenter(r: &mut Reader<'_>) -> Result<Message, OfpError> {
    let experimenter = r.u32()?;
    let exp_type = r.u32()?;
    if experimenter == INSP_EXPERIMENTER
        && (exp_type == PKTTMP_MOD_EXP_TYPE || exp_type == PKTTMP_MOD_EXT_EXP_TYPE)
    {
        return PktTmpMod::parse_body(exp_type, r.rest()).map(Message::PktTmpMod);
    }
    if experimenter == INSP_EXPERIMENTER && exp_type == TIMER_MOD_EXP_TYPE {
        return TimerMod::parse_body(r.rest()).map(Message::TimerMod);
    }
    Ok(Message::Experimenter(ExperimenterMsg {
        experimenter,
        exp_type,
        data: r.rest().to_vec(),
    }))
}

/// Length of the next complete message in `buf` if it holds at least a header (reads
/// `header.length`); `None` if fewer than 8 bytes are buffered. A length field below 8 is
/// reported as 8, so the caller takes just the header and [`decode`] rejects it with
/// OFPBRC_BAD_LEN (the stream cannot be resynchronised after that).
pub fn peek_message_len(buf: &[u8]) -> Option<usize> {
    let h = Header::parse(buf)?;
    Some(usize::from(h.length).max(OFP_HEADER_LEN))
}

/// Decodes exactly one message; `buf` must be exactly `header.length` bytes.
pub fn decode(buf: &[u8]) -> Result<(Header, Message), DecodeError> {
    let h = Header::parse(buf).ok_or(DecodeError {
        xid: 0,
        error: OfpError::BAD_LEN,
    })?;
    let fail = |error| DecodeError { xid: h.xid, error };
    if usize::from(h.length) != buf.len() {
        return Err(fail(OfpError::BAD_LEN));
    }
    if h.version != OFP_VERSION && h.msg_type != t::HELLO {
        return Err(fail(OfpError::BadRequest(BadRequestCode::BadVersion)));
    }
    let body = buf.get(OFP_HEADER_LEN..).unwrap_or_default();
    let msg = Message::parse_body(h.version, h.msg_type, body).map_err(fail)?;
    Ok((h, msg))
}

/// Appends the encoding of `msg` with this xid to `out`.
pub fn encode(xid: u32, msg: &Message, out: &mut Vec<u8>) {
    let start = out.len();
    emit_header(out, msg.msg_type(), 0, xid);
    msg.emit_body(out, start);
    let len = wire_len(out.len() - start);
    out.patch_u16(start + 2, len);
}

/// Convenience: the encoding of `msg` as a fresh vector.
pub fn encode_to_vec(xid: u32, msg: &Message) -> Vec<u8> {
    let mut out = Vec::new();
    encode(xid, msg, &mut out);
    out
}
