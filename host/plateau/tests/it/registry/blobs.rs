//! The distribution API's blobs spoken directly: the version check,
//! monolithic uploads (POST then PUT, single POST, sha512), ranges,
//! cross-repository mounts, cancelled uploads, and a chunked upload that is
//! interrupted and then resumed.

use plateau_testkit::Backend;
use reqwest::Method;

use super::{Reg, code_of, sha256};

crate::on_both_backends!(
    version_check_and_blob_round_trip,
    chunked_upload_interrupted_and_resumed,
);

async fn version_check_and_blob_round_trip(backend: Backend) {
    let reg = Reg::start(backend).await;
    let token = reg.token(&["registry:write"]).await;
    let r = reg
        .req(Method::GET, "/v2/", Some(&token))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["docker-distribution-api-version"],
        "registry/2.0"
    );
    let repo = reg.repo("blobs");
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    // POST then PUT.
    let r = reg
        .req(
            Method::POST,
            &format!("/v2/{repo}/blobs/uploads/"),
            Some(&token),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    let digest = sha256(&data);
    let r = reg
        .req(
            Method::PUT,
            &format!("{location}?digest={digest}"),
            Some(&token),
        )
        .body(data.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(r.headers()["docker-content-digest"], digest.as_str());
    let blob_url = format!("/v2/{repo}/blobs/{digest}");
    let r = reg
        .req(Method::HEAD, &blob_url, Some(&token))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-length"], "100000");
    let r = reg
        .req(Method::GET, &blob_url, Some(&token))
        .send()
        .await
        .unwrap();
    assert_eq!(r.bytes().await.unwrap().as_ref(), data.as_slice());
    let r = reg
        .req(Method::GET, &blob_url, Some(&token))
        .header("range", "bytes=10-19")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 206);
    assert_eq!(r.headers()["content-range"], "bytes 10-19/100000");
    assert_eq!(r.bytes().await.unwrap().as_ref(), &data[10..20]);
    let r = reg
        .req(Method::GET, &blob_url, Some(&token))
        .header("range", "bytes=200000-")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 416);
    // sha512 works too.
    let d512 = format!(
        "sha512:{}",
        hex::encode(<sha2::Sha512 as sha2::Digest>::digest(b"hello"))
    );
    let r = reg
        .req(
            Method::POST,
            &format!("/v2/{repo}/blobs/uploads/?digest={d512}"),
            Some(&token),
        )
        .body("hello")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let r = reg
        .req(
            Method::GET,
            &format!("/v2/{repo}/blobs/{d512}"),
            Some(&token),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.text().await.unwrap(), "hello");
    // Cross-repository mount within the organisation.
    let other = reg.repo("mounted");
    let r = reg
        .req(
            Method::POST,
            &format!("/v2/{other}/blobs/uploads/?mount={digest}&from={repo}"),
            Some(&token),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(
        r.headers()["location"],
        format!("/v2/{other}/blobs/{digest}").as_str()
    );
    assert_eq!(
        reg.req(
            Method::HEAD,
            &format!("/v2/{other}/blobs/{digest}"),
            Some(&token)
        )
        .send()
        .await
        .unwrap()
        .status(),
        200
    );
    // Mounting from an unknown repository falls back to an upload.
    let r = reg
        .req(
            Method::POST,
            &format!("/v2/{other}/blobs/uploads/?mount={digest}&from=org_01nothere/x"),
            Some(&token),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    // Cancel it.
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(
        reg.req(Method::DELETE, &location, Some(&token))
            .send()
            .await
            .unwrap()
            .status(),
        204
    );
    let r = reg
        .req(Method::GET, &location, Some(&token))
        .send()
        .await
        .unwrap();
    assert_eq!(
        (
            r.status().as_u16(),
            code_of(&r.bytes().await.unwrap()).as_str()
        ),
        (404, "BLOB_UPLOAD_UNKNOWN")
    );
}

async fn chunked_upload_interrupted_and_resumed(backend: Backend) {
    let reg = Reg::start(backend).await;
    let token = reg.token(&["registry:write"]).await;
    let repo = reg.repo("chunks");
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 256) as u8).collect();
    let digest = sha256(&data);
    let r = reg
        .req(
            Method::POST,
            &format!("/v2/{repo}/blobs/uploads/"),
            Some(&token),
        )
        .send()
        .await
        .unwrap();
    let mut location = r.headers()["location"].to_str().unwrap().to_owned();
    // First chunk.
    let r = reg
        .req(Method::PATCH, &location, Some(&token))
        .header("content-range", "0-999999")
        .body(data[..1_000_000].to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    assert_eq!(r.headers()["range"], "0-999999");
    location = r.headers()["location"].to_str().unwrap().to_owned();
    // An out-of-order chunk is refused with 416.
    let r = reg
        .req(Method::PATCH, &location, Some(&token))
        .header("content-range", "2000000-2999999")
        .body(data[2_000_000..].to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 416);
    assert_eq!(r.headers()["range"], "0-999999");
    // A chunk interrupted mid-way: the connection drops after 500 000 bytes
    // of a declared 1 000 000.
    interrupted_patch(
        &reg,
        &location,
        &token,
        &data[1_000_000..1_500_000],
        1_000_000,
    )
    .await;
    // The client asks where the upload stands and resumes from there.
    let r = reg
        .req(Method::GET, &location, Some(&token))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let range = r.headers()["range"].to_str().unwrap().to_owned();
    let end: usize = range.trim_start_matches("0-").parse().unwrap();
    assert!((999_999..1_500_000).contains(&end), "{range}");
    let resume = end + 1;
    // Not visible yet.
    let r = reg
        .req(
            Method::HEAD,
            &format!("/v2/{repo}/blobs/{digest}"),
            Some(&token),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = reg
        .req(Method::PATCH, &location, Some(&token))
        .header("content-range", format!("{resume}-{}", data.len() - 1))
        .body(data[resume..].to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202, "{}", r.text().await.unwrap());
    let r = reg
        .req(
            Method::PUT,
            &format!("{location}?digest={digest}"),
            Some(&token),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let r = reg
        .req(
            Method::GET,
            &format!("/v2/{repo}/blobs/{digest}"),
            Some(&token),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.bytes().await.unwrap().as_ref(),
        data.as_slice(),
        "byte for byte"
    );
}

/// Sends a PATCH whose body stops short of its Content-Length, then closes.
async fn interrupted_patch(reg: &Reg, location: &str, token: &str, sent: &[u8], declared: usize) {
    use base64::Engine;
    use tokio::io::AsyncWriteExt;
    let mut stream = tokio::net::TcpStream::connect(&reg.host).await.unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("plateau:{token}"));
    let head = format!(
        "PATCH {location} HTTP/1.1\r\nHost: {}\r\nAuthorization: Basic {auth}\r\nContent-Type: application/octet-stream\r\nContent-Length: {declared}\r\n\r\n",
        reg.host
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(sent).await.unwrap();
    stream.flush().await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    drop(stream);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
}
