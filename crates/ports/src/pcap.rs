//! Classic pcap files (not pcapng), little-endian, Ethernet link type: a capture of a
//! port for debugging, and a reader for replay and tests.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::frame::{RxFrame, VLAN_TAG_LEN};

const MAGIC_MICROS: u32 = 0xa1b2_c3d4;
const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
const LINKTYPE_ETHERNET: u32 = 1;
const FILE_HEADER_LEN: usize = 24;
const RECORD_HEADER_LEN: usize = 16;
/// Largest record length the reader accepts, whatever a file's header claims.
const MAX_RECORD: u32 = 262_144;
const MACS_LEN: usize = 12;

/// Resolution of the record timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampPrecision {
    Micro,
    Nano,
}

/// Writes frames to a pcap stream.
pub struct PcapWriter<W: Write = BufWriter<File>> {
    out: W,
    precision: TimestampPrecision,
    snaplen: u32,
}

impl PcapWriter<BufWriter<File>> {
    /// Creates (or truncates) `path` and writes the file header.
    pub fn create(path: impl AsRef<Path>, precision: TimestampPrecision) -> io::Result<Self> {
        let path = path.as_ref();
        let file = File::create(path)
            .map_err(|e| crate::sys::with_context(e, format!("create pcap {}", path.display())))?;
        Self::new(BufWriter::new(file), precision, u32::from(u16::MAX))
    }
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header to `out`; frames longer than `snaplen` are truncated.
    pub fn new(mut out: W, precision: TimestampPrecision, snaplen: u32) -> io::Result<Self> {
        let magic = match precision {
            TimestampPrecision::Micro => MAGIC_MICROS,
            TimestampPrecision::Nano => MAGIC_NANOS,
        };
        let mut header = [0u8; FILE_HEADER_LEN];
        header[0..4].copy_from_slice(&magic.to_le_bytes());
        header[4..6].copy_from_slice(&2u16.to_le_bytes());
        header[6..8].copy_from_slice(&4u16.to_le_bytes());
        header[16..20].copy_from_slice(&snaplen.to_le_bytes());
        header[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&header)?;
        Ok(PcapWriter {
            out,
            precision,
            snaplen,
        })
    }

    fn record_header(&mut self, time: SystemTime, incl_len: u32, orig_len: u32) -> io::Result<()> {
        let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
        let frac = match self.precision {
            TimestampPrecision::Micro => since.subsec_micros(),
            TimestampPrecision::Nano => since.subsec_nanos(),
        };
        let mut header = [0u8; RECORD_HEADER_LEN];
        header[0..4].copy_from_slice(&(since.as_secs() as u32).to_le_bytes());
        header[4..8].copy_from_slice(&frac.to_le_bytes());
        header[8..12].copy_from_slice(&incl_len.to_le_bytes());
        header[12..16].copy_from_slice(&orig_len.to_le_bytes());
        self.out.write_all(&header)
    }

    /// Writes one frame seen at `time`; `orig_len` is its full length on the wire.
    pub fn write_frame(&mut self, time: SystemTime, frame: &[u8], orig_len: u32) -> io::Result<()> {
        let incl = frame.len().min(self.snaplen as usize);
        self.record_header(time, incl as u32, orig_len.max(incl as u32))?;
        self.out.write_all(frame.get(..incl).unwrap_or(frame))
    }

    /// Writes a received frame as it was on the wire (stripped VLAN tag restored),
    /// without copying it first.
    pub fn write_rx(&mut self, time: SystemTime, frame: &RxFrame<'_>) -> io::Result<()> {
        let (Some(tag), Some((macs, rest))) = (frame.vlan, frame.data.split_at_checked(MACS_LEN))
        else {
            return self.write_frame(time, frame.data, frame.orig_len);
        };
        let incl = (frame.data.len() + VLAN_TAG_LEN).min(self.snaplen as usize);
        self.record_header(time, incl as u32, frame.orig_len.max(incl as u32))?;
        let mut tag_bytes = [0u8; VLAN_TAG_LEN];
        tag_bytes[..2].copy_from_slice(&tag.tpid.to_be_bytes());
        tag_bytes[2..].copy_from_slice(&tag.tci.to_be_bytes());
        let mut left = incl;
        for part in [macs, &tag_bytes[..], rest] {
            let take = part.len().min(left);
            self.out.write_all(part.get(..take).unwrap_or_default())?;
            left -= take;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// One record's header; its bytes are in the buffer given to
/// [`PcapReader::next_record`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PcapRecord {
    pub ts_sec: u32,
    /// Sub-second part in nanoseconds, whatever the file's precision.
    pub ts_nanos: u32,
    pub incl_len: u32,
    pub orig_len: u32,
}

/// Reads a classic pcap stream of either byte order and precision.
pub struct PcapReader<R: Read = BufReader<File>> {
    input: R,
    big_endian: bool,
    precision: TimestampPrecision,
    snaplen: u32,
    link_type: u32,
}

impl PcapReader<BufReader<File>> {
    pub fn open(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref();
        let file = File::open(path)
            .map_err(|e| crate::sys::with_context(e, format!("open pcap {}", path.display())))?;
        Self::new(BufReader::new(file))
    }
}

fn invalid(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_owned())
}

impl<R: Read> PcapReader<R> {
    /// Reads and checks the file header.
    pub fn new(mut input: R) -> io::Result<Self> {
        let mut header = [0u8; FILE_HEADER_LEN];
        input.read_exact(&mut header)?;
        let word = |at: usize, big: bool| {
            let bytes = [header[at], header[at + 1], header[at + 2], header[at + 3]];
            if big {
                u32::from_be_bytes(bytes)
            } else {
                u32::from_le_bytes(bytes)
            }
        };
        let (big_endian, precision) = match (word(0, false), word(0, true)) {
            (MAGIC_MICROS, _) => (false, TimestampPrecision::Micro),
            (MAGIC_NANOS, _) => (false, TimestampPrecision::Nano),
            (_, MAGIC_MICROS) => (true, TimestampPrecision::Micro),
            (_, MAGIC_NANOS) => (true, TimestampPrecision::Nano),
            _ => return Err(invalid("not a classic pcap file (bad magic)")),
        };
        Ok(PcapReader {
            input,
            big_endian,
            precision,
            snaplen: word(16, big_endian),
            link_type: word(20, big_endian),
        })
    }

