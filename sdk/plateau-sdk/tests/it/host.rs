//! Clock, config, log, events, outbound HTTP and descriptions.

use plateau_sdk::outbound::{HttpError, OutgoingRequest};
use plateau_sdk::{
    ApiError, Capability, Description, Method, NewEvent, Params, Plugin, Request, Response, Router,
    clock, config, log, testing,
};

#[test]
fn rfc3339_dates() {
    let cases = [
        (0, "1970-01-01T00:00:00.000Z"),
        (951_782_400_000, "2000-02-29T00:00:00.000Z"),
        (1_735_689_599_999, "2024-12-31T23:59:59.999Z"),
        (4_107_542_400_250, "2100-03-01T00:00:00.250Z"),
    ];
    for (millis, text) in cases {
        assert_eq!(clock::rfc3339(millis), text);
    }
    testing::set_now(1_000);
    assert_eq!(
        (clock::now_millis(), clock::now_rfc3339().as_str()),
        (1_000, "1970-01-01T00:00:01.000Z")
    );
}

#[test]
fn config_and_logs() {
    assert_eq!(config::get("webhook_url"), None);
    assert_eq!(
        config::require("webhook_url").unwrap_err().detail(),
        "the plugin is not configured: set webhook_url in its configuration"
    );
    testing::set_config("webhook_url", "https://hooks.example.com");
    assert_eq!(
        config::require("webhook_url").unwrap(),
        "https://hooks.example.com"
    );
    assert_eq!(
        config::get_all(),
        [(
            "webhook_url".to_owned(),
            "https://hooks.example.com".to_owned()
        )]
    );

    log::warn("disk almost full");
    assert_eq!(
        testing::logs(),
        [(log::Level::Warn, "disk almost full".to_owned())]
    );
}

#[test]
fn events_need_object_data() {
    NewEvent::new("notes.note.created", "create")
        .resource("note", "n1")
        .data(&serde_json::json!({"title": "t"}))
        .audit()
        .emit()
        .unwrap();
    let events = testing::events();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].data.as_str(), events[0].audit),
        (r#"{"title":"t"}"#, true)
    );

    let error = NewEvent::new("notes.note.created", "create")
        .data(&[1, 2])
        .emit()
        .unwrap_err();
    assert_eq!(ApiError::from(error).status(), 500);
    assert_eq!(testing::events().len(), 1);
}

#[test]
fn outbound_http_is_mocked_natively() {
    let error = OutgoingRequest::get("https://api.example.com")
        .send()
        .unwrap_err();
    assert!(matches!(error, HttpError::ConnectionFailed(_)));
    assert_eq!(ApiError::from(error).status(), 503);
    assert_eq!(
        ApiError::from(HttpError::HostNotAllowed("x".into())).status(),
        500
    );

    testing::mock_http(|req| {
        assert_eq!(req.header_value("content-type"), Some("application/json"));
        Ok(testing::json_response(
            &serde_json::json!({"echo": req.url}),
        ))
    });
    let res = OutgoingRequest::post("https://api.example.com/x")
        .json(&serde_json::json!({}))
        .send()
        .unwrap();
    assert!(res.is_success());
    assert_eq!(
        res.json::<serde_json::Value>().unwrap()["echo"],
        "https://api.example.com/x"
    );
}

fn nothing(_: &Request, _: &Params) -> Result<Response, ApiError> {
    Ok(Response::no_content())
}

struct Sloppy;

impl Plugin for Sloppy {
    fn describe() -> Description {
        Description::new("sloppy", "0.1.0")
            .prefix("/sloppy")
            .scope("sloppy", "no verb")
            .capability(Capability::Kv)
            .capability(Capability::Kv)
    }

    fn router() -> Router {
        Router::new()
            .get("/elsewhere", nothing)
            .get("/sloppy/{id}", nothing)
            .scope("sloppy:read")
    }
}

#[test]
fn descriptions_report_their_mistakes() {
    let description = plateau_sdk::describe::<Sloppy>();
    assert_eq!(description.capabilities, ["kv"]);
    assert_eq!(description.routes.len(), 2);
    assert_eq!(
        description.problems(),
        [
            "scope `sloppy` must be `area:verb`, such as flags:read",
            "route GET /elsewhere: path is under none of the declared prefixes",
            "route GET /sloppy/{id}: scope `sloppy:read` is not declared in scopes",
        ]
    );
    let res = testing::handle::<Sloppy>(&Request::new(Method::Get, "/sloppy/1"));
    assert_eq!(res.status, 401);
}
