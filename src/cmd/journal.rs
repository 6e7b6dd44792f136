//! `nsimage journal dump`: the offline edits viewer, for one segment or a
//! whole store, as `hdfs oev` prints an edit log (its XML, or JSON lines):
//! the store's oldest checkpoint is loaded and the journal replayed over it
//! so that each op after it names paths, not ids.

use nsimage_loader::{load, LoadOptions, ReadStrategy};
use nsimage_namespace::Namespace;
use nsimage_store::fs::Fs as _;
use nsimage_store::journal::{self, Segment};
use nsimage_store::op_view::JournalOpView;
use nsimage_viewer::edits;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Print the ops of a journal segment, or of every segment of a store,
    /// as `hdfs oev` prints an edit log.
    #[command(
        after_help = "Each op as Hadoop's edits viewer shows it: its opcode (OP_MKDIR, OP_ADD, \
                      OP_SYMLINK, OP_ADD_BLOCK, OP_RENAME_OLD, OP_DELETE, OP_TIMES, OP_SET_OWNER, \
                      OP_SET_PERMISSIONS, OP_SET_REPLICATION, OP_SET_XATTR, OP_REMOVE_XATTR, \
                      OP_SET_ACL), txid, paths, owners, modes (decimal, as oev) and times (ms). \
                      Paths come from replaying the journal over the store's oldest checkpoint \
                      (for one segment file, the store it lies in); an op before that \
                      checkpoint, or in a segment outside a store, names inodes by id (INODEID, \
                      PARENT_INODEID).\n\nExamples:\n  nsimage journal dump store/ > \
                      edits.xml\n  nsimage journal dump store/ --json | jq -c 'select(.opcode \
                      == \"OP_DELETE\")'\n  nsimage journal dump \
                      store/edits_00000000000000000301-00000000000000000400 --json"
    )]
    Dump {
        /// A store directory (every segment, in txid order) or one
        /// segment file.
        path: PathBuf,
        /// JSON lines on stdout, one object per op, instead of oev's XML.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: Cmd) -> anyhow::Result<ExitCode> {
    let Cmd::Dump { path, json } = cmd;
    let fs = nsimage_store::fs::RealFs::default();
    let key = super::key()?;
    // One segment file goes by its header (plain, or sealed: then the key
    // is needed); a store's segments must all be of the store's kind.
    let mut sealing = journal::Sealing {
        expect: None,
        key: key.clone(),
    };
    // A store directory's names, listed once: its segments and images.
    let mut dir_names: Option<Vec<String>> = None;
    let is_dir = path.is_dir();
    let segments: Vec<Segment> = if is_dir {
        // A store: exit 2 with a message for a directory that is not one.
        let at_rest = nsimage_store::Store::at_rest_of(&path)?;
        // An encrypted store without its key, or with another: exit 1
        // before any segment is read.
        at_rest.check_key(&path, key.as_ref())?;
        sealing = nsimage_store::Store::journal_sealing(&at_rest, key.as_ref());
        let names = listing(&fs, &path)?;
        let v = store_segments(&path, &names);
        dir_names = Some(names);
        v
    } else {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        vec![Segment::parse(dir, &name)
            .ok_or_else(|| anyhow::anyhow!("{}: not a journal segment name", path.display()))?]
    };
    // The store the segments belong to, whose oldest checkpoint gives the
    // paths.
    let store_dir = if is_dir {
        Some(path.clone())
    } else {
        path.parent()
            .map(|d| {
                if d.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    d
                }
            })
            .filter(|d| nsimage_store::Store::check_dir(d).is_ok())
            .map(Path::to_path_buf)
    };
    let names = match (dir_names, &store_dir) {
        (Some(names), _) => names,
        (None, Some(dir)) => listing(&fs, dir)?,
        (None, None) => Vec::new(),
    };
    let mut paths = match &store_dir {
        Some(dir) => Paths::from_oldest_image(dir, &names, key.as_ref()),
        None => Paths::default(),
    };
    // One segment of a store: the store's segments before it are replayed
    // (not printed), so that its ops name paths too.
    let mut replayed: Vec<Segment> = Vec::new();
    if let (false, Some(dir), Some(first), true) = (
        is_dir,
        &store_dir,
        segments.first().map(|s| s.first),
        paths.ns.is_some(),
    ) {
        replayed = store_segments(dir, &names);
        replayed.retain(|s| s.first < first);
        // Segments wholly before the checkpoint add nothing.
        let at = paths.txid();
        replayed.retain(|s| s.last.is_none_or(|l| l > at));
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if !json {
        if let Err(e) = edits::write_xml_head(&mut out) {
            return super::ls::finish(Err(e));
        }
    }
    let all = replayed
        .iter()
        .map(|s| (s, false))
        .chain(segments.iter().map(|s| (s, true)));
    for (seg, print) in all {
        let opts = journal::ReadOptions {
            open: seg.last.is_none(),
            sealing: &sealing,
            bulk_limit: nsimage_store::StoreOptions::default().bulk_replay_bytes,
        };
        let mut written: std::io::Result<()> = Ok(());
        let r = journal::read(journal::Source::File(&fs), seg, &opts, &mut |_, op| {
            if !print {
                paths.apply(&op);
                return Ok(());
            }
            let rec = edits::record(&op.clone().to_owned(), paths.before(op.txid));
            paths.apply(&op);
            if written.is_ok() {
                written = if json {
                    serde_json::to_writer(&mut out, &edits::to_json(&rec))
                        .map_err(std::io::Error::from)
                        .and_then(|()| writeln!(out))
                } else {
                    edits::write_xml_record(&rec, &mut out)
                };
            }
            Ok(())
        })?;
        if let Err(e) = written {
            return super::ls::finish(Err(e));
        }
        if print && r.torn_bytes > 0 {
            eprintln!(
                "{}: {} torn bytes at the end",
                seg.path.display(),
                r.torn_bytes
            );
        }
    }
    let end = if json {
        Ok(())
    } else {
        edits::write_xml_tail(&mut out)
    };
    super::ls::finish(end.and_then(|()| out.flush()))
}

