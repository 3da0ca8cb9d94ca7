//! Reading the series store for `GET /metrics`: an organisation's points
//! in a range of days, with the apps' derived daily CDN hit ratio, one
//! page at a time ([`points`]) and the totals of the whole range
//! ([`summary`]).
//!
//! The answer is sorted by (day, resource, metric), which is also the
//! keyset of a page: a page continues strictly after the key of the last
//! point of the previous one. Each way of filtering has its index in that
//! order (migration 0049), so a page reads its own rows and no more. The
//! hit ratio of a day and app is hits over hits and misses, computed in
//! the query so that it sorts and pages with the stored points.

use plateau_core::prices::CDN_HIT_RATIO;

use crate::query::{Bind, bind_all};
use crate::usage::{Filter, Point};
use crate::{Db, Result};

/// Where a page starts and how long it is.
#[derive(Clone, Debug, Default)]
pub struct Page {
    /// The (day, resource, metric) of the last point already returned.
    pub after: Option<Key>,
    /// At most this many points; `None` answers every point.
    pub limit: Option<u32>,
}

/// The sort key of a point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    pub day: String,
    pub resource_id: String,
    pub metric: String,
}

impl Key {
    pub fn of(point: &Point) -> Key {
        Key {
            day: point.day.clone(),
            resource_id: point.resource_id.clone(),
            metric: point.metric.clone(),
        }
    }
}

/// What a whole range holds, over all its pages.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Points in the answer, derived hit ratios included.
    pub points: i64,
    /// The summed quantity of each stored metric.
    pub quantities: Vec<(String, f64)>,
}

/// The statement being built: its placeholders, shared by its parts.
struct Sql {
    binds: Vec<Bind>,
    /// `org_id`, `day <= to`, and the resource and project filters.
    scope: String,
    from: String,
}

impl Sql {
    fn new(org_id: &str, filter: &Filter) -> Sql {
        let mut sql = Sql {
            binds: Vec::new(),
            scope: String::new(),
            from: String::new(),
        };
        let org = sql.bind(org_id);
        let to = sql.bind(&filter.to);
        sql.from = sql.bind(&filter.from);
        sql.scope = format!("org_id = {org} AND day <= {to}");
        for (column, value) in [
            ("resource_id", &filter.resource_id),
            ("project_id", &filter.project_id),
        ] {
            if let Some(value) = value {
                let p = sql.bind(value);
                sql.scope.push_str(&format!(" AND {column} = {p}"));
            }
        }
        sql
    }

    fn bind(&mut self, value: &str) -> String {
        self.binds.push(Bind::Text(value.to_owned()));
        format!("${}", self.binds.len())
    }

    /// The stored points of `metric` (every metric when `None`) after
    /// `after`. The keyset compares only the columns the filters leave
    /// free, in the order of the index that serves them, so that the
    /// planner starts the index range at it.
    fn stored(&mut self, filter: &Filter, metric: Option<&str>, after: Option<&Key>) -> String {
        let mut sql = format!(
            "SELECT day, resource_type, resource_id, project_id, metric, quantity \
             FROM usage_points WHERE {}",
            self.scope
        );
        if let Some(metric) = metric {
            let p = self.bind(metric);
            sql.push_str(&format!(" AND metric = {p}"));
        }
        match after {
            None => sql.push_str(&format!(" AND day >= {}", self.from)),
            Some(key) => {
                let mut columns = vec!["day"];
                let mut values = vec![self.bind(&key.day)];
                if filter.resource_id.is_none() {
                    columns.push("resource_id");
                    values.push(self.bind(&key.resource_id));
                }
                if metric.is_none() {
                    columns.push("metric");
                    values.push(self.bind(&key.metric));
                }
                sql.push_str(&format!(
                    " AND ({}) > ({})",
                    columns.join(", "),
                    values.join(", ")
                ));
            }
        }
        sql
    }

