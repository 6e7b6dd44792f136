//! nsimage offline image viewer: what an operator or a developer looks at
//! inside an image without starting a metadata server.
//!
//! # Module map
//!
//! | file | what it holds |
//! |------|---------------|
//! | `lib.rs` | this page |
//! | `paths.rs` | [`paths`]: the paths users type (absolute, no `.` or `..`), checked before anything is read |
//! | `input.rs` | [`input`]: what a command reads, decided in one place: an image opened within a memory budget (given, or the machine's MemAvailable and cgroup limit) and a command's question answered streamed, from a one-path lookup or from a whole load |
//! | `count.rs` | [`count`]: `hdfs dfs -count`'s columns (quotas, `-h` sizes as Hadoop prints them, the header) for a subtree's [`du`] row |
//! | `diff.rs` | [`diff`]: what changed between two images of one namespace |
//! | `edits.rs` | [`edits`]: a store's journal ops as `hdfs oev` prints an edit log (XML, JSON lines), with paths where the namespace before each op is given |
//! | `lookup.rs` | [`lookup`]: one-path lookups that read only the pieces on the way |
//! | `text.rs` | [`text`]: the human-readable forms shared by the commands (permission strings, UTC times, sizes) |
//! | `walk.rs` | [`walk`]: a path resolved component by component, a subtree walked depth first in name order |
//! | `ls.rs` | [`ls`]: a directory's listing over a loaded namespace, as data, text and JSON |
//! | `stat.rs` | [`stat`]: everything one inode holds, as data, text and JSON |
//! | `du.rs` | [`du`]: per-subtree counts and sizes over a loaded namespace |
//! | `find.rs` | [`find`]: inodes by name, type, size, time or owner over a loaded namespace |
//! | `dump/` | [`dump`]: every inode of a loaded namespace as OIV XML, OIV Delimited text or JSON lines, in parallel, the same bytes for any thread count; a Hadoop image's OIV XML printed from its stored sections (`dump::hadoop_xml`) |
//! | `reverse_xml.rs` | [`reverse_xml`]: OIV's XML read back into a Hadoop fsimage (Hadoop's ReverseXML), streamed |
//! | `distribution.rs` | [`distribution`]: the file-size histogram of OIV FileDistribution, over a namespace or streamed |
//! | `owners.rs` | [`owners`]: a subtree's usage per owner or per group (`du --by`) |
//! | `streamed/` | [`streamed`]: `du`, `du --by`, `find` and `dump` read from an image's tree and pieces in bounded memory, without loading the namespace |
//! | `error.rs` | [`error`]: [`ViewError`], the crate's one error type |
//!
//! Layering: above the loader (it reads images through `nsimage-loader`
//! and looks at `nsimage-namespace`); it must never import the writer, the
//! store, the testkit or the command line. The command line has one file
//! per viewer command in `src/cmd/`, each asking its question through
//! [`input::Input`], never choosing how the image is read.
//!
//! A `du` of `/user`, streamed; then of an empty directory, which the
//! stream cannot take, answered from a one-path lookup (the image is
//! written with the writer, a dev-dependency):
//!
//! ```
//! use nsimage_namespace::{Namespace, NsInfo, PermSpec};
//! use nsimage_viewer::du::{du, DuOptions, DuReport, Sort};
//! use nsimage_viewer::input::{Budget, Input, Md5Policy, Query, Read};
//! use nsimage_viewer::paths::ImagePath;
//! use nsimage_viewer::streamed::{du::du_streamed, Fallback};
//! use nsimage_viewer::ViewError;
//! use nsimage_writer::{write_image, WriteOptions};
//!
//! struct Du {
//!     path: ImagePath,
//!     opts: DuOptions,
//! }
//!
//! impl Query for Du {
//!     type Answer = DuReport;
//!     type Error = ViewError;
//!     fn subtree(&self) -> Option<&ImagePath> {
//!         Some(&self.path)
//!     }
//!     fn streamed(&mut self, input: &Input) -> Result<Result<DuReport, Fallback>, ViewError> {
//!         du_streamed(input.source(), &self.path, &self.opts, 1)
//!     }
//!     fn loaded(&mut self, ns: &Namespace) -> Result<DuReport, ViewError> {
//!         du(ns, &self.path, &self.opts)
//!     }
//! }
//!
//! let mut ns = Namespace::new(NsInfo::default());
//! let perm = PermSpec { user: b"hdfs", group: b"supergroup", mode: 0o755 };
//! ns.mkdirs(b"/user/alice/logs", &perm, 1_700_000_000_000)?;
//! ns.mkdirs(b"/user/bob", &perm, 1_700_000_000_000)?;
//! let dir = tempfile::tempdir()?;
//! let image = dir.path().join("fsimage");
//! write_image(&ns, std::fs::File::create(&image)?, &WriteOptions::default())?;
//!
//! let input = Input::open(&image, None, Md5Policy::Check, Budget::new(Some(64 << 20)))?;
//! let opts = DuOptions { depth: 1, sort: Sort::Path, ..DuOptions::default() };
//! let mut q = Du { path: ImagePath::parse("/user")?, opts };
//! let (report, read) = input.read(&mut q)?;
//! assert_eq!(read, Read::Streamed);
//! assert_eq!(report.rows.len(), 3); // /user, /user/alice, /user/bob
//!
//! q.path = ImagePath::parse("/user/bob")?;
//! let (report, read) = input.read(&mut q)?;
//! assert!(matches!(read, Read::Lookup { .. }));
//! assert_eq!(report.rows.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

pub mod count;
pub mod diff;
pub mod distribution;
pub mod du;
pub mod dump;
pub mod edits;
pub mod error;
pub mod find;
pub mod input;
pub mod lookup;
pub mod ls;
pub mod owners;
pub mod paths;
pub mod reverse_xml;
pub mod stat;
pub mod streamed;
pub mod text;
pub mod walk;

pub use error::ViewError;
