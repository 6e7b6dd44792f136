//! `nsimage store ...`: a checkpoint store (images + edit journal) driven
//! from the command line.

use nsimage_loader::budget::Budget;
use nsimage_loader::ReadStrategy;
use nsimage_store::{Store, StoreError, StoreOptions};
use nsimage_testkit::workload::Workload;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: Cmd,
    /// Most memory the store's namespace may take (about 72 bytes an
    /// inode, the size of its newest checkpoint, or of IMAGE for `init
    /// --from`): a store that needs more is refused before it is read,
    /// saying how much it needs. A size (160M, 2G). Default: the memory the
    /// machine has available (MemAvailable), or the process's cgroup limit
    /// where that is less.
    #[arg(long = "memory-limit", value_name = "SIZE", global = true,
          value_parser = super::memory::parse_size)]
    memory_limit: Option<u64>,
}

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Create an empty store in DIR (its checkpoints compressed and/or
    /// encrypted, with its journal, when asked: recorded for good), or
    /// with --from one holding IMAGE's namespace.
    #[command(
        after_help = "Examples:\n  nsimage store init store/\n  nsimage store init store/ --from fsimage_0000000000000001234 --compress zstd"
    )]
    Init {
        /// The store directory.
        dir: PathBuf,
        /// Start the store from this image (any format the loader reads:
        /// nsimage or a Hadoop fsimage): its first checkpoint is IMAGE's
        /// namespace at IMAGE's txid, its journal goes on from there.
        /// Snapshots a Hadoop image carries are not kept.
        #[arg(long, value_name = "IMAGE")]
        from: Option<PathBuf>,
        /// Compress checkpoint images: none, lz4, zstd or zstd:LEVEL.
        #[arg(long, value_name = "CODEC", default_value = "none", value_parser = super::parse_compression)]
        compress: nsimage_format::codec::Compression,
        /// Encrypt checkpoint images and journal batches (AES-256-GCM) with
        /// the key of --key-file (or NSIMAGE_KEY_FILE).
        #[arg(long)]
        encrypt: bool,
    },
    /// Make DIR a new store holding the newest checkpoint of a running
    /// HA member (`serve --ha-etcd`) at URL, fetched and checked, to start
    /// a standby from (as `hdfs namenode -bootstrapStandby`): the standby
    /// then applies etcd's journal from that checkpoint's txid.
    #[command(
        after_help = "Examples:\n  nsimage store bootstrap-standby nn2/ --from http://10.0.0.1:5978"
    )]
    BootstrapStandby {
        /// The store directory.
        dir: PathBuf,
        /// The peer's URL (`http://HOST:PORT`).
        #[arg(long, value_name = "URL")]
        from: String,
        /// Compress this store's checkpoint images: none, lz4, zstd or
        /// zstd:LEVEL.
        #[arg(long, value_name = "CODEC", default_value = "none", value_parser = super::parse_compression)]
        compress: nsimage_format::codec::Compression,
        /// Encrypt this store's checkpoints and journal (the key of
        /// --key-file, which also opens an encrypted peer's checkpoint).
        #[arg(long)]
        encrypt: bool,
        /// Fetch as this user (`user.name`): a member serves its
        /// checkpoint only to its superuser while permission checks are on.
        #[arg(long, value_name = "NAME", default_value = "hdfs")]
        user: String,
    },
    /// Apply N more ops of the deterministic workload, journaled.
    #[command(
        after_help = "Examples:\n  nsimage store apply store/ --ops 100000\n  nsimage store apply store/ --ops 1000000 --writers 4 --background-checkpoint-every-ops 250000"
    )]
    Apply(ApplyArgs),
    /// Save an image at the current txid and purge what is no longer needed.
    #[command(after_help = "Examples:\n  nsimage store checkpoint store/")]
    Checkpoint {
        /// The store directory.
        dir: PathBuf,
    },
    /// Show the store's txid, images and segments.
    #[command(
        after_help = "Examples:\n  nsimage store status store/\n  nsimage store status store/ --json"
    )]
    Status {
        /// The store directory.
        dir: PathBuf,
        /// One JSON document on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Recover the store (newest good image + journal) and report.
    #[command(
        after_help = "Examples:\n  nsimage store recover store/\n  nsimage store recover store/ --json --trace recovery.json"
    )]
    Recover {
        /// The store directory.
        dir: PathBuf,
        /// Segments up to this many bytes are replayed from one bulk read,
        /// larger ones streamed.
        #[arg(long, default_value_t = StoreOptions::default().bulk_replay_bytes)]
        bulk_limit: u64,
        /// One JSON document on stdout.
        #[arg(long)]
        json: bool,
        /// Write the recovery's timeline to FILE as a Chrome trace-event
        /// file: the image's load (its phases and pieces, as `load
        /// --trace`), then the journal replay, segment by segment.
        #[arg(long, value_name = "FILE")]
        trace: Option<PathBuf>,
        /// Startup progress on stderr: auto (a bar on a terminal), json
        /// (JSON lines: phase, done, total, unit, elapsed_seconds) or none.
        #[arg(long, value_enum, default_value_t = super::progress::ProgressMode::Auto)]
        progress: super::progress::ProgressMode,
    },
}