    /// One hit-ratio point per day and app with CDN hits or misses, after
    /// `after`. Hits and misses are read as two ranges of the per-metric
    /// index rather than one `IN`, which the planner would answer with the
    /// organisation's every point of the range.
    fn ratios(&mut self, after: Option<&Key>) -> String {
        let (lower, having) = match after {
            None => (format!("day >= {}", self.from), String::new()),
            Some(key) => {
                let (day, resource, metric) = (
                    self.bind(&key.day),
                    self.bind(&key.resource_id),
                    self.bind(&key.metric),
                );
                (
                    format!("(day, resource_id) >= ({day}, {resource})"),
                    format!(
                        " AND (day, resource_id, CAST('{CDN_HIT_RATIO}' AS TEXT)) > ({day}, {resource}, {metric})"
                    ),
                )
            }
        };
        let side = |metric: &str, hits: &str| {
            format!(
                "SELECT day, resource_type, resource_id, project_id, quantity, {hits} AS hits \
                 FROM usage_points WHERE {} AND metric = '{metric}' AND {lower}",
                self.scope
            )
        };
        format!(
            "SELECT day, MIN(resource_type) AS resource_type, resource_id, \
             MIN(project_id) AS project_id, CAST('{CDN_HIT_RATIO}' AS TEXT) AS metric, \
             SUM(hits) / SUM(quantity) AS quantity FROM ({} UNION ALL {}) AS cdn \
             GROUP BY day, resource_id HAVING SUM(quantity) > 0{having}",
            side("app_cdn_hits", "quantity"),
            side("app_cdn_misses", "0.0"),
        )
    }
}

/// Which parts the answer to `filter` has: stored points (of one metric or
/// all), derived hit ratios.
fn parts(filter: &Filter) -> (Option<Option<&str>>, bool) {
    match filter.metric.as_deref() {
        Some(CDN_HIT_RATIO) => (None, true),
        Some(metric) => (Some(Some(metric)), false),
        None => (Some(None), true),
    }
}

/// One page of an organisation's points that match `filter`, by day,
/// resource and metric, the apps' daily CDN hit ratio among them unless
/// `filter` names another metric.
pub async fn points(db: &Db, org_id: &str, filter: &Filter, page: &Page) -> Result<Vec<Point>> {
    let (text, binds) = statement(org_id, filter, page);
    Ok(bind_all(sqlx::query_as(&text), &binds)
        .fetch_all(db.pool())
        .await?)
}

/// The statement of [`points`] and its values.
fn statement(org_id: &str, filter: &Filter, page: &Page) -> (String, Vec<Bind>) {
    let mut sql = Sql::new(org_id, filter);
    let after = page.after.as_ref();
    let (stored, ratios) = parts(filter);
    let mut arms = Vec::new();
    if let Some(metric) = stored {
        arms.push(sql.stored(filter, metric, after));
    }
    if ratios {
        arms.push(sql.ratios(after));
    }
    let mut text = arms.join(" UNION ALL ");
    text.push_str(" ORDER BY day, resource_id, metric");
    if let Some(limit) = page.limit {
        text.push_str(&format!(" LIMIT {limit}"));
    }
    (text, sql.binds)
}

/// The points and per-metric quantities of the whole range of `filter`.
pub async fn summary(db: &Db, org_id: &str, filter: &Filter) -> Result<Summary> {
    let mut summary = Summary::default();
    let (stored, ratios) = parts(filter);
    if let Some(metric) = stored {
        let mut sql = Sql::new(org_id, filter);
        let text = format!(
            "SELECT metric, COUNT(*), SUM(quantity) FROM ({}) AS p GROUP BY metric ORDER BY metric",
            sql.stored(filter, metric, None)
        );
        let rows: Vec<(String, i64, f64)> = bind_all(sqlx::query_as(&text), &sql.binds)
            .fetch_all(db.pool())
            .await?;
        for (metric, points, quantity) in rows {
            summary.points += points;
            summary.quantities.push((metric, quantity));
        }
    }
    if ratios {
        let mut sql = Sql::new(org_id, filter);
        let text = format!("SELECT COUNT(*) FROM ({}) AS r", sql.ratios(None));
        let (points,): (i64,) = bind_all(sqlx::query_as(&text), &sql.binds)
            .fetch_one(db.pool())
            .await?;
        summary.points += points;
    }
    Ok(summary)
}

#[cfg(test)]
#[path = "series_tests.rs"]
mod tests;
