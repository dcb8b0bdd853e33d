//! Philox4x32-10 (Salmon et al., SC'11), the counter-based generator both the CPU and the GPU
//! use, so the same seed draws the same numbers on either side. STUB (kernels helper).
//!
//! Stream layout (the CUDA sources follow it exactly): block `b` (u64) of stream `tag` is
//! `philox4x32_10([b as u32, (b >> 32) as u32, tag, 0], seed_key(seed))`.

/// Stream tag for π sampling.
pub const TAG_PI: u32 = 0;
/// Stream tag for option paths.
pub const TAG_PATHS: u32 = 1;

/// Ten rounds of Philox4x32 on `ctr` under `key`.
pub fn philox4x32_10(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let _ = (ctr, key);
    todo!()
}

/// Key words of a 64-bit seed: `[seed as u32, (seed >> 32) as u32]`.
pub fn seed_key(seed: u64) -> [u32; 2] {
    [seed as u32, (seed >> 32) as u32]
}

/// Uniform in [0, 1): the top 24 bits times 2⁻²⁴ (exact in f32).
pub fn unit_f32(x: u32) -> f32 {
    (x >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// Uniform in (0, 1]: `(top 24 bits + 1)` times 2⁻²⁴ (safe for ln).
pub fn unit_open_f32(x: u32) -> f32 {
    ((x >> 8) + 1) as f32 * (1.0 / 16_777_216.0)
}
