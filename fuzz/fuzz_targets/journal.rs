//! Any bytes as a journal segment, open or finished: parsing must return.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nsimage::store::journal::{parse, Segment};

fuzz_target!(|data: &[u8]| {
    let seg = Segment {
        path: "edits_inprogress_00000000000000000001".into(),
        first: 1,
        last: None,
    };
    for open in [true, false] {
        let _ = parse(&seg, data, open, &mut |_| Ok(()));
    }
});
