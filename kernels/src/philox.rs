//! Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3",
//! SC'11), the counter-based generator both the CPU and the GPU use, so the same seed draws the
//! same numbers on either side. Checked against the Random123 known-answer vectors.
//!
//! Stream layout (the CUDA sources follow it exactly): block `b` (u64) of stream `tag` is
//! `philox4x32_10([b as u32, (b >> 32) as u32, tag, 0], seed_key(seed))`.
//!
//! One round maps `(c0, c1, c2, c3)` under key `(k0, k1)` to
//! `(hi(M1·c2) ^ c1 ^ k0, lo(M1·c2), hi(M0·c0) ^ c3 ^ k1, lo(M0·c0))` with the 32×32→64
//! products of the Philox multipliers `M0 = 0xD2511F53`, `M1 = 0xCD9E8D57`; between rounds the
//! key is bumped by the Weyl constants `0x9E3779B9` (golden ratio) and `0xBB67AE85` (√3 − 1).

/// Stream tag for π sampling.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::philox::{block, TAG_PATHS, TAG_PI};
///
/// // The same seed and block draw different numbers in the two streams.
/// assert_ne!(block(9, TAG_PI, 0), block(9, TAG_PATHS, 0));
/// ```
pub const TAG_PI: u32 = 0;
/// Stream tag for option paths.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::philox::{block, philox4x32_10, seed_key, TAG_PATHS};
///
/// assert_eq!(block(5, TAG_PATHS, 2), philox4x32_10([2, 0, TAG_PATHS, 0], seed_key(5)));
/// ```
pub const TAG_PATHS: u32 = 1;

/// Philox4x32 multiplier `M0` (Salmon et al.'s `PHILOX_M4x32_0`): each round takes the 32×32→64
/// product `M0 · c0`, whose halves become words 2 and 3 (see the module docs). The CUDA
/// source defines the same constants (`GMPRT_PHILOX_*` in `cuda/monte_carlo.cu`), which is
/// what makes CPU and GPU draws identical.
pub const PHILOX_M0: u32 = 0xD251_1F53;
/// Philox4x32 multiplier `M1` (`PHILOX_M4x32_1`): each round takes the product `M1 · c2`,
/// whose halves become words 0 and 1 (see the module docs).
pub const PHILOX_M1: u32 = 0xCD9E_8D57;
/// Weyl increment of key word 0, added (wrapping) to `k0` between rounds: ⌊2³² / φ⌋, the
/// golden ratio (`PHILOX_W32_0`).
pub const PHILOX_W0: u32 = 0x9E37_79B9;
/// Weyl increment of key word 1, added (wrapping) to `k1` between rounds: the first 32
/// fractional bits of √3 − 1 (`PHILOX_W32_1`).
pub const PHILOX_W1: u32 = 0xBB67_AE85;

#[inline(always)]
fn mulhilo(a: u32, b: u32) -> (u32, u32) {
    let p = a as u64 * b as u64;
    ((p >> 32) as u32, p as u32)
}

/// Ten rounds of Philox4x32 on `ctr` under `key`.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::philox::philox4x32_10;
///
/// // Random123's known-answer vector for a zero counter and key.
/// assert_eq!(philox4x32_10([0; 4], [0; 2]), [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]);
/// // A counter-based generator: any block, in any order, from the counter alone.
/// assert_ne!(philox4x32_10([1, 0, 0, 0], [0; 2]), philox4x32_10([0; 4], [0; 2]));
/// ```
#[inline(always)]
pub fn philox4x32_10(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let [mut c0, mut c1, mut c2, mut c3] = ctr;
    let [mut k0, mut k1] = key;
    for round in 0..10 {
        if round > 0 {
            k0 = k0.wrapping_add(PHILOX_W0);
            k1 = k1.wrapping_add(PHILOX_W1);
        }
        let (hi0, lo0) = mulhilo(PHILOX_M0, c0);
        let (hi1, lo1) = mulhilo(PHILOX_M1, c2);
        (c0, c1, c2, c3) = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0);
    }
    [c0, c1, c2, c3]
}

/// Block `block` of stream `tag` under `seed` (the layout in the module docs).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::philox::{block, philox4x32_10, seed_key, TAG_PI};
///
/// let seed = 0x1234_5678_9abc_def0;
/// let b = (7u64 << 32) | 3; // counter words 0 and 1 are the block's low and high halves
/// assert_eq!(block(seed, TAG_PI, b), philox4x32_10([3, 7, TAG_PI, 0], seed_key(seed)));
/// assert_eq!(block(seed, TAG_PI, b), block(seed, TAG_PI, b)); // deterministic
/// ```
#[inline(always)]
pub fn block(seed: u64, tag: u32, block: u64) -> [u32; 4] {
    philox4x32_10([block as u32, (block >> 32) as u32, tag, 0], seed_key(seed))
}

/// Key words of a 64-bit seed: `[seed as u32, (seed >> 32) as u32]`.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::philox::seed_key;
///
/// assert_eq!(seed_key(0x1234_5678_9abc_def0), [0x9abc_def0, 0x1234_5678]);
/// ```
pub fn seed_key(seed: u64) -> [u32; 2] {
    [seed as u32, (seed >> 32) as u32]
}

/// Uniform in [0, 1): the top 24 bits times 2⁻²⁴ (exact in f32).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::philox::unit_f32;
///
/// assert_eq!(unit_f32(0), 0.0);
/// assert_eq!(unit_f32(0x8000_0000), 0.5);
/// assert_eq!(unit_f32(u32::MAX), 1.0 - 2f32.powi(-24)); // never 1
/// ```
pub fn unit_f32(x: u32) -> f32 {
    (x >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// Uniform in (0, 1]: `(top 24 bits + 1)` times 2⁻²⁴ (safe for ln).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::philox::unit_open_f32;
///
/// assert_eq!(unit_open_f32(0), 2f32.powi(-24)); // never 0, so ln is finite
/// assert_eq!(unit_open_f32(u32::MAX), 1.0);
/// ```
pub fn unit_open_f32(x: u32) -> f32 {
    ((x >> 8) + 1) as f32 * (1.0 / 16_777_216.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known-answer vectors of Random123 (`kat_vectors`, philox4x32 with 10 rounds).
    #[test]
    fn random123_known_answers() {
        assert_eq!(philox4x32_10([0; 4], [0; 2]), [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]);
        assert_eq!(
            philox4x32_10([0xffff_ffff; 4], [0xffff_ffff; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32_10([0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344], [0xa409_3822, 0x299f_31d0]),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }

    #[test]
    fn stream_layout_and_units() {
        let seed = 0x1234_5678_9abc_def0;
        assert_eq!(seed_key(seed), [0x9abc_def0, 0x1234_5678]);
        let b = (7u64 << 32) | 3;
        assert_eq!(block(seed, TAG_PATHS, b), philox4x32_10([3, 7, TAG_PATHS, 0], seed_key(seed)));
        assert_eq!(unit_f32(0), 0.0);
        assert_eq!(unit_f32(u32::MAX), 1.0 - 1.0 / 16_777_216.0);
        assert_eq!(unit_open_f32(0), 1.0 / 16_777_216.0);
        assert_eq!(unit_open_f32(u32::MAX), 1.0);
    }
}
