//! The x87 80-bit extended ("long double") arithmetic R does on x86-64 Linux, emulated in
//! software ([`Ld`]), and R's `mean()` computed with it ([`mean_r`]). A leaf of `stats`: `summary`
//! and `sample` take R's mean from here, `format` R's significant-digit count.
//!
//! R sums in `long double` (64-bit significand) and `format()` scales numbers in `long double`
//! before counting their significant digits (src/main/summary.c, src/main/format.c). Doing the
//! same operations in `f64` gives a different last bit often enough to print a different last
//! digit on a rounding boundary, so each operation here rounds exactly as the x87 unit does: to a
//! 64-bit significand, ties to even.

/// An extended-precision value: `(-1)^neg · mant · 2^exp`, `mant` normalized (bit 63 set) or 0.
/// The exponent is not bounded (R's values never reach the x87 range limits).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Ld {
    neg: bool,
    mant: u64,
    exp: i32,
}

impl Ld {
    pub(crate) const ZERO: Ld = Ld {
        neg: false,
        mant: 0,
        exp: 0,
    };

    /// A finite double, exactly.
    #[inline]
    pub(crate) fn from_f64(x: f64) -> Ld {
        let bits = x.to_bits();
        let e = ((bits >> 52) & 0x7ff) as i32;
        if e != 0 && e != 0x7ff {
            // Normal: the implicit bit becomes bit 63.
            return Ld {
                neg: bits >> 63 == 1,
                mant: ((bits & ((1u64 << 52) - 1)) | (1u64 << 52)) << 11,
                exp: e - 1075 - 11,
            };
        }
        if x == 0.0 || !x.is_finite() {
            return Ld::ZERO;
        }
        let bits = x.to_bits();
        let neg = bits >> 63 == 1;
        let e = ((bits >> 52) & 0x7ff) as i32;
        let f = bits & ((1u64 << 52) - 1);
        let (m, exp) = if e == 0 {
            (f, -1074)
        } else {
            (f | (1u64 << 52), e - 1075)
        };
        let lz = m.leading_zeros() as i32;
        Ld {
            neg,
            mant: m << lz,
            exp: exp - lz,
        }
    }

    /// True for zero.
    pub(crate) fn is_zero(self) -> bool {
        self.mant == 0
    }

    /// True below zero.
    pub(crate) fn is_negative(self) -> bool {
        self.neg && !self.is_zero()
    }

    /// `v · 2^exp`, plus something below `v`'s last bit when `sticky`, rounded to 64 bits (ties to
    /// even). Callers keep at least one bit below the 64 kept when `sticky` can be set.
    fn round(neg: bool, v: u128, exp: i32, sticky: bool) -> Ld {
        if v == 0 {
            return Ld::ZERO;
        }
        let top = 127 - v.leading_zeros() as i32;
        if top <= 63 {
            debug_assert!(!sticky || top == 63, "not enough bits to round");
            let s = 63 - top;
            return Ld {
                neg,
                mant: (v << s) as u64,
                exp: exp - s,
            };
        }
        let shift = (top - 63) as u32;
        let m = (v >> shift) as u64;
        let rem = v & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        // Branch-free rounding: above half, or a tie (nothing sticky) with an odd significand.
        let up = u64::from(rem > half) | (u64::from(rem == half) & (u64::from(sticky) | m));
        let (m, over) = m.overflowing_add(up & 1);
        Ld {
            neg,
            mant: if over { 1 << 63 } else { m },
            exp: exp + shift as i32 + i32::from(over),
        }
    }