/// The names in store directory `dir`.
fn listing(fs: &nsimage_store::fs::RealFs, dir: &Path) -> anyhow::Result<Vec<String>> {
    fs.list(dir)
        .map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))
}

/// The journal segments among a store's `names`, in txid order (a
/// finished segment before an open one of the same first txid).
fn store_segments(dir: &Path, names: &[String]) -> Vec<Segment> {
    let mut v: Vec<Segment> = names
        .iter()
        .filter_map(|n| Segment::parse(dir, n))
        .collect();
    v.sort_by_key(|s| (s.first, s.last.is_none()));
    v.dedup();
    v
}

/// The namespace as it was before the next op, replayed from a
/// checkpoint, for the ops' paths.
#[derive(Default)]
struct Paths {
    /// The namespace at its `last_txid`; `None` without a checkpoint, or
    /// once an op could not be applied or one was missing.
    ns: Option<Namespace>,
}

impl Paths {
    /// The store's oldest checkpoint, loaded. Without one, or where it
    /// does not load (damaged, too large for the memory available, gone
    /// in a purge), the ops name ids, with a warning that says why: the
    /// journal is still dumped.
    fn from_oldest_image(
        dir: &Path,
        names: &[String],
        key: Option<&nsimage_format::cipher::Key>,
    ) -> Paths {
        let Some(txid) = names
            .iter()
            .filter_map(|n| nsimage_store::image_txid(n))
            .min()
        else {
            return Paths::default();
        };
        let image = dir.join(nsimage_store::image_name(txid));
        let opts = LoadOptions {
            key: key.cloned(),
            budget: Some(nsimage_loader::budget::Budget::new(None)),
            read: ReadStrategy::Bulk,
            ..LoadOptions::default()
        };
        match load(&image, &opts) {
            Ok(l) => Paths {
                ns: Some(l.namespace),
            },
            Err(e) => {
                eprintln!(
                    "nsimage: {}: {e}; the ops name inodes by id",
                    image.display()
                );
                Paths::default()
            }
        }
    }

    /// The txid the namespace is at (0 without one).
    fn txid(&self) -> u64 {
        self.ns.as_ref().map_or(0, |ns| ns.info().last_txid)
    }

    /// The namespace just before op `txid`, if it is known there.
    fn before(&self, txid: u64) -> Option<&Namespace> {
        self.ns
            .as_ref()
            .filter(|ns| txid == ns.info().last_txid.saturating_add(1))
    }

    /// Applies op `op` where it is the next one; an op that is not (one
    /// at or before the checkpoint) leaves the namespace as it is, and one
    /// that cannot be applied (or a gap) ends the paths: later ops name
    /// ids.
    fn apply(&mut self, op: &JournalOpView<'_>) {
        let Some(ns) = self.ns.as_mut() else { return };
        let now = ns.info().last_txid;
        if op.txid <= now {
            return;
        }
        let next = op.txid == now.saturating_add(1);
        let applied = next && nsimage_store::edit::apply_view(ns, &op.op).is_ok();
        if applied {
            ns.info_mut().last_txid = op.txid;
        } else {
            eprintln!(
                "nsimage: journal txid {}: {}; later ops name inodes by id",
                op.txid,
                if next {
                    "the op does not apply to the checkpoint's namespace"
                } else {
                    "ops are missing before it"
                }
            );
            self.ns = None;
        }
    }
}
