//! Inside a database: roles (never superuser), the extension allowlist,
//! the SQL console (read-only unless write) and the data API, with SQL
//! injection attempts against the console and the data API.

use plateau_testkit::{Backend, Client};
use serde_json::json;

use super::{Processes, connection, create, psql, psql_ok};
use crate::{mint, on_both_backends, start};

async fn inside(backend: Backend) {
    let server = start(backend).await;
    let _processes = Processes::of(&server);
    let c = server.client();
    let reader = Client::new(&server.url)
        .with_token(&mint(&server, json!({ "scopes": ["databases:read"] })).await);
    let d = create(&c, json!({ "name": "inside" })).await;
    let id = d["id"].as_str().unwrap().to_owned();
    let conn = connection(&c, &id).await;
    let write_uri = conn["writeUri"].as_str().unwrap().to_owned();
    let owner = conn["username"].as_str().unwrap().to_owned();
    let as_role = |user: &str, password: &str| {
        format!(
            "postgresql://{user}:{password}@{}:{}/{}",
            conn["host"].as_str().unwrap(),
            conn["writePort"],
            conn["database"].as_str().unwrap()
        )
    };
    let base = format!("/databases/{id}");

    // Roles.
    let r = c
        .post(
            &format!("{base}/roles"),
            json!({ "name": "reporting", "password": "first-password" }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let listed = c.get(&format!("{base}/roles")).await.json();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"reporting") && names.contains(&owner.as_str()),
        "{listed}"
    );
    assert!(!names.contains(&"plateau_admin"), "{listed}");
    let reporting = as_role("reporting", "first-password");
    assert_eq!(
        psql_ok(
            &reporting,
            "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
        ),
        "f"
    );
    for bad in [
        "pg_monitor",
        "x\"; DROP ROLE app; --",
        "Upper",
        "plateau_admin",
    ] {
        let r = c
            .post(
                &format!("{base}/roles"),
                json!({ "name": bad, "password": "first-password" }),
            )
            .await;
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
    }
    let r = c
        .post(
            &format!("{base}/roles"),
            json!({ "name": "reporting", "password": "again-password" }),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["code"], "role_exists");
    let r = c
        .post(&format!("{base}/roles/reporting/reset-password"), json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let fresh = r.json()["password"].as_str().unwrap().to_owned();
    assert!(
        !psql(&reporting, "SELECT 1").status.success(),
        "the old password still works"
    );
    assert_eq!(
        psql_ok(&as_role("reporting", &fresh), "SELECT current_user"),
        "reporting"
    );
    assert_eq!(c.delete(&format!("{base}/roles/{owner}")).await.status, 400);
    assert_eq!(
        reader
            .delete(&format!("{base}/roles/reporting"))
            .await
            .status,
        403
    );
    assert_eq!(
        c.delete(&format!("{base}/roles/reporting")).await.status,
        204
    );
    assert!(
        !psql(&as_role("reporting", &fresh), "SELECT 1")
            .status
            .success()
    );
    assert_eq!(
        c.delete(&format!("{base}/roles/reporting")).await.status,
        404
    );

    // Extensions: the allowlist, what this host has, a clear refusal.
    let listed = c.get(&format!("{base}/extensions")).await.json();
    assert_eq!(listed.as_array().unwrap().len(), 8, "{listed}");
    let r = c
        .post(&format!("{base}/extensions"), json!({ "name": "pg_trgm" }))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["installed"], true);
    assert_eq!(
        psql_ok(&write_uri, "SELECT similarity('plateau', 'plateaux') > 0.5"),
        "t"
    );
    let r = c
        .post(
            &format!("{base}/extensions"),
            json!({ "name": "plpython3u" }),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["code"], "extension_not_allowed");
    let vector = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "pgvector")
        .unwrap();
    if vector["available"] == false {
        let r = c
            .post(&format!("{base}/extensions"), json!({ "name": "pgvector" }))
            .await;
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!(r.json()["code"], "extension_not_installed");
        assert!(r.text().contains("pgvector"), "{}", r.text());
    }

    // The console: read-only unless write, one statement, limits.
    let q = |sql: &str, write: bool| json!({ "sql": sql, "write": write });
    let r = c
        .post(
            &format!("{base}/query"),
            q(
                "CREATE TABLE items (id int PRIMARY KEY, name text, score float8, meta jsonb)",
                false,
            ),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["code"], "read_only");
    let r = reader
        .post(
            &format!("{base}/query"),
            q("CREATE TABLE items (id int)", true),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text());
    let r = c
        .post(
            &format!("{base}/query"),
            q(
                "CREATE TABLE items (id int PRIMARY KEY, name text, score float8, meta jsonb)",
                true,
            ),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    for escape in [
        "COMMIT; CREATE TABLE escaped (x int)",
        "SELECT 1; CREATE TABLE escaped (x int)",
        "SET TRANSACTION READ WRITE",
    ] {
        let r = reader
            .post(&format!("{base}/query"), q(escape, false))
            .await;
        assert_eq!(r.status, 400, "{escape}: {}", r.text());
    }
    assert_eq!(
        psql_ok(
            &write_uri,
            "SELECT count(*) FROM pg_tables WHERE tablename = 'escaped'"
        ),
        "0"
    );
    let r = c
        .post(
            &format!("{base}/query"),
            q("SELECT pg_read_file('/etc/passwd')", true),
        )
        .await;
    assert_eq!(
        r.status,
        400,
        "the console is not a superuser: {}",
        r.text()
    );
    let r = c
        .post(
            &format!("{base}/query"),
            q(
                "SELECT g AS n, g::text AS t, g > 1 AS big FROM generate_series(1, 1500) g",
                false,
            ),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["rows"].as_array().unwrap().len(), 1000);
    assert_eq!(v["truncated"], true);
    assert_eq!(v["columns"][0]["name"], "n");
    assert_eq!(v["rows"][1], json!([2, "2", true]));
    let tables = reader.get(&format!("{base}/query")).await.json();
    assert!(
        tables
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "items"),
        "{tables}"
    );

    // The data API: values bound, identifiers from the catalog.
    let hostile = "x'); DROP TABLE items; --";
    let r = c
        .post(
            &format!("{base}/data/items"),
            json!([{ "id": 1, "name": "one", "score": 1.5, "meta": { "k": 1 } },
                   { "id": 2, "name": hostile, "score": 2.5 }]),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json().as_array().unwrap().len(), 2);
    assert_eq!(
        reader
            .post(&format!("{base}/data/items"), json!({ "id": 3 }))
            .await
            .status,
        403
    );
    let r = reader
        .get(&format!(
            "{base}/data/items?select=id,name&filter=id.gt.0&order=id.desc&limit=1"
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json(), json!([{ "id": 2, "name": hostile }]));
    let r = reader.get(&format!("{base}/data/items?id=eq.1")).await;
    assert_eq!(r.json()[0]["meta"], json!({ "k": 1 }));
    let injected = [
        "filter=name.eq.x%27%20OR%20%271%27%3D%271",
        "name=eq.x%27%20OR%20%271%27%3D%271",
        "filter=id.in.(1)%20OR%201%3D1",
    ];
    for query in injected {
        let r = reader.get(&format!("{base}/data/items?{query}")).await;
        assert!(r.status == 200 || r.status == 400, "{query}: {}", r.text());
        if r.status == 200 {
            assert_eq!(r.json(), json!([]), "{query}");
        }
    }
    for query in [
        "select=id;DROP%20TABLE%20items",
        "order=id;DROP%20TABLE%20items",
        "filter=nope.eq.1",
        "filter=id.between.1",
    ] {
        let r = reader.get(&format!("{base}/data/items?{query}")).await;
        assert_eq!(r.status, 400, "{query}: {}", r.text());
    }
    let r = reader
        .get(&format!("{base}/data/items?filter=id.eq.abc"))
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["code"], "query_failed");
    assert_eq!(
        reader.get(&format!("{base}/data/nothing")).await.status,
        404
    );
    assert_eq!(
        reader
            .get(&format!(
                "{base}/data/items%22%3B%20DROP%20TABLE%20items%3B%20--"
            ))
            .await
            .status,
        404
    );
    assert_eq!(
        reader.get(&format!("{base}/data/pg_authid")).await.status,
        404
    );
    let r = c
        .post(
            &format!("{base}/data/items"),
            json!({ "id); DROP TABLE items; --": 1 }),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(psql_ok(&write_uri, "SELECT count(*) FROM items"), "2");

    // Figures, the leader's log, ownership.
    let m = reader.get(&format!("{base}/metrics")).await;
    assert_eq!(m.status, 200, "{}", m.text());
    let m = m.json();
    assert_eq!(m["maxConnections"], 64, "{m}");
    assert!(m["sizeBytes"].as_i64().unwrap() > 0, "{m}");
    assert!(m["commits"].as_i64().unwrap() > 0, "{m}");
    let logs = reader.get(&format!("{base}/logs?lines=50")).await.json();
    assert!(
        logs["lines"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().unwrap().contains("ready to accept connections")),
        "{logs}"
    );
    let r = c
        .post(
            &format!("{base}/roles"),
            json!({ "name": "builder", "password": "builder-password" }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = c
        .post(
            &format!("{base}/query"),
            q("GRANT CREATE ON SCHEMA public TO builder", true),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    psql_ok(
        &as_role("builder", "builder-password"),
        "CREATE TABLE built (x int)",
    );
    let owner_of = || {
        psql_ok(
            &write_uri,
            "SELECT tableowner FROM pg_tables WHERE tablename = 'built'",
        )
    };
    assert_eq!(owner_of(), "builder");
    assert_eq!(
        reader
            .post(&format!("{base}/fix-ownership"), json!({}))
            .await
            .status,
        403
    );
    for _ in 0..2 {
        let r = c.post(&format!("{base}/fix-ownership"), json!({})).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["reassignedFrom"], json!(["builder"]));
        assert_eq!(owner_of(), owner);
    }

    // Each change inside the cluster is in the timeline, with no password.
    let events = c.get("/events?limit=200").await;
    assert_eq!(events.status, 200, "{}", events.text());
    for kind in [
        "database.role_created",
        "database.role_password_reset",
        "database.role_dropped",
        "database.extension_created",
    ] {
        assert!(events.text().contains(kind), "{kind}: {}", events.text());
    }
    assert!(
        !events.text().contains("first-password") && !events.text().contains(&fresh),
        "a password in the timeline: {}",
        events.text()
    );

    // Another organisation gets nothing.
    let other =
        Client::new(&server.url).with_token(&crate::create_org(&server, "other", "pro").await);
    assert_eq!(other.get(&format!("{base}/roles")).await.status, 404);
    assert_eq!(
        other
            .post(&format!("{base}/query"), q("SELECT 1", false))
            .await
            .status,
        404
    );
    assert_eq!(other.get(&format!("{base}/data/items")).await.status, 404);
}

on_both_backends!(inside);
