//! The order items are applied in: every item after the items its
//! references name (a topological order, document order among equals),
//! or the cycle that makes one impossible, named item by item.

use std::collections::{BTreeMap, BTreeSet};

use plateau_api::error::ApiError;

use crate::model::{Key, Manifest};

/// The keys of `m`, each after its dependencies; a 400 naming a cycle.
pub fn order(m: &Manifest) -> Result<Vec<Key>, ApiError> {
    let keys: Vec<Key> = m.keys().into_iter().map(|(k, _)| k).collect();
    let deps: BTreeMap<Key, BTreeSet<Key>> = keys
        .iter()
        .map(|k| (k.clone(), m.dependencies(k).into_iter().collect()))
        .collect();
    let mut done: BTreeSet<Key> = BTreeSet::new();
    let mut out = Vec::with_capacity(keys.len());
    while out.len() < keys.len() {
        let ready = keys
            .iter()
            .find(|k| !done.contains(*k) && deps[*k].iter().all(|d| done.contains(d)));
        match ready {
            Some(k) => {
                done.insert(k.clone());
                out.push(k.clone());
            }
            None => {
                let cycle = find_cycle(&keys, &deps, &done);
                let path = path_of(m, &cycle[0]);
                return Err(ApiError::invalid(
                    path,
                    format!(
                        "the references form a cycle: {}; break it by removing one reference",
                        cycle
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(" -> ")
                    ),
                ));
            }
        }
    }
    Ok(out)
}

/// A cycle among the items not `done` (each of them waits on another):
/// following first dependencies from any of them must come back to a key
/// already seen. The first key is repeated at the end.
fn find_cycle(keys: &[Key], deps: &BTreeMap<Key, BTreeSet<Key>>, done: &BTreeSet<Key>) -> Vec<Key> {
    let start = keys
        .iter()
        .find(|k| !done.contains(*k))
        .expect("a node is left when no node is ready");
    let mut walk = vec![start.clone()];
    loop {
        let last = walk.last().expect("the walk is never empty");
        let next = deps[last]
            .iter()
            .find(|d| !done.contains(*d))
            .expect("a waiting node waits on a node not done")
            .clone();
        if let Some(at) = walk.iter().position(|k| *k == next) {
            let mut cycle = walk.split_off(at);
            cycle.push(next);
            return cycle;
        }
        walk.push(next);
    }
}

/// Where item `key` is in the document: `apps[2]`.
pub fn path_of(m: &Manifest, key: &Key) -> String {
    let index = m
        .keys()
        .into_iter()
        .find(|(k, _)| k == key)
        .map_or(0, |(_, i)| i);
    format!("{}[{index}]", key.kind.section())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn manifest(apps: serde_json::Value) -> Manifest {
        crate::parse::parse(&json!({
            "project": "p",
            "databases": [{ "name": "main" }],
            "redis": [{ "name": "cache" }],
            "apps": apps,
        }))
        .unwrap()
    }

    fn names(keys: &[Key]) -> Vec<String> {
        keys.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn items_come_after_what_they_reference() {
        let m = manifest(json!([
            { "name": "web", "image": "r/web:1", "env": { "API": "${{ apps.api.url }}" } },
            { "name": "api", "image": "r/api:1", "env": {
                "DB": "${{ databases.main.uri }}", "R": "${{ redis.cache.uri }}" } },
        ]));
        assert_eq!(
            names(&order(&m).unwrap()),
            ["databases.main", "redis.cache", "apps.api", "apps.web"]
        );
    }

    #[test]
    fn a_cycle_is_named() {
        let m = manifest(json!([
            { "name": "a", "image": "r/a:1", "env": { "B": "${{ apps.b.url }}" } },
            { "name": "b", "image": "r/b:1", "env": { "C": "${{ apps.c.id }}" } },
            { "name": "c", "image": "r/c:1", "env": { "A": "${{ apps.a.url }}" } },
        ]));
        let problem = order(&m).unwrap_err().problem();
        assert_eq!(problem.errors[0].field, "apps[0]");
        assert!(
            problem.errors[0]
                .message
                .contains("apps.a -> apps.b -> apps.c -> apps.a"),
            "{}",
            problem.errors[0].message
        );
    }
}
