//! Creating organisations with their owner, default project and owner
//! token, and adding members: shared by first start, the admin API and the
//! `plateau admin` commands.

use plateau_core::id::new_id;
use plateau_core::secret::{self, TOKEN_PREFIX};
use plateau_core::{Plan, Role, Scopes, time};
use serde_json::json;

use crate::events::{self, Actor, NewEvent};
use crate::orgs::{self, Organization, User};
use crate::projects::{self, Project};
use crate::tokens::{self, Token};
use crate::{Db, Result, Tx};

/// Name of the project every organisation starts with.
pub const DEFAULT_PROJECT: &str = "default";

/// A new member and the token they start with. The secret is shown once.
#[derive(Debug)]
pub struct NewMember {
    pub user: User,
    pub role: Role,
    pub token: Token,
    pub secret: String,
}

#[derive(Debug)]
pub struct NewOrganization {
    pub org: Organization,
    pub default_project: Project,
    pub owner: NewMember,
}

/// Creates an organisation, its owner, its default project and an owner
/// token carrying every scope. `owner_secret` fixes the token's secret
/// (the bootstrap token); otherwise a new one is generated.
pub async fn create_organization(
    db: &Db,
    name: &str,
    plan: Plan,
    owner_secret: Option<String>,
    actor: &Actor,
) -> Result<NewOrganization> {
    let mut tx = db.begin().await?;
    let created = create_organization_in(&mut tx, name, plan, owner_secret, actor).await?;
    tx.commit().await?;
    Ok(created)
}

/// The first organisation, once: several hosts starting together on one
/// database create it only once. None if the store already has one.
pub async fn bootstrap(db: &Db, owner_secret: Option<String>) -> Result<Option<NewOrganization>> {
    let mut tx = db.begin().await?;
    let claimed = sqlx::query(
        "INSERT INTO settings (key, value) VALUES ('bootstrapped', $1) ON CONFLICT (key) DO NOTHING",
    )
    .bind(time::to_rfc3339(time::now_ms()))
    .execute(tx.conn())
    .await?;
    if claimed.rows_affected() == 0 || !orgs_empty(&mut tx).await? {
        return Ok(None);
    }
    let created = create_organization_in(
        &mut tx,
        "default",
        Plan::Free,
        owner_secret,
        &Actor::system(),
    )
    .await?;
    tx.commit().await?;
    Ok(Some(created))
}

async fn orgs_empty(tx: &mut Tx) -> Result<bool> {
    let row: Option<(String,)> = sqlx::query_as("SELECT id FROM organizations LIMIT 1")
        .fetch_optional(tx.conn())
        .await?;
    Ok(row.is_none())
}

/// [`create_organization`] in the caller's transaction (with what else
/// the creation entails, such as a referral's credit).
pub async fn create_organization_in(
    tx: &mut Tx,
    name: &str,
    plan: Plan,
    owner_secret: Option<String>,
    actor: &Actor,
) -> Result<NewOrganization> {
    let now = time::now_ms();
    let org = Organization {
        id: new_id("org"),
        name: name.to_owned(),
        plan: plan.as_str().to_owned(),
        created_at: now,
    };
    orgs::insert_org(tx, &org).await?;
    let default_project = Project {
        id: new_id("prj"),
        org_id: org.id.clone(),
        name: DEFAULT_PROJECT.to_owned(),
        is_default: 1,
        created_at: now,
    };
    projects::insert(tx, &default_project).await?;
    let owner = add_member_in(tx, &org.id, "owner", None, Role::Owner, owner_secret, actor).await?;
    let event = NewEvent::audited(&org.id, "organization.created", "members", "create", actor)
        .resource("organization", &org.id)
        .data(
            json!({ "name": org.name, "plan": org.plan, "defaultProjectId": default_project.id }),
        );
    events::record(tx, &event, now).await?;
    Ok(NewOrganization {
        org,
        default_project,
        owner,
    })
}

/// Adds a user to an organisation with a token of every scope their role
/// allows (all of them: roles gate the audit log, not scopes).
pub async fn add_member(
    db: &Db,
    org_id: &str,
    name: &str,
    email: Option<String>,
    role: Role,
    actor: &Actor,
) -> Result<NewMember> {
    let mut tx = db.begin().await?;
    let member = add_member_in(&mut tx, org_id, name, email, role, None, actor).await?;
    tx.commit().await?;
    Ok(member)
}

pub async fn add_member_in(
    tx: &mut Tx,
    org_id: &str,
    name: &str,
    email: Option<String>,
    role: Role,
    secret: Option<String>,
    actor: &Actor,
) -> Result<NewMember> {
    let now = time::now_ms();
    let user = User {
        id: new_id("usr"),
        name: name.to_owned(),
        email,
        created_at: now,
    };
    orgs::insert_user(tx, &user).await?;
    orgs::insert_membership(tx, org_id, &user.id, role, now).await?;
    let secret = secret.unwrap_or_else(|| secret::generate(TOKEN_PREFIX));
    let token = Token {
        id: new_id("tok"),
        org_id: org_id.to_owned(),
        user_id: user.id.clone(),
        name: format!("{} ({role})", user.name),
        secret_hint: secret::mask(&secret, TOKEN_PREFIX),
        scopes: Scopes::All.to_stored(),
        project_id: None,
        max_cost_cents: None,
        spent_cents: 0,
        expires_at: None,
        revoked_at: None,
        parent_id: None,
        grant_id: None,
        purpose: None,
        created_at: now,
    };
    tokens::insert(tx, &token, &secret::hash(&secret)).await?;
    let event = NewEvent::audited(org_id, "member.added", "members", "create", actor)
        .resource("user", &user.id)
        .data(json!({ "name": user.name, "role": role, "tokenId": token.id }));
    events::record(tx, &event, now).await?;
    Ok(NewMember {
        user,
        role,
        token,
        secret,
    })
}
