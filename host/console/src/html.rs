//! The pages' shared HTML: the layout (skip link, header, navigation,
//! main), and the pieces every page is made of (tables of API items,
//! forms with their CSRF field, copyable values, problems). maud escapes
//! every value, so nothing a tenant named can become markup.

use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde_json::Value;

use crate::session::{Kind, Session};

/// The navigation: (path under /console, label) for token sessions.
const AREAS: &[(&str, &str)] = &[
    ("/console/", "Overview"),
    ("/console/account", "Account"),
    ("/console/members", "Members"),
    ("/console/rewards", "Rewards"),
    ("/console/projects", "Projects"),
    ("/console/apps", "Apps"),
    ("/console/databases", "Databases"),
    ("/console/caches", "Caches"),
    ("/console/storage", "Storage"),
    ("/console/areas/queues", "Queues"),
    ("/console/areas/cron-jobs", "Cron jobs"),
    ("/console/areas/workflows", "Workflows"),
    ("/console/areas/email", "Email"),
    ("/console/areas/checks", "Checks"),
    ("/console/areas/heartbeats", "Heartbeats"),
    ("/console/areas/flags", "Flags"),
    ("/console/areas/registry", "Registry"),
    ("/console/areas/webhooks", "Webhooks"),
    ("/console/areas/log-drains", "Log drains"),
    ("/console/areas/errors", "Error tracking"),
    ("/console/areas/traces", "Traces"),
    ("/console/areas/config", "Config"),
    ("/console/areas/alarms", "Alarms"),
    ("/console/areas/anomaly-monitors", "Anomalies"),
    ("/console/areas/waf-rules", "Firewall"),
    ("/console/status-pages", "Status page"),
    ("/console/analytics", "Web analytics"),
    ("/console/events", "Events"),
    ("/console/audit", "Audit log"),
];

/// The operator's navigation.
const ADMIN_AREAS: &[(&str, &str)] = &[
    ("/console/", "Overview"),
    ("/console/admin/organizations", "Organisations"),
    ("/console/admin/plugins", "Plugins"),
];

/// A whole page for a signed-in session.
pub fn page(session: &Session, current: &str, title: &str, content: Markup) -> Markup {
    let areas = match session.kind {
        Kind::Token => AREAS,
        Kind::Admin => ADMIN_AREAS,
    };
    shell(
        title,
        html! {
            nav aria-label="Areas" {
                ul {
                    @for (href, label) in areas {
                        li {
                            @if *href == current {
                                a href=(href) aria-current="page" { (label) }
                            } @else {
                                a href=(href) { (label) }
                            }
                        }
                    }
                }
                form method="post" action="/console/sign-out" {
                    (csrf(session))
                    button type="submit" { "Sign out" }
                }
            }
        },
        content,
    )
}

/// A page outside a session (sign-in, refusals).
pub fn shell(title: &str, navigation: Markup, content: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Plateau" }
                link rel="stylesheet" href="/console/static/console.css";
                script src="/console/static/console.js" defer {}
            }
            body {
                a class="skip" href="#main" { "Skip to content" }
                header {
                    p class="brand" { a href="/console/" { "Plateau" } }
                    (navigation)
                }
                main id="main" tabindex="-1" {
                    h1 { (title) }
                    (content)
                }
            }
        }
    }
}

/// A page that only says something, with a way back.
pub fn message_page(title: &str, message: &str) -> Markup {
    shell(
        title,
        html! {},
        html! {
            p role="alert" { (message) }
            p { a href="/console/" { "Back to the console" } }
        },
    )
}

/// The hidden field every form that changes something carries.
pub fn csrf(session: &Session) -> Markup {
    html! { input type="hidden" name="csrf" value=(session.csrf); }
}

/// A problem the API answered, as an alert.
pub fn problem(message: &str) -> Markup {
    html! { p class="problem" role="alert" { (message) } }
}

/// A value with a button that copies it.
pub fn copyable(label: &str, id: &str, value: &str) -> Markup {
    html! {
        div class="copy" {
            label for=(id) { (label) }
            div class="copy-row" {
                input id=(id) type="text" readonly value=(value);
                button type="button" data-copy=(id) { "Copy" span class="visually-hidden" { " " (label) } }
            }
        }
    }
}

/// The text of a JSON value for a cell: strings bare, null empty.
pub fn text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A column of [`table`]: its heading and the item's field (dotted paths
/// reach into objects).
pub struct Column<'a> {
    pub heading: &'a str,
    pub field: &'a str,
}

pub const fn col<'a>(heading: &'a str, field: &'a str) -> Column<'a> {
    Column { heading, field }
}

/// `item`'s field at a dotted path.
pub fn field<'a>(item: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(item, |v, k| &v[k])
}

/// A table of `items`; the first column links to `link(item)` when given.
pub fn table(
    caption: &str,
    items: &[Value],
    columns: &[Column],
    link: Option<&dyn Fn(&Value) -> String>,
) -> Markup {
    if items.is_empty() {
        return html! { p { "No " (caption.to_lowercase()) " yet." } };
    }
    html! {
        // A region a keyboard can scroll (WCAG 2.1.1), named by its table.
        div class="table-wrap" tabindex="0" role="region" aria-label=(caption) {
            table {
                caption { (caption) }
                thead { tr { @for c in columns { th scope="col" { (c.heading) } } } }
                tbody {
                    @for item in items {
                        tr {
                            @for (i, c) in columns.iter().enumerate() {
                                @let value = text(field(item, c.field));
                                @if i == 0 && link.is_some() {
                                    th scope="row" {
                                        a href=(link.map(|l| l(item)).unwrap_or_default()) { (value) }
                                    }
                                } @else if i == 0 {
                                    th scope="row" { (value) }
                                } @else {
                                    td { (value) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The items of a list answer (`{"items": [...]}`, or a bare array).
pub fn items(value: &Value) -> Vec<Value> {
    value["items"]
        .as_array()
        .or_else(|| value.as_array())
        .cloned()
        .unwrap_or_default()
}

/// A labelled text input.
pub fn input(label: &str, name: &str, kind: &str, required: bool, hint: Option<&str>) -> Markup {
    let id = format!("f-{name}");
    let hint_id = format!("{id}-hint");
    html! {
        div class="field" {
            label for=(id) { (label) }
            @if let Some(hint) = hint {
                p id=(hint_id) class="hint" { (hint) }
                input id=(id) name=(name) type=(kind) required[required] aria-describedby=(hint_id);
            } @else {
                input id=(id) name=(name) type=(kind) required[required];
            }
        }
    }
}

/// A form posting to `action` with `fields` and a submit button.
pub fn form(session: &Session, action: &str, fields: Markup, submit: &str) -> Markup {
    html! {
        form method="post" action=(action) class="stack" {
            (csrf(session))
            (fields)
            button type="submit" { (submit) }
        }
    }
}

/// A one-button form (pause, revoke, delete): the button shows `text`,
/// and a screen reader hears `context` after it.
pub fn button(session: &Session, action: &str, text: &str, context: &str) -> Markup {
    html! {
        form method="post" action=(action) class="inline" {
            (csrf(session))
            button type="submit" { (text) span class="visually-hidden" { " " (context) } }
        }
    }
}

/// A value shown as `<pre>` (logs, JSON).
pub fn pre(text: &str) -> Markup {
    html! { pre tabindex="0" { (text) } }
}

/// Marks already-escaped markup as such (the CSS and script).
pub fn raw(s: &'static str) -> PreEscaped<&'static str> {
    PreEscaped(s)
}
