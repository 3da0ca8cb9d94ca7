//! What a batch looks like on the wire: NDJSON (one JSON object per line,
//! gzipped) for HTTPS drains, and RFC 5424 messages with octet-counting
//! framing (RFC 6587 / RFC 5425: `LEN SP MSG`) for syslog drains.

use std::io::Write as _;

use flate2::Compression;
use flate2::write::GzEncoder;
use plateau_sdk::clock;
use serde_json::{Value, json};

use crate::level::Level;
use crate::record::Buffered;

/// The SD-ID of the structured data element: `plateau@32473` (32473 is the
/// private enterprise number RFC 5612 reserves for examples and
/// documentation, as Plateau has none of its own).
pub const SD_ID: &str = "plateau@32473";
/// RFC 5424 facility 1, user-level messages.
const FACILITY: u8 = 1;

/// One line as an NDJSON object.
pub fn json_line(line: &Buffered) -> Value {
    let mut value = json!({
        "id": line.id,
        "source": line.source,
        "timestamp": clock::rfc3339(line.at),
        "level": line.level,
    });
    if line.source == "event" {
        value["type"] = json!(line.resource_name);
        value["event"] = serde_json::from_str(&line.message).unwrap_or(json!(line.message));
    } else {
        value["message"] = json!(line.message);
        value["app"] = json!({ "id": line.resource_id, "name": line.resource_name });
        value["deployment"] = json!(line.deployment);
        value["replica"] = json!(line.replica);
        value["stream"] = json!(line.channel);
    }
    value
}

/// The batch as NDJSON: one object per line, each ending in `\n`.
pub fn ndjson(lines: &[Buffered]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        out.extend_from_slice(json_line(line).to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
    encoder
        .write_all(bytes)
        .expect("writing to memory cannot fail");
    encoder.finish().expect("writing to memory cannot fail")
}

/// Printable US-ASCII without spaces, at most `max` bytes, or `-` (the
/// header fields of RFC 5424).
fn header_field(value: &str, max: usize) -> String {
    let cleaned: String = value
        .chars()
        .filter(|c| c.is_ascii_graphic())
        .take(max)
        .collect();
    if cleaned.is_empty() {
        "-".to_owned()
    } else {
        cleaned
    }
}

/// A PARAM-VALUE with `"`, `\` and `]` escaped (RFC 5424 6.3.3).
fn param_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '"' | '\\' | ']') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// One RFC 5424 message: `<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID
/// [plateau@32473 ...] MSG`. The host name is `plateau`, the app name the
/// app's name (or `plateau` for events), the process id the replica, and
/// the message id the stream (or the event's type).
pub fn syslog_message(line: &Buffered) -> String {
    let level = Level::parse(&line.level).unwrap_or(Level::Info);
    let pri = FACILITY * 8 + level.syslog_severity();
    let (app_name, msg_id) = if line.source == "event" {
        ("plateau", line.resource_name.as_str())
    } else {
        (line.resource_name.as_str(), line.channel.as_str())
    };
    let mut sd = format!(
        "[{SD_ID} id=\"{}\" source=\"{}\"",
        param_value(&line.id),
        line.source
    );
    if !line.resource_id.is_empty() {
        let key = if line.source == "event" {
            "resource"
        } else {
            "app"
        };
        sd.push_str(&format!(" {key}=\"{}\"", param_value(&line.resource_id)));
    }
    if let Some(deployment) = &line.deployment {
        sd.push_str(&format!(" deployment=\"{}\"", param_value(deployment)));
    }
    sd.push(']');
    format!(
        "<{pri}>1 {} plateau {} {} {} {sd} {}",
        clock::rfc3339(line.at),
        header_field(app_name, 48),
        header_field(line.replica.as_deref().unwrap_or(""), 128),
        header_field(msg_id, 32),
        line.message.trim_end_matches(['\n', '\r']),
    )
}

/// The batch as octet-counted syslog frames.
pub fn syslog_frames(lines: &[Buffered]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        let message = syslog_message(line);
        out.extend_from_slice(format!("{} ", message.len()).as_bytes());
        out.extend_from_slice(message.as_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    fn app_line() -> Buffered {
        Buffered {
            id: "log_01".into(),
            source: "app".into(),
            at: 1_700_000_000_250,
            level: "warning".into(),
            resource_id: "app_1".into(),
            resource_name: "my api".into(),
            deployment: Some("dep_1".into()),
            replica: Some("r-0".into()),
            channel: "stderr".into(),
            message: "disk \"low\"]\n".into(),
        }
    }

    #[test]
    fn syslog_messages_follow_rfc_5424() {
        let m = syslog_message(&app_line());
        assert_eq!(
            m,
            "<12>1 2023-11-14T22:13:20.250Z plateau myapi r-0 stderr \
             [plateau@32473 id=\"log_01\" source=\"app\" app=\"app_1\" deployment=\"dep_1\"] \
             disk \"low\"]"
        );
        let frames = syslog_frames(&[app_line(), app_line()]);
        let text = String::from_utf8(frames).unwrap();
        assert!(text.starts_with(&format!("{} <12>1", m.len())));
        assert_eq!(text.len(), 2 * (m.len() + format!("{} ", m.len()).len()));
    }

    #[test]
    fn ndjson_batches_are_one_object_a_line_and_gzip_round_trips() {
        let mut event = app_line();
        event.source = "event".into();
        event.resource_name = "app.created".into();
        event.message = r#"{"id":"evt_1","type":"app.created"}"#.into();
        let body = ndjson(&[app_line(), event]);
        let text = String::from_utf8(body.clone()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["app"]["name"], "my api");
        assert_eq!(lines[0]["level"], "warning");
        assert_eq!(lines[1]["event"]["type"], "app.created");
        let mut unzipped = Vec::new();
        flate2::read::GzDecoder::new(&gzip(&body)[..])
            .read_to_end(&mut unzipped)
            .unwrap();
        assert_eq!(unzipped, body);
    }
}
