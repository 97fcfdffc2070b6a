//! The spool's frame format (`WSP2`): a numbered, checksummed batch of audit records in a
//! binary form that the inserter reads in place.

use serde::{Deserialize, Serialize};
use warden_core::audit::{NewRecord, RecordKind, RecordView};
use warden_core::time::Millis;

use crate::error::StoreError;

/// A frame: magic, payload length, batch number, CRC-32C of number and payload; then the
/// payload, the batch's records in the binary form of [`Wire`] (postcard: lengths and bytes,
/// nothing escaped). A file that begins with another magic is refused (`super::claim`).
pub(super) const MAGIC: [u8; 4] = *b"WSP2";
pub(super) const HEADER: usize = 20;
/// CRC-32C, sixteen bytes per table step (the one-byte default cost about as much per call
/// as writing the frame).
const CRC: crc::Crc<u32, crc::Table<16>> = crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISCSI);

/// A record as a frame carries it: the fields of [`NewRecord`], borrowed, with the kind in its
/// stored form (so that the bytes do not depend on the order of [`RecordKind`]'s variants).
/// Field order is the format: append new fields at the end, and only with a new magic.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Wire<'a> {
    at: i64,
    kind: &'a str,
    run_id: &'a str,
    #[serde(borrow)]
    call_id: Option<&'a str>,
    #[serde(borrow)]
    principal: Option<&'a str>,
    #[serde(borrow)]
    agent: Option<&'a str>,
    #[serde(borrow)]
    tool: Option<&'a str>,
    #[serde(borrow)]
    decision: Option<&'a str>,
    #[serde(borrow)]
    code: Option<&'a str>,
    payload: &'a str,
}

impl<'a> From<&'a NewRecord> for Wire<'a> {
    fn from(r: &'a NewRecord) -> Self {
        Wire {
            at: r.at.0,
            kind: r.kind.as_str(),
            run_id: &r.run_id,
            call_id: r.call_id.as_deref(),
            principal: r.principal.as_deref(),
            agent: r.agent.as_deref(),
            tool: r.tool.as_deref(),
            decision: r.decision.as_deref(),
            code: r.code.as_deref(),
            payload: &r.payload,
        }
    }
}

impl<'a> Wire<'a> {
    fn view(self) -> Result<RecordView<'a>, String> {
        Ok(RecordView {
            at: Millis(self.at),
            kind: RecordKind::parse(self.kind)
                .ok_or_else(|| format!("`{}` is not a kind of audit record", self.kind))?,
            run_id: self.run_id,
            call_id: self.call_id,
            principal: self.principal,
            agent: self.agent,
            tool: self.tool,
            decision: self.decision,
            code: self.code,
            payload: self.payload,
        })
    }
}

/// The records of a payload in the binary form, borrowed from it.
pub(super) fn views(payload: &[u8]) -> Result<Vec<RecordView<'_>>, String> {
    postcard::from_bytes::<Vec<Wire<'_>>>(payload)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(Wire::view)
        .collect()
}

/// A batch's records, written as a sequence of [`Wire`] without copying them.
struct WireBatch<'a>(&'a [NewRecord]);

impl Serialize for WireBatch<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(Wire::from))
    }
}

/// A whole frame read back from a spool file.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Frame<'a> {
    pub(super) id: u64,
    pub(super) payload: &'a [u8],
}

#[cfg(test)]
impl Frame<'_> {
    /// The frame's records.
    fn records(&self) -> Result<Vec<NewRecord>, String> {
        Ok(views(self.payload)?
            .into_iter()
            .map(NewRecord::from)
            .collect())
    }
}

/// Appends one frame to `out`: batch `id`, with `records` as its payload.
pub(super) fn encode(id: u64, records: &[NewRecord], out: &mut Vec<u8>) -> Result<(), StoreError> {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER]);
    *out = postcard::to_extend(&WireBatch(records), std::mem::take(out))
        .map_err(|e| StoreError::Invalid(format!("an audit record cannot be encoded: {e}")))?;
    seal(out, start, MAGIC, id)
}

