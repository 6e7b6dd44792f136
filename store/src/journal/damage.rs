//! What bad bytes in a segment are (STORE.md, "Torn tail"): a torn tail
//! (the remains of the last write of the open segment, cut on recovery),
//! or damage (a journal gap: written frames out of their place; a good
//! frame after the bad bytes; anything in a finished segment), which is
//! never cut.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use super::frame::{corrupt, unknown_op, Bad, Framing};
use super::name::Segment;
use crate::StoreError;
use nsimage_format::wire::read_varint;

/// Walks the frames that start at the damage (the front of `rest`), by
/// their clear lengths, while each is complete and says it holds the
/// txids that belong there (the first `next`, then each after the one
/// before). The walk stops at a frame that runs past the end, or one
/// whose clear bytes do not have the writer's shape (zeros, junk): the
/// remains a torn last write can leave. It returns the offset in `rest`
/// and the first txid of a complete frame that has the writer's shape but
/// names other txids: written data out of its place (frames swapped,
/// moved or copied), which no crash produces.
fn misplaced_frame(framing: &Framing, rest: &[u8], mut next: u64) -> Option<(usize, u64, u64)> {
    let mut q = 0usize;
    while q < rest.len() {
        let (len, w) = read_varint(&rest[q..])?;
        if len > framing.max_len() {
            return None;
        }
        let start = q.checked_add(w)?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        let body = rest.get(start..end)?;
        let (first, count) = framing.claimed(body)?;
        if first != next {
            return Some((q, first, next));
        }
        next = next.checked_add(count)?;
        q = end;
    }
    None
}

/// What follows damage in an open segment.
enum After {
    /// Nothing good: the damage runs to the end, a torn tail.
    Nothing,
    /// A frame written whole (its offset in `rest` and its first txid):
    /// not a torn tail.
    Good(usize, u64),
    /// The scan gave up (a tail crafted so that many candidates need
    /// hashing): undecided, so treated as damage and nothing is cut.
    Undecided,
}

/// Looks for the first frame written whole (a complete record whose
/// checksum matches a message of a record's shape, whatever its op field,
/// known to this build or not; in a sealed segment a batch that
/// authenticates) that starts after the first byte of `rest`, which lies
/// at `base` in the segment. A torn tail is the end of the last write, so
/// nothing written whole can follow the damage; such a frame there means
/// the damage is something else. Only candidates whose frame fits and whose bytes pass the cheap
/// checks ([`Framing::candidate`]) are hashed or decrypted, and the bytes
/// so processed are bounded (four times the tail plus 8 MiB), so a hostile
/// tail cannot make the scan quadratic: when the budget runs out the scan
/// is undecided.
fn good_record_after(framing: &Framing, rest: &[u8], base: u64) -> After {
    let mut budget = rest.len().saturating_mul(4).saturating_add(8 << 20);
    for q in 1..rest.len() {
        let Some((len, w)) = read_varint(&rest[q..]) else {
            continue;
        };
        let Some(body) = usize::try_from(len)
            .ok()
            .filter(|&l| l > 8 && u64::try_from(l).is_ok_and(|l| l <= framing.max_len()))
            .and_then(|l| rest.get(q.checked_add(w)?..q.checked_add(w)?.checked_add(l)?))
        else {
            continue;
        };
        if !framing.candidate(body) {
            continue;
        }
        let cost = body.len();
        let Some(left) = budget.checked_sub(cost) else {
            return After::Undecided;
        };
        budget = left;
        if let Some(txid) = framing.whole(body, base.saturating_add(q as u64)) {
            return After::Good(q, txid);
        }
    }
    After::Nothing
}

/// Decides what the bad bytes `rest`, found at offset `pos`, are. In an
/// open segment they are a torn tail when no good frame follows the
/// damage; otherwise, and always in a finished segment, the segment is
/// corrupt.
pub(super) fn classify_damage(
    seg: &Segment,
    framing: &Framing,
    open: bool,
    at: (u64, u64),
    rest: &[u8],
    why: Bad,
) -> Result<u64, StoreError> {
    let (pos, next) = at;
    let sealed = matches!(framing, Framing::Sealed(_));
    if !open || why == Bad::Undecodable {
        // Written whole (its checksum matches): never a torn write, last
        // record or not; an op field this build does not know is named.
        let detail = match unknown_op(rest).filter(|_| why == Bad::Undecodable && !sealed) {
            Some(field) => format!(
                "{}: its op field {field} is not one this build knows (2 to 14; a newer \
                 build's op?): refused, nothing cut",
                why.text(sealed)
            ),
            None => why.text(sealed).to_string(),
        };
        return Err(corrupt(seg, pos, detail));
    }
    if let Some((q, first, want)) = misplaced_frame(framing, rest, next) {
        return Err(corrupt(
            seg,
            pos,
            format!(
                "{}; the {} at offset {} names txid {first} where txid {} belongs \
                 (journal gap: written data out of its place, which no crash leaves): \
                 damage, not a torn tail; nothing was cut",
                why.text(sealed),
                if sealed { "batch" } else { "record" },
                pos.saturating_add(q as u64),
                want,
            ),
        ));
    }
    match good_record_after(framing, rest, pos) {
        After::Nothing => Ok(rest.len() as u64),
        After::Good(q, txid) => Err(corrupt(
            seg,
            pos,
            format!(
                "{}, and a {} written whole (txid {txid}) follows at offset {}: \
                 damage, not a torn tail; nothing was cut",
                why.text(sealed),
                if sealed { "batch" } else { "record" },
                pos.saturating_add(q as u64)
            ),
        )),
        After::Undecided => Err(corrupt(
            seg,
            pos,
            format!(
                "{}, and the {} bytes after it cannot be shown to hold no good \
                 record: treated as damage; nothing was cut",
                why.text(sealed),
                rest.len()
            ),
        )),
    }
}
