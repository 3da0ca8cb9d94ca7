//! MurmurHash3 x86_32 (Austin Appleby's public-domain algorithm), the hash flagd's `fractional`
//! uses so that every flagd implementation buckets a user the same way.

const C1: u32 = 0xcc9e_2d51;
const C2: u32 = 0x1b87_3593;

/// MurmurHash3 x86_32 of `data` with `seed`, as an unsigned 32-bit value.
pub fn murmur3_x86_32(data: &[u8], seed: u32) -> u32 {
    let mut h = seed;
    let mut blocks = data.chunks_exact(4);
    for block in &mut blocks {
        let k = u32::from_le_bytes([block[0], block[1], block[2], block[3]]);
        h ^= mix(k);
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        let mut k = 0u32;
        for (i, byte) in tail.iter().enumerate() {
            k |= u32::from(*byte) << (8 * i);
        }
        h ^= mix(k);
    }
    // The length is mixed in modulo 2^32, as the reference implementation does.
    h ^= data.len() as u32;
    fmix(h)
}

fn mix(k: u32) -> u32 {
    k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2)
}

fn fmix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

#[cfg(test)]
mod tests {
    use super::murmur3_x86_32;

    #[test]
    fn matches_published_vectors() {
        let cases: &[(&[u8], u32, u32)] = &[
            (b"", 0, 0),
            (b"", 1, 0x514e_28b7),
            (b"", 0xffff_ffff, 0x81f1_6f39),
            (b"\xff\xff\xff\xff", 0, 0x7629_3b50),
            (b"\x21\x43\x65\x87", 0, 0xf55b_516b),
            (b"\x21\x43\x65", 0, 0x7e4a_8634),
            (b"\x21\x43", 0, 0xa0f7_b07a),
            (b"\x21", 0, 0x7266_1cf4),
            (b"Hello, world!", 1234, 0xfaf6_cdb3),
        ];
        for (data, seed, expected) in cases {
            assert_eq!(
                murmur3_x86_32(data, *seed),
                *expected,
                "{data:?} seed {seed}"
            );
        }
    }
}
