//! Hardware capability profiles: what one device's flow tables hold, read from a data file
//! (`profiles/*.toml`, one per device and mode).
//!
//! A profile names the device's hardware tables in lookup order. Each table serves one
//! OpenFlow table, is either a TCAM (ordered by priority, masks allowed) or an exact-match
//! table (a hash per field set), lists the actions it runs, and says what the device does
//! with a rule it cannot take: keep it in software, refuse it with an OpenFlow error, or
//! accept it and silently not install it. A table's capacity depends on the shape of the rule
//! (seed 004 Table 2: the 3500yl holds 381 rules on in_port/vlan_vid alone, 1526 with any L3
//! field), so capacities belong to *structures*: a structure is the set of fields a rule may
//! match, the fields it must match, and the fields it may mask, with the number of such rules
//! the table holds when filled with them alone. Rules of several structures share a table in
//! proportion: each costs `units / capacity` of the table's `units` (the least common
//! multiple of its structures' capacities), so a table filled with one structure holds
//! exactly that structure's capacity.
//!
//! A bad file is refused with its file, line and field.

use std::fmt;
use std::path::{Path, PathBuf};

use dataplane::key::{Field, FieldSet, FlowMatch};
use serde::Deserialize;
use toml::Spanned;

/// The profiles shipped with Hairpin, by name (the file name without `.toml`).
pub const BUILTIN: &[(&str, &str)] = &[
    ("hp-2920", include_str!("../profiles/hp-2920.toml")),
    (
        "hp-3500yl-of10",
        include_str!("../profiles/hp-3500yl-of10.toml"),
    ),
    (
        "hp-3500yl-of13",
        include_str!("../profiles/hp-3500yl-of13.toml"),
    ),
    ("hpe-5130", include_str!("../profiles/hpe-5130.toml")),
    ("hpe-5700", include_str!("../profiles/hpe-5700.toml")),
    ("nxp-t1040", include_str!("../profiles/nxp-t1040.toml")),
    (
        "extreme-x440",
        include_str!("../profiles/extreme-x440.toml"),
    ),
    (
        "brocade-icx6610",
        include_str!("../profiles/brocade-icx6610.toml"),
    ),
    (
        "quanta-t1048",
        include_str!("../profiles/quanta-t1048.toml"),
    ),
    (
        "edgecore-as4610",
        include_str!("../profiles/edgecore-as4610.toml"),
    ),
    ("xdp-veth", include_str!("../profiles/xdp-veth.toml")),
];

/// A device's hardware tables and the figures the backends model.
#[derive(Clone, Debug)]
pub struct Profile {
    /// Short name (`hp-2920`).
    pub name: String,
    /// The device as its vendor names it.
    pub device: String,
    /// Where the figures come from.
    pub source: String,
    /// Hardware tables in lookup order: a packet is decided by the first table with a hit.
    pub tables: Vec<HwTable>,
    /// Forwarding rate of a hardware hit, per port.
    pub line_rate_mbps: u32,
    /// The slow path: how fast packets that fall to software are served.
    pub slow_path: SlowPath,
    /// Time to write one hardware entry (a TCAM move costs a write too).
    pub insert_us: u32,
    /// Whether the device keeps rules in software tables beside its hardware tables.
    pub software_tables: bool,
}

/// The rate limit of the path from the switch chip to the CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlowPath {
    /// Packets per second (HP `software-rate`); `None`: not limited in packets.
    pub pps: Option<u32>,
    /// Megabits per second (a CPU port's bandwidth); `None`: not limited in bits.
    pub mbps: Option<u32>,
}

/// How a hardware table finds a packet's entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TableKind {
    /// Ternary, ordered by priority: the highest-priority entry matching wins.
    Tcam,
    /// One hash per field set, exact values only; the highest-priority hit over the field
    /// sets wins.
    Exact,
}

/// What the device does with a rule a table cannot take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fallback {
    /// Keeps it in a software table (HP ProVision).
    Software,
    /// Refuses it: TABLE_FULL when full, BAD_MATCH or BAD_ACTION when unsupported.
    Refuse,
    /// Accepts it and does not install it (Quanta T1048 when its TCAM is full, seed 000).
    Ignore,
}

