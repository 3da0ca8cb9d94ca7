//! The public page's HTML, pure: one layout (a skip link, a landmark per
//! part, headings in order, the language, a viewport for phones, colours
//! that keep AA contrast, and every status said in words, not only by
//! colour), the page itself, and the small pages of subscribing. Every
//! tenant-written value goes through [`esc`].

use std::fmt::Write as _;

use plateau_sdk::clock::rfc3339;

use crate::record::{Component, ComponentStatus, Incident, IncidentKind, Page};
use crate::uptime::{self, Bar};

/// HTML-escapes text and attribute values.
pub fn esc(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "\
:root{color-scheme:light;font-family:system-ui,-apple-system,'Segoe UI',sans-serif;line-height:1.5;color:#1a1a1a;background:#fff}\
body{margin:0}.wrap{max-width:48rem;margin:0 auto;padding:1rem}\
.skip{position:absolute;left:-999px}.skip:focus{left:1rem;top:1rem;background:#fff;padding:.5rem}\
h1{font-size:1.6rem;margin:.5rem 0}h2{font-size:1.25rem;margin:2rem 0 .5rem}h3{font-size:1.05rem;margin:0}\
.banner{padding:1rem;border-radius:.4rem;font-weight:600;color:#fff}\
.s-none{background:#1e6b34}.s-minor{background:#8a5a00}.s-major{background:#a33a00}.s-critical{background:#a3161b}.s-maintenance{background:#1f5aa6}\
ul.plain{list-style:none;padding:0;margin:0}\
.comp{border:1px solid #ccc;border-radius:.4rem;padding:.75rem;margin:.5rem 0}\
.row{display:flex;justify-content:space-between;gap:.5rem;flex-wrap:wrap}\
.st{font-weight:600}.operational{color:#1e6b34}.degraded_performance{color:#7a5000}.partial_outage{color:#a33a00}.major_outage{color:#a3161b}.under_maintenance{color:#1f5aa6}\
.bars{display:flex;gap:1px;height:2rem;margin:.5rem 0 0}.bars span{flex:1;border-radius:1px}\
.b-operational{background:#2f9e55}.b-degraded_performance{background:#d9a400}.b-partial_outage{background:#e06c00}.b-major_outage{background:#c8262c}.b-under_maintenance{background:#3b7dd8}.b-none{background:#d5d5d5}\
.legend{display:flex;justify-content:space-between;font-size:.85rem;color:#555}\
.inc{border-left:4px solid #555;padding:.25rem .75rem;margin:1rem 0}.upd{margin:.5rem 0}\
.meta{color:#555;font-size:.9rem}\
label{display:block;font-weight:600}input[type=email]{font:inherit;padding:.5rem;width:100%;max-width:22rem;box-sizing:border-box}\
button{font:inherit;padding:.5rem 1rem;margin-top:.5rem;background:#1f5aa6;color:#fff;border:0;border-radius:.3rem}\
a{color:#1f4f99}footer{margin:2rem 0;font-size:.9rem;color:#555}";

/// A whole document.
pub fn layout(title: &str, head_extra: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title>{head_extra}<style>{STYLE}</style></head><body>\
         <a class=\"skip\" href=\"#main\">Skip to the status</a><div class=\"wrap\">{body}</div></body></html>",
        title = esc(title)
    )
}

/// A short page: a heading and a paragraph (subscription answers).
pub fn message(page_name: &str, heading: &str, text: &str, back: &str) -> String {
    layout(
        &format!("{heading} - {page_name}"),
        "",
        &format!(
            "<header><p>{}</p></header><main id=\"main\"><h1>{}</h1><p>{}</p>\
             <p><a href=\"{}\">Back to the status page</a></p></main>",
            esc(page_name),
            esc(heading),
            esc(text),
            esc(back)
        ),
    )
}

/// A page with one button that posts to `action` (confirm, unsubscribe):
/// a link in an email only shows it, so a mail scanner that follows links
/// changes nothing.
pub fn confirm_form(
    page_name: &str,
    heading: &str,
    text: &str,
    action: &str,
    button: &str,
) -> String {
    layout(
        &format!("{heading} - {page_name}"),
        "",
        &format!(
            "<header><p>{}</p></header><main id=\"main\"><h1>{}</h1><p>{}</p>\
             <form method=\"post\" action=\"{}\"><button type=\"submit\">{}</button></form></main>",
            esc(page_name),
            esc(heading),
            esc(text),
            esc(action),
            esc(button)
        ),
    )
}

