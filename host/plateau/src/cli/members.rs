//! `plateau members ...`: the organisation's members (list, change a
//! role, remove) and invitations (invite by email, list, revoke, and
//! `accept`, which needs no token and stores the new member's token like
//! `login` when asked to).

use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::json;

use super::{Api, Global, output};

#[derive(Args)]
pub struct MembersArgs {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: MembersCommand,
}

#[derive(Subcommand)]
enum MembersCommand {
    /// The members and their roles.
    List,
    /// Invite someone by email; the link is printed once (and mailed when
    /// the organisation's email relay is configured).
    Invite {
        email: String,
        /// owner, admin, member, billing or viewer.
        #[arg(long, default_value = "member")]
        role: String,
        /// How long the link works, in seconds (default 7 days).
        #[arg(long)]
        expires_in: Option<i64>,
    },
    /// The invitations and their status.
    Invites,
    /// Revoke a pending invitation.
    Revoke { invite: String },
    /// Change a member's role.
    Role {
        /// The member's user id (usr_...).
        user: String,
        /// owner, admin, member, billing or viewer.
        role: String,
    },
    /// Remove a member; their tokens stop working.
    Remove {
        /// The member's user id (usr_...).
        user: String,
    },
    /// Accept an invitation (its link, or the plti_ secret at its end);
    /// prints your first token once. Needs no token.
    Accept {
        link: String,
        /// Your name.
        #[arg(long)]
        name: String,
    },
}

pub async fn run(args: MembersArgs) -> Result<(), String> {
    if let MembersCommand::Accept { link, name } = &args.command {
        return accept(&args.global, link, name).await;
    }
    let api = Api::from(&args.global)?;
    let json = api.json;
    match args.command {
        MembersCommand::List => {
            let list = api.get("/members").await?;
            output::list(
                json,
                &list,
                &["userId", "name", "email", "role", "joinedAt"],
            );
        }
        MembersCommand::Invite {
            email,
            role,
            expires_in,
        } => {
            let body = json!({ "email": email, "role": role, "expiresInSeconds": expires_in });
            let created = api.post("/members/invites", body).await?;
            if json {
                println!("{created:#}");
            } else {
                println!(
                    "invited {} as {} until {}",
                    created["invite"]["email"].as_str().unwrap_or_default(),
                    created["invite"]["role"].as_str().unwrap_or_default(),
                    created["invite"]["expiresAt"].as_str().unwrap_or_default()
                );
                println!(
                    "link (shown once): {}",
                    created["link"].as_str().unwrap_or_default()
                );
            }
        }
        MembersCommand::Invites => {
            let list = api.get("/members/invites").await?;
            output::list(json, &list, &["id", "email", "role", "status", "expiresAt"]);
        }
        MembersCommand::Revoke { invite } => {
            let answer = api.delete(&format!("/members/invites/{invite}")).await?;
            output::done(json, &format!("revoked the invitation {invite}"), &answer);
        }
        MembersCommand::Role { user, role } => {
            let answer = api
                .send(
                    Method::PATCH,
                    &format!("/members/{user}"),
                    Some(json!({ "role": role })),
                )
                .await?;
            output::object(json, &answer, &["userId", "name", "role"]);
        }
        MembersCommand::Remove { user } => {
            let answer = api.delete(&format!("/members/{user}")).await?;
            output::done(json, &format!("removed {user}"), &answer);
        }
        MembersCommand::Accept { .. } => unreachable!("handled above"),
    }
    Ok(())
}

/// Accepts without a token: the invitation's secret is the credential.
async fn accept(global: &Global, link: &str, name: &str) -> Result<(), String> {
    let secret = link.rsplit('/').next().unwrap_or(link);
    let url = global.url.clone().or_else(|| {
        // A link carries its server: everything before /console/.
        link.split_once("/console/")
            .map(|(base, _)| base.to_owned())
    });
    let global = Global {
        url,
        // The route is public: the token sent is never read.
        token: Some(String::new()),
        json: global.json,
    };
    let api = Api::from(&global)?;
    let answer = api
        .post("/members/accept", json!({ "secret": secret, "name": name }))
        .await?;
    if global.json {
        println!("{answer:#}");
    } else {
        println!(
            "joined {} ({}) as {}",
            answer["organizationName"].as_str().unwrap_or_default(),
            answer["organizationId"].as_str().unwrap_or_default(),
            answer["member"]["role"].as_str().unwrap_or_default()
        );
        println!(
            "your token (shown once; store it with `plateau login`): {}",
            answer["member"]["token"].as_str().unwrap_or_default()
        );
    }
    Ok(())
}
