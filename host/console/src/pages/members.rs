//! Members: who belongs to the organisation (change a role, remove), the
//! invitations (invite by email, the link shown once; revoke), and the
//! page an invitee opens from the link (`/console/invite/{secret}`), which
//! accepts it and signs them in with their first token, shown once.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use maud::{Markup, html};
use plateau_core::Role;
use plateau_core::secret;
use serde_json::json;

use super::{Fields, after, field, refused, section, seg};
use crate::html::{self, col};
use crate::session::{self, COOKIE, Kind, PRE_COOKIE, Session};
use crate::{Console, Ctx};

pub fn routes() -> Router<Console> {
    Router::new()
        .route("/console/members", get(members))
        .route("/console/members/invites", post(invite))
        .route("/console/members/invites/{id}/revoke", post(revoke))
        .route("/console/members/{id}/role", post(change_role))
        .route("/console/members/{id}/remove", post(remove))
        .route("/console/invite/{secret}", get(invite_page).post(accept))
}

/// A role picker; `id` names the control, `current` is selected.
fn role_select(id: &str, label: &str, current: &str) -> Markup {
    html! {
        div class="field" {
            label for=(id) { (label) }
            select id=(id) name="role" {
                @for role in Role::ALL {
                    option value=(role.as_str()) selected[role.as_str() == current] { (role.as_str()) }
                }
            }
        }
    }
}

/// The origin the browser reached the console at.
fn origin(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    let scheme = if session::is_https(headers) {
        "https"
    } else {
        "http"
    };
    format!("{scheme}://{host}")
}

async fn members(ctx: Ctx) -> Response {
    let list = ctx.get("/members").await;
    let invites = ctx.get("/members/invites").await;
    let s = &ctx.session;
    let content = html! {
        (section(&list, |l| {
            let items = html::items(l);
            html! {
                (html::table("Members", &items, &[col("Name", "name"), col("Email", "email"), col("Role", "role"), col("User id", "userId"), col("Joined", "joinedAt")], None))
                @for m in &items {
                    @let id = html::text(&m["userId"]);
                    @let name = html::text(&m["name"]);
                    div class="actions" {
                        form method="post" action=(format!("/console/members/{}/role", seg(&id))) class="inline" {
                            (html::csrf(s))
                            (role_select(&format!("f-role-{id}"), &format!("Role of {name}"), &html::text(&m["role"])))
                            button type="submit" { "Change role" span class="visually-hidden" { " of " (name) } }
                        }
                        (html::button(s, &format!("/console/members/{}/remove", seg(&id)), &format!("Remove {name}"), "(member)"))
                    }
                }
            }
        }))
        h2 { "Invitations" }
        (section(&invites, |l| {
            let items = html::items(l);
            html! {
                (html::table("Invitations", &items, &[col("Email", "email"), col("Role", "role"), col("Status", "status"), col("Expires", "expiresAt")], None))
                @for i in items.iter().filter(|i| i["status"] == "pending") {
                    @let email = html::text(&i["email"]);
                    (html::button(s, &format!("/console/members/invites/{}/revoke", seg(&html::text(&i["id"]))), &format!("Revoke the invitation of {email}"), ""))
                }
            }
        }))
        h2 { "Invite someone" }
        (html::form(s, "/console/members/invites", html! {
            (html::input("Email", "email", "email", true, None))
            (role_select("f-invite-role", "Role", "member"))
        }, "Invite"))
        h2 { "What each role may do" }
        dl {
            dt { "owner" } dd { "everything; the only role that makes or removes owners" }
            dt { "admin" } dd { "everything but making or removing owners" }
            dt { "member" } dd { "everything but managing members and reading the audit log" }
            dt { "billing" } dd { "usage, spend, rewards, notification preferences, its own tokens; reads members" }
            dt { "viewer" } dd { "reads everything but the audit log; mints read-only tokens" }
        }
    };
    html::page(s, "/console/members", "Members", content).into_response()
}

