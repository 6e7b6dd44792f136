//! The streamed read path (`nsimage_loader::skeleton`, what the viewer's
//! dump, export, du, find and distribution use) as one more verdict for the
//! `image` and `hdfs` targets: on an image the stream takes, it must refuse
//! what a load refuses (the children's name order included, which it
//! checks without holding the names, see the skeleton's documentation) and
//! accept what a load accepts, giving every inode with the same parent.

use nsimage_loader::hdfs::HdfsSource;
use nsimage_loader::skeleton::Skeleton;
use nsimage_loader::source::ImageSource;
use nsimage_loader::{load, LoadOptions, ReadStrategy, Streamable};
use std::path::Path;
use xxhash_rust::xxh3::xxh3_64;

/// Every inode's (id, parent id, name) hashed and summed: the same for a
/// streamed read and a loaded namespace that agree on the tree.
type TreeSum = (u64, u64);

fn entry(id: u64, parent: Option<u64>, name: &[u8]) -> u64 {
    let mut b = Vec::with_capacity(name.len() + 16);
    b.extend_from_slice(&id.to_le_bytes());
    b.extend_from_slice(&parent.unwrap_or(u64::MAX).to_le_bytes());
    b.extend_from_slice(name);
    xxh3_64(&b)
}

/// The streamed read of the image at `path` on 2 workers: `None` when it
/// is not streamed (the viewer loads it whole), else its tree sum or why it
/// refused.
fn streamed(path: &Path, hdfs: bool) -> Option<Result<TreeSum, String>> {
    let src = if hdfs {
        HdfsSource::open(path, nsimage_loader::hdfs::Md5Policy::Check)
            .map(|h| Streamable::Hdfs(Box::new(h)))
    } else {
        ImageSource::open(path).map(Streamable::Image)
    };
    let src = match src {
        Ok(s) => s,
        Err(e) => return Some(Err(refusal("opening", e))),
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("a pool");
    let skeleton = match Skeleton::build(&src, Some(&pool)) {
        Ok(Ok(s)) => s,
        Ok(Err(_)) => return None,
        Err(e) => return Some(Err(refusal("the tree", e))),
    };
    let folded = skeleton.fold_pieces(
        &src,
        Some(&pool),
        || (0u64, 0u64),
        |(n, sum), node, parent| {
            let parent = parent.map(|d| skeleton.dir_id(d));
            *n += 1;
            *sum = sum.wrapping_add(entry(node.id, parent, node.name));
            Ok(())
        },
    );
    Some(match folded {
        Ok(states) => Ok(states
            .into_iter()
            .fold((0, 0), |(n, s), (m, t)| (n + m, s.wrapping_add(t)))),
        Err(e) => Err(refusal("the rows", e)),
    })
}

fn refusal(stage: &str, e: nsimage_loader::LoadError) -> String {
    assert!(
        e.is_data_error(),
        "streamed, {stage}: an image gives an I/O error: {e}"
    );
    e.to_string()
}

/// The loaded namespace's tree sum, or why the load refused.
fn loaded(path: &Path) -> Result<TreeSum, String> {
    let opts = LoadOptions {
        md5: nsimage_loader::hdfs::Md5Policy::Check,
        threads: 1,
        read: ReadStrategy::Bulk,
        serial: true,
        parallel_threshold: 0,
        key: None,
        timeline: None,
        budget: None,
    };
    let l = load(path, &opts).map_err(|e| e.to_string())?;
    let ns = &l.namespace;
    Ok(ns.iter().fold((0, 0), |(n, s), i| {
        (n + 1, s.wrapping_add(entry(i.id(), i.parent(), i.name())))
    }))
}

/// Panics unless the streamed read of the image at `path` (a Hadoop image
/// when `hdfs`) agrees with its load.
pub fn check(path: &Path, hdfs: bool) {
    let Some(stream) = streamed(path, hdfs) else {
        return;
    };
    let load = loaded(path);
    let agree = match (&stream, &load) {
        (Ok(a), Ok(b)) => a == b,
        (Err(_), Err(_)) => true,
        (Ok(_), Err(_)) | (Err(_), Ok(_)) => false,
    };
    assert!(
        agree,
        "the streamed read and the load disagree:\n  streamed: {stream:?}\n  load: {load:?}"
    );
}