/// One kind of hardware action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HwActionKind {
    /// Output to one or more physical ports (ACL redirect, a MAC entry's port list).
    Output,
    /// Drop (ACL deny, an empty instruction set).
    Drop,
    /// Send to the CPU (copy-to-CPU): output to CONTROLLER, handled by software.
    Controller,
    /// Continue at a later OpenFlow table that is in hardware too.
    Goto,
}

impl HwActionKind {
    const ALL: [(&'static str, HwActionKind); 4] = [
        ("output", HwActionKind::Output),
        ("drop", HwActionKind::Drop),
        ("controller", HwActionKind::Controller),
        ("goto", HwActionKind::Goto),
    ];

    fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
    }

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("?", |(n, _)| n)
    }
}

/// A hardware table.
#[derive(Clone, Debug)]
pub struct HwTable {
    pub name: String,
    /// The OpenFlow table whose rules it holds.
    pub openflow_table: u8,
    pub kind: TableKind,
    /// What happens to a rule that fits a structure when the table has no room.
    pub when_full: Fallback,
    /// What happens to a rule whose match or actions the table cannot hold.
    pub unsupported: Fallback,
    pub actions: Vec<HwActionKind>,
    /// Rule shapes the table holds, tried in order: a rule takes the first that fits.
    pub structures: Vec<Structure>,
    /// The table's size in cost units: the least common multiple of the capacities.
    pub units: u64,
}

/// A rule shape and how many such rules a table holds.
#[derive(Clone, Debug)]
pub struct Structure {
    pub name: String,
    /// Fields a rule may match.
    pub fields: FieldSet,
    /// Fields a rule must match.
    pub required: FieldSet,
    /// Fields a rule may match under a mask (the others only exactly).
    pub masked: FieldSet,
    /// Rules of this structure alone that fill the table.
    pub capacity: u32,
    /// Units of the table one such rule takes (`units / capacity`).
    pub cost: u64,
}

impl Structure {
    /// Whether a rule with this match fits.
    pub fn fits(&self, m: &FlowMatch) -> bool {
        self.fits_fields(m.fields(), m)
    }

    /// [`Self::fits`] with the match's fields already known.
    pub fn fits_fields(&self, fields: FieldSet, m: &FlowMatch) -> bool {
        fields.0 & !self.fields.0 == 0
            && self.required.0 & !fields.0 == 0
            && fields
                .iter()
                .all(|f| self.masked.contains(f) || f.get(&m.mask) == f.full_mask())
    }
}

impl HwTable {
    /// The first structure a rule with this match fits, by index.
    pub fn structure_for(&self, m: &FlowMatch) -> Option<usize> {
        self.structure_for_fields(m.fields(), m)
    }

    /// [`Self::structure_for`] with the match's fields already known.
    pub fn structure_for_fields(&self, fields: FieldSet, m: &FlowMatch) -> Option<usize> {
        self.structures
            .iter()
            .position(|s| s.fits_fields(fields, m))
    }

    pub fn supports(&self, kind: HwActionKind) -> bool {
        self.actions.contains(&kind)
    }

    /// The largest number of rules of any one structure (table features' `max_entries`).
    pub fn max_entries(&self) -> u32 {
        self.structures
            .iter()
            .map(|s| s.capacity)
            .max()
            .unwrap_or(0)
    }
}

