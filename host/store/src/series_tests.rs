//! The series reader: pages that together are the whole answer, derived
//! hit ratios in their place and totals of the range (on SQLite and
//! PostgreSQL), and the index each filter is read through (SQLite).

use super::{Key, Page, Summary, points, summary};
use crate::Db;
use crate::usage::{self, Filter, Increment, Point};

async fn sqlite() -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = Db::connect(&Db::sqlite_url(dir.path()))
        .await
        .expect("sqlite");
    (dir, db)
}

fn inc(
    org: &str,
    project: &str,
    resource: &str,
    metric: &'static str,
    day: &str,
    q: f64,
) -> Increment {
    Increment {
        org_id: org.to_owned(),
        project_id: Some(project.to_owned()),
        resource_type: if resource.starts_with("app") {
            "app"
        } else {
            "cache"
        },
        resource_id: resource.to_owned(),
        metric,
        day: day.to_owned(),
        quantity: q,
    }
}

async fn postgres() -> (tempfile::TempDir, Db) {
    let url = plateau_testkit::PgCluster::get().create_database();
    let db = Db::connect(&url).await.expect("postgres");
    (tempfile::tempdir().expect("a temporary directory"), db)
}

/// Two projects' caches and apps over four days, CDN counters on two apps,
/// and another organisation's point on every day.
async fn filled() -> (tempfile::TempDir, Db) {
    fill(sqlite().await).await
}

async fn fill((dir, db): (tempfile::TempDir, Db)) -> (tempfile::TempDir, Db) {
    let mut batch = Vec::new();
    for day in ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"] {
        for (project, resource) in [
            ("prj_a", "cch_1"),
            ("prj_b", "cch_2"),
            ("prj_a", "app_1"),
            ("prj_b", "app_2"),
        ] {
            batch.push(inc("org_1", project, resource, "compute_hours", day, 1.0));
            batch.push(inc("org_1", project, resource, "disk_gb_hours", day, 2.0));
        }
        batch.push(inc("org_2", "prj_z", "cch_9", "compute_hours", day, 5.0));
    }
    batch.push(inc(
        "org_1",
        "prj_a",
        "app_1",
        "app_cdn_hits",
        "2026-11-01",
        3.0,
    ));
    batch.push(inc(
        "org_1",
        "prj_a",
        "app_1",
        "app_cdn_misses",
        "2026-11-01",
        1.0,
    ));
    batch.push(inc(
        "org_1",
        "prj_b",
        "app_2",
        "app_cdn_misses",
        "2026-11-01",
        2.0,
    ));
    batch.push(inc(
        "org_1",
        "prj_a",
        "app_1",
        "app_cdn_hits",
        "2026-11-03",
        5.0,
    ));
    usage::add(&db, &batch).await.expect("add");
    (dir, db)
}

fn range(from: &str, to: &str) -> Filter {
    Filter {
        from: from.to_owned(),
        to: to.to_owned(),
        ..Filter::default()
    }
}

fn keys(points: &[Point]) -> Vec<(String, String, String)> {
    points
        .iter()
        .map(|p| (p.day.clone(), p.resource_id.clone(), p.metric.clone()))
        .collect()
}

/// Every page of `filter` at `limit`, walked with the keyset.
async fn walk(db: &Db, filter: &Filter, limit: u32) -> Vec<Point> {
    let mut all = Vec::new();
    let mut page = Page {
        after: None,
        limit: Some(limit),
    };
    loop {
        let rows = points(db, "org_1", filter, &page).await.expect("page");
        assert!(rows.len() <= limit as usize);
        let full = rows.len() == limit as usize;
        page.after = rows.last().map(Key::of);
        all.extend(rows);
        if !full {
            return all;
        }
    }
}

#[tokio::test]
async fn hit_ratios_are_the_days_hits_over_hits_and_misses_in_sort_order() {
    for (_dir, db) in [filled().await, fill(postgres().await).await] {
        hit_ratios_in_sort_order(&db).await;
    }
}

async fn hit_ratios_in_sort_order(db: &Db) {
    let f = Filter {
        metric: Some("app_cdn_hit_ratio".to_owned()),
        ..range("2026-11-01", "2026-11-04")
    };
    let ratios: Vec<(String, String, f64)> = points(db, "org_1", &f, &Page::default())
        .await
        .expect("ratios")
        .into_iter()
        .map(|p| (p.day, p.resource_id, p.quantity))
        .collect();
    assert_eq!(
        ratios,
        [
            ("2026-11-01".to_owned(), "app_1".to_owned(), 0.75),
            ("2026-11-01".to_owned(), "app_2".to_owned(), 0.0),
            ("2026-11-03".to_owned(), "app_1".to_owned(), 1.0),
        ]
    );
    let all = points(
        db,
        "org_1",
        &range("2026-11-01", "2026-11-01"),
        &Page::default(),
    )
    .await
    .expect("the day");
    let app_1: Vec<&str> = all
        .iter()
        .filter(|p| p.resource_id == "app_1")
        .map(|p| p.metric.as_str())
        .collect();
    assert_eq!(
        app_1,
        [
            "app_cdn_hit_ratio",
            "app_cdn_hits",
            "app_cdn_misses",
            "compute_hours",
            "disk_gb_hours"
        ]
    );
    let ratio = all
        .iter()
        .find(|p| p.metric == "app_cdn_hit_ratio")
        .expect("a ratio");
    assert_eq!(
        (ratio.resource_type.as_str(), ratio.project_id.as_deref()),
        ("app", Some("prj_a"))
    );
}

