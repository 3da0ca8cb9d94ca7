//! `plateau storage ...`: buckets and access keys, and `env`, which makes
//! a key and prints the `AWS_*` settings awscli, boto3 and the other S3
//! clients read, so `eval "$(plateau storage env)"` sets a shell up.

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::apps::resolve;
use super::{Api, Global, output};

#[derive(Args)]
pub struct StorageArgs {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: StorageCommand,
}

#[derive(Subcommand)]
enum StorageCommand {
    /// Buckets: list, create, delete.
    #[command(subcommand)]
    Buckets(BucketCommand),
    /// Access keys: list, create, delete.
    #[command(subcommand)]
    Keys(KeyCommand),
    /// Create an access key and print the AWS_* settings that use it.
    Env {
        /// The key's name (default: plateau-cli).
        #[arg(long, default_value = "plateau-cli")]
        name: String,
        /// A key that only reads.
        #[arg(long)]
        read_only: bool,
    },
}

#[derive(Subcommand)]
enum BucketCommand {
    List,
    Create { name: String },
    Delete { bucket: String },
}

#[derive(Subcommand)]
enum KeyCommand {
    List,
    /// Create a key; its secret is shown this once.
    Create {
        name: String,
        #[arg(long)]
        read_only: bool,
    },
    Delete {
        key: String,
    },
}

pub async fn run(args: StorageArgs) -> Result<(), String> {
    let api = Api::from(&args.global)?;
    let json = api.json;
    match args.command {
        StorageCommand::Buckets(BucketCommand::List) => {
            let list = api.get("/storage/buckets").await?;
            output::list(
                json,
                &list,
                &["name", "bucket", "id", "usage.objects", "usage.bytes"],
            );
        }
        StorageCommand::Buckets(BucketCommand::Create { name }) => {
            let bucket = api
                .post("/storage/buckets", json!({ "name": name }))
                .await?;
            output::object(json, &bucket, &["id", "name", "bucket", "endpoint"]);
        }
        StorageCommand::Buckets(BucketCommand::Delete { bucket }) => {
            let found = resolve(&api, "/storage/buckets", "bucket", &bucket).await?;
            let id = found["id"].as_str().unwrap_or_default();
            let answer = api.delete(&format!("/storage/buckets/{id}")).await?;
            output::done(json, &format!("deleted {bucket}"), &answer);
        }
        StorageCommand::Keys(KeyCommand::List) => {
            let list = api.get("/storage/keys").await?;
            output::list(json, &list, &["name", "accessKeyId", "readOnly", "id"]);
        }
        StorageCommand::Keys(KeyCommand::Create { name, read_only }) => {
            let key = api
                .post(
                    "/storage/keys",
                    json!({ "name": name, "readOnly": read_only }),
                )
                .await?;
            output::object(
                json,
                &key,
                &["id", "name", "accessKeyId", "secretAccessKey"],
            );
        }
        StorageCommand::Keys(KeyCommand::Delete { key }) => {
            let found = resolve(&api, "/storage/keys", "key", &key).await?;
            let id = found["id"].as_str().unwrap_or_default();
            let answer = api.delete(&format!("/storage/keys/{id}")).await?;
            output::done(json, &format!("deleted {key}"), &answer);
        }
        StorageCommand::Env { name, read_only } => {
            let key = api
                .post(
                    "/storage/keys",
                    json!({ "name": name, "readOnly": read_only }),
                )
                .await?;
            let endpoint = endpoint(&api).await?;
            let settings = env(&key, &endpoint);
            if json {
                println!(
                    "{}",
                    Value::Object(
                        settings
                            .iter()
                            .map(|(k, v)| ((*k).to_owned(), json!(v)))
                            .collect()
                    )
                );
            } else {
                for (k, v) in settings {
                    println!("export {k}={}", shell_quote(&v));
                }
            }
        }
    }
    Ok(())
}

/// The S3 endpoint: a bucket's `endpoint`, or the server's own address
/// on the storage port when there is no bucket yet to ask.
async fn endpoint(api: &Api) -> Result<String, String> {
    let buckets = api.get("/storage/buckets").await?;
    if let Some(endpoint) = output::items(&buckets)
        .first()
        .and_then(|b| b["endpoint"].as_str().map(str::to_owned))
    {
        return Ok(endpoint);
    }
    // Creating a bucket is not for `env` to do: ask the user for one.
    Err("create a bucket first (plateau storage buckets create NAME): the endpoint is read from one (no_bucket)".to_owned())
}

/// `*.localhost` names (`s3.localhost`, the default storage domain) go to
/// loopback in curl and browsers, but Python's resolver and most SDKs'
/// do not know them: the endpoint they are given is the address itself,
/// which the server serves in path style.
fn resolvable(endpoint: &str) -> String {
    let Ok(mut url) = reqwest::Url::parse(endpoint) else {
        return endpoint.to_owned();
    };
    let local = url
        .host_str()
        .is_some_and(|h| h == "localhost" || h.ends_with(".localhost"));
    if local && url.set_host(Some("127.0.0.1")).is_ok() {
        return url.as_str().trim_end_matches('/').to_owned();
    }
    endpoint.to_owned()
}

fn env(key: &Value, endpoint: &str) -> Vec<(&'static str, String)> {
    let text = |k: &str| key[k].as_str().unwrap_or_default().to_owned();
    vec![
        ("AWS_ACCESS_KEY_ID", text("accessKeyId")),
        ("AWS_SECRET_ACCESS_KEY", text("secretAccessKey")),
        ("AWS_ENDPOINT_URL_S3", resolvable(endpoint)),
        // Any region is accepted; clients need one to sign.
        ("AWS_REGION", "us-east-1".to_owned()),
    ]
}

fn shell_quote(v: &str) -> String {
    format!("'{}'", v.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::resolvable;

    #[test]
    fn localhost_names_become_the_loopback_address() {
        assert_eq!(
            resolvable("http://s3.localhost:8082"),
            "http://127.0.0.1:8082"
        );
        assert_eq!(
            resolvable("http://localhost:8082/"),
            "http://127.0.0.1:8082"
        );
        assert_eq!(
            resolvable("https://s3.example.com"),
            "https://s3.example.com"
        );
    }
}