/// Fills in the header of the frame that starts at `start` of `out` (header space, then the
/// payload up to the end): `magic`, the payload's length, batch `id` and the checksum.
pub(super) fn seal(
    out: &mut [u8],
    start: usize,
    magic: [u8; 4],
    id: u64,
) -> Result<(), StoreError> {
    let payload = out.get(start + HEADER..).unwrap_or_default();
    let len = u32::try_from(payload.len())
        .map_err(|_| StoreError::Invalid("an audit batch of more than 4 GiB".into()))?;
    let mut digest = CRC.digest();
    digest.update(&id.to_le_bytes());
    digest.update(payload);
    let crc = digest.finalize();
    let (len, id, crc) = (len.to_le_bytes(), id.to_le_bytes(), crc.to_le_bytes());
    let header = magic.iter().chain(&len).chain(&id).chain(&crc);
    for (slot, byte) in out.iter_mut().skip(start).zip(header) {
        *slot = *byte;
    }
    Ok(())
}

/// The whole frames at the start of `bytes`, in order, and how many bytes they take. Reading
/// stops at the first frame that is cut short, fails its checksum or does not number after
/// the one before it.
pub(super) fn decode(bytes: &[u8]) -> (Vec<Frame<'_>>, usize) {
    let mut frames: Vec<Frame<'_>> = Vec::new();
    let mut at = 0;
    loop {
        let frame = bytes.get(at..).unwrap_or_default();
        let Some((magic, rest)) = frame.split_first_chunk::<4>() else {
            break;
        };
        let Some((len, rest)) = rest.split_first_chunk::<4>() else {
            break;
        };
        let Some((id, rest)) = rest.split_first_chunk::<8>() else {
            break;
        };
        let Some((crc, rest)) = rest.split_first_chunk::<4>() else {
            break;
        };
        let len = u32::from_le_bytes(*len) as usize;
        let Some(payload) = rest.get(..len) else {
            break;
        };
        let id = u64::from_le_bytes(*id);
        let mut digest = CRC.digest();
        digest.update(&id.to_le_bytes());
        digest.update(payload);
        let in_order = frames.last().is_none_or(|last| id > last.id);
        if *magic != MAGIC || u32::from_le_bytes(*crc) != digest.finalize() || !in_order {
            break;
        }
        frames.push(Frame { id, payload });
        at += HEADER + len;
    }
    (frames, at)
}

/// Whether `rest`, the bytes after a file's whole frames, begin with a frame cut short: one
/// being written when its writer stopped (numbered `next`, or too short to tell). Anything
/// else there is what was left of frames written before the file started over (see
/// `Shared::cut_back`), all inserted before it did.
pub(super) fn cut_short(rest: &[u8], next: u64) -> bool {
    if rest.is_empty() {
        return false;
    }
    let Some((magic, header)) = rest.split_first_chunk::<4>() else {
        return true;
    };
    let id = header
        .get(4..12)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes);
    *magic == MAGIC && id.is_none_or(|id| next == 0 || id == next)
}

/// The magic a file begins with when it is not [`MAGIC`]. A file's first bytes are always a
/// frame's start (a file starts over from its start), so another magic there is a spool of
/// another format, never what is left of inserted frames.
pub(super) fn foreign_magic(bytes: &[u8]) -> Option<[u8; 4]> {
    bytes
        .first_chunk::<4>()
        .copied()
        .filter(|magic| *magic != MAGIC)
}

/// A spooled batch waiting for the inserter: its records in the binary form, as spooled. The
/// inserter reads them in place; the call's own records were freed on the call's thread (freed
/// on the inserter's, each of their strings would come back to the call's thread's allocator
/// cold from the other core).
#[derive(Debug)]
pub(crate) struct Batch {
    pub(crate) id: u64,
    payload: Vec<u8>,
}

impl Batch {
    /// Batch `id` of a frame's payload.
    pub(super) fn new(id: u64, payload: Vec<u8>) -> Self {
        Batch { id, payload }
    }

    /// Batch `id` of `records`.
    #[cfg(test)]
    pub(crate) fn of(id: u64, records: &[NewRecord]) -> Result<Self, String> {
        let payload = postcard::to_allocvec(&WireBatch(records)).map_err(|e| e.to_string())?;
        Ok(Batch { id, payload })
    }

    /// The batch's records, borrowed from it.
    pub(crate) fn records(&self) -> Result<Vec<RecordView<'_>>, String> {
        views(&self.payload)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;
    use crate::sqlite::appender::tests::records;

