//! The `model` backend's hardware stage in a datapath thread: each received batch meets the
//! profile's emulated hardware tables first (`offload::model`); what they punt, within the
//! slow path's rate, goes through the pipeline.

use dataplane::batch::{PacketBatch, PacketSink};
use dataplane::datapath::DatapathReader;
use offload::model::ModelStage;

/// A thread's hardware stage and the batch of what it sends to software.
pub struct HardwareStage {
    pub stage: ModelStage,
    to_software: PacketBatch,
}

impl HardwareStage {
    pub fn new(stage: ModelStage) -> Self {
        HardwareStage {
            stage,
            to_software: PacketBatch::new(super::BATCH, dataplane::batch::DEFAULT_MAX_FRAME),
        }
    }

    /// Runs `batch` through the hardware, then what it punts through the pipeline; clears
    /// `batch`.
    pub fn process(
        &mut self,
        now: u64,
        reader: &mut DatapathReader,
        batch: &mut PacketBatch,
        sink: &mut impl PacketSink,
    ) {
        let shard = reader.shard();
        self.stage.run(
            now,
            shard,
            reader.shared(),
            batch,
            sink,
            &mut self.to_software,
        );
        batch.clear();
        if !self.to_software.is_empty() {
            reader.process(now, &mut self.to_software, sink);
        }
    }
}
