//! Projects and their environments: create, list, read and delete. A
//! project starts with `development`, `preview` and `production`; more
//! can be added. An environment with linked apps cannot be deleted.

use plateau_sdk::{ApiError, Bucket, NewEvent, Params, Request, Response, clock, paginate_kv_with};
use serde_json::json;

use crate::input::{
    DEFAULT_ENVIRONMENTS, MAX_ENVIRONMENTS, MAX_PROJECTS, NewEnvironment, NewProject,
};
use crate::record::{Environment, Link, Project, Version};
use crate::store::{load_env, load_project};
use crate::views::{EnvironmentView, ProjectView};

fn new_env(project: &str, name: &str, now: &str) -> Environment {
    Environment {
        project: project.to_owned(),
        name: name.to_owned(),
        version: 0,
        created_at: now.to_owned(),
        updated_at: now.to_owned(),
    }
}

/// `POST /config/projects`: 201 with the project and its three
/// environments.
pub fn create_project(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    req.caller.organization()?;
    let input: NewProject = req.json()?;
    input.check()?;
    let bucket = Bucket::caller()?;
    if bucket.count("p/")? >= MAX_PROJECTS {
        return Err(ApiError::conflict(format!(
            "an organisation has at most {MAX_PROJECTS} config projects: delete one first"
        )));
    }
    let now = clock::now_rfc3339();
    let project = Project {
        name: input.name.clone(),
        description: input.description,
        created_at: now.clone(),
    };
    if !bucket.insert_new(&Project::key(&project.name), &project)? {
        return Err(ApiError::conflict(format!(
            "config project {} already exists: choose another name",
            project.name
        )));
    }
    for name in DEFAULT_ENVIRONMENTS {
        bucket.set(
            &Environment::key(&project.name, name),
            &new_env(&project.name, name, &now),
        )?;
    }
    NewEvent::new("config.project.created", "create")
        .resource("config_project", &project.name)
        .data(&json!({ "name": project.name, "environments": DEFAULT_ENVIRONMENTS }))
        .audit()
        .emit()?;
    Ok(Response::created(&ProjectView::from(&project))
        .with_header("location", format!("/config/projects/{}", project.name)))
}

/// `GET /config/projects`
pub fn list_projects(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let page = paginate_kv_with(&Bucket::caller()?, "p/", &req.page_query()?, |entry| {
        Ok(ProjectView::from(&entry.json::<Project>()?))
    })?;
    Ok(page.into_response())
}

/// `GET /config/projects/{project}`
pub fn get_project(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let project = load_project(&Bucket::caller()?, &params["project"])?;
    Ok(Response::ok(&ProjectView::from(&project)))
}

/// Refuses while apps are linked to the environment.
fn unlinked(bucket: &Bucket, project: &str, env: &str) -> Result<(), ApiError> {
    let linked = bucket.list(&Link::index_prefix(project, env), None, 5)?;
    if linked.entries.is_empty() {
        return Ok(());
    }
    let prefix = Link::index_prefix(project, env);
    let apps: Vec<&str> = linked
        .entries
        .iter()
        .map(|e| e.key.trim_start_matches(&prefix))
        .collect();
    Err(ApiError::conflict(format!(
        "environment {project}/{env} is linked to apps {}: unlink them first",
        apps.join(", ")
    )))
}

/// Deletes an environment's record and versions.
fn remove_env(bucket: &Bucket, project: &str, env: &str) -> Result<(), ApiError> {
    for entry in bucket.list_all(&Version::prefix(project, env))? {
        bucket.delete(&entry.key)?;
    }
    bucket.delete(&Environment::key(project, env))?;
    Ok(())
}

/// `DELETE /config/projects/{project}`: 204, with every environment; 409
/// while an app is linked to one.
pub fn delete_project(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let name = &params["project"];
    let bucket = Bucket::caller()?;
    load_project(&bucket, name)?;
    let envs: Vec<Environment> = bucket
        .list_all(&Environment::prefix(name))?
        .into_iter()
        .map(|e| e.json())
        .collect::<Result<_, _>>()?;
    for env in &envs {
        unlinked(&bucket, name, &env.name)?;
    }
    for env in &envs {
        remove_env(&bucket, name, &env.name)?;
    }
    bucket.delete(&Project::key(name))?;
    NewEvent::new("config.project.deleted", "delete")
        .resource("config_project", name)
        .audit()
        .emit()?;
    Ok(Response::no_content())
}

/// `GET /config/projects/{project}/environments`
pub fn list_envs(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let project = &params["project"];
    load_project(&bucket, project)?;
    let page = paginate_kv_with(
        &bucket,
        &Environment::prefix(project),
        &req.page_query()?,
        |entry| Ok(EnvironmentView::from(&entry.json::<Environment>()?)),
    )?;
    Ok(page.into_response())
}

/// `POST /config/projects/{project}/environments`: 201.
pub fn create_env(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let project = &params["project"];
    let input: NewEnvironment = req.json()?;
    input.check()?;
    let bucket = Bucket::caller()?;
    load_project(&bucket, project)?;
    if bucket.count(&Environment::prefix(project))? >= MAX_ENVIRONMENTS {
        return Err(ApiError::conflict(format!(
            "a project has at most {MAX_ENVIRONMENTS} environments: delete one first"
        )));
    }
    let env = new_env(project, &input.name, &clock::now_rfc3339());
    if !bucket.insert_new(&Environment::key(project, &env.name), &env)? {
        return Err(ApiError::conflict(format!(
            "project {project} already has an environment {}",
            env.name
        )));
    }
    NewEvent::new("config.environment.created", "create")
        .resource("config_environment", format!("{project}/{}", env.name))
        .data(&json!({ "project": project, "environment": env.name }))
        .audit()
        .emit()?;
    Ok(Response::created(&EnvironmentView::from(&env)).with_header(
        "location",
        format!("/config/projects/{project}/environments/{}", env.name),
    ))
}

/// `GET /config/projects/{project}/environments/{env}`
pub fn get_env(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let (env, _) = load_env(&Bucket::caller()?, &params["project"], &params["env"])?;
    Ok(Response::ok(&EnvironmentView::from(&env)))
}

/// `DELETE /config/projects/{project}/environments/{env}`: 204; 409 while
/// apps are linked to it.
pub fn delete_env(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let (project, name) = (&params["project"], &params["env"]);
    let bucket = Bucket::caller()?;
    load_env(&bucket, project, name)?;
    unlinked(&bucket, project, name)?;
    remove_env(&bucket, project, name)?;
    NewEvent::new("config.environment.deleted", "delete")
        .resource("config_environment", format!("{project}/{name}"))
        .data(&json!({ "project": project, "environment": name }))
        .audit()
        .emit()?;
    Ok(Response::no_content())
}
