//! ggml's tensor element types and their block decoders, as GGUF files store them. Each quantized
//! type packs a row into fixed-size blocks of 32 (the "legacy" types) or 256 (the k-quants)
//! values, each block carrying its own scale(s); the layouts and formulas are ggml's
//! (`ggml-common.h`, `dequantize_row_*` in `ggml-quants.c`). Tests compare every type with
//! gguf-py's decoders on random blocks (tests/fixtures/ggml-blocks.*).

use half::f16;

/// The element types SD Bench reads from GGUF files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GgmlType {
    F32,
    F16,
    BF16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q2K,
    Q3K,
    Q4K,
    Q5K,
    Q6K,
}

/// Values per k-quant super-block.
const QK_K: usize = 256;

impl GgmlType {
    /// The type with ggml's id `id`; `Err` names the id's type when it is one SD Bench does not
    /// decode (or says it is unknown).
    pub fn from_id(id: u32) -> Result<GgmlType, String> {
        Ok(match id {
            0 => GgmlType::F32,
            1 => GgmlType::F16,
            2 => GgmlType::Q4_0,
            3 => GgmlType::Q4_1,
            6 => GgmlType::Q5_0,
            7 => GgmlType::Q5_1,
            8 => GgmlType::Q8_0,
            10 => GgmlType::Q2K,
            11 => GgmlType::Q3K,
            12 => GgmlType::Q4K,
            13 => GgmlType::Q5K,
            14 => GgmlType::Q6K,
            30 => GgmlType::BF16,
            other => {
                let name = match other {
                    9 => "Q8_1",
                    15 => "Q8_K",
                    16..=23 => "an IQ type",
                    29 => "IQ1_M",
                    34 => "TQ1_0",
                    35 => "TQ2_0",
                    39 => "MXFP4",
                    _ => return Err(format!("unknown ggml type {other}")),
                };
                return Err(format!(
                    "ggml type {other} ({name}), which SD Bench does not decode"
                ));
            }
        })
    }

    /// Every type SD Bench decodes.
    pub const ALL: [GgmlType; 13] = [
        GgmlType::F32,
        GgmlType::F16,
        GgmlType::BF16,
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::Q8_0,
        GgmlType::Q2K,
        GgmlType::Q3K,
        GgmlType::Q4K,
        GgmlType::Q5K,
        GgmlType::Q6K,
    ];

    /// The type named `name` as ggml names it (`Q4_K`; any case).
    pub fn named(name: &str) -> Option<GgmlType> {
        Self::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
    }

    pub fn name(self) -> &'static str {
        match self {
            GgmlType::F32 => "F32",
            GgmlType::F16 => "F16",
            GgmlType::BF16 => "BF16",
            GgmlType::Q4_0 => "Q4_0",
            GgmlType::Q4_1 => "Q4_1",
            GgmlType::Q5_0 => "Q5_0",
            GgmlType::Q5_1 => "Q5_1",
            GgmlType::Q8_0 => "Q8_0",
            GgmlType::Q2K => "Q2_K",
            GgmlType::Q3K => "Q3_K",
            GgmlType::Q4K => "Q4_K",
            GgmlType::Q5K => "Q5_K",
            GgmlType::Q6K => "Q6_K",
        }
    }

    /// Values per block and bytes per block.
    pub fn block(self) -> (usize, usize) {
        match self {
            GgmlType::F32 => (1, 4),
            GgmlType::F16 | GgmlType::BF16 => (1, 2),
            GgmlType::Q4_0 => (32, 18),
            GgmlType::Q4_1 => (32, 20),
            GgmlType::Q5_0 => (32, 22),
            GgmlType::Q5_1 => (32, 24),
            GgmlType::Q8_0 => (32, 34),
            GgmlType::Q2K => (QK_K, 84),
            GgmlType::Q3K => (QK_K, 110),
            GgmlType::Q4K => (QK_K, 144),
            GgmlType::Q5K => (QK_K, 176),
            GgmlType::Q6K => (QK_K, 210),
        }
    }
}

fn half(bytes: &[u8], at: usize) -> f32 {
    f16::from_le_bytes([bytes[at], bytes[at + 1]]).to_f32()
}

/// How a quantized type's values are computed from its codes: each value is
/// `(code - code_offset) * scale`, plus `offset` for the types that store a minimum, with one scale
/// (and offset) per run of `run` consecutive values. Every type SD Bench decodes has this form;
/// the f32 results below are ggml's, operation for operation, and a device holding the codes can
/// compute the same values (`nn::blocks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AffineForm {
    /// Values sharing one scale and offset.
    pub run: usize,
    /// Bits each code needs (codes are below `1 << code_bits`).
    pub code_bits: u32,
    /// What each code is offset by (ggml's `- 8`, `- 16`, `- 32`; Q8_0's signed bytes are stored
    /// as `q + 128`).
    pub code_offset: u8,
    /// Whether the type stores an offset (a block minimum) beside each scale.
    pub has_offset: bool,
}