    /// `self + o`, rounded once.
    #[inline]
    pub(crate) fn add(self, o: Ld) -> Ld {
        if o.is_zero() {
            return self;
        }
        if self.is_zero() {
            return o;
        }
        // `a` is the one of larger magnitude (normalized: a larger exponent is larger).
        let (a, b) = if (self.exp, self.mant) >= (o.exp, o.mant) {
            (self, o)
        } else {
            (o, self)
        };
        if a.neg == b.neg {
            return Ld::add_magnitudes(a, b);
        }
        // 62 bits below a's significand: far more than the guard and round bits rounding needs,
        // and whatever of b falls below them is folded into the lowest bit (sticky).
        let wa = (a.mant as u128) << 62;
        let d = (a.exp - b.exp) as u32;
        let wb_full = (b.mant as u128) << 62;
        let wb = if d >= 127 {
            1
        } else {
            (wb_full >> d) | u128::from(wb_full & ((1u128 << d) - 1) != 0)
        };
        let v = if a.neg == b.neg { wa + wb } else { wa - wb };
        Ld::round(a.neg, v, a.exp - 62, false)
    }

    /// `|a| + |b|` with a's sign, `|a| >= |b|`: the common case of a sum of durations, without the
    /// normalization a difference needs (the sum's top bit is one of two known places).
    #[inline]
    fn add_magnitudes(a: Ld, b: Ld) -> Ld {
        let d = (a.exp - b.exp) as u32;
        // a's significand at bits 63..126; b below it, the bits shifted out folded into bit 0.
        let wa = (a.mant as u128) << 63;
        let wb = if d >= 127 {
            1
        } else {
            let full = (b.mant as u128) << 63;
            (full >> d) | u128::from(full & ((1u128 << d) - 1) != 0)
        };
        let v = wa + wb;
        // Branch-free: whether the sum carried into bit 127, and the rounding, are data.
        let carry = (v >> 127) as u32;
        let shift = 63 + carry;
        let m = (v >> shift) as u64;
        let rem = v & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        let up = u64::from(rem > half) | (u64::from(rem == half) & m);
        let (m, over) = m.overflowing_add(up & 1);
        Ld {
            neg: a.neg,
            mant: if over { 1 << 63 } else { m },
            exp: a.exp - 63 + shift as i32 + i32::from(over),
        }
    }

    /// `self − o`, rounded once.
    pub(crate) fn sub(self, o: Ld) -> Ld {
        self.add(Ld { neg: !o.neg, ..o })
    }

    /// `self / n` for a count `n` (below 2^60), rounded once.
    pub(crate) fn div_count(self, n: u64) -> Ld {
        if self.is_zero() || n == 0 {
            return if n == 0 { Ld::ZERO } else { self };
        }
        debug_assert!(n < 1 << 60);
        // The numerator at bit 127: the quotient has at least 67 bits, the remainder is sticky.
        let num = (self.mant as u128) << 64;
        let den = n as u128;
        Ld::round(self.neg, num / den, self.exp - 64, !num.is_multiple_of(den))
    }

    /// `x · 10^k` for a finite double and `0 <= k <= 27` (10^k is exact in 64 bits), rounded once.
    pub(crate) fn f64_times_pow10(x: f64, k: u32) -> Ld {
        let a = Ld::from_f64(x);
        // 10^k = 5^k · 2^k; a's significand times 5^27 < 2^127.
        let v = (a.mant as u128) * 5u128.pow(k);
        Ld::round(a.neg, v, a.exp + k as i32, false)
    }

    /// `x / 10^k` for a finite double and `0 <= k <= 27`, rounded once.
    pub(crate) fn f64_over_pow10(x: f64, k: u32) -> Ld {
        let a = Ld::from_f64(x);
        if a.is_zero() {
            return a;
        }
        // The significand at bit 127 over 5^k (< 2^63): a quotient of at least 65 bits.
        let num = (a.mant as u128) << 64;
        let den = 5u128.pow(k);
        Ld::round(
            a.neg,
            num / den,
            a.exp - 64 - k as i32,
            !num.is_multiple_of(den),
        )
    }

    /// `self · 10`, rounded once.
    pub(crate) fn times10(self) -> Ld {
        Ld::round(self.neg, (self.mant as u128) * 10, self.exp, false)
    }

