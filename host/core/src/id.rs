//! Resource ids: a short type prefix and a ULID, so that ids sort by creation
//! time and keyset pagination can order by id alone. The format is the
//! platform's one id scheme, [`plateau_contract::id`]; this module adds a
//! generator that is monotonic within the process.

use std::sync::Mutex;

use plateau_contract::id;
use ulid::Generator;

static GENERATOR: Mutex<Option<Generator>> = Mutex::new(None);

/// A new id such as `prj_01jf3k8x2y9z7w6v5t4s3r2q1p`.
///
/// The ULID part is lowercase Crockford base32; within one process ids are
/// strictly increasing even within one millisecond.
pub fn new_id(prefix: &str) -> String {
    let mut guard = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let generator = guard.get_or_insert_with(Generator::new);
    let ulid = generator.generate().unwrap_or_else(|_| ulid::Ulid::new());
    id::format(prefix, ulid.0)
}

/// The smallest id with `prefix` created at `millis` (since the Unix
/// epoch): every id made earlier sorts before it.
pub fn time_boundary(prefix: &str, millis: u64) -> String {
    id::time_boundary(prefix, millis)
}

/// Whether `id` has the given prefix and a well-formed ULID part. Used to
/// answer 404 early for ids that cannot exist.
pub fn is_well_formed(id: &str, prefix: &str) -> bool {
    id::is_id(id, prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_increase_and_carry_their_prefix() {
        let a = new_id("prj");
        let b = new_id("prj");
        assert!(a < b, "{a} should sort before {b}");
        assert_eq!(a, a.to_ascii_lowercase());
        assert!(is_well_formed(&a, "prj"));
        assert!(!is_well_formed(&a, "tok"));
        assert!(!is_well_formed("prj_short", "prj"));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        assert!(time_boundary("prj", now - 1000) < a);
        assert!(a < time_boundary("prj", now + 1000));
    }
}