#[derive(clap::Args)]
pub struct ApplyArgs {
    /// The store directory.
    dir: PathBuf,
    /// Ops to apply after the store's current txid.
    #[arg(long)]
    ops: u64,
    /// The workload's seed (the same seed, the same ops).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Checkpoint whenever the txid is a multiple of K.
    #[arg(long)]
    checkpoint_every: Option<u64>,
    /// Ops submitted before waiting for one fsync (group commit).
    #[arg(long, default_value_t = 1024)]
    batch: u64,
    /// Print "durable TXID" each time ops become durable (and, with
    /// background checkpoints, "checkpoint started TXID" / "checkpoint
    /// TXID").
    #[arg(long)]
    print_durable: bool,
    /// Writer threads submitting concurrently (each op built from the
    /// namespace under its lock, so the ops are the workload's whatever
    /// thread applies them; group commit across the threads).
    #[arg(long, default_value_t = 1)]
    writers: usize,
    /// Checkpoint in the background (a checkpointer thread, writers going
    /// on) once this many ops were applied after the newest image;
    /// instead of --checkpoint-every.
    #[arg(long, value_name = "N", conflicts_with = "checkpoint_every")]
    background_checkpoint_every_ops: Option<u64>,
    /// One JSON document on stdout.
    #[arg(long)]
    json: bool,
}

/// The command line's store: images mapped (the library's default is the
/// bulk read) and the allocator trimmed after the load, as `nsimage load`
/// does; the key of `--key-file`, if any (an encrypted store needs it).
fn options(budget: Budget) -> anyhow::Result<StoreOptions> {
    let mut opts = StoreOptions {
        key: super::key()?,
        ..StoreOptions::default()
    };
    opts.load.budget = Some(budget);
    // SAFETY: the store's images are written once, renamed into place and
    // never changed while a reader has them open: a purge cuts an old one
    // only under an exclusive lock that no reader's shared lock allows
    // (taken by the loader's open, held while mapped); the store holds its
    // lock for the whole open, so no other nsimage process rewrites them.
    opts.load.read = unsafe { ReadStrategy::mmap() };
    opts.release_memory_after_load = true;
    Ok(opts)
}

fn open(dir: &std::path::Path, budget: Budget) -> anyhow::Result<Store> {
    Ok(Store::open(
        dir,
        Arc::new(nsimage_store::fs::RealFs::default()),
        options(budget)?,
    )?)
}

