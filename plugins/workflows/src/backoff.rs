//! The delay before a failed step is tried again: exponential backoff with
//! "equal jitter" (AWS Architecture Blog, "Exponential Backoff And
//! Jitter"): the ceiling doubles from [`BASE_MS`] with each failed attempt
//! up to [`MAX_MS`], and the delay is drawn uniformly from its upper half,
//! so retries of many runs spread out while none comes back at once.
//! Pure: the randomness is an argument.

/// The ceiling after the first failed attempt.
pub const BASE_MS: u64 = 1000;
/// The largest ceiling (10 minutes).
pub const MAX_MS: u64 = 600_000;

/// The ceiling of the delay after failed attempt `attempt` (1-based).
pub fn ceiling_ms(attempt: u32) -> u64 {
    let doublings = attempt.saturating_sub(1).min(30);
    BASE_MS.saturating_mul(1u64 << doublings).min(MAX_MS)
}

/// The delay after failed attempt `attempt`, from `random` (any value):
/// between half the ceiling and the ceiling, both included.
pub fn delay_ms(attempt: u32, random: u64) -> u64 {
    let ceiling = ceiling_ms(attempt);
    let half = ceiling / 2;
    half + random % (ceiling - half + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ceiling_doubles_up_to_the_cap() {
        let ceilings: Vec<u64> = (1..=6).map(ceiling_ms).collect();
        assert_eq!(ceilings, [1000, 2000, 4000, 8000, 16_000, 32_000]);
        assert_eq!(ceiling_ms(10), 512_000);
        assert_eq!(ceiling_ms(11), MAX_MS);
        assert_eq!(ceiling_ms(u32::MAX), MAX_MS);
        assert_eq!(ceiling_ms(0), BASE_MS);
    }

    #[test]
    fn the_delay_is_in_the_upper_half_of_the_ceiling() {
        for attempt in 1..=40 {
            let ceiling = ceiling_ms(attempt);
            for random in [0, 1, 7, 499, 500, 501, 12_345, u64::MAX / 3, u64::MAX] {
                let d = delay_ms(attempt, random);
                assert!(
                    (ceiling / 2..=ceiling).contains(&d),
                    "attempt {attempt}: {d} not in {}..={ceiling}",
                    ceiling / 2
                );
            }
        }
        // Both ends are reachable.
        assert_eq!(delay_ms(3, 0), 2000);
        assert_eq!(delay_ms(3, 2000), 4000);
    }

    #[test]
    fn the_jitter_spreads_retries() {
        let mut seen: Vec<u64> = (0..1000u64)
            .map(|i| delay_ms(5, i.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
            .collect();
        seen.sort_unstable();
        seen.dedup();
        assert!(seen.len() > 500, "only {} distinct delays", seen.len());
    }
}
