//! The Prometheus text exposition format (version 0.0.4): `# HELP` and `# TYPE` lines, then
//! one line per sample, labels quoted and escaped.

use std::fmt::Write;

/// A metric family's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

/// A page of metrics being written.
#[derive(Debug, Default)]
pub struct Exposition {
    out: String,
}

impl Exposition {
    /// Starts a family; its samples follow with [`Self::sample`].
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let kind = match kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        };
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    /// One sample of the family last started.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl Into<Value>) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (key, text)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{key}=\"{}\"", escape_label(text));
            }
            self.out.push('}');
        }
        let _ = match value.into() {
            Value::Int(v) => writeln!(self.out, " {v}"),
            Value::Float(v) => writeln!(self.out, " {v:?}"),
        };
    }

    pub fn finish(self) -> String {
        self.out
    }
}

/// A sample's value: counts exactly, seconds as floats.
#[derive(Clone, Copy, Debug)]
pub enum Value {
    Int(u64),
    Float(f64),
}

impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::Int(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Int(u64::from(v))
    }
}

fn escape_label(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_and_samples_are_written_in_the_text_format() {
        let mut e = Exposition::default();
        e.family("hairpin_x_total", Kind::Counter, "Things.\nMore");
        e.sample(
            "hairpin_x_total",
            &[("port", "1"), ("name", "a\"b\\c\nd")],
            7u64,
        );
        e.family("hairpin_y_seconds_total", Kind::Gauge, "Time");
        e.sample("hairpin_y_seconds_total", &[], 1.5);
        e.sample("hairpin_y_seconds_total", &[], 2.0);
        assert_eq!(
            e.finish(),
            "# HELP hairpin_x_total Things.\\nMore\n\
             # TYPE hairpin_x_total counter\n\
             hairpin_x_total{port=\"1\",name=\"a\\\"b\\\\c\\nd\"} 7\n\
             # HELP hairpin_y_seconds_total Time\n\
             # TYPE hairpin_y_seconds_total gauge\n\
             hairpin_y_seconds_total 1.5\n\
             hairpin_y_seconds_total 2.0\n"
        );
    }
}