/// The overall status: Statuspage's indicator and its words.
pub fn indicator(
    components: &[Component],
    open: &[Incident],
    now: u64,
) -> (&'static str, &'static str) {
    let active: Vec<&Incident> = open.iter().filter(|i| is_active(i, now)).collect();
    let worst_impact = active
        .iter()
        .filter(|i| i.kind == IncidentKind::Incident)
        .map(|i| impact_rank(&i.impact))
        .max()
        .unwrap_or(0);
    let worst_component = components.iter().map(|c| c.status).max();
    let from_components = match worst_component {
        Some(ComponentStatus::MajorOutage) => 3,
        Some(ComponentStatus::PartialOutage) => 2,
        Some(ComponentStatus::DegradedPerformance) => 1,
        _ => 0,
    };
    match worst_impact.max(from_components) {
        3 => ("critical", "Major System Outage"),
        2 => ("major", "Partial System Outage"),
        1 => ("minor", "Minor Service Outage"),
        _ if active.iter().any(|i| i.kind == IncidentKind::Maintenance)
            || worst_component == Some(ComponentStatus::UnderMaintenance) =>
        {
            ("maintenance", "Service Under Maintenance")
        }
        _ => ("none", "All Systems Operational"),
    }
}

fn impact_rank(impact: &str) -> u8 {
    match impact {
        "critical" => 3,
        "major" => 2,
        "minor" => 1,
        _ => 0,
    }
}

/// An open incident, or maintenance that has begun.
pub fn is_active(incident: &Incident, now: u64) -> bool {
    incident.is_open()
        && (incident.kind == IncidentKind::Incident
            || incident.status != "scheduled"
            || incident.scheduled_for.is_some_and(|at| at <= now))
}

/// Everything the page shows, read by [`crate::public`].
pub struct View<'a> {
    pub page: &'a Page,
    pub url: &'a str,
    pub components: &'a [(Component, Vec<(Bar, u64)>)],
    pub open: &'a [Incident],
    pub recent: &'a [Incident],
    pub now: u64,
}

/// The status page.
pub fn page(v: &View<'_>) -> String {
    let comps: Vec<Component> = v.components.iter().map(|(c, _)| c.clone()).collect();
    let (level, words) = indicator(&comps, v.open, v.now);
    let mut b = String::new();
    let _ = write!(
        b,
        "<header><h1>{name}</h1>{desc}</header><main id=\"main\">\
         <section aria-labelledby=\"now\"><h2 id=\"now\" class=\"banner s-{level}\">{words}</h2></section>",
        name = esc(&v.page.name),
        desc = if v.page.description.is_empty() {
            String::new()
        } else {
            format!("<p>{}</p>", esc(&v.page.description))
        },
    );
    let (active, upcoming): (Vec<&Incident>, Vec<&Incident>) =
        v.open.iter().partition(|i| is_active(i, v.now));
    if !active.is_empty() {
        b.push_str("<section aria-labelledby=\"active\"><h2 id=\"active\">Current incidents and maintenance</h2>");
        for i in active {
            incident(&mut b, i, true);
        }
        b.push_str("</section>");
    }
    b.push_str(
        "<section aria-labelledby=\"comps\"><h2 id=\"comps\">Components</h2><ul class=\"plain\">",
    );
    for (c, bars) in v.components {
        component(&mut b, c, bars);
    }
    if v.components.is_empty() {
        b.push_str("<li>No components yet.</li>");
    }
    b.push_str("</ul></section>");
    if !upcoming.is_empty() {
        b.push_str(
            "<section aria-labelledby=\"sched\"><h2 id=\"sched\">Scheduled maintenance</h2>",
        );
        for i in upcoming {
            incident(&mut b, i, true);
        }
        b.push_str("</section>");
    }
    b.push_str("<section aria-labelledby=\"past\"><h2 id=\"past\">Past incidents</h2>");
    let past: Vec<&Incident> = v.recent.iter().filter(|i| !i.is_open()).collect();
    if past.is_empty() {
        b.push_str("<p>No incidents reported.</p>");
    }
    for i in past {
        incident(&mut b, i, false);
    }
    let _ = write!(
        b,
        "</section><section aria-labelledby=\"sub\"><h2 id=\"sub\">Get updates</h2>\
         <form method=\"post\" action=\"{url}/subscribe\"><label for=\"email\">Email address</label>\
         <input id=\"email\" name=\"email\" type=\"email\" autocomplete=\"email\" required>\
         <button type=\"submit\">Subscribe</button></form>\
         <p>Or follow the <a href=\"{url}/history.atom\">Atom feed</a>, or read \
         <a href=\"{url}/api/v2/summary.json\">summary.json</a>.</p></section></main>\
         <footer>{home}Updated {now}</footer>",
        url = esc(v.url),
        home = v
            .page
            .homepage_url
            .as_deref()
            .map_or_else(String::new, |h| format!(
                "<a href=\"{}\">{}</a> · ",
                esc(h),
                esc(&v.page.name)
            )),
        now = rfc3339(v.now),
    );
    let head = format!(
        "<link rel=\"alternate\" type=\"application/atom+xml\" title=\"{} history\" href=\"{}/history.atom\">",
        esc(&v.page.name),
        esc(v.url)
    );
    layout(&format!("{} status", v.page.name), &head, &b)
}

