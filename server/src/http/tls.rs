//! TLS: a rustls acceptor from a PEM certificate chain and key, each
//! file that does not read refused at start, naming it.

use super::config::TlsFiles;
use super::error::ServeError;
use std::sync::Arc;

/// The TLS side of a server with `files`: a rustls acceptor with their
/// certificate chain and key.
pub(crate) fn tls_acceptor(files: &TlsFiles) -> Result<tokio_rustls::TlsAcceptor, ServeError> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let bad = |path: &std::path::Path, detail: String| ServeError::Tls {
        path: path.display().to_string(),
        detail,
    };
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| bad(&files.cert, e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&files.cert, e.to_string()))?;
    if certs.is_empty() {
        return Err(bad(&files.cert, "no certificate in the file".into()));
    }
    let key =
        PrivateKeyDer::from_pem_file(&files.key).map_err(|e| bad(&files.key, e.to_string()))?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(&files.cert, e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| bad(&files.key, e.to_string()))?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}
