//! Seed 004 Table 2, rows #1-#12, reproduced by filling each profile's table with each rule
//! structure (section 5.1.1's procedure) on the planner: the count where the table refuses
//! a rule or stops taking rules into hardware must be the published capacity exactly.

use std::sync::Arc;

use dataplane::counters::FlowCounters;
use dataplane::ir::{Action, Instruction};
use dataplane::model::FlowId;
use offload::placement::{Mode, Planner, Policy};
use offload::profile::Profile;
use offload::table2::{rule, COLUMNS, TABLE2};

/// Rules in hardware after filling `table` of `profile` with row `row`; stops at `limit`.
fn fill(profile: &Arc<Profile>, table: u8, row: u8, mode: Mode, limit: u32) -> u32 {
    let mut planner = Planner::new(Arc::clone(profile), mode, Policy::Fcfs);
    let out = [Instruction::ApplyActions(vec![Action::Output {
        port: 2,
        max_len: 0,
    }])];
    let mut in_hw = 0;
    for n in 0..limit {
        let (m, priority) = rule(row, n);
        if planner.admit(table, &m, &out, None).is_err() {
            break;
        }
        let id = FlowId(u64::from(n) + 1);
        planner.insert(table, id, priority, m, &out, FlowCounters::new());
        let now: u32 = profile
            .tables_for(table)
            .map(|t| planner.entries_in(t) as u32)
            .sum();
        if now == in_hw {
            break;
        }
        in_hw = now;
    }
    in_hw
}

#[test]
fn every_row_of_table2_is_reproduced() {
    let mut failures = Vec::new();
    for (col, (name, table)) in COLUMNS.iter().enumerate() {
        let profile = Arc::new(Profile::builtin(name).expect("shipped").expect("parses"));
        for (row, field, expected) in TABLE2 {
            let got = fill(&profile, *table, row, Mode::Algorithm1, expected[col] + 10);
            if got != expected[col] {
                failures.push(format!(
                    "{name} table {table} row #{row} {field}: {got}, published {}",
                    expected[col]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_cacheflow_modes_fill_tables_alike() {
    let profile = Arc::new(
        Profile::builtin("hp-3500yl-of10")
            .expect("shipped")
            .expect("parses"),
    );
    for mode in [Mode::DependentSet, Mode::CoverSet] {
        assert_eq!(fill(&profile, 0, 1, mode, 400), 381, "{mode:?}");
        assert_eq!(fill(&profile, 0, 9, mode, 1600), 1526, "{mode:?}");
    }
}