impl Profile {
    /// A shipped profile by name.
    pub fn builtin(name: &str) -> Option<Result<Profile, ProfileError>> {
        BUILTIN
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(n, text)| Profile::parse(Path::new(&format!("{n}.toml")), text))
    }

    /// A shipped profile by name, or else a file by path.
    pub fn load(name_or_path: &str) -> Result<Profile, ProfileError> {
        if let Some(p) = Profile::builtin(name_or_path) {
            return p;
        }
        let path = Path::new(name_or_path);
        let text = std::fs::read_to_string(path).map_err(|e| ProfileError {
            file: path.to_path_buf(),
            line: None,
            field: String::new(),
            message: format!(
                "cannot read: {e} (shipped profiles: {})",
                BUILTIN
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })?;
        Profile::parse(path, &text)
    }

    /// Parses and validates a profile; `file` names it in errors.
    pub fn parse(file: &Path, text: &str) -> Result<Profile, ProfileError> {
        let at = |line: Option<usize>, field: String, message: String| ProfileError {
            file: file.to_path_buf(),
            line,
            field,
            message,
        };
        let raw: RawProfile = serde_path_to_error::deserialize(toml::Deserializer::new(text))
            .map_err(|e| {
                let path = e.path().to_string();
                // A spanned value adds a private segment to the path: leave it out.
                let field = path
                    .strip_suffix(".$__serde_spanned_private_value")
                    .unwrap_or(&path)
                    .to_string();
                let inner = e.into_inner();
                at(
                    inner.span().map(|s| line_of(text, s.start)),
                    if field == "." { String::new() } else { field },
                    inner.message().to_string(),
                )
            })?;
        let line = |span: std::ops::Range<usize>| Some(line_of(text, span.start));
        if raw.table.is_empty() {
            return Err(at(
                None,
                "table".into(),
                "a profile names at least one table".into(),
            ));
        }
        let mut tables: Vec<HwTable> = Vec::with_capacity(raw.table.len());
        for (ti, t) in raw.table.iter().enumerate() {
            let here = |name: &str| format!("table[{ti}].{name}");
            if tables.iter().any(|o| o.name == *t.name.get_ref()) {
                return Err(at(
                    line(t.name.span()),
                    here("name"),
                    format!("a second table named `{}`", t.name.get_ref()),
                ));
            }
            let mut actions = Vec::new();
            for a in &t.actions {
                let kind = HwActionKind::parse(a.get_ref()).ok_or_else(|| {
                    at(
                        line(a.span()),
                        here("actions"),
                        format!(
                            "unknown action `{}` (output, drop, controller, goto)",
                            a.get_ref()
                        ),
                    )
                })?;
                actions.push(kind);
            }
            if t.structure.is_empty() {
                return Err(at(
                    line(t.name.span()),
                    here("structure"),
                    "a table has at least one structure".into(),
                ));
            }
            let mut structures = Vec::with_capacity(t.structure.len());
            for (si, s) in t.structure.iter().enumerate() {
                let here = |name: &str| format!("table[{ti}].structure[{si}].{name}");
                let set = |list: &[Spanned<String>],
                           name: &str|
                 -> Result<FieldSet, ProfileError> {
                    let mut set = FieldSet::default();
                    for f in list {
                        let field = field_named(f.get_ref()).ok_or_else(|| {
                            at(
                                line(f.span()),
                                here(name),
                                format!("unknown match field `{}` (OXM names: in_port, eth_dst, ipv4_src, tcp_dst, ...)", f.get_ref()),
                            )
                        })?;
                        set.insert(field);
                    }
                    Ok(set)
                };
                let fields = set(&s.fields, "fields")?;
                let required = set(&s.required, "required")?;
                let masked = set(&s.masked, "masked")?;
                for (subset, name) in [(required, "required"), (masked, "masked")] {
                    if let Some(f) = subset.iter().find(|f| !fields.contains(*f)) {
                        let list = if name == "required" {
                            &s.required
                        } else {
                            &s.masked
                        };
                        let span = list
                            .iter()
                            .find(|x| field_named(x.get_ref()) == Some(f))
                            .map(Spanned::span);
                        return Err(at(
                            span.and_then(line),
                            here(name),
                            format!("`{}` is not among the structure's fields", field_name(f)),
                        ));
                    }
                }
                if t.kind == TableKind::Exact && !masked.is_empty() {
                    return Err(at(
                        line(s.name.span()),
                        here("masked"),
                        "an exact table holds no masked fields".into(),
                    ));
                }
                if *s.capacity.get_ref() == 0 {
                    return Err(at(
                        line(s.capacity.span()),
                        here("capacity"),
                        "a capacity is at least 1 (leave out a structure the table cannot hold)"
                            .into(),
                    ));
                }
                structures.push(Structure {
                    name: s.name.get_ref().clone(),
                    fields,
                    required,
                    masked,
                    capacity: *s.capacity.get_ref(),
                    cost: 0,
                });
            }
            let units = structures
                .iter()
                .try_fold(1u64, |acc, s| lcm(acc, u64::from(s.capacity)))
                .ok_or_else(|| {
                    at(
                        line(t.name.span()),
                        here("structure"),
                        "the structures' capacities have no common multiple below 2^64".into(),
                    )
                })?;
            for s in &mut structures {
                s.cost = units / u64::from(s.capacity);
            }
            tables.push(HwTable {
                name: t.name.get_ref().clone(),
                openflow_table: t.openflow_table,
                kind: t.kind,
                when_full: t.when_full,
                unsupported: t.unsupported,
                actions,
                structures,
                units,
            });
        }
        // A goto may only lead to a later table in hardware.
        for (ti, t) in tables.iter().enumerate() {
            if t.supports(HwActionKind::Goto)
                && !tables.iter().any(|o| o.openflow_table > t.openflow_table)
            {
                return Err(at(
                    line(raw.table[ti].name.span()),
                    format!("table[{ti}].actions"),
                    "`goto` needs a later OpenFlow table in hardware".into(),
                ));
            }
        }
        if raw.slow_path_pps == Some(0) || raw.slow_path_mbps == Some(0) {
            return Err(at(
                line_of_key(text, "slow_path_pps").or_else(|| line_of_key(text, "slow_path_mbps")),
                "slow_path".into(),
                "a slow path of 0 forwards nothing; leave it out when it is not limited".into(),
            ));
        }
        Ok(Profile {
            name: raw.name,
            device: raw.device,
            source: raw.source,
            tables,
            line_rate_mbps: raw.line_rate_mbps,
            slow_path: SlowPath {
                pps: raw.slow_path_pps,
                mbps: raw.slow_path_mbps,
            },
            insert_us: raw.insert_us,
            software_tables: raw.software_tables,
        })
    }

    /// The hardware tables serving OpenFlow table `table`, in lookup order (indexes).
    pub fn tables_for(&self, table: u8) -> impl Iterator<Item = usize> + '_ {
        self.tables
            .iter()
            .enumerate()
            .filter(move |(_, t)| t.openflow_table == table)
            .map(|(i, _)| i)
    }

    /// Whether any hardware table serves OpenFlow table `table`.
    pub fn in_hardware(&self, table: u8) -> bool {
        self.tables_for(table).next().is_some()
    }
}

