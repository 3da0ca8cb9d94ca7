//! `/members`: an invitation accepted with its link's secret (once, not
//! after it expires or is revoked), roles enforced on the member's next
//! real call, owners only making owners, the last owner kept, removal
//! ending the member's tokens, audit entries in `members`, tenants
//! isolated, bad input naming its field; and the CLI's `members`. One
//! server, on SQLite.

use plateau_testkit::{Backend, Client, Server};
use serde_json::{Value, json};

use crate::{create_org, event_types, start, until};

async fn invite(c: &Client, email: &str, role: &str) -> Value {
    let r = c
        .post("/members/invites", json!({ "email": email, "role": role }))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

/// Accepts with the secret at the end of the link; the new member's token.
async fn accept(s: &Server, created: &Value, name: &str) -> (String, String) {
    let link = created["link"].as_str().unwrap();
    let secret = link.rsplit('/').next().unwrap();
    assert_eq!(secret, created["secret"].as_str().unwrap());
    assert!(link.contains("/console/invite/plti_"), "{link}");
    let r = s
        .anonymous()
        .post("/members/accept", json!({ "secret": secret, "name": name }))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let m = r.json();
    (
        m["member"]["userId"].as_str().unwrap().to_owned(),
        m["member"]["token"].as_str().unwrap().to_owned(),
    )
}

fn field_of(r: &plateau_testkit::Response) -> String {
    r.json()["errors"][0]["field"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invitations_roles_and_the_last_owner() {
    let s = start(Backend::Sqlite).await;
    let owner = s.client();
    let me = owner.get("/me").await.json();
    let owner_id = me["user"]["id"].as_str().unwrap().to_owned();
    let list = owner.get("/members").await.json();
    assert_eq!(list["total"], 1);
    assert_eq!(list["items"][0]["role"], "owner");

    // Bad input names its field.
    let r = owner
        .post(
            "/members/invites",
            json!({ "email": "nope", "role": "viewer" }),
        )
        .await;
    assert_eq!(
        (r.status, field_of(&r).as_str()),
        (400, "email"),
        "{}",
        r.text()
    );
    let r = owner
        .post(
            "/members/invites",
            json!({ "email": "a@example.com", "role": "boss" }),
        )
        .await;
    assert_eq!(
        (r.status, field_of(&r).as_str()),
        (400, "role"),
        "{}",
        r.text()
    );

    // A viewer joins through the link, once.
    let created = invite(&owner, "ann@example.com", "viewer").await;
    assert_eq!(created["invite"]["status"], "pending");
    let (ann_id, ann_token) = accept(&s, &created, "Ann").await;
    let secret = created["secret"].as_str().unwrap();
    let again = s
        .anonymous()
        .post(
            "/members/accept",
            json!({ "secret": secret, "name": "Eve" }),
        )
        .await;
    assert_eq!(
        (again.status, again.code().as_str()),
        (409, "invite_closed")
    );
    let invites = owner.get("/members/invites").await.json();
    assert_eq!(invites["items"][0]["status"], "accepted");
    assert_eq!(invites["items"][0]["acceptedUserId"], ann_id.as_str());

    // The role is enforced on real calls, and a change holds at once.
    let ann = s.anonymous().with_token(&ann_token);
    assert_eq!(ann.get("/projects").await.status, 200);
    let r = ann.post("/projects", json!({ "name": "anns" })).await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "missing_scope"),
        "{}",
        r.text()
    );
    let r = owner
        .patch(&format!("/members/{ann_id}"), json!({ "role": "member" }))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["role"], "member");
    let r = ann.post("/projects", json!({ "name": "anns" })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    // A member manages no members.
    let r = ann
        .patch(&format!("/members/{owner_id}"), json!({ "role": "viewer" }))
        .await;
    assert_eq!(r.status, 403, "{}", r.text());

    // The last owner is neither demoted nor removed.
    let r = owner
        .patch(&format!("/members/{owner_id}"), json!({ "role": "admin" }))
        .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (409, "last_owner"),
        "{}",
        r.text()
    );
    let r = owner.delete(&format!("/members/{owner_id}")).await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (409, "last_owner"),
        "{}",
        r.text()
    );

    // Only owners make owners.
    owner
        .patch(&format!("/members/{ann_id}"), json!({ "role": "admin" }))
        .await;
    let r = ann
        .patch(&format!("/members/{ann_id}"), json!({ "role": "owner" }))
        .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "owner_required"),
        "{}",
        r.text()
    );
    let r = owner
        .patch(&format!("/members/{ann_id}"), json!({ "role": "owner" }))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    // With two owners, one may step down; the new owner removes them.
    let r = owner
        .patch(&format!("/members/{owner_id}"), json!({ "role": "admin" }))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = ann.delete(&format!("/members/{owner_id}")).await;
    assert_eq!(r.status, 204, "{}", r.text());
    let r = owner.get("/me").await;
    assert_eq!(
        r.status,
        401,
        "a removed member's token still works: {}",
        r.text()
    );
    let r = ann.delete(&format!("/members/{ann_id}")).await;
    assert_eq!((r.status, r.code().as_str()), (409, "last_owner"));

    // Expired and revoked invitations are refused.
    let r = ann
        .post(
            "/members/invites",
            json!({ "email": "bob@example.com", "role": "billing", "expiresInSeconds": 1 }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let late = r.json();
    until(&ann, "/members/invites", "the invitation to expire", |l| {
        l["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["email"] == "bob@example.com" && i["status"] == "expired")
    })
    .await;
    let r = s
        .anonymous()
        .post(
            "/members/accept",
            json!({ "secret": late["secret"], "name": "Bob" }),
        )
        .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (409, "invite_closed"),
        "{}",
        r.text()
    );
    let revoked = invite(&ann, "cy@example.com", "viewer").await;
    let id = revoked["invite"]["id"].as_str().unwrap();
    let r = ann.delete(&format!("/members/invites/{id}")).await;
    assert_eq!(r.json()["status"], "revoked", "{}", r.text());
    let r = s
        .anonymous()
        .post(
            "/members/accept",
            json!({ "secret": revoked["secret"], "name": "Cy" }),
        )
        .await;
    assert_eq!(r.code(), "invite_closed");
    let r = s
        .anonymous()
        .post(
            "/members/accept",
            json!({ "secret": "plti_unknown", "name": "Cy" }),
        )
        .await;
    assert_eq!((r.status, field_of(&r).as_str()), (400, "secret"));

    // Audited in `members`, without the secrets.
    let audit = ann.get("/audit?category=members").await;
    assert_eq!(audit.status, 200, "{}", audit.text());
    let audit = audit.json();
    let types = event_types(&audit);
    for t in [
        "member.invited",
        "member.invite_accepted",
        "member.role_changed",
        "member.removed",
        "member.invite_revoked",
    ] {
        assert!(types.contains(&t), "{t} missing from {types:?}");
    }
    assert!(
        !audit.to_string().contains("plti_"),
        "a secret reached the audit log"
    );

    // Another organisation sees none of this.
    let other = s
        .anonymous()
        .with_token(&create_org(&s, "Other", "free").await);
    assert_eq!(other.get("/members").await.json()["total"], 1);
    let r = other
        .patch(&format!("/members/{ann_id}"), json!({ "role": "viewer" }))
        .await;
    assert_eq!(r.status, 404, "{}", r.text());
    let r = other.delete(&format!("/members/invites/{id}")).await;
    assert_eq!(r.status, 404, "{}", r.text());

    // The CLI: invite, then accept from the printed link.
    let out = s
        .command(&[
            "members",
            "invite",
            "dee@example.com",
            "--role",
            "viewer",
            "--url",
            &s.url,
            "--token",
            &ann_token,
        ])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let link = stdout
        .lines()
        .find_map(|l| l.strip_prefix("link (shown once): "))
        .expect("the link is printed")
        .to_owned();
    let out = s
        .command(&["members", "accept", &link, "--name", "Dee", "--url", &s.url])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(stdout.contains("as viewer"), "{stdout}");
    let out = s
        .command(&[
            "members", "list", "--json", "--url", &s.url, "--token", &ann_token,
        ])
        .await;
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed["total"], 2, "{listed}");
}

