//! pi's `shortHash`: a fast, non-cryptographic 53-bit-style hash printed as two base-36
//! numbers. Providers use it to derive stable tool-call ids, so ours must equal pi's exactly
//! (the same id for the same input, across both implementations).

/// The hash of `input`, bit-for-bit what pi's `shortHash` returns (it hashes UTF-16 code units,
/// as JavaScript strings are).
pub(crate) fn short_hash(input: &str) -> String {
    let mut h1: u32 = 0xdead_beef;
    let mut h2: u32 = 0x41c6_ce57;
    for unit in input.encode_utf16() {
        h1 = (h1 ^ u32::from(unit)).wrapping_mul(2_654_435_761);
        h2 = (h2 ^ u32::from(unit)).wrapping_mul(1_597_334_677);
    }
    h1 = (h1 ^ (h1 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h2 ^ (h2 >> 13)).wrapping_mul(3_266_489_909);
    h2 = (h2 ^ (h2 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h1 ^ (h1 >> 13)).wrapping_mul(3_266_489_909);
    format!("{}{}", base36(h2), base36(h1))
}

fn base36(mut value: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if value == 0 {
        return "0".to_owned();
    }
    let mut out = Vec::new();
    while value > 0 {
        out.push(DIGITS[(value % 36) as usize]);
        value /= 36;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::short_hash;

    #[test]
    fn equals_pi() {
        // Values printed by pi 0.73.1's shortHash on Node.
        assert_eq!(short_hash(""), "k4n83c7h0j2b");
        assert_eq!(short_hash("abc"), "y0biex7f9bbh");
        assert_eq!(short_hash("call_1|fc_xyz"), "1hljg6gfhxlve");
        assert_eq!(short_hash("héllo 😀"), "1t90xbiinqdrp");
        assert_eq!(short_hash("toolcall:0"), "1nlso9v7di2pi");
    }
}