    /// `self < t` for a non-negative `self` and an integer `t` below 2^64.
    pub(crate) fn lt_u64(self, t: u64) -> bool {
        if self.is_zero() {
            return t > 0;
        }
        if self.neg {
            return true;
        }
        if self.exp >= 0 {
            // self >= 2^63 · 2^exp >= 2^63: compare as integers when it fits.
            return self.exp < 64 && ((self.mant as u128) << self.exp) < t as u128;
        }
        let s = (-self.exp) as u32;
        if s >= 64 {
            // self < 2^64 · 2^-64 = 1.
            return t >= 1;
        }
        (self.mant as u128) < (t as u128) << s
    }

    /// C's `nearbyintl` of a non-negative value (ties to even), as a double; values above 2^63
    /// come back as the nearest double.
    pub(crate) fn nearbyint(self) -> f64 {
        if self.is_zero() {
            return 0.0;
        }
        if self.exp >= 0 {
            return self.to_f64();
        }
        let s = (-self.exp) as u32;
        if s > 64 {
            return 0.0;
        }
        let m = self.mant as u128;
        let q = m >> s;
        let rem = m & ((1u128 << s) - 1);
        let half = 1u128 << (s - 1);
        let q = if rem > half || (rem == half && q & 1 == 1) {
            q + 1
        } else {
            q
        };
        let v = q as f64;
        if self.neg {
            -v
        } else {
            v
        }
    }

    /// The nearest double (ties to even), as C's `(double)` cast; infinite when out of range.
    pub(crate) fn to_f64(self) -> f64 {
        if self.is_zero() {
            return if self.neg { -0.0 } else { 0.0 };
        }
        let mut m = self.mant >> 11;
        let rem = self.mant & 0x7ff;
        let mut exp = self.exp + 11;
        if rem > 0x400 || (rem == 0x400 && m & 1 == 1) {
            m += 1;
            if m >> 53 != 0 {
                m >>= 1;
                exp += 1;
            }
        }
        // m is 53 bits with bit 52 set: the value is m · 2^exp, binary exponent exp + 52.
        let e2 = exp + 52;
        let sign = if self.neg { -1.0 } else { 1.0 };
        if e2 > 1023 {
            return sign * f64::INFINITY;
        }
        if e2 < -1022 {
            // Subnormal: two scalings (R's values never come here).
            return sign * (m as f64) * 2f64.powi(exp / 2) * 2f64.powi(exp - exp / 2);
        }
        let bits =
            (u64::from(self.neg) << 63) | (((e2 + 1023) as u64) << 52) | (m & ((1 << 52) - 1));
        f64::from_bits(bits)
    }
}

/// R's `mean()` of doubles (src/main/summary.c): a `long double` sum divided by n, then the mean
/// of the residuals `x − mean` (also summed in `long double`) added as a correction, and the result
/// rounded to a double. `values` yields the same numbers in the same order each time it is called
/// (the order matters: R sums in the order of the vector). NaN without values.
///
/// On x86-64 the two sums run on the x87 unit itself, as R's compiled C does (one `fadd` a value,
/// about 40 times faster than [`Ld::add`]); the division and the final rounding stay in [`Ld`].
/// Elsewhere everything is emulated. Tests hold the two to the same bits.
pub fn mean_r<I: Iterator<Item = f64>>(values: impl Fn() -> I) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if let Some(m) = x87::mean_r(&values) {
        return m;
    }
    mean_r_emulated(values)
}

/// [`mean_r`] of a slice: on x86-64 the unit sums the slice where it lies (no copying into
/// chunks), the same bits as [`mean_r`].
pub fn mean_r_slice(values: &[f64]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if let Some(m) = x87::mean_r_slice(values) {
        return m;
    }
    mean_r(|| values.iter().copied())
}

/// [`mean_r`] with every operation in [`Ld`].
pub(crate) fn mean_r_emulated<I: Iterator<Item = f64>>(values: impl Fn() -> I) -> f64 {
    let mut n = 0u64;
    let mut s = Ld::ZERO;
    for x in values() {
        if !x.is_finite() {
            // R's long-double sum of a non-finite value is non-finite; so is the mean.
            return values().sum::<f64>() / values().count() as f64;
        }
        s = s.add(Ld::from_f64(x));
        n += 1;
    }
    if n == 0 {
        return f64::NAN;
    }
    let s = s.div_count(n);
    if !s.to_f64().is_finite() {
        return s.to_f64();
    }
    let mut t = Ld::ZERO;
    for x in values() {
        t = t.add(Ld::from_f64(x).sub(s));
    }
    s.add(t.div_count(n)).to_f64()
}

