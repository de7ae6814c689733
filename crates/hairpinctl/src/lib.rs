//! `hairpinctl`: the operator's CLI for `hairpind`, in the spirit of `ovs-ofctl`. It speaks
//! OpenFlow 1.3 over a unix or TCP connection and reads and prints flows, groups and meters
//! in `ovs-ofctl` syntax.

pub mod cli;
pub mod commands;
pub mod conn;
pub mod error;
mod error_names;
pub mod output;
pub mod syntax;
pub mod target;

pub use error_names::describe_error;
