//! OpenFlow 1.3.5 wire protocol codec: every message, OXM field, instruction, action and
//! multipart body, plus the InSP experimenter extension (see `INSP.md`) and Hairpin's flow
//! placement multipart (see `OFFLOAD.md`).
//!
//! Pure library: no I/O. [`decode`] validates every length and field and never panics; its
//! error maps to the OFPT_ERROR (type, code) the spec names. [`encode`] is its exact inverse.
//! Types follow smoltcp's `wire` idea: typed representations with `parse`/`emit`, all reads
//! checked against the enclosing length.
//!
//! ```
//! use ofp::*;
//!
//! let mut wire = Vec::new();
//! encode(7, &Message::Hello(Hello::v13()), &mut wire);
//! encode(8, &Message::EchoRequest(b"hi".to_vec()), &mut wire);
//! let mut rest = &wire[..];
//! while let Some(len) = peek_message_len(rest).filter(|&len| len <= rest.len()) {
//!     let (msg, tail) = rest.split_at(len);
//!     match decode(msg) {
//!         Ok((header, Message::EchoRequest(data))) => assert_eq!((header.xid, data), (8, b"hi".to_vec())),
//!         Ok((_, Message::Hello(h))) => assert_eq!(h.version_bitmap(), Some(&[1u32 << 4][..])),
//!         Ok(other) => panic!("unexpected {other:?}"),
//!         // A real agent answers with OFPT_ERROR: e.error.type_code() on xid e.xid.
//!         Err(e) => panic!("{e}"),
//!     }
//!     rest = tail;
//! }
//! ```

mod action;
mod buf;
pub mod consts;
mod error;
mod flow;
mod group;
mod insp;
mod instruction;
mod message;
mod meter;
mod multipart;
mod oxm;
mod placement;
mod port;
mod queue;
mod stats;
mod switch;
mod table_features;

pub use action::{action_type, emit_actions, parse_actions, Action};
pub use consts::*;
pub use error::*;
pub use flow::{FlowMod, FlowModCommand, FlowModFlags, FlowRemoved, PacketIn, PacketOut};
pub use group::{Bucket, GroupMod, GroupModCommand, GroupType};
pub use insp::*;
pub use instruction::{emit_instructions, instruction_type, parse_instructions, Instruction};
pub use message::{decode, encode, encode_to_vec, peek_message_len, Header, Message};
pub use meter::{band_type, MeterBand, MeterFlags, MeterMod, MeterModCommand};
pub use multipart::*;
pub use oxm::*;
pub use placement::*;
pub use port::*;
pub use queue::*;
pub use stats::*;
pub use switch::*;
pub use table_features::*;
