//! What a `/v2` path names: repository names, tags and digests, checked
//! against the grammars of the distribution spec, and the hashes behind
//! digests.

use std::fmt;

use sha2::{Digest as _, Sha256, Sha512};

use crate::error::{Error, Result};

/// A digest algorithm the registry verifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    Sha256,
    Sha512,
}

impl Algorithm {
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::Sha256 => "sha256",
            Algorithm::Sha512 => "sha512",
        }
    }

    fn hex_len(self) -> usize {
        match self {
            Algorithm::Sha256 => 64,
            Algorithm::Sha512 => 128,
        }
    }

    pub fn parse(s: &str) -> Result<Algorithm> {
        match s {
            "sha256" => Ok(Algorithm::Sha256),
            "sha512" => Ok(Algorithm::Sha512),
            other => Err(Error::Unsupported(format!(
                "digest algorithm {other} is not supported: use sha256 or sha512"
            ))),
        }
    }

    pub fn hasher(self) -> Hasher {
        match self {
            Algorithm::Sha256 => Hasher::Sha256(Sha256::new()),
            Algorithm::Sha512 => Hasher::Sha512(Sha512::new()),
        }
    }

    pub fn digest_of(self, bytes: &[u8]) -> Digest {
        let mut h = self.hasher();
        h.update(bytes);
        h.finish()
    }
}

/// A running hash, fed while content streams in.
#[derive(Clone)]
pub enum Hasher {
    Sha256(Sha256),
    Sha512(Sha512),
}

impl Hasher {
    pub fn algorithm(&self) -> Algorithm {
        match self {
            Hasher::Sha256(_) => Algorithm::Sha256,
            Hasher::Sha512(_) => Algorithm::Sha512,
        }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Sha256(h) => h.update(bytes),
            Hasher::Sha512(h) => h.update(bytes),
        }
    }

    pub fn finish(self) -> Digest {
        let (algorithm, hex) = match self {
            Hasher::Sha256(h) => (Algorithm::Sha256, hex::encode(h.finalize())),
            Hasher::Sha512(h) => (Algorithm::Sha512, hex::encode(h.finalize())),
        };
        Digest { algorithm, hex }
    }
}

/// A content digest, `sha256:<64 hex>` or `sha512:<128 hex>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Digest {
    pub algorithm: Algorithm,
    pub hex: String,
}

impl Digest {
    /// Parses a digest: malformed ones are DIGEST_INVALID, well-formed ones
    /// of another algorithm UNSUPPORTED.
    pub fn parse(s: &str) -> Result<Digest> {
        let invalid = || Error::DigestInvalid(format!("{s:?} is not a valid digest"));
        let (algorithm, hex) = s.split_once(':').ok_or_else(invalid)?;
        let algorithm_ok = !algorithm.is_empty()
            && algorithm
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"+._-".contains(&b));
        if !algorithm_ok || hex.is_empty() {
            return Err(invalid());
        }
        let algorithm = Algorithm::parse(algorithm)?;
        let hex_ok = hex.len() == algorithm.hex_len()
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !hex_ok {
            return Err(invalid());
        }
        Ok(Digest {
            algorithm,
            hex: hex.to_owned(),
        })
    }

    pub fn looks_like_digest(s: &str) -> bool {
        s.contains(':')
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.algorithm.as_str(), self.hex)
    }
}

/// Whether `name` matches the repository-name grammar of the spec.
pub fn is_valid_name(name: &str) -> bool {
    name.len() <= 255 && !name.is_empty() && name.split('/').all(is_valid_component)
}