/// The OXM field with this lower-case name (`eth_dst`, `ipv4_src`).
pub fn field_named(name: &str) -> Option<Field> {
    Field::ALL
        .into_iter()
        .find(|f| f.name().eq_ignore_ascii_case(name))
}

/// The lower-case OXM name of a field.
pub fn field_name(f: Field) -> String {
    f.name().to_ascii_lowercase()
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn lcm(a: u64, b: u64) -> Option<u64> {
    (a / gcd(a, b)).checked_mul(b)
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset).map_or(0, |t| t.matches('\n').count()) + 1
}

fn line_of_key(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|r| r.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}

/// A profile that cannot be used: where (file, line, field) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub field: String,
    pub message: String,
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if self.field.is_empty() {
            write!(f, ": {}", self.message)
        } else {
            write!(f, ": field `{}`: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ProfileError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    name: String,
    device: String,
    source: String,
    line_rate_mbps: u32,
    #[serde(default)]
    slow_path_pps: Option<u32>,
    #[serde(default)]
    slow_path_mbps: Option<u32>,
    insert_us: u32,
    software_tables: bool,
    table: Vec<RawTable>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    name: Spanned<String>,
    openflow_table: u8,
    kind: TableKind,
    when_full: Fallback,
    unsupported: Fallback,
    actions: Vec<Spanned<String>>,
    structure: Vec<RawStructure>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStructure {
    name: Spanned<String>,
    fields: Vec<Spanned<String>>,
    #[serde(default)]
    required: Vec<Spanned<String>>,
    #[serde(default)]
    masked: Vec<Spanned<String>>,
    capacity: Spanned<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_profile_parses() {
        for (name, _) in BUILTIN {
            let p = Profile::builtin(name).expect("listed").expect(name);
            assert_eq!(p.name, *name);
            for t in &p.tables {
                for s in &t.structures {
                    assert_eq!(s.cost * u64::from(s.capacity), t.units, "{name}/{}", s.name);
                }
            }
        }
    }

    const GOOD: &str = r#"name = "t"
device = "test"
source = "test"
line_rate_mbps = 1000
slow_path_pps = 100
insert_us = 10
software_tables = true

[[table]]
name = "acl"
openflow_table = 0
kind = "tcam"
when_full = "software"
unsupported = "software"
actions = ["output", "drop"]

[[table.structure]]
name = "l3"
fields = ["eth_type", "ipv4_dst"]
masked = ["ipv4_dst"]
capacity = 10
"#;

    fn err(text: &str) -> ProfileError {
        Profile::parse(Path::new("bad.toml"), text).expect_err("refused")
    }

    #[test]
    fn a_good_profile_parses() {
        let p = Profile::parse(Path::new("t.toml"), GOOD).expect("good");
        assert_eq!(p.tables[0].structures[0].capacity, 10);
        assert_eq!(p.slow_path.pps, Some(100));
    }

    #[test]
    fn an_unknown_field_is_named_with_its_line() {
        let e = err(&GOOD.replace("\"ipv4_dst\"]\nmasked", "\"ipv4_dts\"]\nmasked"));
        assert_eq!(e.line, Some(19));
        assert_eq!(e.field, "table[0].structure[0].fields");
        assert!(
            e.to_string().starts_with(
                "bad.toml:19: field `table[0].structure[0].fields`: unknown match field `ipv4_dts`"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_bad_type_is_named_with_its_line() {
        let e = err(&GOOD.replace("capacity = 10", "capacity = \"ten\""));
        assert_eq!(
            (e.line, e.field.as_str()),
            (Some(21), "table[0].structure[0].capacity")
        );
    }

    #[test]
    fn a_bad_enum_and_an_unknown_key_are_named() {
        let e = err(&GOOD.replace("kind = \"tcam\"", "kind = \"bcam\""));
        assert_eq!((e.line, e.field.as_str()), (Some(12), "table[0].kind"));
        let e = err(&GOOD.replace("insert_us = 10", "insert_us = 10\nspeed = 3"));
        assert_eq!(e.line, Some(7), "{e}");
    }

    #[test]
    fn semantic_errors_name_their_line() {
        let e = err(&GOOD.replace("capacity = 10", "capacity = 0"));
        assert_eq!(
            (e.line, e.field.as_str()),
            (Some(21), "table[0].structure[0].capacity")
        );
        let e = err(&GOOD.replace("masked = [\"ipv4_dst\"]", "masked = [\"ipv4_src\"]"));
        assert_eq!(
            (e.line, e.field.as_str()),
            (Some(20), "table[0].structure[0].masked")
        );
        let e = err(&GOOD.replace("\"drop\"]", "\"flood\"]"));
        assert_eq!((e.line, e.field.as_str()), (Some(15), "table[0].actions"));
        let e = err(&GOOD.replace("kind = \"tcam\"", "kind = \"exact\""));
        assert_eq!(e.field, "table[0].structure[0].masked");
        let e = err(&GOOD.replace("slow_path_pps = 100", "slow_path_pps = 0"));
        assert_eq!(e.line, Some(5));
    }

    #[test]
    fn structures_share_a_table_in_proportion() {
        let p = Profile::builtin("hp-3500yl-of10")
            .expect("shipped")
            .expect("parses");
        let t = &p.tables[0];
        let caps: Vec<u32> = t.structures.iter().map(|s| s.capacity).collect();
        assert!(caps.contains(&381) && caps.contains(&1526), "{caps:?}");
        for s in &t.structures {
            assert_eq!(t.units / s.cost, u64::from(s.capacity));
        }
    }
}
