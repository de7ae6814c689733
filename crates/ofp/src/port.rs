//! Ports: `ofp_port`, PORT_STATUS, PORT_MOD.

use crate::buf::{parse_name, put_name, Put, Reader};
use crate::consts::{
    OFPPF_100GB_FD, OFPPF_100MB_FD, OFPPF_10GB_FD, OFPPF_10MB_FD, OFPPF_1GB_FD, OFPPF_1TB_FD,
    OFPPF_40GB_FD, OFPPF_ALL, OFPPF_OTHER, OFPTC_DEPRECATED_MASK,
};
use crate::error::{OfpError, PortModFailedCode, TableModFailedCode};

/// Length of a port name field.
pub const OFP_MAX_PORT_NAME_LEN: usize = 16;
/// Wire length of `ofp_port`.
pub const OFP_PORT_LEN: usize = 64;

/// Port config bits (`OFPPC_*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PortConfig(pub u32);

impl PortConfig {
    pub const PORT_DOWN: PortConfig = PortConfig(1 << 0);
    pub const NO_RECV: PortConfig = PortConfig(1 << 2);
    pub const NO_FWD: PortConfig = PortConfig(1 << 5);
    pub const NO_PACKET_IN: PortConfig = PortConfig(1 << 6);
    /// Every bit the spec defines.
    pub const ALL: PortConfig = PortConfig(0x65);

    pub fn contains(self, other: PortConfig) -> bool {
        self.0 & other.0 == other.0
    }
}

/// Port state bits (`OFPPS_*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PortState(pub u32);

impl PortState {
    pub const LINK_DOWN: PortState = PortState(1 << 0);
    pub const BLOCKED: PortState = PortState(1 << 1);
    pub const LIVE: PortState = PortState(1 << 2);

    pub fn contains(self, other: PortState) -> bool {
        self.0 & other.0 == other.0
    }
}

/// `ofp_port`: a port's description. Feature fields hold `OFPPF_*` bits; speeds are kb/s.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Port {
    pub port_no: u32,
    pub hw_addr: [u8; 6],
    /// At most 15 bytes; longer names are truncated on encode.
    pub name: String,
    pub config: PortConfig,
    pub state: PortState,
    pub curr: u32,
    pub advertised: u32,
    pub supported: u32,
    pub peer: u32,
    pub curr_speed: u32,
    pub max_speed: u32,
}

impl Port {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.port_no);
        out.put_zeros(4);
        out.extend_from_slice(&self.hw_addr);
        out.put_zeros(2);
        put_name(out, &self.name, OFP_MAX_PORT_NAME_LEN);
        for v in [
            self.config.0,
            self.state.0,
            self.curr,
            self.advertised,
            self.supported,
            self.peer,
            self.curr_speed,
            self.max_speed,
        ] {
            out.put_u32(v);
        }
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let port_no = r.u32()?;
        r.skip(4)?;
        let hw_addr = r.array()?;
        r.skip(2)?;
        let name = parse_name(r.bytes(OFP_MAX_PORT_NAME_LEN)?);
        Ok(Port {
            port_no,
            hw_addr,
            name,
            config: PortConfig(r.u32()?),
            state: PortState(r.u32()?),
            curr: r.u32()?,
            advertised: r.u32()?,
            supported: r.u32()?,
            peer: r.u32()?,
            curr_speed: r.u32()?,
            max_speed: r.u32()?,
        })
    }
}

/// OFPT_PORT_STATUS body.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PortStatus {
    /// `OFPPR_*`.
    pub reason: u8,
    pub desc: Port,
}

impl PortStatus {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u8(self.reason);
        out.put_zeros(7);
        self.desc.emit(out);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let reason = r.u8()?;
        r.skip(7)?;
        Ok(PortStatus {
            reason,
            desc: Port::parse(r)?,
        })
    }
}

/// OFPT_PORT_MOD body. Only `config` bits set in `mask` change; `advertise` 0 means no change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PortMod {
    pub port_no: u32,
    pub hw_addr: [u8; 6],
    pub config: PortConfig,
    pub mask: PortConfig,
    pub advertise: u32,
}

impl PortMod {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.port_no);
        out.put_zeros(4);
        out.extend_from_slice(&self.hw_addr);
        out.put_zeros(2);
        out.put_u32(self.config.0);
        out.put_u32(self.mask.0);
        out.put_u32(self.advertise);
        out.put_zeros(4);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let port_no = r.u32()?;
        r.skip(4)?;
        let hw_addr = r.array()?;
        r.skip(2)?;
        let m = PortMod {
            port_no,
            hw_addr,
            config: PortConfig(r.u32()?),
            mask: PortConfig(r.u32()?),
            advertise: r.u32()?,
        };
        r.skip(4)?;
        if (m.config.0 | m.mask.0) & !PortConfig::ALL.0 != 0 {
            return Err(OfpError::PortModFailed(PortModFailedCode::BadConfig));
        }
        if m.advertise & !OFPPF_ALL != 0 {
            return Err(OfpError::PortModFailed(PortModFailedCode::BadAdvertise));
        }
        Ok(m)
    }
}

/// OFPT_TABLE_MOD body (`config` bits are deprecated in 1.3; kept verbatim).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TableMod {
    pub table_id: u8,
    pub config: u32,
}

impl TableMod {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u8(self.table_id);
        out.put_zeros(3);
        out.put_u32(self.config);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let table_id = r.u8()?;
        r.skip(3)?;
        let config = r.u32()?;
        if config & !OFPTC_DEPRECATED_MASK != 0 {
            return Err(OfpError::TableModFailed(TableModFailedCode::BadConfig));
        }
        Ok(TableMod { table_id, config })
    }
}

/// `ofp_port_features` bit for a full-duplex link speed, where OpenFlow names one.
pub fn speed_feature(mbps: u32) -> u32 {
    match mbps {
        10 => OFPPF_10MB_FD,
        100 => OFPPF_100MB_FD,
        1_000 => OFPPF_1GB_FD,
        10_000 => OFPPF_10GB_FD,
        40_000 => OFPPF_40GB_FD,
        100_000 => OFPPF_100GB_FD,
        1_000_000 => OFPPF_1TB_FD,
        _ => OFPPF_OTHER,
    }
}
