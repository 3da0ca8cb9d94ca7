//! `plateau admin ...`: operator commands that work on the database
//! directly, so they also work before the first server start.

use anyhow::Context;
use clap::Subcommand;
use plateau_core::{Plan, Role};
use plateau_store::events::Actor;
use plateau_store::{orgs, plans, provision};

use crate::config::{RegistryGcArgs, RegistryStoreArgs, StoreArgs};

#[derive(Subcommand)]
pub enum AdminCommand {
    /// Create an organisation and print its owner token once.
    CreateOrg {
        name: String,
        /// free, starter, pro or scale.
        #[arg(long, default_value = "free")]
        plan: String,
        /// The referral code it came through (`ref=` of a referral
        /// link): credits the organisation the code belongs to.
        #[arg(long)]
        referral: Option<String>,
    },
    /// Add a member to an organisation and print their token once.
    AddMember {
        /// The organisation id (org_...).
        #[arg(long)]
        org: String,
        name: String,
        /// owner, admin, member, billing or viewer.
        #[arg(long, default_value = "member")]
        role: String,
        #[arg(long)]
        email: Option<String>,
    },
    /// Change an organisation's plan. A plan whose limits it is past is
    /// refused, naming each resource kind over with its count and limit.
    SetPlan {
        /// The organisation id (org_...).
        #[arg(long)]
        org: String,
        /// free, starter, pro or scale.
        plan: String,
    },
    /// Delete stale registry uploads and blobs that no manifest references.
    RegistryGc {
        #[command(flatten)]
        registry: RegistryStoreArgs,
        #[command(flatten)]
        gc: RegistryGcArgs,
    },
}

pub async fn run(store: StoreArgs, command: AdminCommand) -> anyhow::Result<()> {
    let db = store.open().await?;
    let actor = Actor {
        kind: "admin".to_owned(),
        id: Some("cli".to_owned()),
        ..Actor::default()
    };
    match command {
        AdminCommand::CreateOrg {
            name,
            plan,
            referral,
        } => {
            let plan: Plan = plan.parse()?;
            anyhow::ensure!(
                !name.trim().is_empty(),
                "the organisation name must not be empty"
            );
            let mut tx = db.begin().await?;
            let created =
                provision::create_organization_in(&mut tx, name.trim(), plan, None, &actor).await?;
            if let Some(code) = &referral {
                let now = plateau_core::time::now_ms();
                plateau_api::routes::rewards::credit_signup(
                    &mut tx,
                    code,
                    &created.org.id,
                    &actor,
                    now,
                )
                .await
                .map_err(|e| anyhow::anyhow!("--referral {code}: {}", e.problem().detail))?;
                println!("referred by: {code}");
            }
            tx.commit().await?;
            println!(
                "organization: {} ({}, plan {})",
                created.org.id, created.org.name, created.org.plan
            );
            println!("default project: {}", created.default_project.id);
            println!("owner token (shown once): {}", created.owner.secret);
        }
        AdminCommand::AddMember {
            org,
            name,
            role,
            email,
        } => {
            let role: Role = role.parse()?;
            orgs::get(&db, &org)
                .await?
                .with_context(|| format!("organization {org} does not exist"))?;
            let member = provision::add_member(&db, &org, &name, email, role, &actor).await?;
            println!(
                "user: {} ({}, {})",
                member.user.id, member.user.name, member.role
            );
            println!("token (shown once): {}", member.secret);
        }
        AdminCommand::SetPlan { org, plan } => {
            let plan: Plan = plan.parse()?;
            let found = orgs::get(&db, &org)
                .await?
                .with_context(|| format!("organization {org} does not exist"))?;
            let limits = plans::get(&db, plan.as_str())
                .await?
                .with_context(|| format!("plan {plan} has no limits row"))?;
            let footprint = plans::footprint(&db, &org).await?;
            let over = plateau_api::routes::admin_plans::over_limits(&footprint, &limits);
            if !over.is_empty() {
                let what: Vec<String> = over
                    .iter()
                    .map(|e| format!("{}: {}", e.field, e.message))
                    .collect();
                anyhow::bail!(
                    "{org} holds more than the {plan} plan allows ({}): remove what is over, then change the plan (plan_limits_exceeded)",
                    what.join("; ")
                );
            }
            if plans::change_org_plan(&db, &org, &found.plan, plan.as_str(), &actor).await? {
                println!("{org}: plan {} -> {plan}", found.plan);
            } else {
                println!("{org}: already on plan {plan}");
            }
        }
        AdminCommand::RegistryGc { registry, gc } => {
            let blob_store = registry.open(&store.data_dir)?;
            let report = plateau_registry::gc::collect(&db, &blob_store, &gc.options()).await?;
            println!(
                "registry gc: {} uploads, {} blobs ({} bytes), {} unknown objects removed",
                report.uploads, report.blobs, report.bytes, report.orphans
            );
        }
    }
    db.close().await;
    Ok(())
}
