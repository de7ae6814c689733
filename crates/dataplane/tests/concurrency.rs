//! A datapath thread keeps forwarding while the writer changes tables; after `publish` the
//! reader sees every op (the barrier), and flow counters add up exactly across threads.

mod common;
use common::*;
use dataplane::batch::PacketBatch;
use dataplane::key::{Field, FieldValue, FlowMatch};
use dataplane::model::{FlowId, Op, OpSink};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

fn dst_match(i: u32) -> FlowMatch {
    let mut m = FlowMatch::any();
    m.set(Field::EthType, FieldValue::from(0x0800u16), None);
    m.set(Field::Ipv4Dst, FieldValue::from(0x0a00_0000 | i), None);
    m
}

#[test]
fn readers_run_while_the_writer_publishes() {
    let (mut w, factory) = datapath_readers(3);
    let counters = add_flow(&mut w, 0, 1, 0, FlowMatch::any(), vec![apply(vec![out(2)])]);
    w.publish();
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..2u64)
        .map(|t| {
            let (stop, sent) = (Arc::clone(&stop), Arc::clone(&sent));
            let mut reader = factory.reader();
            std::thread::spawn(move || {
                let mut batch = PacketBatch::new(32, 2048);
                let mut rec = Recorder::default();
                let mut i = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..32 {
                        batch.push(1, &udp4(1, 0x0a00_0000 | (i % 4000), 1, 2, 64, 64));
                        i += 1;
                    }
                    reader.process(t, &mut batch, &mut rec);
                    sent.fetch_add(32, Ordering::Relaxed);
                    rec.out.clear();
                }
            })
        })
        .collect();
    let mut all = vec![Arc::clone(&counters)];
    for i in 0..4000u32 {
        all.push(add_flow(
            &mut w,
            0,
            100 + u64::from(i),
            10,
            dst_match(i),
            vec![apply(vec![out(3)])],
        ));
        if i % 100 == 99 {
            w.publish();
        }
    }
    for i in (0..4000u32).step_by(2) {
        w.apply(Op::RemoveFlow {
            table: 0,
            id: FlowId(100 + u64::from(i)),
        });
    }
    w.publish();
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().expect("reader thread");
    }
    // After the last publish: even destinations hit the catch-all, odd ones their flow.
    let mut r = factory.reader();
    let rec = send(
        &mut r,
        1,
        &[
            (1, udp4(1, 0x0a00_0002, 1, 2, 64, 64)),
            (1, udp4(1, 0x0a00_0003, 1, 2, 64, 64)),
        ],
    );
    assert_eq!(rec.ports(), vec![2, 3]);
    // Every packet matched exactly one entry: the sharded counters add up exactly.
    let counted: u64 = all.iter().map(|c| c.packets()).sum();
    assert_eq!(counted, sent.load(Ordering::Relaxed) + 2);
}
