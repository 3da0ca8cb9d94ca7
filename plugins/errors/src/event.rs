//! A Sentry event as the plugin keeps it: the fields the issue views need,
//! read tolerantly from what any SDK sends (`exception` as `{values}` or a
//! list, `breadcrumbs` likewise, `message` as a string or `logentry`,
//! `tags` as an object or pairs, `timestamp` as RFC 3339 or seconds), and
//! bounded so that one stored event stays far below the key-value limit.

use plateau_sdk::clock;
use plateau_sdk::serde_json::{Map, Value};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Frames kept per exception (the innermost ones, where Sentry shows them).
pub const MAX_FRAMES: usize = 100;
/// Breadcrumbs kept (the newest).
pub const MAX_BREADCRUMBS: usize = 100;
/// Characters kept of any string.
const MAX_STRING: usize = 2048;

/// One stack frame.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Frame {
    pub filename: Option<String>,
    pub abs_path: Option<String>,
    pub module: Option<String>,
    pub function: Option<String>,
    pub lineno: Option<u64>,
    pub colno: Option<u64>,
    pub in_app: Option<bool>,
    pub context_line: Option<String>,
    #[serde(default)]
    pub pre_context: Vec<String>,
    #[serde(default)]
    pub post_context: Vec<String>,
}

/// One exception of the chain, outermost last as Sentry sends them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Exception {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub value: Option<String>,
    pub module: Option<String>,
    pub mechanism: Option<String>,
    pub handled: Option<bool>,
    /// Innermost (the raising call) last.
    pub frames: Vec<Frame>,
}

/// An event as stored and shown.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoredEvent {
    pub event_id: String,
    pub received_at: String,
    pub timestamp: Option<String>,
    pub level: String,
    pub platform: Option<String>,
    pub message: Option<String>,
    /// The message before its parameters were put in (`logentry.message`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_template: Option<String>,
    pub transaction: Option<String>,
    pub release: Option<String>,
    pub environment: Option<String>,
    pub server_name: Option<String>,
    pub user: Option<Value>,
    /// `[name, value]` pairs.
    #[schema(value_type = Vec<Vec<String>>)]
    pub tags: Vec<(String, String)>,
    pub exceptions: Vec<Exception>,
    pub breadcrumbs: Vec<Value>,
    pub sdk: Option<Value>,
    pub fingerprint: Vec<String>,
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(clip(s)),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn clip(s: &str) -> String {
    s.chars().take(MAX_STRING).collect()
}

/// A list sent as `{"values": [...]}` or as the list itself.
fn values(v: &Value) -> &[Value] {
    match v {
        Value::Array(items) => items,
        Value::Object(map) => map
            .get("values")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice),
        _ => &[],
    }
}

/// `value` with every string clipped, lists and objects cut to 50 entries
/// and nesting to 5 levels.
fn bounded(value: &Value, depth: usize) -> Value {
    match value {
        Value::String(s) => Value::String(clip(s)),
        Value::Array(items) if depth < 5 => Value::Array(
            items
                .iter()
                .take(50)
                .map(|v| bounded(v, depth + 1))
                .collect(),
        ),
        Value::Object(map) if depth < 5 => Value::Object(
            map.iter()
                .take(50)
                .map(|(k, v)| (clip(k), bounded(v, depth + 1)))
                .collect::<Map<_, _>>(),
        ),
        Value::Array(_) | Value::Object(_) => Value::String("[…]".to_owned()),
        other => other.clone(),
    }
}

fn strings(v: &Value, max: usize) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().filter_map(text).take(max).collect())
        .unwrap_or_default()
}

fn frame(v: &Value) -> Frame {
    Frame {
        filename: text(&v["filename"]),
        abs_path: text(&v["abs_path"]),
        module: text(&v["module"]),
        function: text(&v["function"]),
        lineno: v["lineno"].as_u64(),
        colno: v["colno"].as_u64(),
        in_app: v["in_app"].as_bool(),
        context_line: text(&v["context_line"]),
        pre_context: strings(&v["pre_context"], 10),
        post_context: strings(&v["post_context"], 10),
    }
}

fn exception(v: &Value) -> Exception {
    let frames = values(&v["stacktrace"]["frames"]);
    let skip = frames.len().saturating_sub(MAX_FRAMES);
    Exception {
        kind: text(&v["type"]),
        value: text(&v["value"]),
        module: text(&v["module"]),
        mechanism: text(&v["mechanism"]["type"]),
        handled: v["mechanism"]["handled"].as_bool(),
        frames: frames.iter().skip(skip).map(frame).collect(),
    }
}

