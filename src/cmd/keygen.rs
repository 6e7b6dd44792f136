//! `nsimage keygen FILE`: a new random 32-byte key, written as 64 hex
//! digits and a newline to a file only its owner can read (mode 0600),
//! never over an existing file.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  nsimage keygen ns.key\n  nsimage --key-file ns.key generate -o secret.nsi --encrypt"
)]
pub struct Args {
    /// The key file to create (must not exist).
    file: PathBuf,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let key = nsimage_format::cipher::Key::generate();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&a.file)
        .map_err(|e| anyhow::anyhow!("creating {}: {e}", a.file.display()))?;
    f.write_all(key.to_hex_line().as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", a.file.display()))?;
    out!(
        "wrote {} (key fingerprint {})",
        a.file.display(),
        nsimage_format::cipher::hex(&key.fingerprint())
    );
    Ok(ExitCode::SUCCESS)
}