    /// What follows a file's whole frames is a frame cut short only when it is numbered next
    /// (or too short to tell).
    #[test]
    fn only_the_next_frame_is_taken_for_one_cut_short() {
        let mut frames = Vec::new();
        encode(7, &records("r"), &mut frames).unwrap();
        let torn = &frames[..frames.len() - 3];
        assert!(cut_short(torn, 7));
        assert!(cut_short(&torn[..10], 7));
        assert!(!cut_short(torn, 9), "an older frame left over");
        assert!(!cut_short(&torn[5..], 7), "the inside of an older frame");
        assert!(!cut_short(&[], 7));
    }

    #[test]
    fn frames_read_back_and_a_torn_or_altered_tail_ends_the_spool() {
        let mut bytes = Vec::new();
        encode(1, &records("a"), &mut bytes).unwrap();
        encode(2, &[], &mut bytes).unwrap();
        let whole = bytes.len();
        let (frames, len) = decode(&bytes);
        assert_eq!(len, whole);
        let ids: Vec<u64> = frames.iter().map(|f| f.id).collect();
        assert_eq!(ids, [1, 2]);
        assert_eq!(frames[0].records().unwrap(), records("a"));
        assert_eq!(frames[1].records().unwrap(), []);
        // Torn: a third frame cut short.
        let mut torn = bytes.clone();
        encode(3, &records("c"), &mut torn).unwrap();
        torn.truncate(torn.len() - 2);
        assert_eq!(decode(&torn).1, whole);
        // Altered: a payload byte changed.
        let mut altered = bytes.clone();
        encode(3, &records("c"), &mut altered).unwrap();
        *altered.last_mut().unwrap() ^= 1;
        assert_eq!(decode(&altered).0.len(), 2);
        // Out of order: a batch numbered before the one ahead of it.
        let mut reordered = bytes.clone();
        encode(2, &[], &mut reordered).unwrap();
        assert_eq!(decode(&reordered).1, whole);
        // An unknown magic ends the file too.
        let mut unknown = bytes.clone();
        encode(3, &records("c"), &mut unknown).unwrap();
        unknown[whole] = b'X';
        assert_eq!(decode(&unknown).1, whole);
    }

    /// The binary form carries every field as it is — absent ones, Unicode, quotes and
    /// control characters in a payload — and its bytes are fixed: a spool written by this
    /// version must read back in the next one (the kind is written by name, so reordering
    /// [`RecordKind`]'s variants changes nothing). Changing this form needs a new magic.
    #[test]
    fn the_binary_form_keeps_every_field_and_its_bytes_are_fixed() {
        let record = NewRecord {
            at: Millis(-7),
            kind: RecordKind::Outcome,
            run_id: "r".into(),
            call_id: None,
            principal: Some("user:é".into()),
            agent: None,
            tool: Some("p__t".into()),
            decision: Some("executed".into()),
            code: None,
            payload: "{\"a\":\"\\\"\u{1}\"}".into(),
        };
        let mut many = records("x");
        many.push(record.clone());
        let mut frame = Vec::new();
        encode(9, &many, &mut frame).unwrap();
        let (frames, _) = decode(&frame);
        assert_eq!(&frame[..4], &MAGIC);
        assert_eq!(frames[0].records().unwrap(), many);

        let mut one = Vec::new();
        encode(1, std::slice::from_ref(&record), &mut one).unwrap();
        assert_eq!(&one[..4], b"WSP2");
        assert_eq!(
            hex::encode(&one[HEADER..]),
            // One record: `at` (zigzag), the kind by name, `r`, no call id, the principal,
            // no agent, the tool, the decision, no code, the payload. Strings are a length
            // then their bytes, a present option is 01 before it, an absent one 00.
            "01 0d 076f7574636f6d65 0172 00 01 07757365723ac3a9 00 01 04705f5f74 \
             01 086578656375746564 00 0b7b2261223a225c2201227d"
                .replace(' ', "")
        );
        // A kind this version does not know is an error, not a guess.
        let later = [Wire {
            kind: "later",
            ..Wire::from(&record)
        }];
        let mut unknown = postcard::to_allocvec(&later[..]).unwrap();
        let frame = Frame {
            id: 1,
            payload: &unknown,
        };
        assert!(frame.records().unwrap_err().contains("`later`"));
        unknown.truncate(3);
        let cut = Frame {
            id: 1,
            payload: &unknown,
        };
        assert!(cut.records().is_err());
    }
}
