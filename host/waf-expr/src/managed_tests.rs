//! The managed rule set against a documented sample of requests, written
//! after the payloads of the OWASP Core Rule Set's regression tests (the
//! rule each sample follows is named): attacks that must match, benign
//! requests (ordinary pages, searches, APIs and forms, including text that
//! looks like an attack to a naive rule) that must not. Prints the
//! detection and false-positive rates; fails below 90% detection or
//! above 5% false positives.

use crate::Request;
use crate::managed::compiled;

/// `(CRS rule, method, path, query, user agent, cookie)`.
type Sample = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

const UA: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

const ATTACKS: &[Sample] = &[
    (
        "942100",
        "GET",
        "/items",
        "id=1%27%20or%20%271%27=%271",
        UA,
        "",
    ),
    (
        "942100",
        "GET",
        "/items",
        "id=1%20UNION%20ALL%20SELECT%20username,password%20FROM%20users",
        UA,
        "",
    ),
    ("942130", "GET", "/items", "id=1%20and%201=1", UA, ""),
    ("942160", "GET", "/items", "id=1;SELECT%20SLEEP(5)", UA, ""),
    (
        "942160",
        "GET",
        "/search",
        "q=1%27%20AND%20(SELECT%201%20FROM%20(SELECT(SLEEP(5)))a)--%20",
        UA,
        "",
    ),
    ("942190", "GET", "/login", "user=admin%27--&pass=x", UA, ""),
    (
        "942140",
        "GET",
        "/items",
        "id=1%20union%20select%20table_name%20from%20information_schema.tables",
        UA,
        "",
    ),
    (
        "942350",
        "GET",
        "/items",
        "id=1;%20DROP%20TABLE%20users",
        UA,
        "",
    ),
    (
        "942200",
        "GET",
        "/items",
        "id=1%27%20||%20%27a%27=%27a",
        UA,
        "",
    ),
    (
        "942160",
        "GET",
        "/items",
        "id=1%20WAITFOR%20DELAY%20%270:0:5%27",
        UA,
        "",
    ),
    (
        "942100",
        "GET",
        "/profile",
        "",
        UA,
        "session=abc%27%20or%20%271%27=%271",
    ),
    (
        "942240",
        "GET",
        "/items",
        "id=1%27;exec%20xp_cmdshell%20%27dir%27--",
        UA,
        "",
    ),
    (
        "941100",
        "GET",
        "/search",
        "q=%3Cscript%3Ealert(1)%3C/script%3E",
        UA,
        "",
    ),
    (
        "941110",
        "GET",
        "/search",
        "q=%3Cimg%20src=x%20onerror=alert(1)%3E",
        UA,
        "",
    ),
    (
        "941160",
        "GET",
        "/search",
        "q=%3Csvg/onload=alert(document.cookie)%3E",
        UA,
        "",
    ),
    (
        "941170",
        "GET",
        "/redirect",
        "to=javascript:alert(1)",
        UA,
        "",
    ),
    (
        "941130",
        "GET",
        "/search",
        "q=%3Ciframe%20src=%22http://evil%22%3E",
        UA,
        "",
    ),
    (
        "941180",
        "GET",
        "/search",
        "q=%22%3E%3Cbody%20onload=prompt(1)%3E",
        UA,
        "",
    ),
    (
        "941100",
        "GET",
        "/search",
        "q=%253Cscript%253Ealert(1)%253C%252Fscript%253E",
        UA,
        "",
    ),
    (
        "941120",
        "GET",
        "/search",
        "q=%3Cdetails%20open%20ontoggle=confirm(1)%3E",
        UA,
        "",
    ),
    (
        "930100",
        "GET",
        "/static/..%2F..%2F..%2Fetc%2Fpasswd",
        "",
        UA,
        "",
    ),
    (
        "930110",
        "GET",
        "/download",
        "file=../../../../etc/passwd",
        UA,
        "",
    ),
    (
        "930110",
        "GET",
        "/download",
        "file=..%5C..%5Cwindows%5Cwin.ini",
        UA,
        "",
    ),
    (
        "930100",
        "GET",
        "/download",
        "file=%252e%252e%252fetc%252fshadow",
        UA,
        "",
    ),
    (
        "930120",
        "GET",
        "/download",
        "file=/proc/self/environ",
        UA,
        "",
    ),
    ("930120", "GET", "/.htaccess", "", UA, ""),
    (
        "913100",
        "GET",
        "/",
        "",
        "sqlmap/1.7.2#stable (https://sqlmap.org)",
        "",
    ),
    (
        "913100",
        "GET",
        "/",
        "",
        "Mozilla/5.00 (Nikto/2.1.6) (Evasions:None) (Test:000001)",
        "",
    ),
    (
        "913100",
        "GET",
        "/wp-login.php",
        "",
        "WPScan v3.8.22 (https://wpscan.com/wordpress-security-scanner)",
        "",
    ),
    (
        "913100",
        "GET",
        "/",
        "",
        "Mozilla/5.0 (compatible; Nuclei - Open-source project (github.com/projectdiscovery/nuclei))",
        "",
    ),
    (
        "913100",
        "GET",
        "/admin",
        "",
        "Fuzz Faster U Fool v2.1.0",
        "",
    ),
    ("911100", "TRACK", "/", "", UA, ""),
    ("920320", "GET", "/", "", "", ""),
];

