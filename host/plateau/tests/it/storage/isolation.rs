//! Tenant isolation, key limits, wrong secrets, presigned URLs that are
//! tampered with or expired, and the plan's storage limit.

use std::io::{Read, Write};
use std::process::Command;

use plateau_testkit::Backend;
use serde_json::json;

use super::{Key, S3, create_bucket, create_key};

crate::on_both_backends!(isolation_keys_presigned_quota);

/// Status and S3 error code of a curl request.
fn curl(args: &[&str]) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-sS", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap();
    let code = body
        .split_once("<Code>")
        .and_then(|(_, rest)| rest.split_once("</Code>"))
        .map_or(String::new(), |(c, _)| c.to_owned());
    (
        status.trim().parse().unwrap(),
        if code.is_empty() {
            body.to_owned()
        } else {
            code
        },
    )
}

const PROBE: &str = r#"
s3 = client("path")
other = os.environ.get("OTHER", "")
out = {
    "own_list": code(lambda: s3.list_objects_v2(Bucket=B)),
    "own_put": code(lambda: s3.put_object(Bucket=B, Key="probe", Body=b"p")),
    "other_list": code(lambda: s3.list_objects_v2(Bucket=other)),
    "other_get": code(lambda: s3.get_object(Bucket=other, Key="secret.txt")),
    "other_put": code(lambda: s3.put_object(Bucket=other, Key="x", Body=b"x")),
    "other_head": code(lambda: s3.head_bucket(Bucket=other)),
    "guessed": code(lambda: s3.list_objects_v2(Bucket="plt-zzzzzzzzzz-data-abcdef")),
    "buckets": [b["Name"] for b in s3.list_buckets()["Buckets"]],
}
print(json.dumps(out))
"#;

