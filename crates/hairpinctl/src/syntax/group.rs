//! Groups: `group_id=1,type=select,bucket=weight:10,actions=output:1,bucket=...`.

use ofp::{Bucket, GroupDesc, GroupType, OFPG_ALL, OFPG_ANY, OFPP_ANY};

use super::actions::{format_actions, parse_actions};
use super::value::{format_port, parse_int, parse_port};
use super::{split_assignment, split_top_level, SyntaxError};

/// Group type names; `ff` is how `ovs-ofctl` prints fast failover.
const TYPE_NAMES: &[(&str, GroupType)] = &[
    ("all", GroupType::All),
    ("select", GroupType::Select),
    ("indirect", GroupType::Indirect),
    ("ff", GroupType::FastFailover),
    ("fast_failover", GroupType::FastFailover),
];

fn type_name(t: GroupType) -> &'static str {
    TYPE_NAMES
        .iter()
        .find(|(_, ty)| *ty == t)
        .map_or("all", |(name, _)| name)
}

/// A bucket being read: its parameters, then its action tokens.
struct BucketText<'a> {
    weight: Option<u16>,
    watch_port: u32,
    watch_group: u32,
    in_actions: bool,
    actions: Vec<&'a str>,
}

impl<'a> BucketText<'a> {
    fn new() -> Self {
        BucketText {
            weight: None,
            watch_port: OFPP_ANY,
            watch_group: OFPG_ANY,
            in_actions: false,
            actions: Vec::new(),
        }
    }

    fn take(&mut self, token: &'a str) -> Result<(), SyntaxError> {
        let bad = |reason: String| SyntaxError::new(token, reason);
        if self.in_actions {
            self.actions.push(token);
            return Ok(());
        }
        if let Some(first) = token.strip_prefix("actions=") {
            self.in_actions = true;
            self.actions.push(first);
            return Ok(());
        }
        match split_assignment(token, true) {
            Some(("weight", v)) => self.weight = Some(parse_int(v).map_err(bad)?),
            Some(("watch_port", v)) => self.watch_port = parse_port(v).map_err(bad)?,
            Some(("watch_group", v)) => self.watch_group = parse_int(v).map_err(bad)?,
            _ => {
                self.in_actions = true;
                self.actions.push(token);
            }
        }
        Ok(())
    }

    /// The bucket; select groups weigh an unweighted bucket 1, others 0.
    fn finish(self, group_type: GroupType) -> Result<Bucket, SyntaxError> {
        let default_weight = u16::from(group_type == GroupType::Select);
        Ok(Bucket {
            weight: self.weight.unwrap_or(default_weight),
            watch_port: self.watch_port,
            watch_group: self.watch_group,
            actions: parse_actions(&self.actions.join(","))?,
        })
    }
}

/// Parses a group for `add-group`.
pub fn parse_group(text: &str) -> Result<GroupDesc, SyntaxError> {
    let mut group_id = None;
    let mut group_type = GroupType::All;
    let mut buckets: Vec<BucketText> = Vec::new();
    for token in split_top_level(text) {
        if let Some(first) = token.strip_prefix("bucket=") {
            let mut bucket = BucketText::new();
            if !first.is_empty() {
                bucket.take(first)?;
            }
            buckets.push(bucket);
            continue;
        }
        if let Some(bucket) = buckets.last_mut() {
            bucket.take(token)?;
            continue;
        }
        let bad = |reason: String| SyntaxError::new(token, reason);
        match token.split_once('=') {
            Some(("group_id", v)) => group_id = Some(parse_int(v).map_err(bad)?),
            Some(("type", v)) => {
                group_type = TYPE_NAMES
                    .iter()
                    .find(|(name, _)| *name == v)
                    .map(|(_, t)| *t)
                    .ok_or_else(|| bad("type must be all, select, indirect or ff".into()))?;
            }
            _ => return Err(bad("unknown group keyword".into())),
        }
    }
    let group_id = group_id.ok_or_else(|| SyntaxError::new(text, "needs group_id=N"))?;
    let buckets = buckets
        .into_iter()
        .map(|b| b.finish(group_type))
        .collect::<Result<_, _>>()?;
    Ok(GroupDesc {
        group_type,
        group_id,
        buckets,
    })
}

