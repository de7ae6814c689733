//! The meter table as the controller sees it (spec 1.3.5 section 5.7 and 7.3.4.4): validation
//! of METER_MOD before anything changes. Besides meters 1 to OFPM_MAX it holds the virtual
//! meter OFPM_CONTROLLER, which every packet-in passes (`dataplane::meter::CONTROLLER`).

use std::collections::BTreeMap;
use std::sync::Arc;

use dataplane::meter::{Band, BandKind, Meter, MeterConfig};
use ofp::{MeterBand, MeterFlags, MeterModFailedCode, OfpError, OFPM_CONTROLLER, OFPM_MAX};

/// Highest number of meters the switch accepts (reported in meter features).
pub const MAX_METERS: usize = 65_536;
/// Highest number of bands per meter.
pub const MAX_BANDS: usize = 16;

/// One meter as configured, with its creation time for meter stats.
#[derive(Clone)]
pub struct MeterEntry {
    pub flags: MeterFlags,
    pub bands: Vec<MeterBand>,
    pub created_ns: u64,
    /// The datapath's token buckets and counters for this meter.
    pub meter: Arc<Meter>,
}

/// The datapath meter for a validated METER_MOD.
pub fn datapath_meter(flags: MeterFlags, bands: &[MeterBand]) -> Meter {
    let bands = bands
        .iter()
        .filter_map(|band| {
            let kind = match band {
                MeterBand::Drop { .. } => BandKind::Drop,
                MeterBand::DscpRemark { prec_level, .. } => BandKind::DscpRemark {
                    prec_level: *prec_level,
                },
                MeterBand::Experimenter { .. } => return None,
            };
            Some(Band {
                kind,
                rate: band.rate(),
                burst: band.burst_size(),
            })
        })
        .collect();
    Meter::new(MeterConfig {
        flags: flags.0,
        bands,
    })
}

fn fail(code: MeterModFailedCode) -> Result<(), OfpError> {
    Err(OfpError::MeterModFailed(code))
}

#[derive(Default)]
pub struct MeterTable {
    meters: BTreeMap<u32, MeterEntry>,
}

impl MeterTable {
    pub fn get(&self, id: u32) -> Option<&MeterEntry> {
        self.meters.get(&id)
    }

    pub fn contains(&self, id: u32) -> bool {
        self.meters.contains_key(&id)
    }

    pub fn iter(&self) -> impl Iterator<Item = (u32, &MeterEntry)> {
        self.meters.iter().map(|(id, m)| (*id, m))
    }

    /// Checks an add (`adding`) or modify of meter `id`.
    pub fn check(
        &self,
        id: u32,
        flags: MeterFlags,
        bands: &[MeterBand],
        adding: bool,
    ) -> Result<(), OfpError> {
        if id == 0 || (id > OFPM_MAX && id != OFPM_CONTROLLER) {
            return fail(MeterModFailedCode::InvalidMeter);
        }
        match (adding, self.meters.contains_key(&id)) {
            (true, true) => return fail(MeterModFailedCode::MeterExists),
            (false, false) => return fail(MeterModFailedCode::UnknownMeter),
            _ => {}
        }
        if adding && self.meters.len() >= MAX_METERS {
            return fail(MeterModFailedCode::OutOfMeters);
        }
        let rate_units =
            flags.contains(MeterFlags::KBPS) as u8 + flags.contains(MeterFlags::PKTPS) as u8;
        if flags.0 & !MeterFlags::ALL.0 != 0 || rate_units > 1 {
            return fail(MeterModFailedCode::BadFlags);
        }
        if bands.len() > MAX_BANDS {
            return fail(MeterModFailedCode::OutOfBands);
        }
        for band in bands {
            match band {
                MeterBand::Experimenter { .. } => return fail(MeterModFailedCode::BadBand),
                MeterBand::DscpRemark { prec_level, .. } if *prec_level > 63 => {
                    return fail(MeterModFailedCode::BadBandValue)
                }
                _ => {}
            }
            if band.rate() == 0 {
                return fail(MeterModFailedCode::BadRate);
            }
            if flags.contains(MeterFlags::BURST) && band.burst_size() == 0 {
                return fail(MeterModFailedCode::BadBurst);
            }
        }
        Ok(())
    }

    pub fn insert(&mut self, id: u32, entry: MeterEntry) {
        self.meters.insert(id, entry);
    }

    /// Meter ids a delete of `id` removes (OFPM_ALL: every meter; unknown ids: none).
    pub fn deletion_set(&self, id: u32) -> Vec<u32> {
        if id == ofp::OFPM_ALL {
            return self.meters.keys().copied().collect();
        }
        self.meters.get(&id).map(|_| vec![id]).unwrap_or_default()
    }

    pub fn remove(&mut self, id: u32) -> Option<MeterEntry> {
        self.meters.remove(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drop_band(rate: u32) -> MeterBand {
        MeterBand::Drop {
            rate,
            burst_size: 0,
        }
    }

    #[test]
    fn refuses_bad_meters_with_the_spec_codes() {
        let mut t = MeterTable::default();
        let code = |r: Result<(), OfpError>| match r {
            Err(OfpError::MeterModFailed(c)) => c,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            code(t.check(0, MeterFlags::KBPS, &[], true)),
            MeterModFailedCode::InvalidMeter
        );
        assert_eq!(
            code(t.check(5, MeterFlags::KBPS, &[], false)),
            MeterModFailedCode::UnknownMeter
        );
        assert_eq!(
            code(t.check(
                5,
                MeterFlags(MeterFlags::KBPS.0 | MeterFlags::PKTPS.0),
                &[],
                true
            )),
            MeterModFailedCode::BadFlags
        );
        assert_eq!(
            code(t.check(5, MeterFlags::KBPS, &[drop_band(0)], true)),
            MeterModFailedCode::BadRate
        );
        assert_eq!(
            code(t.check(
                5,
                MeterFlags(MeterFlags::KBPS.0 | MeterFlags::BURST.0),
                &[drop_band(10)],
                true
            )),
            MeterModFailedCode::BadBurst
        );
        assert!(t.check(5, MeterFlags::KBPS, &[drop_band(10)], true).is_ok());
        t.insert(
            5,
            MeterEntry {
                flags: MeterFlags::KBPS,
                bands: vec![drop_band(10)],
                created_ns: 0,
                meter: Arc::new(datapath_meter(MeterFlags::KBPS, &[drop_band(10)])),
            },
        );
        assert_eq!(
            code(t.check(5, MeterFlags::KBPS, &[], true)),
            MeterModFailedCode::MeterExists
        );
        assert_eq!(t.deletion_set(ofp::OFPM_ALL), vec![5]);
        assert!(t.deletion_set(6).is_empty());
        // Of the virtual meters, the controller's is a meter like any other; the slow path's
        // (there is none apart from the pipeline) is not.
        assert!(t
            .check(OFPM_CONTROLLER, MeterFlags::PKTPS, &[drop_band(10)], true)
            .is_ok());
        assert_eq!(
            code(t.check(
                ofp::OFPM_SLOWPATH,
                MeterFlags::PKTPS,
                &[drop_band(10)],
                true
            )),
            MeterModFailedCode::InvalidMeter
        );
        assert_eq!(OFPM_CONTROLLER, dataplane::meter::CONTROLLER);
    }
}