async fn isolation_keys_presigned_quota(backend: Backend) {
    let s3 = S3::start(backend).await;
    let own = s3.bucket_name().to_owned();
    let own_id = s3.bucket["id"].as_str().unwrap().to_owned();

    // Another organisation, its bucket and key.
    let other_token = crate::create_org(&s3.server, "Other", "free").await;
    let theirs = create_bucket(&s3.server, &other_token, "data").await;
    let their_name = theirs["bucket"].as_str().unwrap().to_owned();
    let their_key = create_key(&s3.server, &other_token, json!({ "name": "theirs" })).await;
    let seeded = s3.boto(&their_key, &format!(
        "s3 = client('path')\ns3.put_object(Bucket='{their_name}', Key='secret.txt', Body=b'theirs')\nprint(json.dumps('ok'))"
    ));
    assert_eq!(seeded, "ok");

    let probe = |key: &Key| {
        let script = format!("os.environ['OTHER'] = '{their_name}'\n{PROBE}");
        s3.boto(key, &script)
    };
    let out = probe(&s3.key);
    assert_eq!(out["own_list"], "OK");
    assert_eq!(out["own_put"], "OK");
    for op in ["other_list", "other_get", "other_put"] {
        assert_eq!(out[op], "AccessDenied", "{op}");
    }
    assert_eq!(out["other_head"], "403");
    assert_eq!(out["guessed"], "AccessDenied");
    assert_eq!(out["buckets"], json!([own]));

    // The API hides another organisation's bucket.
    let c = s3.server.client();
    let r = c
        .get(&format!(
            "/storage/buckets/{}",
            theirs["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(r.status, 404);

    // A read-only key limited to another bucket of ours.
    let second = create_bucket(&s3.server, &s3.server.token, "second").await;
    let limited = create_key(
        &s3.server,
        &s3.server.token,
        json!({ "name": "ro", "readOnly": true, "buckets": [second["id"]] }),
    )
    .await;
    let out = s3.boto(&limited, &format!(
        "s3 = client('path')\nsecond = '{}'\nprint(json.dumps({{'read': code(lambda: s3.list_objects_v2(Bucket=second)), 'write': code(lambda: s3.put_object(Bucket=second, Key='k', Body=b'k')), 'elsewhere': code(lambda: s3.list_objects_v2(Bucket=B))}}))",
        second["bucket"].as_str().unwrap()
    ));
    assert_eq!(
        out,
        json!({ "read": "OK", "write": "AccessDenied", "elsewhere": "AccessDenied" })
    );

    // Wrong secret, unknown key.
    let wrong = Key {
        secret: "x".repeat(40),
        ..s3.key.clone()
    };
    let out = s3.boto(
        &wrong,
        "print(json.dumps(code(lambda: client('path').list_objects_v2(Bucket=B))))",
    );
    assert_eq!(out, "SignatureDoesNotMatch");
    let unknown = Key {
        access_key_id: "PLTKAAAAAAAAAAAAAAAA".to_owned(),
        ..s3.key.clone()
    };
    let out = s3.boto(
        &unknown,
        "print(json.dumps(code(lambda: client('path').list_objects_v2(Bucket=B))))",
    );
    assert_eq!(out, "InvalidAccessKeyId");
    // A client clock 20 minutes behind: over the 15 minutes S3 allows.
    let out = s3.boto(
        &s3.key,
        "import botocore.auth, datetime\n\
         _now = botocore.auth.get_current_datetime\n\
         botocore.auth.get_current_datetime = lambda: _now() - datetime.timedelta(minutes=20)\n\
         print(json.dumps(code(lambda: client('path').list_objects_v2(Bucket=B))))",
    );
    assert_eq!(out, "RequestTimeTooSkewed");
    // No signature at all.
    let (status, code) = curl(&[&format!("{}/{own}/probe", s3.direct)]);
    assert_eq!((status, code.as_str()), (403, "AccessDenied"));

    // Presigned URLs: good, tampered, expired.
    let presign = |key: &str, expires: u64| json!({ "key": key, "expiresInSeconds": expires, "accessKeyId": s3.key.access_key_id });
    let url = c
        .post(
            &format!("/storage/buckets/{own_id}/presign"),
            presign("probe", 300),
        )
        .await
        .json()["url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(curl(&[&url]), (200, "p".to_owned()));
    let tampered = url.replace("/probe?", "/other?");
    assert_eq!(curl(&[&tampered]).1, "SignatureDoesNotMatch");
    let longer = url.replace("X-Amz-Expires=300", "X-Amz-Expires=600");
    assert_eq!(curl(&[&longer]).1, "SignatureDoesNotMatch");
    let short = c
        .post(
            &format!("/storage/buckets/{own_id}/presign"),
            presign("probe", 1),
        )
        .await
        .json()["url"]
        .as_str()
        .unwrap()
        .to_owned();
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let (status, code) = curl(&[&short]);
    assert_eq!((status, code.as_str()), (403, "AccessDenied"));

    // The plan's limit (free: 1 GB): a PUT declaring more is refused
    // before its body is read, and nothing appears.
    let put = c
        .post(
            &format!("/storage/buckets/{own_id}/presign"),
            json!({ "key": "huge.bin", "method": "PUT", "accessKeyId": s3.key.access_key_id }),
        )
        .await
        .json()["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, body) = raw_put(&put, 1_500_000_000);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("<Code>QuotaExceeded</Code>"), "{body}");
    let out = s3.boto(
        &s3.key,
        "print(json.dumps(code(lambda: client('path').head_object(Bucket=B, Key='huge.bin'))))",
    );
    assert_eq!(out, "404");
    // Over S3's 5 GiB for one PUT: EntityTooLarge, whatever the plan.
    let put = c
        .post(
            &format!("/storage/buckets/{own_id}/presign"),
            json!({ "key": "huger.bin", "method": "PUT", "accessKeyId": s3.key.access_key_id }),
        )
        .await
        .json()["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, body) = raw_put(&put, 6 * 1024 * 1024 * 1024);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("<Code>EntityTooLarge</Code>"), "{body}");
}

/// Sends a PUT head declaring `length` bytes and a few of them; returns
/// the status and body of the answer.
fn raw_put(url: &str, length: u64) -> (u16, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_once('/').unwrap();
    let port = authority.rsplit(':').next().unwrap();
    let mut stream = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    write!(
        stream,
        "PUT /{path} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: {length}\r\n\r\nsome bytes"
    )
    .unwrap();
    stream.flush().unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
        if answer.windows(8).any(|w| w == b"</Error>") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}
