//! dataplane: the OpenFlow 1.3 software datapath of Hairpin. Pure: batches of packets in memory
//! in, outputs and packet-in events out, no OS I/O.
//!
//! Control API: [`datapath`]; IR of flows and actions: [`ir`]; flow key: [`key`].
mod actions;
pub mod batch;
pub mod buffers;
pub mod checksum;
pub mod classifier;
pub mod counters;
pub mod datapath;
mod group;
pub mod ir;
pub mod key;
pub mod meter;
pub mod normal;
pub mod parse;
mod pipeline;
mod program;
mod state;
pub mod template;
