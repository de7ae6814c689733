//! dataplane: the OpenFlow 1.3 software datapath of Hairpin. Pure: batches of packets in memory
//! in, outputs and packet-in events out, no OS I/O.
//!
//! - Control API: [`datapath`] (writer/readers, ops, left-right snapshots, `publish` = barrier);
//!   IR of instructions and actions: [`ir`]; flow key and matches: [`key`]; batches and the
//!   sink: [`batch`].
//! - Classification: [`classifier`] (per-table hash / LPM / tuple space search chosen on the
//!   table's contents; keyed hashing; no traffic-learned masks).
//! - Pipeline (private): tables stage by stage over a batch, compiled flow programs, the action
//!   set in spec order, groups, meters, InSP, NORMAL, packet-in/out.
//! - Parts: [`parse`], [`checksum`], [`meter`], [`normal`], [`buffers`], [`template`];
//!   [`hugepages`], the allocator binaries install so large tables get 2 MiB pages;
//!   [`trace`], a packet followed through the tables without being sent.
//!
//! The hot path never allocates per packet (all scratch is preallocated per reader) and never
//! panics: every packet offset is checked against the frame.
mod actions;
pub mod batch;
pub mod buffers;
pub mod checksum;
pub mod classifier;
pub mod counters;
pub mod datapath;
mod frame;
mod group;
pub mod hugepages;
pub mod ir;
pub mod isa;
pub mod key;
pub mod meter;
pub mod model;
pub mod normal;
pub mod parse;
mod pipeline;
mod program;
pub mod shared;
mod snapshot;
pub mod template;
pub mod trace;
mod wire;
