//! Queues: QUEUE_GET_CONFIG_REPLY and queue properties (spec 1.3.5 section 7.2.2).

use crate::buf::{len_placeholder, wire_len, Put, Reader};
use crate::error::OfpError;

/// Queue property types (`OFPQT_*`).
pub mod queue_prop_type {
    pub const MIN_RATE: u16 = 1;
    pub const MAX_RATE: u16 = 2;
    pub const EXPERIMENTER: u16 = 0xffff;
}

/// One queue property. Rates are in 1/10 of a percent; > 1000 means disabled.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum QueueProp {
    MinRate(u16),
    MaxRate(u16),
    Experimenter { experimenter: u32, data: Vec<u8> },
}

impl QueueProp {
    fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let prop_type = match self {
            QueueProp::MinRate(_) => queue_prop_type::MIN_RATE,
            QueueProp::MaxRate(_) => queue_prop_type::MAX_RATE,
            QueueProp::Experimenter { .. } => queue_prop_type::EXPERIMENTER,
        };
        out.put_u16(prop_type);
        let len_at = len_placeholder(out);
        out.put_zeros(4);
        match self {
            QueueProp::MinRate(rate) | QueueProp::MaxRate(rate) => {
                out.put_u16(*rate);
                out.put_zeros(6);
            }
            QueueProp::Experimenter { experimenter, data } => {
                out.put_u32(*experimenter);
                out.put_zeros(4);
                out.extend_from_slice(data);
            }
        }
        let len = wire_len(out.len() - start);
        out.patch_u16(len_at, len);
    }

    fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let prop_type = r.peek_u16(0)?;
        let len = usize::from(r.peek_u16(2)?);
        if len < 16 {
            return Err(OfpError::BAD_LEN);
        }
        let mut b = Reader::new(r.bytes(len)?, OfpError::BAD_LEN);
        b.skip(8)?;
        let rate_prop = |b: &mut Reader<'_>| {
            if len == 16 {
                b.u16()
            } else {
                Err(OfpError::BAD_LEN)
            }
        };
        Ok(match prop_type {
            queue_prop_type::MIN_RATE => QueueProp::MinRate(rate_prop(&mut b)?),
            queue_prop_type::MAX_RATE => QueueProp::MaxRate(rate_prop(&mut b)?),
            queue_prop_type::EXPERIMENTER => {
                let experimenter = b.u32()?;
                b.skip(4)?;
                QueueProp::Experimenter {
                    experimenter,
                    data: b.rest().to_vec(),
                }
            }
            _ => return Err(OfpError::BAD_LEN),
        })
    }
}

/// `ofp_packet_queue`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PacketQueue {
    pub queue_id: u32,
    pub port: u32,
    pub properties: Vec<QueueProp>,
}

impl PacketQueue {
    fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u32(self.queue_id);
        out.put_u32(self.port);
        let len_at = len_placeholder(out);
        out.put_zeros(6);
        self.properties.iter().for_each(|p| p.emit(out));
        let len = wire_len(out.len() - start);
        out.patch_u16(len_at, len);
    }

    fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let len = usize::from(r.peek_u16(8)?);
        if len < 16 {
            return Err(OfpError::BAD_LEN);
        }
        let mut b = Reader::new(r.bytes(len)?, OfpError::BAD_LEN);
        let queue_id = b.u32()?;
        let port = b.u32()?;
        b.skip(8)?;
        let mut properties = Vec::new();
        while !b.is_empty() {
            properties.push(QueueProp::parse(&mut b)?);
        }
        Ok(PacketQueue {
            queue_id,
            port,
            properties,
        })
    }
}

/// OFPT_QUEUE_GET_CONFIG_REPLY body.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QueueGetConfigReply {
    pub port: u32,
    pub queues: Vec<PacketQueue>,
}

impl QueueGetConfigReply {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.port);
        out.put_zeros(4);
        self.queues.iter().for_each(|q| q.emit(out));
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let port = r.u32()?;
        r.skip(4)?;
        let mut queues = Vec::new();
        while !r.is_empty() {
            queues.push(PacketQueue::parse(r)?);
        }
        Ok(QueueGetConfigReply { port, queues })
    }
}
