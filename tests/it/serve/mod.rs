//! The read-only WebHDFS server, and `bench --serve`.

mod bench;
mod server;
mod writable;
