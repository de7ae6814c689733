//! Hybrid hardware/software flow tables: the rules a switch chip can hold go down to it, the
//! rest stay in Hairpin's software pipeline, and the controller cannot tell the difference
//! except in speed (seeds 003 and 004).
//!
//! - [`profile`]: what a device's hardware tables hold, read from data files;
//! - [`cube`], [`index`]: matches as sets of packets, and finding overlapping rules fast;
//! - [`program`]: a rule's actions in the terms hardware understands;
//! - [`placement`]: which rule lives where, under the invariant that keeps the pipeline's
//!   meaning, with seed 003's Algorithm 1 and CacheFlow's dependent-set and cover-set ways,
//!   and the promotion policies;
//! - [`image`]: the hardware tables as a fast path looks packets up in them, with the
//!   lookup and the merged counting (the `model` backend's hardware, the property test's);
//! - [`sink`]: the planner as the switch core's op sink, in front of the software datapath.
//!
//! Not here: the software datapath (`dataplane`), OpenFlow state and validation
//! (`switch-core`).

pub mod cube;
pub mod image;
pub mod index;
pub mod model;
pub mod placement;
pub mod profile;
pub mod program;
pub mod sink;
pub mod table2;
