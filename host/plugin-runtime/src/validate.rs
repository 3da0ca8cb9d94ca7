//! Checks of a plugin's self-description, made at load before the plugin
//! can serve anything: the contract's own ([`Description::problems`], the
//! same a plugin's test runs), then what only the host knows: the version
//! is semver, no prefix overlaps the core API, every capability is granted.

use std::collections::BTreeSet;

use plateau_contract::description::{is_prefix, is_under};

use crate::config::Capability;
use crate::types::Description;

/// Checks `d` against the rules of the WIT and the operator's grants;
/// returns every problem found.
pub fn validate_description(
    d: &Description,
    grants: &BTreeSet<Capability>,
    reserved_prefixes: &[String],
) -> Result<(), Vec<String>> {
    let mut problems = d.problems();
    if semver::Version::parse(&d.version).is_err() {
        problems.push(format!(
            "version `{}` must be semver, such as 1.2.0",
            d.version
        ));
    }
    for prefix in d.prefixes.iter().filter(|p| is_prefix(p)) {
        if let Some(core) = reserved_prefixes
            .iter()
            .find(|r| is_under(prefix, r) || is_under(r, prefix))
        {
            problems.push(format!("prefix `{prefix}` overlaps the core path `{core}`"));
        }
    }
    for capability in &d.capabilities {
        if let Ok(c) = capability.parse::<Capability>()
            && !grants.contains(&c)
        {
            problems.push(format!("capability `{c}` is not granted to the plugin"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(edit: impl FnOnce(&mut Description)) -> Result<(), Vec<String>> {
        let mut d = Description::new("flags", "1.0.0")
            .prefix("/flags")
            .capability(Capability::Kv);
        edit(&mut d);
        let grants = [Capability::Kv].into_iter().collect();
        validate_description(&d, &grants, &["/orgs".to_string()])
    }

    #[test]
    fn accepts_a_valid_description() {
        assert_eq!(check(|_| {}), Ok(()));
    }

    /// The host's own checks, and one of the contract's to show they run.
    #[test]
    fn reports_each_problem() {
        type Edit = Box<dyn FnOnce(&mut Description)>;
        let cases: Vec<(Edit, &str)> = vec![
            (Box::new(|d| d.version = "1.0".into()), "version `1.0`"),
            (
                Box::new(|d| d.prefixes.push("/orgs/x".into())),
                "overlaps the core path `/orgs`",
            ),
            (Box::new(|d| d.prefixes.push("/or".into())), ""),
            (
                Box::new(|d| d.capabilities.push("http".into())),
                "`http` is not granted",
            ),
            (Box::new(|d| d.name = "Flags".into()), "name `Flags`"),
        ];
        for (edit, expected) in cases {
            let outcome = check(edit);
            if expected.is_empty() {
                assert_eq!(outcome, Ok(()));
                continue;
            }
            let problems = outcome.expect_err(expected);
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "expected a problem with {expected:?}, got {problems:?}"
            );
        }
    }
}