impl GgmlType {
    /// The quantized types' form (`None` for F32, F16 and BF16).
    pub fn affine(self) -> Option<AffineForm> {
        let form = |run, code_bits, code_offset, has_offset| {
            Some(AffineForm {
                run,
                code_bits,
                code_offset,
                has_offset,
            })
        };
        match self {
            GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 => None,
            GgmlType::Q4_0 => form(32, 4, 8, false),
            GgmlType::Q4_1 => form(32, 4, 0, true),
            GgmlType::Q5_0 => form(32, 5, 16, false),
            GgmlType::Q5_1 => form(32, 5, 0, true),
            GgmlType::Q8_0 => form(32, 8, 128, false),
            GgmlType::Q2K => form(16, 2, 0, true),
            GgmlType::Q3K => form(16, 3, 4, false),
            GgmlType::Q4K => form(32, 4, 0, true),
            GgmlType::Q5K => form(32, 5, 0, true),
            GgmlType::Q6K => form(16, 6, 32, false),
        }
    }
}

/// A quantized tensor's codes, scales and offsets (`AffineForm`), in value order.
#[derive(Debug, Clone, PartialEq)]
pub struct AffineBlocks {
    pub form: AffineForm,
    /// One per value.
    pub codes: Vec<u8>,
    /// One per run of `form.run` values.
    pub scales: Vec<f32>,
    /// One per run where the form has offsets, else empty.
    pub offsets: Vec<f32>,
}

/// One block's codes, scales and offsets, written into slices of its values' and runs' length.
struct BlockParts<'a> {
    codes: &'a mut [u8],
    scales: &'a mut [f32],
    offsets: &'a mut [f32],
}

/// Decodes `data` (whole blocks of the quantized `kind`) into its codes, scales and offsets; `None`
/// for the float types. The caller checks that `data` holds whole blocks.
pub fn affine_blocks(kind: GgmlType, data: &[u8]) -> Option<AffineBlocks> {
    let form = kind.affine()?;
    let (values, bytes) = kind.block();
    let blocks = data.len() / bytes;
    let runs = values / form.run;
    let mut out = AffineBlocks {
        form,
        codes: vec![0; blocks * values],
        scales: vec![0.0; blocks * runs],
        offsets: vec![0.0; if form.has_offset { blocks * runs } else { 0 }],
    };
    let mut spare = [0f32; QK_K / 16];
    for (i, block) in data.chunks_exact(bytes).enumerate() {
        let offsets = if form.has_offset {
            &mut out.offsets[i * runs..(i + 1) * runs]
        } else {
            &mut spare[..runs]
        };
        let parts = BlockParts {
            codes: &mut out.codes[i * values..(i + 1) * values],
            scales: &mut out.scales[i * runs..(i + 1) * runs],
            offsets,
        };
        block_parts(kind, block, parts);
    }
    Some(out)
}