fn component(b: &mut String, c: &Component, bars: &[(Bar, u64)]) {
    let uptime = uptime::overall(bars).map_or_else(
        || "no data".to_owned(),
        |u| format!("{:.2}% uptime", u * 100.0),
    );
    let _ = write!(
        b,
        "<li class=\"comp\"><div class=\"row\"><h3>{name}</h3><span class=\"st {st}\">{label}</span></div>{desc}\
         <div class=\"bars\" role=\"img\" aria-label=\"{name}: {uptime} over the last 90 days\">",
        name = esc(&c.name),
        st = c.status.as_str(),
        label = c.status.label(),
        desc = if c.description.is_empty() {
            String::new()
        } else {
            format!("<p class=\"meta\">{}</p>", esc(&c.description))
        },
    );
    for (bar, _) in bars {
        let (class, words) = match bar.uptime {
            None => ("none".to_owned(), "no data".to_owned()),
            Some(u) => (
                bar.worst.as_str().to_owned(),
                format!(
                    "{:.2}% uptime, worst: {}",
                    u * 100.0,
                    bar.worst.label().to_lowercase()
                ),
            ),
        };
        let _ = write!(
            b,
            "<span class=\"b-{class}\" title=\"{}: {words}\"></span>",
            &rfc3339(bar.day * crate::record::DAY_MS)[..10]
        );
    }
    let _ = write!(
        b,
        "</div><div class=\"legend\" aria-hidden=\"true\"><span>90 days ago</span><span>{uptime}</span><span>Today</span></div></li>"
    );
}

fn incident(b: &mut String, i: &Incident, open: bool) {
    let when = match (i.scheduled_for, i.scheduled_until) {
        (Some(from), Some(until)) => format!(
            "<p class=\"meta\">Scheduled from {} to {}</p>",
            rfc3339(from),
            rfc3339(until)
        ),
        _ => String::new(),
    };
    let _ = write!(
        b,
        "<article class=\"inc\" id=\"{id}\"><h3>{name}</h3><p class=\"meta\">{status}{impact}</p>{when}",
        id = esc(&i.id),
        name = esc(&i.name),
        status = esc(&title_case(&i.status)),
        impact = if open && i.kind == IncidentKind::Incident {
            format!(" · impact: {}", esc(&i.impact))
        } else {
            String::new()
        },
    );
    for u in &i.updates {
        let _ = write!(
            b,
            "<div class=\"upd\"><strong>{}</strong> - {} <span class=\"meta\"><time datetime=\"{t}\">{t}</time></span></div>",
            esc(&title_case(&u.status)),
            esc(&u.body),
            t = esc(&u.created_at),
        );
    }
    b.push_str("</article>");
}

/// `in_progress` as `In progress`.
pub fn title_case(status: &str) -> String {
    let words = status.replace('_', " ");
    let mut chars = words.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
