//! `GET /changelog` (spec sections 4.3 and 9): public, newest first, from
//! the repository's `CHANGELOG.md`, which every API change updates.

use std::sync::OnceLock;

use axum::Json;
use axum::extract::State;
use plateau_core::time;
use plateau_store::query::Listed;
use serde::Serialize;
use utoipa::ToSchema;

use super::{Pairs, page_and_filters, param};
use crate::error::ApiError;
use crate::pagination::{Page, Pager};
use crate::state::AppState;

const SOURCE: &str = include_str!("../../../../CHANGELOG.md");

#[derive(Clone, Debug, Serialize, ToSchema, PartialEq, Eq)]
pub struct Entry {
    /// `YYYY-MM-DD`.
    pub date: String,
    pub changes: Vec<String>,
}

/// Entries parsed from the changelog: `## YYYY-MM-DD` headings, each
/// followed by `- ` bullets (continuation lines are indented).
pub fn parse(source: &str) -> Result<Vec<Entry>, String> {
    let mut entries: Vec<Entry> = Vec::new();
    for (n, line) in source.lines().enumerate() {
        if let Some(date) = line.strip_prefix("## ") {
            let date = date.trim();
            if time::parse_date(date).is_none() {
                return Err(format!("line {}: {date:?} is not a YYYY-MM-DD date", n + 1));
            }
            entries.push(Entry {
                date: date.to_owned(),
                changes: Vec::new(),
            });
        } else if let Some(item) = line.strip_prefix("- ") {
            let entry = entries
                .last_mut()
                .ok_or_else(|| format!("line {}: a change before the first date", n + 1))?;
            entry.changes.push(item.trim().to_owned());
        } else if line.starts_with("  ")
            && !line.trim().is_empty()
            && let Some(change) = entries.last_mut().and_then(|e| e.changes.last_mut())
        {
            change.push(' ');
            change.push_str(line.trim());
        }
    }
    entries.sort_by(|a, b| b.date.cmp(&a.date));
    Ok(entries)
}

fn entries() -> &'static [Entry] {
    static ENTRIES: OnceLock<Vec<Entry>> = OnceLock::new();
    ENTRIES.get_or_init(|| parse(SOURCE).expect("CHANGELOG.md is checked by a unit test"))
}

/// Recent API changes, newest first; `since` keeps only entries after a date.
#[utoipa::path(get, path = "/changelog", tag = "changelog",
    security(()),
    params(("since" = Option<String>, Query, format = Date, description = "YYYY-MM-DD: only entries after this date"),
           ("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "changelog entries", body = Page<Entry>)))]
pub async fn list(
    State(app): State<AppState>,
    pairs: Pairs,
) -> Result<Json<Page<Entry>>, ApiError> {
    let since = match param(&pairs, "since") {
        Some(raw) => {
            time::parse_date(raw).ok_or_else(|| {
                ApiError::invalid("since", "must be a date in the form YYYY-MM-DD")
            })?;
            Some(raw.to_owned())
        }
        None => None,
    };
    let (page, filters) = page_and_filters(&pairs);
    let pager = Pager::new(app.cursors(), &page, "changelog", "", filters)?;
    let matching: Vec<&Entry> = entries()
        .iter()
        .filter(|e| since.as_ref().is_none_or(|s| e.date.as_str() > s.as_str()))
        .collect();
    let keyset = pager.keyset();
    let rows: Vec<Entry> = matching
        .iter()
        .filter(|e| {
            keyset
                .after
                .as_ref()
                .is_none_or(|after| e.date.as_str() < after.as_str())
        })
        .take(keyset.limit.map_or(usize::MAX, |l| l as usize + 1))
        .map(|e| (*e).clone())
        .collect();
    let listed = Listed {
        rows,
        total: matching.len() as i64,
    };
    Ok(Json(pager.finish(listed, |e| e.date.clone(), |e| e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_changelog_parses() {
        let entries = parse(SOURCE).unwrap();
        assert!(!entries.is_empty());
        assert!(
            entries.iter().all(|e| !e.changes.is_empty()),
            "every date lists changes"
        );
    }

    #[test]
    fn parses_dates_bullets_and_continuations() {
        let source = "# Title\n\n## 2026-01-02\n\n- one\n  more\n- two\n\n## 2026-03-04\n- three\n";
        let entries = parse(source).unwrap();
        assert_eq!(entries[0].date, "2026-03-04");
        assert_eq!(entries[1].changes, vec!["one more", "two"]);
        assert!(parse("## 2026-13-01\n- x\n").is_err());
        assert!(parse("- orphan\n").is_err());
    }
}
