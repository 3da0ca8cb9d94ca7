//! The registry's repositories and tags as the JSON API lists them
//! (`/api/v1/registry/repositories`): sizes and times, paging, the scope,
//! and another organisation's view.

use plateau_testkit::Backend;

use super::Reg;

crate::on_both_backends!(repositories_and_tags_are_listed);

async fn repositories_and_tags_are_listed(backend: Backend) {
    let reg = Reg::start(backend).await;
    let writer = reg.token(&["registry:write"]).await;
    let web = reg.repo("team/web");
    let (manifest, digest) = reg.push_image(&writer, &web, "v1", b"web layer").await;
    let (status, _) = reg
        .put_manifest(&writer, &web, "v2", super::OCI_MANIFEST, &manifest)
        .await;
    assert_eq!(status, 201);
    reg.push_image(&writer, &reg.repo("api"), "latest", b"api layer")
        .await;

    let reader = reg
        .server
        .client()
        .with_token(&reg.token(&["registry:read"]).await);
    let r = reader.get("/registry/repositories?limit=1").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let first = r.json();
    assert_eq!(first["total"], 2, "{first}");
    assert_eq!(first["items"][0]["path"], "api", "{first}");
    let cursor = first["nextCursor"].as_str().expect("a second page");
    let r = reader
        .get(&format!("/registry/repositories?limit=1&cursor={cursor}"))
        .await;
    let second = r.json();
    let web_view = &second["items"][0];
    assert_eq!(web_view["path"], "team/web", "{second}");
    assert_eq!(web_view["name"], web.as_str());
    assert_eq!(web_view["tagCount"], 2);
    let config = br#"{"architecture":"amd64","os":"linux"}"#;
    // The config and the layer: the manifest itself is not a blob.
    assert_eq!(
        web_view["sizeBytes"],
        (config.len() + b"web layer".len()) as i64,
        "{web_view}"
    );
    assert!(web_view["pushedAt"].is_string(), "{web_view}");

    // One repository, its path's slash encoded, and its tags.
    let r = reader.get("/registry/repositories/team%2Fweb").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["tagCount"], 2);
    let r = reader.get("/registry/repositories/team%2Fweb/tags").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let tags: Vec<(String, String)> = r.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["tag"].as_str().unwrap().to_owned(),
                t["digest"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        tags,
        [("v1".to_owned(), digest.clone()), ("v2".to_owned(), digest)]
    );
    let r = reader.get("/registry/repositories/nope/tags").await;
    assert_eq!(r.status, 404, "{}", r.text());

    // The scope is needed, and another organisation sees none of it.
    let projects_only = reg
        .server
        .client()
        .with_token(&reg.token(&["projects:read"]).await);
    let r = projects_only.get("/registry/repositories").await;
    assert_eq!(r.status, 403, "{}", r.text());
    let other = reg
        .server
        .client()
        .with_token(&crate::create_org(&reg.server, "other", "free").await);
    let r = other.get("/registry/repositories").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["total"], 0, "{}", r.text());
    let r = other.get("/registry/repositories/team%2Fweb").await;
    assert_eq!(r.status, 404, "{}", r.text());
}