/// The x87 unit's own extended arithmetic for [`mean_r`]'s two long sums. Values cross between
/// it and [`Ld`] in the unit's 80-bit memory format (`fld`/`fstp tbyte`: exact both ways).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod x87 {
    use super::Ld;

    /// An 80-bit extended value as the x87 unit stores it: the 64-bit significand (integer bit
    /// explicit), then sign and 15-bit biased exponent.
    type Ext = [u8; 10];

    /// Values are handed to the unit this many at a time.
    const CHUNK: usize = 1024;

    /// Extended precision, round to nearest, every exception masked: the control word Linux starts
    /// a process with, set explicitly around each sum in case something changed it.
    const CONTROL: u16 = 0x037f;

    fn to_ext(v: Ld) -> Option<Ext> {
        let mut e = [0u8; 10];
        if v.is_zero() {
            return Some(e);
        }
        let biased = v.exp + 16383 + 63;
        if !(1..0x7fff).contains(&biased) {
            return None;
        }
        e[..8].copy_from_slice(&v.mant.to_le_bytes());
        let se = (u16::from(v.neg) << 15) | biased as u16;
        e[8..].copy_from_slice(&se.to_le_bytes());
        Some(e)
    }

    fn from_ext(e: &Ext) -> Option<Ld> {
        let mant = u64::from_le_bytes(e[..8].try_into().expect("8 bytes"));
        let se = u16::from_le_bytes([e[8], e[9]]);
        let biased = i32::from(se & 0x7fff);
        if mant == 0 && biased == 0 {
            return Some(Ld::ZERO);
        }
        // Denormals, pseudo-denormals, infinities and NaNs: finite sums of doubles never make
        // them; the caller falls back to the emulation if one appears.
        if biased == 0 || biased == 0x7fff || mant >> 63 == 0 {
            return None;
        }
        Some(Ld {
            neg: se >> 15 == 1,
            mant,
            exp: biased - 16383 - 63,
        })
    }

    /// `acc += x` for each `x` of `xs` in order, each sum rounded to 64 bits.
    fn sum_into(acc: &mut Ext, xs: &[f64]) {
        if xs.is_empty() {
            return;
        }
        let mut saved = 0u16;
        // SAFETY: reads `xs.len()` doubles from `xs` and 10 bytes at `acc`, writes 10 bytes at
        // `acc` and 2 at `saved`; the x87 stack is empty on entry and on exit (one load, one
        // store-and-pop), and the control word is restored.
        unsafe {
            std::arch::asm!(
                "fnstcw word ptr [{saved}]",
                "fldcw word ptr [{control}]",
                "fld tbyte ptr [{acc}]",
                "2:",
                "fadd qword ptr [{p}]",
                "add {p}, 8",
                "dec {n}",
                "jnz 2b",
                "fstp tbyte ptr [{acc}]",
                "fldcw word ptr [{saved}]",
                saved = in(reg) &mut saved,
                control = in(reg) &CONTROL,
                acc = in(reg) acc.as_mut_ptr(),
                p = inout(reg) xs.as_ptr() => _,
                n = inout(reg) xs.len() => _,
                out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                options(nostack),
            );
        }
    }

    /// `acc += x − s` for each `x` of `xs` in order, the difference and the sum each rounded to 64
    /// bits (C's `t += (dx[i] - s)` with `long double` `t` and `s`).
    fn residuals_into(acc: &mut Ext, s: &Ext, xs: &[f64]) {
        if xs.is_empty() {
            return;
        }
        let mut saved = 0u16;
        // SAFETY: as in `sum_into`; two values are loaded and both popped again.
        unsafe {
            std::arch::asm!(
                "fnstcw word ptr [{saved}]",
                "fldcw word ptr [{control}]",
                "fld tbyte ptr [{s}]",
                "fld tbyte ptr [{acc}]",
                "2:",
                "fld qword ptr [{p}]",
                "fsub st(0), st(2)",
                "faddp st(1), st(0)",
                "add {p}, 8",
                "dec {n}",
                "jnz 2b",
                "fstp tbyte ptr [{acc}]",
                "fstp st(0)",
                "fldcw word ptr [{saved}]",
                saved = in(reg) &mut saved,
                control = in(reg) &CONTROL,
                s = in(reg) s.as_ptr(),
                acc = in(reg) acc.as_mut_ptr(),
                p = inout(reg) xs.as_ptr() => _,
                n = inout(reg) xs.len() => _,
                out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                options(nostack),
            );
        }
    }

    /// Feeds `values` to `f` in chunks; false (and nothing more fed) at a non-finite value.
    fn in_chunks(values: impl Iterator<Item = f64>, mut f: impl FnMut(&[f64])) -> Option<u64> {
        let mut buf = [0f64; CHUNK];
        let (mut len, mut n) = (0usize, 0u64);
        for x in values {
            if !x.is_finite() {
                return None;
            }
            buf[len] = x;
            len += 1;
            if len == CHUNK {
                f(&buf);
                n += CHUNK as u64;
                len = 0;
            }
        }
        f(&buf[..len]);
        Some(n + len as u64)
    }

    /// [`super::mean_r`] with the sums on the unit; None where the emulation must decide (a
    /// non-finite value, no values, a value the 80-bit format cannot carry).
    pub(super) fn mean_r<I: Iterator<Item = f64>>(values: &impl Fn() -> I) -> Option<f64> {
        mean_of(|f| in_chunks(values(), f))
    }

    /// [`mean_r_slice`]: as [`mean_r`], the slice summed where it lies.
    pub(super) fn mean_r_slice(values: &[f64]) -> Option<f64> {
        mean_of(|f| {
            if !values.iter().all(|x| x.is_finite()) {
                return None;
            }
            f(values);
            Some(values.len() as u64)
        })
    }

    /// R's two long sums over the values `feed` hands to its callback, in order and in slices
    /// (twice: once for the sum, once for the residuals); `feed` returns how many it handed over,
    /// or None at a non-finite value.
    fn mean_of(feed: impl Fn(&mut dyn FnMut(&[f64])) -> Option<u64>) -> Option<f64> {
        let mut sum = [0u8; 10];
        let n = feed(&mut |xs| sum_into(&mut sum, xs))?;
        if n == 0 || n >= 1 << 60 {
            return None;
        }
        let s = from_ext(&sum)?.div_count(n);
        if !s.to_f64().is_finite() {
            return None;
        }
        let s_ext = to_ext(s)?;
        let mut t = [0u8; 10];
        feed(&mut |xs| residuals_into(&mut t, &s_ext, xs))?;
        Some(s.add(from_ext(&t)?.div_count(n)).to_f64())
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_unit_and_the_emulation_give_the_same_bits() {
            use rand::{Rng, SeedableRng};
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x2545_f491_4f6c_dd1d);
            let mut next = || rng.random::<u64>();
            for case in 0..400 {
                let n = 1 + (next() % 5000) as usize;
                let x: Vec<f64> = (0..n)
                    .map(|_| {
                        let r = next();
                        match case % 5 {
                            // Latencies with three decimals, as exported.
                            0 => (r % 10_000_000) as f64 / 1000.0,
                            // Wide magnitudes and both signs.
                            1 => f64::from_bits(r % (0x7fe0_0000_0000_0000)) * 1e-200,
                            2 => (r as i64 as f64) * 1e-9,
                            // Ties everywhere.
                            3 => (r % 4) as f64 * 0.1,
                            _ => 1e15 + (r % 1000) as f64 / 7.0,
                        }
                    })
                    .filter(|v| v.is_finite())
                    .collect();
                let hw = mean_r(&|| x.iter().copied());
                let sw = super::super::mean_r_emulated(|| x.iter().copied());
                match hw {
                    Some(h) => assert_eq!(h.to_bits(), sw.to_bits(), "case {case}: {h} vs {sw}"),
                    None => assert!(x.is_empty() || !sw.is_finite(), "case {case}"),
                }
                assert_eq!(mean_r_slice(&x), hw, "case {case}: the slice path");
            }
        }

        #[test]
        fn the_80_bit_format_round_trips() {
            for v in [1.0, -2.5, 1e-300, 1e300, 0.1, 123_456.789] {
                let l = Ld::from_f64(v).div_count(3);
                assert_eq!(from_ext(&to_ext(l).unwrap()), Some(l));
            }
            assert_eq!(from_ext(&to_ext(Ld::ZERO).unwrap()), Some(Ld::ZERO));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_round_trip() {
        for x in [
            1.0,
            -2.5,
            0.1,
            1e-300,
            1e300,
            123456789.123,
            f64::MIN_POSITIVE,
        ] {
            assert_eq!(Ld::from_f64(x).to_f64(), x);
        }
    }

    #[test]
    fn sums_carry_eleven_more_bits_than_doubles() {
        // 1 + 2^-60 is exact in 64 bits and lost in 53.
        let s = Ld::from_f64(1.0).add(Ld::from_f64(2f64.powi(-60)));
        assert_eq!(s.sub(Ld::from_f64(1.0)).to_f64(), 2f64.powi(-60));
        // 1 + 2^-64 is a tie in 64 bits: to even, i.e. 1.
        let s = Ld::from_f64(1.0).add(Ld::from_f64(2f64.powi(-64)));
        assert_eq!(s, Ld::from_f64(1.0));
        // 1 + 2^-64 + 2^-120 is above the tie: rounds up.
        let s = Ld::from_f64(1.0).add(Ld::from_f64(2f64.powi(-64) + 2f64.powi(-116)));
        assert_eq!(s.sub(Ld::from_f64(1.0)).to_f64(), 2f64.powi(-63));
    }

    #[test]
    fn division_and_scaling_round_once() {
        let third = Ld::from_f64(1.0).div_count(3);
        assert_eq!(third.to_f64(), 1.0 / 3.0);
        assert_eq!(Ld::f64_times_pow10(1.5, 3).nearbyint(), 1500.0);
        assert_eq!(Ld::f64_over_pow10(2500.0, 3).nearbyint(), 2.0);
        assert_eq!(Ld::f64_over_pow10(3500.0, 3).nearbyint(), 4.0);
        assert!(Ld::f64_times_pow10(0.999, 3).lt_u64(1000));
        assert!(!Ld::f64_times_pow10(1.0, 3).lt_u64(1000));
    }

    #[test]
    fn mean_of_simple_values() {
        let x = [3.0, 1.0, 4.0, 1.0, 5.0];
        assert_eq!(mean_r(|| x.iter().copied()), 2.8);
        assert!(mean_r(std::iter::empty).is_nan());
    }
}

#[cfg(test)]
mod timing {
    /// `cargo test -p dbscope-core --release -- --ignored mean_r_cost --nocapture`: the cost of R's
    /// mean in emulated long double against a plain sum.
    #[test]
    #[ignore]
    fn mean_r_cost() {
        let x: Vec<f64> = (0..10_000_000u64)
            .map(|i| (i * 2_654_435_761 % 1_000_003) as f64 / 1000.0)
            .collect();
        let t = std::time::Instant::now();
        let mut acc = super::Ld::ZERO;
        for &v in &x {
            acc = acc.add(super::Ld::from_f64(v));
        }
        let one = t.elapsed();
        println!("one pass of sums {:?} in {one:?}", acc.to_f64());
        let t = std::time::Instant::now();
        let m = super::mean_r(|| x.iter().copied());
        let r = t.elapsed();
        let t = std::time::Instant::now();
        let s: f64 = x.iter().sum::<f64>() / x.len() as f64;
        let p = t.elapsed();
        println!("mean_r {m} in {r:?}; plain {s} in {p:?} (10 M values)");
    }
}
