//! What the load bench's table says, in words: its legend.

/// What the load table's columns mean: printed under the table and in
/// `nsimage bench --help`.
pub const LEGEND: &str = "\
Columns of the load table (medians of --repeat runs, each load in a child process):
  read       how the image is read: mmap, bulk (positioned reads), stream (the serial
             streaming baseline), hdfs / hdfs-zlib (the same namespace as Hadoop fsimages,
             with the .md5 sidecar a NameNode writes), nsimage-zstd, -lz4, -aes, -zstd-aes
             (stored compressed and/or encrypted), jsonl / sqlite (the peers: the same namespace as
             JSON lines and as an SQLite database, loaded on one thread)
  cache      warm: the file in the page cache; cold (--cold): taken out of it first
  mode       serial or parallel: what the loader chose (serial below its threshold)
  thr        worker threads
  seconds    wall time of the load, open to a checked namespace
  inodes/s   inodes over seconds; MB/s: the file's bytes over seconds
  speedup    the streaming baseline's seconds over this row's: above 1x is faster
  B/inode    resident bytes per inode once loaded (RSS after the load, less before)
  allocs/in  heap allocations per inode during the load
  contended  lock acquisitions that had to wait (sharded locks of the merge)
  eff        parallel efficiency: the workers' busy time over threads x the wall time of
             the parallel phases (100% on one thread)
  serial s   wall time with at most one thread at work (open, index, the serial phases)
  md5 s      a Hadoop image's CPU seconds hashing the file for its .md5 sidecar, on a
             thread beside the workers
A blank cell: the figure does not apply to that row (a peer has no workers or locks).
In the at-rest table, x is this row over the plain mapped image on as many threads:
time (above 1x: slower) and size (above 1x: larger).";

/// `nsimage bench --help`'s text after the options: the legend, then
/// examples.
pub fn long_help() -> String {
    format!(
        "{LEGEND}\n\nExamples:\n  nsimage bench\n  nsimage bench --inodes 5000000 --repeat 5 --cold\n  nsimage bench --json > bench.json"
    )
}