#[tokio::test]
async fn pages_together_are_the_whole_answer_for_every_filter() {
    for (backend, (_dir, db)) in [
        ("sqlite", filled().await),
        ("postgres", fill(postgres().await).await),
    ] {
        pages_are_the_whole_answer(backend, &db).await;
    }
}

async fn pages_are_the_whole_answer(backend: &str, db: &Db) {
    let base = range("2026-11-02", "2026-11-04");
    let filters = [
        ("organisation", base.clone()),
        ("cdn days", range("2026-11-01", "2026-11-03")),
        (
            "metric",
            Filter {
                metric: Some("compute_hours".to_owned()),
                ..base.clone()
            },
        ),
        (
            "ratio",
            Filter {
                metric: Some("app_cdn_hit_ratio".to_owned()),
                ..range("2026-11-01", "2026-11-04")
            },
        ),
        (
            "project",
            Filter {
                project_id: Some("prj_a".to_owned()),
                ..range("2026-11-01", "2026-11-04")
            },
        ),
        (
            "resource",
            Filter {
                resource_id: Some("app_1".to_owned()),
                ..range("2026-11-01", "2026-11-04")
            },
        ),
        (
            "resource and metric",
            Filter {
                resource_id: Some("cch_2".to_owned()),
                metric: Some("disk_gb_hours".to_owned()),
                ..base.clone()
            },
        ),
    ];
    for (name, filter) in filters {
        let whole = points(db, "org_1", &filter, &Page::default())
            .await
            .expect("all");
        assert!(!whole.is_empty(), "{backend} {name}: no points");
        let mut sorted = keys(&whole);
        sorted.sort();
        assert_eq!(keys(&whole), sorted, "{backend} {name}: not in key order");
        for limit in [1, 2, 5, 200] {
            assert_eq!(
                keys(&walk(db, &filter, limit).await),
                keys(&whole),
                "{backend} {name}, pages of {limit}"
            );
        }
        let s = summary(db, "org_1", &filter).await.expect("summary");
        assert_eq!(s.points, whole.len() as i64, "{backend} {name}: total");
        for (metric, quantity) in &s.quantities {
            let sum: f64 = whole
                .iter()
                .filter(|p| &p.metric == metric)
                .map(|p| p.quantity)
                .sum();
            assert_eq!(*quantity, sum, "{backend} {name}: {metric}");
        }
    }
    let other = points(db, "org_2", &base, &Page::default())
        .await
        .expect("org_2");
    assert_eq!(other.len(), 3, "one cache's compute hours on three days");
    let cut = Filter {
        metric: Some("compute_hours".to_owned()),
        ..range("2026-11-02", "2026-11-02")
    };
    assert_eq!(
        summary(db, "org_1", &cut).await.expect("summary"),
        Summary {
            points: 4,
            quantities: vec![("compute_hours".to_owned(), 4.0)]
        }
    );
}

/// The steps of the query plan SQLite picks for the stored points of a
/// page of `filter` (the left side of the merge with the hit ratios), with
/// no statistics (ANALYZE has not run).
async fn plan(db: &Db, filter: &Filter, after: bool) -> Vec<String> {
    let page = Page {
        after: after.then(|| Key {
            day: "2026-11-02".to_owned(),
            resource_id: "cch_1".to_owned(),
            metric: "compute_hours".to_owned(),
        }),
        limit: Some(50),
    };
    let (text, binds) = super::statement("org_1", filter, &page);
    let rows: Vec<(i64, i64, i64, String)> = crate::query::bind_all(
        sqlx::query_as(&format!("EXPLAIN QUERY PLAN {text}")),
        &binds,
    )
    .fetch_all(db.pool())
    .await
    .expect("explain");
    let mut under = vec![rows.iter().find(|r| r.3 == "LEFT").map_or(0, |r| r.0)];
    let mut steps = Vec::new();
    for (id, parent, _, detail) in rows {
        if under.contains(&parent) {
            under.push(id);
            steps.push(detail);
        }
    }
    steps
}

#[tokio::test]
async fn each_filter_reads_its_own_index_in_order_without_statistics() {
    let (_dir, db) = filled().await;
    let year = range("2025-11-05", "2026-11-04");
    let cases = [
        (
            Filter {
                resource_id: Some("app_1".to_owned()),
                ..year.clone()
            },
            "usage_points_org_resource",
        ),
        (
            Filter {
                project_id: Some("prj_a".to_owned()),
                ..year.clone()
            },
            "usage_points_org_project",
        ),
        (
            Filter {
                metric: Some("compute_hours".to_owned()),
                ..year.clone()
            },
            "usage_points_org_metric",
        ),
        (year.clone(), "usage_points_org_day"),
    ];
    for (filter, index) in cases {
        for after in [false, true] {
            let steps = plan(&db, &filter, after).await;
            assert!(
                steps
                    .iter()
                    .any(|s| s.starts_with("SEARCH usage_points") && s.contains(index)),
                "{filter:?} (after: {after}) is not read through {index}: {steps:?}"
            );
            assert!(
                !steps.iter().any(|s| s.contains("TEMP B-TREE")),
                "{filter:?} (after: {after}) is sorted: {steps:?}"
            );
        }
    }
}
