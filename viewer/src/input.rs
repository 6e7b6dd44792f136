//! What a viewer command reads, decided in one place (issue 40): a command
//! asks a question of an image ([`Query`]) within a memory [`Budget`], and
//! [`Input::read`] chooses how to read it, as arrow-rs's parquet reader
//! chooses the pages a projection touches:
//!
//! 1. **streamed** ([`Query::streamed`], `crate::streamed`): the image's
//!    tree built and its pieces read on a pool, never the namespace; the
//!    tree's estimate was checked against the budget when the image was
//!    opened ([`Input::open`]);
//! 2. **a one-path lookup** ([`crate::lookup`]): where the stream answers
//!    [`Fallback::NotATree`] (the subtree asked about is a file, a
//!    symlink, an empty directory or nothing), the path and its children
//!    read through the image's name section, errors included;
//! 3. **a whole load** ([`Query::loaded`]): where the stream answers
//!    [`Fallback::Unstreamable`], or the query does not stream
//!    ([`Query::streams`]), once the load's size (about 72 bytes an
//!    inode) is found to fit the budget.
//!
//! Before any refusal for size the image's declared counts (what the
//! estimates were sized from) are read and checked: an image whose counts
//! lie is corrupt ([`ViewError::Load`]), never a memory shortfall
//! ([`ViewError::TooLarge`], [`ViewError::TooLargeToLoad`]).

use crate::error::ViewError;
use crate::paths::ImagePath;
use crate::streamed::Fallback;
use nsimage_format::cipher::Key;
use nsimage_loader::skeleton::Skeleton;
use nsimage_loader::{ImageSource, LoadOptions, PathOptions, Streamable};
use nsimage_namespace::Namespace;
use std::path::Path;
use std::time::Instant;

pub use nsimage_loader::budget::{Budget, LOAD_BYTES_PER_INODE};
pub use nsimage_loader::hdfs::Md5Policy;

/// How [`Input::read`] answered.
#[derive(Clone, Debug, PartialEq)]
pub enum Read {
    /// Streamed from the image's tree and pieces.
    Streamed,
    /// From a one-path lookup; `unused_index` says why the image's name
    /// section was not used, when the lookup loaded the image whole.
    Lookup {
        /// See [`nsimage_loader::PathView::unused_index`].
        unused_index: Option<String>,
    },
    /// From the whole namespace, loaded in `seconds`.
    Whole {
        /// The load's wall time.
        seconds: f64,
    },
}

/// A question a viewer command asks of an image, answered streamed or
/// from a loaded namespace; [`Input::read`] decides which.
pub trait Query {
    /// The answer.
    type Answer;
    /// The error; the reading's own errors convert into it.
    type Error: From<ViewError>;

    /// Whether the query can be answered streamed (default: yes). One
    /// that cannot (an order that needs every name at once) is answered
    /// from a whole load.
    fn streams(&self) -> bool {
        true
    }

    /// The subtree asked about, looked up on its own where the stream
    /// answers [`Fallback::NotATree`]; `None` (default): the whole image.
    fn subtree(&self) -> Option<&ImagePath> {
        None
    }

    /// The answer streamed from `input` ([`Input::source`]), or why it
    /// cannot be (nothing written then).
    ///
    /// # Errors
    /// What the command's streamed reading refuses.
    fn streamed(&mut self, input: &Input) -> Result<Result<Self::Answer, Fallback>, Self::Error>;

    /// A whole load of `image` begins (a command may show its progress);
    /// default: nothing.
    fn load_begins(&mut self, image: &Path) {
        let _ = image;
    }

    /// The whole load that began is over, loaded or refused; default:
    /// nothing.
    fn load_ends(&mut self) {}

    /// The answer from a namespace: the whole image's, or a one-path
    /// lookup's (the subtree, its ancestors and its children).
    ///
    /// # Errors
    /// What the command refuses of the namespace.
    fn loaded(&mut self, ns: &Namespace) -> Result<Self::Answer, Self::Error>;
}

/// An image opened for a viewer command: an nsimage image (its key
/// applied) or a Hadoop fsimage, its tree's estimate within the budget.
pub struct Input {
    src: Streamable,
    budget: Budget,
    tree: u64,
    load: LoadOptions,
}

