//! Uploaded sources: a tar.gz archive made here (a `Dockerfile` and
//! Debian's busybox-static) is PUT to the presigned URL of
//! `POST /apps/{id}/source-upload`, built with buildah, deployed and
//! fetched through the edge. The URL's signature is its only credential;
//! an upload takes one archive, within the size limit, and is built once;
//! another organisation cannot see or deploy it. The app's `port` is the
//! `$PORT` its container listens on. Needs root, buildah and runc.

use plateau_testkit::{Backend, Client, ServerOptions};
use serde_json::{Value, json};

use super::builds::{BUSYBOX, dockerfile, finished};
use super::{Apps, Edge, id, slug};
use crate::on_both_backends;

on_both_backends!(
    uploaded_dockerfile_builds,
    uploads_nobody_builds_are_removed
);

/// A gzip-compressed tar of `files` (name, content, mode).
pub(super) fn archive(files: &[(&str, Vec<u8>, u32)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    for (name, data, mode) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(*mode);
        header.set_cksum();
        tar.append_data(&mut header, name, data.as_slice()).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

/// A site built by a Dockerfile whose RUN step is `run`.
pub(super) fn site(run: &str) -> Vec<u8> {
    let busybox = std::fs::read(BUSYBOX)
        .unwrap_or_else(|e| panic!("{BUSYBOX}: {e}; install the busybox-static package"));
    archive(&[
        ("Dockerfile", dockerfile(run).into_bytes(), 0o644),
        ("busybox", busybox, 0o755),
    ])
}

/// A site that says which `$PORT` it serves on.
fn site_on_port() -> Vec<u8> {
    let busybox = std::fs::read(BUSYBOX)
        .unwrap_or_else(|e| panic!("{BUSYBOX}: {e}; install the busybox-static package"));
    let dockerfile = "FROM scratch\n\
        COPY busybox /bin/busybox\n\
        RUN [\"/bin/busybox\", \"sh\", \"-c\", \"/bin/busybox ln -s busybox /bin/sh\"]\n\
        CMD [\"/bin/sh\", \"-c\", \"mkdir -p /tmp/www && echo uploaded on $PORT > /tmp/www/index.html && exec httpd -f -v -p $PORT -h /tmp/www\"]\n";
    archive(&[
        ("Dockerfile", dockerfile.as_bytes().to_vec(), 0o644),
        ("busybox", busybox, 0o755),
    ])
}

/// A new upload ticket of `app`.
pub(super) async fn ticket(c: &Client, app: &str) -> Value {
    let r = c
        .post(&format!("/apps/{app}/source-upload"), json!({}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

/// PUTs `body` to `url` without a token: the status and the JSON body.
pub(super) async fn put(url: &str, body: Vec<u8>) -> (u16, Value) {
    let r = reqwest::Client::new()
        .put(url)
        .header("content-type", "application/gzip")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// `POST /apps/{app}/deployments` building the upload of ticket `t`.
pub(super) async fn deploy_upload(c: &Client, app: &str, t: &Value) -> plateau_testkit::Response {
    c.post(
        &format!("/apps/{app}/deployments"),
        json!({ "uploadId": t["uploadId"] }),
    )
    .await
}

/// Uploads `body` to a new ticket of `app` and deploys it; the settled
/// deployment.
pub(super) async fn upload_and_deploy(env: &Apps, app: &str, body: Vec<u8>) -> Value {
    let c = env.client();
    let t = ticket(&c, app).await;
    let (status, stored) = put(t["url"].as_str().unwrap(), body).await;
    assert_eq!(status, 200, "{stored}");
    let r = deploy_upload(&c, app, &t).await;
    assert_eq!(r.status, 201, "{}", r.text());
    finished(env, app, &id(&r.json())).await
}

async fn uploaded_dockerfile_builds(backend: Backend) {
    let env = Apps::start_with(
        ServerOptions::new(backend)
            .env("PLATEAU_APPS_UPLOAD_MAX_MB", "8")
            .env("PLATEAU_APPS_CARGO_BUILDS", "false"),
    )
    .await;
    let c = env.client();
    let r = c
        .post(
            "/apps",
            json!({ "name": "Uploaded", "sourceType": "upload", "port": 9090 }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let app = r.json();
    assert_eq!(app["status"], "created", "{app}");
    let app_id = id(&app);

    let t = ticket(&c, &app_id).await;
    let url = t["url"].as_str().unwrap().to_owned();
    assert_eq!(t["method"], "PUT");
    assert_eq!(t["maxBytes"], 8 << 20);
    assert!(
        url.contains(&format!("/apps/{app_id}/source-upload/")),
        "{url}"
    );

    // Deploying before the archive is there is refused.
    let r = deploy_upload(&c, &app_id, &t).await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.json()["code"], "upload_not_stored");

    // The signature is the credential: a changed expiry, signature or
    // upload id is refused, in the one error shape.
    let site = site_on_port();
    let later = url.replace("expires=", "expires=9");
    let other = url.replace("signature=", "signature=00");
    let t2 = ticket(&c, &app_id).await;
    let swapped = url.replace(
        t["uploadId"].as_str().unwrap(),
        t2["uploadId"].as_str().unwrap(),
    );
    for bad in [later, other, swapped] {
        let (status, problem) = put(&bad, site.clone()).await;
        assert_eq!(status, 403, "{bad}: {problem}");
        assert_eq!(problem["code"], "invalid_upload_signature", "{problem}");
        assert_eq!(problem["status"], 403, "{problem}");
    }
    // Not a tar.gz; larger than the limit.
    let (status, problem) = put(&url, b"plain text".to_vec()).await;
    assert_eq!(status, 400, "{problem}");
    assert_eq!(problem["code"], "invalid_archive", "{problem}");
    let mut big = vec![0x1f, 0x8b];
    big.extend((0..9u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    // curl, as the server answers 413 before the body is sent: a client
    // that writes on gets a broken pipe instead of the answer.
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &big).unwrap();
    let out = tokio::process::Command::new("curl")
        .args(["-sS", "-X", "PUT", "-w", "\n%{http_code}", "--data-binary"])
        .arg(format!("@{}", file.path().display()))
        .arg(&url)
        .output()
        .await
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.trim_end().ends_with("413"), "{text}");

    // The archive, once.
    let (status, stored) = put(&url, site.clone()).await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(stored["uploadId"], t["uploadId"]);
    assert_eq!(stored["bytes"], site.len());
    let (status, problem) = put(&url, site.clone()).await;
    assert_eq!(status, 409, "{problem}");
    assert_eq!(problem["code"], "upload_already_stored", "{problem}");

    // Another organisation sees neither the app nor the upload.
    let theirs = crate::create_org(&env.server, "apps-other", "pro").await;
    let them = Client::new(&env.server.url).with_token(&theirs);
    let r = them
        .post(&format!("/apps/{app_id}/source-upload"), json!({}))
        .await;
    assert_eq!(r.status, 404, "{}", r.text());
    let r = them
        .post("/apps", json!({ "name": "Theirs", "sourceType": "upload" }))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = deploy_upload(&them, &id(&r.json()), &t).await;
    assert_eq!(r.status, 404, "{}", r.text());

    // Built, pushed to the organisation's repository, served.
    let r = deploy_upload(&c, &app_id, &t).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let d = finished(&env, &app_id, &id(&r.json())).await;
    assert_eq!(d["status"], "live", "{d}");
    assert_eq!(d["sourceType"], "upload");
    assert_eq!(d["uploadId"], t["uploadId"]);
    let image = d["image"].as_str().unwrap();
    assert!(
        image.contains(&format!("/{}/", env.org)) && image.contains("@sha256:"),
        "{image}"
    );
    assert!(d["buildLog"].as_str().unwrap().contains("STEP"), "{d}");
    Edge::new(&env.server, &slug(&app))
        .until_body("uploaded on 9090\n")
        .await;

    // An upload is built once; the app needs a new one to deploy.
    let r = deploy_upload(&c, &app_id, &t).await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.json()["code"], "upload_used");
    let r = c
        .post(&format!("/apps/{app_id}/deployments"), json!({}))
        .await;
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(r.json()["code"], "upload_required");

    // A Rust crate is not built where the operator turned crate builds off.
    let refused = upload_and_deploy(&env, &app_id, super::crates::krate()).await;
    assert_eq!(refused["status"], "failed", "{refused}");
    assert!(
        refused["reason"]
            .as_str()
            .unwrap()
            .contains("PLATEAU_APPS_CARGO_BUILDS"),
        "{refused}"
    );
    Edge::new(&env.server, &slug(&app))
        .until_body("uploaded on 9090\n")
        .await;

    // Nothing half-written is left, and the built archive is gone.
    let uploads = env.server.data_dir.path().join("apps/uploads");
    let left: Vec<_> = std::fs::read_dir(&uploads)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A stored archive that no deployment builds within
/// `PLATEAU_APPS_UPLOAD_KEEP_SECONDS` is removed, file and upload: a
/// deployment of it then finds no upload. One deployed in time is built.
async fn uploads_nobody_builds_are_removed(backend: Backend) {
    let env =
        Apps::start_with(ServerOptions::new(backend).env("PLATEAU_APPS_UPLOAD_KEEP_SECONDS", "2"))
            .await;
    let c = env.client();
    let r = c
        .post(
            "/apps",
            json!({ "name": "Swept", "sourceType": "upload", "port": 9090 }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let app_id = id(&r.json());
    let t = ticket(&c, &app_id).await;
    let (status, stored) = put(t["url"].as_str().unwrap(), site_on_port()).await;
    assert_eq!(status, 200, "{stored}");
    let uploads = env.server.data_dir.path().join("apps/uploads");
    let archive = uploads.join(format!("{}.tar.gz", t["uploadId"].as_str().unwrap()));
    assert!(archive.exists(), "{}", archive.display());

    // Waits for the sweep (deploying now would build it).
    let gone = async {
        while archive.exists() {
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), gone)
        .await
        .expect("the archive is removed within a minute");
    let r = deploy_upload(&c, &app_id, &t).await;
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(r.json()["code"], "not_found", "{}", r.text());
}
