//! The managed rule set: expressions in this language for the attacks the
//! OWASP Core Rule Set's first paranoia level looks for (SQL injection,
//! cross-site scripting, path traversal, scanner user agents, protocol
//! anomalies), written after the CRS rules named in each entry. They read
//! the decoded query string, path, cookies and referer (a backslash in a
//! regular expression is written `\\\\` in a rule's string, whose own
//! escape is `\\`); `managed_tests.rs`
//! runs a documented sample of attack and benign requests and prints the
//! detection and false-positive rates.

/// One managed rule.
#[derive(Debug, Clone, Copy)]
pub struct ManagedRule {
    /// `plateau-managed-<category>-<n>`.
    pub id: &'static str,
    /// `sqli`, `xss`, `traversal`, `scanner` or `protocol`.
    pub category: &'static str,
    pub description: &'static str,
    pub expression: &'static str,
}

/// The set, in the order the edge runs it.
pub const MANAGED_RULES: &[ManagedRule] = &[
    ManagedRule {
        id: "plateau-managed-sqli-1",
        category: "sqli",
        description: "SQL injection: tautologies, UNION SELECT, stacked queries, time-based probes (CRS 942100, 942130, 942190, 942160)",
        expression: r#"url_decode(http.request.uri.query) matches "(?i)('|\")\s*(or|and|\|\||&&)\s*('|\"|\d|\w+\s*(=|like))|\bunion\b[\s\S]{0,40}\bselect\b|;\s*(drop|delete|insert|update|shutdown|exec)\b|\b(sleep|benchmark|pg_sleep)\s*\(|\bwaitfor\s+delay\b|\binformation_schema\b|\bload_file\s*\(|\binto\s+(out|dump)file\b|\b(or|and)\s+\d+\s*=\s*\d+|'\s*(--|#|/\*)|\bexec(\s|\+)+(s|x)p\w+""#,
    },
    ManagedRule {
        id: "plateau-managed-sqli-2",
        category: "sqli",
        description: "SQL injection in cookies and the path (CRS 942100 on REQUEST_COOKIES and REQUEST_FILENAME)",
        expression: r#"url_decode(http.cookie) matches "(?i)('|\")\s*(or|and)\s*('|\"|\d)|\bunion\b[\s\S]{0,40}\bselect\b|\b(sleep|benchmark)\s*\(" or url_decode(http.request.uri.path) matches "(?i)\bunion(\s|\+|/\*.*?\*/)+(all(\s|\+)+)?select\b|'\s*(or|and)\s+'""#,
    },
    ManagedRule {
        id: "plateau-managed-xss-1",
        category: "xss",
        description: "Cross-site scripting: script tags, event handlers, javascript: URLs, decoded twice (CRS 941100, 941110, 941160, 941170)",
        expression: r#"url_decode(url_decode(http.request.uri.query)) matches "(?i)<\s*/?\s*script\b|javascript\s*:|vbscript\s*:|<[^>]*\bon[a-z]+\s*=|<\s*(iframe|svg|object|embed|img|body|math|details|video|audio)\b|\bdocument\s*\.\s*(cookie|location|write)|\b(alert|prompt|confirm)\s*(\(|`)|\bsrcdoc\s*=|expression\s*\(" or url_decode(http.referer) matches "(?i)<\s*script\b|javascript\s*:""#,
    },
    ManagedRule {
        id: "plateau-managed-traversal-1",
        category: "traversal",
        description: "Path traversal and local file access (CRS 930100, 930110, 930120)",
        expression: r#"url_decode(http.request.uri) matches "(?i)(\.\.|%2e%2e|%252e)(/|\\\\|%2f|%5c)|(/|\\\\)\.\.$|/etc/(passwd|shadow|hosts|group)\b|\bc:(\\\\|/)windows\b|\bboot\.ini\b|/proc/self/|\bweb-inf/web\.xml\b|\.(htaccess|htpasswd)\b""#,
    },
    ManagedRule {
        id: "plateau-managed-scanner-1",
        category: "scanner",
        description: "Security scanners and attack tools by user agent (CRS 913100)",
        expression: r#"lower(http.user_agent) matches "sqlmap|nikto|nmap|masscan|acunetix|nessus|openvas|wpscan|dirbuster|gobuster|ffuf|nuclei|zgrab|w3af|havij|netsparker|arachni|whatweb|feroxbuster|wfuzz|fuzz faster u fool|hydra|jaeles|commix|appscan|webinspect|zmeu|morfeus""#,
    },
    ManagedRule {
        id: "plateau-managed-protocol-1",
        category: "protocol",
        description: "Protocol anomalies: an unknown method, no Host, no or an empty User-Agent on a non-API request (CRS 911100, 920280, 920320)",
        expression: r#"not http.request.method in {"GET" "HEAD" "POST" "PUT" "PATCH" "DELETE" "OPTIONS"} or http.host eq "" or (len(http.user_agent) eq 0 and not http.request.headers["accept"] contains "json")"#,
    },
];

/// The managed rules compiled, with their ids.
pub fn compiled() -> Vec<(&'static ManagedRule, crate::Program)> {
    MANAGED_RULES
        .iter()
        .map(|r| {
            let program = crate::compile(r.expression)
                .unwrap_or_else(|e| panic!("managed rule {} does not compile: {e}", r.id));
            (r, program)
        })
        .collect()
}
