//! Which issue an event belongs to: the SDK's `fingerprint` (where
//! `{{ default }}` stands for the default grouping), else the in-app stack
//! frames of its exceptions (module or file, and function: line numbers
//! change with every edit, so they are left out), else the exceptions'
//! types and values, else the message (its template when the SDK sent
//! one, so `user %s not found` is one issue whatever the user).

use sha2::{Digest, Sha256};

use crate::event::StoredEvent;

/// How an event was grouped, and its issue's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grouping {
    /// 32 lowercase hex digits: the first 128 bits of the SHA-256 of the
    /// components, one a line.
    pub hash: String,
    /// `fingerprint`, `in-app frames`, `exception` or `message`.
    pub method: &'static str,
}

fn is_default(part: &str) -> bool {
    matches!(part.trim(), "{{ default }}" | "{{default}}")
}

/// The components of the default grouping, and its method.
fn default_components(event: &StoredEvent) -> (&'static str, Vec<String>) {
    let mut frames = Vec::new();
    for exception in &event.exceptions {
        let in_app: Vec<String> = exception
            .frames
            .iter()
            .filter(|f| f.in_app == Some(true))
            .map(|f| {
                let place = f.module.as_deref().or(f.filename.as_deref());
                format!(
                    "frame:{}:{}",
                    place.unwrap_or("?"),
                    f.function.as_deref().unwrap_or("?")
                )
            })
            .collect();
        if !in_app.is_empty() {
            frames.push(format!(
                "type:{}",
                exception.kind.as_deref().unwrap_or_default()
            ));
            frames.extend(in_app);
        }
    }
    if !frames.is_empty() {
        return ("in-app frames", frames);
    }
    if !event.exceptions.is_empty() {
        let parts = event
            .exceptions
            .iter()
            .flat_map(|e| {
                [
                    format!("type:{}", e.kind.as_deref().unwrap_or_default()),
                    format!("value:{}", e.value.as_deref().unwrap_or_default()),
                ]
            })
            .collect();
        return ("exception", parts);
    }
    let message = event
        .message_template
        .as_deref()
        .or(event.message.as_deref())
        .unwrap_or_default();
    ("message", vec![format!("message:{message}")])
}

/// The event's grouping.
pub fn group(event: &StoredEvent) -> Grouping {
    let (method, components) = if event.fingerprint.is_empty() {
        default_components(event)
    } else {
        let mut parts = Vec::new();
        for part in &event.fingerprint {
            if is_default(part) {
                parts.extend(default_components(event).1);
            } else {
                parts.push(format!("fingerprint:{part}"));
            }
        }
        ("fingerprint", parts)
    };
    let digest = Sha256::digest(components.join("\n").as_bytes());
    Grouping {
        hash: hex::encode(&digest[..16]),
        method,
    }
}

#[cfg(test)]
mod tests {
    use plateau_sdk::serde_json::json;

    use super::*;
    use crate::event::read;

    fn grouped(payload: serde_json::Value) -> Grouping {
        group(&read(&payload, None, 0))
    }

    fn raised(value: &str, line: u64, in_app: bool) -> serde_json::Value {
        json!({"exception": {"values": [{"type": "KeyError", "value": value,
        "stacktrace": {"frames": [
            {"module": "lib", "function": "get", "lineno": 1, "in_app": false},
            {"module": "app.views", "function": "checkout", "lineno": line, "in_app": in_app}
        ]}}]}})
    }

    #[test]
    fn in_app_frames_group_whatever_the_line_and_the_value() {
        let a = grouped(raised("'a'", 10, true));
        assert_eq!(a.method, "in-app frames");
        assert_eq!(a, grouped(raised("'b'", 12, true)));
        assert_eq!(a.hash.len(), 32);
    }

    #[test]
    fn without_in_app_frames_the_type_and_value_group() {
        let a = grouped(raised("'a'", 10, false));
        assert_eq!(a.method, "exception");
        assert_ne!(a, grouped(raised("'b'", 10, false)));
        assert_eq!(a, grouped(raised("'a'", 99, false)));
    }

    #[test]
    fn messages_group_by_template_and_fingerprints_override() {
        let m = |formatted: &str| {
            grouped(json!({"logentry": {"message": "user %s not found", "formatted": formatted}}))
        };
        assert_eq!(m("user 1 not found"), m("user 2 not found"));
        assert_eq!(m("x").method, "message");
        let plain = grouped(json!({"message": "disk full"}));
        assert_ne!(plain, grouped(json!({"message": "disk empty"})));

        let mut custom = raised("'a'", 10, true);
        custom["fingerprint"] = json!(["payments"]);
        let custom = grouped(custom);
        assert_eq!(custom.method, "fingerprint");
        assert_eq!(
            custom,
            grouped(json!({"message": "other", "fingerprint": ["payments"]}))
        );
        let mut extended = raised("'a'", 10, true);
        extended["fingerprint"] = json!(["{{ default }}", "eu"]);
        assert_ne!(
            grouped(extended).hash,
            grouped(raised("'a'", 10, true)).hash
        );
    }
}
