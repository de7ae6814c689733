//! `hairpinctl`: the operator's CLI for `hairpind`, in the spirit of `ovs-ofctl`. It speaks
//! OpenFlow 1.3 over `unix:PATH` or `tcp:IP:PORT` (default `unix:/run/hairpin/hairpind.sock`,
//! or `$HAIRPIN_TARGET`) and reads and prints flows, groups and meters in `ovs-ofctl` syntax:
//!
//! ```text
//! hairpinctl add-flow  'table=0,priority=100,cookie=0x1,idle_timeout=10,send_flow_rem,
//!                       tcp,nw_src=10.0.0.0/8,tp_dst=80 actions=meter:1,dec_ttl,output:2,goto_table:1'
//! hairpinctl add-group 'group_id=1,type=select,bucket=weight:10,actions=output:1,bucket=actions=output:2'
//! hairpinctl add-meter 'meter=1,kbps,burst,band=type=drop,rate=1000,burst_size=100'
//! hairpinctl dump-flows 'table=0,cookie=0x1/0xff'
//! ```
//!
//! Match fields use the OVS names (`in_port`, `dl_src`, `nw_dst`, `tp_src`, `ipv6_label`,
//! `pbb_isid`, ...; see [`syntax::fields::describe`]), with protocol shorthands (`ip`, `tcp`,
//! `arp`, `icmp6`, `mpls`, ...). Printing uses the same names, so `dump-flows`,
//! `dump-groups` and `dump-meters` lines can be fed back to the add commands. Switch errors
//! are printed as `error: OFPET_X/OFPXXC_Y (type=T, code=C)` and exit with status 1.
//!
//! Management commands that are not OpenFlow go to the daemon's control socket
//! (`--control PATH`, default `/run/hairpin/hairpind.ctl`, or `$HAIRPIN_CONTROL`):
//! `hairpinctl call help` lists them, `hairpinctl call METHOD '{"param": 1}'` runs one.

pub mod cli;
pub mod commands;
pub mod compose;
pub mod conn;
pub mod control;
pub mod controllets;
pub mod daemon;
pub mod error;
mod error_names;
pub mod output;
pub mod placement;
pub mod syntax;
pub mod target;
pub mod trace;

pub use error_names::describe_error;
