//! Arbitrary bytes as packets through a full dataplane pipeline (every action kind, groups,
//! meters, InSP, NORMAL, packet-out): must never panic.
#![no_main]

mod tables;

use dataplane::batch::{PacketBatch, PacketInEvent, PacketSink};
use dataplane::datapath::{DatapathReader, DatapathWriter};
use dataplane::ir::{port, Action};
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;

struct Discard;

impl PacketSink for Discard {
    fn output(&mut self, _port: u32, frame: &[u8]) {
        std::hint::black_box(frame);
    }

    fn packet_in(&mut self, ev: &PacketInEvent<'_>) {
        std::hint::black_box(ev.data);
    }
}

thread_local! {
    static DP: RefCell<(DatapathWriter, DatapathReader, PacketBatch)> = RefCell::new({
        let (w, factory) = tables::build();
        (w, factory.reader(), PacketBatch::new(32, 2048))
    });
}

fuzz_target!(|data: &[u8]| {
    DP.with(|dp| {
        let mut dp = dp.borrow_mut();
        let (_, reader, batch) = &mut *dp;
        let mut rest = data;
        let mut now = 0u64;
        // Each packet: [in_port, len, bytes...].
        while let [port_byte, len, tail @ ..] = rest {
            let n = usize::from(*len).min(tail.len());
            let (pkt, more) = tail.split_at(n);
            batch.push(u32::from(port_byte % 6), pkt);
            rest = more;
            now += 1_000;
        }
        reader.process(now, batch, &mut Discard);
        if !data.is_empty() {
            reader.packet_out(now, 1, &[Action::Output { port: port::TABLE, max_len: 0 }, Action::PopVlan, Action::Output { port: 2, max_len: 0 }], data, &mut Discard);
        }
    });
});
