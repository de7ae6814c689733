//! Meters: `meter=1,kbps,burst,stats,band=type=drop,rate=1000,burst_size=100`.

use ofp::{MeterBand, MeterConfig, MeterFlags, OFPM_ALL, OFPM_CONTROLLER, OFPM_SLOWPATH};

use super::value::parse_int;
use super::{split_top_level, SyntaxError};

const FLAG_NAMES: &[(&str, MeterFlags)] = &[
    ("kbps", MeterFlags::KBPS),
    ("pktps", MeterFlags::PKTPS),
    ("burst", MeterFlags::BURST),
    ("stats", MeterFlags::STATS),
];

/// Reserved meter ids by name.
const METER_NAMES: &[(&str, u32)] = &[
    ("all", OFPM_ALL),
    ("slowpath", OFPM_SLOWPATH),
    ("controller", OFPM_CONTROLLER),
];

fn parse_meter_id(text: &str) -> Result<u32, String> {
    match METER_NAMES.iter().find(|(name, _)| *name == text) {
        Some((_, id)) => Ok(*id),
        None => parse_int(text),
    }
}

fn format_meter_id(id: u32) -> String {
    match METER_NAMES.iter().find(|(_, m)| *m == id) {
        Some((name, _)) => (*name).to_string(),
        None => id.to_string(),
    }
}

/// A band being read.
#[derive(Default)]
struct BandText {
    kind: Option<String>,
    rate: Option<u32>,
    burst_size: u32,
    prec_level: Option<u8>,
}

impl BandText {
    fn take(&mut self, token: &str) -> Result<(), SyntaxError> {
        let bad = |reason: String| SyntaxError::new(token, reason);
        match token.split_once('=') {
            Some(("type", v)) => self.kind = Some(v.to_string()),
            Some(("rate", v)) => self.rate = Some(parse_int(v).map_err(bad)?),
            Some(("burst_size", v)) => self.burst_size = parse_int(v).map_err(bad)?,
            Some(("prec_level", v)) => self.prec_level = Some(parse_int(v).map_err(bad)?),
            _ => return Err(bad("unknown band keyword".into())),
        }
        Ok(())
    }

    fn finish(self, token: &str) -> Result<MeterBand, SyntaxError> {
        let rate = self
            .rate
            .ok_or_else(|| SyntaxError::new(token, "band needs rate=N"))?;
        let burst_size = self.burst_size;
        match (self.kind.as_deref(), self.prec_level) {
            (Some("drop"), None) => Ok(MeterBand::Drop { rate, burst_size }),
            (Some("drop"), Some(_)) => {
                Err(SyntaxError::new(token, "drop bands take no prec_level"))
            }
            (Some("dscp_remark"), prec_level) => Ok(MeterBand::DscpRemark {
                rate,
                burst_size,
                prec_level: prec_level.unwrap_or(1),
            }),
            _ => Err(SyntaxError::new(
                token,
                "band needs type=drop or type=dscp_remark",
            )),
        }
    }
}

/// Parses a meter for `add-meter`. Without `kbps` or `pktps` the rate is in kb/s.
pub fn parse_meter(text: &str) -> Result<MeterConfig, SyntaxError> {
    let mut meter_id = None;
    let mut flags = MeterFlags::default();
    let mut bands: Vec<(&str, BandText)> = Vec::new();
    for token in split_top_level(text) {
        let band_start = token
            .strip_prefix("band=")
            .or_else(|| token.strip_prefix("bands="));
        if let Some(first) = band_start {
            let mut band = BandText::default();
            if !first.is_empty() {
                band.take(first)?;
            }
            bands.push((token, band));
            continue;
        }
        if let Some((_, band)) = bands.last_mut() {
            band.take(token)?;
            continue;
        }
        let bad = |reason: String| SyntaxError::new(token, reason);
        if let Some((_, flag)) = FLAG_NAMES.iter().find(|(name, _)| *name == token) {
            flags = flags | *flag;
        } else if let Some(bits) = token.strip_prefix("flags=") {
            flags = flags | MeterFlags(parse_int(bits).map_err(bad)?);
        } else if let Some(id) = token.strip_prefix("meter=") {
            meter_id = Some(parse_meter_id(id).map_err(bad)?);
        } else {
            return Err(bad("unknown meter keyword".into()));
        }
    }
    if !flags.contains(MeterFlags::PKTPS) {
        flags = flags | MeterFlags::KBPS;
    }
    let meter_id = meter_id.ok_or_else(|| SyntaxError::new(text, "needs meter=N"))?;
    let bands = bands
        .into_iter()
        .map(|(token, b)| b.finish(token))
        .collect::<Result<_, _>>()?;
    Ok(MeterConfig {
        flags,
        meter_id,
        bands,
    })
}

