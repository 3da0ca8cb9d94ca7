//! `/apps/{id}/volumes` and their backups: a create or delete records
//! desired state and answers at once (the agent of the volume's host
//! makes, mounts, unmounts and removes: [`crate::volumes`]); a backup is
//! taken while the request waits and listed with its size and time; a
//! restore makes a NEW volume of the app from a backup.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::{Extension, Json};
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_core::id::new_id;
use plateau_core::time;
use plateau_store::apps::volumes::{self as db, Backup, Refused, Volume};
use plateau_store::events::NewEvent;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::{load, load_live_in};
use crate::{Apps, Volumes};

/// The largest volume, in GB.
pub const MAX_SIZE_GB: i64 = 1000;
/// Directories a volume may not hide.
const RESERVED: &[&str] = &[
    "/proc", "/dev", "/sys", "/tmp", "/etc", "/bin", "/lib", "/usr",
];

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeView {
    pub id: String,
    pub app_id: String,
    pub name: String,
    pub size_gb: i64,
    pub mount_path: String,
    /// creating, running, degraded, deleting or failed.
    pub status: String,
    pub status_detail: Option<String>,
    /// The backup it was restored from.
    pub source_backup_id: Option<String>,
    pub created_at: String,
}

impl From<Volume> for VolumeView {
    fn from(v: Volume) -> Self {
        VolumeView {
            id: v.id,
            app_id: v.app_id,
            name: v.name,
            size_gb: v.size_gb,
            mount_path: v.mount_path,
            status: v.status,
            status_detail: v.status_detail,
            source_backup_id: v.source_backup_id,
            created_at: time::to_rfc3339(v.created_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct VolumeList {
    pub items: Vec<VolumeView>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupView {
    pub id: String,
    pub volume_id: String,
    pub volume_name: String,
    pub size_gb: i64,
    /// Bytes stored (the volume's written blocks).
    pub size_bytes: i64,
    pub created_at: String,
}

impl From<Backup> for BackupView {
    fn from(b: Backup) -> Self {
        BackupView {
            id: b.id,
            volume_id: b.volume_id,
            volume_name: b.volume_name,
            size_gb: b.size_gb,
            size_bytes: b.size_bytes,
            created_at: time::to_rfc3339(b.created_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct BackupList {
    pub items: Vec<BackupView>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateVolume {
    pub name: Option<String>,
    /// 1 to 1000; counts against the plan's storage.
    pub size_gb: Option<i64>,
    /// Absolute path inside the replicas.
    pub mount_path: Option<String>,
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RestoreBackup {
    /// Default: the backed-up volume's name and the backup's id tail.
    pub name: Option<String>,
    /// Default: the backed-up volume's path and the same tail.
    pub mount_path: Option<String>,
}

fn check_name(name: &str) -> Result<(), ApiError> {
    let ok = (1..=63).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid(
            "name",
            "1 to 63 lowercase letters, digits and hyphens, starting with a letter",
        ))
    }
}

fn check_mount_path(path: &str) -> Result<(), ApiError> {
    let bad = |why: &str| Err(ApiError::invalid("mountPath", why));
    if !path.starts_with('/') || path.len() > 255 || path.ends_with('/') {
        return bad("an absolute path of at most 255 characters, without a trailing slash");
    }
    if path
        .split('/')
        .skip(1)
        .any(|p| p.is_empty() || p == "." || p == "..")
        || !path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/_.-".contains(c))
    {
        return bad("letters, digits, '/', '_', '.' and '-' only, with no empty, '.' or '..' part");
    }
    if RESERVED
        .iter()
        .any(|r| path == *r || path.starts_with(&format!("{r}/")))
    {
        return bad("must not be or be under /proc, /dev, /sys, /tmp, /etc, /bin, /lib or /usr");
    }
    Ok(())
}

/// Whether one mount path is the other or under it: a volume mounted
/// inside another would have its mount point made in the other's files.
fn overlaps(a: &str, b: &str) -> bool {
    let under = |x: &str, y: &str| x.strip_prefix(y).is_some_and(|rest| rest.starts_with('/'));
    a == b || under(a, b) || under(b, a)
}

/// Records volume `v` (in `creating`) for the app; 409 beyond the plan's
/// storage or for a name the app has already, 400 for a mount path
/// overlapping one of its volumes'.
async fn record(
    apps: &Apps,
    caller: &Caller,
    mut v: Volume,
    kind: &str,
) -> Result<Volume, ApiError> {
    let mut tx = apps.db().begin().await?;
    let app = load_live_in(&mut tx, caller, &v.app_id).await?;
    // Made where the app runs (this host until it is placed), never
    // while it moves.
    if let Some(placed) = plateau_store::runners::placement_in(&mut tx, &app.id).await? {
        if placed.target_runner_id.is_some() {
            return Err(ApiError::conflict(
                "migration_in_progress",
                format!(
                    "app {} is moving to another runner; retry once it moved",
                    app.id
                ),
            ));
        }
        v.host_id = placed.runner_id;
    }
    for other in db::list_in(&mut tx, &app.id).await? {
        if other.name == v.name {
            return Err(ApiError::conflict(
                "volume_exists",
                format!("the app has a volume named {}", v.name),
            ));
        }
        if overlaps(&other.mount_path, &v.mount_path) {
            return Err(ApiError::invalid(
                "mountPath",
                format!(
                    "volume {} is mounted at {}; a mount path may not be, contain or be inside another's",
                    other.name, other.mount_path
                ),
            ));
        }
    }
    let e = NewEvent::audited(&app.org_id, kind, "resources", "create", &caller.actor())
        .resource("volume", &v.id)
        .data(
            json!({ "appId": app.id, "name": v.name, "sizeGb": v.size_gb,
                      "mountPath": v.mount_path, "sourceBackupId": v.source_backup_id }),
        );
    match db::insert(&mut tx, &v, &e).await {
        Ok(()) => {}
        Err(Refused::Quota { storage_gb, used }) => {
            return Err(ApiError::conflict(
                "plan_limit_reached",
                format!(
                    "a {} GB volume passes the plan's {storage_gb} GB of storage \
                     ({:.1} GB used); delete volumes, backups or objects, or move to a larger plan",
                    v.size_gb,
                    used as f64 / db::GB as f64
                ),
            ));
        }
        Err(Refused::Store(e)) => return Err(e.into()),
    }
    tx.commit_last().await?;
    Ok(v)
}

fn new_volume(apps_host: &str, org_id: &str, app_id: &str) -> Volume {
    let now = time::now_ms();
    Volume {
        id: new_id("vol"),
        org_id: org_id.to_owned(),
        app_id: app_id.to_owned(),
        name: String::new(),
        size_gb: 1,
        mount_path: String::new(),
        host_id: apps_host.to_owned(),
        source_backup_id: None,
        status: "creating".to_owned(),
        status_detail: None,
        placement: String::new(),
        created_at: now,
        updated_at: now,
    }
}

/// The app's volumes.
#[utoipa::path(get, path = "/apps/{id}/volumes", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id")),
    responses((status = 200, description = "the app's volumes", body = VolumeList)))]
pub async fn list(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<VolumeList>, ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    let items = db::list(apps.db(), &app.id).await?;
    Ok(Json(VolumeList {
        items: items.into_iter().map(Into::into).collect(),
    }))
}

/// Create a volume and attach it: the app's replicas are relaunched with
/// it mounted at `mountPath` once it is made (status `running`).
#[utoipa::path(post, path = "/apps/{id}/volumes", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    request_body = CreateVolume,
    responses((status = 201, description = "the volume, creating", body = VolumeView),
              (status = 409, description = "a name or path taken, or the plan's storage reached", body = plateau_api::error::Problem)))]
pub async fn create(
    Extension(apps): Extension<Apps>,
    Extension(volumes): Extension<Volumes>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<CreateVolume>,
) -> Result<(StatusCode, Json<VolumeView>), ApiError> {
    let name = input
        .name
        .ok_or_else(|| ApiError::invalid("name", "is required"))?;
    check_name(&name)?;
    let size_gb = input
        .size_gb
        .ok_or_else(|| ApiError::invalid("sizeGb", "is required"))?;
    if !(1..=MAX_SIZE_GB).contains(&size_gb) {
        return Err(ApiError::invalid("sizeGb", "must be 1 to 1000"));
    }
    let mount_path = input
        .mount_path
        .ok_or_else(|| ApiError::invalid("mountPath", "is required"))?;
    check_mount_path(&mount_path)?;
    let mut v = new_volume(volumes.host_id(), &caller.org_id, &id);
    v.name = name;
    v.size_gb = size_gb;
    v.mount_path = mount_path;
    let v = record(&apps, &caller, v, "app.volume.created").await?;
    Ok((StatusCode::CREATED, Json(v.into())))
}

/// The caller's volume `vol_id` of app `id`.
async fn load_volume(
    apps: &Apps,
    caller: &Caller,
    id: &str,
    vol_id: &str,
) -> Result<Volume, ApiError> {
    let app = load(apps.db(), caller, id).await?;
    db::get(apps.db(), &app.org_id, &app.id, vol_id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("volume {vol_id} of app {id} does not exist")))
}

/// Detach and delete a volume: the replicas are relaunched without it,
/// then its data is removed (its backups stay).
#[utoipa::path(delete, path = "/apps/{id}/volumes/{volId}", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id"), ("volId" = String, Path, description = "volume id")),
    responses((status = 202, description = "the volume, deleting", body = VolumeView)))]
pub async fn delete(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path((id, vol_id)): Path<(String, String)>,
) -> Result<(StatusCode, Json<VolumeView>), ApiError> {
    let mut v = load_volume(&apps, &caller, &id, &vol_id).await?;
    let now = time::now_ms();
    let e = NewEvent::audited(
        &v.org_id,
        "app.volume.deleted",
        "resources",
        "delete",
        &caller.actor(),
    )
    .resource("volume", &v.id)
    .data(json!({ "appId": v.app_id, "name": v.name }));
    let mut tx = apps.db().begin().await?;
    db::request_delete(&mut tx, &v, &e, now).await?;
    tx.commit_last().await?;
    v.status = "deleting".to_owned();
    v.status_detail = None;
    Ok((StatusCode::ACCEPTED, Json(v.into())))
}

/// A volume's backups, oldest first.
#[utoipa::path(get, path = "/apps/{id}/volumes/{volId}/backups", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id"), ("volId" = String, Path, description = "volume id")),
    responses((status = 200, description = "snapshots", body = BackupList)))]