/// With the relay configured, the invitation is mailed to the invitee
/// from the alert sender, and its secret never reaches the timeline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invitations_are_mailed_through_the_relay() {
    let s = crate::start_with(
        plateau_testkit::ServerOptions::new(Backend::Sqlite)
            .env("PLATEAU_EGRESS_ALLOW", "127.0.0.0/8"),
    )
    .await;
    let sink = plateau_testkit::SmtpSink::plain().await;
    let c = s.client();
    let r = c
        .put(
            "/email/config",
            json!({ "host": "127.0.0.1", "port": sink.port(), "tlsMode": "none",
                    "allowedSenders": ["*@example.org"], "alertsFrom": "Plateau <team@example.org>" }),
        )
        .await;
    assert!(matches!(r.status, 200 | 201), "{}", r.text());
    let created = invite(&c, "ann@example.com", "viewer").await;
    assert_eq!(created["emailed"], true, "{created}");
    let mail = sink.wait_for(1, std::time::Duration::from_secs(30)).await;
    assert_eq!(mail.len(), 1, "the invitation is relayed");
    assert_eq!(mail[0].from, "team@example.org");
    assert_eq!(mail[0].recipients, ["ann@example.com"]);
    let subject = mail[0].header("Subject").unwrap_or_default();
    assert!(subject.contains("invited"), "{subject}");
    let events = c.get("/events").await.text();
    assert!(
        !events.contains("plti_"),
        "an invitation secret reached the timeline"
    );
}
