//! Meters: METER_MOD and bands (spec 1.3.5 section 7.3.4.4).

use crate::buf::{len_placeholder, wire_len, Put, Reader};
use crate::error::{MeterModFailedCode, OfpError};

/// METER_MOD command (`OFPMC_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum MeterModCommand {
    Add = 0,
    Modify = 1,
    Delete = 2,
}

/// Meter flags (`OFPMF_*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct MeterFlags(pub u16);

impl MeterFlags {
    pub const KBPS: MeterFlags = MeterFlags(1 << 0);
    pub const PKTPS: MeterFlags = MeterFlags(1 << 1);
    pub const BURST: MeterFlags = MeterFlags(1 << 2);
    pub const STATS: MeterFlags = MeterFlags(1 << 3);
    /// Every bit the spec defines.
    pub const ALL: MeterFlags = MeterFlags(0xf);

    pub fn contains(self, other: MeterFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::ops::BitOr for MeterFlags {
    type Output = MeterFlags;
    fn bitor(self, rhs: Self) -> Self {
        MeterFlags(self.0 | rhs.0)
    }
}

/// Band type numbers (`OFPMBT_*`).
pub mod band_type {
    pub const DROP: u16 = 1;
    pub const DSCP_REMARK: u16 = 2;
    pub const EXPERIMENTER: u16 = 0xffff;
}

/// One meter band. Rates are in kb/s or packets/s according to the meter's flags.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MeterBand {
    Drop {
        rate: u32,
        burst_size: u32,
    },
    DscpRemark {
        rate: u32,
        burst_size: u32,
        prec_level: u8,
    },
    /// `data` follows the experimenter id (keep the band a multiple of 8 bytes).
    Experimenter {
        rate: u32,
        burst_size: u32,
        experimenter: u32,
        data: Vec<u8>,
    },
}

impl MeterBand {
    pub fn band_type(&self) -> u16 {
        match self {
            MeterBand::Drop { .. } => band_type::DROP,
            MeterBand::DscpRemark { .. } => band_type::DSCP_REMARK,
            MeterBand::Experimenter { .. } => band_type::EXPERIMENTER,
        }
    }

    pub fn rate(&self) -> u32 {
        match *self {
            MeterBand::Drop { rate, .. }
            | MeterBand::DscpRemark { rate, .. }
            | MeterBand::Experimenter { rate, .. } => rate,
        }
    }

    pub fn burst_size(&self) -> u32 {
        match *self {
            MeterBand::Drop { burst_size, .. }
            | MeterBand::DscpRemark { burst_size, .. }
            | MeterBand::Experimenter { burst_size, .. } => burst_size,
        }
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(self.band_type());
        let len_at = len_placeholder(out);
        out.put_u32(self.rate());
        out.put_u32(self.burst_size());
        match self {
            MeterBand::Drop { .. } => out.put_zeros(4),
            MeterBand::DscpRemark { prec_level, .. } => {
                out.put_u8(*prec_level);
                out.put_zeros(3);
            }
            MeterBand::Experimenter {
                experimenter, data, ..
            } => {
                out.put_u32(*experimenter);
                out.extend_from_slice(data);
            }
        }
        out.pad_to_8(start);
        let len = wire_len(out.len() - start);
        out.patch_u16(len_at, len);
    }

    fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let kind = r.peek_u16(0)?;
        let len = usize::from(r.peek_u16(2)?);
        if len < 16 || len % 8 != 0 {
            return Err(OfpError::BAD_LEN);
        }
        let mut b = Reader::new(r.bytes(len)?, OfpError::BAD_LEN);
        b.skip(4)?;
        let rate = b.u32()?;
        let burst_size = b.u32()?;
        let fixed = if len == 16 {
            Ok(())
        } else {
            Err(OfpError::BAD_LEN)
        };
        Ok(match kind {
            band_type::DROP => fixed.map(|_| MeterBand::Drop { rate, burst_size })?,
            band_type::DSCP_REMARK => {
                fixed?;
                MeterBand::DscpRemark {
                    rate,
                    burst_size,
                    prec_level: b.u8()?,
                }
            }
            band_type::EXPERIMENTER => MeterBand::Experimenter {
                rate,
                burst_size,
                experimenter: b.u32()?,
                data: b.rest().to_vec(),
            },
            _ => return Err(OfpError::MeterModFailed(MeterModFailedCode::BadBand)),
        })
    }
}

/// Parses a band list that fills `raw`.
pub(crate) fn parse_bands(raw: &[u8]) -> Result<Vec<MeterBand>, OfpError> {
    let mut r = Reader::new(raw, OfpError::BAD_LEN);
    let mut bands = Vec::new();
    while !r.is_empty() {
        bands.push(MeterBand::parse(&mut r)?);
    }
    Ok(bands)
}

pub(crate) fn emit_bands(bands: &[MeterBand], out: &mut Vec<u8>) {
    bands.iter().for_each(|b| b.emit(out));
}

/// OFPT_METER_MOD body.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MeterMod {
    pub command: MeterModCommand,
    pub flags: MeterFlags,
    pub meter_id: u32,
    pub bands: Vec<MeterBand>,
}

impl MeterMod {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u16(self.command as u16);
        out.put_u16(self.flags.0);
        out.put_u32(self.meter_id);
        emit_bands(&self.bands, out);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let command = match r.u16()? {
            0 => MeterModCommand::Add,
            1 => MeterModCommand::Modify,
            2 => MeterModCommand::Delete,
            _ => return Err(OfpError::MeterModFailed(MeterModFailedCode::BadCommand)),
        };
        let flags = MeterFlags(r.u16()?);
        if flags.0 & !MeterFlags::ALL.0 != 0 {
            return Err(OfpError::MeterModFailed(MeterModFailedCode::BadFlags));
        }
        let meter_id = r.u32()?;
        Ok(MeterMod {
            command,
            flags,
            meter_id,
            bands: parse_bands(r.rest())?,
        })
    }
}
