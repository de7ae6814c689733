//! Checked big-endian reading and writing. Every read that runs past the end of its view
//! fails with the error the view was created with, so each structure reports the spec's
//! own "bad length" code.

use crate::error::OfpError;

/// A cursor over a byte slice that never reads out of bounds.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    short: OfpError,
}

impl<'a> Reader<'a> {
    /// A reader whose short reads fail with `short`.
    pub fn new(buf: &'a [u8], short: OfpError) -> Self {
        Reader { buf, short }
    }

    /// Takes one element of a list whose elements are padded to 8 bytes (actions,
    /// instructions): its type, its length, and a reader over the body after the 4-byte
    /// type/length header. A length below 8, not a multiple of 8, or past the end fails with
    /// `short`.
    pub fn tlv8(&mut self, short: OfpError) -> Result<(u16, usize, Reader<'a>), OfpError> {
        let kind = self.peek_u16(0).map_err(|_| short)?;
        let len = usize::from(self.peek_u16(2).map_err(|_| short)?);
        if len < 8 || len % 8 != 0 {
            return Err(short);
        }
        let raw = self.bytes(len).map_err(|_| short)?;
        let body = raw.get(4..).ok_or(short)?;
        Ok((kind, len, Reader::new(body, short)))
    }

    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], OfpError> {
        let (head, tail) = self.buf.split_at_checked(n).ok_or(self.short)?;
        self.buf = tail;
        Ok(head)
    }

    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], OfpError> {
        let head = self.bytes(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(head);
        Ok(out)
    }

    pub fn skip(&mut self, n: usize) -> Result<(), OfpError> {
        self.bytes(n).map(|_| ())
    }

    /// Consumes and returns everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        core::mem::take(&mut self.buf)
    }

    pub fn u8(&mut self) -> Result<u8, OfpError> {
        Ok(self.array::<1>()?[0])
    }

    pub fn u16(&mut self) -> Result<u16, OfpError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    pub fn u32(&mut self) -> Result<u32, OfpError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    pub fn u64(&mut self) -> Result<u64, OfpError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    /// Peeks at the big-endian u16 at `offset` without consuming.
    pub fn peek_u16(&self, offset: usize) -> Result<u16, OfpError> {
        let b = self.buf.get(offset..offset + 2).ok_or(self.short)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
}

/// Big-endian appends onto a byte vector.
pub(crate) trait Put {
    fn put_u8(&mut self, v: u8);
    fn put_u16(&mut self, v: u16);
    fn put_u32(&mut self, v: u32);
    fn put_u64(&mut self, v: u64);
    fn put_zeros(&mut self, n: usize);
    /// Overwrites the u16 at `at` (written earlier as a placeholder).
    fn patch_u16(&mut self, at: usize, v: u16);
    /// Zero-pads so that the bytes written since `start` are a multiple of 8.
    fn pad_to_8(&mut self, start: usize);
}

impl Put for Vec<u8> {
    fn put_u8(&mut self, v: u8) {
        self.push(v);
    }
    fn put_u16(&mut self, v: u16) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_zeros(&mut self, n: usize) {
        self.resize(self.len() + n, 0);
    }
    fn patch_u16(&mut self, at: usize, v: u16) {
        if let Some(slot) = self.get_mut(at..at + 2) {
            slot.copy_from_slice(&v.to_be_bytes());
        }
    }
    fn pad_to_8(&mut self, start: usize) {
        let len = self.len().saturating_sub(start);
        self.put_zeros(pad8(len) - len);
    }
}

/// `len` rounded up to a multiple of 8.
pub(crate) const fn pad8(len: usize) -> usize {
    (len + 7) & !7
}

/// A length for a u16 length field. Encodings past 64 KiB cannot be expressed on the wire;
/// they saturate so the receiver rejects them instead of misparsing.
pub(crate) fn wire_len(len: usize) -> u16 {
    u16::try_from(len).unwrap_or(u16::MAX)
}

/// Writes a u16 length placeholder and returns its position for [`Put::patch_u16`].
pub(crate) fn len_placeholder(out: &mut Vec<u8>) -> usize {
    let at = out.len();
    out.put_u16(0);
    at
}

/// Reads a fixed-size, NUL-terminated string field (port names, descriptions). The result
/// always fits [`put_name`] for the same size, so decode/encode/decode is stable.
pub(crate) fn parse_name(raw: &[u8]) -> String {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    let mut s = String::from_utf8_lossy(&raw[..end]).into_owned();
    truncate_at_char(&mut s, raw.len().saturating_sub(1));
    s
}

fn truncate_at_char(s: &mut String, max: usize) {
    let mut cut = max.min(s.len());
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
}

/// Writes `s` into a fixed-size, NUL-padded field of `size` bytes (truncating; always NUL-terminated).
pub(crate) fn put_name(out: &mut Vec<u8>, s: &str, size: usize) {
    let mut s = s.replace('\0', "");
    truncate_at_char(&mut s, size.saturating_sub(1));
    out.extend_from_slice(s.as_bytes());
    out.put_zeros(size - s.len());
}

/// Writes an `ofp_header` of version 4.
pub(crate) fn emit_header(out: &mut Vec<u8>, msg_type: u8, len: usize, xid: u32) {
    out.put_u8(crate::consts::OFP_VERSION);
    out.put_u8(msg_type);
    out.put_u16(wire_len(len));
    out.put_u32(xid);
}
