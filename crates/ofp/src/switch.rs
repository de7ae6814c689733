//! Small controller-switch messages: hello, error, experimenter, features, config, role, async.

use crate::buf::{pad8, Put, Reader};
use crate::error::{OfpError, RoleRequestFailedCode, SwitchConfigFailedCode, OFPET_EXPERIMENTER};

/// OFPHET_VERSIONBITMAP.
pub const OFPHET_VERSIONBITMAP: u16 = 1;

/// OFPT_HELLO body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Hello {
    pub elements: Vec<HelloElement>,
}

impl Hello {
    /// A hello advertising exactly OpenFlow 1.3 in a version bitmap.
    pub fn v13() -> Self {
        Hello {
            elements: vec![HelloElement::VersionBitmap(vec![
                crate::consts::OFP13_VERSION_BIT,
            ])],
        }
    }

    /// The versions advertised by the first version bitmap, if any (bit n = version n).
    pub fn version_bitmap(&self) -> Option<&[u32]> {
        self.elements.iter().find_map(|e| match e {
            HelloElement::VersionBitmap(b) => Some(b.as_slice()),
            HelloElement::Unknown { .. } => None,
        })
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        for e in &self.elements {
            let start = out.len();
            let (elem_type, len) = match e {
                HelloElement::VersionBitmap(b) => (OFPHET_VERSIONBITMAP, 4 + 4 * b.len()),
                HelloElement::Unknown { elem_type, data } => (*elem_type, 4 + data.len()),
            };
            out.put_u16(elem_type);
            out.put_u16(crate::buf::wire_len(len));
            match e {
                HelloElement::VersionBitmap(b) => b.iter().for_each(|w| out.put_u32(*w)),
                HelloElement::Unknown { data, .. } => out.extend_from_slice(data),
            }
            out.pad_to_8(start);
        }
    }

    /// Parses the elements. A hello of another version is read best-effort (spec 7.5.1: ignore
    /// what is not understood) so that version negotiation still works.
    pub(crate) fn parse(body: &[u8], strict: bool) -> Result<Self, OfpError> {
        let mut r = Reader::new(body, OfpError::BAD_LEN);
        let mut elements = Vec::new();
        while !r.is_empty() {
            match HelloElement::parse(&mut r) {
                Ok(e) => elements.push(e),
                Err(e) if strict => return Err(e),
                Err(_) => break,
            }
        }
        Ok(Hello { elements })
    }
}

/// One hello element.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HelloElement {
    /// Bitmap words; bit n of word w advertises version 32*w + n.
    VersionBitmap(Vec<u32>),
    /// An element type OpenFlow 1.3 does not define, kept verbatim.
    Unknown { elem_type: u16, data: Vec<u8> },
}

impl HelloElement {
    fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let elem_type = r.u16()?;
        let len = usize::from(r.u16()?);
        let data = r.bytes(len.checked_sub(4).ok_or(OfpError::BAD_LEN)?)?;
        r.skip(pad8(len) - len)?;
        if elem_type != OFPHET_VERSIONBITMAP {
            return Ok(HelloElement::Unknown {
                elem_type,
                data: data.to_vec(),
            });
        }
        if data.len() % 4 != 0 {
            return Err(OfpError::BAD_LEN);
        }
        let words = data
            .chunks_exact(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok(HelloElement::VersionBitmap(words))
    }
}

/// OFPT_ERROR body. `data` is usually the start of the offending request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ErrorMsg {
    pub error: OfpError,
    pub data: Vec<u8>,
}

impl ErrorMsg {
    /// An error answering `request`, carrying at most its first 64 bytes (spec 7.4.4).
    pub fn for_request(error: OfpError, request: &[u8]) -> Self {
        ErrorMsg {
            error,
            data: request.get(..64).unwrap_or(request).to_vec(),
        }
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        let (t, c) = self.error.type_code();
        out.put_u16(t);
        out.put_u16(c);
        if let OfpError::Experimenter { experimenter, .. } = self.error {
            out.put_u32(experimenter);
        }
        out.extend_from_slice(&self.data);
    }