/// Parses the optional `group_id=N` (or `group_id=all`) of `del-groups`.
pub fn parse_group_selector(text: Option<&str>) -> Result<u32, SyntaxError> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(OFPG_ALL);
    };
    match text.split_once('=') {
        Some(("group_id", "all")) => Ok(OFPG_ALL),
        Some(("group_id", v)) => parse_int(v).map_err(|e| SyntaxError::new(text, e)),
        _ => Err(SyntaxError::new(
            text,
            "expected group_id=N or group_id=all",
        )),
    }
}

/// A group in `add-group` syntax.
pub fn format_group(group: &GroupDesc) -> String {
    let mut items = vec![
        format!("group_id={}", group.group_id),
        format!("type={}", type_name(group.group_type)),
    ];
    for bucket in &group.buckets {
        let mut params = Vec::new();
        if group.group_type == GroupType::Select || bucket.weight != 0 {
            params.push(format!("weight:{}", bucket.weight));
        }
        if bucket.watch_port != OFPP_ANY {
            params.push(format!("watch_port:{}", format_port(bucket.watch_port)));
        }
        if bucket.watch_group != OFPG_ANY {
            params.push(format!("watch_group:{}", bucket.watch_group));
        }
        params.push(format!("actions={}", format_actions(&bucket.actions)));
        items.push(format!("bucket={}", params.join(",")));
    }
    items.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ofp::Action;

    fn out(port: u32) -> Action {
        Action::Output { port, max_len: 0 }
    }

    #[test]
    fn select_group_with_weights() {
        let g = parse_group(
            "group_id=1,type=select,bucket=weight:10,actions=output:1,bucket=weight=5,output:2,output:3",
        )
        .unwrap();
        assert_eq!(g.group_id, 1);
        assert_eq!(g.group_type, GroupType::Select);
        assert_eq!(g.buckets.len(), 2);
        assert_eq!(g.buckets[0].weight, 10);
        assert_eq!(g.buckets[0].actions, vec![out(1)]);
        assert_eq!(g.buckets[1].weight, 5);
        assert_eq!(g.buckets[1].actions, vec![out(2), out(3)]);
        assert_eq!(
            format_group(&g),
            "group_id=1,type=select,bucket=weight:10,actions=output:1,\
             bucket=weight:5,actions=output:2,output:3"
        );
        assert_eq!(parse_group(&format_group(&g)), Ok(g));
    }

    #[test]
    fn default_weights_and_watches() {
        let g = parse_group("group_id=2,type=select,bucket=output:1").unwrap();
        assert_eq!(g.buckets[0].weight, 1);
        let g = parse_group("group_id=3,bucket=actions=output:1,bucket=actions=drop").unwrap();
        assert_eq!(g.group_type, GroupType::All);
        assert_eq!(g.buckets[0].weight, 0);
        assert_eq!(g.buckets[1].actions, vec![]);
        assert_eq!(
            format_group(&g),
            "group_id=3,type=all,bucket=actions=output:1,bucket=actions=drop"
        );
        let ff = parse_group(
            "group_id=4,type=fast_failover,bucket=watch_port:1,actions=output:1,\
             bucket=watch_port:2,watch_group:9,actions=output:2",
        )
        .unwrap();
        assert_eq!(ff.group_type, GroupType::FastFailover);
        assert_eq!(
            (ff.buckets[1].watch_port, ff.buckets[1].watch_group),
            (2, 9)
        );
        assert_eq!(parse_group(&format_group(&ff)), Ok(ff));
    }

    #[test]
    fn group_without_buckets() {
        let g = parse_group("group_id=5,type=indirect").unwrap();
        assert!(g.buckets.is_empty());
        assert_eq!(format_group(&g), "group_id=5,type=indirect");
    }

    #[test]
    fn errors_name_the_token() {
        let cases = [
            ("type=all", "type=all"),
            ("group_id=x", "group_id=x"),
            ("group_id=1,type=fancy", "type=fancy"),
            ("group_id=1,colour=red", "colour=red"),
            ("group_id=1,bucket=weight:x,output:1", "weight:x"),
            ("group_id=1,bucket=output:1,frob", "frob"),
        ];
        for (text, token) in cases {
            let e = parse_group(text).unwrap_err();
            assert_eq!(e.token, token, "{text}: {e}");
        }
    }

    #[test]
    fn del_groups_selector() {
        assert_eq!(parse_group_selector(None), Ok(OFPG_ALL));
        assert_eq!(parse_group_selector(Some("group_id=all")), Ok(OFPG_ALL));
        assert_eq!(parse_group_selector(Some("group_id=7")), Ok(7));
        assert!(parse_group_selector(Some("7")).is_err());
    }
}