    pub fn precision(&self) -> TimestampPrecision {
        self.precision
    }

    pub fn snaplen(&self) -> u32 {
        self.snaplen
    }

    pub fn link_type(&self) -> u32 {
        self.link_type
    }

    /// Reads the next record's bytes into `buf` (replacing its contents); `None` at a
    /// clean end of file. Lengths beyond the snap length (or 256 KiB) are refused.
    pub fn next_record(&mut self, buf: &mut Vec<u8>) -> io::Result<Option<PcapRecord>> {
        let mut header = [0u8; RECORD_HEADER_LEN];
        match self.input.read_exact(&mut header) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        let word = |at: usize| {
            let bytes = [header[at], header[at + 1], header[at + 2], header[at + 3]];
            if self.big_endian {
                u32::from_be_bytes(bytes)
            } else {
                u32::from_le_bytes(bytes)
            }
        };
        let frac = word(4);
        let record = PcapRecord {
            ts_sec: word(0),
            ts_nanos: match self.precision {
                TimestampPrecision::Micro => frac.saturating_mul(1000),
                TimestampPrecision::Nano => frac,
            },
            incl_len: word(8),
            orig_len: word(12),
        };
        if record.incl_len > self.snaplen.clamp(1, MAX_RECORD) {
            return Err(invalid("pcap record longer than the snap length"));
        }
        buf.resize(record.incl_len as usize, 0);
        self.input.read_exact(buf)?;
        Ok(Some(record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::VlanTag;
    use std::time::Duration;

    #[test]
    fn round_trip_both_precisions() {
        for precision in [TimestampPrecision::Micro, TimestampPrecision::Nano] {
            let mut writer = PcapWriter::new(Vec::new(), precision, 100).unwrap();
            let t = UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789);
            writer.write_frame(t, &[1u8; 60], 60).unwrap();
            writer.write_frame(t, &[2u8; 150], 150).unwrap();
            let bytes = writer.into_inner();
            assert_eq!(
                bytes.len(),
                FILE_HEADER_LEN + 2 * RECORD_HEADER_LEN + 60 + 100
            );
            let mut reader = PcapReader::new(&bytes[..]).unwrap();
            assert_eq!(reader.precision(), precision);
            assert_eq!(reader.link_type(), LINKTYPE_ETHERNET);
            let mut buf = Vec::new();
            let first = reader.next_record(&mut buf).unwrap().unwrap();
            assert_eq!((first.incl_len, first.orig_len), (60, 60));
            assert_eq!(first.ts_sec, 1_700_000_000);
            let expected_nanos = if precision == TimestampPrecision::Nano {
                123_456_789
            } else {
                123_456_000
            };
            assert_eq!(first.ts_nanos, expected_nanos);
            assert_eq!(buf, vec![1u8; 60]);
            let second = reader.next_record(&mut buf).unwrap().unwrap();
            assert_eq!((second.incl_len, second.orig_len), (100, 150));
            assert!(reader.next_record(&mut buf).unwrap().is_none());
        }
    }

    #[test]
    fn rx_frames_are_written_with_their_tag() {
        let data: Vec<u8> = (0u8..30).collect();
        let frame = RxFrame {
            data: &data,
            vlan: Some(VlanTag {
                tpid: 0x88a8,
                tci: 5,
            }),
            orig_len: 34,
        };
        let mut writer = PcapWriter::new(Vec::new(), TimestampPrecision::Nano, 1000).unwrap();
        writer.write_rx(SystemTime::now(), &frame).unwrap();
        let bytes = writer.into_inner();
        let mut reader = PcapReader::new(&bytes[..]).unwrap();
        let mut buf = Vec::new();
        let record = reader.next_record(&mut buf).unwrap().unwrap();
        assert_eq!(record.incl_len, 34);
        let mut expected = vec![0u8; 34];
        frame.copy_restored(&mut expected).unwrap();
        assert_eq!(buf, expected);
    }

    #[test]
    fn refuses_oversized_records() {
        let mut writer = PcapWriter::new(Vec::new(), TimestampPrecision::Micro, 64).unwrap();
        writer
            .write_frame(SystemTime::now(), &[0u8; 10], 10)
            .unwrap();
        let mut bytes = writer.into_inner();
        bytes[FILE_HEADER_LEN + 8..FILE_HEADER_LEN + 12].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut reader = PcapReader::new(&bytes[..]).unwrap();
        assert!(reader.next_record(&mut Vec::new()).is_err());
        assert!(PcapReader::new(&[0u8; 24][..]).is_err());
    }
}
