//! The NameNode's `.md5` sidecar (`<32 hex digits> *<file name>`) beside an
//! image: when present, the image is hashed on a thread of its own while
//! the load decodes, and the digests compared when both are done.

use crate::error::LoadError;
use crate::source::open_regular;
use md5::{Digest, Md5};
use nsimage_format::error::shown;
use nsimage_format::Location;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Whether a Hadoop image's `.md5` sidecar is checked (`--md5`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Md5Policy {
    /// The sidecar, when there is one, must name the image's own file and
    /// hold the file's MD5 (what a NameNode checks when it loads an image).
    #[default]
    Check,
    /// The sidecar is not read (an image copied under a new name with its
    /// sidecar; what `hdfs oiv` does): nothing checks the file's bytes.
    Ignore,
}

impl Md5Policy {
    /// `check` or `ignore`.
    pub fn parse(s: &str) -> Option<Md5Policy> {
        match s {
            "check" => Some(Md5Policy::Check),
            "ignore" => Some(Md5Policy::Ignore),
            _ => None,
        }
    }
}

/// A running check.
pub(crate) struct Md5Check {
    sidecar: PathBuf,
    expected: [u8; 16],
    stop: Arc<AtomicBool>,
    /// Taken by `finish` or `abandon`; still here when the check is dropped
    /// otherwise (an early return, a panic unwinding), and then stopped and
    /// joined by `drop`: no hashing thread outlives its load.
    hasher: Option<JoinHandle<std::io::Result<Option<Hashed>>>>,
}

/// What the hashing thread made: the digest, and its wall-clock and CPU
/// seconds.
struct Hashed {
    digest: [u8; 16],
    seconds: f64,
    cpu_seconds: f64,
}

/// The time a check took: seconds from its start to the hash's end, and
/// the hashing thread's CPU seconds.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Md5Times {
    pub(crate) seconds: f64,
    pub(crate) cpu_seconds: f64,
}

impl Drop for Md5Check {
    fn drop(&mut self) {
        if let Some(h) = self.hasher.take() {
            self.stop.store(true, Ordering::Relaxed);
            let _ = h.join();
        }
    }
}

/// The sidecar's path: the image's with `.md5` appended.
pub fn sidecar_path(image: &Path) -> PathBuf {
    let mut s = image.as_os_str().to_owned();
    s.push(".md5");
    PathBuf::from(s)
}

/// Parses a sidecar's text: the digest, and the file name it names.
pub fn parse_sidecar(text: &str) -> Option<([u8; 16], &str)> {
    let line = text.lines().next()?;
    let hex = line.get(..32)?;
    let rest = line.get(32..)?;
    let name = rest
        .strip_prefix(" *")
        .or_else(|| rest.strip_prefix("  "))?;
    // Hex digits only (`from_str_radix` alone would take a sign).
    if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let mut d = [0u8; 16];
    for (i, b) in d.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    (!name.is_empty()).then_some((d, name))
}

fn hex(d: &[u8; 16]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Starts hashing `image` if its sidecar exists and `policy` checks it;
/// `None` if there is none or it is ignored.
pub(crate) fn start(image: &Path, policy: Md5Policy) -> Result<Option<Md5Check>, LoadError> {
    if policy == Md5Policy::Ignore {
        return Ok(None);
    }
    let sidecar = sidecar_path(image);
    let text = match open_regular(&sidecar).and_then(|mut f| {
        let mut t = Vec::new();
        (&mut f).take(4096).read_to_end(&mut t).map(|_| t)
    }) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(LoadError::Io {
                path: sidecar,
                source: e,
            })
        }
    };
    let bad = |d: String| LoadError::Corrupt {
        path: sidecar.clone(),
        at: Location::at(0),
        detail: d,
    };
    let text = String::from_utf8_lossy(&text).into_owned();
    let (expected, name) = parse_sidecar(&text)
        .ok_or_else(|| bad("not an MD5 sidecar (<32 hex digits> *<file name>)".into()))?;
    let own = image
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name != own {
        return Err(LoadError::Md5Names {
            sidecar,
            names: shown(name),
            image: shown(&own),
        });
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (path, flag) = (image.to_path_buf(), stop.clone());
    let hasher = std::thread::Builder::new()
        .name("nsimage-md5".into())
        .spawn(move || hash(&path, &flag))
        .map_err(|e| LoadError::Io {
            path: image.to_path_buf(),
            source: e,
        })?;
    Ok(Some(Md5Check {
        sidecar,
        expected,
        stop,
        hasher: Some(hasher),
    }))
}

fn hash(path: &Path, stop: &AtomicBool) -> std::io::Result<Option<Hashed>> {
    let started = std::time::Instant::now();
    let mut f = open_regular(path)?;
    let mut h = Md5::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        h.update(&buf[..n]);
    }
    Ok(Some(Hashed {
        digest: h.finalize().into(),
        seconds: started.elapsed().as_secs_f64(),
        cpu_seconds: thread_cpu_seconds(),
    }))
}

/// The calling thread's CPU seconds so far (`CLOCK_THREAD_CPUTIME_ID`,
/// exact to the nanosecond where Linux's `/proc/thread-self/schedstat` is
/// only brought up to date at the scheduler's ticks); 0 where they cannot
/// be had.
#[allow(unsafe_code)]
fn thread_cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // Safety: clock_gettime writes one timespec through the pointer, which
    // points at `t`, a live and initialised timespec; it reads nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    if rc != 0 {
        return 0.0;
    }
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

impl Md5Check {
    /// Stops the hashing early (the load failed).
    pub(crate) fn abandon(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.hasher.take() {
            let _ = h.join();
        }
    }

    /// Waits for the hash and compares it with the sidecar's; the time
    /// the hashing took.
    pub(crate) fn finish(mut self, image: &Path) -> Result<Md5Times, LoadError> {
        let io = |e: std::io::Error| LoadError::Io {
            path: image.to_path_buf(),
            source: e,
        };
        let hasher = self
            .hasher
            .take()
            .ok_or_else(|| io(std::io::Error::other("the MD5 check was already taken")))?;
        let got = hasher
            .join()
            .map_err(|_| io(std::io::Error::other("the MD5 thread panicked")))?
            .map_err(io)?
            .ok_or_else(|| io(std::io::Error::other("the MD5 check was stopped")))?;
        let Hashed {
            digest: got,
            seconds,
            cpu_seconds,
        } = got;
        if got != self.expected {
            return Err(LoadError::Corrupt {
                path: image.to_path_buf(),
                at: Location::at(0),
                detail: format!(
                    "the file's MD5 {} differs from {} in {} (the whole file is suspect)",
                    hex(&got),
                    hex(&self.expected),
                    self.sidecar.display()
                ),
            });
        }
        Ok(Md5Times {
            seconds,
            cpu_seconds,
        })
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::unusual_byte_groupings
)]
mod tests {
    use super::*;

    #[test]
    fn sidecars_parse() {
        let (d, n) =
            parse_sidecar("0123456789abcdef0123456789ABCDEF *fsimage_0000000000000000003\n")
                .unwrap();
        assert_eq!(d[0], 0x01);
        assert_eq!(d[15], 0xef);
        assert_eq!(n, "fsimage_0000000000000000003");
        assert!(parse_sidecar("0123 *x").is_none());
        assert!(parse_sidecar("zz23456789abcdef0123456789abcdef *x").is_none());
        // A sign is not a hex digit (`from_str_radix` would take "+f").
        assert!(parse_sidecar("+f23456789abcdef0123456789abcdef *x").is_none());
    }
}