/// Parses the optional `meter=N` (or `meter=all`) of `del-meters` and `dump-meters`.
pub fn parse_meter_selector(text: Option<&str>) -> Result<u32, SyntaxError> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(OFPM_ALL);
    };
    let id = text
        .strip_prefix("meter=")
        .ok_or_else(|| SyntaxError::new(text, "expected meter=N or meter=all"))?;
    parse_meter_id(id).map_err(|e| SyntaxError::new(text, e))
}

/// A meter in `add-meter` syntax.
pub fn format_meter(meter: &MeterConfig) -> String {
    let mut items = vec![format!("meter={}", format_meter_id(meter.meter_id))];
    let mut known = 0;
    for (name, flag) in FLAG_NAMES {
        if meter.flags.contains(*flag) {
            items.push((*name).to_string());
            known |= flag.0;
        }
    }
    if meter.flags.0 & !known != 0 {
        items.push(format!("flags={:#x}", meter.flags.0 & !known));
    }
    for band in &meter.bands {
        let kind = match band {
            MeterBand::Drop { .. } => "drop".to_string(),
            MeterBand::DscpRemark { .. } => "dscp_remark".to_string(),
            MeterBand::Experimenter { experimenter, .. } => {
                format!("experimenter,experimenter={experimenter:#x}")
            }
        };
        items.push(format!("band=type={kind}"));
        items.push(format!("rate={}", band.rate()));
        if band.burst_size() != 0 {
            items.push(format!("burst_size={}", band.burst_size()));
        }
        if let MeterBand::DscpRemark { prec_level, .. } = band {
            items.push(format!("prec_level={prec_level}"));
        }
    }
    items.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meter_with_drop_band() {
        let m = parse_meter("meter=1,kbps,burst,band=type=drop,rate=1000,burst_size=100").unwrap();
        assert_eq!(m.meter_id, 1);
        assert_eq!(m.flags, MeterFlags::KBPS | MeterFlags::BURST);
        assert_eq!(
            m.bands,
            vec![MeterBand::Drop {
                rate: 1000,
                burst_size: 100
            }]
        );
        assert_eq!(
            format_meter(&m),
            "meter=1,kbps,burst,band=type=drop,rate=1000,burst_size=100"
        );
    }

    #[test]
    fn several_bands_and_flags_round_trip() {
        let text = "meter=7,pktps,stats,band=type=dscp_remark,rate=50,prec_level=2,\
                    band=type=drop,rate=100";
        let m = parse_meter(text).unwrap();
        assert_eq!(m.flags, MeterFlags::PKTPS | MeterFlags::STATS);
        assert_eq!(m.bands.len(), 2);
        assert_eq!(
            m.bands[0],
            MeterBand::DscpRemark {
                rate: 50,
                burst_size: 0,
                prec_level: 2
            }
        );
        assert_eq!(format_meter(&m), text.replace(' ', ""));
        assert_eq!(parse_meter(&format_meter(&m)), Ok(m));
    }

    #[test]
    fn rate_unit_defaults_to_kbps() {
        let m = parse_meter("meter=2,band=type=drop,rate=5").unwrap();
        assert_eq!(m.flags, MeterFlags::KBPS);
    }

    #[test]
    fn errors_name_the_token() {
        let cases = [
            ("kbps,band=type=drop,rate=1", "kbps,band=type=drop,rate=1"),
            ("meter=x,band=type=drop,rate=1", "meter=x"),
            ("meter=1,fast", "fast"),
            ("meter=1,band=type=drop", "band=type=drop"),
            ("meter=1,band=type=slow,rate=1", "band=type=slow"),
            (
                "meter=1,band=type=drop,rate=1,prec_level=1",
                "band=type=drop",
            ),
            ("meter=1,band=type=drop,rate=1,colour=red", "colour=red"),
            ("meter=1,band=type=drop,rate=-1", "rate=-1"),
        ];
        for (text, token) in cases {
            let e = parse_meter(text).unwrap_err();
            assert_eq!(e.token, token, "{text}: {e}");
        }
    }

    #[test]
    fn selectors() {
        assert_eq!(parse_meter_selector(None), Ok(OFPM_ALL));
        assert_eq!(parse_meter_selector(Some("meter=all")), Ok(OFPM_ALL));
        assert_eq!(parse_meter_selector(Some("meter=3")), Ok(3));
        assert!(parse_meter_selector(Some("3")).is_err());
    }
}
