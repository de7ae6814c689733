//! Connection targets: `unix:PATH` and `tcp:HOST:PORT`, and the byte stream they open.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::str::FromStr;

/// Where `hairpind` listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Unix(PathBuf),
    /// `host:port`, as given (IPv6 hosts in brackets).
    Tcp(String),
}

/// Target used when neither `--target` nor `HAIRPIN_TARGET` is given.
pub const DEFAULT_TARGET: &str = "unix:/run/hairpin/hairpind.sock";

impl FromStr for Target {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if let Some(path) = text.strip_prefix("unix:") {
            if path.is_empty() {
                return Err("unix: needs a socket path".into());
            }
            return Ok(Target::Unix(PathBuf::from(path)));
        }
        if let Some(addr) = text.strip_prefix("tcp:") {
            let port_ok = addr
                .rsplit_once(':')
                .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
            if !port_ok {
                return Err(format!("`{text}`: expected tcp:IP:PORT"));
            }
            return Ok(Target::Tcp(addr.to_string()));
        }
        if text.starts_with('/') {
            return Ok(Target::Unix(PathBuf::from(text)));
        }
        Err(format!("`{text}`: expected unix:PATH or tcp:IP:PORT"))
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Unix(path) => write!(f, "unix:{}", path.display()),
            Target::Tcp(addr) => write!(f, "tcp:{addr}"),
        }
    }
}

/// An open connection of either kind.
#[derive(Debug)]
pub enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub fn connect(target: &Target) -> io::Result<Stream> {
        match target {
            Target::Unix(path) => UnixStream::connect(path).map(Stream::Unix),
            Target::Tcp(addr) => {
                let stream = TcpStream::connect(addr.as_str())?;
                stream.set_nodelay(true)?;
                Ok(Stream::Tcp(stream))
            }
        }
    }

    /// Ends the connection in both directions, waking up a reader blocked on it.
    pub fn shutdown(&self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
        }
    }

    /// A second handle on the same connection, for a reader thread.
    pub fn try_clone(&self) -> io::Result<Stream> {
        match self {
            Stream::Unix(s) => s.try_clone().map(Stream::Unix),
            Stream::Tcp(s) => s.try_clone().map(Stream::Tcp),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_targets() {
        assert_eq!(
            "unix:/tmp/x.sock".parse(),
            Ok(Target::Unix("/tmp/x.sock".into()))
        );
        assert_eq!(
            "tcp:127.0.0.1:6653".parse(),
            Ok(Target::Tcp("127.0.0.1:6653".into()))
        );
        assert_eq!(
            "tcp:[::1]:6653".parse(),
            Ok(Target::Tcp("[::1]:6653".into()))
        );
        assert_eq!(
            "/run/x.sock".parse(),
            Ok(Target::Unix("/run/x.sock".into()))
        );
        assert!("tcp:127.0.0.1".parse::<Target>().is_err());
        assert!("tcp::6653".parse::<Target>().is_err());
        assert!("unix:".parse::<Target>().is_err());
        assert!("ssl:1.2.3.4:6653".parse::<Target>().is_err());
        assert_eq!(
            DEFAULT_TARGET.parse::<Target>().map(|t| t.to_string()),
            Ok(DEFAULT_TARGET.to_string())
        );
    }
}
