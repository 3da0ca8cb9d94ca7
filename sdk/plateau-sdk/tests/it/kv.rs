//! Typed key-value access and its errors, on the native stand-in.

use plateau_sdk::{ApiError, Bucket, KvError, Namespace, testing};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Flag {
    key: String,
    enabled: bool,
}

fn bucket() -> Bucket {
    testing::set_organization(Some("org_1"));
    Bucket::caller().unwrap()
}

#[test]
fn json_values_round_trip() {
    let b = bucket();
    let flag = Flag {
        key: "dark".into(),
        enabled: true,
    };
    b.set("flag:dark", &flag).unwrap();
    assert_eq!(b.get::<Flag>("flag:dark").unwrap(), Some(flag));
    assert_eq!(b.get::<Flag>("flag:none").unwrap(), None);
    assert_eq!(b.count("flag:").unwrap(), 1);
    assert!(b.delete("flag:dark").unwrap());
    assert!(!b.delete("flag:dark").unwrap());
    assert_eq!(b.count("flag:").unwrap(), 0);

    b.set_raw("flag:broken", b"{not json").unwrap();
    let error = b.get::<Flag>("flag:broken").unwrap_err();
    assert!(matches!(&error, KvError::Json { key, .. } if key == "flag:broken"));
    assert_eq!(ApiError::from(error).status(), 500);
}

#[test]
fn compare_and_swap_and_counters() {
    let b = bucket();
    assert!(b.insert_new("k", &1).unwrap());
    assert!(!b.insert_new("k", &2).unwrap());
    assert!(!b.compare_and_swap("k", Some(b"2"), Some(b"3")).unwrap());
    assert!(b.compare_and_swap("k", Some(b"1"), Some(b"3")).unwrap());
    assert!(b.compare_and_swap("k", Some(b"3"), None).unwrap());
    assert_eq!(b.get_raw("k").unwrap(), None);

    assert_eq!(b.increment("hits", 1).unwrap(), 1);
    assert_eq!(b.increment("hits", 41).unwrap(), 42);
    assert_eq!(b.increment("hits", -50).unwrap(), -8);
    assert_eq!(b.get::<i64>("hits").unwrap(), Some(-8));

    let written = b
        .update::<Vec<String>, _>("tags", |tags| {
            let mut tags = tags.unwrap_or_default();
            tags.push("beta".to_owned());
            Ok(Some(tags))
        })
        .unwrap();
    assert_eq!(written, Some(vec!["beta".to_owned()]));
    assert_eq!(
        b.update::<Vec<String>, _>("tags", |_| Ok(None)).unwrap(),
        None
    );
    assert_eq!(b.get_raw("tags").unwrap(), None);
}

#[test]
fn namespaces_are_separate() {
    let mine = bucket();
    mine.set("k", "mine").unwrap();
    testing::set_organization(Some("org_2"));
    let theirs = Bucket::caller().unwrap();
    assert_eq!(theirs.get::<String>("k").unwrap(), None);
    assert!(matches!(
        Bucket::organization("org_1"),
        Err(KvError::AccessDenied(_))
    ));

    testing::set_organization(None);
    assert!(matches!(Bucket::caller(), Err(KvError::AccessDenied(_))));
    let org_1 = Bucket::open(Namespace::Organization("org_1".into())).unwrap();
    assert_eq!(org_1.get::<String>("k").unwrap().as_deref(), Some("mine"));
    assert_eq!(Bucket::global().unwrap().get::<String>("k").unwrap(), None);
}

#[test]
fn invalid_keys_and_values() {
    let b = bucket();
    for key in ["", "a\nb", &"k".repeat(513)] {
        assert!(
            matches!(b.set(key, &1), Err(KvError::InvalidKey(_))),
            "{key:?}"
        );
    }
    assert!(b.set(&"k".repeat(512), &1).is_ok());
    let big = vec![b'x'; 1024 * 1024 + 1];
    assert!(matches!(b.set_raw("big", &big), Err(KvError::TooLarge(_))));
}

#[test]
fn kv_errors_become_problems() {
    let cases = [
        (KvError::AccessDenied("x".into()), 500, "internal"),
        (KvError::InvalidKey("x".into()), 400, "bad_request"),
        (KvError::TooLarge("x".into()), 413, "payload_too_large"),
        (KvError::InvalidCursor, 400, "invalid_cursor"),
        (KvError::Unavailable("db down".into()), 503, "unavailable"),
        (
            KvError::Json {
                key: "k".into(),
                message: "x".into(),
            },
            500,
            "internal",
        ),
    ];
    for (error, status, code) in cases {
        let api = ApiError::from(error.clone());
        assert_eq!(
            (api.status(), api.code().as_str()),
            (status, code),
            "{error:?}"
        );
    }
}

#[test]
fn a_failed_request_rolls_back_its_writes() {
    use plateau_sdk::{Caller, Description, Method, Params, Plugin, Request, Response, Router};

    fn write_then_fail(req: &Request, _: &Params) -> Result<Response, ApiError> {
        Bucket::caller()?.set("written", &true)?;
        plateau_sdk::NewEvent::new("test.thing.created", "create").emit()?;
        if req.query().contains("fail") {
            return Err(ApiError::unavailable("dependency is down, retry later"));
        }
        Ok(Response::no_content())
    }

    struct P;
    impl Plugin for P {
        fn describe() -> Description {
            Description::new("p", "0.1.0").prefix("/p")
        }
        fn router() -> Router {
            Router::new().post("/p", write_then_fail)
        }
    }

    let caller = Caller::new("org_9", &[]);
    let res =
        testing::handle::<P>(&Request::new(Method::Post, "/p?fail").with_caller(caller.clone()));
    assert_eq!(res.status, 503);
    testing::set_organization(Some("org_9"));
    assert_eq!(
        Bucket::caller().unwrap().get::<bool>("written").unwrap(),
        None
    );
    assert!(testing::events().is_empty());

    let res = testing::handle::<P>(&Request::new(Method::Post, "/p").with_caller(caller));
    assert_eq!(res.status, 204);
    assert_eq!(
        Bucket::caller().unwrap().get::<bool>("written").unwrap(),
        Some(true)
    );
    assert_eq!(testing::events().len(), 1);
}
