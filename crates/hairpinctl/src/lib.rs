//! `hairpinctl`: the operator's CLI for `hairpind`, in the spirit of `ovs-ofctl`. It speaks
//! OpenFlow 1.3 over a unix or TCP connection and reads and prints flows, groups and meters
//! in `ovs-ofctl` syntax.

pub mod syntax;
