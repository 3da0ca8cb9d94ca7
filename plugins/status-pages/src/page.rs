//! `/status-pages/page`: the organisation's page, its name and the slug
//! of its public URL (unique on the platform, held in the global bucket).

use plateau_sdk::serde_json::json;
use plateau_sdk::{ApiError, Bucket, NewEvent, Params, Request, Response, clock, config};

use crate::input::{Check, PageInput, is_slug};
use crate::record::{self, Page, SlugEntry};
use crate::store;
use crate::views::PageView;

/// `GET /status-pages/page`.
pub fn get(req: &Request, _: &Params) -> Result<Response, ApiError> {
    let page = store::require_page(&Bucket::caller()?)?;
    Ok(Response::ok(&PageView::new(
        &page,
        &config::public_base_url(req),
    )))
}

/// `PUT /status-pages/page`: 201 when created, 200 when replaced; 409 when
/// another organisation's page has the slug.
pub fn put(req: &Request, _: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let input: PageInput = req.json()?;
    let mut check = Check::default();
    check.text("name", &input.name, 100);
    if !is_slug(&input.slug) {
        check.fail(
            "slug",
            "must be 3 to 40 of a-z, 0-9 and -, not starting or ending with -",
        );
    }
    if let Some(d) = &input.description
        && d.chars().count() > 1000
    {
        check.fail("description", "must be at most 1000 characters");
    }
    if let Some(url) = &input.homepage_url {
        check.url("homepageUrl", url);
    }
    check.done()?;
    let bucket = Bucket::caller()?;
    let global = Bucket::global()?;
    let now = clock::now_millis();
    let old = store::page(&bucket)?;
    if old.as_ref().map(|p| p.slug.as_str()) != Some(input.slug.as_str()) {
        let entry = SlugEntry {
            organization_id: org.clone(),
        };
        if !global.insert_new(&record::slug_key(&input.slug), &entry)? {
            return Err(ApiError::conflict(format!(
                "the slug {} is taken: choose another",
                input.slug
            )));
        }
        if let Some(old) = &old {
            global.delete(&record::slug_key(&old.slug))?;
        }
    }
    let page = Page {
        id: old
            .as_ref()
            .map_or_else(|| plateau_sdk::ids::new_id("spg", now), |p| p.id.clone()),
        name: input.name.trim().to_owned(),
        slug: input.slug,
        description: input.description.unwrap_or_default().trim().to_owned(),
        homepage_url: input.homepage_url,
        base_url: config::public_base_url(req),
        plan: req.caller.plan.clone().unwrap_or_else(|| "free".to_owned()),
        created_at: old.as_ref().map_or(now, |p| p.created_at),
        updated_at: now,
    };
    bucket.set(record::PAGE, &page)?;
    store::touch(&bucket)?;
    let created = old.is_none();
    NewEvent::new(
        if created {
            "status-pages.page.created"
        } else {
            "status-pages.page.updated"
        },
        if created { "create" } else { "update" },
    )
    .resource("status_page", &page.id)
    .data(&json!({ "name": page.name, "slug": page.slug }))
    .audit()
    .emit()?;
    let view = PageView::new(&page, &config::public_base_url(req));
    Ok(if created {
        Response::created(&view)
    } else {
        Response::ok(&view)
    })
}

/// `DELETE /status-pages/page`: the public URL answers 404 from now on;
/// components, incidents and subscribers stay for a page created again.
pub fn delete(_req: &Request, _: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let page = store::require_page(&bucket)?;
    Bucket::global()?.delete(&record::slug_key(&page.slug))?;
    bucket.delete(record::PAGE)?;
    store::touch(&bucket)?;
    NewEvent::new("status-pages.page.deleted", "delete")
        .resource("status_page", &page.id)
        .data(&json!({ "slug": page.slug }))
        .audit()
        .emit()?;
    Ok(Response::no_content())
}
