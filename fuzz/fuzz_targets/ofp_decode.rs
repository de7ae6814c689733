//! Decodes arbitrary bytes; whatever decodes must re-encode to bytes that decode to the same
//! message with the same xid.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((header, msg)) = ofp::decode(data) {
        let bytes = ofp::encode_to_vec(header.xid, &msg);
        let (again_header, again) = ofp::decode(&bytes).expect("re-encoded message decodes");
        assert_eq!(again, msg);
        assert_eq!(again_header.xid, header.xid);
        assert_eq!(usize::from(again_header.length), bytes.len());
    }
});