pub async fn backups(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path((id, vol_id)): Path<(String, String)>,
) -> Result<Json<BackupList>, ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    let items = db::backups(apps.db(), &app.id, &vol_id).await?;
    Ok(Json(BackupList {
        items: items.into_iter().map(Into::into).collect(),
    }))
}

/// Snapshot a volume now: its filesystem is frozen while its image is
/// copied, then the copy is stored.
#[utoipa::path(post, path = "/apps/{id}/volumes/{volId}/backups", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id"), ("volId" = String, Path, description = "volume id")),
    responses((status = 201, description = "the backup", body = BackupView),
              (status = 409, description = "the volume is not running, or the plan's storage reached", body = plateau_api::error::Problem)))]
pub async fn back_up(
    Extension(apps): Extension<Apps>,
    Extension(volumes): Extension<Volumes>,
    caller: Caller,
    Path((id, vol_id)): Path<(String, String)>,
) -> Result<(StatusCode, Json<BackupView>), ApiError> {
    let v = load_volume(&apps, &caller, &id, &vol_id).await?;
    if v.placement.is_empty() || v.status == "deleting" {
        return Err(ApiError::conflict(
            "volume_not_running",
            format!("volume {vol_id} is {}; back it up once it runs", v.status),
        ));
    }
    let stored = volumes.back_up(&v).await.map_err(ApiError::Internal)?;
    let b = Backup {
        id: stored.id,
        org_id: v.org_id.clone(),
        app_id: v.app_id.clone(),
        volume_id: v.id.clone(),
        volume_name: v.name.clone(),
        mount_path: v.mount_path.clone(),
        size_gb: v.size_gb,
        object_key: stored.object_key,
        size_bytes: stored.size_bytes,
        created_at: time::now_ms(),
    };
    let e = NewEvent::audited(
        &v.org_id,
        "app.volume.backed_up",
        "resources",
        "create",
        &caller.actor(),
    )
    .resource("volume", &v.id)
    .data(json!({ "appId": v.app_id, "backupId": b.id, "sizeBytes": b.size_bytes }));
    let mut tx = apps.db().begin().await?;
    match db::insert_backup(&mut tx, &b, &e).await {
        Ok(()) => tx.commit_last().await?,
        Err(refused) => {
            drop(tx);
            volumes.forget(&b.object_key).await;
            return Err(match refused {
                Refused::Quota { storage_gb, .. } => ApiError::conflict(
                    "plan_limit_reached",
                    format!("the backup passes the plan's {storage_gb} GB of storage"),
                ),
                Refused::Store(e) => e.into(),
            });
        }
    }
    Ok((StatusCode::CREATED, Json(b.into())))
}