impl Input {
    /// Opens `image` (nsimage or Hadoop fsimage, told apart by its bytes),
    /// unlocking an encrypted image with `key` (a Hadoop image's `.md5`
    /// sidecar checked as `md5` says), and checks the estimate of its tree
    /// ([`Skeleton::estimate`]) against `budget`.
    ///
    /// # Errors
    /// [`ViewError::Load`] for an image that cannot be opened or read, or
    /// whose declared counts lie; [`ViewError::TooLarge`] when the tree
    /// would not fit.
    pub fn open(
        image: &Path,
        key: Option<Key>,
        md5: Md5Policy,
        budget: Budget,
    ) -> Result<Input, ViewError> {
        let src = if nsimage_loader::hdfs::is_hdfs_file(image)? {
            Streamable::Hdfs(Box::new(nsimage_loader::hdfs::HdfsSource::open(
                image, md5,
            )?))
        } else {
            let mut src = ImageSource::open(image)?;
            src.unlock(key.as_ref())?;
            Streamable::Image(src)
        };
        let tree = Skeleton::estimate(&src);
        if tree > budget.bytes() {
            src.check_counts()?;
            return Err(ViewError::TooLarge {
                image: image.to_path_buf(),
                needed: tree,
                limit: budget.bytes(),
                given: budget.is_given(),
            });
        }
        let load = LoadOptions {
            key,
            md5,
            ..LoadOptions::default()
        };
        Ok(Input {
            src,
            budget,
            tree,
            load,
        })
    }

    /// The options of a whole load (its read strategy, its workers); the
    /// key given to [`Input::open`] is kept.
    pub fn with_load_options(mut self, opts: LoadOptions) -> Input {
        let key = self.load.key.take();
        self.load = LoadOptions { key, ..opts };
        self
    }

    /// The image, open to be streamed.
    pub fn source(&self) -> &Streamable {
        &self.src
    }

    /// The image's file.
    pub fn path(&self) -> &Path {
        self.src.path()
    }

    /// The budget.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// The estimate of the image's tree, in bytes.
    pub fn tree_bytes(&self) -> u64 {
        self.tree
    }

    /// Inodes in the image, as its index or INODE header declares them.
    pub fn inode_count(&self) -> u64 {
        self.src.inode_count()
    }

    /// Answers `q`: streamed where it can be, else from a one-path lookup
    /// of its subtree, else from a whole load (see the module's page).
    ///
    /// # Errors
    /// What `q` refuses; [`ViewError::TooLargeToLoad`] when a whole load
    /// is needed and would not fit; what a lookup or a load refuses.
    pub fn read<Q: Query>(&self, q: &mut Q) -> Result<(Q::Answer, Read), Q::Error> {
        if q.streams() {
            match q.streamed(self)? {
                Ok(answer) => return Ok((answer, Read::Streamed)),
                Err(Fallback::NotATree) => {
                    if let Some(path) = q.subtree() {
                        let opts = PathOptions {
                            with_children: true,
                            key: self.load.key.clone(),
                            budget: Some(self.budget),
                            md5: self.load.md5,
                        };
                        let view = crate::lookup::load_path(self.path(), path, &opts)?;
                        let answer = q.loaded(&view.namespace)?;
                        let unused_index = view.unused_index;
                        return Ok((answer, Read::Lookup { unused_index }));
                    }
                }
                Err(Fallback::Unstreamable) => {}
            }
        }
        let start = Instant::now();
        q.load_begins(self.path());
        let ns = self.load_whole();
        q.load_ends();
        let ns = ns?;
        let seconds = start.elapsed().as_secs_f64();
        Ok((q.loaded(&ns)?, Read::Whole { seconds }))
    }

