//! CORS per bucket: PutBucketCors, GetBucketCors, DeleteBucketCors (the
//! rules kept as the bucket's `cors` setting, JSON), the preflight
//! `OPTIONS` answered before `s3s` sees it, and the CORS headers added to
//! every response (errors too) to a request that names an `Origin`.
//!
//! A rule applies when the origin matches one of its origins (each may
//! hold one `*`), the method (`Access-Control-Request-Method` when sent)
//! is one of its methods and, on a preflight, every requested header
//! matches one of its headers; the first such rule answers, as in S3.

use http::{HeaderMap, HeaderValue, Method, Response, StatusCode};
use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::{Front, internal};
use crate::Storage;

/// The bucket setting the rules are kept under.
pub(crate) const KIND: &str = "cors";
const METHODS: [&str; 5] = ["GET", "PUT", "POST", "DELETE", "HEAD"];
const MAX_RULES: usize = 100;

pub(super) async fn put(
    front: &Front,
    req: S3Request<PutBucketCorsInput>,
) -> S3Result<S3Response<PutBucketCorsOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    let config = &req.input.cors_configuration;
    check(config)?;
    let json = serde_json::to_string(config)
        .map_err(|e| internal(crate::error::Error::Internal(e.to_string())))?;
    front.put_setting(&bucket, KIND, Some(&json)).await?;
    Ok(S3Response::new(PutBucketCorsOutput::default()))
}

pub(super) async fn get(
    front: &Front,
    req: S3Request<GetBucketCorsInput>,
) -> S3Result<S3Response<GetBucketCorsOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, false).await?;
    let Some(config) = rules(&front.storage, &bucket).await? else {
        return Err(S3Error::with_message(
            S3ErrorCode::NoSuchCORSConfiguration,
            "the CORS configuration does not exist",
        ));
    };
    Ok(S3Response::new(GetBucketCorsOutput {
        cors_rules: Some(config.cors_rules),
    }))
}

pub(super) async fn delete(
    front: &Front,
    req: S3Request<DeleteBucketCorsInput>,
) -> S3Result<S3Response<DeleteBucketCorsOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    front.put_setting(&bucket, KIND, None).await?;
    Ok(S3Response::new(DeleteBucketCorsOutput::default()))
}

/// Refuses what S3 refuses: no rules, too many, a method it does not
/// know, an origin or header with more than one `*`.
fn check(config: &CORSConfiguration) -> S3Result<()> {
    let invalid = |m: String| Err(S3Error::with_message(S3ErrorCode::InvalidRequest, m));
    if config.cors_rules.is_empty() || config.cors_rules.len() > MAX_RULES {
        return invalid(format!(
            "CORSConfiguration: between 1 and {MAX_RULES} CORSRule"
        ));
    }
    for rule in &config.cors_rules {
        if rule.allowed_methods.is_empty() || rule.allowed_origins.is_empty() {
            return invalid("CORSRule: AllowedMethod and AllowedOrigin are required".into());
        }
        if let Some(m) = rule
            .allowed_methods
            .iter()
            .find(|m| !METHODS.contains(&m.as_str()))
        {
            return invalid(format!(
                "AllowedMethod: found unsupported HTTP method in CORS config. Unsupported method is {m}"
            ));
        }
        let patterns = rule
            .allowed_origins
            .iter()
            .chain(rule.allowed_headers.iter().flatten());
        if let Some(p) = patterns.into_iter().find(|p| p.matches('*').count() > 1) {
            return invalid(format!(
                "AllowedOrigin/AllowedHeader \"{p}\" can not have more than one wildcard"
            ));
        }
    }
    Ok(())
}

async fn rules(
    storage: &Storage,
    bucket: &crate::provider::Bucket,
) -> S3Result<Option<CORSConfiguration>> {
    let found = storage
        .provider()
        .bucket_setting(bucket, KIND)
        .await
        .map_err(internal)?;
    Ok(found.and_then(|json| serde_json::from_str(&json).ok()))
}

/// Whether `value` matches `pattern` (one `*` standing for any run of
/// characters), case-insensitively for headers.
fn matches(pattern: &str, value: &str, fold: bool) -> bool {
    let (p, v) = if fold {
        (pattern.to_ascii_lowercase(), value.to_ascii_lowercase())
    } else {
        (pattern.to_owned(), value.to_owned())
    };
    match p.split_once('*') {
        None => p == v,
        Some((head, tail)) => {
            v.len() >= head.len() + tail.len() && v.starts_with(head) && v.ends_with(tail)
        }
    }
}