const BENIGN: &[Sample] = &[
    ("920100", "GET", "/", "", UA, ""),
    (
        "920100",
        "GET",
        "/about",
        "",
        UA,
        "session=7f3a9c; theme=dark",
    ),
    (
        "920100",
        "GET",
        "/search",
        "q=how+to+select+a+union+representative",
        UA,
        "",
    ),
    (
        "920100",
        "GET",
        "/search",
        "q=drop+shipping+and+order+fulfilment",
        UA,
        "",
    ),
    ("920100", "GET", "/search", "q=rock+%26+roll", UA, ""),
    ("920100", "GET", "/search", "q=O%27Brien", UA, ""),
    ("920100", "GET", "/search", "q=it%27s+a+nice+day", UA, ""),
    ("920100", "GET", "/search", "q=1%2B1%3D2", UA, ""),
    ("920100", "GET", "/search", "q=script+writing+tips", UA, ""),
    ("920100", "GET", "/search", "q=%3C3+love", UA, ""),
    (
        "920100",
        "GET",
        "/blog/2024/03/select-from-a-menu",
        "",
        UA,
        "",
    ),
    (
        "920100",
        "GET",
        "/products",
        "category=shoes&sort=price&order=asc&page=2",
        UA,
        "",
    ),
    ("920100", "GET", "/products", "filter=price%3E100", UA, ""),
    ("920100", "GET", "/static/js/app.9f8e7d.js", "", UA, ""),
    ("920100", "GET", "/static/css/main.css", "v=3", UA, ""),
    ("920100", "GET", "/images/logo.svg", "", UA, ""),
    ("920100", "POST", "/api/orders", "", "okhttp/4.12.0", ""),
    (
        "920100",
        "GET",
        "/api/v1/users",
        "limit=50&cursor=eyJpZCI6MTJ9",
        "curl/8.5.0",
        "",
    ),
    (
        "920100",
        "PUT",
        "/api/v1/users/42",
        "",
        "python-requests/2.31.0",
        "",
    ),
    (
        "920100",
        "DELETE",
        "/api/v1/sessions/current",
        "",
        "Go-http-client/1.1",
        "",
    ),
    ("920100", "OPTIONS", "/api/v1/users", "", UA, ""),
    ("920100", "HEAD", "/health", "", "kube-probe/1.29", ""),
    ("920100", "GET", "/docs/sql/union-and-select", "", UA, ""),
    (
        "920100",
        "GET",
        "/redirect",
        "to=https%3A%2F%2Fexample.com%2Fcallback%3Fa%3D1",
        UA,
        "",
    ),
    ("920100", "GET", "/wiki/Path_(computing)", "", UA, ""),
    ("920100", "GET", "/files/report..final.pdf", "", UA, ""),
    (
        "920100",
        "GET",
        "/",
        "utm_source=newsletter&utm_medium=email&utm_campaign=spring",
        UA,
        "",
    ),
    (
        "920100",
        "GET",
        "/",
        "",
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        "",
    ),
    (
        "920100",
        "GET",
        "/",
        "",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148 Safari/604.1",
        "",
    ),
    (
        "920100",
        "GET",
        "/login",
        "next=%2Fdashboard%2Fsettings",
        UA,
        "",
    ),
    (
        "920100",
        "GET",
        "/calendar",
        "from=2024-01-01&to=2024-12-31",
        UA,
        "",
    ),
    ("920100", "GET", "/search", "q=javascript+tutorial", UA, ""),
    (
        "920100",
        "GET",
        "/search",
        "q=onload+event+in+react",
        UA,
        "",
    ),
    ("920100", "GET", "/search", "q=and+or+not", UA, ""),
];

fn matched(
    sample: &Sample,
    rules: &[(&crate::managed::ManagedRule, crate::Program)],
) -> Option<&'static str> {
    let (_, method, path, query, ua, cookie) = *sample;
    let mut headers = vec![("accept".to_owned(), "text/html".to_owned())];
    if !ua.is_empty() {
        headers.push(("user-agent".to_owned(), ua.to_owned()));
    }
    if !cookie.is_empty() {
        headers.push(("cookie".to_owned(), cookie.to_owned()));
    }
    let request = Request {
        method,
        path,
        query,
        host: "shop.example.com",
        headers: &headers,
        ip: Some("198.51.100.7".parse().unwrap()),
    };
    rules
        .iter()
        .find(|(_, program)| program.matches(&request))
        .map(|(rule, _)| rule.id)
}

#[test]
fn managed_rules_detect_the_sample_attacks_and_pass_the_benign_requests() {
    let rules = compiled();
    let missed: Vec<&Sample> = ATTACKS
        .iter()
        .filter(|s| matched(s, &rules).is_none())
        .collect();
    let false_positives: Vec<(&Sample, &str)> = BENIGN
        .iter()
        .filter_map(|s| matched(s, &rules).map(|id| (s, id)))
        .collect();
    let detection = 100.0 * (ATTACKS.len() - missed.len()) as f64 / ATTACKS.len() as f64;
    let fp_rate = 100.0 * false_positives.len() as f64 / BENIGN.len() as f64;
    eprintln!(
        "managed rules: detected {}/{} attacks ({detection:.1}%), {} false positives of {} benign requests ({fp_rate:.1}%)",
        ATTACKS.len() - missed.len(),
        ATTACKS.len(),
        false_positives.len(),
        BENIGN.len()
    );
    for s in &missed {
        eprintln!(
            "  missed (CRS {}): {} {}?{} ua={:?} cookie={:?}",
            s.0, s.1, s.2, s.3, s.4, s.5
        );
    }
    for (s, id) in &false_positives {
        eprintln!(
            "  false positive ({id}): {} {}?{} ua={:?}",
            s.1, s.2, s.3, s.4
        );
    }
    assert!(detection >= 90.0, "detection {detection:.1}%");
    assert!(fp_rate <= 5.0, "false positives {fp_rate:.1}%");
}