/// The at-rest settings as text: `plain`, or the codec and the key's
/// fingerprint.
fn at_rest_text(a: &nsimage_store::AtRestSettings) -> String {
    let mut parts = Vec::new();
    if a.compression.codec != nsimage_format::codec::Codec::None {
        parts.push(format!("compressed ({})", a.compression_text()));
    }
    if let Some(fp) = &a.key_fingerprint {
        parts.push(format!(
            "encrypted (AES-256-GCM, key fingerprint {})",
            nsimage_format::cipher::hex(fp)
        ));
    }
    if parts.is_empty() {
        "plain".into()
    } else {
        parts.join(", ")
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let budget = Budget::new(args.memory_limit);
    match args.cmd {
        Cmd::Init {
            dir,
            from,
            compress,
            encrypt,
        } => {
            let at_rest = nsimage_writer::AtRestOptions {
                compression: compress,
                key: super::encryption_key(encrypt)?,
            };
            let fs = Arc::new(nsimage_store::fs::RealFs::default());
            let from_text = match &from {
                None => {
                    Store::init(&dir, fs, &at_rest)?;
                    String::new()
                }
                Some(image) => {
                    let ns = load_image(image, budget)?;
                    let t = ns.info().last_txid;
                    let inodes = ns.stats().inodes;
                    Store::init_from(&dir, fs, &at_rest, &ns)?;
                    format!(" from {} ({inodes} inodes at txid {t})", image.display())
                }
            };
            let settings =
                nsimage_store::AtRestSettings::new(at_rest.compression, at_rest.key.as_ref());
            out!(
                "initialized {}{from_text} ({})",
                dir.display(),
                at_rest_text(&settings)
            );
        }
        Cmd::BootstrapStandby {
            dir,
            from,
            compress,
            encrypt,
            user,
        } => {
            use nsimage_server::ha::fetch;
            let at_rest = nsimage_writer::AtRestOptions {
                compression: compress,
                key: super::encryption_key(encrypt)?,
            };
            let id = fetch::peer_namespace_id(&from)?;
            let (txid, fetched, served) = fetch::fetch_checkpoint(
                &from,
                &user,
                &dir,
                id,
                false,
                super::key()?,
                Some(budget),
            )?;
            let fs = Arc::new(nsimage_store::fs::RealFs::default());
            let made = Store::init_from(&dir, fs, &at_rest, &served.namespace);
            let _ = std::fs::remove_file(&fetched);
            made?;
            out!(
                "initialized {} from {from}'s checkpoint ({} inodes at txid {txid}, namespace {id})",
                dir.display(),
                served.namespace.stats().inodes
            );
        }
        Cmd::Apply(a) => apply(a, budget)?,
        Cmd::Checkpoint { dir } => {
            let s = open(&dir, budget)?;
            let t = Instant::now();
            let txid = s.checkpoint()?;
            out!(
                "checkpoint at txid {txid} in {:.3} s",
                t.elapsed().as_secs_f64()
            );
        }
        Cmd::Status { dir, json } => {
            // Read only: no lock, no cleanup, no cut (works on a read-only
            // mount and never changes the store).
            // Without the key an encrypted store is listed, not recovered.
            let fs = nsimage_store::fs::RealFs::default();
            let mut opts = StoreOptions {
                key: super::key()?,
                ..StoreOptions::default()
            };
            // Its txid comes from a recovery in memory: sized as any.
            opts.load.budget = Some(budget);
            let st = Store::inspect(&dir, &fs, &opts)?;
            if json {
                out!("{}", serde_json::to_string(&st)?);
            } else {
                if st.recovered {
                    out!("{}: txid {}", dir.display(), st.txid);
                } else {
                    out!(
                        "{}: txid unknown: the store is encrypted and no key was given \
                         (--key-file or NSIMAGE_KEY_FILE); its files:",
                        dir.display()
                    );
                }
                out!("  at rest: {}", at_rest_text(&st.at_rest));
                for (t, b) in &st.images {
                    out!("  image at txid {t}: {b} bytes");
                }
                for (n, b) in &st.segments {
                    out!("  {n}: {b} bytes");
                }
                if st.torn_tail_bytes > 0 {
                    out!(
                        "  torn tail: {} bytes (cut at the next open)",
                        st.torn_tail_bytes
                    );
                }
                if st.torn_create {
                    out!("  the open segment is a torn create (replaced at the next open)");
                }
                for n in &st.temps {
                    out!("  temporary file: {n} (an unfinished checkpoint or purge; removed at the next open)");
                }
                for n in &st.unknown {
                    out!("  unknown file: {n} (not the store's; left alone)");
                }
            }
        }
        Cmd::Recover {
            dir,
            bulk_limit,
            json,
            trace,
            progress,
        } => {
            let timeline = Arc::new(nsimage_loader::trace::Timeline::new(trace.is_some()));
            let mut opts = StoreOptions {
                bulk_replay_bytes: bulk_limit,
                ..options(budget)?
            };
            opts.load.timeline = Some(timeline.clone());
            let label = format!("recovering {}", dir.display());
            let startup =
                super::progress::StartupProgress::start(timeline.clone(), progress, &label);
            let s = Store::open(&dir, Arc::new(nsimage_store::fs::RealFs::default()), opts);
            startup.finish();
            let s = s?;
            if let Some(path) = &trace {
                let label = dir.display().to_string();
                super::output::write_atomically(path, |w| {
                    serde_json::to_writer(&mut *w, &timeline.chrome_json(&label))?;
                    Ok(())
                })?;
            }
            let r = s.report().clone();
            let digest = s.with_namespace(|ns| ns.digest().to_string());
            if json {
                let recovered = Recovered {
                    report: &r,
                    digest: &digest,
                };
                out!("{}", serde_json::to_string(&recovered)?);
            } else {
                for (p, e) in &r.skipped_images {
                    out!("skipped {}: {e}", p.display());
                }
                out!(
                    "{}: txid {} (image at {}, {} ops replayed from {} segments, {} torn tail bytes cut), digest {digest}, {:.3} s",
                    dir.display(),
                    r.txid,
                    r.image_txid,
                    r.replayed,
                    r.segments,
                    r.torn_tail_bytes,
                    r.seconds
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Loads IMAGE for `store init --from` (the key of --key-file, if any, for
/// an encrypted image), behind a bar of the load's bytes.
fn load_image(
    image: &std::path::Path,
    budget: Budget,
) -> anyhow::Result<nsimage_namespace::Namespace> {
    let opts = nsimage_loader::LoadOptions {
        key: super::key()?,
        budget: Some(budget),
        md5: super::md5(),
        ..nsimage_loader::LoadOptions::default()
    };
    let lb = super::progress::LoadBar::start(image);
    let loaded = nsimage_loader::load(image, &opts);
    lb.finish().finish_and_clear();
    let loaded = loaded?;
    if let Some(c) = loaded.carry().filter(|c| !c.snapshots.is_empty()) {
        eprintln!(
            "nsimage: {}: its {} snapshots are not kept in the store (its checkpoints carry none)",
            image.display(),
            c.snapshots.len()
        );
    }
    let ns = loaded.namespace;
    nsimage_loader::release_free_memory();
    Ok(ns)
}

fn apply(a: ApplyArgs, budget: Budget) -> anyhow::Result<()> {
    if a.writers > 1 || a.background_checkpoint_every_ops.is_some() {
        return apply_concurrent(a, budget);
    }
    let started = Instant::now();
    let store = open(&a.dir, budget)?;
    let w = Workload { seed: a.seed };
    let first = store.with_namespace(|ns| ns.info().last_txid);
    let Some(end) = first.checked_add(a.ops) else {
        // A usage error (exit 2): the txid space cannot hold that many ops.
        anyhow::bail!(
            "--ops {}: the store is at txid {first}; at most {} more ops fit (the last txid is {})",
            a.ops,
            u64::MAX - first,
            u64::MAX
        );
    };
    let (mut refused, mut checkpoints, mut checkpoint_seconds) = (0u64, 0u64, 0.0f64);
    let mut t = first;
    while t < end {
        let batch_end = t.saturating_add(a.batch.max(1)).min(end);
        while t < batch_end {
            // t < batch_end <= u64::MAX: no overflow.
            let next = t + 1;
            if next % 10 == 0 {
                let bad = store.with_namespace(|ns| w.bad_op(ns, next));
                match store.submit(bad) {
                    Err(StoreError::Refused(_)) => refused += 1,
                    Err(e) => return Err(e.into()),
                    Ok(txid) => anyhow::bail!("an invalid op was accepted as txid {txid}"),
                }
            }
            let op = store.with_namespace(|ns| w.op(ns, next));
            let txid = store.submit(op)?;
            anyhow::ensure!(txid == next, "op got txid {txid}, expected {next}");
            t = next;
            if a.checkpoint_every.is_some_and(|k| k > 0 && t % k == 0) {
                break;
            }
        }
        let durable = store.sync()?;
        if a.print_durable {
            out!("durable {durable}");
        }
        if a.checkpoint_every.is_some_and(|k| k > 0 && t % k == 0) {
            let c = Instant::now();
            store.checkpoint()?;
            checkpoint_seconds += c.elapsed().as_secs_f64();
            checkpoints += 1;
            if a.print_durable {
                out!("checkpoint {t}");
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let digest = store.with_namespace(|ns| ns.digest().to_string());
    if a.json {
        let applied = Applied {
            checkpoint_seconds,
            checkpoints,
            digest: &digest,
            first_txid: first.saturating_add(1),
            ops: t - first,
            refused,
            seconds,
            txid: t,
        };
        out!("{}", serde_json::to_string(&applied)?);
    } else if !a.print_durable {
        let applied = if t == first {
            format!("applied no ops (txid {t})")
        } else {
            format!("applied txids {}..={t}", first.saturating_add(1))
        };
        out!(
            "{applied} ({refused} invalid ops refused, {checkpoints} checkpoints) in {seconds:.2} s, digest {digest}"
        );
    }
    Ok(())
}

/// `store recover --json`: the recovery report and the digest recovered.
#[derive(Serialize)]
struct Recovered<'a> {
    #[serde(flatten)]
    report: &'a nsimage_store::RecoveryReport,
    digest: &'a str,
}

/// `store apply --json`.
#[derive(Serialize)]
struct Applied<'a> {
    checkpoint_seconds: f64,
    checkpoints: u64,
    digest: &'a str,
    first_txid: u64,
    ops: u64,
    refused: u64,
    seconds: f64,
    txid: u64,
}

/// `store apply` with `--writers N` and/or background checkpoints: N
/// threads submit the workload's ops (each built from the namespace under
/// its lock by [`Store::submit_with`], so op `t` is the workload's op `t`
/// whichever thread applies it; every tenth submission of a thread is an
/// invalid op first, which must be refused), each waiting for its op to be
/// durable before the next (group commit across the threads); a
/// checkpointer takes checkpoints meanwhile.
fn apply_concurrent(a: ApplyArgs, budget: Budget) -> anyhow::Result<()> {
    use nsimage_store::{CheckpointEvent, CheckpointPolicy, SubmitError};
    use std::sync::atomic::{AtomicU64, Ordering};
    let started = Instant::now();
    let store = Arc::new(open(&a.dir, budget)?);
    let w = Workload { seed: a.seed };
    let first = store.txid();
    let Some(end) = first.checked_add(a.ops) else {
        anyhow::bail!(
            "--ops {}: the store is at txid {first}; at most {} more ops fit (the last txid is {})",
            a.ops,
            u64::MAX - first,
            u64::MAX
        );
    };
    let print = a.print_durable;
    let checkpoints = Arc::new(AtomicU64::new(0));
    let failed: Arc<std::sync::Mutex<Option<String>>> = Default::default();
    let checkpointer = match a.background_checkpoint_every_ops {
        Some(n) => {
            let (c, f) = (checkpoints.clone(), failed.clone());
            let policy = CheckpointPolicy {
                every_ops: Some(n.max(1)),
                every: None,
            };
            Some(store.spawn_checkpointer(policy, move |e| match e {
                CheckpointEvent::Started { txid } if print => out!("checkpoint started {txid}"),
                CheckpointEvent::Finished { txid, .. } => {
                    c.fetch_add(1, Ordering::Relaxed);
                    if print {
                        out!("checkpoint {txid}");
                    }
                }
                CheckpointEvent::Failed { txid, error } => {
                    *f.lock().unwrap_or_else(|p| p.into_inner()) =
                        Some(format!("checkpoint at txid {txid}: {error}"));
                }
                _ => {}
            })?)
        }
        None => None,
    };
    let refused = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..a.writers.max(1))
        .map(|_| {
            let (store, refused) = (store.clone(), refused.clone());
            std::thread::spawn(move || -> anyhow::Result<()> {
                for k in 0u64.. {
                    if k % 10 == 9 {
                        let bad = store.submit_with(|ns| {
                            let next = ns.info().last_txid.saturating_add(1);
                            Ok::<_, std::convert::Infallible>(
                                (next <= end).then(|| w.bad_op(ns, next)),
                            )
                        });
                        match bad {
                            Err(SubmitError::Store(StoreError::Refused(_))) => {
                                refused.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(None) => return Ok(()),
                            Ok(Some(txid)) => {
                                anyhow::bail!("an invalid op was accepted as txid {txid}")
                            }
                            Err(e) => return Err(anyhow::anyhow!("{e}")),
                        }
                    }
                    let txid = store.submit_with(|ns| {
                        let next = ns.info().last_txid.saturating_add(1);
                        Ok::<_, std::convert::Infallible>((next <= end).then(|| w.op(ns, next)))
                    });
                    let txid = match txid {
                        Ok(Some(t)) => t,
                        Ok(None) => return Ok(()),
                        Err(e) => return Err(anyhow::anyhow!("{e}")),
                    };
                    store.wait_durable(txid)?;
                    if print {
                        out!("durable {txid}");
                    }
                }
                Ok(())
            })
        })
        .collect();
    let mut result = Ok(());
    for t in writers {
        let r = t
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("a writer thread panicked")));
        if result.is_ok() {
            result = r;
        }
    }
    if let Some(c) = checkpointer {
        c.stop();
    }
    result?;
    if let Some(e) = failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
        anyhow::bail!("{e}");
    }
    let t = store.sync()?;
    let seconds = started.elapsed().as_secs_f64();
    let digest = store.with_namespace(|ns| ns.digest().to_string());
    let (refused, checkpoints) = (
        refused.load(Ordering::Relaxed),
        checkpoints.load(Ordering::Relaxed),
    );
    if a.json {
        let applied = Applied {
            // Background checkpoints overlap the writes: their time is not
            // the writers'.
            checkpoint_seconds: 0.0,
            checkpoints,
            digest: &digest,
            first_txid: first.saturating_add(1),
            ops: t - first,
            refused,
            seconds,
            txid: t,
        };
        out!("{}", serde_json::to_string(&applied)?);
    } else if !print {
        out!(
            "applied txids {}..={t} on {} writers ({refused} invalid ops refused, {checkpoints} background checkpoints) in {seconds:.2} s, digest {digest}",
            first.saturating_add(1),
            a.writers.max(1)
        );
    }
    Ok(())
}
