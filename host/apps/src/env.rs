//! App environment variables: names, the map and dotenv forms with their
//! per-line errors, and sealing values under the host key, bound to the
//! app and the name (a value moved to another app or name does not open);
//! a plugin's layer's values also to the plugin.

use plateau_seal::Sealer;

/// Longest value, in bytes.
pub const MAX_VALUE: usize = 32 * 1024;
/// Most variables per app.
pub const MAX_VARS: usize = 200;
/// Targets a variable may have.
pub const TARGETS: &[&str] = &["all", "production", "preview"];

/// Why a name or value is refused; `None` when it is fine.
pub fn check(name: &str, value: &str) -> Option<String> {
    let mut bytes = name.bytes();
    let first_ok = bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
    if !first_ok || !bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_') || name.len() > 128 {
        return Some(format!(
            "{name:?} is not a variable name: use letters, digits and _, not starting with a digit, at most 128"
        ));
    }
    if value.len() > MAX_VALUE {
        return Some(format!("the value of {name} is over {MAX_VALUE} bytes"));
    }
    if value.contains('\0') {
        return Some(format!("the value of {name} contains a NUL byte"));
    }
    None
}

/// One refused entry of a map or dotenv form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    /// The name, or for dotenv text `line N`.
    pub entry: String,
    pub message: String,
}

/// Splits dotenv text (`NAME=value` lines, `#` comments, optional
/// `export `, optional quotes) into variables and the lines refused.
pub fn parse_dotenv(text: &str) -> (Vec<(String, String)>, Vec<Invalid>) {
    let mut vars = Vec::new();
    let mut invalid = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((name, value)) = line.split_once('=') else {
            invalid.push(Invalid {
                entry: format!("line {}", n + 1),
                message: "expected NAME=value".to_owned(),
            });
            continue;
        };
        let name = name.trim();
        let value = unquote(value.trim());
        match check(name, value) {
            Some(message) => invalid.push(Invalid {
                entry: format!("line {}", n + 1),
                message,
            }),
            None => vars.push((name.to_owned(), value.to_owned())),
        }
    }
    (vars, invalid)
}

fn unquote(value: &str) -> &str {
    for q in ['"', '\''] {
        if value.len() >= 2 && value.starts_with(q) && value.ends_with(q) {
            return &value[1..value.len() - 1];
        }
    }
    value
}

fn context(app_id: &str, name: &str) -> String {
    format!("apps\u{1f}{app_id}\u{1f}{name}")
}

pub fn seal(sealer: &Sealer, app_id: &str, name: &str, value: &str) -> Result<Vec<u8>, String> {
    sealer
        .seal(&context(app_id, name), value.as_bytes())
        .map_err(|e| e.to_string())
}

pub fn open(sealer: &Sealer, app_id: &str, name: &str, sealed: &[u8]) -> Result<String, String> {
    let plain = sealer
        .open(&context(app_id, name), sealed)
        .map_err(|e| format!("{name}: {e}"))?;
    String::from_utf8(plain).map_err(|_| format!("{name}: the value is not UTF-8"))
}

fn layer_context(app_id: &str, plugin: &str, name: &str) -> String {
    format!("apps-layer\u{1f}{app_id}\u{1f}{plugin}\u{1f}{name}")
}

/// Seals a value of `plugin`'s layer of the app's environment, bound to
/// the app, the plugin and the name.
pub fn seal_layer(
    sealer: &Sealer,
    app_id: &str,
    plugin: &str,
    name: &str,
    value: &str,
) -> Result<Vec<u8>, String> {
    sealer
        .seal(&layer_context(app_id, plugin, name), value.as_bytes())
        .map_err(|e| e.to_string())
}

pub fn open_layer(
    sealer: &Sealer,
    app_id: &str,
    plugin: &str,
    name: &str,
    sealed: &[u8],
) -> Result<String, String> {
    let plain = sealer
        .open(&layer_context(app_id, plugin, name), sealed)
        .map_err(|e| format!("{name}: {e}"))?;
    String::from_utf8(plain).map_err(|_| format!("{name}: the value is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotenv_reports_bad_lines_and_keeps_the_rest() {
        let (vars, invalid) = parse_dotenv(
            "# comment\nGREETING=hello\nexport QUOTED=\"a b\"\n1BAD=x\nno equals\n\nEMPTY=\n",
        );
        assert_eq!(
            vars,
            [
                ("GREETING".to_owned(), "hello".to_owned()),
                ("QUOTED".to_owned(), "a b".to_owned()),
                ("EMPTY".to_owned(), String::new()),
            ]
        );
        let entries: Vec<&str> = invalid.iter().map(|i| i.entry.as_str()).collect();
        assert_eq!(entries, ["line 4", "line 5"]);
    }

    #[test]
    fn sealed_values_are_bound_to_app_and_name() {
        let sealer = Sealer::new(&[9; 32]);
        let sealed = seal(&sealer, "app_a", "KEY", "secret").unwrap();
        assert_eq!(open(&sealer, "app_a", "KEY", &sealed).unwrap(), "secret");
        assert!(open(&sealer, "app_b", "KEY", &sealed).is_err());
        assert!(open(&sealer, "app_a", "OTHER", &sealed).is_err());
    }
}