    /// The whole namespace, once its size (about
    /// [`LOAD_BYTES_PER_INODE`] an inode) is found to fit the budget.
    fn load_whole(&self) -> Result<Namespace, ViewError> {
        let needed = self.inode_count().saturating_mul(LOAD_BYTES_PER_INODE);
        if needed > self.budget.bytes() {
            self.src.check_counts()?;
            return Err(ViewError::TooLargeToLoad {
                image: self.path().to_path_buf(),
                needed,
                limit: self.budget.bytes(),
            });
        }
        let loaded = nsimage_loader::load(self.path(), &self.load)?;
        nsimage_loader::release_free_memory();
        Ok(loaded.namespace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsimage_namespace::{NsInfo, PermSpec};
    use nsimage_writer::{write_image, WriteOptions};

    /// An image of 1 + 3 + 3*20 directories in a temp dir.
    fn image() -> (tempfile::TempDir, std::path::PathBuf) {
        let mut ns = Namespace::new(NsInfo::default());
        let perm = PermSpec {
            user: b"u",
            group: b"g",
            mode: 0o755,
        };
        for top in ["a", "b", "c"] {
            for i in 0..20 {
                ns.mkdirs(format!("/{top}/d{i:02}").as_bytes(), &perm, 1)
                    .unwrap();
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fsimage");
        let f = std::fs::File::create(&path).unwrap();
        write_image(&ns, f, &WriteOptions::default()).unwrap();
        (dir, path)
    }

    /// Counts the inodes of the whole image, saying how it was asked.
    #[derive(Default)]
    struct Count {
        streams: bool,
        subtree: Option<ImagePath>,
        fallback: Option<Fallback>,
        streamed_calls: usize,
        loaded_calls: usize,
    }

    impl Query for Count {
        type Answer = u64;
        type Error = ViewError;
        fn streams(&self) -> bool {
            self.streams
        }
        fn subtree(&self) -> Option<&ImagePath> {
            self.subtree.as_ref()
        }
        fn streamed(&mut self, input: &Input) -> Result<Result<u64, Fallback>, ViewError> {
            self.streamed_calls += 1;
            Ok(match self.fallback {
                Some(f) => Err(f),
                None => Ok(input.inode_count()),
            })
        }
        fn loaded(&mut self, ns: &Namespace) -> Result<u64, ViewError> {
            self.loaded_calls += 1;
            Ok(ns.stats().inodes)
        }
    }

    #[test]
    fn each_fallback_is_answered_its_own_way() {
        let (_dir, path) = image();
        let input = Input::open(&path, None, Md5Policy::Check, Budget::new(Some(1 << 30))).unwrap();
        assert_eq!(input.inode_count(), 64);
        // Streamed: the namespace is never loaded.
        let mut q = Count {
            streams: true,
            ..Count::default()
        };
        assert_eq!(input.read(&mut q).unwrap(), (64, Read::Streamed));
        assert_eq!((q.streamed_calls, q.loaded_calls), (1, 0));
        // Not a tree: the subtree (`/a/d07`, which has no children) looked
        // up on its own.
        let mut q = Count {
            streams: true,
            subtree: Some(ImagePath::parse("/a/d07").unwrap()),
            fallback: Some(Fallback::NotATree),
            ..Count::default()
        };
        let (n, read) = input.read(&mut q).unwrap();
        assert!(matches!(read, Read::Lookup { .. }), "{read:?}");
        // An image this small has no name section: the lookup loads it
        // whole, and says nothing went unused.
        assert_eq!(n, 64);
        assert_eq!(read, Read::Lookup { unused_index: None });
        // Not a tree, but no subtree asked about: the whole image.
        let mut q = Count {
            streams: true,
            fallback: Some(Fallback::NotATree),
            ..Count::default()
        };
        let (n, read) = input.read(&mut q).unwrap();
        assert_eq!(n, 64);
        assert!(matches!(read, Read::Whole { .. }), "{read:?}");
        // Unstreamable, and a query that never streams: the whole image;
        // the latter is never asked to stream.
        for streams in [true, false] {
            let mut q = Count {
                streams,
                fallback: Some(Fallback::Unstreamable),
                ..Count::default()
            };
            let (n, read) = input.read(&mut q).unwrap();
            assert_eq!(n, 64);
            assert!(matches!(read, Read::Whole { .. }), "{read:?}");
            assert_eq!(
                (q.streamed_calls, q.loaded_calls),
                (usize::from(streams), 1)
            );
        }
    }

    #[test]
    fn a_tree_over_budget_is_refused_at_open() {
        let (_dir, path) = image();
        for (given, says) in [(Some(1), "(--memory-limit)"), (None, "")] {
            let budget = match given {
                Some(_) => Budget::new(given),
                None => Budget::of_machine(1),
            };
            let Err(e) = Input::open(&path, None, Md5Policy::Check, budget) else {
                panic!("a 1-byte budget was accepted");
            };
            assert!(matches!(e, ViewError::TooLarge { limit: 1, .. }), "{e:?}");
            assert!(!e.is_data_error(), "a shortfall is not corruption");
            let text = e.to_string();
            assert!(text.contains("streaming its tree needs about"), "{text}");
            if given.is_some() {
                assert!(text.contains(says), "{text}");
            } else {
                assert!(text.contains("(the memory available)"), "{text}");
            }
        }
    }

    #[test]
    fn a_whole_load_over_budget_is_refused_before_loading() {
        let (_dir, path) = image();
        let tree = Input::open(&path, None, Md5Policy::Check, Budget::new(Some(1 << 30)))
            .unwrap()
            .tree_bytes();
        let load = 64 * LOAD_BYTES_PER_INODE;
        assert!(tree < load, "the tree ({tree}) is below a load ({load})");
        let input = Input::open(&path, None, Md5Policy::Check, Budget::new(Some(tree))).unwrap();
        // A streamed answer fits.
        let mut q = Count {
            streams: true,
            ..Count::default()
        };
        assert_eq!(input.read(&mut q).unwrap().1, Read::Streamed);
        // A whole load does not, and the query never sees a namespace.
        let mut q = Count::default();
        let e = input.read(&mut q).unwrap_err();
        assert!(
            matches!(e, ViewError::TooLargeToLoad { needed, .. } if needed == load),
            "{e:?}"
        );
        assert!(!e.is_data_error());
        assert_eq!(q.loaded_calls, 0);
        assert!(e
            .to_string()
            .contains("cannot be streamed and loading it whole"));
    }

    #[test]
    fn workers_fit_beside_the_tree() {
        let b = Budget::new(Some(1000));
        assert!(b.is_given());
        assert_eq!(b.bytes(), 1000);
        assert_eq!(b.workers(400, 100, 64), 6);
        assert_eq!(b.workers(400, 100, 2), 2);
        assert_eq!(b.workers(2000, 100, 8), 1, "at least one");
        assert_eq!(b.workers(0, 0, 3), 3);
        assert!(!Budget::available().is_given());
    }
}