async fn invite(ctx: Ctx, headers: HeaderMap, fields: Fields) -> Response {
    let body = json!({ "email": field(&fields, "email"), "role": field(&fields, "role") });
    match ctx.post("/members/invites", body).await {
        Ok(created) => {
            let link = format!(
                "{}/console/invite/{}",
                origin(&headers),
                html::text(&created["secret"])
            );
            let content = html! {
                p class="notice" role="status" {
                    "Send this link to " (html::text(&created["invite"]["email"])) ": it is never shown again, and works once, until "
                    (html::text(&created["invite"]["expiresAt"])) "."
                    @if created["emailed"] == true { " It was also handed to the email relay." }
                }
                (html::copyable("Invitation link", "link", &link))
                p { a href="/console/members" { "Back to members" } }
            };
            html::page(&ctx.session, "/console/members", "Invitation made", content).into_response()
        }
        Err(p) => refused(&ctx, &p, "/console/members"),
    }
}

async fn revoke(ctx: Ctx, Path(id): Path<String>) -> Response {
    let result = ctx
        .call(
            Method::DELETE,
            &format!("/members/invites/{}", seg(&id)),
            None,
        )
        .await;
    after(&ctx, result, "/console/members")
}

async fn change_role(ctx: Ctx, Path(id): Path<String>, fields: Fields) -> Response {
    let result = ctx
        .call(
            Method::PATCH,
            &format!("/members/{}", seg(&id)),
            Some(json!({ "role": field(&fields, "role") })),
        )
        .await;
    after(&ctx, result, "/console/members")
}

async fn remove(ctx: Ctx, Path(id): Path<String>) -> Response {
    let result = ctx
        .call(Method::DELETE, &format!("/members/{}", seg(&id)), None)
        .await;
    after(&ctx, result, "/console/members")
}

/// The invitee's page: a name, then accept. Outside any session, so its
/// form carries a pre-session CSRF secret (as the sign-in form does).
async fn invite_page(headers: HeaderMap, Path(secret): Path<String>) -> Response {
    invite_form(&headers, &secret, StatusCode::OK, None)
}

fn invite_form(
    headers: &HeaderMap,
    secret_value: &str,
    status: StatusCode,
    problem: Option<&str>,
) -> Response {
    let pre = secret::generate("");
    let body = html::shell(
        "Join an organisation",
        html! {},
        html! {
            @if let Some(p) = problem { (html::problem(p)) }
            p { "You were invited to an organisation on Plateau. Accepting makes you a member and signs you in with your first API token." }
            form method="post" action=(format!("/console/invite/{}", seg(secret_value))) class="stack" {
                input type="hidden" name="csrf" value=(pre);
                (html::input("Your name", "name", "text", true, None))
                button type="submit" { "Accept the invitation" }
            }
        },
    );
    let mut response = (status, body).into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        session::set_cookie(headers, PRE_COOKIE, &pre, 3600),
    );
    response
}

async fn accept(
    State(console): State<Console>,
    headers: HeaderMap,
    Path(secret_value): Path<String>,
    fields: Fields,
) -> Response {
    let body = json!({ "secret": secret_value, "name": field(&fields, "name") });
    let answer = console
        .api
        .send(
            None,
            None,
            Method::POST,
            "/members/accept",
            Some("application/json"),
            axum::body::Body::from(body.to_string()),
        )
        .await;
    let value: serde_json::Value = serde_json::from_slice(&answer.body).unwrap_or_default();
    if !answer.status.is_success() {
        let problem = crate::api::Problem {
            status: answer.status,
            body: value,
        };
        return invite_form(
            &headers,
            &secret_value,
            answer.status,
            Some(&problem.message()),
        );
    }
    let token = html::text(&value["member"]["token"]);
    let session = Session::new(Kind::Token, token.clone());
    let content = html! {
        p class="notice" role="status" {
            "Welcome to " (html::text(&value["organizationName"])) ", as " (html::text(&value["member"]["role"]))
            ". You are signed in. Copy your API token now: it is never shown again."
        }
        (html::copyable("Your API token", "secret", &token))
        p { a href="/console/" { "Go to the console" } }
    };
    let page = html::page(&session, "", "Invitation accepted", content);
    let mut response = (StatusCode::CREATED, page).into_response();
    let h = response.headers_mut();
    h.append(
        header::SET_COOKIE,
        session::set_cookie(&headers, COOKIE, &session.seal(&console), session::TTL_SECS),
    );
    h.append(
        header::SET_COOKIE,
        session::set_cookie(&headers, PRE_COOKIE, "", 0),
    );
    response
}
