//! What Hairpin tells controllers it can do: description, table features, group and meter
//! features. Controllers (ovs-ofctl, Faucet) plan their pipelines from these, so they say
//! exactly what the switch core and datapath implement.

use ofp::{Desc, GroupFeatures, MeterFeatures, OxmFieldId};
use ofp::{OxmId, TableFeatureProp, TableFeatures, TypeId};

use crate::{groups, meters, validate};

/// Every instruction type the pipeline runs (OFPIT_*), InSP excepted (it is advertised as an
/// experimenter instruction through its own extension).
const INSTRUCTIONS: [u16; 6] = [1, 2, 3, 4, 5, 6];
/// Every action type the datapath runs (OFPAT_*).
const ACTIONS: [u16; 16] = [
    0, 11, 12, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
];

pub fn desc(datapath_id: u64) -> Desc {
    Desc {
        mfr_desc: "Hairpin project".into(),
        hw_desc: "Hairpin software datapath".into(),
        sw_desc: concat!("hairpind ", env!("CARGO_PKG_VERSION")).into(),
        serial_num: "None".into(),
        dp_desc: format!("hairpin dpid {datapath_id:016x}"),
    }
}

fn matchable(masked: bool) -> Vec<OxmId> {
    OxmFieldId::ALL
        .iter()
        .map(|id| OxmId::known(*id, masked && id.maskable()))
        .collect()
}

fn settable() -> Vec<OxmId> {
    OxmFieldId::ALL
        .iter()
        .filter(|id| validate::settable(**id))
        .map(|id| OxmId::known(*id, false))
        .collect()
}

fn type_ids(types: &[u16]) -> Vec<TypeId> {
    types.iter().map(|t| TypeId::standard(*t)).collect()
}

/// Features of table `table_id` out of `n_tables`: every table matches every field with the
/// masks OXM allows, runs every instruction and action, and may go to any later table.
pub fn table_features(table_id: u8, n_tables: u8, max_entries: u32) -> TableFeatures {
    let next: Vec<u8> = (table_id.saturating_add(1)..n_tables).collect();
    let last = table_id + 1 >= n_tables;
    let instructions: Vec<u16> = INSTRUCTIONS
        .iter()
        .copied()
        .filter(|t| !(last && *t == 1))
        .collect();
    let props = vec![
        TableFeatureProp::Instructions(type_ids(&instructions)),
        TableFeatureProp::InstructionsMiss(type_ids(&instructions)),
        TableFeatureProp::NextTables(next.clone()),
        TableFeatureProp::NextTablesMiss(next),
        TableFeatureProp::WriteActions(type_ids(&ACTIONS)),
        TableFeatureProp::WriteActionsMiss(type_ids(&ACTIONS)),
        TableFeatureProp::ApplyActions(type_ids(&ACTIONS)),
        TableFeatureProp::ApplyActionsMiss(type_ids(&ACTIONS)),
        TableFeatureProp::Match(matchable(true)),
        TableFeatureProp::Wildcards(matchable(false)),
        TableFeatureProp::WriteSetfield(settable()),
        TableFeatureProp::WriteSetfieldMiss(settable()),
        TableFeatureProp::ApplySetfield(settable()),
        TableFeatureProp::ApplySetfieldMiss(settable()),
    ];
    TableFeatures {
        table_id,
        name: format!("table{table_id}"),
        metadata_match: u64::MAX,
        metadata_write: u64::MAX,
        config: 0,
        max_entries,
        properties: props,
    }
}

/// Group features: all four types, weights, liveness, chaining and chaining checks.
pub fn group_features() -> GroupFeatures {
    let actions = ACTIONS.iter().fold(0u32, |bits, t| bits | (1 << t));
    GroupFeatures {
        types: 0b1111,
        // OFPGFC_SELECT_WEIGHT | SELECT_LIVENESS | CHAINING | CHAINING_CHECKS
        capabilities: 0b1111,
        max_groups: [groups::MAX_GROUPS as u32; 4],
        actions: [actions; 4],
    }
}

/// Meter features: drop and DSCP-remark bands, kbps and pktps, burst and stats.
pub fn meter_features() -> MeterFeatures {
    MeterFeatures {
        max_meter: meters::MAX_METERS as u32,
        band_types: (1 << ofp::band_type::DROP) | (1 << ofp::band_type::DSCP_REMARK),
        capabilities: ofp::MeterFlags::ALL.0.into(),
        max_bands: meters::MAX_BANDS as u8,
        max_color: 0,
    }
}

/// The property kinds a table features reply carries, for tests.
pub fn property_types(features: &TableFeatures) -> Vec<u16> {
    features.properties.iter().map(|p| p.prop_type()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_table_has_no_goto_and_no_next_tables() {
        let f = table_features(253, 254, 1000);
        let types = property_types(&f);
        assert!(types.contains(&ofp::prop_type::MATCH));
        let next = f.properties.iter().find_map(|p| match p {
            TableFeatureProp::NextTables(n) => Some(n.clone()),
            _ => None,
        });
        assert_eq!(next, Some(vec![]));
        let first = table_features(0, 254, 1000);
        let next = first.properties.iter().find_map(|p| match p {
            TableFeatureProp::NextTables(n) => Some(n.len()),
            _ => None,
        });
        assert_eq!(next, Some(253));
    }
}
