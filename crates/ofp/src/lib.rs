//! OpenFlow 1.3.5 wire protocol codec: every message, OXM field, instruction, action and
//! multipart body, plus the InSP experimenter extension (see `INSP.md`).
//!
//! Pure library: no I/O. [`decode`] validates every length and field and never panics; its
//! error maps to the OFPT_ERROR (type, code) the spec names. [`encode`] is its exact inverse.
//! Types follow smoltcp's `wire` idea: typed representations with `parse`/`emit`, all reads
//! checked against the enclosing length.

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
pub use message::{
    decode, encode, encode_to_vec, peek_message_len, Header, Message, OFP_HEADER_LEN, OFP_VERSION,
};
pub use meter::{band_type, MeterBand, MeterFlags, MeterMod, MeterModCommand};
pub use multipart::*;
pub use oxm::*;
pub use port::*;
pub use queue::*;
pub use stats::*;
pub use switch::*;
pub use table_features::*;