/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`
fn is_valid_component(c: &str) -> bool {
    let b = c.as_bytes();
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if b.is_empty() || !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &c[start..i];
        let ok = sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|x| x == b'-');
        if !ok {
            return false;
        }
    }
    true
}

/// `[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`
pub fn is_valid_tag(tag: &str) -> bool {
    let b = tag.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b[1..]
            .iter()
            .all(|x| x.is_ascii_alphanumeric() || b"._-".contains(x))
}

/// A manifest reference: a tag or a digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reference {
    Tag(String),
    Digest(Digest),
}

impl Reference {
    pub fn parse(s: &str) -> Result<Reference> {
        if Digest::looks_like_digest(s) {
            return Ok(Reference::Digest(Digest::parse(s)?));
        }
        if is_valid_tag(s) {
            Ok(Reference::Tag(s.to_owned()))
        } else {
            Err(Error::ManifestInvalid(format!(
                "{s:?} is neither a tag ([a-zA-Z0-9_][a-zA-Z0-9._-]{{0,127}}) nor a digest"
            )))
        }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reference::Tag(t) => f.write_str(t),
            Reference::Digest(d) => d.fmt(f),
        }
    }
}

/// The endpoint a path below `/v2/<name>/` addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Manifest(String),
    Blob(String),
    UploadStart,
    Upload(String),
    Tags,
    Referrers(String),
}

/// Splits `<name>/<endpoint>` (the path after `/v2/`) from the right, so
/// that names may contain any of the endpoint words.
pub fn split_path(path: &str) -> Option<(&str, Endpoint)> {
    let segments: Vec<&str> = path.split('/').collect();
    let n = segments.len();
    let name_of = |k: usize| -> Option<&str> {
        (n > k).then(|| {
            let end: usize = segments[..n - k].iter().map(|s| s.len() + 1).sum::<usize>() - 1;
            &path[..end]
        })
    };
    let tail = |k: usize| &segments[n.saturating_sub(k)..];
    let endpoint = match tail(3) {
        [_, "tags", "list"] => return name_of(2).map(|name| (name, Endpoint::Tags)),
        ["blobs", "uploads", id] => {
            let endpoint = if id.is_empty() {
                Endpoint::UploadStart
            } else {
                Endpoint::Upload((*id).to_owned())
            };
            return name_of(3).map(|name| (name, endpoint));
        }
        _ => match tail(2) {
            ["manifests", r] => Endpoint::Manifest((*r).to_owned()),
            ["blobs", "uploads"] => Endpoint::UploadStart,
            ["blobs", d] => Endpoint::Blob((*d).to_owned()),
            ["referrers", d] => Endpoint::Referrers((*d).to_owned()),
            _ => return None,
        },
    };
    name_of(2).map(|name| (name, endpoint))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_grammar() {
        for ok in ["org_01m80abc/app", "a/b.c/d__e", "x-y---z/1"] {
            assert!(is_valid_name(ok), "{ok}");
        }
        for bad in ["", "A/b", "a//b", "a/-b", "a/b_", "a/b___c", "a/b._c", "/a"] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn digests_and_tags() {
        let d = format!("sha256:{}", "a".repeat(64));
        assert_eq!(Digest::parse(&d).unwrap().to_string(), d);
        assert!(matches!(
            Digest::parse("sha256:abc"),
            Err(Error::DigestInvalid(_))
        ));
        assert!(matches!(
            Digest::parse(&format!("md5:{}", "a".repeat(32))),
            Err(Error::Unsupported(_))
        ));
        assert!(
            is_valid_tag("v1.0_rc-1") && !is_valid_tag(".x") && !is_valid_tag(&"a".repeat(129))
        );
        assert_eq!(
            Algorithm::Sha256.digest_of(b"").hex,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn paths_split_from_the_right() {
        let cases = [
            (
                "o/a/manifests/latest",
                Some(("o/a", Endpoint::Manifest("latest".into()))),
            ),
            (
                "o/manifests/blobs/x",
                Some(("o/manifests", Endpoint::Blob("x".into()))),
            ),
            ("o/a/blobs/uploads/", Some(("o/a", Endpoint::UploadStart))),
            ("o/a/blobs/uploads", Some(("o/a", Endpoint::UploadStart))),
            (
                "o/a/blobs/uploads/u1",
                Some(("o/a", Endpoint::Upload("u1".into()))),
            ),
            ("o/tags/list", Some(("o", Endpoint::Tags))),
            (
                "o/a/referrers/d",
                Some(("o/a", Endpoint::Referrers("d".into()))),
            ),
            ("o/a/other", None),
            ("manifests/x", None),
        ];
        for (path, expected) in cases {
            assert_eq!(split_path(path), expected, "{path}");
        }
    }
}
