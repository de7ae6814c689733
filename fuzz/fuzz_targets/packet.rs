//! Arbitrary bytes as one packet on each ingress port: the parser, then a trace through the
//! tables of every action kind (each matched entry's rewrites, pushes and pops run on the
//! trace's own copy of the frame). Must never panic, whatever the bytes claim.
#![no_main]

mod tables;

use dataplane::datapath::{DatapathReaderFactory, DatapathWriter};
use dataplane::key::FlowKey;
use dataplane::parse::parse;
use libfuzzer_sys::fuzz_target;

thread_local! {
    static TABLES: (DatapathWriter, DatapathReaderFactory) = tables::build();
}

fuzz_target!(|data: &[u8]| {
    let Some((port_byte, frame)) = data.split_first() else { return };
    let in_port = u32::from(port_byte % 6);
    let mut key = FlowKey::default();
    let _ = std::hint::black_box(parse(frame, in_port, &mut key));
    TABLES.with(|(_, factory)| {
        if let Some(trace) = factory.trace(in_port, frame) {
            std::hint::black_box(trace);
        }
    });
});