/// The first rule allowing `origin` to use `method` with `headers`.
fn find<'a>(
    config: &'a CORSConfiguration,
    origin: &str,
    method: &str,
    headers: &[&str],
) -> Option<&'a CORSRule> {
    config.cors_rules.iter().find(|rule| {
        rule.allowed_origins
            .iter()
            .any(|o| matches(o, origin, false))
            && rule.allowed_methods.iter().any(|m| m == method)
            && headers.iter().all(|h| {
                rule.allowed_headers
                    .iter()
                    .flatten()
                    .any(|a| matches(a, h, true))
            })
    })
}

/// The headers that grant `origin` what `rule` allows.
fn grant(headers: &mut HeaderMap, rule: &CORSRule, origin: &str, requested: &[&str]) {
    let mut set = |name: &'static str, value: String| {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(name, v);
        }
    };
    let any = rule.allowed_origins.iter().any(|o| o == "*");
    set(
        "access-control-allow-origin",
        if any { "*".into() } else { origin.into() },
    );
    if !any {
        set("access-control-allow-credentials", "true".into());
    }
    set(
        "access-control-allow-methods",
        rule.allowed_methods.join(", "),
    );
    if !requested.is_empty() {
        set("access-control-allow-headers", requested.join(", "));
    }
    if let Some(expose) = rule.expose_headers.as_ref().filter(|e| !e.is_empty()) {
        set("access-control-expose-headers", expose.join(", "));
    }
    if let Some(age) = rule.max_age_seconds {
        set("access-control-max-age", age.to_string());
    }
    set(
        "vary",
        "Origin, Access-Control-Request-Headers, Access-Control-Request-Method".into(),
    );
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// What a request with an `Origin` needs to be answered with CORS
/// headers: the bucket's rules (None when the bucket has none or is
/// unknown), read once before the request goes on.
pub(super) struct Cors {
    config: CORSConfiguration,
    origin: String,
    method: String,
}

impl Cors {
    pub(super) async fn of(
        storage: &Storage,
        bucket: Option<&str>,
        headers: &HeaderMap,
        method: &Method,
    ) -> Option<Cors> {
        let origin = header(headers, "origin")?.to_owned();
        let found = storage.provider().bucket_by_name(bucket?).await.ok()??;
        let config = rules(storage, &found).await.ok()??;
        let method = header(headers, "access-control-request-method")
            .map_or_else(|| method.as_str().to_owned(), str::to_owned);
        Some(Cors {
            config,
            origin,
            method,
        })
    }

    /// Adds the headers of the rule that allows the request, if one does.
    pub(super) fn apply<B>(&self, response: &mut Response<B>) {
        if let Some(rule) = find(&self.config, &self.origin, &self.method, &[]) {
            grant(response.headers_mut(), rule, &self.origin, &[]);
        }
    }
}

/// The answer to a preflight `OPTIONS` on `bucket`.
pub(super) async fn preflight(
    storage: &Storage,
    bucket: Option<&str>,
    headers: &HeaderMap,
) -> Response<s3s::Body> {
    let (Some(origin), Some(method)) = (
        header(headers, "origin"),
        header(headers, "access-control-request-method"),
    ) else {
        return error(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "insufficient information: Origin and Access-Control-Request-Method are needed",
        );
    };
    let found = match bucket {
        Some(name) => storage.provider().bucket_by_name(name).await.ok().flatten(),
        None => None,
    };
    let Some(found) = found else {
        return error(
            StatusCode::FORBIDDEN,
            "CORSResponse",
            "CORS is not enabled for this bucket",
        );
    };
    let Ok(Some(config)) = rules(storage, &found).await else {
        return error(
            StatusCode::FORBIDDEN,
            "CORSResponse",
            "CORS is not enabled for this bucket",
        );
    };
    let requested: Vec<&str> = header(headers, "access-control-request-headers")
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .collect();
    let Some(rule) = find(&config, origin, method, &requested) else {
        return error(
            StatusCode::FORBIDDEN,
            "CORSResponse",
            "this CORS request is not allowed",
        );
    };
    let mut response = Response::new(s3s::Body::empty());
    grant(response.headers_mut(), rule, origin, &requested);
    response
}

fn error(status: StatusCode, code: &str, message: &str) -> Response<s3s::Body> {
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message></Error>"
    );
    let mut response = Response::new(s3s::Body::from(xml));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert("content-type", HeaderValue::from_static("application/xml"));
    response
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn wildcards_stand_for_any_run() {
        assert!(matches("*suffix", "foo.suffix", false));
        assert!(matches("start*end", "startend", false));
        assert!(!matches("start*end", "0start12end", false));
        assert!(!matches("*.put", "foo.suffix.get", false));
        assert!(matches("X-Amz-*", "x-amz-date", true));
        assert!(!matches("https://a.example", "https://b.example", false));
    }
}
