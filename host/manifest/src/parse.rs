//! Reads a manifest from its JSON, reporting every invalid field at once
//! with its path in the document (`apps[1].env.DATABASE_URL`), before
//! anything is looked up or changed.

use std::collections::{BTreeMap, HashSet};

use plateau_api::error::ApiError;
use plateau_api::json::Validator;
use serde_json::{Map, Value};

use crate::model::{AppSpec, DatabaseSpec, Kind, Manifest, RedisSpec};
use crate::refs::{Template, is_item_name};

/// The most items of one kind a manifest may hold.
pub const MAX_ITEMS: usize = 50;

/// Parses and checks `body`; a 400 naming each invalid field.
pub fn parse(body: &Value) -> Result<Manifest, ApiError> {
    let mut v = Validator::new();
    let manifest = read(body, &mut v);
    v.finish()?;
    let manifest = manifest.unwrap_or_default();
    check_references(&manifest, &mut v);
    v.finish()?;
    Ok(manifest)
}

/// One object's fields, each taken once; what is left is unknown.
struct Fields<'a> {
    path: String,
    map: Map<String, Value>,
    v: &'a mut Validator,
}

impl<'a> Fields<'a> {
    fn of(value: &Value, path: &str, v: &'a mut Validator) -> Option<Fields<'a>> {
        match value {
            Value::Object(map) => Some(Fields {
                path: path.to_owned(),
                map: map.clone(),
                v,
            }),
            _ => {
                v.error(path_or_body(path), "must be an object");
                None
            }
        }
    }

    fn at(&self, field: &str) -> String {
        if self.path.is_empty() {
            field.to_owned()
        } else {
            format!("{}.{field}", self.path)
        }
    }

    fn take(&mut self, field: &str) -> Option<Value> {
        self.map.remove(field).filter(|v| !v.is_null())
    }

    fn string(&mut self, field: &str) -> Option<String> {
        let at = self.at(field);
        match self.take(field)? {
            Value::String(s) => Some(s),
            _ => {
                self.v.error(at, "must be a string");
                None
            }
        }
    }

    fn integer(&mut self, field: &str, min: i64, max: i64) -> Option<i64> {
        let at = self.at(field);
        let n = self.take(field)?;
        match n.as_i64() {
            Some(n) if (min..=max).contains(&n) => Some(n),
            Some(_) => {
                self.v.error(at, format!("must be between {min} and {max}"));
                None
            }
            None => {
                self.v.error(at, "must be an integer");
                None
            }
        }
    }

    fn boolean(&mut self, field: &str) -> Option<bool> {
        let at = self.at(field);
        match self.take(field)? {
            Value::Bool(b) => Some(b),
            _ => {
                self.v.error(at, "must be true or false");
                None
            }
        }
    }

    /// The item's name, required and referenceable.
    fn name(&mut self) -> String {
        let at = self.at("name");
        match self.string("name") {
            Some(n) if is_item_name(&n) => n,
            Some(_) => {
                self.v.error(
                    at,
                    "must be 1 to 63 letters, digits, - or _, starting with a letter or digit",
                );
                String::new()
            }
            None => {
                self.v.error(at, "is required");
                String::new()
            }
        }
    }

    /// Refuses the fields no one took.
    fn done(self) {
        for field in self.map.keys() {
            let at = if self.path.is_empty() {
                field.clone()
            } else {
                format!("{}.{field}", self.path)
            };
            self.v.error(at, "is not a field of this object");
        }
    }
}

fn path_or_body(path: &str) -> &str {
    if path.is_empty() { "body" } else { path }
}

fn read(body: &Value, v: &mut Validator) -> Option<Manifest> {
    let mut f = Fields::of(body, "", v)?;
    let project = f.string("project");
    match &project {
        None => {
            f.v.error("project", "is required");
        }
        Some(p) => {
            f.v.name("project", p);
        }
    }
    let prune = f.boolean("prune").unwrap_or(false);
    let databases = list(&mut f, "databases", false, read_database);
    let redis = list(&mut f, "redis", false, read_redis);
    let apps = list(&mut f, "apps", true, read_app);
    f.done();
    Some(Manifest {
        project: project.unwrap_or_default().trim().to_owned(),
        prune,
        databases,
        redis,
        apps,
    })
}

/// The items of section `field`, each read with `item` and named once.
fn list<T>(
    f: &mut Fields,
    field: &str,
    required: bool,
    item: fn(&Value, &str, &mut Validator) -> Option<T>,
) -> Vec<T>
where
    T: Named,
{
    let at = f.at(field);
    let items = match f.take(field) {
        None if required => {
            f.v.error(at, "is required (an empty array is allowed)");
            return Vec::new();
        }
        None => return Vec::new(),
        Some(Value::Array(items)) => items,
        Some(_) => {
            f.v.error(at, "must be an array of objects");
            return Vec::new();
        }
    };
    if items.len() > MAX_ITEMS {
        f.v.error(at, format!("must hold at most {MAX_ITEMS} items"));
        return Vec::new();
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (i, value) in items.iter().enumerate() {
        let path = format!("{at}[{i}]");
        if let Some(parsed) = item(value, &path, f.v) {
            if !parsed.name().is_empty() && !seen.insert(parsed.name().to_owned()) {
                f.v.error(
                    format!("{path}.name"),
                    format!("{field} has two items named {:?}", parsed.name()),
                );
            }
            out.push(parsed);
        }
    }
    out
}

trait Named {
    fn name(&self) -> &str;
}

impl Named for DatabaseSpec {
    fn name(&self) -> &str {
        &self.name
    }
}

impl Named for RedisSpec {
    fn name(&self) -> &str {
        &self.name
    }
}

impl Named for AppSpec {
    fn name(&self) -> &str {
        &self.name
    }
}

fn read_database(value: &Value, path: &str, v: &mut Validator) -> Option<DatabaseSpec> {
    let mut f = Fields::of(value, path, v)?;
    let at = f.at("version");
    let version = f.string("version");
    if let Some(version) = &version
        && !plateau_databases::spec::VERSIONS.contains(&version.as_str())
    {
        f.v.error(at, "must be one of 15, 16, 17");
    }
    let d = DatabaseSpec {
        name: f.name(),
        version,
        replicas: f.integer("replicas", 0, 16),
        memory_mb: f.integer("memoryMb", 64, 1 << 20),
        cpus: f.integer("cpus", 1, 256),
        disk_gb: f.integer("diskGb", 1, 1 << 16),
        backup_retention_days: f.integer("backupRetentionDays", 1, 35),
    };
    f.done();
    Some(d)
}

fn read_redis(value: &Value, path: &str, v: &mut Validator) -> Option<RedisSpec> {
    let mut f = Fields::of(value, path, v)?;
    let policy_at = f.at("evictionPolicy");
    let persistence_at = f.at("persistence");
    let r = RedisSpec {
        name: f.name(),
        memory_mb: f.integer(
            "memoryMb",
            plateau_cache::api::caches::MIN_MEMORY_MB,
            1 << 20,
        ),
        eviction_policy: f.string("evictionPolicy"),
        replicas: f.integer("replicas", 0, 16),
        persistence: f.string("persistence"),
        tls: f.boolean("tls"),
    };
    if let Some(Err(m)) = r
        .eviction_policy
        .as_deref()
        .map(str::parse::<plateau_cache::EvictionPolicy>)
    {
        f.v.error(policy_at, m);
    }
    if let Some(Err(m)) = r
        .persistence
        .as_deref()
        .map(str::parse::<plateau_cache::Persistence>)
    {
        f.v.error(persistence_at, m);
    }
    f.done();
    Some(r)
}

fn read_app(value: &Value, path: &str, v: &mut Validator) -> Option<AppSpec> {
    let mut f = Fields::of(value, path, v)?;
    let name = f.name();
    let image_at = f.at("image");
    let image = match f.string("image") {
        Some(i) => {
            if let Err(m) = plateau_apps::image::parse_reference(i.trim()) {
                f.v.error(image_at, m);
            }
            i.trim().to_owned()
        }
        None => {
            f.v.error(image_at, "is required: an OCI reference to deploy");
            String::new()
        }
    };
    let port = f.integer("port", 1, 65535);
    let health_at = f.at("healthCheckPath");
    let health_check_path = f.string("healthCheckPath");
    if let Some(h) = &health_check_path
        && (!h.starts_with('/')
            || h.chars().count() > 512
            || h.contains(|c: char| c.is_whitespace() || c.is_control()))
    {
        f.v.error(health_at, "must be a path starting with /");
    }
    let env_at = f.at("env");
    let mut env = BTreeMap::new();
    match f.take("env") {
        None => {}
        Some(Value::Object(vars)) => {
            if vars.len() > plateau_apps::env::MAX_VARS {
                f.v.error(
                    env_at.clone(),
                    format!(
                        "an app has at most {} variables",
                        plateau_apps::env::MAX_VARS
                    ),
                );
            }
            for (key, value) in vars {
                let at = format!("{env_at}.{key}");
                let Some(text) = value.as_str() else {
                    f.v.error(at, "must be a string");
                    continue;
                };
                if let Some(m) = plateau_apps::env::check(&key, text) {
                    f.v.error(at, m);
                    continue;
                }
                match Template::parse(text) {
                    Ok(t) => {
                        env.insert(key, t);
                    }
                    Err(m) => {
                        f.v.error(at, m);
                    }
                }
            }
        }
        Some(_) => {
            f.v.error(env_at, "must be an object of names to values");
        }
    }
    f.done();
    Some(AppSpec {
        name,
        image,
        port,
        health_check_path,
        env,
    })
}

/// Every reference names an item of the manifest.
fn check_references(m: &Manifest, v: &mut Validator) {
    let known: HashSet<_> = m.keys().into_iter().map(|(k, _)| k).collect();
    for (i, app) in m.apps.iter().enumerate() {
        for (key, template) in &app.env {
            for r in template.refs() {
                if !known.contains(&r.key) {
                    v.error(
                        format!("apps[{i}].env.{key}"),
                        format!(
                            "{r} names no item of this manifest: no {} named {:?}",
                            r.key.kind.section(),
                            r.key.name
                        ),
                    );
                } else if r.key.kind == Kind::App && r.key.name == app.name {
                    v.error(
                        format!("apps[{i}].env.{key}"),
                        format!("{r}: an app cannot refer to itself"),
                    );
                }
            }
        }
    }
}
