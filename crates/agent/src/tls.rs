//! TLS for the `ssl:` and `pssl:` targets, as Open vSwitch does it: both ends present a
//! certificate signed by the configured CA (mutual authentication), and a peer whose
//! certificate is missing, expired or signed by another CA is refused. Like Open vSwitch, the
//! switch does not match the controller's certificate against its address: operators sign
//! controller certificates with `ovs-pki`, which names no address.
//!
//! The channel machinery works on plain stream sockets written from several threads at once
//! (see [`crate::outbox`]), so TLS stays out of it: a [`relay`] task holds the TLS stream and
//! passes the plaintext over a socket pair whose other end is served like any unix connection.
//! The datapath thread that raises a packet-in still writes it without waking the agent; the
//! relay encrypts it.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig,
    SignatureScheme,
};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};

/// Where the switch's TLS identity and the CA it trusts are (PEM files), by the names of the
/// `ovs-vswitchd` flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    pub private_key: PathBuf,
    pub certificate: PathBuf,
    pub ca_cert: PathBuf,
}

/// Why the TLS files could not be used: the setting at fault and the reason.
#[derive(Debug, PartialEq, Eq)]
pub struct TlsError {
    /// `private_key`, `certificate` or `ca_cert`.
    pub field: &'static str,
    pub message: String,
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field `{}`: {}", self.field, self.message)
    }
}

impl std::error::Error for TlsError {}

/// The loaded identity, as both ends of a connection need it.
pub struct TlsContext {
    acceptor: tokio_rustls::TlsAcceptor,
    connector: tokio_rustls::TlsConnector,
}

impl fmt::Debug for TlsContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TlsContext")
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read_certificates(
    field: &'static str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let error = |message: String| TlsError {
        field,
        message: format!("{}: {message}", path.display()),
    };
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(|e| error(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| error(e.to_string()))?;
    if certificates.is_empty() {
        return Err(error("no PEM certificate in the file".into()));
    }
    Ok(certificates)
}

impl TlsContext {
    /// Reads and checks the three files.
    pub fn load(files: &TlsFiles) -> Result<Self, TlsError> {
        let key = PrivateKeyDer::from_pem_file(&files.private_key).map_err(|e| TlsError {
            field: "private_key",
            message: format!("{}: {e}", files.private_key.display()),
        })?;
        let chain = read_certificates("certificate", &files.certificate)?;
        let mut roots = RootCertStore::empty();
        for ca in read_certificates("ca_cert", &files.ca_cert)? {
            roots.add(ca).map_err(|e| TlsError {
                field: "ca_cert",
                message: format!("{}: {e}", files.ca_cert.display()),
            })?;
        }
        let roots = Arc::new(roots);
        let identity = |e: rustls::Error| TlsError {
            field: "private_key",
            message: format!(
                "{} does not go with {}: {e}",
                files.private_key.display(),
                files.certificate.display()
            ),
        };
        let ca_error = |e: rustls::server::VerifierBuilderError| TlsError {
            field: "ca_cert",
            message: format!("{}: {e}", files.ca_cert.display()),
        };
        let clients = WebPkiClientVerifier::builder_with_provider(Arc::clone(&roots), provider())
            .build()
            .map_err(ca_error)?;
        let server = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(identity)?
            .with_client_cert_verifier(clients)
            .with_single_cert(chain.clone(), key.clone_key())
            .map_err(identity)?;
        let servers = WebPkiServerVerifier::builder_with_provider(roots, provider())
            .build()
            .map_err(ca_error)?;
        let client = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(identity)?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(SignedByCa(servers)))
            .with_client_auth_cert(chain, key)
            .map_err(identity)?;
        Ok(Self {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(server)),
            connector: tokio_rustls::TlsConnector::from(Arc::new(client)),
        })
    }

    /// The server side of the handshake, on an accepted connection.
    pub(crate) async fn accept(
        &self,
        stream: TcpStream,
    ) -> io::Result<tokio_rustls::server::TlsStream<TcpStream>> {
        tokio::time::timeout(HANDSHAKE_TIMEOUT, self.acceptor.accept(stream))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no TLS handshake in time"))?
    }

    /// The client side of the handshake, towards a controller at `peer`.
    pub(crate) async fn connect(
        &self,
        stream: TcpStream,
    ) -> io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let peer = stream.peer_addr()?;
        let name = ServerName::IpAddress(peer.ip().into());
        tokio::time::timeout(HANDSHAKE_TIMEOUT, self.connector.connect(name, stream))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no TLS handshake in time"))?
    }
}

/// A peer that opens a TCP connection and says nothing holds a task no longer than this.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Checks a controller's certificate chain against the CA (validity dates included), but not
/// the names in it (see the module documentation).
#[derive(Debug)]
struct SignedByCa(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for SignedByCa {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified =
            self.0
                .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        match verified {
            // The name is checked last: a certificate that fails only there is signed by the
            // CA and in its validity period.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Passes plaintext between a TLS stream and `plain` until either side ends; then the other
/// side is closed too (a TLS close_notify towards the peer, an end of stream towards the
/// agent).
pub(crate) async fn relay<S>(tls: S, plain: UnixStream)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (mut tls_in, mut tls_out) = tokio::io::split(tls);
    let (mut plain_in, mut plain_out) = plain.into_split();
    tokio::select! {
        // The peer left (or broke the TLS stream): dropping `plain_out` ends the connection.
        _ = tokio::io::copy(&mut tls_in, &mut plain_out) => {}
        // The agent ended the connection: tell the peer.
        _ = async {
            let _ = tokio::io::copy(&mut plain_in, &mut tls_out).await;
            let _ = tls_out.shutdown().await;
        } => {}
    }
}