    pub(crate) fn parse(body: &[u8]) -> Result<Self, OfpError> {
        let mut r = Reader::new(body, OfpError::BAD_LEN);
        let t = r.u16()?;
        let c = r.u16()?;
        let error = if t == OFPET_EXPERIMENTER {
            OfpError::Experimenter {
                exp_type: c,
                experimenter: r.u32()?,
            }
        } else {
            OfpError::from_type_code(t, c)
        };
        Ok(ErrorMsg {
            error,
            data: r.rest().to_vec(),
        })
    }
}

/// OFPT_EXPERIMENTER body of an experimenter this crate does not model.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExperimenterMsg {
    pub experimenter: u32,
    pub exp_type: u32,
    pub data: Vec<u8>,
}

/// OFPT_FEATURES_REPLY body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SwitchFeatures {
    pub datapath_id: u64,
    pub n_buffers: u32,
    pub n_tables: u8,
    pub auxiliary_id: u8,
    /// `OFPC_*` bits.
    pub capabilities: u32,
    pub reserved: u32,
}

impl SwitchFeatures {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u64(self.datapath_id);
        out.put_u32(self.n_buffers);
        out.put_u8(self.n_tables);
        out.put_u8(self.auxiliary_id);
        out.put_zeros(2);
        out.put_u32(self.capabilities);
        out.put_u32(self.reserved);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let datapath_id = r.u64()?;
        let n_buffers = r.u32()?;
        let n_tables = r.u8()?;
        let auxiliary_id = r.u8()?;
        r.skip(2)?;
        Ok(SwitchFeatures {
            datapath_id,
            n_buffers,
            n_tables,
            auxiliary_id,
            capabilities: r.u32()?,
            reserved: r.u32()?,
        })
    }
}

/// OFPT_GET_CONFIG_REPLY / OFPT_SET_CONFIG body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SwitchConfig {
    /// `OFPC_FRAG_*`.
    pub flags: u16,
    pub miss_send_len: u16,
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            flags: crate::consts::OFPC_FRAG_NORMAL,
            miss_send_len: crate::consts::OFP_DEFAULT_MISS_SEND_LEN,
        }
    }
}

impl SwitchConfig {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u16(self.flags);
        out.put_u16(self.miss_send_len);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let flags = r.u16()?;
        let miss_send_len = r.u16()?;
        if flags & !crate::consts::OFPC_FRAG_MASK != 0 {
            return Err(OfpError::SwitchConfigFailed(
                SwitchConfigFailedCode::BadFlags,
            ));
        }
        Ok(SwitchConfig {
            flags,
            miss_send_len,
        })
    }
}

/// Controller role (`OFPCR_ROLE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum ControllerRole {
    NoChange = 0,
    Equal = 1,
    Master = 2,
    Slave = 3,
}

impl ControllerRole {
    pub fn from_u32(v: u32) -> Option<Self> {
        match v {
            0 => Some(ControllerRole::NoChange),
            1 => Some(ControllerRole::Equal),
            2 => Some(ControllerRole::Master),
            3 => Some(ControllerRole::Slave),
            _ => None,
        }
    }
}

/// OFPT_ROLE_REQUEST / OFPT_ROLE_REPLY body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RoleMsg {
    pub role: ControllerRole,
    pub generation_id: u64,
}

impl RoleMsg {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.role as u32);
        out.put_zeros(4);
        out.put_u64(self.generation_id);
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let role = ControllerRole::from_u32(r.u32()?)
            .ok_or(OfpError::RoleRequestFailed(RoleRequestFailedCode::BadRole))?;
        r.skip(4)?;
        Ok(RoleMsg {
            role,
            generation_id: r.u64()?,
        })
    }
}

/// OFPT_GET_ASYNC_REPLY / OFPT_SET_ASYNC body. Index 0 is for master/equal, 1 for slave;
/// bit n enables reason n.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AsyncConfig {
    pub packet_in_mask: [u32; 2],
    pub port_status_mask: [u32; 2],
    pub flow_removed_mask: [u32; 2],
}

impl AsyncConfig {
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        for mask in [
            self.packet_in_mask,
            self.port_status_mask,
            self.flow_removed_mask,
        ] {
            out.put_u32(mask[0]);
            out.put_u32(mask[1]);
        }
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, OfpError> {
        let mut pair = || -> Result<[u32; 2], OfpError> { Ok([r.u32()?, r.u32()?]) };
        Ok(AsyncConfig {
            packet_in_mask: pair()?,
            port_status_mask: pair()?,
            flow_removed_mask: pair()?,
        })
    }
}
