//! What a controllet writes to stdout and stderr, kept twice: the last lines in memory (for
//! `hairpinctl controllet logs`) and everything in a file outside its sandbox, rotated at a
//! size cap so a chatty or hostile controllet cannot fill the disk. Lines are cut at
//! [`MAX_LINE`] bytes.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Lines kept in memory per controllet.
pub const KEPT_LINES: usize = 1000;
/// Longest line kept; the rest of a longer one is dropped.
pub const MAX_LINE: usize = 4096;
/// A log file is moved to `NAME.log.1` when it passes this size.
pub const FILE_CAP: u64 = 4 << 20;

/// One controllet's log.
#[derive(Debug)]
pub struct Log {
    lines: VecDeque<String>,
    file: Option<(PathBuf, File, u64)>,
}

impl Log {
    /// A log kept in memory and, when `path` can be opened, in that file.
    pub fn new(path: Option<&Path>) -> Log {
        let file = path.and_then(|p| {
            let f = OpenOptions::new().create(true).append(true).open(p).ok()?;
            let len = f.metadata().map_or(0, |m| m.len());
            Some((p.to_path_buf(), f, len))
        });
        Log {
            lines: VecDeque::with_capacity(KEPT_LINES),
            file,
        }
    }

    /// Adds one line (without its newline).
    pub fn push(&mut self, line: &str) {
        let mut end = line.len().min(MAX_LINE);
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        let line = &line[..end];
        if self.lines.len() == KEPT_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line.to_string());
        if let Some((path, file, len)) = &mut self.file {
            if *len > FILE_CAP {
                let _ = std::fs::rename(&*path, path.with_extension("log.1"));
                if let Ok(f) = OpenOptions::new().create(true).append(true).open(&*path) {
                    *file = f;
                    *len = 0;
                }
            }
            if writeln!(file, "{line}").is_ok() {
                *len += line.len() as u64 + 1;
            }
        }
    }

    /// The last `n` lines, oldest first.
    pub fn tail(&self, n: usize) -> Vec<String> {
        let skip = self.lines.len().saturating_sub(n);
        self.lines.iter().skip(skip).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines_and_caps_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lsw.log");
        let mut log = Log::new(Some(&path));
        let long = "é".repeat(MAX_LINE);
        log.push(&long);
        assert!(log.tail(1)[0].len() <= MAX_LINE);
        for i in 0..KEPT_LINES + 5 {
            log.push(&format!("line {i}"));
        }
        let tail = log.tail(3);
        assert_eq!(tail, ["line 1002", "line 1003", "line 1004"]);
        assert_eq!(log.tail(usize::MAX).len(), KEPT_LINES);
        let line = "x".repeat(MAX_LINE - 1);
        for _ in 0..(FILE_CAP as usize / MAX_LINE + 2) {
            log.push(&line);
        }
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size <= FILE_CAP + MAX_LINE as u64, "{size}");
        assert!(path.with_extension("log.1").exists());
    }
}
