//! Byte masks of 64 bytes at once for Q1's line parser: where the `|` and the newlines are. SSE2
//! on x86-64 (part of the architecture, so always there), SWAR on u64 words elsewhere.
#![allow(unsafe_code)]

/// Bit k of the first mask set when `c[k]` is `|`, of the second when it is a newline.
#[inline(always)]
pub fn masks64(c: &[u8; 64]) -> (u64, u64) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
        };
        // SAFETY: SSE2 is part of x86-64 (every x86-64 CPU has it, and it is enabled for the
        // target), so the intrinsics are available; each load reads 16 bytes at c[16k..16k+16],
        // inside the 64-byte array (unaligned loads need no alignment).
        unsafe {
            let (bar, nl) = (_mm_set1_epi8(b'|' as i8), _mm_set1_epi8(b'\n' as i8));
            let (mut bars, mut nls) = (0u64, 0u64);
            for k in 0..4 {
                let v = _mm_loadu_si128(c.as_ptr().add(16 * k) as *const __m128i);
                bars |= (_mm_movemask_epi8(_mm_cmpeq_epi8(v, bar)) as u16 as u64) << (16 * k);
                nls |= (_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl)) as u16 as u64) << (16 * k);
            }
            (bars, nls)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    masks64_swar(c)
}

/// Bit k set when `c[k]` is a newline.
#[inline(always)]
pub fn newlines32(c: &[u8; 32]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
        };
        // SAFETY: as in `masks64`: SSE2 is baseline on x86-64; both 16-byte loads are inside `c`.
        unsafe {
            let nl = _mm_set1_epi8(b'\n' as i8);
            let lo = _mm_loadu_si128(c.as_ptr() as *const __m128i);
            let hi = _mm_loadu_si128(c.as_ptr().add(16) as *const __m128i);
            (_mm_movemask_epi8(_mm_cmpeq_epi8(lo, nl)) as u16 as u32)
                | (_mm_movemask_epi8(_mm_cmpeq_epi8(hi, nl)) as u16 as u32) << 16
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut nls = 0u32;
        for k in 0..4 {
            let w = u64::from_le_bytes(c[8 * k..8 * k + 8].try_into().expect("8 bytes"));
            nls |= (swar::gather(swar::bytes_eq(w, b'\n')) as u32) << (8 * k);
        }
        nls
    }
}

/// The portable form of [`masks64`], kept compiled and tested on every target.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
pub fn masks64_swar(c: &[u8; 64]) -> (u64, u64) {
    let (mut bars, mut nls) = (0u64, 0u64);
    for k in 0..8 {
        let w = u64::from_le_bytes(c[8 * k..8 * k + 8].try_into().expect("8 bytes"));
        bars |= swar::gather(swar::bytes_eq(w, b'|')) << (8 * k);
        nls |= swar::gather(swar::bytes_eq(w, b'\n')) << (8 * k);
    }
    (bars, nls)
}

/// "SIMD within a register": eight bytes in a u64, tested at once, without `unsafe`.
pub mod swar {
    /// 0x01 in every byte.
    pub const ONES: u64 = 0x0101_0101_0101_0101;
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH1: u64 = 0x8080_8080_8080_8080;
    const NIBBLE_HI: u64 = 0xf0f0_f0f0_f0f0_f0f0;

    /// 0x80 in each byte of `w` that equals `b`, 0 in the others. Exact: no carry crosses a byte.
    #[inline(always)]
    pub fn bytes_eq(w: u64, b: u8) -> u64 {
        let x = w ^ (ONES * b as u64);
        !((x & LOW7).wrapping_add(LOW7) | x) & HIGH1
    }

    /// Bit k set when byte k of `flags` (as [`bytes_eq`] returns them) is flagged.
    #[inline(always)]
    pub fn gather(flags: u64) -> u64 {
        (flags >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
    }

    /// Whether all eight bytes of `w` are ASCII digits.
    #[inline(always)]
    pub fn all_digits(w: u64) -> bool {
        // High nibble 3, and still 3 after adding 6 (so the low nibble is at most 9); no carries.
        (w & NIBBLE_HI) == ONES * 0x30 && (w.wrapping_add(ONES * 6) & NIBBLE_HI) == ONES * 0x30
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// SSE2 (where it runs), SWAR and a byte loop find the same bytes.
        #[test]
        fn masks_agree_with_a_byte_loop(
            v in proptest::collection::vec(proptest::sample::select(b"|\n0a\xff\x7c\x0b\x80".to_vec()), 64),
        ) {
            let c: [u8; 64] = v.try_into().unwrap();
            let mut want = (0u64, 0u64);
            for (k, &b) in c.iter().enumerate() {
                want.0 |= u64::from(b == b'|') << k;
                want.1 |= u64::from(b == b'\n') << k;
            }
            proptest::prop_assert_eq!(masks64(&c), want);
            let first: [u8; 32] = c[..32].try_into().unwrap();
            proptest::prop_assert_eq!(newlines32(&first) as u64, want.1 & 0xffff_ffff);
            proptest::prop_assert_eq!(masks64_swar(&c), want);
        }

        #[test]
        fn all_digits_is_exact(w: u64) {
            let want = w.to_le_bytes().iter().all(u8::is_ascii_digit);
            proptest::prop_assert_eq!(swar::all_digits(w), want);
        }
    }

    #[test]
    fn all_digits_edges() {
        assert!(swar::all_digits(u64::from_le_bytes(*b"01234567")));
        assert!(swar::all_digits(u64::from_le_bytes(*b"99999999")));
        assert!(!swar::all_digits(u64::from_le_bytes(*b"9999999:")));
        assert!(!swar::all_digits(u64::from_le_bytes(*b"/9999999")));
        assert!(!swar::all_digits(u64::from_le_bytes(*b"\xff9999999")));
    }
}
