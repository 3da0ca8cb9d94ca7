//! The supervisor over a real store (SQLite) and a provider that does as
//! each test says: a stuck resource delays no other, a failed apply is
//! `failed` with its reason, a change asked for during an apply is applied
//! next, a deleted resource's row goes once its provider removed it, and
//! every change of status has its event.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use plateau_kernel::{Failure, ResourceLocks, Resources, Status, Supervisor};
use plateau_store::Db;
use plateau_store::caches::{self, Cache};
use plateau_store::events::{Actor, NewEvent};
use plateau_store::managed::{self, State, Table};
use plateau_store::orgs::{self, Organization};

/// What the fake provider does on `apply` of each resource.
#[derive(Clone, Copy)]
enum Plan {
    Place,
    Stuck,
    Fail,
    /// Asks for another change while it applies (a PATCH meanwhile).
    Bumped,
}

struct Fake {
    db: Db,
    locks: ResourceLocks,
    plans: HashMap<String, Plan>,
    applied: Mutex<Vec<String>>,
    deleted: Mutex<Vec<String>>,
}

#[async_trait]
impl Resources for Fake {
    fn kind(&self) -> &'static str {
        "cache"
    }

    fn table(&self) -> Table {
        Table::Caches
    }

    fn db(&self) -> &Db {
        &self.db
    }

    fn locks(&self) -> &ResourceLocks {
        &self.locks
    }

    fn host_id(&self) -> &str {
        "hst_test"
    }

    fn every(&self, _state: &State) -> Duration {
        Duration::from_millis(50)
    }

    async fn apply(&self, state: &State) -> Result<String, Failure> {
        self.applied.lock().unwrap().push(state.id.clone());
        match self.plans[&state.id] {
            Plan::Place => Ok(format!("{{\"placed\":{}}}", state.generation)),
            Plan::Stuck => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok("{}".to_owned())
            }
            Plan::Fail => Err("no port free for node1".into()),
            Plan::Bumped => {
                if state.generation == 1 {
                    let mut tx = self.db.begin().await.unwrap();
                    let status = Status::Updating.as_str();
                    managed::request(&mut tx, Table::Caches, "org_1", &state.id, status, 2)
                        .await
                        .unwrap();
                    tx.commit().await.unwrap();
                }
                Ok(format!("{{\"placed\":{}}}", state.generation))
            }
        }
    }

    async fn observe(&self, _state: &State) -> Result<bool, Failure> {
        Ok(true)
    }

    async fn delete(&self, state: &State) -> Result<(), Failure> {
        self.deleted.lock().unwrap().push(state.id.clone());
        Ok(())
    }
}

fn cache(id: &str, status: Status) -> Cache {
    Cache {
        id: id.to_owned(),
        org_id: "org_1".to_owned(),
        name: id.to_owned(),
        status: status.as_str().to_owned(),
        status_detail: None,
        generation: 1,
        memory_mb: 64,
        eviction_policy: "noeviction".to_owned(),
        replicas: 0,
        persistence: "none".to_owned(),
        tls: 1,
        host_id: "hst_test".to_owned(),
        placement: String::new(),
        password_sealed: String::new(),
        admin_password_sealed: String::new(),
        password_rotated_at: 0,
        source_snapshot_id: None,
        created_at: 0,
        updated_at: 0,
    }
}

async fn status_of(db: &Db, id: &str) -> Option<State> {
    managed::state(db, Table::Caches, id).await.unwrap()
}

/// Polls until `done` holds for resource `id`'s state.
async fn until(db: &Db, id: &str, done: impl Fn(Option<&State>) -> bool) -> Option<State> {
    let start = Instant::now();
    loop {
        let state = status_of(db, id).await;
        if done(state.as_ref()) {
            return state;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{id}: {state:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_resource_converges_on_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::connect(&Db::sqlite_url(dir.path())).await.unwrap();
    let mut tx = db.begin().await.unwrap();
    let org = Organization {
        id: "org_1".to_owned(),
        name: "one".to_owned(),
        plan: "free".to_owned(),
        created_at: 0,
    };
    orgs::insert_org(&mut tx, &org).await.unwrap();
    let plans = [
        ("cch_stuck", Plan::Stuck, Status::Creating),
        ("cch_fine", Plan::Place, Status::Creating),
        ("cch_broken", Plan::Fail, Status::Creating),
        ("cch_bumped", Plan::Bumped, Status::Creating),
        ("cch_gone", Plan::Place, Status::Deleting),
    ];
    for (id, _, status) in plans {
        let event = NewEvent::audited(
            "org_1",
            "cache.created",
            "resources",
            "create",
            &Actor::system(),
        );
        caches::insert(&mut tx, &cache(id, status), &event, 0)
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    let fake = std::sync::Arc::new(Fake {
        db: db.clone(),
        locks: ResourceLocks::new(dir.path().join("locks")).unwrap(),
        plans: plans
            .iter()
            .map(|(id, plan, _)| (id.to_string(), *plan))
            .collect(),
        applied: Mutex::new(Vec::new()),
        deleted: Mutex::new(Vec::new()),
    });
    let supervisor = Supervisor::new(Duration::from_millis(20))
        .with(fake.clone())
        .spawn();

    // The stuck one's apply never ends; the others converge meanwhile.
    let fine = until(&db, "cch_fine", |s| {
        s.is_some_and(|s| s.status == "running")
    })
    .await;
    assert_eq!(fine.unwrap().placement, "{\"placed\":1}");
    let broken = until(&db, "cch_broken", |s| {
        s.is_some_and(|s| s.status == "failed")
    })
    .await;
    assert_eq!(
        broken.unwrap().status_detail.as_deref(),
        Some("no port free for node1")
    );
    // A change asked for during an apply is applied next.
    let bumped = until(&db, "cch_bumped", |s| {
        s.is_some_and(|s| s.status == "running")
    })
    .await;
    assert_eq!(bumped.unwrap().placement, "{\"placed\":2}");
    until(&db, "cch_gone", |s| s.is_none()).await;
    assert_eq!(*fake.deleted.lock().unwrap(), ["cch_gone"]);
    let stuck = status_of(&db, "cch_stuck").await.unwrap();
    assert_eq!(stuck.status, "creating");
    // A failed one is not tried again until the user asks.
    let tries = |id: &str| {
        fake.applied
            .lock()
            .unwrap()
            .iter()
            .filter(|a| *a == id)
            .count()
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(tries("cch_broken"), 1);
    assert_eq!(
        tries("cch_stuck"),
        1,
        "a busy resource is not started twice"
    );
    supervisor.abort();

    let kinds: Vec<(String, String)> = sqlx::query_as(
        "SELECT type, COALESCE(resource_id, '') FROM events WHERE type <> 'cache.created' ORDER BY type, resource_id",
    )
    .fetch_all(db.pool())
    .await
    .unwrap();
    let kinds: Vec<(&str, &str)> = kinds
        .iter()
        .map(|(k, r)| (k.as_str(), r.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("cache.failed", "cch_broken"),
            ("cache.removed", "cch_gone"),
            ("cache.running", "cch_bumped"),
            ("cache.running", "cch_fine"),
        ]
    );
}
