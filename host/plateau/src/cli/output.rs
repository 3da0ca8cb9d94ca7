//! How the client commands print: the API's JSON with `--json`, else a
//! table of a list's chosen fields or one line per field of an object.

use serde_json::Value;

/// A field's text: strings bare, `null` as `-`, the rest as JSON.
fn cell(v: &Value) -> String {
    match v {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `a.b` reads `v["a"]["b"]`.
fn field<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |v, k| &v[k])
}

/// The items of a list answer: `{items: [...]}` or an array.
pub fn items(v: &Value) -> Vec<Value> {
    v["items"]
        .as_array()
        .or_else(|| v.as_array())
        .cloned()
        .unwrap_or_default()
}

/// A list: JSON as it came, or a table of `columns`.
pub fn list(json: bool, answer: &Value, columns: &[&str]) {
    if json {
        println!("{answer:#}");
        return;
    }
    let rows: Vec<Vec<String>> = items(answer)
        .iter()
        .map(|item| columns.iter().map(|c| cell(field(item, c))).collect())
        .collect();
    if rows.is_empty() {
        println!("(none)");
        return;
    }
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([c.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<String>| {
        let text: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", text.join("  ").trim_end());
    };
    line(columns.iter().map(|c| c.to_uppercase()).collect());
    for row in rows {
        line(row);
    }
}

/// One object: JSON as it came, or `field: value` lines for `fields`
/// (every top-level field when empty).
pub fn object(json: bool, answer: &Value, fields: &[&str]) {
    if json {
        println!("{answer:#}");
        return;
    }
    let keys: Vec<String> = if fields.is_empty() {
        answer
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    } else {
        fields.iter().map(|f| (*f).to_owned()).collect()
    };
    for key in keys {
        println!("{key}: {}", cell(field(answer, &key)));
    }
}

/// A sentence for people, or `{"ok": true, ...}` for scripts.
pub fn done(json: bool, text: &str, answer: &Value) {
    if json {
        println!("{answer:#}");
    } else {
        println!("{text}");
    }
}
