//! Journal segments (layout in `format-spec/STORE.md`): a 16-byte header,
//! then records framed exactly like image records (a varint length, from
//! `nsimage_format::framing`), whose bytes are an xxh3-64 of the message
//! followed by the protobuf `JournalOp`. In an encrypted store a segment
//! has a 48-byte header (version 2, a random segment id, the key's
//! fingerprint) and holds sealed batches instead: each frame is one group
//! commit's records, encrypted and authenticated together (AES-256-GCM,
//! [`SegmentSealer`]).
//!
//! | module | job |
//! |---|---|
//! | `name.rs` | segment files and their names: [`Segment`] |
//! | `header.rs` | the plain and sealed headers, torn creates |
//! | `seal.rs` | [`Sealing`] (what a reader expects), [`SegmentSealer`] |
//! | `frame.rs` | one record's encoding and one frame's decoding |
//! | `damage.rs` | bad bytes: torn tail, or damage (journal gap, good frame after) |
//! | `read.rs` | the one segment reader: [`read`] with [`ReadOptions`] |

mod damage;
mod frame;
mod header;
mod name;
mod read;
mod seal;

pub(crate) use frame::frame_at;
pub use frame::{encode, fits, FramedViewSink};
pub use header::{
    header, sealed_header, HEADER_LEN, SEALED_HEADER_LEN, SEALED_VERSION, SEGMENT_MAGIC,
    SEGMENT_VERSION,
};
pub use name::{finished_name, open_name, parse_txid20, Segment};
pub use read::{read, ReadOptions, SegmentRead, Source};
pub use seal::{Sealing, SegmentSealer};