/// Decodes `data` (whole blocks of `kind`) into `out`, one value per element. `out.len()` must be
/// the number of values the blocks hold; callers check that when they read the tensor's header.
pub fn dequantize(kind: GgmlType, data: &[u8], out: &mut [f32]) {
    let (values, bytes) = kind.block();
    debug_assert_eq!(data.len() / bytes * values, out.len());
    let blocks = data.chunks_exact(bytes).zip(out.chunks_exact_mut(values));
    let Some(form) = kind.affine() else {
        match kind {
            GgmlType::F32 => {
                blocks.for_each(|(b, y)| y[0] = f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            }
            GgmlType::F16 => blocks.for_each(|(b, y)| y[0] = half(b, 0)),
            _ => blocks.for_each(|(b, y)| y[0] = half::bf16::from_le_bytes([b[0], b[1]]).to_f32()),
        }
        return;
    };
    let (mut codes, mut scales, mut offsets) = ([0u8; QK_K], [0f32; QK_K / 16], [0f32; QK_K / 16]);
    let runs = values / form.run;
    for (block, y) in blocks {
        let parts = BlockParts {
            codes: &mut codes[..values],
            scales: &mut scales[..runs],
            offsets: &mut offsets[..runs],
        };
        block_parts(kind, block, parts);
        let c0 = f32::from(form.code_offset);
        for (i, y) in y.iter_mut().enumerate() {
            let scaled = (f32::from(codes[i]) - c0) * scales[i / form.run];
            // No offset is added where the type has none: `x + 0.0` would turn -0.0 into 0.0.
            *y = if form.has_offset {
                scaled + offsets[i / form.run]
            } else {
                scaled
            };
        }
    }
}

fn block_parts(kind: GgmlType, b: &[u8], parts: BlockParts) {
    match kind {
        GgmlType::Q4_0 => q4_0(b, parts),
        GgmlType::Q4_1 => q4_1(b, parts),
        GgmlType::Q5_0 => q5_0(b, parts),
        GgmlType::Q5_1 => q5_1(b, parts),
        GgmlType::Q8_0 => q8_0(b, parts),
        GgmlType::Q2K => q2_k(b, parts),
        GgmlType::Q3K => q3_k(b, parts),
        GgmlType::Q4K => q4_k(b, parts),
        GgmlType::Q5K => q5_k(b, parts),
        GgmlType::Q6K => q6_k(b, parts),
        GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 => unreachable!("float types have no codes"),
    }
}

/// d: f16, qs: 16 bytes of 4-bit values (low nibbles first half, high nibbles second), offset 8:
/// value = (q - 8) * d.
fn q4_0(b: &[u8], p: BlockParts) {
    p.scales[0] = half(b, 0);
    nibble_codes(&b[2..18], p.codes);
}

/// 16 bytes of 4-bit codes: the low nibbles are the first 16 values, the high ones the next 16.
fn nibble_codes(qs: &[u8], codes: &mut [u8]) {
    let (low, high) = codes.split_at_mut(16);
    for ((q, l), h) in qs.iter().zip(low).zip(high) {
        (*l, *h) = (q & 0x0F, q >> 4);
    }
}

/// d, m: f16, qs as Q4_0 without the offset; value = q * d + m.
fn q4_1(b: &[u8], p: BlockParts) {
    (p.scales[0], p.offsets[0]) = (half(b, 0), half(b, 2));
    nibble_codes(&b[4..20], p.codes);
}

/// The fifth bits of Q5_0 and Q5_1 (`qh`) over their 4-bit codes (`qs`).
fn five_bit_codes(qh: u32, qs: &[u8], codes: &mut [u8]) {
    for j in 0..16 {
        let h0 = (((qh >> j) << 4) & 0x10) as u8;
        let h1 = ((qh >> (j + 12)) & 0x10) as u8;
        codes[j] = (qs[j] & 0x0F) | h0;
        codes[j + 16] = (qs[j] >> 4) | h1;
    }
}

/// d: f16, qh: 32 fifth bits (u32), qs as Q4_0; value = (q - 16) * d.
fn q5_0(b: &[u8], p: BlockParts) {
    p.scales[0] = half(b, 0);
    five_bit_codes(
        u32::from_le_bytes([b[2], b[3], b[4], b[5]]),
        &b[6..22],
        p.codes,
    );
}

/// d, m: f16, qh, qs as Q5_0 without the offset; value = q * d + m.
fn q5_1(b: &[u8], p: BlockParts) {
    (p.scales[0], p.offsets[0]) = (half(b, 0), half(b, 2));
    five_bit_codes(
        u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        &b[8..24],
        p.codes,
    );
}

/// d: f16, qs: 32 signed bytes, stored as codes q + 128; value = q * d.
fn q8_0(b: &[u8], p: BlockParts) {
    p.scales[0] = half(b, 0);
    for j in 0..32 {
        p.codes[j] = (b[2 + j] as i8 as i16 + 128) as u8;
    }
}

/// scales: 16 bytes (4-bit scale, 4-bit min per 16 values), qs: 64 bytes of 2-bit values,
/// d, dmin: f16; value = d * scale * q - dmin * min.
fn q2_k(b: &[u8], p: BlockParts) {
    let scales = &b[0..16];
    let qs = &b[16..80];
    let (d, min) = (half(b, 80), half(b, 82));
    let mut out = 0;
    let mut is = 0;
    for half_block in 0..2 {
        let q = &qs[32 * half_block..32 * half_block + 32];
        for shift in [0u32, 2, 4, 6] {
            for part in 0..2 {
                let sc = scales[is];
                p.scales[is] = d * (sc & 0x0F) as f32;
                p.offsets[is] = -(min * (sc >> 4) as f32);
                is += 1;
                for l in 0..16 {
                    p.codes[out] = (q[16 * part + l] >> shift) & 3;
                    out += 1;
                }
            }
        }
    }
}

/// hmask: 32 bytes of high bits, qs: 64 bytes of 2-bit values, scales: 12 bytes holding 16
/// 6-bit scales, d: f16; value = d * (scale - 32) * (q - (high bit ? 0 : 4)), each code stored
/// as q + (high bit ? 4 : 0) with offset 4.
fn q3_k(b: &[u8], p: BlockParts) {
    let hmask = &b[0..32];
    let qs = &b[32..96];
    let d_all = half(b, 108);
    // Unpack the 16 6-bit scales as ggml does (low 4 bits from the first 8 bytes, high 2 from
    // the last 4).
    let mut aux = [0u32; 3];
    for (i, a) in aux.iter_mut().enumerate() {
        *a = u32::from_le_bytes([b[96 + 4 * i], b[97 + 4 * i], b[98 + 4 * i], b[99 + 4 * i]]);
    }
    const KMASK1: u32 = 0x0303_0303;
    const KMASK2: u32 = 0x0f0f_0f0f;
    let tmp = aux[2];
    let words = [
        (aux[0] & KMASK2) | (((tmp) & KMASK1) << 4),
        (aux[1] & KMASK2) | (((tmp >> 2) & KMASK1) << 4),
        ((aux[0] >> 4) & KMASK2) | (((tmp >> 4) & KMASK1) << 4),
        ((aux[1] >> 4) & KMASK2) | (((tmp >> 6) & KMASK1) << 4),
    ];
    for (i, w) in words.iter().enumerate() {
        for (k, byte) in w.to_le_bytes().iter().enumerate() {
            p.scales[4 * i + k] = d_all * (*byte as i8 as i32 - 32) as f32;
        }
    }
    let mut out = 0;
    let mut m = 1u8;
    for half_block in 0..2 {
        let q = &qs[32 * half_block..32 * half_block + 32];
        for shift in [0u32, 2, 4, 6] {
            for part in 0..2 {
                for l in 0..16 {
                    let i = 16 * part + l;
                    let high = if hmask[i] & m != 0 { 4 } else { 0 };
                    p.codes[out] = ((q[i] >> shift) & 3) + high;
                    out += 1;
                }
            }
            m <<= 1;
        }
    }
}

/// Q4_K's and Q5_K's 12 scale bytes: the `j`th of 8 (scale, min) 6-bit pairs.
fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// Q4_K's and Q5_K's 8 runs of 32: scale d * sc, offset -(dmin * m).
fn k4_scales(b: &[u8], p: &mut BlockParts) {
    let (d, min) = (half(b, 0), half(b, 2));
    for j in 0..8 {
        let (sc, m) = scale_min_k4(j, &b[4..16]);
        p.scales[j] = d * sc as f32;
        p.offsets[j] = -(min * m as f32);
    }
}

/// d, dmin: f16, scales: 12 bytes, qs: 128 bytes of 4-bit values (64 values per 32 bytes: low
/// nibbles, then high); value = d * sc * q - dmin * m.
fn q4_k(b: &[u8], mut p: BlockParts) {
    k4_scales(b, &mut p);
    let qs = &b[16..144];
    for chunk in 0..4 {
        let q = &qs[32 * chunk..32 * chunk + 32];
        let codes = &mut p.codes[64 * chunk..64 * chunk + 64];
        for l in 0..32 {
            codes[l] = q[l] & 0x0F;
            codes[l + 32] = q[l] >> 4;
        }
    }
}

/// Q4_K plus qh: 32 bytes holding each value's fifth bit.
fn q5_k(b: &[u8], mut p: BlockParts) {
    k4_scales(b, &mut p);
    let qh = &b[16..48];
    let qs = &b[48..176];
    for chunk in 0..4 {
        let ql = &qs[32 * chunk..32 * chunk + 32];
        let (u1, u2) = (1u8 << (2 * chunk), 2u8 << (2 * chunk));
        let codes = &mut p.codes[64 * chunk..64 * chunk + 64];
        for l in 0..32 {
            let h1 = if qh[l] & u1 != 0 { 16 } else { 0 };
            let h2 = if qh[l] & u2 != 0 { 16 } else { 0 };
            codes[l] = (ql[l] & 0x0F) + h1;
            codes[l + 32] = (ql[l] >> 4) + h2;
        }
    }
}

/// ql: 128 bytes of low 4 bits, qh: 64 bytes of high 2 bits, scales: 16 signed bytes, d: f16;
/// value = d * scale * (q - 32).
fn q6_k(b: &[u8], p: BlockParts) {
    let d = half(b, 208);
    for (run, &sc) in b[192..208].iter().enumerate() {
        p.scales[run] = d * (sc as i8 as f32);
    }
    for half_block in 0..2 {
        let ql = &b[64 * half_block..64 * half_block + 64];
        let qh = &b[128 + 32 * half_block..128 + 32 * half_block + 32];
        let codes = &mut p.codes[128 * half_block..128 * half_block + 128];
        for l in 0..32 {
            codes[l] = (ql[l] & 0x0F) | ((qh[l] & 3) << 4);
            codes[l + 32] = (ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4);
            codes[l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
            codes[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
        }
    }
}
