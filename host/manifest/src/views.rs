//! The manifest's documented shapes: the request body (read by
//! `parse`, described here for the OpenAPI document) and the plan and
//! apply answers.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// A stack: one project and its databases, caches and apps, each matched
/// by name. Strings in an app's `env` may hold `${{ kind.name.attribute }}`
/// references (`${{ databases.main.uri }}`, `${{ redis.cache.uri }}`,
/// `${{ apps.api.url }}`), resolved in dependency order.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ManifestBody {
    /// The project's name; created when no project has it.
    #[schema(schema_with = plateau_api::openapi::name_schema)]
    pub project: String,
    /// Delete the project's apps and databases the manifest does not name
    /// (what the plan lists as `delete-if-pruned`); false by default.
    pub prune: Option<bool>,
    #[schema(max_items = 50)]
    pub databases: Option<Vec<ManifestDatabase>>,
    #[schema(max_items = 50)]
    pub redis: Option<Vec<ManifestRedis>>,
    #[schema(max_items = 50)]
    pub apps: Vec<ManifestApp>,
}

/// A managed PostgreSQL database. Absent settings take the service's
/// defaults on creation and are left alone afterwards; of an existing
/// database only `backupRetentionDays` may change.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ManifestDatabase {
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")]
    pub name: String,
    #[schema(value_type = Option<String>, pattern = "^(15|16|17)$")]
    pub version: Option<String>,
    #[schema(minimum = 0, maximum = 16)]
    pub replicas: Option<i64>,
    #[schema(minimum = 64, maximum = 1048576)]
    pub memory_mb: Option<i64>,
    #[schema(minimum = 1, maximum = 256)]
    pub cpus: Option<i64>,
    #[schema(minimum = 1, maximum = 65536)]
    pub disk_gb: Option<i64>,
    #[schema(minimum = 1, maximum = 35)]
    pub backup_retention_days: Option<i64>,
}

/// A managed Redis cache. Absent settings as for databases; `tls` is
/// fixed at creation.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ManifestRedis {
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")]
    pub name: String,
    #[schema(minimum = 8, maximum = 1048576)]
    pub memory_mb: Option<i64>,
    #[schema(value_type = Option<plateau_cache::EvictionPolicy>)]
    pub eviction_policy: Option<String>,
    #[schema(minimum = 0, maximum = 16)]
    pub replicas: Option<i64>,
    #[schema(value_type = Option<plateau_cache::Persistence>)]
    pub persistence: Option<String>,
    pub tls: Option<bool>,
}

/// An app deployed from an image; a change of `image` or of a variable
/// makes a new deployment. `port` and `healthCheckPath` are fixed at
/// creation.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ManifestApp {
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")]
    pub name: String,
    /// An OCI reference the organisation's registry (or an allowed one)
    /// has.
    #[schema(min_length = 1)]
    pub image: String,
    #[schema(minimum = 1, maximum = 65535)]
    pub port: Option<i64>,
    #[schema(pattern = "^/[^\\s\\u0000-\\u001f\\u007f-\\u009f]{0,511}$")]
    pub health_check_path: Option<String>,
    /// Variables the manifest owns (the app's others are left alone);
    /// values may hold references.
    pub env: Option<std::collections::BTreeMap<String, String>>,
}

/// What a plan does to an item or a field, after Terraform's plan.
pub type Action = ManifestAction;

/// What a plan does to an item or a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ManifestAction {
    Create,
    Update,
    Unchanged,
    /// Not in the manifest: deleted by an apply with `prune: true`.
    DeleteIfPruned,
}

/// One field of an item.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestField {
    /// `memoryMb`, `image`, `env.DATABASE_URL`.
    pub field: String,
    pub action: ManifestAction,
    /// The value now (never for `sensitive` fields).
    pub from: Option<Value>,
    /// The value asked for (never for `sensitive` fields).
    pub to: Option<Value>,
    /// An environment variable: its value is not shown.
    pub sensitive: bool,
    /// False while the value depends on an item not yet created or
    /// running (Terraform's "known after apply").
    pub known: bool,
}

/// One item of a plan or of an apply.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestItem {
    /// `database`, `redis` or `app`.
    pub kind: String,
    pub name: String,
    /// `databases.main`: how references name it.
    pub key: String,
    /// Where it is in the manifest (`apps[1]`); null for items to prune.
    pub path: Option<String>,
    /// Its id, once it exists.
    pub id: Option<String>,
    pub action: ManifestAction,
    pub fields: Vec<ManifestField>,
    /// The deployment an apply started for an app.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment_id: Option<String>,
}

/// The project of a manifest.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ManifestProject {
    pub name: String,
    pub id: Option<String>,
    /// `create` or `unchanged`.
    pub action: ManifestAction,
}

/// How many items each action touches.
#[derive(Clone, Debug, Default, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestSummary {
    pub create: usize,
    pub update: usize,
    pub unchanged: usize,
    pub delete_if_pruned: usize,
}

/// A plan (dry run) or the outcome of an apply.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestPlan {
    pub project: ManifestProject,
    /// The items in the order they are applied (each after what its
    /// references name), then those to prune.
    pub items: Vec<ManifestItem>,
    pub prune: bool,
    pub summary: ManifestSummary,
    /// For an apply: whether anything was changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed: Option<bool>,
}

impl ManifestPlan {
    pub fn summarize(&mut self) {
        let mut s = ManifestSummary::default();
        for i in &self.items {
            match i.action {
                Action::Create => s.create += 1,
                Action::Update => s.update += 1,
                Action::Unchanged => s.unchanged += 1,
                Action::DeleteIfPruned => s.delete_if_pruned += 1,
            }
        }
        self.summary = s;
    }
}