fn timestamp(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .filter(|s| *s >= 0.0)
            .map(|s| clock::rfc3339((s * 1000.0) as u64)),
        Value::String(s) if s.len() <= 64 => Some(s.clone()),
        _ => None,
    }
}

fn tags(v: &Value) -> Vec<(String, String)> {
    let pairs: Vec<(String, String)> = match v {
        Value::Object(map) => map
            .iter()
            .filter_map(|(k, v)| Some((clip(k), text(v)?)))
            .collect(),
        Value::Array(items) => items
            .iter()
            .filter_map(|pair| Some((text(&pair[0])?, text(&pair[1])?)))
            .collect(),
        _ => Vec::new(),
    };
    pairs.into_iter().take(50).collect()
}

/// Reads an event payload, received at `received_ms` on the host clock.
/// `event_id` is the payload's, else the envelope's.
pub fn read(payload: &Value, envelope_event_id: Option<&str>, received_ms: u64) -> StoredEvent {
    let message = text(&payload["logentry"]["formatted"])
        .or_else(|| text(&payload["message"]["formatted"]))
        .or_else(|| text(&payload["message"]))
        .or_else(|| text(&payload["logentry"]["message"]))
        .or_else(|| text(&payload["message"]["message"]));
    let template = text(&payload["logentry"]["message"])
        .or_else(|| text(&payload["message"]["message"]))
        .filter(|t| Some(t) != message.as_ref());
    let breadcrumbs = values(&payload["breadcrumbs"]);
    let skip = breadcrumbs.len().saturating_sub(MAX_BREADCRUMBS);
    let event_id = text(&payload["event_id"])
        .or_else(|| envelope_event_id.map(str::to_owned))
        .map(|id| id.replace('-', "").to_ascii_lowercase())
        .filter(|id| id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()))
        .unwrap_or_else(|| hex::encode(plateau_sdk::ids::random::<16>()));
    StoredEvent {
        event_id,
        received_at: clock::rfc3339(received_ms),
        timestamp: timestamp(&payload["timestamp"]),
        level: text(&payload["level"]).unwrap_or_else(|| "error".to_owned()),
        platform: text(&payload["platform"]),
        message,
        message_template: template,
        transaction: text(&payload["transaction"]),
        release: text(&payload["release"]),
        environment: text(&payload["environment"]),
        server_name: text(&payload["server_name"]),
        user: payload
            .get("user")
            .filter(|u| u.is_object())
            .map(|u| bounded(u, 3)),
        tags: tags(&payload["tags"]),
        exceptions: values(&payload["exception"])
            .iter()
            .take(10)
            .map(exception)
            .collect(),
        breadcrumbs: breadcrumbs
            .iter()
            .skip(skip)
            .map(|b| bounded(b, 2))
            .collect(),
        sdk: payload.get("sdk").map(|s| bounded(s, 3)),
        fingerprint: strings(&payload["fingerprint"], 20),
    }
}

impl StoredEvent {
    /// Who the event happened to, for the affected users: the
    /// user's `id`, else `email`, `username`, `ip_address`.
    pub fn user_key(&self) -> Option<String> {
        let user = self.user.as_ref()?;
        ["id", "email", "username", "ip_address"]
            .iter()
            .find_map(|field| text(&user[*field]).map(|v| format!("{field}:{v}")))
    }

    /// The exception chain's outermost exception (the one the code saw).
    pub fn main_exception(&self) -> Option<&Exception> {
        self.exceptions.last()
    }

    /// `Type: value` of the main exception, else the message.
    pub fn title(&self) -> String {
        let title = match self.main_exception() {
            Some(e) => match (&e.kind, &e.value) {
                (Some(k), Some(v)) => format!("{k}: {v}"),
                (Some(k), None) => k.clone(),
                (None, Some(v)) => v.clone(),
                (None, None) => "<unknown error>".to_owned(),
            },
            None => self
                .message
                .clone()
                .unwrap_or_else(|| "<no message>".to_owned()),
        };
        title
            .lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(200)
            .collect()
    }

    /// Where it happened: the innermost in-app frame's `module in
    /// function` (or file), else the transaction.
    pub fn culprit(&self) -> Option<String> {
        let frames = self.main_exception().map_or(&[][..], |e| &e.frames[..]);
        let frame = frames
            .iter()
            .rev()
            .find(|f| f.in_app == Some(true))
            .or(frames.last());
        frame
            .and_then(|f| {
                let place = f.module.as_ref().or(f.filename.as_ref())?;
                Some(match &f.function {
                    Some(function) => format!("{place} in {function}"),
                    None => place.clone(),
                })
            })
            .or_else(|| self.transaction.clone())
    }
}