/// Restore a backup into a NEW volume of the app, of the backed-up
/// volume's size.
#[utoipa::path(post, path = "/apps/{id}/volumes/{volId}/backups/{backupId}/restore", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id"), ("volId" = String, Path, description = "volume id"),
           ("backupId" = String, Path, description = "backup id")),
    request_body = RestoreBackup,
    responses((status = 201, description = "the new volume, creating", body = VolumeView)))]
pub async fn restore(
    Extension(apps): Extension<Apps>,
    Extension(volumes): Extension<Volumes>,
    caller: Caller,
    Path((id, vol_id, backup_id)): Path<(String, String, String)>,
    Body(input): Body<RestoreBackup>,
) -> Result<(StatusCode, Json<VolumeView>), ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    let b = db::backup(apps.db(), &app.org_id, &backup_id)
        .await?
        .filter(|b| b.app_id == app.id && b.volume_id == vol_id)
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "backup {backup_id} of volume {vol_id} does not exist"
            ))
        })?;
    let tail: String =
        b.id.chars()
            .rev()
            .take(6)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
    let tail = tail.to_ascii_lowercase();
    let name = input
        .name
        .unwrap_or_else(|| format!("{}-{tail}", b.volume_name));
    check_name(&name)?;
    let mount_path = input
        .mount_path
        .unwrap_or_else(|| format!("{}-{tail}", b.mount_path));
    check_mount_path(&mount_path)?;
    let mut v = new_volume(volumes.host_id(), &app.org_id, &app.id);
    v.name = name;
    v.size_gb = b.size_gb;
    v.mount_path = mount_path;
    v.source_backup_id = Some(b.id);
    let v = record(&apps, &caller, v, "app.volume.restored").await?;
    Ok((StatusCode::CREATED, Json(v.into())))
}
