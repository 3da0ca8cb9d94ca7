//! The user's command line, run as a user would: `plateau login` stores a
//! token (mode 0600) that the other commands use; apps, storage (with the
//! AWS_* settings boto3 reads), queues, completions; `--json` answers and
//! one-sentence errors with the problem's code; `--url` after the
//! subcommand. One server on the `pro` plan (apps need it), on SQLite.

use std::os::unix::fs::PermissionsExt;
use std::process::Output;

use plateau_testkit::Backend;
use serde_json::Value;

use super::apps::Apps;

/// Runs `plateau args` with `config` as the user's config directory and
/// no settings from the environment.
async fn plateau(config: &std::path::Path, args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_plateau"))
        .args(args)
        .env("XDG_CONFIG_HOME", config)
        .env_remove("PLATEAU_URL")
        .env_remove("PLATEAU_TOKEN")
        .env("RUST_BACKTRACE", "0")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("plateau runs")
}

fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "failed: {}{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn json(out: &Output) -> Value {
    serde_json::from_str(&ok(out)).expect("--json prints JSON")
}

/// The one sentence of a failed command: `error: ... (code)`.
fn error(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "it succeeded: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.starts_with("error: ") && stderr.ends_with(')'),
        "{stderr}"
    );
    stderr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_line_drives_the_platform() {
    let env = Apps::start(Backend::Sqlite).await;
    let url = env.server.url.clone();
    let home = tempfile::tempdir().unwrap();
    let config = home.path();

    // Before login, a command says what to do.
    let e = error(&plateau(config, &["apps", "list"]).await);
    assert!(e.contains("plateau login"), "{e}");
    // A wrong token is refused with the server's code.
    let e = error(
        &plateau(
            config,
            &[
                "login",
                "--url",
                &url,
                "--token",
                "plt_0000000000000000000000000000000000000000",
            ],
        )
        .await,
    );
    assert!(e.ends_with("(token_invalid)"), "{e}");

    // login stores the token for this user alone.
    let out = ok(&plateau(config, &["login", "--url", &url, "--token", &env.token]).await);
    assert!(out.contains("logged in"), "{out}");
    let file = config.join("plateau/credentials.json");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", file.display());
    assert!(std::fs::read_to_string(&file).unwrap().contains(&env.token));

    // Apps: create with an image, list, open, scale, logs.
    let app = json(
        &plateau(
            config,
            &["apps", "create", "cli-hello", "--image", &env.v1, "--json"],
        )
        .await,
    );
    assert_eq!(app["name"], "cli-hello");
    let id = app["id"].as_str().unwrap().to_owned();
    super::until(
        &env.client(),
        &format!("/apps/{id}"),
        "the app to run",
        |a| a["status"] == "running",
    )
    .await;
    let list = ok(&plateau(config, &["apps", "list"]).await);
    assert!(
        list.lines()
            .any(|l| l.starts_with("cli-hello") && l.contains("running")),
        "{list}"
    );
    let opened = json(&plateau(config, &["apps", "open", "cli-hello", "--json"]).await);
    assert_eq!(opened["url"], app["url"]);
    let logs = json(&plateau(config, &["apps", "logs", "cli-hello", "--json"]).await);
    assert!(logs["items"].is_array(), "{logs}");
    let e = error(&plateau(config, &["apps", "show", "no-such-app"]).await);
    assert!(e.ends_with("(not_found)"), "{e}");

    // Storage: a bucket, then the AWS_* settings boto3 reads as they are.
    let bucket = json(
        &plateau(
            config,
            &["storage", "buckets", "create", "cli-photos", "--json"],
        )
        .await,
    );
    let bucket_name = bucket["bucket"].as_str().unwrap().to_owned();
    let exports = ok(&plateau(config, &["storage", "env"]).await);
    let settings: Vec<(String, String)> = exports
        .lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.trim_matches('\'').to_owned()))
        .collect();
    let names: Vec<&str> = settings.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ENDPOINT_URL_S3",
            "AWS_REGION"
        ]
    );
    let listed = tokio::process::Command::new("python3")
        .args(["-c", "import boto3; print([b['Name'] for b in boto3.client('s3').list_buckets()['Buckets']])"])
        .envs(settings.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .await
        .expect("python3 runs");
    let listed_text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success() && listed_text.contains(&bucket_name),
        "boto3 with the printed settings: {listed_text}{}",
        String::from_utf8_lossy(&listed.stderr)
    );

    // Queues, with --url and --token after the subcommand.
    let flags = ["--url", url.as_str(), "--token", env.token.as_str()];
    let other = tempfile::tempdir().unwrap();
    let with_flags = |args: &[&'static str]| -> Vec<String> {
        args.iter()
            .map(|a| (*a).to_owned())
            .chain(flags.iter().map(|f| (*f).to_owned()))
            .collect()
    };
    let run = |args: Vec<String>| {
        let config = other.path().to_owned();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            plateau(&config, &args).await
        }
    };
    ok(&run(with_flags(&["queues", "create", "cli-jobs"])).await);
    ok(&run(with_flags(&[
        "queues",
        "send",
        "cli-jobs",
        "hello from the cli",
    ]))
    .await);
    let received = json(&run(with_flags(&["queues", "receive", "cli-jobs", "--json"])).await);
    assert_eq!(
        received["messages"][0]["body"], "hello from the cli",
        "{received}"
    );
    // A problem of the server's: one sentence ending in its code.
    let e = error(&run(with_flags(&["queues", "create", "not a valid name!"])).await);
    assert!(e.contains("name"), "{e}");

    // Databases and caches refuse a missing name the same way.
    let e = error(&plateau(config, &["db", "connect", "nowhere"]).await);
    assert!(e.ends_with("(not_found)"), "{e}");
    // An unreachable server is a sentence too, not a library's message.
    let e = error(&plateau(config, &["cache", "list", "--url", "http://127.0.0.1:9"]).await);
    assert!(e.ends_with("(unreachable)"), "{e}");

    // Shell completions name the commands.
    let bash = ok(&plateau(config, &["completions", "bash"]).await);
    assert!(
        bash.contains("plateau") && bash.contains("storage"),
        "{}",
        &bash[..200.min(bash.len())]
    );

    // `plateau deploy` wants a directory with a Dockerfile.
    let empty = tempfile::tempdir().unwrap();
    let e = error(
        &plateau(
            config,
            &[
                "deploy",
                empty.path().to_str().unwrap(),
                "--app",
                "cli-hello",
            ],
        )
        .await,
    );
    assert!(e.ends_with("(no_dockerfile)"), "{e}");
}
